import CAllocationCounter
import Foundation
import NarratorAudioFile
import NarratorCore
@_spi(Testing) import NarratorLive
import NarratorTestSupport
import NarratorTestTraits
import Synchronization
import Testing

/// A lesson from the sample clips plus a streamed music bed (resampled from 44.1 kHz), and
/// its offline render as 16-bit samples: the ground truth of what must be played.
struct LiveFixture {
    let dir = TempDir()
    let schedule: Schedule
    let reference: [Int16]

    init(repeats: Int = 1) throws {
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
             "chains": {"c": [{"clip": "tone"}, {"clip": "sfx"}, {"clip": "bed"}, {"silence": 0.1}, {"pulse": ["x"]}, {"clip": "p1"}]}}
            """)
        let lesson = try Lesson.load(path: lessonPath)
        // Stream anything over a second, so the bed goes through a ring.
        let bank = try ClipBank.prepare(lesson: lesson, chain: "c", decoder: SndFileDecoder(streamAboveSeconds: 1))
        var draws = PoolDraws(seed: 1)
        schedule = try Scheduler.schedule(chain: "c", repeats: repeats, bank: bank, draws: &draws)
        try OfflineRenderer.render(schedule, to: dir.file("reference.wav"), format: .s16)
        reference = try WAVFile(path: dir.file("reference.wav")).int16Samples
    }

    func device(seconds: Int = 30) -> PacedDevice {
        PacedDevice(rate: 48000, channels: 2, periodFrames: 600, bufferFrames: 2400, seconds: seconds)
    }
}

/// Everything `run` reported.
final class EventLog: @unchecked Sendable {
    var events: [PlaybackEvent] = []
    var cues: [(cue: Cue, at: Int64)] {
        events.compactMap { if case .cue(let cue, _, let delivered) = $0 { (cue, delivered) } else { nil } }
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

/// Functional checks on a device double: nothing early, nothing lost or repeated, one terminal
/// event. The timing goal itself is measured end to end through a real sound server
/// (LivePlaybackTests) and by scripts/bench-live.sh; here a loaded machine may delay a wake-up,
/// so lateness is only bounded loosely (with the CPUs kept awake, as in LivePlaybackTests).
@Suite("Real-time loop", .serialized, .awakeCPUs)
struct RealTimeTests {
    @Test func audioLoopDoesNotAllocate() throws {
        let fixture = try LiveFixture(repeats: 2)
        defer { fixture.dir.remove() }
        #expect(fixture.schedule.voices.contains { if case .stream = $0.audio.source { true } else { false } })
        // The counter counts: a control allocation on this thread is seen.
        narrator_reset_allocation_count()
        narrator_count_allocations(true)
        let control = [Int](repeating: 7, count: Int.random(in: 100...200))
        narrator_count_allocations(false)
        #expect(narrator_allocation_count() >= 1 && control.count >= 100, "the allocation counter does not count")

        let device = fixture.device()
        let player = LivePlayer(schedule: fixture.schedule, pcm: device)
        player.audioThreadProbe = { entering in
            if entering { narrator_reset_allocation_count() }
            narrator_count_allocations(entering)
        }
        let log = EventLog()
        let outcome = player.run { log.events.append($0) }
        #expect(outcome == .finished)
        #expect(log.cues.map(\.cue) == fixture.schedule.cues)
        #expect(device.written > fixture.schedule.frames)
        #expect(narrator_allocation_count() == 0, "allocations on the audio thread while it played")
    }

    /// The device's own arithmetic says when each frame was heard; every cue must come at that
    /// moment, never before it, and the device must have received the offline render exactly.
    @Test func cuesArriveWhenHeard() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let device = fixture.device()
        let log = EventLog()
        let outcome = LivePlayer(schedule: fixture.schedule, pcm: device).run { log.events.append($0) }
        #expect(outcome == .finished)
        let errors = try check(log, device: device, fixture: fixture, expectGaps: 0)
        print("paced device: cue error p50 \(ms(errors.percentile(0.5))) p99 \(ms(errors.percentile(0.99))) max \(ms(errors.max()!)) over \(errors.count) cues")
    }

    /// The writer stalls for 300 ms mid-chain: the device runs dry, playback recovers, the rest
    /// of the timeline follows with nothing lost, and cues stay with the audio.
    @Test func underrunRecoversInStep() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let device = fixture.device()
        device.stallAfter = 48000  // about a second in
        device.stallNs = 300_000_000
        let log = EventLog()
        let outcome = LivePlayer(schedule: fixture.schedule, pcm: device).run { log.events.append($0) }
        #expect(outcome == .finished)
        #expect(device.underruns >= 1)
        #expect(log.events.contains { if case .underrun = $0 { true } else { false } })
        _ = try check(log, device: device, fixture: fixture, expectGaps: 1)
    }

    /// Every 100 ms of play the device stops consuming for 30 ms without an error (a sound
    /// server that keeps being descheduled): cues due in a pause wait for the device to confirm
    /// the clock again rather than go out on the old one.
    @Test func silentDevicePausesDelayCuesInsteadOfSendingThemEarly() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let device = fixture.device()
        device.pauseEvery = 4800
        device.pauseNs = 30_000_000
        let log = EventLog()
        let outcome = LivePlayer(schedule: fixture.schedule, pcm: device).run { log.events.append($0) }
        #expect(outcome == .finished)
        // The bound: a device that stops within the confirmation window (1 ms) before a cue's
        // frame can still make that cue early; any other cue must wait for the device.
        let alignment = try #require(Alignment.locate(fixture.reference, in: device.played, channels: 2))
        let exempt = Set(log.cues.map(\.cue.frame).filter { frame in
            guard let deviceFrame = alignment.recordingFrames(ofReferenceFrame: frame)?.upperBound else { return false }
            return deviceFrame % device.pauseEvery <= 48 * 3 / 2
        })
        _ = try check(log, device: device, fixture: fixture, expectGaps: 0, exempt: exempt)
    }

    @Test func lostDeviceEndsWithOneError() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let device = fixture.device()
        device.failAfter = 30000
        device.failure = .deviceLost(EIO)
        let log = EventLog()
        let outcome = LivePlayer(schedule: fixture.schedule, pcm: device).run { log.events.append($0) }
        guard case .failed(let error) = outcome else { Issue.record("outcome \(outcome)"); return }
        #expect(error.code == "EIO")
        #expect(log.terminals == 1)
        guard case .error(_, _, let at) = log.events.last else { Issue.record("last event \(String(describing: log.events.last))"); return }
        let failedAt = try #require(device.failedAt)
        #expect(at - failedAt < 100_000_000, "the error came \(ms(at - failedAt)) after the device failed")
        #expect(!log.cues.contains { if case .chainEnd = $0.cue.kind { true } else { false } })
    }

    @Test func cancelEndsWithOneCanceled() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let device = fixture.device()
        let player = LivePlayer(schedule: fixture.schedule, pcm: device)
        let canceledAt = Mutex<Int64>(0)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) {
            canceledAt.withLock { $0 = MonotonicClock.now() }
            player.cancel()
        }
        let log = EventLog()
        let outcome = player.run { log.events.append($0) }
        #expect(outcome == .canceled)
        #expect(log.terminals == 1)
        guard case .canceled(_, let at) = log.events.last else { Issue.record("last event \(String(describing: log.events.last))"); return }
        let requested = canceledAt.withLock { $0 }
        #expect(at - requested < 50_000_000, "canceled \(ms(at - requested)) after the request")
        #expect(log.cues.count < fixture.schedule.cues.count)
    }

    /// Checks what the device received against the render, and each cue's delivery against the
    /// time the device played its frame. Returns the delivery errors in nanoseconds.
    private func check(
        _ log: EventLog, device: PacedDevice, fixture: LiveFixture, expectGaps: Int, exempt: Set<Int> = []
    ) throws -> [Int64] {
        let alignment = try #require(Alignment.locate(fixture.reference, in: device.played, channels: 2))
        #expect(alignment.isComplete, "\(alignment)")
        #expect(alignment.gaps.count == expectGaps, "\(alignment)")
        #expect(log.cues.map(\.cue) == fixture.schedule.cues, "every cue once, in order")
        #expect(log.terminals == 0)
        var errors: [Int64] = []
        for (cue, at) in log.cues {
            let frames = try #require(alignment.recordingFrames(ofReferenceFrame: cue.frame))
            let earliest = try #require(device.heardTime(ofDeviceFrame: frames.lowerBound))
            let latest = try #require(device.heardTime(ofDeviceFrame: frames.upperBound))
            #expect(exempt.contains(cue.frame) || at >= earliest - 200_000, "\(cue.type) at frame \(cue.frame) came \(ms(earliest - at)) before it was heard")
            #expect(at <= latest + 20_000_000, "\(cue.type) at frame \(cue.frame) came \(ms(at - latest)) after it was heard")
            if frames.count == 1 { errors.append(at - earliest) }
            if ProcessInfo.processInfo.environment["NARRATOR_TEST_VERBOSE"] != nil {
                print(cue.type, cue.frame, frames, ms(at - earliest), ms(at - latest))
            }
        }
        return errors
    }
}

func ms(_ ns: Int64) -> String { String(format: "%.3f ms", Double(ns) / 1e6) }

extension Array where Element == Int64 {
    func percentile(_ p: Double) -> Int64 {
        let sorted = self.map { abs($0) }.sorted()
        return sorted[Swift.min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
    }
}
