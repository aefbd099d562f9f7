/// An activity as a state machine on a virtual clock: one explicit `State`, and transitions
/// that each take one input (the start, a tap at a frame, the narration's end, the idle
/// deadline, the clock's stop) and return what they produced: trace cues in order and the
/// audio settled. `ActivityRunner` drives it through a tap list; a test can start it in any
/// state and feed it one input.
///
/// The rules are `ActivityRunner`'s. Inputs that do not apply in a state (a tap once the run has
/// ended, a narration end while waiting) change nothing and produce nothing.
///
/// Frames are the activity's timeline as heard. Inputs come in frame order: no input is earlier
/// than the one before it (the driver's job, see `takesFirst`).
public struct ActivityMachine {
    public let activity: Activity
    /// Lays out a chain of the lesson, from frame 0. Called once per chain started, in the
    /// order they start (pool draws depend on that order); a replay reuses the layout.
    public let layout: (String) throws(NarratorError) -> Schedule

    public internal(set) var state: State = .ready
    /// The narration started last: what `replay` plays again while the child thinks.
    public internal(set) var last: Narration?
    /// Idle prompts played so far in this run.
    public internal(set) var idlePrompts = 0
    /// One-shot sounds not yet settled, oldest first: they play over the narration, and their
    /// audio and cues go out once they end or are cut.
    public internal(set) var sounds: [Sound] = []
    /// What the transition under way has produced (emptied as each begins: one that threw, a
    /// chain that could not be laid out, fails the run).
    private var output = Output()

    /// Idle prompts in one run before it stops by itself: a child who never answers.
    public static let maxIdlePrompts = 100

    public init(activity: Activity, layout: @escaping (String) throws(NarratorError) -> Schedule) {
        self.activity = activity
        self.layout = layout
    }

    // MARK: States

    public enum State: Sendable, Equatable {
        /// Before `start`.
        case ready
        /// The intro plays; taps other than requests and sounds are ignored.
        case intro(Narration)
        /// Step `step`'s prompt plays (no wrong answer yet in this step).
        case prompting(step: Int, Narration)
        /// The child thinks: no narration since `since`, where the last one ended (or the step
        /// began). The idle prompt is due at `since + idleFrames`. `attempt`: wrong answers so
        /// far in this step.
        case awaitingAnswer(step: Int, attempt: Int, since: Int)
        /// The step's idle prompt plays; then the wait begins again.
        case idlePrompting(step: Int, attempt: Int, Narration)
        /// Feedback for wrong answer number `attempt` plays; `feedbackEnd` follows, then the wait.
        case wrongFeedback(step: Int, attempt: Int, Narration)
        /// The right answer's feedback plays (taps ignored); then the next step or the final.
        case correctFeedback(step: Int, Narration)
        /// A replay asked for while the child thought: when it ends the wait begins again; what
        /// its chain did on ending (the next step, `feedbackEnd` …) happened the first time.
        case replaying(step: Int, attempt: Int, Narration)
        /// The final chain plays (taps ignored); `advance` follows.
        case final(Narration)
        /// The run is over: `activityEnd` or `stop` is in the trace at `at`.
        case ended(at: Int)

        /// The narration playing in this state, if any.
        public var narration: Narration? {
            get {
                switch self {
                case .intro(let n), .prompting(_, let n), .idlePrompting(_, _, let n), .wrongFeedback(_, _, let n),
                    .correctFeedback(_, let n), .replaying(_, _, let n), .final(let n):
                    n
                case .ready, .awaitingAnswer, .ended: nil
                }
            }
            set {
                guard let n = newValue else { return }
                switch self {
                case .intro: self = .intro(n)
                case .prompting(let step, _): self = .prompting(step: step, n)
                case .idlePrompting(let step, let attempt, _): self = .idlePrompting(step: step, attempt: attempt, n)
                case .wrongFeedback(let step, let attempt, _): self = .wrongFeedback(step: step, attempt: attempt, n)
                case .correctFeedback(let step, _): self = .correctFeedback(step: step, n)
                case .replaying(let step, let attempt, _): self = .replaying(step: step, attempt: attempt, n)
                case .final: self = .final(n)
                case .ready, .awaitingAnswer, .ended: return
                }
            }
        }

        /// The step under way and its wrong answers so far (none counted during the right
        /// answer's feedback); nil outside the steps.
        var progress: (step: Int, attempt: Int)? {
            switch self {
            case .prompting(let step, _): (step, 0)
            case .awaitingAnswer(let step, let attempt, _), .idlePrompting(let step, let attempt, _),
                .wrongFeedback(let step, let attempt, _), .replaying(let step, let attempt, _):
                (step, attempt)
            case .correctFeedback(let step, _): (step, 0)
            case .ready, .intro, .final, .ended: nil
            }
        }
    }

    /// What a narration plays as, in the trace's `role`.
    public enum Role: String, Sendable {
        case intro, prompt, idle, correct, wrong, final
    }

    /// Why a tap was ignored: the `reason` of a `tap` whose `result` is `ignored`.
    public enum IgnoredTap: String, Sendable, CaseIterable {
        /// A prompt, an idle prompt or wrong-answer feedback plays and the activity's `taps` is
        /// `ignore` (the default): the child hears it out, then answers.
        case narrationPlaying = "narration playing"
        /// The intro plays: answers count once the steps begin, whatever `taps` says.
        case introPlaying = "intro playing"
        /// The right answer's feedback plays: the step is answered.
        case correctFeedbackPlaying = "correct feedback playing"
        /// The final chain plays: every step is answered.
        case finalPlaying = "final playing"
        /// `replay` while the child thinks, before anything played.
        case nothingToReplay = "nothing to replay"

        /// Why an answer is not taken while a narration in `role` plays (the ignore policy, or
        /// a role that never takes answers).
        init(role: Role) {
            switch role {
            case .intro: self = .introPlaying
            case .correct: self = .correctFeedbackPlaying
            case .final: self = .finalPlaying
            case .prompt, .idle, .wrong: self = .narrationPlaying
            }
        }
    }

    /// A chain playing on the activity's timeline.
    public struct Narration: Sendable, Equatable {
        public let chain: String
        public let role: Role
        public let start: Int
        public let schedule: Schedule
        /// Targets pulsed as it starts (again on a replay).
        public let pulse: [String]
        /// How many of `schedule`'s cues are in the trace already: they go in as the clock
        /// passes them.
        public internal(set) var emitted = 0
        public var end: Int { start + schedule.frames }

        public init(chain: String, role: Role, start: Int, schedule: Schedule, pulse: [String] = [], emitted: Int = 0) {
            self.chain = chain
            self.role = role
            self.start = start
            self.schedule = schedule
            self.pulse = pulse
            self.emitted = emitted
        }

        /// Equal when the same chain plays in the same role from the same frame for as long,
        /// with the same pulses and as many cues out (the layout's audio is not compared).
        public static func == (a: Narration, b: Narration) -> Bool {
            a.chain == b.chain && a.role == b.role && a.start == b.start && a.schedule.frames == b.schedule.frames
                && a.pulse == b.pulse && a.emitted == b.emitted
        }
    }

    /// A one-shot sound (a tap that is not an answer) playing from `start`.
    public struct Sound: Sendable {
        public let name: String
        public let chain: String
        public let start: Int
        public let schedule: Schedule
        public var end: Int { start + schedule.frames }

        public init(name: String, chain: String, start: Int, schedule: Schedule) {
            self.name = name
            self.chain = chain
            self.start = start
            self.schedule = schedule
        }
    }

    /// A chain's audio on the timeline: its schedule's voices from `start`, cut at `end` (its
    /// own end, or where it was cut).
    public struct Placement: Sendable {
        public let chain: String
        public let schedule: Schedule
        public let start: Int
        public let end: Int
    }

    /// What a transition produced, in order.
    public struct Output: Sendable {
        /// Trace cues as produced; the timeline orders them by frame, ties in this order.
        public var cues: [Cue] = []
        /// Audio settled: chains that ended or were cut, in this order.
        public var audio: [Placement] = []
    }

    /// What the machine does next by itself, unless a tap comes first.
    public enum Deadline: Sendable, Equatable {
        /// The narration ends at this frame.
        case narrationEnd(Int)
        /// The idle prompt is due at this frame.
        case idle(Int)

        public var frame: Int {
            switch self {
            case .narrationEnd(let frame), .idle(let frame): frame
            }
        }
    }

    public var hasEnded: Bool {
        if case .ended = state { return true }
        return false
    }

    /// Where the run ended, once it has.
    public var endFrame: Int? {
        if case .ended(let at) = state { return at }
        return nil
    }

    /// The next thing that happens without a tap; nil when only a tap can move the machine (a
    /// step with no idle prompt) or the run has ended.
    public var deadline: Deadline? {
        if let narration = state.narration { return .narrationEnd(narration.end) }
        guard case .awaitingAnswer(let step, _, let since) = state, activity.steps[step].idle != nil else { return nil }
        return .idle(since + activity.steps[step].idleFrames)
    }

    /// Whether `tap` is taken before `deadline`: a tap at a narration's last frame comes after
    /// it ends; a tap heard before the idle deadline wins even when its answer can only start
    /// later (live), and one at the deadline comes after the idle prompt has started.
    public func takesFirst(_ tap: Tap) -> Bool {
        if let narration = state.narration { return tap.frame < narration.end }
        guard case .awaitingAnswer = state else { return false }
        return min(tap.heardFrame ?? tap.frame, tap.frame) < (deadline?.frame ?? Int.max)
    }

    // MARK: Transitions

    /// The run begins at frame 0: the intro (its variant by `variant`, the app's state), or the
    /// first step, or the final chain.
    public mutating func start(variant: String? = nil) throws(NarratorError) -> Output {
        output = Output()
        guard case .ready = state else { return Output() }
        note(0, .activityStart, ["activity": .string(activity.id)])
        if !activity.intro.isEmpty {
            let chosen: String
            if let variant, activity.intro[variant] != nil {
                chosen = variant
            } else if activity.intro["default"] != nil {
                chosen = "default"
            } else {
                throw NarratorError(
                    file: "--state", place: variant.map { "'\($0)'" },
                    "activity '\(activity.id)' has an intro per state: choose one of \(sortedNames(activity.intro.keys).joined(separator: ", "))")
            }
            note(0, .variant, ["state": .string(chosen)])
            state = .intro(try play(activity.intro[chosen]!, role: .intro, at: 0, step: 0))
        } else if !activity.steps.isEmpty {
            try startStep(0, at: 0)
        } else {
            try playFinal(at: 0)
        }
        return take()
    }

    /// The child tapped (or the app asked: `replay`, `close`) at `tap.frame`.
    public mutating func tap(_ tap: Tap) throws(NarratorError) -> Output {
        output = Output()
        switch state {
        case .ready, .ended:
            return Output()
        case .awaitingAnswer(let step, let attempt, _):
            if let chain = activity.sounds[tap.answer] {
                try playSound(tap.answer, chain: chain, at: tap.frame)
            } else {
                try answer(tap, step: step, attempt: attempt)
            }
        case .intro, .prompting, .idlePrompting, .wrongFeedback, .correctFeedback, .replaying, .final:
            guard let narration = state.narration else { return Output() }
            if let chain = activity.sounds[tap.answer] {
                emitNarrationCues(through: tap.frame, inclusive: true)
                try playSound(tap.answer, chain: chain, at: tap.frame)
            } else if tap.answer == Tap.close {
                cut(at: tap.frame)
                note(tap.frame, .tap, ["answer": .string(tap.answer), "result": .string("close")])
                finish(.close, at: tap.frame)
            } else if tap.answer == Tap.replay {
                // Again from its start, in the same state: the same audio and pulses.
                cut(at: tap.frame)
                note(tap.frame, .tap, ["answer": .string(tap.answer), "result": .string("replay")])
                state.narration = replay(narration, at: tap.frame)
            } else if let progress = state.progress, activity.taps == .interrupt, ![.intro, .correct, .final].contains(narration.role) {
                // An answer cuts a prompt, an idle prompt or wrong-answer feedback (or a replay
                // of one) when taps interrupt; the rest is heard out.
                cut(at: tap.frame)
                try answer(tap, step: progress.step, attempt: progress.attempt)
            } else {
                emitNarrationCues(through: tap.frame, inclusive: true)
                ignore(tap, because: IgnoredTap(role: narration.role))
            }
        }
        return take()
    }

    /// The narration playing reaches its end: its cues and audio go out, and what its role
    /// leads to begins there.
    public mutating func narrationEnds() throws(NarratorError) -> Output {
        output = Output()
        guard let narration = state.narration else { return Output() }
        emitNarrationCues(through: narration.end, inclusive: true)
        let frame = narration.end
        output.audio.append(Placement(chain: narration.chain, schedule: narration.schedule, start: narration.start, end: frame))
        switch state {
        case .intro:
            if !activity.steps.isEmpty {
                try startStep(0, at: frame)
            } else if activity.final != nil {
                try playFinal(at: frame)
            } else {
                finish(.advance, at: frame)
            }
        case .prompting(let step, _):
            state = .awaitingAnswer(step: step, attempt: 0, since: frame)
        case .idlePrompting(let step, let attempt, _), .replaying(let step, let attempt, _):
            state = .awaitingAnswer(step: step, attempt: attempt, since: frame)
        case .wrongFeedback(let step, let attempt, _):
            note(frame, .feedbackEnd, ["step": .int(step), "kind": .string("wrong"), "attempt": .int(attempt)])
            state = .awaitingAnswer(step: step, attempt: attempt, since: frame)
        case .correctFeedback(let step, _):
            note(frame, .feedbackEnd, ["step": .int(step), "kind": .string("correct")])
            if step + 1 < activity.steps.count {
                try startStep(step + 1, at: frame)
            } else if activity.final != nil {
                try playFinal(at: frame)
            } else {
                finish(.advance, at: frame)
            }
        case .final:
            finish(.advance, at: frame)
        case .ready, .awaitingAnswer, .ended:
            break
        }
        return take()
    }

    /// No answer came by the idle deadline: the idle prompt starts there, or, after
    /// `maxIdlePrompts` of them, the run stops.
    public mutating func idleDeadlineReached() throws(NarratorError) -> Output {
        output = Output()
        guard case .awaitingAnswer(let step, let attempt, let since) = state, let idle = activity.steps[step].idle else { return Output() }
        let deadline = since + activity.steps[step].idleFrames
        idlePrompts += 1
        if idlePrompts > Self.maxIdlePrompts {
            settleSounds(at: deadline)
            note(deadline, .stop, ["reason": .string("idle prompts played \(Self.maxIdlePrompts) times with no answer")])
            state = .ended(at: deadline)
        } else {
            note(deadline, .idlePrompt, ["step": .int(step), "waited": .int(deadline - since)])
            state = .idlePrompting(step: step, attempt: attempt, try play(idle.chain, role: .idle, at: deadline, step: step, pulse: idle.pulse))
        }
        return take()
    }

    /// The virtual clock stops at `frame` before the run has ended: what plays is cut there.
    public mutating func stop(at frame: Int) -> Output {
        output = Output()
        guard !hasEnded else { return Output() }
        cut(at: frame)
        settleSounds(at: frame)
        note(frame, .stop, ["reason": .string("until")])
        state = .ended(at: frame)
        return take()
    }

    // MARK: Steps of a transition

    private mutating func take() -> Output {
        defer { output = Output() }
        return output
    }

    private mutating func note(_ frame: Int, _ kind: TraceKind, _ fields: [String: Cue.Field] = [:]) {
        output.cues.append(Cue(frame: frame, kind: .activity(type: kind, fields: fields)))
    }

    /// Puts the narration's cues up to `frame` (`inclusive`: at `frame` too) into the trace.
    private mutating func emitNarrationCues(through frame: Int, inclusive: Bool) {
        guard var narration = state.narration else { return }
        narration.emitted = Cue.append(
            cuesOf: narration.schedule, placedAt: narration.start, from: narration.emitted, through: frame, inclusive: inclusive,
            to: &output.cues)
        state.narration = narration
    }

    /// Lays out `chain` and starts it at `frame`: `chainStart` (with `step`, the step it
    /// belongs to) and its pulses.
    private mutating func play(_ chain: String, role: Role, at frame: Int, step: Int, pulse: [String] = []) throws(NarratorError) -> Narration {
        let narration = Narration(chain: chain, role: role, start: frame, schedule: try layout(chain), pulse: pulse)
        begin(narration, step: step, replay: false)
        return narration
    }

    /// `narration` again from its start at `frame`: the same audio (the same pool picks) and
    /// pulses, highlights from word 0.
    private mutating func replay(_ narration: Narration, at frame: Int) -> Narration {
        let again = Narration(chain: narration.chain, role: narration.role, start: frame, schedule: narration.schedule, pulse: narration.pulse)
        begin(again, step: stepField(for: state), replay: true)
        return again
    }

    private mutating func begin(_ narration: Narration, step: Int, replay: Bool) {
        var fields: [String: Cue.Field] = ["chain": .string(narration.chain), "role": .string(narration.role.rawValue), "step": .int(step)]
        if replay { fields["replay"] = .bool(true) }
        note(narration.start, .chainStart, fields)
        for target in narration.pulse {
            note(narration.start, .pulse, ["target": .string(target), "role": .string(narration.role.rawValue)])
        }
        last = narration
    }

    /// The step a chain started in `state` belongs to, as `chainStart` says: the intro the
    /// first, the final the last.
    private func stepField(for state: State) -> Int {
        switch state {
        case .final: max(activity.steps.count - 1, 0)
        default: state.progress?.step ?? 0
        }
    }

    private mutating func playFinal(at frame: Int) throws(NarratorError) {
        state = .final(try play(activity.final!, role: .final, at: frame, step: max(activity.steps.count - 1, 0)))
    }

    private mutating func startStep(_ step: Int, at frame: Int) throws(NarratorError) {
        note(frame, .stepStart, ["step": .int(step), "answer": .string(activity.steps[step].answer)])
        if let prompt = activity.steps[step].prompt {
            state = .prompting(step: step, try play(prompt, role: .prompt, at: frame, step: step))
        } else {
            state = .awaitingAnswer(step: step, attempt: 0, since: frame)
        }
    }

    /// An answer or a request in step `step` with `attempt` wrong answers so far, nothing
    /// playing (the wait, or a narration the tap has just cut).
    private mutating func answer(_ tap: Tap, step: Int, attempt: Int) throws(NarratorError) {
        let current = activity.steps[step]
        switch tap.answer {
        case Tap.close:
            note(tap.frame, .tap, ["answer": .string(tap.answer), "result": .string("close")])
            finish(.close, at: tap.frame)
        case Tap.replay:
            if let last {
                note(tap.frame, .tap, ["answer": .string(tap.answer), "result": .string("replay")])
                state = .replaying(step: step, attempt: attempt, last)
                state.narration = replay(last, at: tap.frame)
            } else {
                ignore(tap, because: .nothingToReplay)
            }
        case current.answer:
            note(tap.frame, .tap, ["answer": .string(tap.answer), "result": .string("correct"), "step": .int(step)])
            note(tap.frame, .feedback, ["kind": .string("correct"), "step": .int(step)])
            state = .correctFeedback(
                step: step, try play(current.correct.chain, role: .correct, at: tap.frame, step: step, pulse: current.correct.pulse))
        default:
            let attempt = attempt + 1
            let feedback = current.wrong[min(attempt, current.wrong.count) - 1]
            note(tap.frame, .tap, ["answer": .string(tap.answer), "result": .string("wrong"), "step": .int(step), "attempt": .int(attempt)])
            note(tap.frame, .feedback, ["kind": .string("wrong"), "step": .int(step), "attempt": .int(attempt)])
            state = .wrongFeedback(
                step: step, attempt: attempt, try play(feedback.chain, role: .wrong, at: tap.frame, step: step, pulse: feedback.pulse))
        }
    }

    /// A tap that changes nothing: noted with why, so that an app (and the person reading the
    /// trace) can tell a child's answer swallowed by `taps: ignore` from one that came too early.
    private mutating func ignore(_ tap: Tap, because reason: IgnoredTap) {
        note(tap.frame, .tap, ["answer": .string(tap.answer), "result": .string("ignored"), "reason": .string(reason.rawValue)])
    }

    /// Cuts the narration playing at `frame`: its cues before `frame`, its audio until there,
    /// `canceled`; wrong-answer feedback still gives its `feedbackEnd` (the app animates the
    /// image back). The caller sets the state that follows.
    private mutating func cut(at frame: Int) {
        guard let narration = state.narration else { return }
        emitNarrationCues(through: frame, inclusive: false)
        output.audio.append(Placement(chain: narration.chain, schedule: narration.schedule, start: narration.start, end: frame))
        note(frame, .canceled, ["chain": .string(narration.chain)])
        if case .wrongFeedback(let step, let attempt, _) = state {
            note(frame, .feedbackEnd, ["step": .int(step), "kind": .string("wrong"), "attempt": .int(attempt), "canceled": .bool(true)])
        }
    }

    /// The activity ends at `frame` (`advance` or `close`): sounds still ringing are cut.
    private mutating func finish(_ reason: TraceKind, at frame: Int) {
        settleSounds(at: frame)
        note(frame, reason)
        note(frame, .activityEnd, ["reason": .string(reason.rawValue)])
        state = .ended(at: frame)
    }

    private mutating func playSound(_ name: String, chain: String, at frame: Int) throws(NarratorError) {
        note(frame, .tap, ["answer": .string(name), "result": .string("sound")])
        for sound in sounds where sound.end <= frame { settle(sound, cut: frame) }
        sounds.removeAll { $0.end <= frame }
        if sounds.count >= activity.polyphony {
            let oldest = sounds.removeFirst()
            settle(oldest, cut: frame)
            note(frame, .soundCut, ["name": .string(oldest.name), "chain": .string(oldest.chain)])
        }
        note(frame, .sound, ["name": .string(name), "chain": .string(chain)])
        sounds.append(Sound(name: name, chain: chain, start: frame, schedule: try layout(chain)))
    }

    /// A sound's audio until `cut` (or its end) and its cues before there; its last cues too
    /// when it ends there by itself.
    private mutating func settle(_ sound: Sound, cut: Int) {
        let end = min(cut, sound.end)
        output.audio.append(Placement(chain: sound.chain, schedule: sound.schedule, start: sound.start, end: end))
        for cue in sound.schedule.cues
        where sound.start + cue.frame < end || (cue.frame == sound.schedule.frames && sound.start + cue.frame == end) {
            output.cues.append(cue.shifted(by: sound.start))
        }
    }

    /// Sounds still ringing when the run ends: cut there, each with its `soundCut`.
    private mutating func settleSounds(at frame: Int) {
        for sound in sounds {
            settle(sound, cut: frame)
            if sound.end > frame { note(frame, .soundCut, ["name": .string(sound.name), "chain": .string(sound.chain)]) }
        }
        sounds = []
    }
}
