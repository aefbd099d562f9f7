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

    /// The activity's music bed from frame 0 until `fadeOutFrames` after `end` (the activity's
    /// last frame): its voice, its `musicLoop` and `musicStop` in the trace. Returns its end.
    mutating func addBed(_ bed: MusicBed, activityEnd end: Int) -> Int {
        channels = max(channels, bed.channels)
        ducking = bed.ducking
        let placed = bed.placed(endingAt: end)
        if let voice = placed.voice { voices.append(voice) }
        trace += placed.cues
        return placed.end
    }

    /// What an activity's transition produced, in its order.
    mutating func add(_ output: ActivityMachine.Output) {
        trace.append(contentsOf: output.cues)
        for placement in output.audio { add(placement.schedule, from: placement.start, until: placement.end) }
    }

    func timeline(end: Int) -> Timeline {
        let ordered = stablySorted(trace) { $0.frame < $1.frame }
        let sortedVoices = stablySorted(voices) { $0.startFrame < $1.startFrame }
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
    /// The activity's music bed (its own, else the lesson's: `MusicBed.resolve`), if any.
    public var bed: MusicBed? = nil

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
        let taps = stablySorted(unsorted) { $0.frame < $1.frame }
        var out = TimelineBuilder()
        out.sampleRate = sampleRate
        var machine = ActivityMachine(activity: activity, layout: schedule)
        out.add(try machine.start(variant: state))
        if let bed {
            // Right after `activityStart`: the bed starts with the activity.
            out.trace.insert(bed.startCue, at: min(1, out.trace.count))
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

/// A music bed, its clip prepared: one voice on the music bus from the first frame of what it
/// plays under (an activity, or a chain played on its own) until `fadeOutFrames` after its end,
/// looped over `loop` (frames of the clip), ducked under every voice like any music. The one
/// place a bed is resolved, checked against its clip and laid on a timeline, for activities
/// and chains alike.
public struct MusicBed: Sendable {
    public let clip: String
    public let audio: ClipAudio
    public let loop: Range<Int>?
    public let fadeInFrames: Int
    public let fadeOutFrames: Int
    /// The lesson's channels, else the clip's.
    public let channels: Int
    public let ducking: Lesson.Ducking

    /// The bed under `activity` (its own, else the lesson's), or under a chain played on its
    /// own when `activity` is nil (the lesson's), with its clip from `bank` (which holds it,
    /// decoded whole); nil when there is none. A loop past the clip's end, or shorter than
    /// `Activity.Music.minLoopSeconds`, is an error naming the key (`activities.ID.music.loop.end`,
    /// `music.loop.end`).
    public static func resolve(_ activity: Activity?, bank: ClipBank) throws(NarratorError) -> MusicBed? {
        let lesson = bank.lesson
        guard let (music, place) = try lesson.bed(for: activity) else { return nil }
        guard let audio = bank.clips[music.clip]?.audio else {
            throw NarratorError(file: lesson.path, place: "\(place).clip", "clip '\(music.clip)' was not prepared")
        }
        guard case .memory = audio.source else {
            throw NarratorError(file: lesson.path, place: "\(place).clip", "a music bed plays from memory: decode its clip whole")
        }
        let loop = try loopFrames(of: music, clipFrames: audio.frames, rate: lesson.sampleRate, file: lesson.path, place: place)
        return MusicBed(
            clip: music.clip, audio: audio, loop: loop, fadeInFrames: music.fadeInFrames, fadeOutFrames: music.fadeOutFrames,
            channels: lesson.channels ?? audio.channels, ducking: lesson.ducking)
    }

    /// The frames of the clip `music` loops over, for a clip `clipFrames` long (at `rate`), or
    /// nil when it plays once; a loop past the clip's end, or a whole-clip loop shorter than
    /// `Activity.Music.minLoopSeconds`, is an error naming `file` and the key under `place`.
    /// (A region's own order and length are checked as the lesson parses.) What plays and
    /// `narrator validate` check with this one function.
    public static func loopFrames(
        of music: Activity.Music, clipFrames: Int, rate: Int, file: String, place: String
    ) throws(NarratorError) -> Range<Int>? {
        switch music.loop {
        case .none:
            return nil
        case .whole:
            let shortest = Frames.from(seconds: Activity.Music.minLoopSeconds, rate: rate)!
            guard clipFrames >= shortest else {
                throw NarratorError(
                    file: file, place: place,
                    "clip '\(music.clip)' lasts \(Frames.describe(clipFrames, rate: rate)): a loop lasts at least \(Frames.describe(shortest, rate: rate)) (loop a longer clip, or \"loop\": false)")
            }
            return 0..<clipFrames
        case .region(let start, let end):
            guard end <= clipFrames else {
                throw NarratorError(
                    file: file, place: "\(place).loop.end",
                    "the loop ends at \(Frames.describe(end, rate: rate)), past the end of clip '\(music.clip)' (\(Frames.describe(clipFrames, rate: rate)))")
            }
            return start..<end
        }
    }

    /// `musicStart`, at frame 0.
    public var startCue: Cue { Cue(frame: 0, kind: .activity(type: .musicStart, fields: ["clip": .string(clip)])) }

    /// The bed from frame 0 under something that ends at `end`: its voice (none when it has
    /// no frames), lasting until `fadeOutFrames` after `end` with its fade-out, or until its
    /// clip ends if it does not loop and is shorter (fading out over what is left of it after
    /// `end`, or not at all: `clip ended`); its `musicLoop` cues and last its `musicStop`; and
    /// the frame where it falls silent.
    public func placed(endingAt end: Int) -> (voice: Voice?, cues: [Cue], end: Int) {
        var length = end + fadeOutFrames
        var fadeOut = fadeOutFrames
        var reason = "faded"
        if loop == nil && audio.frames < length {
            length = audio.frames
            fadeOut = max(0, length - end)
            if fadeOut == 0 { reason = "clip ended" }
        }
        var voice: Voice?
        if length > 0 {
            voice = Voice(
                audio: audio, startFrame: 0, bus: .music,
                shape: VoiceShape(frames: length, loop: loop, fadeInFrames: min(fadeInFrames, length), fadeOutFrames: fadeOut))
        }
        var cues: [Cue] = []
        func note(_ frame: Int, _ kind: TraceKind, _ fields: [String: Cue.Field]) {
            cues.append(Cue(frame: frame, kind: .activity(type: kind, fields: fields)))
        }
        if let loop {
            var at = loop.upperBound
            var count = 1
            while at < length {
                note(at, .musicLoop, ["clip": .string(clip), "loop": .int(count)])
                at += loop.count
                count += 1
            }
        }
        note(length, .musicStop, ["clip": .string(clip), "reason": .string(reason)])
        return (voice, cues, length)
    }

    /// The longest a bed plays under a chain played on its own, in seconds (a day, as an
    /// activity's plan): with loops of at least `Activity.Music.minLoopSeconds`, at most 86 400
    /// `musicLoop` cues, whatever a session's repeats.
    public static let maxChainSeconds = 86_400

    /// `schedule` (a chain played on its own) with the bed under it, or an error naming
    /// `file`'s `music` when the session lasts over `maxChainSeconds`: `musicStart` its first
    /// cue, the bed's voice from frame 0, its `musicLoop`s among the chain's cues (after those
    /// of the same frame) and its `musicStop` last, `fadeOutFrames` after the schedule's end,
    /// which it lengthens to there. Music ducks under the voice from then on.
    public func under(_ schedule: Schedule, file: String) throws(NarratorError) -> Schedule {
        guard schedule.frames <= Frames.capped(seconds: Self.maxChainSeconds, rate: schedule.sampleRate) else {
            throw NarratorError(
                file: file, place: "music",
                "a music bed plays under at most a day (\(Self.maxChainSeconds) s) of a chain; this session lasts \(Frames.describe(schedule.frames, rate: schedule.sampleRate)): play fewer repeats")
        }
        let placed = placed(endingAt: schedule.frames)
        var voices = schedule.voices
        if let voice = placed.voice { voices.insert(voice, at: 0) }
        return Schedule(
            sampleRate: schedule.sampleRate, channels: max(schedule.channels, channels), frames: max(schedule.frames, placed.end),
            voices: voices, cues: Cue.ordered([startCue] + schedule.cues + placed.cues), ducking: ducking)
    }
}
