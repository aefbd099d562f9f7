import ArgumentParser
import NarratorKit
import NarratorOutputs

extension OutputKind: ExpressibleByArgument {}

/// Where `play` and `serve` send their audio: the output, its device, the latency and the
/// priority of playback's threads.
struct OutputOptions: ParsableArguments {
    @Option(help: "The output to play on: pulse (a PulseAudio or PipeWire sound server, natively through libpulse) or alsa (a sound card, dmix or any ALSA plugin). Default: pulse when a sound server is running (PULSE_SERVER, or its socket in XDG_RUNTIME_DIR/pulse), else alsa.")
    var output: OutputKind?

    /// The output asked for, or what works on this machine.
    var kind: OutputKind { output ?? Outputs.defaultKind }

    @Option(help: "The output's device (alsa: a PCM name, `aplay -L` lists them, default \"default\"; pulse: a sink name, `pactl list short sinks` lists them, default the server's default sink).")
    var device: String?

    @Option(help: "Output latency in milliseconds: the device buffer; periods are a quarter of it (alsa) or 3/10 of it (pulse, whose sink then reads a fifth of it at a time).")
    var latency = 50

    @Flag(
        inversion: .prefixedNo,
        help: "Run the audio and cue threads with real-time priority (SCHED_FIFO 20 and 19) when permitted. Default: on for the pulse output, off for alsa (whose default device may be the pulse plugin, whose own thread then falls behind).")
    var realtime: Bool?

    func validate() throws {
        guard (5...2000).contains(latency) else { throw ValidationError("--latency must be between 5 and 2000 ms, got \(latency)") }
    }

    /// Whether playback's threads ask for SCHED_FIFO: as told, else for the pulse output only
    /// (why not for ALSA: `ThreadPolicy`).
    var usesRealtime: Bool { realtime ?? (kind == .pulse) }

    var threads: PlaybackEngine.Threads { usesRealtime ? .realtime : .normal }

    /// Opens the output for `schedule`'s rate and channels.
    func open(for schedule: Schedule) throws(PlaybackError) -> any AudioOutput {
        try Outputs.open(
            kind, device: device, rate: schedule.sampleRate, channels: schedule.channels, latencyMs: latency, threads: threads)
    }
}
