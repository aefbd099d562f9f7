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
    /// Taps during the intro, the right answer's feedback and the final are always ignored.
    public let taps: TapPolicy
    /// The intro was written as one chain's id, not as an object of chains by state.
    var introIsOneChain = false
    /// A music bed under the whole activity (`"music"`): it starts with the activity's first
    /// frame, plays through its waits and across its chains, and fades out when it ends.
    public var music: Music? = nil

    /// `"music": "clip"` or `{"clip": …, "loop": true | false | {"start": s, "end": s},
    /// "fadeIn": s, "fadeOut": s}`: a clip on the music bus from the activity's first frame to
    /// its end, ducked under every voice, looped sample-exactly, faded out after the end.
    public struct Music: Sendable, Equatable {
        public let clip: String
        public let loop: Loop
        /// From silence to full level over the bed's first frames (0: none, the default).
        public let fadeInFrames: Int
        /// From full level to silence after the activity's last frame (default 0.5 s).
        public let fadeOutFrames: Int

        public enum Loop: Sendable, Equatable {
            /// Plays once: silence after the clip's end.
            case none
            /// The whole clip again after its last frame.
            case whole
            /// Frames of the clip (from its own start): after `end − 1` comes `start`, and the
            /// first pass plays the clip from its start to `end`.
            case region(start: Int, end: Int)
        }

        public init(clip: String, loop: Loop, fadeInFrames: Int = 0, fadeOutFrames: Int) {
            self.clip = clip
            self.loop = loop
            self.fadeInFrames = fadeInFrames
            self.fadeOutFrames = fadeOutFrames
        }

        /// The default fade-out, in seconds.
        public static let defaultFadeOutSeconds = 0.5
        /// The longest fade, in seconds.
        public static let maxFadeSeconds = 10.0
        /// The shortest loop, in seconds: one pass is one `musicLoop` event, and a live
        /// activity's plan runs for a day (86 400 passes at most).
        public static let minLoopSeconds = 1.0
    }

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
        /// The tiles the step shows, in the order shown (`"choices"`), the answer among them;
        /// `[answer]` when the lesson gives none. A tap on any other is a wrong answer.
        public var choices: [String]
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
        /// Written as `{"chain": …}` rather than as the chain's id: where its chain's key is.
        var chainKey = false

        public init(chain: String, pulse: [String]) {
            self.chain = chain
            self.pulse = pulse
        }

        public static func == (a: Feedback, b: Feedback) -> Bool { a.chain == b.chain && a.pulse == b.pulse }
    }

    /// Every chain the activity can play, each once, in the order `firstChain` visits them.
    public var chainIDs: [String] {
        var ids: [String] = []
        var seen: Set<String> = []
        _ = firstChain { id in
            if seen.insert(id).inserted { ids.append(id) }
            return false
        }
        return ids
    }

    /// The first chain reference (in intro, sounds, steps, final order) that `matches`, with
    /// its key path inside the activity (`steps[1].correct`, `steps[0].wrong[2].chain`).
    func firstChain(where matches: (String) -> Bool) -> (chain: String, place: String)? {
        for key in sortedNames(intro.keys) where matches(intro[key]!) {
            return (intro[key]!, intro.count == 1 && key == "default" && introIsOneChain ? "intro" : "intro.\(key)")
        }
        for key in sortedNames(sounds.keys) where matches(sounds[key]!) { return (sounds[key]!, "sounds.\(key)") }
        func place(_ feedback: Feedback, _ key: String) -> String { feedback.chainKey ? "\(key).chain" : key }
        for (index, step) in steps.enumerated() {
            if let prompt = step.prompt, matches(prompt) { return (prompt, "steps[\(index)].prompt") }
            if let idle = step.idle, matches(idle.chain) { return (idle.chain, place(idle, "steps[\(index)].idle")) }
            if matches(step.correct.chain) { return (step.correct.chain, place(step.correct, "steps[\(index)].correct")) }
            for (attempt, wrong) in step.wrong.enumerated() where matches(wrong.chain) {
                return (wrong.chain, place(wrong, "steps[\(index)].wrong[\(attempt)]"))
            }
        }
        if let final, matches(final) { return (final, "final") }
        return nil
    }

    /// The idle wait when neither the activity nor the step says: the product documents' 4 s.
    public static let defaultIdleSeconds = 4.0
    /// The most choices a step may have, and the longest one (in characters): tiles on a
    /// child's screen, never paragraphs.
    public static let maxChoices = 24
    public static let maxChoiceLength = 64

    /// The most steps an activity may have: a screen has a handful; a million took 3.5 s and
    /// 615 MiB to read and plan, so the number is capped (docs/limits.md).
    public static let maxSteps = 100_000

    static func parse(_ cursor: JSONCursor, id: String, rate: Int) throws(NarratorError) -> Activity {
        let fields = try cursor.object(allowing: Lesson.Keys.activity)
        var intro: [String: String] = [:]
        var introIsOneChain = false
        if let introCursor = fields["intro"] {
            if case .string(let chain) = introCursor.value {
                intro = ["default": chain]
                introIsOneChain = true
            } else {
                guard case .object = introCursor.value else { throw introCursor.fail("expected a chain id, or an object of chains by state") }
                for (state, chain) in try introCursor.object() { intro[state] = try chain.string() }
                if intro.isEmpty { throw introCursor.fail("name a chain, or a chain per state") }
            }
        }
        var sounds: [String: String] = [:]
        if let soundsCursor = fields["sounds"] {
            for (name, chain) in try soundsCursor.object() { sounds[name] = try chain.string() }
        }
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
        let stepCursors = try fields["steps"]?.array()
        if let stepCursors, stepCursors.count > maxSteps {
            throw fields["steps"]!.fail("\(stepCursors.count) steps, over the \(maxSteps) an activity may have")
        }
        var steps: [Step] = []
        steps.reserveCapacity(stepCursors?.count ?? 0)
        for stepCursor in stepCursors ?? JSONCursor.Items() {
            let step = try stepCursor.object(allowing: Lesson.Keys.step)
            let wrongCursor = try step.required("wrong", in: stepCursor)
            let wrong = try wrongCursor.array().map { c throws(NarratorError) in try feedback(c) }
            if wrong.isEmpty { throw wrongCursor.fail("needs at least one feedback for a wrong answer") }
            let answer = try step.required("answer", in: stepCursor).string()
            let choices = try step["choices"].map { c throws(NarratorError) in try Self.choices(c, answer: answer) } ?? [answer]
            steps.append(
                Step(
                    prompt: try step["prompt"].map { c throws(NarratorError) in try c.string() },
                    answer: answer, choices: choices,
                    idle: try step["idle"].map { c throws(NarratorError) in try feedback(c) },
                    idleFrames: try step["idleSeconds"].map { c throws(NarratorError) in try idleFrames(c, rate: rate) } ?? defaultIdle,
                    correct: try feedback(try step.required("correct", in: stepCursor)),
                    wrong: wrong))
        }
        let final = try fields["final"].map { c throws(NarratorError) in try c.string() }
        var answers: Set<String> = []
        for step in steps { answers.insert(step.answer) }
        for name in sortedNames(sounds.keys) where name == Tap.replay || name == Tap.close || answers.contains(name) {
            throw fields["sounds"]!.fail("'\(name)' is \(answers.contains(name) ? "an answer" : "an app request"): a sound needs another name")
        }
        if steps.isEmpty && intro.isEmpty && final == nil {
            throw cursor.fail("an activity plays something: give it an intro, steps or a final")
        }
        var activity = Activity(
            id: id, intro: intro, steps: steps, sounds: sounds, polyphony: polyphony, final: final, taps: taps,
            introIsOneChain: introIsOneChain)
        activity.music = try fields["music"].map { c throws(NarratorError) in try music(c, rate: rate) }
        return activity
    }

    /// `"music"` (an activity's, or the lesson's): a clip id, or `{"clip", "loop", "fadeIn",
    /// "fadeOut"}` (seconds).
    static func music(_ cursor: JSONCursor, rate: Int) throws(NarratorError) -> Music {
        let defaultFadeOut = Frames.from(seconds: Music.defaultFadeOutSeconds, rate: rate)!
        if case .string(let clip) = cursor.value { return Music(clip: clip, loop: .whole, fadeOutFrames: defaultFadeOut) }
        guard case .object = cursor.value else { throw cursor.fail("expected a clip id, or {\"clip\": …, \"loop\": …}") }
        let fields = try cursor.object(allowing: Lesson.Keys.music)
        let clip = try fields.required("clip", in: cursor).string()
        func fade(_ key: String, _ fallback: Int) throws(NarratorError) -> Int {
            guard let fadeCursor = fields[key] else { return fallback }
            let seconds = try fadeCursor.number()
            guard seconds >= 0, seconds <= Music.maxFadeSeconds, let frames = Frames.from(seconds: seconds, rate: rate) else {
                throw fadeCursor.fail("a fade lasts between 0 and \(Int(Music.maxFadeSeconds)) seconds, got \(Frames.describe(seconds: seconds))")
            }
            return frames
        }
        var loop = Music.Loop.whole
        if let loopCursor = fields["loop"] {
            switch loopCursor.value {
            case .bool(let on): loop = on ? .whole : .none
            case .object:
                let region = try loopCursor.object(allowing: Lesson.Keys.loop)
                let startCursor = try region.required("start", in: loopCursor)
                let endCursor = try region.required("end", in: loopCursor)
                let start = Frames.from(seconds: try Lesson.regionSeconds(startCursor), rate: rate)!
                let end = Frames.from(seconds: try Lesson.regionSeconds(endCursor), rate: rate)!
                guard end > start else {
                    throw endCursor.fail("the loop ends after it starts (start \(Frames.describe(start, rate: rate)), end \(Frames.describe(end, rate: rate)))")
                }
                let shortest = Frames.from(seconds: Music.minLoopSeconds, rate: rate)!
                guard end - start >= shortest else {
                    throw endCursor.fail("a loop lasts at least \(Frames.describe(shortest, rate: rate)), got \(Frames.describe(end - start, rate: rate))")
                }
                loop = .region(start: start, end: end)
            default:
                throw loopCursor.fail("expected true, false or {\"start\": seconds, \"end\": seconds}")
            }
        }
        return Music(clip: clip, loop: loop, fadeInFrames: try fade("fadeIn", 0), fadeOutFrames: try fade("fadeOut", defaultFadeOut))
    }

    /// A step's `"choices"`: 1 to `maxChoices` strings, each 1 to `maxChoiceLength` characters
    /// and not only white space, none twice, `answer` among them.
    private static func choices(_ cursor: JSONCursor, answer: String) throws(NarratorError) -> [String] {
        let items = try cursor.array()
        guard !items.isEmpty else { throw cursor.fail("no choices: list the tiles the step shows, its answer among them") }
        guard items.count <= maxChoices else {
            throw cursor.fail("\(items.count) choices, over the \(maxChoices) a step may show")
        }
        var choices: [String] = []
        var seen: Set<String> = []
        for item in items {
            let choice = try item.string()
            if choice.allSatisfy(UnicodeSpaces.isWhiteSpace) { throw item.fail("a choice is the text of a tile: it cannot be empty or only white space") }
            if choice.count > maxChoiceLength {
                throw item.fail("a choice of \(choice.count) characters, over the \(maxChoiceLength) a tile may show")
            }
            guard seen.insert(choice).inserted else { throw item.fail("choice '\(choice)' listed twice") }
            choices.append(choice)
        }
        guard seen.contains(answer) else {
            throw cursor.fail("answer '\(answer)' is not one of the choices (\(Lesson.list(choices)))")
        }
        return choices
    }

    /// Every name a picture of this activity may be for: its steps' choices and answers, its tap
    /// sounds' names, the app's requests (`replay`, `close`: the speaker and close buttons) and
    /// the targets its feedback pulses (`pulse` of `idle`, `correct`, `wrong`). Targets pulsed
    /// by chains are the lesson's (`Lesson.pictureNames(of:)`).
    var tileNames: Set<String> {
        var names = Set(sounds.keys).union([Tap.replay, Tap.close])
        for step in steps {
            names.formUnion(step.choices)
            names.insert(step.answer)
            for feedback in (step.idle.map { [$0] } ?? []) + [step.correct] + step.wrong { names.formUnion(feedback.pulse) }
        }
        return names
    }

    /// A chain id, or `{"chain": id, "pulse": [targets]}`.
    private static func feedback(_ cursor: JSONCursor) throws(NarratorError) -> Feedback {
        if case .string(let chain) = cursor.value { return Feedback(chain: chain, pulse: []) }
        let fields = try cursor.object(allowing: Lesson.Keys.feedback)
        var pulse: [String] = []
        if let targets = try fields["pulse"]?.array() {
            pulse.reserveCapacity(targets.count)
            for target in targets { pulse.append(try target.string()) }
        }
        var feedback = Feedback(chain: try fields.required("chain", in: cursor).string(), pulse: pulse)
        feedback.chainKey = true
        return feedback
    }

    private static func idleFrames(_ cursor: JSONCursor, rate: Int) throws(NarratorError) -> Int {
        let seconds = try cursor.number()
        guard seconds > 0, seconds <= 3600, let frames = Frames.from(seconds: seconds, rate: rate), frames >= 1 else {
            // 0 is refused (the idle prompt would start as the narration ends): the range says so.
            throw cursor.fail(
                "idle wait must be more than 0 (at least one frame, 1/\(rate) s) and at most 3600 seconds, got \(Frames.describe(seconds: seconds))")
        }
        return frames
    }
}
