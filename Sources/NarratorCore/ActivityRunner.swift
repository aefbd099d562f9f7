import Foundation

/// A child's tap (or an app request) at a frame of the activity's timeline, as heard.
public struct Tap: Sendable, Equatable {
    /// Where the tap takes effect: where its answer's audio starts.
    public var frame: Int
    /// Where it was heard, when that is earlier than `frame` (live, audio can change only a
    /// little ahead of what is heard). The idle deadline is judged on this frame.
    public var heardFrame: Int?
    /// The answer tapped, or a reserved request: `replay`, `close`.
    public var answer: String

    public static let replay = "replay"
    public static let close = "close"

    public init(frame: Int, answer: String, heardFrame: Int? = nil) {
        self.frame = frame
        self.answer = answer
        self.heardFrame = heardFrame
    }
}

/// What an activity or announcer run gives: its trace (cues, including `activity` cues for
/// what the run did) and the audio that plays it, as one schedule that renders offline or plays
/// live like any chain's.
public struct Timeline: Sendable {
    public let schedule: Schedule
    public var trace: [Cue] { schedule.cues }
}

/// Collects a run: the trace, and each chain's voices shifted to where it started and cut
/// where it was canceled.
struct TimelineBuilder {
    var trace: [Cue] = []
    var voices: [Voice] = []
    var sampleRate = 0
    var channels = 1
    var ducking: Lesson.Ducking?

    mutating func note(_ frame: Int, _ type: String, _ fields: [String: Cue.Field] = [:]) {
        trace.append(Cue(frame: frame, kind: .activity(type: type, fields: fields)))
    }

    /// Puts the cues of `schedule`, placed at `start`, from index `emitted` up to `frame`
    /// (`inclusive`: at `frame` too) into the trace; returns the index of the first left.
    mutating func emitCues(of schedule: Schedule, placedAt start: Int, from emitted: Int, through frame: Int, inclusive: Bool) -> Int {
        var index = emitted
        while index < schedule.cues.count {
            let at = start + schedule.cues[index].frame
            guard at < frame || (inclusive && at == frame) else { break }
            trace.append(schedule.cues[index].shifted(by: start))
            index += 1
        }
        return index
    }

    mutating func add(_ schedule: Schedule, from start: Int, until cut: Int) {
        sampleRate = schedule.sampleRate
        channels = max(channels, schedule.channels)
        if ducking == nil { ducking = schedule.ducking }
        for voice in schedule.voices where start + voice.startFrame < cut {
            let frames = min(voice.audio.frames, cut - start - voice.startFrame)
            voices.append(
                Voice(
                    audio: ClipAudio(source: voice.audio.source, offset: voice.audio.offset, frames: frames),
                    startFrame: start + voice.startFrame, bus: voice.bus))
        }
    }

    func timeline(end: Int) -> Timeline {
        let ordered = trace.enumerated().sorted { ($0.element.frame, $0.offset) < ($1.element.frame, $1.offset) }.map(\.element)
        let sortedVoices = voices.enumerated().sorted { ($0.element.startFrame, $0.offset) < ($1.element.startFrame, $1.offset) }.map(\.element)
        return Timeline(
            schedule: Schedule(
                sampleRate: sampleRate, channels: channels, frames: end, voices: sortedVoices, cues: ordered, ducking: ducking))
    }
}

/// Runs an activity on a virtual clock: given the taps as heard, the exact trace of what plays
/// and when, to the frame. The same trace for the same taps and pool draws.
///
/// Rules (see `Activity`):
/// - A step plays its prompt, then waits. The idle timer starts at the frame where the last
///   narration ended (prompt, idle prompt or feedback), never runs while narration plays, and
///   fires `idleFrames` later: the idle chain starts exactly there, with its pulses.
/// - A tap heard before that frame wins: no idle prompt plays. A tap at the deadline frame
///   comes after the idle prompt has started.
/// - The right answer plays the step's correct feedback, then the next step; after the last,
///   the final chain, then `advance`. A wrong answer plays the ladder's feedback for that
///   attempt (the last entry repeats), then `feedbackEnd` ("animate the image back now") and
///   the wait begins again.
/// - While narration plays, taps are ignored or interrupt it (`Activity.taps`); during the
///   right answer's feedback and the final chain they are always ignored.
/// - `replay` restarts the chain playing (or the last one played) from its start; `close`
///   cancels what plays and ends the activity. Every chain that starts ends with exactly one
///   `chainEnd` or `canceled`; the activity with exactly one `activityEnd` or `stop`.
public struct ActivityRunner {
    public let activity: Activity
    public let sampleRate: Int
    /// Lays out a chain of the lesson, from frame 0.
    public let schedule: (String) throws(NarratorError) -> Schedule

    public init(activity: Activity, sampleRate: Int, schedule: @escaping (String) throws(NarratorError) -> Schedule) {
        self.activity = activity
        self.sampleRate = sampleRate
        self.schedule = schedule
    }

    /// Idle prompts in one run before it stops by itself: a child who never answers.
    public static let maxIdlePrompts = 100

    private enum Role: String {
        case intro, prompt, idle, correct, wrong, final
    }

    private struct Playing {
        let chain: String
        let role: Role
        let start: Int
        let schedule: Schedule
        let pulse: [String]
        /// A replay of a chain that had already ended: when it ends, the wait resumes; what
        /// its role does on ending (the next step, `feedbackEnd` …) happened the first time.
        var replayOnly = false
        /// Cues already in the trace.
        var emitted = 0
        var end: Int { start + schedule.frames }
    }

    /// The run, from frame 0 until the activity ends or `until` (a frame) passes. `state`
    /// picks the intro's variant (`first-use`, `return-use` …).
    public func run(taps unsorted: [Tap], until: Int, state: String? = nil) throws(NarratorError) -> Timeline {
        let taps = unsorted.enumerated().sorted { ($0.element.frame, $0.offset) < ($1.element.frame, $1.offset) }.map(\.element)
        var out = TimelineBuilder()
        out.sampleRate = sampleRate
        var tapIndex = 0
        var step = 0
        var attempt = 0
        var playing: Playing?
        var waitingSince: Int?
        var last: Playing?
        var ended = false
        var endFrame = 0
        var idlePrompts = 0
        // One-shot sounds playing over the rest: added to the timeline once they end or are cut.
        var sounds: [(start: Int, schedule: Schedule, name: String, chain: String)] = []

        func settle(_ sound: (start: Int, schedule: Schedule, name: String, chain: String), cut: Int) {
            let end = min(cut, sound.start + sound.schedule.frames)
            out.add(sound.schedule, from: sound.start, until: end)
            for cue in sound.schedule.cues where sound.start + cue.frame < end || (cue.frame == sound.schedule.frames && sound.start + cue.frame == end) {
                out.trace.append(cue.shifted(by: sound.start))
            }
        }

        func playSound(_ name: String, chain: String, at frame: Int) throws(NarratorError) {
            note(frame, "tap", ["answer": .string(name), "result": .string("sound")])
            let ended = sounds.filter { $0.start + $0.schedule.frames <= frame }
            for sound in ended { settle(sound, cut: frame) }
            sounds.removeAll { $0.start + $0.schedule.frames <= frame }
            if sounds.count >= activity.polyphony {
                let oldest = sounds.removeFirst()
                settle(oldest, cut: frame)
                note(frame, "soundCut", ["name": .string(oldest.name), "chain": .string(oldest.chain)])
            }
            note(frame, "sound", ["name": .string(name), "chain": .string(chain)])
            sounds.append((frame, try schedule(chain), name, chain))
        }

        /// Sounds still ringing when the run ends: cut there, each with its `soundCut`.
        func settleSounds(at frame: Int) {
            for sound in sounds {
                settle(sound, cut: frame)
                if sound.start + sound.schedule.frames > frame {
                    note(frame, "soundCut", ["name": .string(sound.name), "chain": .string(sound.chain)])
                }
            }
            sounds = []
        }

        func note(_ frame: Int, _ type: String, _ fields: [String: Cue.Field] = [:]) {
            out.note(frame, type, fields)
        }

        /// Puts the playing chain's cues up to `frame` into the trace (`inclusive`: cues at
        /// `frame` too).
        func emitCues(through frame: Int, inclusive: Bool) {
            guard var current = playing else { return }
            current.emitted = out.emitCues(
                of: current.schedule, placedAt: current.start, from: current.emitted, through: frame, inclusive: inclusive)
            playing = current
        }

        func play(_ chain: String, role: Role, at frame: Int, pulse: [String] = []) throws(NarratorError) {
            start(Playing(chain: chain, role: role, start: frame, schedule: try schedule(chain), pulse: pulse), at: frame)
        }

        func start(_ chain: Playing, at frame: Int, replay: Bool = false) {
            var fields: [String: Cue.Field] = [
                "chain": .string(chain.chain), "role": .string(chain.role.rawValue), "step": .int(min(step, max(activity.steps.count - 1, 0))),
            ]
            if replay { fields["replay"] = .bool(true) }
            note(frame, "chainStart", fields)
            for target in chain.pulse { note(frame, "pulse", ["target": .string(target), "role": .string(chain.role.rawValue)]) }
            playing = chain
            waitingSince = nil
            last = chain
        }

        /// Replays `chain` from its start at `frame`: the same audio (the same pool picks)
        /// and pulses, highlights from word 0.
        func replay(_ chain: Playing, at frame: Int, replayOnly: Bool) {
            var again = Playing(chain: chain.chain, role: chain.role, start: frame, schedule: chain.schedule, pulse: chain.pulse)
            again.replayOnly = replayOnly || chain.replayOnly
            start(again, at: frame, replay: true)
        }

        func cancel(at frame: Int) {
            guard let current = playing else { return }
            emitCues(through: frame, inclusive: false)
            out.add(current.schedule, from: current.start, until: frame)
            note(frame, "canceled", ["chain": .string(current.chain)])
            if current.role == .wrong && !current.replayOnly {
                // The app still needs its cue to animate the image back.
                note(frame, "feedbackEnd", ["step": .int(step), "kind": .string("wrong"), "attempt": .int(attempt), "canceled": .bool(true)])
            }
            playing = nil
        }

        func startStep(at frame: Int) throws(NarratorError) {
            attempt = 0
            note(frame, "stepStart", ["step": .int(step), "answer": .string(activity.steps[step].answer)])
            if let prompt = activity.steps[step].prompt {
                try play(prompt, role: .prompt, at: frame)
            } else {
                waitingSince = frame
            }
        }

        func finish(_ reason: String, at frame: Int) {
            settleSounds(at: frame)
            note(frame, reason)
            note(frame, "activityEnd", ["reason": .string(reason)])
            ended = true
            endFrame = frame
        }

        func chainEnded(_ finished: Playing) throws(NarratorError) {
            let frame = finished.end
            out.add(finished.schedule, from: finished.start, until: frame)
            playing = nil
            if finished.replayOnly {
                waitingSince = step < activity.steps.count ? frame : nil
                if waitingSince == nil { finish("advance", at: frame) }
                return
            }
            switch finished.role {
            case .intro:
                if !activity.steps.isEmpty {
                    try startStep(at: frame)
                } else if let final = activity.final {
                    try play(final, role: .final, at: frame)
                } else {
                    finish("advance", at: frame)
                }
            case .prompt, .idle:
                waitingSince = frame
            case .wrong:
                note(frame, "feedbackEnd", ["step": .int(step), "kind": .string("wrong"), "attempt": .int(attempt)])
                waitingSince = frame
            case .correct:
                note(frame, "feedbackEnd", ["step": .int(step), "kind": .string("correct")])
                step += 1
                if step < activity.steps.count {
                    try startStep(at: frame)
                } else if let final = activity.final {
                    try play(final, role: .final, at: frame)
                } else {
                    finish("advance", at: frame)
                }
            case .final:
                finish("advance", at: frame)
            }
        }

        /// A tap while waiting (or one that interrupted narration, `wasPlaying`): an answer or
        /// a request.
        func answer(_ tap: Tap, wasPlaying: Bool = false) throws(NarratorError) {
            guard tap.answer == Tap.close || tap.answer == Tap.replay || step < activity.steps.count else {
                note(tap.frame, "tap", ["answer": .string(tap.answer), "result": .string("ignored")])
                return
            }
            let current = step < activity.steps.count ? activity.steps[step] : nil
            switch tap.answer {
            case Tap.close:
                note(tap.frame, "tap", ["answer": .string(tap.answer), "result": .string("close")])
                finish("close", at: tap.frame)
            case Tap.replay:
                if let last {
                    note(tap.frame, "tap", ["answer": .string(tap.answer), "result": .string("replay")])
                    replay(last, at: tap.frame, replayOnly: !wasPlaying)
                } else {
                    note(tap.frame, "tap", ["answer": .string(tap.answer), "result": .string("ignored")])
                }
            case current!.answer:
                let current = current!
                note(tap.frame, "tap", ["answer": .string(tap.answer), "result": .string("correct"), "step": .int(step)])
                note(tap.frame, "feedback", ["kind": .string("correct"), "step": .int(step)])
                try play(current.correct.chain, role: .correct, at: tap.frame, pulse: current.correct.pulse)
            default:
                let current = current!
                attempt += 1
                let feedback = current.wrong[min(attempt, current.wrong.count) - 1]
                note(tap.frame, "tap", ["answer": .string(tap.answer), "result": .string("wrong"), "step": .int(step), "attempt": .int(attempt)])
                note(tap.frame, "feedback", ["kind": .string("wrong"), "step": .int(step), "attempt": .int(attempt)])
                try play(feedback.chain, role: .wrong, at: tap.frame, pulse: feedback.pulse)
            }
        }

        note(0, "activityStart", ["activity": .string(activity.id)])
        if !activity.intro.isEmpty {
            let variant: String
            if let state, activity.intro[state] != nil {
                variant = state
            } else if activity.intro["default"] != nil {
                variant = "default"
            } else {
                throw NarratorError(
                    file: "--state", place: state.map { "'\($0)'" },
                    "activity '\(activity.id)' has an intro per state: choose one of \(activity.intro.keys.sorted().joined(separator: ", "))")
            }
            note(0, "variant", ["state": .string(variant)])
            try play(activity.intro[variant]!, role: .intro, at: 0)
        } else if !activity.steps.isEmpty {
            try startStep(at: 0)
        } else {
            try play(activity.final!, role: .final, at: 0)
        }
        while !ended {
            let nextTap = tapIndex < taps.count ? taps[tapIndex] : nil
            if let current = playing {
                if let tap = nextTap, tap.frame < current.end {
                    tapIndex += 1
                    if tap.frame > until { break }
                    if let chain = activity.sounds[tap.answer] {
                        emitCues(through: tap.frame, inclusive: true)
                        try playSound(tap.answer, chain: chain, at: tap.frame)
                        continue
                    }
                    let fixed = current.role == .correct || current.role == .final || current.role == .intro
                    if tap.answer == Tap.close || tap.answer == Tap.replay {
                        cancel(at: tap.frame)
                        try answer(tap, wasPlaying: true)
                    } else if fixed || activity.taps == .ignore {
                        emitCues(through: tap.frame, inclusive: true)
                        note(tap.frame, "tap", ["answer": .string(tap.answer), "result": .string("ignored")])
                    } else {
                        cancel(at: tap.frame)
                        try answer(tap)
                    }
                } else {
                    if current.end > until { break }
                    emitCues(through: current.end, inclusive: true)
                    try chainEnded(current)
                }
            } else if let since = waitingSince {
                let idle = activity.steps[step].idle
                let deadline = idle == nil ? Int.max : since + activity.steps[step].idleFrames
                if let tap = nextTap, min(tap.heardFrame ?? tap.frame, tap.frame) < deadline {
                    tapIndex += 1
                    if tap.frame > until { break }
                    if let chain = activity.sounds[tap.answer] {
                        try playSound(tap.answer, chain: chain, at: tap.frame)
                    } else {
                        try answer(tap)
                    }
                } else if let idle, deadline <= until {
                    idlePrompts += 1
                    if idlePrompts > Self.maxIdlePrompts {
                        settleSounds(at: deadline)
                        note(deadline, "stop", ["reason": .string("idle prompts played \(Self.maxIdlePrompts) times with no answer")])
                        endFrame = deadline
                        ended = true
                        break
                    }
                    note(deadline, "idlePrompt", ["step": .int(step), "waited": .int(deadline - since)])
                    try play(idle.chain, role: .idle, at: deadline, pulse: idle.pulse)
                } else {
                    break
                }
            } else {
                break
            }
        }
        if !ended {
            cancel(at: until)
            settleSounds(at: until)
            note(until, "stop", ["reason": .string("until")])
            endFrame = until
        }
        return out.timeline(end: endFrame)
    }
}
