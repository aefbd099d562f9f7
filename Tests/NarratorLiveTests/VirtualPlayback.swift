import Foundation
import NarratorAudioFile
@testable import NarratorCore
@testable import NarratorEngine
@_spi(Testing) import NarratorLive
import NarratorTestSupport
import Synchronization
import Testing

// What the engine's suites on the virtual output share: the live fixture and its offline
// render, the engine's event log, a playback on the virtual output and how to advance it.

/// A lesson from the sample clips plus a music bed (resampled from 44.1 kHz), and its offline
/// render as 16-bit samples: the ground truth of what must be played.
struct LiveFixture {
    let dir = TempDir()
    let lesson: Lesson
    let bank: ClipBank
    let schedule: Schedule
    let reference: [Int16]

    /// `streamAbove`: clips longer than this many seconds are streamed through a ring (the
    /// bed is 2 s); nil keeps every clip in memory.
    init(repeats: Int = 1, streamAbove: Int? = nil) throws {
        let bed = dir.file("bed.wav")
        let made = try runTool("sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", bed, "synth", "2", "sine", "220", "vol", "0.2"])
        try #require(made.status == 0, "sox: \(made.stderr)")
        // A tone that starts at its peak: the timeline's first frame is not silence, so when
        // it was heard is known to the frame.
        let tone = dir.file("tone.wav")
        let toned = try runTool("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "0.2", "sine", "440", "0", "25", "vol", "0.5"])
        try #require(toned.status == 0, "sox: \(toned.stderr)")
        let clips = Repo.path("Audio/lessons")
        let lessonPath = dir.write(
            "lesson.json",
            """
            {"sampleRate": 48000, "channels": 2,
             "clips": {"tone": {"file": "\(tone)"}, "sfx": {"file": "\(clips)/sfx/correct.wav"},
                       "p1": {"file": "\(clips)/sight-words/part1.wav", "timings": "\(Repo.path("Timings/lessons/sight-words/part1.json"))"},
                       "bed": {"file": "\(bed)", "start": 0.5}},
             "chains": {"c": [{"clip": "tone"}, {"clip": "sfx"}, {"clip": "bed"}, {"silence": 0.1}, {"pulse": ["x"]}, {"clip": "p1"}],
                        "other": [{"clip": "tone"}, {"clip": "sfx"}, {"clip": "p1"}]}}
            """)
        lesson = try Lesson.load(path: lessonPath)
        bank = try ClipBank.prepare(lesson: lesson, clipIDs: ["tone", "sfx", "p1", "bed"], decoder: SndFileDecoder(streamAboveSeconds: streamAbove))
        schedule = try Self.schedule("c", repeats: repeats, bank: bank)
        reference = try Self.render(schedule, in: dir, name: "reference.wav")
    }

    static func schedule(_ chain: String, repeats: Int = 1, bank: ClipBank) throws -> Schedule {
        var draws = PoolDraws(seed: 1)
        return try Scheduler.schedule(chain: chain, repeats: repeats, bank: bank, draws: &draws)
    }

    /// The offline render's samples (sox-exact, see RenderTests).
    static func render(_ schedule: Schedule, in dir: TempDir, name: String) throws -> [Int16] {
        try OfflineRenderer.render(schedule, to: dir.file(name), format: .s16)
        return try WAVFile(path: dir.file(name)).int16Samples
    }
}

/// Everything the engine reported, and how it ended.
final class EventLog: @unchecked Sendable {
    // @unchecked: written by the cue thread while the test thread is parked in the virtual
    // clock, read by the test thread afterwards.
    var events: [PlaybackEvent] = []
    var outcome: PlaybackOutcome?
    var cues: [(cue: Cue, heard: Int64, delivered: Int64)] {
        events.compactMap { if case .cue(let cue, let heard, let delivered) = $0 { (cue, heard, delivered) } else { nil } }
    }
    var terminals: Int {
        events.filter { event in
            switch event {
            case .canceled, .error: true
            default: false
            }
        }.count
    }
}

/// A schedule played by the engine on a virtual output, whose clock the test advances: the
/// engine's logic (cue order, never early, interruptions, plan switches, holds, cancel, errors)
/// runs deterministically and many times faster than real time. The output's own arithmetic
/// says when each frame was heard; the offline render says what must have been played.
struct VirtualPlayback {
    let clock = VirtualClock()
    let output: VirtualOutput
    let engine: PlaybackEngine
    let log = EventLog()

    init(_ schedule: Schedule, periodFrames: Int = 480, bufferFrames: Int = 1920, readingWander: Int64 = 0) {
        output = VirtualOutput(clock: clock, sampleRate: schedule.sampleRate, channels: schedule.channels, periodFrames: periodFrames, bufferFrames: bufferFrames)
        output.readingWander = readingWander
        engine = PlaybackEngine(schedule: schedule, output: output, clock: clock)
    }

    /// Starts playing; `onEvent` runs on the cue thread after each event is logged, and
    /// `onUpcoming` with each moment the engine announces.
    func start(
        replanner: PlaybackEngine.Replanner? = nil, onEvent: (@Sendable (PlaybackEvent) -> Void)? = nil,
        onUpcoming: (@Sendable (Int64) -> Void)? = nil
    ) {
        let log = log
        engine.start(
            replanner: replanner,
            onEvents: { events in
                for event in events {
                    log.events.append(event)
                    onEvent?(event)
                }
            },
            onFinished: { log.outcome = $0 }, onUpcoming: onUpcoming)
    }

    /// Plays to the end and returns how it ended.
    func play(replanner: PlaybackEngine.Replanner? = nil, onEvent: (@Sendable (PlaybackEvent) -> Void)? = nil) throws -> PlaybackOutcome {
        start(replanner: replanner, onEvent: onEvent)
        try #require(output.runToEnd(limit: 120_000_000_000), "playback did not end within two virtual minutes")
        return try #require(log.outcome)
    }

    /// The output's frame that played `frame` of the timeline (the output first plays
    /// silence while its clock settles), located by content in `reference`.
    func deviceFrame(ofTimelineFrame frame: Int, _ reference: [Int16]) -> Int {
        Alignment.locate(reference, in: output.samples, channels: 2)?.recordingFrames(ofReferenceFrame: frame)?.lowerBound ?? -1
    }

    /// Checks what the output played against `reference`, and each cue's delivery and stamp
    /// against when the output played its frame. Returns the delivery errors (ns).
    @discardableResult
    func check(against reference: [Int16], cues expected: [Cue], gaps: Int, exempt: Set<Int> = [], lateBy limit: Int64 = 1_000_000) throws -> [Int64] {
        let alignment = try #require(Alignment.locate(reference, in: output.samples, channels: 2))
        #expect(alignment.isComplete, "\(alignment)")
        #expect(alignment.gaps.count == gaps, "\(alignment)")
        #expect(log.cues.map(\.cue) == expected, "every cue once, in order")
        #expect(log.terminals == 0)
        var errors: [Int64] = []
        for (cue, heard, delivered) in log.cues {
            let frames = try #require(alignment.recordingFrames(ofReferenceFrame: cue.frame))
            let earliest = try #require(output.heardTime(ofFrame: frames.lowerBound), "frame \(cue.frame) was never heard")
            // The end of a silent stretch may lie past where the output stopped.
            let latest = output.heardTime(ofFrame: frames.upperBound) ?? earliest
            #expect(exempt.contains(cue.frame) || delivered >= earliest, "\(cue.type) at frame \(cue.frame) came \(ms(earliest - delivered)) before it was heard")
            #expect(delivered <= latest + limit, "\(cue.type) at frame \(cue.frame) came \(ms(delivered - latest)) after it was heard")
            #expect(delivered >= heard, "\(cue.type) at frame \(cue.frame) was delivered before the time it reports")
            if frames.count == 1 {
                errors.append(delivered - earliest)
                #expect(exempt.contains(cue.frame) || abs(heard - earliest) <= 1_000, "\(cue.type) at frame \(cue.frame): stamped \(ms(heard - earliest)) from when it was heard")
            }
        }
        return errors
    }
}

extension VirtualPlayback {
    /// The output frame heard at `time` (the first frame heard at or after it).
    static func deviceFrame(_ output: VirtualOutput, heardAt time: Int64) -> Int? {
        var low = 0
        var high = output.played
        guard let last = output.heardTime(ofFrame: high), last >= time else { return nil }
        while low < high {
            let middle = (low + high) / 2
            if let heard = output.heardTime(ofFrame: middle), heard >= time { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// Advances the virtual output until `done` holds for the log (at most `limit` ns).
    static func run(_ playback: VirtualPlayback, until done: (EventLog) -> Bool, limit: Int64 = 30_000_000_000) throws {
        let end = playback.clock.now() + limit
        while !done(playback.log) {
            try #require(playback.clock.now() < end, "waited \(limit / 1_000_000) ms of virtual time")
            playback.output.run(for: 5_000_000)
        }
    }
}

func ms(_ ns: Int64) -> String { String(format: "%.3f ms", Double(ns) / 1e6) }
