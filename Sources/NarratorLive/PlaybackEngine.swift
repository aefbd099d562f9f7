import Foundation
import NarratorAudioFile
import NarratorCore
import Synchronization

/// Plays a schedule on an `AudioOutput` and delivers each cue at the moment its frame is heard.
/// It owns what is the same on every output: the plan (and its switches at a frame while it
/// plays), the mixer, the audio clock and cue delivery. It knows no device library.
///
/// Threads, each created here with its scheduling policy set explicitly (`Threads`):
/// - audio (push outputs only): runs the output's loop, which renders through the `OutputFeed`;
///   a pull output's own callback renders instead;
/// - cues: sleeps to each cue's audible time on the current anchor, checks the anchor again on
///   waking, and delivers only on an anchor that a fresh reading confirmed, for a frame already
///   rendered, so that no cue comes before it is heard, even across an interruption;
/// - streams: a `StreamFeeder` fills the rings of long files ahead of the mixer, and refills
///   them from where the timeline moves; it keeps time on the engine's clock (every 5 ms),
///   so that on a virtual clock it is as deterministic as the rest.
///
/// Time is the `PlaybackClock`'s: CLOCK_MONOTONIC, or a `VirtualClock` a test advances.
public final class PlaybackEngine: @unchecked Sendable {
    // @unchecked: `cancel()` and the read-only properties are safe from any thread; the rest
    // belongs to the cue thread, and the render state to the feed's rendering thread.
    public let schedule: Schedule
    public let output: any AudioOutput
    public var negotiated: NegotiatedOutput { output.negotiated }
    public let threads: Threads
    let clock: any PlaybackClock

    private let feed: OutputFeed
    private let feeder: StreamFeeder
    /// Problems of the stream feeder's thread, passed on by the cue thread.
    private let streamProblems = Mutex<[NarratorError]>([])
    private let running = Atomic<Bool>(false)
    private let startedAt = Atomic<Int64>(0)
    private let audioRealtime = Atomic<Bool>(false)
    /// Whether the time stretcher has been made (and handed to the feed).
    private let speedStageMaking = Mutex<Bool>(false)
    /// How long the output may ask for no audio before it counts as lost (under a second, so
    /// that the error comes within one).
    private let stallLimit: Int64 = 900_000_000
    /// A cue goes out only once a reading taken no earlier than this before its moment
    /// confirmed the clock: a device that stops consuming without a word can make a cue early
    /// only if it stopped within that window before the cue's frame.
    private let confirmationWindow: Int64 = 1_000_000

    /// The scheduling policy of each of the engine's threads.
    public struct Threads: Sendable, Equatable {
        public var audio: ThreadPolicy
        public var cues: ThreadPolicy
        public var streams: ThreadPolicy

        public init(audio: ThreadPolicy, cues: ThreadPolicy, streams: ThreadPolicy) {
            self.audio = audio
            self.cues = cues
            self.streams = streams
        }

        /// Every thread at normal priority (the default: see `ThreadPolicy`).
        public static let normal = Threads(audio: .normal, cues: .normal, streams: .normal)
        /// Audio at SCHED_FIFO 20 and cues at 19 (`--realtime`); streams stay normal.
        public static let realtime = Threads(audio: .realtime(20), cues: .realtime(19), streams: .normal)
    }

    /// The buses' and the master's gains and mutes, followed live (ramped): shared with the
    /// caller, who may keep them from one playback to the next.
    public let gains: MixGains

    /// Prepares everything the rendering thread needs; nothing plays until `start`.
    public init(
        schedule: Schedule, output: any AudioOutput, clock: any PlaybackClock = SystemClock(), threads: Threads = .normal,
        gains: MixGains = MixGains()
    ) {
        let negotiated = output.negotiated
        precondition(negotiated.sampleRate == schedule.sampleRate && negotiated.channels == schedule.channels)
        self.schedule = schedule
        self.output = output
        self.clock = clock
        self.threads = threads
        feeder = StreamFeeder(schedule: schedule)
        self.gains = gains
        feed = OutputFeed(
            schedule: schedule, lanes: feeder.lanes, negotiated: negotiated, clock: clock, gains: gains, readingWander: output.readingWander)
        feed.releaseAfterFrames.store(negotiated.sampleRate * 10, ordering: .relaxed)
        feed.output = output
        feed.streamFeeder = feeder
    }

    /// When `start` was called, on the engine's clock: the origin of the events' `t`. Safe
    /// from any thread; 0 before `start`.
    public var startTime: Int64 { startedAt.load(ordering: .acquiring) }

    /// For tests: called on a push output's audio thread just before its loop starts (true)
    /// and just after it ends (false), e.g. to count allocations in between. Set it before
    /// `start`.
    @_spi(Testing) public var audioThreadProbe: (@Sendable (Bool) -> Void)?

    /// Stops playback: the output drops what it holds, and the events end with `canceled`.
    /// Safe from any thread.
    public func cancel() { feed.end(.canceled) }

    // MARK: Transport (safe from any thread)

    /// Pauses: within a period of the output (what it holds beyond a few ms is taken back,
    /// where it can), after a 5 ms fade-out; `paused` reports the frame where the timeline
    /// waits. No cue past that frame comes while paused, and a plan's idle waits, being on the
    /// timeline, wait too. The device keeps running (and playing silence).
    public func pause() { feed.pauseWanted.store(true, ordering: .releasing) }

    /// Resumes where the timeline waits, or from `frame` (the start of the word or sentence
    /// being heard, say) with a 5 ms fade-in; `resumed` reports the frame. While a word is said
    /// on its own (`play(_:then:)`), playback goes on after it from where it goes back to,
    /// rather than pausing there.
    public func resume(from frame: Int? = nil) {
        if let frame { _ = seek(to: frame) }
        feed.pauseAfterStop.store(false, ordering: .releasing)
        feed.resumes.add(1, ordering: .acquiringAndReleasing)
        feed.pauseWanted.store(false, ordering: .releasing)
    }

    /// How long a pause lasts before the output lets the device go (a PulseAudio stream is
    /// corked, so the server can suspend the sink; an ALSA device is stopped); a resume takes
    /// it again, and the clock settles anew (tens of milliseconds) before the fade-in. nil:
    /// never. Set before `start`.
    public var releaseDeviceAfterPause: Duration? = .seconds(10) {
        didSet {
            let frames = releaseDeviceAfterPause.map { duration -> Int in
                let (seconds, attoseconds) = duration.components
                let total = Double(seconds) + Double(attoseconds) / 1e18
                return total.isFinite && total >= 0 && total < 1e9 ? Int((total * Double(negotiated.sampleRate)).rounded()) : Int.max
            }
            feed.releaseAfterFrames.store(frames ?? Int.max, ordering: .releasing)
        }
    }

    /// Whether a pause is asked for (it is heard a period later at most).
    public var isPaused: Bool { feed.pauseWanted.load(ordering: .acquiring) }

    /// Moves the timeline to `frame` (clamped to the plan's length): a 5 ms fade-out, then
    /// the audio from exactly `frame` with a fade-in, and the cues from `frame` on (`seeked`
    /// reports both frames). While paused, it moves and stays paused. A plan that streams long
    /// files moves too: their rings are refilled from `frame` off the real-time thread, and
    /// the output is silent (the timeline waiting) until they hold it. Always true.
    @discardableResult
    public func seek(to frame: Int) -> Bool {
        feed.stopFrame.store(-1, ordering: .releasing)
        feed.jumpWanted.store(max(0, frame), ordering: .releasing)
        return true
    }

    /// Plays at `speed` (0.5…2.0; 1 is the plan as rendered) with the pitch kept, through a
    /// time stretcher made for speech (Sonic): the change is heard like a seek to the frame
    /// heard, within a period and a 5 ms fade, and every cue comes when its sound is heard at
    /// the new speed. While paused, it applies at the resume. The first call with a speed other
    /// than 1 makes the stretcher (on the caller's thread: it allocates). Always true.
    @discardableResult
    public func setSpeed(_ speed: Double) throws(NarratorError) -> Bool {
        try TimeStretcher.check(speed)
        if speed != 1 {
            try speedStageMaking.withLock { (made: inout Bool) throws(NarratorError) in
                guard !made else { return }
                feed.offeredSpeedStage = try SpeedStage(rate: negotiated.sampleRate, channels: negotiated.channels)
                feed.speedStageReady.store(true, ordering: .releasing)
                made = true
            }
        }
        feed.speedWanted.store(speed.bitPattern, ordering: .releasing)
        return true
    }

    /// The speed last asked for (1 unless `setSpeed` changed it).
    public var speed: Double { Double(bitPattern: feed.speedWanted.load(ordering: .acquiring)) }

    /// What `play(_:then:)` does once the range has played.
    public enum AfterRange: Sendable, Equatable {
        /// Go back to where playback was and pause there.
        case pauseWhereItWas
        /// Go back to where playback was and go on.
        case resumeWhereItWas
        /// Pause at the range's end.
        case pauseAtEnd
    }

    /// Plays the timeline frames `range` (a word said on its own: its cues come as heard),
    /// with 5 ms fades at both ends, then does `then`. "Where it was": the frame heard when
    /// this is called (or where a pause waits). A range asked for while another is still
    /// playing replaces it but keeps where to go back and how (a second word tapped while the
    /// first is said still returns to the pause). False for an empty range.
    @discardableResult
    public func play(_ range: Range<Int>, then: AfterRange) -> Bool {
        guard !range.isEmpty else { return false }
        if feed.stopFrame.load(ordering: .acquiring) < 0 || feed.returnFrame.load(ordering: .acquiring) < 0 {
            let here = isPaused ? pausedFrame : heardFrame
            feed.returnFrame.store(then == .pauseAtEnd ? -1 : here, ordering: .releasing)
            feed.pauseAfterStop.store(then != .resumeWhereItWas, ordering: .releasing)
        }
        feed.stopFrame.store(-1, ordering: .releasing)
        feed.jumpWanted.store(max(0, range.lowerBound), ordering: .releasing)
        feed.stopFrame.store(range.upperBound, ordering: .releasing)
        feed.pauseWanted.store(false, ordering: .releasing)
        return true
    }

    /// The timeline frame being heard now (the clock's latest reading, extrapolated); 0
    /// before the clock has settled. Safe from any thread.
    public var heardFrame: Int {
        let waiting = feed.pausedTimeline.load(ordering: .acquiring)
        if waiting >= 0 { return waiting }
        return max(0, feed.publication.snapshot().timelineFrame(at: clock.now(), rate: schedule.sampleRate))
    }

    /// Where the timeline waits while paused (`heardFrame` says it once the pause has been
    /// rendered, and the frame heard until then).
    private var pausedFrame: Int { heardFrame }

    /// What the cue thread asks, between cues, of a caller that changes the plan while it
    /// plays (a live activity answering taps): given the frame heard now and the frame where a
    /// response can start, a new plan for the whole timeline and the first frame where it
    /// differs from the current one, or nil. Called on the cue thread only.
    public typealias Replanner = @Sendable (_ heard: Int, _ responseFrame: Int) -> (plan: Schedule, differsFrom: Int)?

    /// How far ahead of what is heard a response starts: time to re-plan and hand the plan
    /// over (30 ms); on an output that cannot take audio back (`AudioOutput.takesBack`), past
    /// what it holds too (its buffer, a period and the margin), so that the response is not a
    /// late switch that loses its first frames.
    public var responseDelayFrames: Int {
        let replan = negotiated.sampleRate * 30 / 1000
        return output.takesBack ? replan : max(replan, negotiated.bufferFrames + negotiated.periodFrames + rewindMarginFrames)
    }
    /// How close to what is heard the audio can still be changed (taken back with a rewind):
    /// what a sound server has already rendered is beyond recall.
    public var rewindMarginFrames: Int { negotiated.sampleRate * 5 / 1000 }

    /// Cue types before which rendering holds back (e.g. an activity's `idlePrompt`): nothing
    /// at or past such a cue's frame is rendered until that frame is within the feed's hold
    /// margin (10 ms) of being heard, so that a tap heard until then can still change what
    /// plays there without anything having to be taken back. Set before `start`.
    public var holdBefore: Set<TraceKind> = []

    /// Starts playing: the threads start, and `onEvents` is called on the cue thread with the
    /// events of each moment (the cues of one frame come in one call, so that a caller
    /// forwarding them, the daemon, can send them in one write); then `onFinished` with how it
    /// ended, after the one terminal event (the final cue, `canceled` or `error`).
    ///
    /// `onUpcoming`, if given, is called on the cue thread with the time (monotonic ns) at which
    /// the next moment will be delivered, as soon as the cue thread knows it (its mark is
    /// rendered and the clock settled), once per moment (again if the clock moves it by more
    /// than `upcomingTolerance`). It is a notice, not a promise: a pause, seek, plan switch or
    /// cancel in between can take the moment back, and then it never comes. The daemon uses it
    /// to have its event loops awake at that time (`ChannelOutlet`'s wake-ahead).
    public func start(
        replanner: Replanner? = nil, onEvents: @escaping @Sendable ([PlaybackEvent]) -> Void,
        onFinished: @escaping @Sendable (PlaybackOutcome) -> Void = { _ in },
        onUpcoming: (@Sendable (Int64) -> Void)? = nil
    ) {
        precondition(!running.exchange(true, ordering: .acquiringAndReleasing), "an engine plays once")
        let startTime = clock.now()
        startedAt.store(startTime, ordering: .releasing)
        feed.lastProgress.store(startTime, ordering: .releasing)
        let streamPolicy = threads.streams
        let clock = clock
        if !feeder.isIdle { clock.enter() }
        // On the system clock the feeder's own pause, which the feed ends when a move needs a
        // refill (`StreamFeeder.wake`); a virtual clock keeps the thread's time.
        var streamPause: (@Sendable (_ stopping: () -> Bool) -> Void)?
        if !(clock is SystemClock) {
            streamPause = { stopping in clock.sleep(until: clock.now() + 5_000_000, unless: stopping) }
        }
        feeder.start(
            threadSetup: {
                ThreadPolicy.nameCurrentThread("narrator-stream")
                streamPolicy.apply()
            },
            pause: streamPause,
            onExit: { clock.leave() }
        ) { [self] problem in streamProblems.withLock { $0.append(problem) } }
        let audioDone = DispatchSemaphore(value: 0)
        switch output.drive {
        case .push:
            let probe = audioThreadProbe
            threads.audio.startThread(named: "narrator-audio") { [self] applied in
                audioRealtime.store(applied && threads.audio != .normal, ordering: .releasing)
                probe?(true)
                output.play(feed)
                probe?(false)
                audioDone.signal()
            }
        case .pull:
            output.play(feed)
            audioDone.signal()
        }
        clock.enter()
        threads.cues.startThread(named: "narrator-cues") { [self] _ in
            let outcome = deliverCues(startTime: startTime, replanner: replanner, onEvents: onEvents, onUpcoming: onUpcoming)
            feed.end(.finished)
            // A device stuck in a call (a hung sound server) must not hold the caller: the
            // audio thread keeps what it needs alive and ends on its own.
            if audioDone.wait(timeout: .now() + 0.5) == .success { output.stop() }
            // (A mixer still rendering finds its rings run dry: silence.)
            feeder.stop(wake: clock.wake)
            onFinished(outcome)
            clock.leave()
        }
    }

    /// Plays to the end on the engine's threads and returns how it ended; `onEvents` is
    /// called on the cue thread.
    public func run(replanner: Replanner? = nil, onEvents: @escaping @Sendable ([PlaybackEvent]) -> Void) -> PlaybackOutcome {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<PlaybackOutcome>(.canceled)
        start(replanner: replanner, onEvents: onEvents) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }

    // MARK: Cue thread

    /// How far the clock may move a moment already announced (`onUpcoming`) before it is
    /// announced again.
    public static let upcomingTolerance: Int64 = 50_000

    private func deliverCues(startTime: Int64, replanner: Replanner?, onEvents: ([PlaybackEvent]) -> Void, onUpcoming: ((Int64) -> Void)?) -> PlaybackOutcome {
        func onEvent(_ event: PlaybackEvent) { onEvents([event]) }
        /// The moment last announced to `onUpcoming`: its mark's output frame and due time.
        var announced: (outputFrame: Int, due: Int64)?
        let rate = schedule.sampleRate
        let device = negotiated.device
        var started = false
        var underrunsSeen = 0
        /// The frame where a delivered `paused` waits, until `resumed`.
        var pausedAt: Int?
        var confirmed: ClockPublication.Snapshot?
        /// How often to look for newly rendered marks when none is waiting: well within the
        /// time between a frame's rendering and its hearing (the output's buffer less a
        /// period, and less after the output has run low), so that no mark is seen late;
        /// every millisecond when a tap can change the plan.
        let bufferedNanoseconds = Int64(max(0, negotiated.bufferFrames - negotiated.periodFrames)) * 1_000_000_000 / Int64(rate)
        let idlePoll = replanner == nil ? min(2_000_000, max(1_000_000, bufferedNanoseconds / 4)) : 1_000_000

        /// The frame being heard at `time`, as far as the latest reading says (extrapolated no
        /// further than the reading that confirmed the clock; where a pause waits, once heard).
        func heardFrame(at time: Int64) -> Int {
            // A pause delivered (heard) and not resumed since: the timeline waits there.
            if let waiting = pausedAt { return waiting }
            let latest = feed.publication.snapshot()
            guard latest.anchor != nil || confirmed == nil else { return max(0, latest.heardTimeline) }
            return max(0, (latest.anchor == nil ? confirmed : latest)?.timelineFrame(at: time, rate: rate) ?? 0)
        }

        func checkOutput() -> PlaybackOutcome? {
            let now = clock.now()
            let count = feed.underruns.load(ordering: .acquiring)
            // `start` comes first: an underrun while the clock settled (before the first frame
            // was heard) is told once playback has started, with its count.
            if started, count > underrunsSeen {
                underrunsSeen = count
                onEvent(.underrun(count: count, at: now))
            }
            for problem in streamProblems.withLock({ problems in defer { problems = [] }; return problems }) {
                onEvent(.streamProblem(problem, at: now))
            }
            if now - feed.lastProgress.load(ordering: .acquiring) > stallLimit { feed.end(.stalled) }
            let ending = feed.exitReason
            switch ending {
            case .running, .finished:
                return nil
            case .canceled:
                onEvent(.canceled(frame: heardFrame(at: now), at: now))
                return .canceled
            case .failed, .stalled, .noClock:
                let error: PlaybackError =
                    switch ending {
                    case .stalled:
                        .deviceLost(device: device, code: "ETIMEDOUT", reason: "the device took no audio for a second")
                    case .noClock:
                        .noClock(device: device)
                    default:
                        .lost(DeviceFailure(errno: feed.failureCode.load(ordering: .acquiring)), device: device)
                    }
                onEvent(.error(error, frame: heardFrame(at: now), at: now))
                return .failed(error)
            }
        }

        // The cues of each plan the marks may name (0: the schedule; one more per switch).
        var plans: [Int: [Cue]] = [0: schedule.cues]
        // After a late switch, the new plan's cues (by index) that the old plan also had
        // between the frame asked for and the switch: they were delivered from the old plan
        // (its audio played there), so the new plan's marks of them are not.
        var alreadyDelivered: [Int: Set<Int>] = [:]
        var generation = 0
        var cues = schedule.cues
        // Marks rendered and not yet delivered, in output order from `waiting`.
        var marks: [RenderedMark] = []
        var waiting = 0
        var lastDelivered = -1
        feed.holdFrame.store(nextHold(in: cues, after: -1), ordering: .releasing)

        /// Takes what the rendering thread marked since the last call; a rewind voids the
        /// marks at or past the output frame it went back to.
        func collectMarks() {
            let before = marks.count
            feed.marks.drain(into: &marks)
            guard marks.count > before, marks[before...].contains(where: { $0.kind == .rewind }) else { return }
            var kept = Array(marks[waiting..<before])
            for mark in marks[before...] {
                if mark.kind == .rewind {
                    kept.removeAll { $0.outputFrame >= mark.outputFrame }
                } else {
                    kept.append(mark)
                }
            }
            marks = kept
            waiting = 0
        }

        while true {
            if let outcome = checkOutput() { return outcome }
            // Read before the marks: every mark of a plan marked whole is then collected, unless
            // the timeline jumped meanwhile (and will be marked again from where it went).
            let jumps = feed.jumps.load(ordering: .acquiring)
            let allMarked = feed.allMarked.load(ordering: .acquiring)
            collectMarks()
            if waiting == marks.count && allMarked == generation && feed.jumps.load(ordering: .acquiring) == jumps { break }
            let snapshot = feed.publication.snapshot()
            let now = clock.now()
            guard let anchor = snapshot.anchor else {
                clock.sleep(until: now + 1_000_000)
                continue
            }
            if started, let replanner {
                let heard = snapshot.timelineFrame(at: now, rate: rate)
                let earliest = heard + rewindMarginFrames
                if let (plan, differs) = replanner(heard, heard + responseDelayFrames), let switched = offer(plan, at: max(earliest, differs)) {
                    // The plans agree before the switch: the new one's cues are marked from
                    // where it took over.
                    let wanted = max(earliest, differs)
                    generation += 1
                    if switched > wanted {
                        onEvent(.lateSwitch(wanted: wanted, switched: switched, at: clock.now()))
                        // The feed marks the new plan's cues from `wanted` at the switch.
                        var played = cues.filter { $0.frame >= wanted && $0.frame < switched }
                        var same = Set<Int>()
                        for (index, cue) in plan.cues.enumerated() where cue.frame >= wanted && cue.frame < switched {
                            if let match = played.firstIndex(of: cue) {
                                played.remove(at: match)
                                same.insert(index)
                            }
                        }
                        if !same.isEmpty { alreadyDelivered[generation] = same }
                    }
                    plans[generation] = plan.cues
                    cues = plan.cues
                    feed.holdFrame.store(nextHold(in: cues, after: max(lastDelivered, heard)), ordering: .releasing)
                    continue
                }
            }
            confirmed = snapshot
            guard waiting < marks.count else {
                clock.sleep(until: now + idlePoll)
                continue
            }
            let due = anchor.time(ofFrame: marks[waiting].outputFrame, rate: rate)
            if let onUpcoming, now < due, announced.map({ $0.outputFrame != marks[waiting].outputFrame || abs($0.due - due) > Self.upcomingTolerance }) ?? true {
                announced = (marks[waiting].outputFrame, due)
                onUpcoming(due)
            }
            if now < due {
                // Wake at the deadline, or sooner to notice a cancel, a moved anchor or (every
                // millisecond when the plan can change) a tap.
                clock.sleep(until: min(due, now + (replanner == nil ? 10_000_000 : 1_000_000)))
                continue
            }
            if snapshot.readingTime < due - confirmationWindow {
                // No reading has confirmed the clock since shortly before this moment: the
                // device may have stopped consuming (a stalled sound server), so the mark
                // waits for the next reading rather than go out on an old promise. The output
                // reads about every millisecond, so one is usually a fraction of one away: it is
                // looked for every 50 µs in the first millisecond past the moment (a step of
                // 250 µs there made a fifth of the daemon's moments 0.25 ms late), every 250 µs
                // after (a device that has stopped).
                clock.sleep(until: now + (now - due < 1_000_000 ? 50_000 : 250_000))
                continue
            }
            // This mark and every later one already due (and as well confirmed) go out
            // together, stamped alike.
            var last = waiting
            while last + 1 < marks.count {
                let laterDue = anchor.time(ofFrame: marks[last + 1].outputFrame, rate: rate)
                guard laterDue <= now, snapshot.readingTime >= laterDue - confirmationWindow else { break }
                last += 1
            }
            var moment: [PlaybackEvent] = []
            for index in waiting...last {
                if index > waiting, feed.exitReason == .canceled { break }
                let mark = marks[index]
                let heard = anchor.time(ofFrame: mark.outputFrame, rate: rate)
                waiting = index + 1
                switch mark.kind {
                case .start:
                    started = true
                    moment.append(
                        .start(
                            StartInfo(
                                output: negotiated, measuredDelayFrames: feed.firstDelay.load(ordering: .acquiring),
                                realtime: output.drive == .push ? audioRealtime.load(ordering: .acquiring) : output.rendersInRealtime,
                                startTime: startTime, firstWriteTime: feed.firstRender.load(ordering: .acquiring),
                                firstFrameHeardTime: heard)))
                case .cue:
                    // (A cue the old plan delivered is skipped once: a later seek back marks it
                    // again, and then it is due.)
                    guard let cue = plans[mark.generation]?[mark.index], alreadyDelivered[mark.generation]?.remove(mark.index) == nil else { continue }
                    moment.append(.cue(cue, at: heard, delivered: now))
                    lastDelivered = max(lastDelivered, cue.frame)
                case .paused:
                    pausedAt = mark.timelineFrame
                    moment.append(.paused(frame: mark.timelineFrame, at: heard))
                case .resumed:
                    pausedAt = nil
                    moment.append(.resumed(frame: mark.timelineFrame, at: heard))
                case .seeked:
                    if pausedAt != nil { pausedAt = mark.timelineFrame }
                    moment.append(.seeked(from: mark.index, to: mark.timelineFrame, at: heard))
                case .speed:
                    moment.append(.speedChanged(speed: Double(bitPattern: UInt64(UInt(bitPattern: mark.index))), frame: mark.timelineFrame, at: heard))
                case .rewind:
                    continue
                }
            }
            if !moment.isEmpty { onEvents(moment) }
            if waiting > 4096 {
                marks.removeFirst(waiting)
                waiting = 0
                // Plans no mark names any more are dropped.
                let oldest = marks.map(\.generation).min() ?? generation
                plans = plans.filter { $0.key >= min(oldest, generation) }
                alreadyDelivered = alreadyDelivered.filter { $0.key >= min(oldest, generation) }
            }
            if lastDelivered >= feed.holdFrame.load(ordering: .relaxed) {
                feed.holdFrame.store(nextHold(in: cues, after: lastDelivered), ordering: .releasing)
            }
        }
        return .finished
    }

    // MARK: Changing the plan while it plays

    /// The next frame to hold before, after `frame`, in `cues`.
    private func nextHold(in cues: [Cue], after frame: Int) -> Int {
        guard !holdBefore.isEmpty else { return Int.max }
        return cues.first { $0.frame > frame && $0.traceKind.map(holdBefore.contains) == true }?.frame ?? Int.max
    }

    /// Hands `plan` to the rendering thread to take over at `frame` (taking back what the
    /// output has past it); returns the frame it took over at, or nil if rendering did not
    /// answer (an output that stopped asking for audio).
    private func offer(_ plan: Schedule, at frame: Int) -> Int? {
        feed.offeredMixer = Mixer(schedule: plan, maxBlockFrames: feed.blockCapacity, gains: gains)
        feed.offeredFrame = frame
        feed.planState.store(1, ordering: .releasing)
        let deadline = clock.now() + 200_000_000
        while feed.planState.load(ordering: .acquiring) != 2 {
            if clock.now() > deadline || feed.shouldStop {
                // Withdraw the offer unless the rendering thread is taking it (state 3): then
                // it is done in a moment, unless the output hangs in its rewind.
                if feed.planState.compareExchange(expected: 1, desired: 0, ordering: .acquiringAndReleasing).exchanged {
                    feed.offeredMixer = nil
                    return nil
                }
                if feed.shouldStop { return nil }
            }
            clock.sleep(until: clock.now() + 200_000)
        }
        let switched = feed.switchedAt.load(ordering: .acquiring)
        // The old plan is released here, not on the rendering thread.
        feed.retiredMixer = nil
        feed.offeredMixer = nil
        feed.planState.store(0, ordering: .releasing)
        return switched
    }
}
