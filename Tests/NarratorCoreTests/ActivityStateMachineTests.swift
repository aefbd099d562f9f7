import Foundation
import NarratorTestSupport
import Testing

@testable import NarratorCore
@testable import NarratorEngine

/// The activity state machine, one transition at a time: each test puts the machine in a
/// state, feeds it one input and checks the next state and what it produced. Expected frames
/// are worked out by hand from the fixture's clip lengths (frames at 48 kHz):
///
///     intro  n 700            prompt p 1000         idle  i 600 (pulse tile-dog in step 0)
///     yes    c 800 + d 300    no-1   w 400          no-2  v 500 (pulse tile-dog)
///     bye    f 300            meow   s 200 (the sound "cat", polyphony 2)
///
/// Activity `a` (taps interrupt): intro, step 0 (prompt, answer dog, idle after 0.5 s = 24 000
/// frames, wrong ladder no-1, no-2), step 1 (no prompt, answer cow), final bye. Activity `b`
/// (taps ignored): one step with a prompt and no idle prompt, no intro.
@Suite("Activity state machine")
struct ActivityStateMachineTests {
    typealias Machine = ActivityMachine
    static let idle = 24_000

    let lesson: Lesson
    let bank: ClipBank

    init() throws {
        let json = """
            {"sampleRate": 48000,
             "clips": {"n": {"file": "n1.wav"}, "p": {"file": "p2.wav"}, "i": {"file": "i3.wav"}, "c": {"file": "c4.wav"},
                       "d": {"file": "d5.wav"}, "w": {"file": "w6.wav"}, "v": {"file": "v7.wav"}, "f": {"file": "f8.wav"},
                       "s": {"file": "s9.wav"}},
             "chains": {"intro": [{"clip": "n"}], "prompt": [{"clip": "p"}], "idle": [{"clip": "i"}],
                        "yes": [{"clip": "c"}, {"clip": "d"}], "no-1": [{"clip": "w"}], "no-2": [{"clip": "v"}],
                        "bye": [{"clip": "f"}], "meow": [{"clip": "s"}]},
             "activities": {
               "a": {"intro": "intro", "taps": "interrupt", "idleSeconds": 0.5, "sounds": {"cat": "meow"},
                     "steps": [{"prompt": "prompt", "answer": "dog", "idle": {"chain": "idle", "pulse": ["tile-dog"]},
                                "correct": "yes", "wrong": ["no-1", {"chain": "no-2", "pulse": ["tile-dog"]}]},
                               {"answer": "cow", "idle": "idle", "correct": "yes", "wrong": ["no-1"]}],
                     "final": "bye"},
               "b": {"taps": "ignore", "steps": [{"prompt": "prompt", "answer": "dog", "correct": "yes", "wrong": ["no-1"]}]}}}
            """
        let (parsed, dir) = try NarratorCoreTests.lesson(json)
        dir.remove()  // it holds no file: the clips are made in memory
        lesson = parsed
        let decoder = MemoryDecoder(files: [
            "n1.wav": (1, 700), "p2.wav": (1, 1000), "i3.wav": (1, 600), "c4.wav": (1, 800), "d5.wav": (1, 300),
            "w6.wav": (1, 400), "v7.wav": (1, 500), "f8.wav": (1, 300), "s9.wav": (1, 200),
        ])
        bank = try ClipBank.prepare(lesson: lesson, clipIDs: ["n", "p", "i", "c", "d", "w", "v", "f", "s"], decoder: decoder)
    }

    /// A fresh machine for activity `id`, in `state`.
    func machine(_ id: String = "a", in state: Machine.State = .ready) throws -> Machine {
        let bank = bank
        var draws = PoolDraws(seed: 1)
        var machine = Machine(activity: try lesson.activity(id)) { chain throws(NarratorError) in
            try Scheduler.schedule(chain: chain, bank: bank, draws: &draws)
        }
        machine.state = state
        return machine
    }

    /// `chain` playing as `role` from `start`.
    func narration(_ chain: String, _ role: Machine.Role, at start: Int, pulse: [String] = [], emitted: Int = 0) throws -> Machine.Narration {
        let bank = bank
        var draws = PoolDraws(seed: 1)
        return Machine.Narration(
            chain: chain, role: role, start: start, schedule: try Scheduler.schedule(chain: chain, bank: bank, draws: &draws), pulse: pulse,
            emitted: emitted)
    }

    func sound(at start: Int) throws -> Machine.Sound {
        var draws = PoolDraws(seed: 1)
        return Machine.Sound(name: "cat", chain: "meow", start: start, schedule: try Scheduler.schedule(chain: "meow", bank: bank, draws: &draws))
    }

    // Expected cues.
    func event(_ frame: Int, _ kind: TraceKind, _ fields: [String: Cue.Field] = [:]) -> Cue {
        Cue(frame: frame, kind: .activity(type: kind, fields: fields))
    }
    func clipStart(_ frame: Int, _ clip: String) -> Cue { Cue(frame: frame, kind: .clipStart(clip: clip, pool: nil)) }
    func clipEnd(_ frame: Int, _ clip: String) -> Cue { Cue(frame: frame, kind: .clipEnd(clip: clip, pool: nil)) }
    func chainEnd(_ frame: Int, _ chain: String) -> Cue { Cue(frame: frame, kind: .chainEnd(chain: chain)) }
    func chainStart(_ frame: Int, _ chain: String, _ role: String, step: Int, replay: Bool = false) -> Cue {
        var fields: [String: Cue.Field] = ["chain": .string(chain), "role": .string(role), "step": .int(step)]
        if replay { fields["replay"] = .bool(true) }
        return event(frame, .chainStart, fields)
    }
    func tap(_ frame: Int, _ answer: String, _ result: String, step: Int? = nil, attempt: Int? = nil, reason: String? = nil) -> Cue {
        var fields: [String: Cue.Field] = ["answer": .string(answer), "result": .string(result)]
        if let reason { fields["reason"] = .string(reason) }
        if let step { fields["step"] = .int(step) }
        if let attempt { fields["attempt"] = .int(attempt) }
        return event(frame, .tap, fields)
    }
    func audio(_ output: Machine.Output) -> [String] { output.audio.map { "\($0.chain) \($0.start)..<\($0.end)" } }

    // MARK: Start and narration ends

    @Test func startPlaysTheIntro() throws {
        var m = try machine()
        let out = try m.start()
        #expect(out.cues == [
            event(0, .activityStart, ["activity": .string("a")]), event(0, .variant, ["state": .string("default")]),
            chainStart(0, "intro", "intro", step: 0),
        ])
        #expect(out.audio.isEmpty)
        #expect(m.state == .intro(try narration("intro", .intro, at: 0)))
        #expect(m.deadline == .narrationEnd(700))
        // A second start changes nothing.
        #expect(try m.start().cues.isEmpty)
    }

    @Test func introEndsIntoTheFirstStepsPrompt() throws {
        var m = try machine(in: .intro(try narration("intro", .intro, at: 0)))
        let out = try m.narrationEnds()
        #expect(out.cues == [
            clipStart(0, "n"), clipEnd(700, "n"), chainEnd(700, "intro"),
            event(700, .stepStart, ["step": .int(0), "answer": .string("dog")]), chainStart(700, "prompt", "prompt", step: 0),
        ])
        #expect(audio(out) == ["intro 0..<700"])
        #expect(m.state == .prompting(step: 0, try narration("prompt", .prompt, at: 700)))
    }

    @Test func promptEndsIntoTheWaitWithItsIdleDeadline() throws {
        var m = try machine(in: .prompting(step: 0, try narration("prompt", .prompt, at: 700)))
        let out = try m.narrationEnds()
        #expect(out.cues == [clipStart(700, "p"), clipEnd(1700, "p"), chainEnd(1700, "prompt")])
        #expect(m.state == .awaitingAnswer(step: 0, attempt: 0, since: 1700))
        #expect(m.deadline == .idle(1700 + Self.idle))
    }

    // MARK: Answers

    @Test func correctTapPlaysTheCorrectFeedback() throws {
        var m = try machine(in: .awaitingAnswer(step: 0, attempt: 0, since: 1700))
        let out = try m.tap(Tap(frame: 2000, answer: "dog"))
        #expect(out.cues == [
            tap(2000, "dog", "correct", step: 0), event(2000, .feedback, ["kind": .string("correct"), "step": .int(0)]),
            chainStart(2000, "yes", "correct", step: 0),
        ])
        #expect(out.audio.isEmpty)
        #expect(m.state == .correctFeedback(step: 0, try narration("yes", .correct, at: 2000)))
        #expect(m.deadline == .narrationEnd(2000 + 800 + 300))
    }

    @Test func wrongTapPlaysTheFirstRungThenTheWaitAgain() throws {
        var m = try machine(in: .awaitingAnswer(step: 0, attempt: 0, since: 1700))
        let out = try m.tap(Tap(frame: 2000, answer: "pig"))
        #expect(out.cues == [
            tap(2000, "pig", "wrong", step: 0, attempt: 1),
            event(2000, .feedback, ["kind": .string("wrong"), "step": .int(0), "attempt": .int(1)]),
            chainStart(2000, "no-1", "wrong", step: 0),
        ])
        #expect(m.state == .wrongFeedback(step: 0, attempt: 1, try narration("no-1", .wrong, at: 2000)))

        // Its end: feedbackEnd, and the wait (and its idle timer) starts again there.
        let end = try m.narrationEnds()
        #expect(end.cues == [
            clipStart(2000, "w"), clipEnd(2400, "w"), chainEnd(2400, "no-1"),
            event(2400, .feedbackEnd, ["step": .int(0), "kind": .string("wrong"), "attempt": .int(1)]),
        ])
        #expect(audio(end) == ["no-1 2000..<2400"])
        #expect(m.state == .awaitingAnswer(step: 0, attempt: 1, since: 2400))
        #expect(m.deadline == .idle(2400 + Self.idle))
    }

    /// Past the ladder's length its last entry repeats (with its pulse).
    @Test func wrongTapAtTheLaddersEndRepeatsItsLastEntry() throws {
        var m = try machine(in: .awaitingAnswer(step: 0, attempt: 2, since: 2900))
        let out = try m.tap(Tap(frame: 3000, answer: "pig"))
        #expect(out.cues == [
            tap(3000, "pig", "wrong", step: 0, attempt: 3),
            event(3000, .feedback, ["kind": .string("wrong"), "step": .int(0), "attempt": .int(3)]),
            chainStart(3000, "no-2", "wrong", step: 0), event(3000, .pulse, ["target": .string("tile-dog"), "role": .string("wrong")]),
        ])
        #expect(m.state == .wrongFeedback(step: 0, attempt: 3, try narration("no-2", .wrong, at: 3000, pulse: ["tile-dog"])))
        #expect(m.deadline == .narrationEnd(3500))
    }

    // MARK: Taps while narration plays

    /// During the right answer's feedback a tap is ignored even when taps interrupt: the
    /// feedback's cues up to the tap (inclusive) go out first.
    @Test func tapDuringCorrectFeedbackIsIgnored() throws {
        let yes = try narration("yes", .correct, at: 2000)
        var m = try machine(in: .correctFeedback(step: 0, yes))
        let out = try m.tap(Tap(frame: 2800, answer: "dog"))
        #expect(out.cues == [clipStart(2000, "c"), clipEnd(2800, "c"), clipStart(2800, "d"), tap(2800, "dog", "ignored", reason: "correct feedback playing")])
        #expect(out.audio.isEmpty)
        #expect(m.state == .correctFeedback(step: 0, try narration("yes", .correct, at: 2000, emitted: 3)))

        // Its end: the rest of its cues, then step 1 (no prompt: the wait starts at once).
        let end = try m.narrationEnds()
        #expect(end.cues == [
            clipEnd(3100, "d"), chainEnd(3100, "yes"), event(3100, .feedbackEnd, ["step": .int(0), "kind": .string("correct")]),
            event(3100, .stepStart, ["step": .int(1), "answer": .string("cow")]),
        ])
        #expect(audio(end) == ["yes 2000..<3100"])
        #expect(m.state == .awaitingAnswer(step: 1, attempt: 0, since: 3100))
    }

    /// With taps that interrupt, an answer during wrong-answer feedback cuts it (its
    /// feedbackEnd still comes, marked canceled) and is taken as the answer.
    @Test func tapDuringWrongFeedbackInterruptsIt() throws {
        var m = try machine(in: .wrongFeedback(step: 0, attempt: 1, try narration("no-1", .wrong, at: 2000)))
        let out = try m.tap(Tap(frame: 2200, answer: "dog"))
        #expect(out.cues == [
            clipStart(2000, "w"), event(2200, .canceled, ["chain": .string("no-1")]),
            event(2200, .feedbackEnd, ["step": .int(0), "kind": .string("wrong"), "attempt": .int(1), "canceled": .bool(true)]),
            tap(2200, "dog", "correct", step: 0), event(2200, .feedback, ["kind": .string("correct"), "step": .int(0)]),
            chainStart(2200, "yes", "correct", step: 0),
        ])
        #expect(audio(out) == ["no-1 2000..<2200"])
        #expect(m.state == .correctFeedback(step: 0, try narration("yes", .correct, at: 2200)))
    }

    /// With taps ignored, a tap during the prompt is noted and changes nothing.
    @Test func tapDuringPromptIsIgnoredWhenTapsAreIgnored() throws {
        var m = try machine("b", in: .prompting(step: 0, try narration("prompt", .prompt, at: 0)))
        let out = try m.tap(Tap(frame: 500, answer: "dog"))
        #expect(out.cues == [clipStart(0, "p"), tap(500, "dog", "ignored", reason: "narration playing")])
        #expect(m.state == .prompting(step: 0, try narration("prompt", .prompt, at: 0, emitted: 1)))
    }

    /// Which comes first, a tap or the deadline: a tap at a narration's last frame comes after
    /// its end; a tap heard one frame before the idle deadline wins even when its audio can
    /// only start later; one at the deadline comes after the idle prompt.
    @Test func tapsAgainstTheDeadline() throws {
        let prompting = try machine(in: .prompting(step: 0, try narration("prompt", .prompt, at: 700)))
        #expect(prompting.takesFirst(Tap(frame: 1699, answer: "dog")))
        #expect(!prompting.takesFirst(Tap(frame: 1700, answer: "dog")))
        let waiting = try machine(in: .awaitingAnswer(step: 0, attempt: 0, since: 1700))
        #expect(waiting.takesFirst(Tap(frame: 25_699, answer: "dog")))
        #expect(!waiting.takesFirst(Tap(frame: 25_700, answer: "dog")))
        #expect(waiting.takesFirst(Tap(frame: 26_000, answer: "dog", heardFrame: 25_699)))
        // No idle prompt: only a tap moves it.
        let noIdle = try machine("b", in: .awaitingAnswer(step: 0, attempt: 0, since: 1000))
        #expect(noIdle.deadline == nil && noIdle.takesFirst(Tap(frame: 86_400 * 48_000, answer: "dog")))
    }

    // MARK: Idle prompts

    @Test func idleDeadlinePlaysTheIdlePrompt() throws {
        var m = try machine(in: .awaitingAnswer(step: 0, attempt: 1, since: 2400))
        let out = try m.idleDeadlineReached()
        #expect(out.cues == [
            event(26_400, .idlePrompt, ["step": .int(0), "waited": .int(24_000)]), chainStart(26_400, "idle", "idle", step: 0),
            event(26_400, .pulse, ["target": .string("tile-dog"), "role": .string("idle")]),
        ])
        #expect(m.state == .idlePrompting(step: 0, attempt: 1, try narration("idle", .idle, at: 26_400, pulse: ["tile-dog"])))
        #expect(m.idlePrompts == 1)

        // Its end re-arms the timer, the attempt kept.
        let end = try m.narrationEnds()
        #expect(end.cues == [clipStart(26_400, "i"), clipEnd(27_000, "i"), chainEnd(27_000, "idle")])
        #expect(m.state == .awaitingAnswer(step: 0, attempt: 1, since: 27_000))
        #expect(m.deadline == .idle(51_000))
    }

    /// After `maxIdlePrompts` the run stops at the next deadline; a sound still ringing is cut
    /// there.
    @Test func idlePromptsExhaustedStopTheRun() throws {
        var m = try machine(in: .awaitingAnswer(step: 0, attempt: 0, since: 1700))
        m.idlePrompts = 100
        m.sounds = [try sound(at: 25_600)]
        let out = try m.idleDeadlineReached()
        #expect(out.cues == [
            clipStart(25_600, "s"), event(25_700, .soundCut, ["name": .string("cat"), "chain": .string("meow")]),
            event(25_700, .stop, ["reason": .string("idle prompts played 100 times with no answer")]),
        ])
        #expect(audio(out) == ["meow 25600..<25700"])
        #expect(m.state == .ended(at: 25_700) && m.sounds.isEmpty && m.deadline == nil)
    }

    // MARK: Requests

    /// Replay while the child thinks: the last narration again, and then the wait again (its
    /// end does not repeat what its role did: no second feedbackEnd).
    @Test func replayWhileWaitingReplaysTheLastNarration() throws {
        var m = try machine(in: .awaitingAnswer(step: 0, attempt: 1, since: 2400))
        m.last = try narration("no-1", .wrong, at: 2000)
        let out = try m.tap(Tap(frame: 3000, answer: Tap.replay))
        #expect(out.cues == [tap(3000, "replay", "replay"), chainStart(3000, "no-1", "wrong", step: 0, replay: true)])
        #expect(m.state == .replaying(step: 0, attempt: 1, try narration("no-1", .wrong, at: 3000)))

        let end = try m.narrationEnds()
        #expect(end.cues == [clipStart(3000, "w"), clipEnd(3400, "w"), chainEnd(3400, "no-1")])
        #expect(m.state == .awaitingAnswer(step: 0, attempt: 1, since: 3400))
    }

    /// Replay while narration plays restarts it from its start, in the same state.
    @Test func replayDuringThePromptRestartsIt() throws {
        var m = try machine(in: .prompting(step: 0, try narration("prompt", .prompt, at: 700)))
        m.last = try narration("prompt", .prompt, at: 700)
        let out = try m.tap(Tap(frame: 1200, answer: Tap.replay))
        #expect(out.cues == [
            clipStart(700, "p"), event(1200, .canceled, ["chain": .string("prompt")]), tap(1200, "replay", "replay"),
            chainStart(1200, "prompt", "prompt", step: 0, replay: true),
        ])
        #expect(audio(out) == ["prompt 700..<1200"])
        #expect(m.state == .prompting(step: 0, try narration("prompt", .prompt, at: 1200)))
        #expect(m.deadline == .narrationEnd(2200))
    }

    @Test func replayWithNothingPlayedYetIsIgnored() throws {
        var m = try machine("b", in: .awaitingAnswer(step: 0, attempt: 0, since: 0))
        let out = try m.tap(Tap(frame: 100, answer: Tap.replay))
        #expect(out.cues == [tap(100, "replay", "ignored", reason: "nothing to replay")])
        #expect(m.state == .awaitingAnswer(step: 0, attempt: 0, since: 0))
    }

    @Test func closeDuringWrongFeedbackEndsTheActivity() throws {
        var m = try machine(in: .wrongFeedback(step: 0, attempt: 1, try narration("no-1", .wrong, at: 2000)))
        let out = try m.tap(Tap(frame: 2100, answer: Tap.close))
        #expect(out.cues == [
            clipStart(2000, "w"), event(2100, .canceled, ["chain": .string("no-1")]),
            event(2100, .feedbackEnd, ["step": .int(0), "kind": .string("wrong"), "attempt": .int(1), "canceled": .bool(true)]),
            tap(2100, "close", "close"), event(2100, .close), event(2100, .activityEnd, ["reason": .string("close")]),
        ])
        #expect(audio(out) == ["no-1 2000..<2100"])
        #expect(m.state == .ended(at: 2100))
    }

    @Test func closeWhileWaitingCutsTheSoundsRinging() throws {
        var m = try machine(in: .awaitingAnswer(step: 0, attempt: 0, since: 1700))
        m.sounds = [try sound(at: 1800)]
        let out = try m.tap(Tap(frame: 1900, answer: Tap.close))
        #expect(out.cues == [
            tap(1900, "close", "close"), clipStart(1800, "s"), event(1900, .soundCut, ["name": .string("cat"), "chain": .string("meow")]),
            event(1900, .close), event(1900, .activityEnd, ["reason": .string("close")]),
        ])
        #expect(audio(out) == ["meow 1800..<1900"])
        #expect(m.state == .ended(at: 1900))
    }

    // MARK: Sounds

    /// A sound tap settles the sounds that have ended (whole, with their end cues) and starts
    /// the new one; the narration state does not change.
    @Test func soundTapSettlesEndedSounds() throws {
        var m = try machine(in: .awaitingAnswer(step: 0, attempt: 0, since: 1700))
        m.sounds = [try sound(at: 1800), try sound(at: 1900)]
        let out = try m.tap(Tap(frame: 2000, answer: "cat"))
        #expect(out.cues == [
            tap(2000, "cat", "sound"), clipStart(1800, "s"), clipEnd(2000, "s"), chainEnd(2000, "meow"),
            event(2000, .sound, ["name": .string("cat"), "chain": .string("meow")]),
        ])
        #expect(audio(out) == ["meow 1800..<2000"])
        #expect(m.sounds.map(\.start) == [1900, 2000])
        #expect(m.state == .awaitingAnswer(step: 0, attempt: 0, since: 1700))
    }

    /// With `polyphony` sounds ringing, a new one cuts the oldest.
    @Test func soundTapBeyondPolyphonyCutsTheOldest() throws {
        var m = try machine(in: .awaitingAnswer(step: 0, attempt: 0, since: 1700))
        m.sounds = [try sound(at: 1900), try sound(at: 1950)]
        let out = try m.tap(Tap(frame: 2000, answer: "cat"))
        #expect(out.cues == [
            tap(2000, "cat", "sound"), clipStart(1900, "s"), event(2000, .soundCut, ["name": .string("cat"), "chain": .string("meow")]),
            event(2000, .sound, ["name": .string("cat"), "chain": .string("meow")]),
        ])
        #expect(audio(out) == ["meow 1900..<2000"])
        #expect(m.sounds.map(\.start) == [1950, 2000])
    }

    /// A sound over narration: the narration's cues up to the tap go out, and it plays on.
    @Test func soundTapDuringThePromptLeavesItPlaying() throws {
        var m = try machine(in: .prompting(step: 0, try narration("prompt", .prompt, at: 700)))
        let out = try m.tap(Tap(frame: 900, answer: "cat"))
        #expect(out.cues == [clipStart(700, "p"), tap(900, "cat", "sound"), event(900, .sound, ["name": .string("cat"), "chain": .string("meow")])])
        #expect(out.audio.isEmpty)
        #expect(m.state == .prompting(step: 0, try narration("prompt", .prompt, at: 700, emitted: 1)))
        #expect(m.sounds.map(\.start) == [900])
    }

    // MARK: The end

    @Test func lastCorrectFeedbackPlaysTheFinalThenAdvance() throws {
        var m = try machine(in: .correctFeedback(step: 1, try narration("yes", .correct, at: 5000)))
        let out = try m.narrationEnds()
        #expect(out.cues == [
            clipStart(5000, "c"), clipEnd(5800, "c"), clipStart(5800, "d"), clipEnd(6100, "d"), chainEnd(6100, "yes"),
            event(6100, .feedbackEnd, ["step": .int(1), "kind": .string("correct")]), chainStart(6100, "bye", "final", step: 1),
        ])
        #expect(m.state == .final(try narration("bye", .final, at: 6100)))

        let end = try m.narrationEnds()
        #expect(end.cues == [
            clipStart(6100, "f"), clipEnd(6400, "f"), chainEnd(6400, "bye"), event(6400, .advance),
            event(6400, .activityEnd, ["reason": .string("advance")]),
        ])
        #expect(m.state == .ended(at: 6400))
    }

    /// The clock stops during wrong-answer feedback: cut there, with its feedbackEnd.
    @Test func stopCutsWhatPlays() throws {
        var m = try machine(in: .wrongFeedback(step: 0, attempt: 1, try narration("no-1", .wrong, at: 2000)))
        let out = m.stop(at: 2300)
        #expect(out.cues == [
            clipStart(2000, "w"), event(2300, .canceled, ["chain": .string("no-1")]),
            event(2300, .feedbackEnd, ["step": .int(0), "kind": .string("wrong"), "attempt": .int(1), "canceled": .bool(true)]),
            event(2300, .stop, ["reason": .string("until")]),
        ])
        #expect(audio(out) == ["no-1 2000..<2300"])
        #expect(m.state == .ended(at: 2300))
    }

    /// Once ended, no input does anything.
    @Test func inputsAfterTheEndAreIgnored() throws {
        var m = try machine(in: .ended(at: 5000))
        for answer in ["dog", "pig", "cat", Tap.replay, Tap.close] {
            #expect(!m.takesFirst(Tap(frame: 6000, answer: answer)))
            let out = try m.tap(Tap(frame: 6000, answer: answer))
            #expect(out.cues.isEmpty && out.audio.isEmpty)
        }
        #expect(try m.narrationEnds().cues.isEmpty)
        #expect(try m.idleDeadlineReached().cues.isEmpty)
        #expect(m.stop(at: 7000).cues.isEmpty)
        #expect(m.state == .ended(at: 5000) && m.deadline == nil && m.sounds.isEmpty)
    }
}
