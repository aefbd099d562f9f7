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

    mutating func note(_ frame: Int, _ kind: TraceKind, _ fields: [String: Cue.Field] = [:]) {
        trace.append(Cue(frame: frame, kind: .activity(type: kind, fields: fields)))
    }

    /// Puts the cues of `schedule`, placed at `start`, from index `emitted` up to `frame`
    /// (`inclusive`: at `frame` too) into the trace; returns the index of the first left.
    mutating func emitCues(of schedule: Schedule, placedAt start: Int, from emitted: Int, through frame: Int, inclusive: Bool) -> Int {
        Cue.append(cuesOf: schedule, placedAt: start, from: emitted, through: frame, inclusive: inclusive, to: &trace)
    }

    /// Adds the voices of `schedule` placed at `start`, cut at `cut`, and (for a chain that
    /// resumes part-way) without what comes before `notBefore`.
    mutating func add(_ schedule: Schedule, from start: Int, until cut: Int, notBefore: Int = 0) {
        sampleRate = schedule.sampleRate
        channels = max(channels, schedule.channels)
        if ducking == nil { ducking = schedule.ducking }
        for voice in schedule.voices where start + voice.startFrame < cut {
            let placed = start + voice.startFrame
            let skip = max(0, notBefore - placed)
            let frames = min(voice.audio.frames, cut - placed) - skip
            guard frames > 0 else { continue }
            voices.append(
                Voice(
                    audio: ClipAudio(source: voice.audio.source, offset: voice.audio.offset + skip, frames: frames),
                    startFrame: placed + skip, bus: voice.bus))
        }
    }

    /// The activity's music bed from frame 0, ending `fadeOutFrames` after `end` (the
    /// activity's last frame) with its fade-out, or where its clip ends if it does not loop
    /// and is shorter; its `musicLoop` and `musicStop` in the trace. Returns the bed's end.
    mutating func addBed(_ bed: ActivityRunner.Bed, activityEnd end: Int) -> Int {
        channels = max(channels, bed.channels)
        ducking = bed.ducking
        var length = end + bed.fadeOutFrames
        var fadeOut = bed.fadeOutFrames
        var reason = "faded"
        if bed.loop == nil && bed.audio.frames < length {
            // A bed that plays once ends with its clip: during the fade-out (which then reaches
            // silence there), or before the activity ends (no fade).
            length = bed.audio.frames
            fadeOut = max(0, length - end)
            if fadeOut == 0 { reason = "clip ended" }
        }
        if length > 0 {
            voices.append(
                Voice(
                    audio: bed.audio, startFrame: 0, bus: .music,
                    shape: VoiceShape(frames: length, loop: bed.loop, fadeInFrames: min(bed.fadeInFrames, length), fadeOutFrames: fadeOut)))
        }
        if let loop = bed.loop {
            var at = loop.upperBound
            var count = 1
            while at < length {
                note(at, .musicLoop, ["clip": .string(bed.clip), "loop": .int(count)])
                at += loop.count
                count += 1
            }
        }
        note(length, .musicStop, ["clip": .string(bed.clip), "reason": .string(reason)])
        return length
    }

    /// What an activity's transition produced, in its order.
    mutating func add(_ output: ActivityMachine.Output) {
        trace.append(contentsOf: output.cues)
        for placement in output.audio { add(placement.schedule, from: placement.start, until: placement.end) }
    }

    func timeline(end: Int) -> Timeline {
        let ordered = trace.enumerated().sorted { ($0.element.frame, $0.offset) < ($1.element.frame, $1.offset) }.map { $0.element }
        let sortedVoices = voices.enumerated().sorted { ($0.element.startFrame, $0.offset) < ($1.element.startFrame, $1.offset) }.map { $0.element }
        return Timeline(
            schedule: Schedule(
                sampleRate: sampleRate, channels: channels, frames: end, voices: sortedVoices, cues: ordered, ducking: ducking))
    }
}

extension Cue {
    /// Appends the cues of `schedule`, placed at `start`, from index `emitted` up to `frame`
    /// (`inclusive`: at `frame` too) to `trace`; returns the index of the first left.
    static func append(
        cuesOf schedule: Schedule, placedAt start: Int, from emitted: Int, through frame: Int, inclusive: Bool, to trace: inout [Cue]
    ) -> Int {
        var index = emitted
        while index < schedule.cues.count {
            let at = start + schedule.cues[index].frame
            guard at < frame || (inclusive && at == frame) else { break }
            trace.append(schedule.cues[index].shifted(by: start))
            index += 1
        }
        return index
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
///   intro, the right answer's feedback and the final chain they are always ignored. An
///   ignored tap's trace says why (`reason`, `ActivityMachine.IgnoredTap`).
/// - `replay` restarts the chain playing (or the last one played) from its start; `close`
///   cancels what plays and ends the activity. Every chain that starts ends with exactly one
///   `chainEnd` or `canceled`; the activity with exactly one `activityEnd` or `stop`.
public struct ActivityRunner {
    public let activity: Activity
    public let sampleRate: Int
    /// Lays out a chain of the lesson, from frame 0.
    public let schedule: (String) throws(NarratorError) -> Schedule
    /// The activity's music bed (`Activity.music` with its clip), if it has one.
    public var bed: Bed? = nil

    /// An activity's music bed, its clip prepared: one voice on the music bus from the
    /// activity's first frame until `fadeOutFrames` after its end, looped over `loop` (frames
    /// of the clip), ducked under every voice like any music.
    public struct Bed: Sendable {
        public let clip: String
        public let audio: ClipAudio
        public let loop: Range<Int>?
        public let fadeInFrames: Int
        public let fadeOutFrames: Int
        /// The lesson's channels, else the clip's.
        public let channels: Int
        public let ducking: Lesson.Ducking

        /// `activity`'s bed with its clip from `bank` (which holds it), or nil when it has none.
        /// A loop past the clip's end, or shorter than `Activity.Music.minLoopSeconds`, is an
        /// error naming the key (`activities.ID.music.loop.end`).
        public static func resolve(_ activity: Activity, bank: ClipBank) throws(NarratorError) -> Bed? {
            guard let music = activity.music else { return nil }
            let lesson = bank.lesson
            let place = "activities.\(activity.id).music"
            guard let audio = bank.clips[music.clip]?.audio else {
                throw NarratorError(file: lesson.path, place: "\(place).clip", "clip '\(music.clip)' was not prepared")
            }
            guard case .memory = audio.source else {
                throw NarratorError(file: lesson.path, place: "\(place).clip", "a music bed plays from memory: decode its clip whole")
            }
            let rate = lesson.sampleRate
            let loop: Range<Int>?
            switch music.loop {
            case .none:
                loop = nil
            case .whole:
                let shortest = Frames.from(seconds: Activity.Music.minLoopSeconds, rate: rate)!
                guard audio.frames >= shortest else {
                    throw NarratorError(
                        file: lesson.path, place: place,
                        "clip '\(music.clip)' lasts \(Frames.describe(audio.frames, rate: rate)): a loop lasts at least \(Frames.describe(shortest, rate: rate)) (loop a longer clip, or \"loop\": false)")
                }
                loop = 0..<audio.frames
            case .region(let start, let end):
                guard end <= audio.frames else {
                    throw NarratorError(
                        file: lesson.path, place: "\(place).loop.end",
                        "the loop ends at \(Frames.describe(end, rate: rate)), past the end of clip '\(music.clip)' (\(Frames.describe(audio.frames, rate: rate)))")
                }
                loop = start..<end
            }
            return Bed(
                clip: music.clip, audio: audio, loop: loop, fadeInFrames: music.fadeInFrames, fadeOutFrames: music.fadeOutFrames,
                channels: lesson.channels ?? audio.channels, ducking: lesson.ducking)
        }
    }

    public init(activity: Activity, sampleRate: Int, schedule: @escaping (String) throws(NarratorError) -> Schedule) {
        self.activity = activity
        self.sampleRate = sampleRate
        self.schedule = schedule
    }

    /// Idle prompts in one run before it stops by itself: a child who never answers.
    public static let maxIdlePrompts = ActivityMachine.maxIdlePrompts

    /// The run, from frame 0 until the activity ends or `until` (a frame) passes. `state`
    /// picks the intro's variant (`first-use`, `return-use` …).
    ///
    /// Drives an `ActivityMachine`: each tap in frame order when it comes before the machine's
    /// deadline, otherwise the deadline (a narration's end, the idle prompt), until the run
    /// ends or the next input is past `until`, where the clock stops.
    public func run(taps unsorted: [Tap], until: Int, state: String? = nil) throws(NarratorError) -> Timeline {
        let taps = unsorted.enumerated().sorted { ($0.element.frame, $0.offset) < ($1.element.frame, $1.offset) }.map { $0.element }
        var out = TimelineBuilder()
        out.sampleRate = sampleRate
        var machine = ActivityMachine(activity: activity, layout: schedule)
        out.add(try machine.start(variant: state))
        if let bed {
            // Right after `activityStart`: the bed starts with the activity.
            out.trace.insert(
                Cue(frame: 0, kind: .activity(type: .musicStart, fields: ["clip": .string(bed.clip)])), at: min(1, out.trace.count))
        }
        var next = 0
        run: while !machine.hasEnded {
            if next < taps.count, machine.takesFirst(taps[next]) {
                let tap = taps[next]
                next += 1
                if tap.frame > until { break }
                out.add(try machine.tap(tap))
                continue
            }
            switch machine.deadline {
            case .narrationEnd(let frame)? where frame <= until: out.add(try machine.narrationEnds())
            case .idle(let frame)? where frame <= until: out.add(try machine.idleDeadlineReached())
            default: break run
            }
        }
        out.add(machine.stop(at: until))
        let end = machine.endFrame ?? until
        guard let bed else { return out.timeline(end: end) }
        // (Added first: the builder is read as `timeline` is called.)
        let bedEnd = out.addBed(bed, activityEnd: end)
        return out.timeline(end: max(end, bedEnd))
    }
}
