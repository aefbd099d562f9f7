import ArgumentParser
import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorKit
import NarratorLive
import Synchronization

struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play a chain live, delivering each cue when its frame is heard.",
        discussion: """
            Events are JSON lines: first a "start" event (the device's sample rate, channels, \
            format, period and buffer, and the measured output delay), then each cue as it is \
            heard, with the cue sheet's fields plus "heard" (CLOCK_MONOTONIC nanoseconds when its frame is heard), \
            "t" (that, in seconds since playback started) and "delivered" (when it was handed over). Playback ends with exactly one terminal event: \
            the last "chainEnd" (marked "final": true; a music bed's "musicStop" when it fades out after the end), "stopped" (Ctrl-C; exit status 130) or "error" (exit status 1). \
            docs/events.md describes every event. \
            Events go to --events FILE, or to stdout when it is not a terminal; on a terminal \
            the chain's words are shown, the one being heard highlighted, on one line that fits \
            the terminal, with the time heard. An activity without --taps is answered live: each \
            line on stdin is a tap (an answer, a sound's name, replay or close); typed at the \
            terminal, it shows in the view and Enter sends it.

            Example:
              narrator play Timings/lessons/sample.json --chain correct --seed 7 \\
                --events events.jsonl
            """)

    @OptionGroup var chainOptions: ChainOptions

    @OptionGroup var outputOptions: OutputOptions

    @Option(help: "Write the events (JSON lines) to this file.")
    var events: String?

    @Flag(help: "Print the negotiated period, buffer and measured latency on stderr.")
    var verbose = false

    @Option(help: "Playback speed from the first frame, 0.5 to 2.0, pitch kept (- and + change it while playing; docs/controls.md).")
    var speed: Double = 1

    @Option(help: "Seconds a pause lasts before the audio device is let go (taken again at the resume).")
    var releaseDeviceAfter: Double = 10

    func validate() throws {
        guard releaseDeviceAfter.isFinite, (0.1...86_400).contains(releaseDeviceAfter) else {
            throw ValidationError("--release-device-after must be between 0.1 and 86400 seconds, got \(releaseDeviceAfter)")
        }
        guard speed.isFinite, TimeStretcher.speeds.contains(speed) else {
            throw ValidationError("--speed must be between 0.5 and 2.0, got \(speed)")
        }
    }

    @Option(help: "Controls at seconds of playback time (since frame 0 was heard, pauses included), comma-separated: SECONDS:CONTROL with pause, resume[=word|sentence], seek=SECONDS, word=[CLIP/]INDEX, sentence=[CLIP/]INDEX, say=[CLIP/]INDEX, mute=BUS, unmute=BUS, volume=BUS/GAIN (docs/controls.md).")
    var controls: String?

    func run() throws {
        var outcome = PlaybackOutcome.finished
        try reportingErrors { () throws(NarratorError) in
            let live = chainOptions.activity != nil && chainOptions.taps == nil
            let script = try controls.map { text throws(NarratorError) in try ControlScript.parse(text) }
            let prepared = try chainOptions.prepare(live: live)
            if speed != 1 && prepared.schedule.streamsFiles {
                throw NarratorError(file: "--speed", "this plays long files streamed from disk, in order: its speed cannot change")
            }
            let sink = try EventSink(path: events, schedule: prepared.schedule, live: live, speed: speed)
            let playback: Playback
            do throws(PlaybackError) {
                playback = prepared.play(on: try outputOptions.open(for: prepared.schedule), threads: outputOptions.threads, speed: speed,
                    releaseDeviceAfterPause: .milliseconds(Int64((releaseDeviceAfter * 1000).rounded())))
            } catch {
                sink.discard()
                throw deviceError(error)
            }
            let interrupts = Interrupts { playback.stop() }
            defer { interrupts.restore() }
            // An activity without scripted taps is answered live: each line on stdin is a tap
            // (an answer, a sound's name, replay or close), heard the moment it is read.
            // Space with nothing typed pauses and resumes, as on a chain.
            let answers =
                live
                ? LiveAnswers.start(view: sink.display, pauseOrResume: { Self.control(.pauseOrResume, playback: playback, cues: [], view: sink.display) }) {
                    playback.tap($0)
                } : nil
            defer { answers?.restore() }
            // A chain on the terminal: keys control it (space, ←/→, [ ], m).
            let cues = prepared.schedule.cues
            let keys = live ? nil : LiveAnswers.startKeys(view: sink.display) { key in Self.control(key, playback: playback, cues: cues, view: sink.display) }
            defer { keys?.restore() }
            let verbose = verbose
            let done = DispatchSemaphore(value: 0)
            let controlFailure = Mutex<NarratorError?>(nil)
            let rate = prepared.schedule.sampleRate
            Task.detached {
                for await event in playback.events {
                    if verbose, case .start(let info) = event { printError(Self.describe(info)) }
                    if case .start(let info) = event, let script {
                        // The controls, each at its moment after frame 0 was heard.
                        Thread.detachNewThread {
                            for item in script.items {
                                SystemClock().sleep(until: info.firstFrameHeardTime + item.at)
                                if playback.isFinished { return }
                                do throws(NarratorError) {
                                    try ControlScript.apply(item, to: playback, rate: rate)
                                } catch {
                                    controlFailure.withLock { $0 = error }
                                    playback.stop()
                                    return
                                }
                            }
                        }
                    }
                    sink.send(event, startTime: playback.startTime)
                }
                done.signal()
            }
            done.wait()
            outcome = playback.waitUntilFinished()
            sink.finish()
            if let failure = controlFailure.withLock({ $0 }) { throw failure }
            if case .failed(let error) = outcome { throw deviceError(error) }
        }
        if outcome == .canceled { throw ExitCode(130) }
    }

    /// What a key does to the chain playing.
    static func control(_ key: ControlKeys.Key, playback: Playback, cues: [Cue], view: ReadAlong?) {
        let heard = playback.heardFrame
        func starts(words: Bool) -> [Int] {
            cues.compactMap { cue in
                switch cue.kind {
                case .word: words ? cue.frame : nil
                case .sentence: words ? nil : cue.frame
                default: nil
                }
            }
        }
        /// The start before the one being heard (or that one, when none is before it).
        func previous(_ frames: [Int]) -> Int? {
            guard let current = frames.last(where: { $0 <= heard }) else { return frames.first }
            return frames.last { $0 < current } ?? current
        }
        func seek(_ frame: Int?) {
            if let frame { try? playback.seek(to: .frame(frame)) }
        }
        switch key {
        case .pauseOrResume: if playback.isPaused { playback.resume() } else { playback.pause() }
        case .previousWord: seek(previous(starts(words: true)))
        case .nextWord: seek(starts(words: true).first { $0 > heard })
        case .previousSentence: seek(previous(starts(words: false)))
        case .nextSentence: seek(starts(words: false).first { $0 > heard })
        case .muteMusic:
            let muted = !playback.gains.isMuted(.music)
            playback.gains.set(.music, muted: muted)
            view?.say(muted ? "music muted (m brings it back)" : "music on")
        case .slower, .faster:
            let steps = [0.5, 0.75, 1, 1.25, 1.5, 1.75, 2]
            let now = playback.speed
            let next = key == .slower ? steps.last { $0 < now } : steps.first { $0 > now }
            guard let next else { return }
            // The view shows the new speed when it is heard (`speedChanged`).
            do { try playback.setSpeed(next) } catch { view?.say(error.message) }
        }
    }

    static func describe(_ info: StartInfo) -> String {
        let rate = Double(info.output.sampleRate)
        func ms(_ frames: Int) -> String { String(format: "%.1f ms", Double(frames) / rate * 1000) }
        return "device \(info.output.device): \(info.output.sampleRate) Hz, \(info.output.channels) ch, \(info.output.format.rawValue), "
            + "period \(info.output.periodFrames) frames (\(ms(info.output.periodFrames))), "
            + "buffer \(info.output.bufferFrames) frames (\(ms(info.output.bufferFrames))), "
            + "measured delay \(info.measuredDelayFrames) frames (\(ms(info.measuredDelayFrames))), "
            + (info.realtime ? "real-time priority" : "normal priority")
    }

    /// One line, naming the device first like a file: "narrator: DEVICE: what failed; what to do".
    private func deviceError(_ error: PlaybackError) -> NarratorError {
        NarratorError(file: "audio device '\(error.device)'", error.message)
    }

}

/// Ctrl-C and SIGTERM cancel playback (the device is dropped and closed, a `stopped` event
/// ends the stream) instead of killing the process.
final class Interrupts {
    private let sources: [any DispatchSourceSignal]

    init(_ handler: @escaping @Sendable () -> Void) {
        sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
        var unblock = sigset_t()
        sigemptyset(&unblock)
        for number in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&unblock, number) }
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }

    func restore() {
        for source in sources { source.cancel() }
        for number in [SIGINT, SIGTERM, SIGHUP] { signal(number, SIG_DFL) }
    }
}

/// Where events go: JSON lines to a file or a pipe, or a read-along display on a terminal.
/// Used by one task at a time.
final class EventSink: @unchecked Sendable {
    private let handle: FileHandle?
    private let path: String?
    /// Whether the events file was created here (only then does `discard` remove it).
    private let created: Bool
    /// The view on a terminal, when stdout is one.
    let display: ReadAlong?

    private var finalCue: FinalCue
    /// The errno of the first failed write of an event, or 0.
    private var writeFailure: Int32 = 0
    private var emptied = false

    /// `live`: an activity answered live, whose length is not known before it plays. `speed`:
    /// the playback's from its first frame, for the terminal view's clock.
    init(path: String?, schedule: Schedule, live: Bool = false, speed: Double = 1) throws(NarratorError) {
        self.path = path
        finalCue = FinalCue(lastCue: schedule.cues.last)
        let total = live ? nil : schedule.cues.last?.frame
        if let path {
            // Written as heard, line by line (not atomically: a reader follows it); a device
            // or a FIFO (`/dev/null`, a pipe to a consumer) is written in place, never replaced.
            // A file already there is emptied only once playback starts (`send`): a device that
            // cannot be opened leaves it as it was.
            var descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
            created = descriptor >= 0
            if descriptor < 0 && errno == EEXIST { descriptor = open(path, O_WRONLY | O_CLOEXEC) }
            guard descriptor >= 0 else {
                let code = errno
                let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
                let why = code == ENOENT ? FileProblem.describe(path: directory) : String(cString: strerror(code))
                throw NarratorError(file: path, "cannot write the events: \(why)")
            }
            self.handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
            display = isatty(STDOUT_FILENO) != 0 ? ReadAlong(schedule: schedule, total: total, speed: speed, answering: live) : nil
        } else if isatty(STDOUT_FILENO) != 0 {
            created = false
            handle = nil
            display = ReadAlong(schedule: schedule, total: total, speed: speed, answering: live)
        } else {
            created = false
            handle = FileHandle.standardOutput
            display = nil
        }
    }

    func send(_ event: PlaybackEvent, startTime: Int64) {
        if let handle {
            if !emptied {
                emptied = true
                // A regular file's old lines go (a device or a FIFO has none to lose).
                if path != nil { _ = ftruncate(handle.fileDescriptor, 0) }
            }
            let final = finalCue.isFinal(event)
            // A failed write (a full disk, a reader gone) is said once, at the end; playback goes on.
            if writeFailure == 0 {
                writeFailure = Output.write(Self.line(event, startTime: startTime, final: final) + "\n", to: handle.fileDescriptor)
            }
        }
        display?.show(event)
    }

    func finish() {
        display?.finish()
        if path != nil { try? handle?.synchronize() }
        if writeFailure != 0 { printError(Output.failure(path ?? "stdout", writeFailure).description) }
    }

    /// Which cue ends playback: the schedule's last (a chain's last `chainEnd`, or the
    /// `musicStop` of the lesson's bed fading out after it), or an activity's end — or, when its
    /// music bed plays on past that end (fading out), the bed's `musicStop`. Fed every event in order.
    struct FinalCue {
        let lastCue: Cue?
        private var bedPlaying = false
        private var activityEnded = false

        init(lastCue: Cue?) { self.lastCue = lastCue }

        mutating func isFinal(_ event: PlaybackEvent) -> Bool {
            guard case .cue(let cue, _, _) = event else { return false }
            switch cue.traceKind {
            case .musicStart?:
                bedPlaying = true
            case .musicStop?:
                bedPlaying = false
                if activityEnded { return true }
            case let kind? where kind.endsActivity:
                activityEnded = true
                return !bedPlaying
            default:
                break
            }
            return cue == lastCue
        }
    }

    /// The event's line with the CLI's envelope: `t`, seconds from `startTime` (when playback
    /// began) to the event's `heard`, to the microsecond; `final` on the cue that ends playback.
    static func line(_ event: PlaybackEvent, startTime: Int64, final: Bool = false) -> String {
        var envelope = [EventEncoder.Member("t", .double((Double(event.heard - startTime) / 1e3).rounded() / 1e6))]
        if final { envelope.append(EventEncoder.Member("final", .bool(true))) }
        return event.jsonLine(envelope)
    }

    /// The device could not be opened: leave no empty events file behind (one this run made).
    func discard() {
        if let path, created { AtomicFile.removeWritten(path) }
    }
}
