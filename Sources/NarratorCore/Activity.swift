/// An interactive screen, authored as data: steps that play a prompt and wait for a tap, an
/// idle prompt when the child waits too long, a ladder of wrong-answer feedback, feedback for
/// the right answer, and a final sequence before the app moves on.
///
/// ```json
/// "activities": {"sight-words": {
///   "idleSeconds": 4.0, "taps": "ignore",
///   "steps": [{"prompt": "intro", "answer": "the",
///              "idle": {"chain": "the-tap-the", "pulse": ["tile-the"]},
///              "correct": "correct-1",
///              "wrong": [{"chain": "try-again"}, {"chain": "the-tap-the", "pulse": ["tile-the"]}]}],
///   "final": "tickets"}}
/// ```
public struct Activity: Sendable, Equatable {
    public let id: String
    /// Played first, by state: `{"first-use": chain, "return-use": chain}`, or one chain for
    /// every state (its key is `default`).
    public let intro: [String: String]
    /// Steps that wait for an answer; none for a screen that only narrates (a popup).
    public let steps: [Step]
    /// One-shot sounds on taps that are not answers (the cat meows, the hats fall): tap name →
    /// chain. They play over whatever plays, at most `polyphony` at once (a new one cuts the
    /// oldest).
    public let sounds: [String: String]
    public let polyphony: Int
    /// Played once the last step is answered; `advance` follows when it ends.
    public let final: String?
    /// What a tap does while narration plays (a prompt, an idle prompt, wrong-answer feedback).
    /// Taps during the right answer's feedback are always ignored.
    public let taps: TapPolicy

    public enum TapPolicy: String, Sendable, Equatable {
        /// The tap is noted and has no effect.
        case ignore
        /// The narration stops at the tap and the tap is taken as an answer.
        case interrupt
    }

    public struct Step: Sendable, Equatable {
        /// Played when the step begins; none when the previous step's feedback already asked.
        public let prompt: String?
        public let answer: String
        /// The idle prompt: played once no answer came for `idleFrames` after the last
        /// narration ended, and again after the same wait once it has played.
        public let idle: Feedback?
        public let idleFrames: Int
        public let correct: Feedback
        /// Wrong-answer feedback by attempt; the last entry repeats.
        public let wrong: [Feedback]
    }

    /// A chain, with targets to pulse as it starts.
    public struct Feedback: Sendable, Equatable {
        public let chain: String
        public let pulse: [String]
    }

    /// Every chain the activity can play.
    public var chainIDs: [String] {
        var ids: [String] = []
        func add(_ id: String?) { if let id, !ids.contains(id) { ids.append(id) } }
        for key in intro.keys.sorted() { add(intro[key]) }
        for key in sounds.keys.sorted() { add(sounds[key]) }
        for step in steps {
            add(step.prompt)
            add(step.idle?.chain)
            add(step.correct.chain)
            for wrong in step.wrong { add(wrong.chain) }
        }
        add(final)
        return ids
    }

    /// The idle wait when neither the activity nor the step says: the product documents' 4 s.
    public static let defaultIdleSeconds = 4.0

    static func parse(_ cursor: JSONCursor, id: String, rate: Int) throws(NarratorError) -> Activity {
        let fields = try cursor.object(allowing: ["intro", "steps", "final", "taps", "idleSeconds", "sounds", "polyphony"])
        var intro: [String: String] = [:]
        if let introCursor = fields["intro"] {
            if case .string(let chain) = introCursor.value {
                intro = ["default": chain]
            } else {
                guard case .object = introCursor.value else { throw introCursor.fail("expected a chain id, or an object of chains by state") }
                for (state, chain) in try introCursor.object() { intro[state] = try chain.string() }
                if intro.isEmpty { throw introCursor.fail("name a chain, or a chain per state") }
            }
        }
        var sounds: [String: String] = [:]
        for (name, chain) in try fields["sounds"]?.object() ?? [:] { sounds[name] = try chain.string() }
        let polyphony = try fields["polyphony"]?.integer(in: 1...16) ?? 2
        let taps: TapPolicy
        if let tapsCursor = fields["taps"] {
            let text = try tapsCursor.string()
            guard let policy = TapPolicy(rawValue: text) else { throw tapsCursor.fail("expected \"ignore\" or \"interrupt\"") }
            taps = policy
        } else {
            taps = .ignore
        }
        let defaultIdle = try fields["idleSeconds"].map { c throws(NarratorError) in try idleFrames(c, rate: rate) }
            ?? Frames.from(seconds: defaultIdleSeconds, rate: rate)!
        var steps: [Step] = []
        for stepCursor in try fields["steps"]?.array() ?? [] {
            let step = try stepCursor.object(allowing: ["prompt", "answer", "idle", "idleSeconds", "correct", "wrong"])
            let wrongCursor = try step.required("wrong", in: stepCursor)
            let wrong = try wrongCursor.array().map { c throws(NarratorError) in try feedback(c) }
            if wrong.isEmpty { throw wrongCursor.fail("needs at least one feedback for a wrong answer") }
            steps.append(
                Step(
                    prompt: try step["prompt"].map { c throws(NarratorError) in try c.string() },
                    answer: try step.required("answer", in: stepCursor).string(),
                    idle: try step["idle"].map { c throws(NarratorError) in try feedback(c) },
                    idleFrames: try step["idleSeconds"].map { c throws(NarratorError) in try idleFrames(c, rate: rate) } ?? defaultIdle,
                    correct: try feedback(try step.required("correct", in: stepCursor)),
                    wrong: wrong))
        }
        let final = try fields["final"].map { c throws(NarratorError) in try c.string() }
        let answers = Set(steps.map(\.answer))
        for name in sounds.keys.sorted() where name == Tap.replay || name == Tap.close || answers.contains(name) {
            throw fields["sounds"]!.fail("'\(name)' is \(answers.contains(name) ? "an answer" : "an app request"): a sound needs another name")
        }
        if steps.isEmpty && intro.isEmpty && final == nil {
            throw cursor.fail("an activity plays something: give it an intro, steps or a final")
        }
        return Activity(
            id: id, intro: intro, steps: steps, sounds: sounds, polyphony: polyphony, final: final, taps: taps)
    }

    /// A chain id, or `{"chain": id, "pulse": [targets]}`.
    private static func feedback(_ cursor: JSONCursor) throws(NarratorError) -> Feedback {
        if case .string(let chain) = cursor.value { return Feedback(chain: chain, pulse: []) }
        let fields = try cursor.object(allowing: ["chain", "pulse"])
        let pulse = try fields["pulse"].map { c throws(NarratorError) in try c.array().map { t throws(NarratorError) in try t.string() } } ?? []
        return Feedback(chain: try fields.required("chain", in: cursor).string(), pulse: pulse)
    }

    private static func idleFrames(_ cursor: JSONCursor, rate: Int) throws(NarratorError) -> Int {
        let seconds = try cursor.number()
        guard seconds > 0, seconds <= 3600, let frames = Frames.from(seconds: seconds, rate: rate), frames >= 1 else {
            throw cursor.fail("idle wait must be between 0 and 3600 seconds (at least one frame)")
        }
        return frames
    }
}
