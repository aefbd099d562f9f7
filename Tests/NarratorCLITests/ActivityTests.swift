import Foundation
import NarratorTestSupport
import Testing

/// `narrator simulate` on the Learn-with-Homer sight-words activity. Expected frames come from
/// the clips' lengths read by hand (`WAVFile`), not from the code under test.
@Suite("Activities on the virtual clock")
struct ActivityTests {
    static let lesson = SightWordsLesson.path
    static let rate = SightWordsLesson.rate
    static let idle = 4 * rate

    static func simulate(_ taps: String?, seed: Int = 7, until: Double? = nil, lesson: String = lesson) throws -> [Simulated.Event] {
        var arguments = ["simulate", lesson, "--activity", "sight-words", "--seed", "\(seed)"]
        if let taps { arguments += ["--taps", taps] }
        if let until { arguments += ["--until", "\(until)"] }
        let result = try run(Repo.narrator, arguments)
        try #require(result.status == 0, "\(result.stderr)")
        return try result.stdout.split(separator: "\n").map { line in
            Simulated.Event(fields: try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]))
        }
    }

    static func seconds(_ frame: Int) -> String { String(format: "%.6f", Double(frame) / Double(rate)) }

    var promptEnd: Int { get throws { try SightWordsLesson.frames("intro") + SightWordsLesson.frames("p1") } }

    @Test func idlePromptStartsExactlyFourSecondsAfterThePromptEnds() throws {
        let trace = try Self.simulate(nil, until: 12)
        let deadline = try promptEnd + Self.idle
        let prompt = try #require(trace.first { $0.type == "idlePrompt" })
        #expect(prompt.frame == deadline)
        let start = try #require(trace.first { $0.type == "chainStart" && $0["role"] == "idle" })
        #expect(start.frame == deadline && start["chain"] == "idle-see")
        #expect(trace.contains { $0.type == "pulse" && $0["target"] == "tile-see" && $0.frame == deadline })
        // Re-armed when the idle prompt ends: the next one 4 s after that.
        let again = trace.filter { $0.type == "idlePrompt" }.dropFirst().first
        let rearmed = try deadline + SightWordsLesson.frames("see-tap-see") + Self.idle
        #expect(again?.frame == rearmed)
        #expect(trace.last?.type == "stop")
    }

    @Test func aTapOneMillisecondBeforeTheDeadlineWins() throws {
        let deadline = try promptEnd + Self.idle
        let trace = try Self.simulate("\(Self.seconds(deadline - 48)):see", until: 30)
        let beforeTap = trace.prefix { !($0.type == "tap") }
        #expect(!beforeTap.contains { $0.type == "idlePrompt" }, "no idle prompt before the tap")
        let tap = try #require(trace.first { $0.type == "tap" })
        #expect(tap.frame == deadline - 48 && tap["result"] == "correct")
        #expect(!trace.contains { $0.type == "idlePrompt" && $0.frame == deadline })
        // At the deadline itself the idle prompt starts first, and the tap interrupts it.
        let late = try Self.simulate("\(Self.seconds(deadline)):see", until: 30)
        let order = late.filter { ["idlePrompt", "tap", "canceled"].contains($0.type) }.map { "\($0.type)@\($0.frame)" }
        #expect(order.prefix(3) == ["idlePrompt@\(deadline)", "canceled@\(deadline)", "tap@\(deadline)"])
    }

    @Test func wrongAnswersClimbTheLadderAndRestartTheIdleTimer() throws {
        let first = try promptEnd + 48_000
        let trace = try Self.simulate("\(Self.seconds(first)):cat,\(Self.seconds(first + 96_000)):dog", until: 20)
        let starts = trace.filter { $0.type == "chainStart" }.map { "\($0["chain"]!)@\($0.frame)" }
        let tryAgainEnd = try first + SightWordsLesson.frames("try-again")
        let hintEnd = try first + 96_000 + SightWordsLesson.frames("see-tap-see")
        #expect(Array(starts.prefix(4)) == ["prompt-1@0", "try-again@\(first)", "idle-see@\(first + 96_000)", "idle-see@\(hintEnd + Self.idle)"])
        #expect(trace.contains { $0.type == "feedbackEnd" && $0.frame == tryAgainEnd && $0["attempt"] == "1" })
        // The 2nd wrong answer's hint pulses the right tile.
        #expect(trace.contains { $0.type == "pulse" && $0.frame == first + 96_000 && $0["target"] == "tile-see" })
        let second = trace.filter { $0.type == "tap" }.map { $0["attempt"] }
        #expect(second == ["1", "2"])
    }

    @Test func rightAnswersPlayFeedbackThenTheNextStepThenTheFinalAndAdvance() throws {
        let tap1 = try promptEnd + 24_000
        let trace = try Self.simulate("\(Self.seconds(tap1)):see", until: 60)
        // correct-1: sfx, a congrats pick (read from the trace), p1, p2.
        let pick = try #require(trace.first { $0.type == "clipStart" && $0["pool"] == "congrats" }?["clip"])
        let correctEnd = try tap1 + SightWordsLesson.frames("sfx") + SightWordsLesson.frames(pick) + SightWordsLesson.frames("p1") + SightWordsLesson.frames("p2")
        #expect(trace.contains { $0.type == "chainEnd" && $0["chain"] == "correct-1" && $0.frame == correctEnd })
        let step2 = try #require(trace.first { $0.type == "stepStart" && $0["step"] == "1" })
        #expect(step2.frame == correctEnd)
        // Step 2 has no prompt of its own: the idle timer starts when the feedback ends.
        #expect(trace.first { $0.type == "idlePrompt" && $0["step"] == "1" }?.frame == correctEnd + Self.idle)

        let tap2 = correctEnd + 10_000
        let done = try Self.simulate("\(Self.seconds(tap1)):see,\(Self.seconds(tap2)):hat", until: 60)
        let pick2 = try #require(done.filter { $0.type == "clipStart" && $0["pool"] == "congrats" }.last?["clip"])
        let correct2End = try tap2 + SightWordsLesson.frames("sfx") + SightWordsLesson.frames(pick2) + SightWordsLesson.frames("p1") + SightWordsLesson.frames("p2")
        let ticketsEnd = try correct2End + SightWordsLesson.frames("word-see") + SightWordsLesson.frames("word-hat") + 2 * SightWordsLesson.frames("whoosh")
        #expect(done.contains { $0.type == "chainStart" && $0["chain"] == "tickets" && $0.frame == correct2End })
        let secondTicket = try correct2End + SightWordsLesson.frames("word-see") + SightWordsLesson.frames("whoosh")
        #expect(done.contains { $0.type == "pulse" && $0["target"] == "ticket-2" && $0.frame == secondTicket })
        #expect(done.suffix(2).map { "\($0.type)@\($0.frame)" } == ["advance@\(ticketsEnd)", "activityEnd@\(ticketsEnd)"])
        // Two congratulations in a row never repeat (noRepeat 2).
        #expect(pick != pick2)
    }

    @Test func replayRestartsHighlightsAndCloseCancelsTheRest() throws {
        let p1Start = try SightWordsLesson.frames("intro")
        let replayAt = p1Start + 30_000  // inside "I can see"
        let trace = try Self.simulate("\(Self.seconds(replayAt)):replay", until: 20)
        #expect(trace.contains { $0.type == "canceled" && $0["chain"] == "prompt-1" && $0.frame == replayAt })
        #expect(trace.contains { $0.type == "chainStart" && $0["chain"] == "prompt-1" && $0["replay"] == "1" && $0.frame == replayAt })
        let words = trace.filter { $0.type == "word" }.map { "\($0["index"]!)@\($0.frame)" }
        let firstWord = try #require(trace.first { $0.type == "word" }).frame - p1Start
        #expect(Array(words.filter { $0.hasPrefix("0@") }.prefix(2)) == ["0@\(p1Start + firstWord)", "0@\(replayAt + p1Start + firstWord)"])

        let wrongAt = try promptEnd + 48_000
        let closeAt = wrongAt + 10_000  // during "Try again"
        let closed = try Self.simulate("\(Self.seconds(wrongAt)):cat,\(Self.seconds(closeAt)):close", until: 20)
        let tail = closed.drop { $0.frame < closeAt }.map(\.type)
        #expect(tail == ["canceled", "feedbackEnd", "tap", "close", "activityEnd"])
    }

    /// The run renders like a chain: the audio stops where `close` canceled it.
    @Test func closeCancelsTheAudioToo() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let wrongAt = try promptEnd + 48_000
        let closeAt = wrongAt + 20_000  // inside "Try again"
        let taps = "\(Self.seconds(wrongAt)):cat,\(Self.seconds(closeAt)):close"
        let rendered = try run(
            Repo.narrator,
            ["render", Self.lesson, "--activity", "sight-words", "--taps", taps, "--seed", "7", "--output", dir.file("run.wav")])
        try #require(rendered.status == 0, "\(rendered.stderr)")
        let samples = try WAVFile(path: dir.file("run.wav")).int16Samples
        #expect(samples.count == closeAt * 2, "the run ends at the close (stereo frames)")
        // "Try again" was playing from the wrong answer to the close, and the prompt before.
        let tryAgain = samples[(wrongAt * 2)..<(closeAt * 2)]
        #expect(tryAgain.contains { $0 != 0 })
        #expect(samples[(try promptEnd * 2)..<(wrongAt * 2)].allSatisfy { $0 == 0 }, "silence while the child thinks")
    }

    /// Replay while the child thinks replays the last narration (the same pool pick, the same
    /// pulses) and the wait goes on: it neither answers the step nor repeats its consequences.
    @Test func replayWhileWaitingOnlyReplays() throws {
        let trace = try Self.simulate("4.5:see,9:replay", until: 30)
        let picks = trace.filter { $0.type == "clipStart" && $0["pool"] == "congrats" }.map { $0["clip"]! }
        #expect(picks.count == 2 && picks[0] == picks[1], "the replay is the same audio: \(picks)")
        #expect(trace.filter { $0.type == "stepStart" && $0["step"] == "1" }.count == 1)
        #expect(!trace.contains { $0.type == "chainStart" && $0["chain"] == "tickets" }, "step 2 still waits for its answer")
        #expect(trace.filter { $0.type == "feedbackEnd" }.count == 1)
        let replayEnd = try #require(trace.last { $0.type == "chainEnd" && $0["chain"] == "correct-1" })
        #expect(trace.first { $0.type == "idlePrompt" && $0["step"] == "1" && $0.frame > replayEnd.frame }?.frame == replayEnd.frame + Self.idle)
    }

    /// Wrong-answer feedback cut short by another tap still gives its feedbackEnd.
    @Test func interruptedWrongFeedbackStillEnds() throws {
        let start = try promptEnd + 10_000
        let trace = try Self.simulate("\(Self.seconds(start)):cat,\(Self.seconds(start + 9_600)):dog", until: 20)
        #expect(trace.contains { $0.type == "feedbackEnd" && $0["attempt"] == "1" && $0["canceled"] == "1" && $0.frame == start + 9_600 })
    }

    /// The two tap settings, as docs/lessons.md shows them: the right answer tapped while the
    /// idle prompt plays cuts it and is taken (`interrupt`, as the lesson says), or is noted as
    /// ignored with its reason while the prompt plays on and comes again 4 s after its end
    /// (`ignore`, the same lesson with that one key changed).
    @Test func aTapDuringTheIdlePromptUnderBothSettings() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let original = try String(contentsOfFile: Self.lesson, encoding: .utf8)
        #expect(original.contains(#""taps": "interrupt""#))
        let ignoring = dir.write("ignore.json", original
            .replacingOccurrences(of: #""taps": "interrupt""#, with: #""taps": "ignore""#)
            .replacingOccurrences(of: #""../../Audio/"#, with: "\"" + Repo.path("Audio") + "/")
            .replacingOccurrences(of: #""timings": ""#, with: #""timings": ""# + Repo.path("Timings/lessons") + "/"))
        let idleStart = try promptEnd + Self.idle
        let idleEnd = try idleStart + SightWordsLesson.frames("see-tap-see")
        let tap = 7 * Self.rate
        try #require(tap > idleStart && tap < idleEnd, "the tap falls inside the idle prompt")

        let interrupting = try Self.simulate("7:see", until: 12)
        let cut = interrupting.filter { ["idlePrompt", "canceled", "tap", "feedback"].contains($0.type) }.map { "\($0.type)@\($0.frame)" }
        #expect(cut == ["idlePrompt@\(idleStart)", "canceled@\(tap)", "tap@\(tap)", "feedback@\(tap)"])
        #expect(interrupting.first { $0.type == "tap" }?["result"] == "correct")
        #expect(interrupting.first { $0.type == "tap" }?["reason"] == nil)

        let ignored = try Self.simulate("7:see", until: 12, lesson: ignoring)
        let heardOut = ignored.filter { ["idlePrompt", "canceled", "tap", "feedback"].contains($0.type) }.map { "\($0.type)@\($0.frame)" }
        let again = idleEnd + Self.idle
        #expect(heardOut == ["idlePrompt@\(idleStart)", "tap@\(tap)", "idlePrompt@\(again)", "canceled@\(12 * Self.rate)"])
        let swallowed = try #require(ignored.first { $0.type == "tap" })
        #expect(swallowed["result"] == "ignored" && swallowed["reason"] == "narration playing" && swallowed["answer"] == "see")
        #expect(ignored.contains { $0.type == "chainEnd" && $0["chain"] == "idle-see" && $0.frame == idleEnd })
    }

    @Test func untilIsBounded() throws {
        let result = try run(Repo.narrator, ["simulate", Self.lesson, "--activity", "sight-words", "--until", "1e9"])
        #expect(result.status == 1)
        #expect(result.stderr == "narrator: --until: expected seconds between 0 and 86400 (a day), got 1000000000.0\n")
        let idle = try Self.simulate(nil, until: 86400)
        #expect(idle.last?.type == "stop" && idle.filter { $0.type == "idlePrompt" }.count == 100)
    }

    @Test func sameSeedSameTrace() throws {
        let arguments = ["simulate", Self.lesson, "--activity", "sight-words", "--seed", "3", "--taps", "5:cat,9:see,20:hat"]
        let a = try run(Repo.narrator, arguments)
        let b = try run(Repo.narrator, arguments)
        #expect(a.status == 0 && a.stdout == b.stdout && a.stdout.hasSuffix("\"type\":\"activityEnd\"}\n"))
    }

    @Test func badTapScriptIsOneLine() throws {
        let result = try run(Repo.narrator, ["simulate", Self.lesson, "--activity", "sight-words", "--taps", "3.2:the,nine:wig"])
        #expect(result.status == 1)
        #expect(result.stderr == "narrator: --taps: item 2 'nine:wig': expected SECONDS:ANSWER, e.g. 3.2:the\n")
        let unknown = try run(Repo.narrator, ["simulate", Self.lesson, "--activity", "nope"])
        #expect(unknown.status == 1 && unknown.stderr.contains("activities.nope: unknown activity (the lesson has: sight-words)"))
    }
}
