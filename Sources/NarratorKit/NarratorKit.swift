import Foundation
import Synchronization
@_exported import NarratorAudioFile
@_exported import NarratorCore
@_exported import NarratorLive

/// What to play from a lesson: a chain, an activity, or announcements by priority.
public enum Program: Sendable, Equatable {
    /// A chain, `repeats` times back to back.
    case chain(String, repeats: Int = 1)
    /// An activity. With `taps`, it runs from them (a script, as heard); without, it is
    /// answered live through `Playback.tap(_:)`. `state` picks the intro's variant.
    case activity(String, taps: [Tap]? = nil, state: String? = nil)
    /// Announcements, each a chain at a priority at a frame as heard; `interruptions` says
    /// whether an interrupted one is canceled or resumes from its sentence's (or word's) start.
    case requests([AnnouncementRequest], interruptions: InterruptionPolicy = .cancel)
}

/// A lesson loaded and checked: the way in to everything Narrator does with it.
///
/// ```swift
/// let lesson = try NarratorLesson(path: "Timings/lessons/homer-sight-words.json")
/// let prepared = try lesson.prepare(.activity("sight-words"), seed: 7)
/// let playback = try prepared.play()
/// for await event in playback.events { … }        // each cue once it is heard
/// playback.tap("see")                              // the child answers
/// ```
public struct NarratorLesson: Sendable {
    public let lesson: Lesson

    /// Reads and validates the lesson file at `path`. With `locale` (a BCP 47 tag such as
    /// `es-MX`), each clip is that locale's, falling back clip by clip to its language (`es`)
    /// and then to the lesson's default; `lesson.resolution` says which locales were used.
    public init(path: String, locale: String? = nil) throws(NarratorError) {
        lesson = try Lesson.load(path: path, locale: locale)
    }

    public init(_ lesson: Lesson) { self.lesson = lesson }

    /// Decodes what `program` can play and lays it out: its schedule (audio placed at frames
    /// and the cues, including an activity's trace) can be read, rendered or played.
    ///
    /// - Parameters:
    ///   - seed: pool draws; the same seed gives the same picks.
    ///   - until: for an activity, where its virtual clock stops (frames); by default 20 s after
    ///     the last scripted tap, 60 s without taps, or a day when it is answered live.
    public func prepare(_ program: Program, seed: UInt64, until: Int? = nil) throws(NarratorError) -> PreparedProgram {
        var draws = PoolDraws(seed: seed)
        switch program {
        case .chain(let chain, let repeats):
            let bank = try ClipBank.prepare(lesson: lesson, chain: chain, decoder: SndFileDecoder())
            let schedule = try Scheduler.schedule(chain: chain, repeats: repeats, bank: bank, draws: &draws)
            guard let bed = try chainBed(besides: bank) else { return PreparedProgram(schedule: schedule) }
            return PreparedProgram(schedule: try bed.under(schedule, file: lesson.path))
        case .requests(let list, let interruptions):
            let bank = try bank(for: list.map(\.chain))
            let schedule = try Announcer { chain throws(NarratorError) in
                try Scheduler.schedule(chain: chain, bank: bank, draws: &draws)
            }.run(list, interruptions: interruptions).schedule
            return PreparedProgram(schedule: schedule)
        case .activity(let id, let taps, let state):
            let activity = try lesson.activity(id)
            let rate = lesson.sampleRate
            let live = taps == nil
            let untilFrame =
                until ?? (live ? 86400 * rate : (taps!.map(\.frame).max() ?? 40 * rate) + 20 * rate)
            // Everything in memory: a plan that changes while it plays seeks, and streams cannot.
            let bed = try lesson.bed(for: activity)
            let bank = try bank(for: activity.chainIDs, also: bed.map { [$0.music.clip] } ?? [], decoder: SndFileDecoder(streamAboveSeconds: nil))
            let planner = ActivityPlanner(
                activity: activity, bank: bank, bed: try MusicBed.resolve(activity, bank: bank), seed: seed, until: untilFrame, state: state)
            return PreparedProgram(schedule: try planner.plan(taps: taps ?? []), planner: live ? planner : nil)
        }
    }

    /// The lesson's music bed for a chain played on its own, if it has one: its clip from
    /// `bank` (the chain's) when that holds it in memory, else decoded whole on its own (a
    /// chain's long clips stream; a bed loops and seeks from memory).
    private func chainBed(besides bank: ClipBank) throws(NarratorError) -> MusicBed? {
        guard let (music, _) = try lesson.bed(for: nil) else { return nil }
        if case .memory? = bank.clips[music.clip]?.audio.source { return try MusicBed.resolve(nil, bank: bank) }
        let own = try ClipBank.prepare(lesson: lesson, clipIDs: [music.clip], decoder: SndFileDecoder(streamAboveSeconds: nil))
        return try MusicBed.resolve(nil, bank: own)
    }

    /// The clips every one of `chains` can play, decoded once.
    private func bank(for chains: [String], also more: [String] = [], decoder: SndFileDecoder = SndFileDecoder()) throws(NarratorError) -> ClipBank {
        var clipIDs: [String] = []
        for chain in chains {
            for id in try lesson.clipIDs(reachableFrom: chain) where !clipIDs.contains(id) { clipIDs.append(id) }
        }
        for id in more where !clipIDs.contains(id) { clipIDs.append(id) }
        return try ClipBank.prepare(lesson: lesson, clipIDs: clipIDs, decoder: decoder)
    }
}

/// An activity's plan from taps: `ActivityRunner` with fresh pool draws from one seed, so that
/// a plan with one more tap is the same as the last one up to that tap.
struct ActivityPlanner: Sendable {
    let activity: Activity
    let bank: ClipBank
    let bed: MusicBed?
    let seed: UInt64
    let until: Int
    let state: String?

    func plan(taps: [Tap]) throws(NarratorError) -> Schedule {
        var draws = PoolDraws(seed: seed)
        let bank = bank
        var runner = ActivityRunner(activity: activity, sampleRate: bank.lesson.sampleRate) { chain throws(NarratorError) in
            try Scheduler.schedule(chain: chain, bank: bank, draws: &draws)
        }
        runner.bed = bed
        return try runner.run(taps: taps, until: until, state: state).schedule
    }
}

/// A program laid out: its schedule (the cue sheet without playing anything), ready to render
/// or play.
public struct PreparedProgram: Sendable {
    public let schedule: Schedule
    /// Set for an activity answered live.
    let planner: ActivityPlanner?

    init(schedule: Schedule, planner: ActivityPlanner? = nil) {
        self.schedule = schedule
        self.planner = planner
    }

    /// The cues, in order: what the app shows and when (frames at the lesson's rate).
    public var cues: [Cue] { schedule.cues }

    /// Renders to an audio file (complete or absent, never partial) of the type its extension
    /// names: .wav, .flac, .ogg (Vorbis), .opus or .mp3 (`AudioFileType`; anything else is
    /// refused before rendering). `format` is WAV's sample format; `quality` (0…1) is for the
    /// lossy codecs. Each decodes to exactly the schedule's frames (docs/formats.md).
    public func render(to path: String, format: OutputFormat = .s16, quality: Double? = nil) throws(NarratorError) {
        try OfflineRenderer.render(schedule, to: path, format: format, quality: quality)
    }

    /// Renders at `speed` (0.5…2.0) with the pitch kept (a `TimeStretcher`):
    /// `cueSheet(speed:)` says where each cue is in it. Speed 1 is `render(to:format:quality:)`.
    public func render(to path: String, format: OutputFormat = .s16, quality: Double? = nil, speed: Double) throws(NarratorError) {
        try OfflineRenderer.render(schedule, to: path, format: format, quality: quality, speed: speed)
    }

    /// The cue sheet (JSON) of the audio `render(to:format:speed:)` writes: every frame (a
    /// cue's, a word's end, the length) where it is heard at `speed`.
    public func cueSheet(speed: Double = 1) throws(NarratorError) -> String {
        try TimeStretcher.check(speed)
        if speed == 1 { return CueSheet.json(schedule) }
        return CueSheet.json(schedule) { TimeStretcher.outputFrame(forInput: $0, speed: speed) }
    }

    /// Renders in memory, block after block: `body` gets each block's interleaved samples (valid
    /// only during the call) and its frame count, in order. The same samples `render(to:)`
    /// writes as floats, without a file (the plot reads its waveform this way).
    public func render(blocks body: (UnsafeBufferPointer<Float>, Int) throws(NarratorError) -> Void) throws(NarratorError) {
        try OfflineRenderer.render(schedule, blocks: body)
    }

    /// Starts playing live on `output` (an `AlsaOutput`, a `PulseOutput` from NarratorOutputs,
    /// a `VirtualOutput`, or an app's own); events arrive on the returned playback's `events`
    /// as they are heard.
    ///
    /// - Parameter threads: the scheduling policy of the engine's threads.
    /// - Parameter clock: the engine's time: the monotonic clock, or a `VirtualClock` that the
    ///   caller advances (with a `VirtualOutput` on it).
    /// - Parameter onEvents: instead of `events` (which then ends at once), events are handed
    ///   to this function on the cue thread the moment they are delivered, those of one moment
    ///   (the cues of one frame) in one call: the shortest way out, for a caller that forwards
    ///   events elsewhere (the daemon). It must return quickly.
    /// - Parameter onUpcoming: called on the cue thread, ahead of each moment, with the time
    ///   (monotonic ns) it will be delivered at, as soon as that is known: a notice that a
    ///   pause, seek or stop can still take back (`PlaybackEngine.start`). It must return
    ///   quickly. The daemon wakes its event loops with it.
    /// - Parameter onFinished: called on the cue thread once playback has ended (after the
    ///   last event), with how: a caller that must not keep a thread waiting in
    ///   `waitUntilFinished()` (the daemon) is told instead.
    /// - Parameter gains: the buses' and master gains and mutes (`Playback.gains`); pass the
    ///   same instance to the next playback to keep them across chains.
    /// - Parameter speed: the speed from the first frame (0.5…2.0, pitch kept; see
    ///   `Playback.setSpeed`). Out of that range (`TimeStretcher.check`), it is a programming
    ///   error.
    /// - Parameter releaseDeviceAfterPause: how long a pause lasts before the device is let go
    ///   (taken again at the resume); nil: never.
    public func play(
        on output: any AudioOutput, threads: PlaybackEngine.Threads = .normal, clock: any PlaybackClock = SystemClock(),
        gains: MixGains = MixGains(), speed: Double = 1, releaseDeviceAfterPause: Duration? = .seconds(10),
        onEvents: (@Sendable ([PlaybackEvent]) -> Void)? = nil,
        onUpcoming: (@Sendable (Int64) -> Void)? = nil,
        onFinished: (@Sendable (PlaybackOutcome) -> Void)? = nil
    ) -> Playback {
        let engine = PlaybackEngine(schedule: schedule, output: output, clock: clock, threads: threads, gains: gains)
        engine.releaseDeviceAfterPause = releaseDeviceAfterPause
        if speed != 1 {
            do throws(NarratorError) {
                try engine.setSpeed(speed)
            } catch {
                preconditionFailure("Program.play: \(error.message)")
            }
        }
        return Playback(engine: engine, planner: planner, initial: schedule, onEvents: onEvents, onUpcoming: onUpcoming, onFinished: onFinished)
    }
}

/// A program playing live. Its `events` end with exactly one terminal event: the final cue
/// (`chainEnd`, `activityEnd`, a request's end…), `canceled` or `error`.
public final class Playback: Sendable {
    /// What the device agreed to.
    public let output: NegotiatedOutput
    /// Every event, each as it is heard; the stream finishes after the terminal one. An
    /// event's `jsonLine` is the line `narrator play` and the daemon write for it, without their
    /// envelopes (docs/events.md).
    public let events: AsyncStream<PlaybackEvent>
    /// When playback began (monotonic nanoseconds): the origin of events' `t`.
    public var startTime: Int64 { engine.startTime }

    private let engine: PlaybackEngine
    private let state: Mutex<State>
    private let finished = DispatchSemaphore(value: 0)

    private struct State: Sendable {
        /// Taps not yet heard, oldest first.
        var taps: [String] = []
        /// Taps taken in all.
        var tapCount = 0
        var outcome: PlaybackOutcome?
        /// The plan playing (an activity's changes with its taps).
        var plan: Schedule
    }

    fileprivate init(
        engine: PlaybackEngine, planner: ActivityPlanner?, initial: Schedule, onEvents: (@Sendable ([PlaybackEvent]) -> Void)? = nil,
        onUpcoming: (@Sendable (Int64) -> Void)? = nil, onFinished: (@Sendable (PlaybackOutcome) -> Void)? = nil
    ) {
        self.engine = engine
        takesTaps = planner != nil
        state = Mutex(State(plan: initial))
        output = engine.negotiated
        let (stream, continuation) = AsyncStream.makeStream(of: PlaybackEvent.self, bufferingPolicy: .unbounded)
        events = stream
        if onEvents != nil { continuation.finish() }
        if planner != nil { engine.holdBefore = [.idlePrompt] }
        var replanner: PlaybackEngine.Replanner?
        if let planner {
            let replanning = Replanning(planner: planner, current: initial, taps: self)
            replanner = { heard, responseFrame in replanning.next(heard: heard, responseFrame: responseFrame) }
        }
        let deliver: @Sendable ([PlaybackEvent]) -> Void = { events in
            if let onEvents { onEvents(events) } else { events.forEach { continuation.yield($0) } }
        }
        let finish: @Sendable (PlaybackOutcome) -> Void = { [self] outcome in
            state.withLock { $0.outcome = outcome }
            continuation.finish()
            finished.signal()
            onFinished?(outcome)
        }
        engine.start(replanner: replanner, onEvents: deliver, onFinished: finish, onUpcoming: onUpcoming)
    }

    /// The taps heard so far, oldest first, taken one at a time by the engine's cue thread.
    fileprivate func nextTap() -> String? { state.withLock { $0.taps.isEmpty ? nil : $0.taps.removeFirst() } }

    /// Whether it takes taps: an activity answered live (a chain, or an activity played from
    /// scripted taps, does not).
    public let takesTaps: Bool

    /// Taps waiting to be heard, at most: the engine takes one between cues, within a
    /// millisecond or so, so only a flood fills them.
    public static let maxWaitingTaps = 32
    /// Taps one playback takes in all: each replans the activity over every tap before it, so
    /// their number bounds that work as well as the memory (a child taps far fewer).
    public static let maxTaps = 4096

    /// What became of a tap.
    public enum TapOutcome: Sendable, Equatable {
        case taken
        /// Not an activity answered live (`takesTaps`).
        case notAnActivity
        /// `maxWaitingTaps` are still waiting to be heard.
        case tooManyWaiting
        /// `maxTaps` have been taken.
        case tooMany
    }

    /// The child tapped `answer` (or a sound's name, `replay`, `close`), heard now. Taken by an
    /// activity answered live, within the bounds above; refused otherwise (the outcome says
    /// why), and nothing is kept.
    @discardableResult
    public func tap(_ answer: String) -> TapOutcome {
        guard takesTaps else { return .notAnActivity }
        return state.withLock { state in
            guard state.tapCount < Self.maxTaps else { return .tooMany }
            guard state.taps.count < Self.maxWaitingTaps else { return .tooManyWaiting }
            state.taps.append(answer)
            state.tapCount += 1
            return .taken
        }
    }

    /// Restarts what plays from its start (the same audio, highlights from word 0).
    @discardableResult
    public func replay() -> TapOutcome { tap(Tap.replay) }

    /// Cancels the rest of the activity's audio and cues.
    @discardableResult
    public func close() -> TapOutcome { tap(Tap.close) }

    /// Stops playback now: the device is dropped, and the events end with `canceled`.
    public func stop() { engine.cancel() }

    /// An activity's new plan (from the cue thread).
    fileprivate func planChanged(_ plan: Schedule) { state.withLock { $0.plan = plan } }

    // MARK: Controls (safe from any thread)

    /// The buses' (voice, sfx, music) and master gains and mutes, followed within a period
    /// with a 10 ms ramp: `playback.gains.set(.music, gain: 0.5)`, `set(.music, muted: true)`.
    public var gains: MixGains { engine.gains }

    /// Pauses within a period of the output, after a 5 ms fade-out; `paused` reports the
    /// frame where it waits. An activity's idle waits wait too (they are on the timeline).
    public func pause() { engine.pause() }

    /// Where `resume(from:)` goes on from.
    public enum ResumePoint: Sendable, Equatable {
        /// Where the timeline waits.
        case pausedFrame
        /// The start of the word being heard when paused (or of the last one before it).
        case wordStart
        /// The start of the sentence being heard when paused (or of the last one before it).
        case sentenceStart
    }

    /// Resumes, with a 5 ms fade-in; `resumed` reports the frame.
    public func resume(from point: ResumePoint = .pausedFrame) {
        switch point {
        case .pausedFrame: engine.resume()
        case .wordStart: engine.resume(from: lastCue(at: engine.heardFrame, isWord: true)?.frame)
        case .sentenceStart: engine.resume(from: lastCue(at: engine.heardFrame, isWord: false)?.frame)
        }
    }

    /// Whether a pause is asked for.
    public var isPaused: Bool { engine.isPaused }

    /// Plays at `speed` (0.5…2.0), pitch kept (Sonic, a time stretcher made for speech): heard
    /// within a period with a 5 ms fade, and every cue (the highlights) comes when its sound is
    /// heard at the new speed; `speedChanged` says when the new speed is heard and from which
    /// frame. While paused, it applies at the resume. Throws for a speed out of range.
    public func setSpeed(_ speed: Double) throws(NarratorError) {
        try engine.setSpeed(speed)
    }

    /// The speed last asked for (1 unless `setSpeed` changed it).
    public var speed: Double { engine.speed }

    /// The timeline frame heard now (where it waits, while paused).
    public var heardFrame: Int { engine.heardFrame }

    /// The clip heard now, or the last one that started before now; nil before the first.
    public var clipHeard: String? {
        let plan = state.withLock { $0.plan }
        let heard = engine.heardFrame
        guard case .clipStart(let clip, _)? = plan.cues.last(where: { cue in
            if case .clipStart = cue.kind { cue.frame <= heard } else { false }
        })?.kind else { return nil }
        return clip
    }

    /// A place in what plays.
    public enum Position: Sendable, Equatable {
        /// A frame of the timeline.
        case frame(Int)
        /// The start of a clip: its occurrence that is heard or was last, else the next.
        case clip(String)
        /// The start of word `index` (in its timing file) of a clip, chosen like a clip's.
        case word(clip: String, index: Int)
        /// The start of sentence `index` (in its timing file) of a clip, chosen like a clip's.
        case sentence(clip: String, index: Int)
    }

    /// Moves to `position`: audio from exactly its frame (5 ms fades), cues from there on
    /// (`seeked`). While paused, it moves and stays paused. Throws when the position is not
    /// in what plays. Long files streamed from disk move too: their rings are refilled from
    /// the position, in silence, before the fade-in.
    public func seek(to position: Position) throws(NarratorError) {
        engine.seek(to: try frame(of: position))
    }

    /// What `say(word:then:)` does after the word.
    public typealias AfterWord = PlaybackEngine.AfterRange

    /// Says one word on its own (a tap on it), its highlight with it (`word` comes as it is
    /// heard), then goes back where playback was, paused or playing, or pauses after it.
    /// Returns the word said: its frame on the timeline and its text (a touch log keeps them).
    @discardableResult
    public func say(clip: String, word index: Int, then after: AfterWord = .pauseWhereItWas) throws(NarratorError) -> (frame: Int, text: String) {
        guard let cue = wordCue(clip: clip, index: index), case .word(_, _, let text, let end) = cue.kind else {
            throw NarratorError(file: "playback", "no word \(index) of clip '\(clip)' in what plays")
        }
        guard engine.play(cue.frame..<end, then: after) else {
            throw NarratorError(file: "playback", "word \(index) of clip '\(clip)' has no frames")
        }
        return (cue.frame, text)
    }

    private func frame(of position: Position) throws(NarratorError) -> Int {
        let plan = state.withLock { $0.plan }
        switch position {
        case .frame(let frame):
            guard frame >= 0 && frame <= plan.frames else {
                throw NarratorError(file: "playback", "frame \(frame) is outside what plays (0…\(plan.frames))")
            }
            return frame
        case .clip(let clip):
            let starts = plan.cues.filter { if case .clipStart(clip, _) = $0.kind { true } else { false } }
            guard let cue = Self.nearest(starts, to: engine.heardFrame) else { throw NarratorError(file: "playback", "clip '\(clip)' is not in what plays") }
            return cue.frame
        case .word(let clip, let index):
            guard let cue = wordCue(clip: clip, index: index) else { throw NarratorError(file: "playback", "no word \(index) of clip '\(clip)' in what plays") }
            return cue.frame
        case .sentence(let clip, let index):
            let sentences = plan.cues.filter { if case .sentence(clip, index, _, _) = $0.kind { true } else { false } }
            guard let cue = Self.nearest(sentences, to: engine.heardFrame) else {
                throw NarratorError(file: "playback", "no sentence \(index) of clip '\(clip)' in what plays")
            }
            return cue.frame
        }
    }

    /// The occurrence of word `index` of `clip` heard now or last, else the next one.
    private func wordCue(clip: String, index: Int) -> Cue? {
        let plan = state.withLock { $0.plan }
        let words = plan.cues.filter { if case .word(clip, index, _, _) = $0.kind { true } else { false } }
        return Self.nearest(words, to: engine.heardFrame)
    }

    /// The word (or sentence) being heard at `frame`, or the last one before it.
    private func lastCue(at frame: Int, isWord: Bool) -> Cue? {
        let plan = state.withLock { $0.plan }
        return plan.cues.last { cue in
            guard cue.frame <= frame else { return false }
            switch cue.kind {
            case .word: return isWord
            case .sentence: return !isWord
            default: return false
            }
        }
    }

    /// The last of `cues` at or before `frame`, else the first after it.
    private static func nearest(_ cues: [Cue], to frame: Int) -> Cue? {
        cues.last { $0.frame <= frame } ?? cues.first
    }

    /// Whether playback has ended.
    public var isFinished: Bool { state.withLock { $0.outcome != nil } }

    /// Waits until playback has ended and returns how.
    public func waitUntilFinished() -> PlaybackOutcome {
        finished.wait()
        finished.signal()
        return state.withLock { $0.outcome ?? .canceled }
    }
}

/// A live activity's plan as taps come: the engine's cue thread asks it between cues.
private final class Replanning: @unchecked Sendable {
    // @unchecked: used by the engine's cue thread only.
    private let planner: ActivityPlanner
    private var current: Schedule
    private var taps: [Tap] = []
    private let playback: Playback

    init(planner: ActivityPlanner, current: Schedule, taps playback: Playback) {
        self.planner = planner
        self.current = current
        self.playback = playback
    }

    func next(heard: Int, responseFrame: Int) -> (plan: Schedule, differsFrom: Int)? {
        guard let answer = playback.nextTap() else { return nil }
        taps.append(Tap(frame: responseFrame, answer: answer, heardFrame: heard))
        guard let next = try? planner.plan(taps: taps) else { return nil }
        defer {
            current = next
            playback.planChanged(next)
        }
        return (next, min(Schedule.firstDifference(current, next), Self.firstCueDifference(current, next)))
    }

    /// The frame of the first cue the two plans do not share. A tap that changes no audio (an
    /// answer ignored during the intro) adds only its `tap` event: from the audio alone the
    /// plans differ nowhere, the new one would take over only at its end, and the event would
    /// never be delivered.
    static func firstCueDifference(_ a: Schedule, _ b: Schedule) -> Int {
        let shared = zip(a.cues, b.cues).prefix { $0 == $1 }.count
        return [a.cues.dropFirst(shared).first?.frame, b.cues.dropFirst(shared).first?.frame].compactMap { $0 }.min() ?? Int.max
    }
}
