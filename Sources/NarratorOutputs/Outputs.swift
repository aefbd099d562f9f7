import Foundation
import NarratorLive

/// The outputs Narrator plays on under Linux, chosen by `--output`.
public enum OutputKind: String, CaseIterable, Sendable {
    /// ALSA: a sound card (hw, plughw), dmix, or any ALSA plugin, including the one that
    /// plays through PulseAudio or PipeWire.
    case alsa
    /// PulseAudio's native protocol through libpulse (PulseAudio, or PipeWire's pulse server):
    /// a sink by name, with the server's own timing.
    case pulse
    /// An audio file (`--device` names it) played into in real time, as a sound card would
    /// play it: for a machine with no sound card (`FileOutput`).
    case file

    /// The outputs that play on a sound card or a sound server (not into a file).
    public static let devices: [OutputKind] = [.alsa, .pulse]
}

/// Opens the output of a kind on a device.
public enum Outputs {
    /// The default, what works on this machine: `pulse` when a PulseAudio server (or
    /// PipeWire's pulse server) is there to talk to, directly, with its own timing (the
    /// environment names one in PULSE_SERVER, or its socket is in XDG_RUNTIME_DIR/pulse or
    /// /run/pulse); otherwise `alsa` (a sound card, or ALSA's default device, however it is
    /// configured).
    public static var defaultKind: OutputKind {
        let environment = ProcessInfo.processInfo.environment
        if let server = environment["PULSE_SERVER"], !server.isEmpty { return .pulse }
        var sockets = ["/run/pulse/native", "/var/run/pulse/native"]
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { sockets.insert(runtime + "/pulse/native", at: 0) }
        return sockets.contains { FileManager.default.fileExists(atPath: $0) } ? .pulse : .alsa
    }

    /// The device an output plays on when none is named: ALSA's `default` PCM, the sound
    /// server's default sink.
    public static func defaultDevice(of kind: OutputKind) -> String {
        switch kind {
        case .alsa: "default"
        case .pulse: "default"
        case .file: "heard.wav"
        }
    }

    /// Opens `device` (the kind's default when nil) for `rate` Hz and `channels` channels with
    /// about `latencyMs` of buffer. `threads` are the policies the engine will play with: a
    /// pull output whose library creates the thread that renders (libpulse's mainloop) sets
    /// `threads.audio` on it; a push output renders on the engine's audio thread instead.
    public static func open(
        _ kind: OutputKind, device: String? = nil, rate: Int, channels: Int, latencyMs: Int,
        threads: PlaybackEngine.Threads = .normal
    ) throws(PlaybackError) -> any AudioOutput {
        switch kind {
        case .alsa:
            do {
                return try AlsaOutput(device: device ?? defaultDevice(of: kind), rate: rate, channels: channels, latencyMs: latencyMs)
            } catch .noDevice(let name, _, _, _) where device == nil && !hasSoundCard {
                // The default device of a machine with nothing to play on: say what to do
                // rather than that "default" is no ALSA device.
                throw .noSoundHere(device: name)
            }
        case .pulse:
            return try PulseOutput(device: device, rate: rate, channels: channels, latencyMs: latencyMs, policy: threads.audio)
        case .file:
            return try FileOutput(path: device ?? defaultDevice(of: kind), rate: rate, channels: channels, latencyMs: latencyMs)
        }
    }

    /// Whether the kernel knows a sound card (ALSA lists one in /proc/asound/cards).
    static var hasSoundCard: Bool {
        guard let cards = try? String(contentsOfFile: "/proc/asound/cards", encoding: .utf8) else { return false }
        return !cards.contains("no soundcards") && cards.contains("[")
    }
}
