import Foundation
import NarratorKit
import NarratorTestSupport
import Testing

/// The public Swift API, the way an app uses it: load, prepare, read the cue schedule, play and
/// receive the events as an AsyncSequence, answer, stop.
@Suite("Swift API", .serialized)
struct APITests {
    static let lesson = Repo.path("Timings/lessons/homer-sight-words.json")

    /// A virtual output paced to real time, run on a thread of its own: the app's loop
    /// answers as things are heard, as it would on a device.
    static func output() -> VirtualOutput {
        let output = VirtualOutput(clock: VirtualClock(), sampleRate: 48000, channels: 2, periodFrames: 600, bufferFrames: 2400)
        output.pacedToRealTime = true
        return output
    }

    /// Runs `output` on its own thread once playback has started on it.
    static func runInBackground(_ output: VirtualOutput) {
        Thread { output.runToEnd(limit: 300_000_000_000) }.start()
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
        let output = Self.output()
        let playback = prepared.play(on: output, clock: output.clock)
        Self.runInBackground(output)
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
        let output = Self.output()
        let playback = try lesson.prepare(.chain("correct"), seed: 7).play(on: output, clock: output.clock)
        Self.runInBackground(output)
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
