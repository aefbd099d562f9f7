import Foundation
@_spi(Testing) import NarratorKit
import NarratorTestSupport
import Testing

@_spi(Testing) import NarratorLive

/// The public Swift API, the way an app uses it: load, prepare, read the cue schedule, play and
/// receive the events as an AsyncSequence, answer, stop.
@Suite("Swift API", .serialized)
struct APITests {
    static let lesson = Repo.path("Timings/lessons/homer-sight-words.json")

    /// A paced device double (plays 48000 frames per second of the monotonic clock).
    final class Device: PCMDevice, @unchecked Sendable {
        let output = NegotiatedOutput(device: "paced", sampleRate: 48000, channels: 2, format: .s16, periodFrames: 600, bufferFrames: 2400)
        private var written = 0
        private var started: Int64?
        private func played(_ now: Int64) -> Int {
            guard let started else { return 0 }
            return min(written, Int((now - started) * 48 / 1_000_000))
        }
        func write(_ samples: UnsafeRawPointer, frames: Int) -> Result<Int, DeviceFailure> {
            let now = MonotonicClock.now()
            let room = 2400 - (written - played(now))
            guard room > 0 else { return .failure(.wouldBlock) }
            let n = min(room, frames)
            written += n
            if started == nil && written >= 2400 { started = now }
            return .success(n)
        }
        func wait(timeoutMs: Int32) -> Result<Bool, DeviceFailure> {
            var pause = timespec(tv_sec: 0, tv_nsec: 1_000_000)
            nanosleep(&pause, nil)
            return .success(true)
        }
        func read() -> PCMReading? {
            let now = MonotonicClock.now()
            return PCMReading(running: started != nil, delay: written - played(now), time: now)
        }
        func recover(_ failure: DeviceFailure) -> DeviceFailure? { nil }
        func rewind(_ frames: Int) -> Int { 0 }
        func drop() {}
    }

    @Test func cueScheduleWithoutPlaying() throws {
        let lesson = try NarratorLesson(path: Repo.path("Timings/lessons/sample.json"))
        let prepared = try lesson.prepare(.chain("correct"), seed: 7)
        let sheet = try run(Repo.narrator, ["cues", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "--seed", "7"])
        #expect(CueSheet.json(prepared.schedule) == sheet.stdout, "the API and the CLI give the same cue sheet")
    }

    @Test func eventsArriveAsAnAsyncSequenceAndTapsAnswer() async throws {
        let lesson = try NarratorLesson(path: Self.lesson)
        let prepared = try lesson.prepare(.activity("sight-words"), seed: 7)
        let playback = prepared.play(on: Device())
        var types: [String] = []
        var answered = false
        for await event in playback.events {
            guard case .cue(let cue, _, _) = event else { continue }
            types.append(cue.type)
            // Answer as soon as the prompt has been heard to end; then close during feedback.
            if cue.type == "chainEnd" && !answered {
                answered = true
                playback.tap("see")
            }
            if cue.type == "feedback" { playback.close() }
        }
        #expect(playback.waitUntilFinished() == .finished)
        #expect(types.contains("tap") && types.contains("feedback"))
        #expect(!types.contains("idlePrompt"), "answered before the deadline")
        #expect(Array(types.suffix(2)) == ["close", "activityEnd"])
    }

    @Test func stopEndsWithCanceled() async throws {
        let lesson = try NarratorLesson(path: Repo.path("Timings/lessons/sample.json"))
        let playback = try lesson.prepare(.chain("correct"), seed: 7).play(on: Device())
        var last: PlaybackEvent?
        var stopped = false
        for await event in playback.events {
            last = event
            if case .cue = event, !stopped {
                stopped = true
                playback.stop()
            }
        }
        guard case .canceled = last else { Issue.record("last event \(String(describing: last))"); return }
        #expect(playback.waitUntilFinished() == .canceled)
    }
}
