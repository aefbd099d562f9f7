import NarratorAudioFile
import NarratorCore
import Synchronization

/// The engine's side of an output: what an `AudioOutput` calls from the thread that renders
/// (the engine's audio thread for a push output, the stream's callback for a pull one).
///
/// Real-time code: nothing here allocates, takes a lock, logs or reads a file. All it needs is
/// allocated by the engine before playback starts; long files reach the mixer through the
/// rings a `StreamFeeder` thread fills.
///
/// It renders the plan (the `Mixer`, switching to a new plan at a frame when the cue thread
/// offers one, taking back with `rewind` what the output already has past it), holds before a
/// frame a tap may still change, and turns the output's position reports into the audio clock:
/// frame-to-time anchors (`AudioClockFilter`) published without locks (`ClockPublication`) to
/// the cue thread. Until the clock has settled (at the start, and after each interruption) it
/// renders silence and the timeline waits.
///
/// Output frames and timeline frames: the output plays frames one after the other at its
/// rate (its clock is linear in them), while the timeline (the plan's frames) can wait, and
/// later jump. The feed keeps the map between them (`segments`) and tells the cue thread, for
/// each cue, the output frame it was rendered at (`marks`): a cue is due when that frame is
/// heard.
public final class OutputFeed: @unchecked Sendable {
    // @unchecked: the render state belongs to the rendering thread; what other threads see is
    // atomic (or the clock publication's seqlock), and `offeredMixer` is handed over through
    // `planState`.
    public let negotiated: NegotiatedOutput
    let clock: any PlaybackClock
    let publication = ClockPublication()
    /// Cues and timeline moments as rendered, for the cue thread.
    let marks = RenderedMarks()
    /// The plan generation whose every cue has been marked (-1: none yet, or not since the
    /// last jump).
    let allMarked = Atomic<Int>(-1)
    /// Jumps of the timeline so far (seeks): the cue thread checks that none came between
    /// reading `allMarked` and collecting the marks before it calls playback finished.
    let jumps = Atomic<Int>(0)

    // MARK: Transport, asked from any thread

    /// Whether the caller wants playback paused: the rendering thread fades out (taking back
    /// first what the output holds beyond `rewindMarginFrames` of what is heard) and renders
    /// silence while the timeline waits; when it is cleared, it fades in where the timeline
    /// waits.
    let pauseWanted = Atomic<Bool>(false)
    /// Where the timeline waits while paused (-1: not paused), set by the rendering thread.
    let pausedTimeline = Atomic<Int>(-1)
    /// A timeline frame to go on from (-1: none): a seek. While playing, the rendering thread
    /// fades out, jumps and fades in; while paused, it jumps and stays paused.
    let jumpWanted = Atomic<Int>(-1)
    /// A timeline frame where playback is to stop by itself (-1: none), its fade-out ending
    /// there: the end of a word said on its own. Then the timeline jumps to `returnFrame`
    /// (-1: it stays) and pauses if `pauseAfterStop`, else goes on.
    let stopFrame = Atomic<Int>(-1)
    let returnFrame = Atomic<Int>(-1)
    let pauseAfterStop = Atomic<Bool>(false)
    /// Counts `resume` calls: a resume that comes while the rendering thread is turning a
    /// word's end into a pause (`pauseAfterStop`) is not lost to that pause.
    let resumes = Atomic<Int>(0)
    /// The playback speed asked for (a `Double`'s bits; 1: as rendered, 0.5…2 through the
    /// time stretcher, pitch kept). The rendering thread applies a change behind a fade, like
    /// a seek to the frame heard: fade-out, the stretcher restarted there at the new speed,
    /// fade-in.
    let speedWanted = Atomic<UInt64>(Double(1).bitPattern)
    /// The stretcher, made by the engine the first time a speed other than 1 is asked for
    /// and handed to the rendering thread by `speedStageReady`.
    var offeredSpeedStage: SpeedStage?
    let speedStageReady = Atomic<Bool>(false)
    private var speedStage: SpeedStage?
    /// Output frames a pause lasts before the output is asked to let the device go
    /// (`wantsStandby`); `Int.max`: never.
    let releaseAfterFrames = Atomic<Int>(Int.max)
    private let standbyWanted = Atomic<Bool>(false)
    /// Length of the fades of pause, resume and seek (5 ms).
    let fadeFrames: Int
    /// How close to what is heard the output is asked to take audio back (the output's own
    /// `rewindMarginFrames`).
    private(set) var rewindMarginFrames: Int
    unowned(unsafe) var output: (any AudioOutput)! {
        didSet { rewindMarginFrames = output.rewindMarginFrames }
    }
    /// Woken when a move leaves the streamed voices waiting for a refill.
    unowned(unsafe) var streamFeeder: StreamFeeder?

    private var mixer: Mixer
    private let filter: AudioClockFilter
    private let floatBlock: UnsafeMutableBufferPointer<Float>
    /// Where each of the latest mixer blocks began (output and timeline frame), how long it
    /// was, and the ramps' levels at its start: a rewind into a block puts the levels back
    /// (`restoreLevels`). A ring; what it forgets (blocks under 16 frames could make it) is not
    /// restored. While stretching, a block is what the mixer fed the stretcher, found by its
    /// timeline frame (its output frame is the stretcher's, not the block's); so the ring is
    /// emptied when stretching starts or stops, and at a jump (no rewind goes back past one).
    private struct LevelMark {
        /// The output frame of the block's first frame; while stretching, unused.
        var output: Int
        var timeline: Int
        var frames: Int
        var levels: Mixer.Levels
    }
    private let levelMarks: UnsafeMutableBufferPointer<LevelMark>
    private var levelMarkCount = 0
    private var levelMarkNext = 0
    /// The transport marks pushed since frames were last handed over (`pushTransportMark`).
    private let transportMarks: UnsafeMutableBufferPointer<RenderedMark>
    private var transportMarkCount = 0
    private let blockFrames: Int
    private let frameBytes: Int

    /// 0 while playing; then one of `FeedExit`. Set once.
    let exit = Atomic<Int>(0)
    let failureCode = Atomic<Int32>(0)
    let underruns = Atomic<Int>(0)
    let firstDelay = Atomic<Int>(-1)
    let firstRender = Atomic<Int64>(0)
    /// When the output last asked for frames (or reported that the device moved): a device
    /// that stops asking for over `stallLimit` is lost.
    let lastProgress = Atomic<Int64>(0)
    /// Frame before which rendering holds (`Int.max`: none), set by the cue thread.
    let holdFrame = Atomic<Int>(Int.max)
    let holdMarginFrames: Int

    /// How long the device's timing reports may take to agree: two seconds beyond what a slow
    /// device needs (its buffer and a few periods of readings).
    let settleLimit: Int64
    /// A reading within this of the recent ones confirms the anchor.
    let confirmationTolerance: Int64 = 1_000_000
    /// After an interruption the sound server restarts its stream, and its delay reports can
    /// run up to about a millisecond early for a while (seen after SIGSTOP against the
    /// recording: cues 1.8–2.2 ms before heard, at most 1 in 9 runs). For `recoveryCaution`
    /// after the clock settles again, cues are timed `recoveryMargin` later: a little late,
    /// never early.
    let recoveryCaution: Int64 = 1_000_000_000
    let recoveryMargin: Int64 = 2_000_000

    /// 0: nothing offered; 1: `offeredMixer` waits for the rendering thread; 3: it is taking
    /// it; 2: it took it.
    let planState = Atomic<Int>(0)
    var offeredMixer: Mixer?
    var offeredFrame = 0
    var retiredMixer: Mixer?
    let switchedAt = Atomic<Int>(-1)

    enum FeedExit: Int {
        /// failed: the output failed (`failureCode` holds the errno); stalled: it asked for no
        /// audio for `stallLimit`; noClock: its reports never settled.
        case running = 0, finished, canceled, failed, stalled, noClock
    }

    /// The rendering thread's own state.
    private struct RenderState {
        /// Frames handed to the output.
        var rendered = 0
        var timelineRunning = false
        /// The plan being rendered (0 the first, one more at each switch), and its next cue to
        /// mark.
        var generation = 0
        var cueCursor = 0
        var startMarked = false
        /// The output frame heard at the latest reading, and when.
        var heardOutput = 0
        var heardAt: Int64 = 0
        /// Transport: paused (silence, the timeline waiting); frames left of a fade-out (then
        /// a pause or a jump) or of a fade-in.
        var paused = false
        var fadeOutLeft = 0
        var fadeInLeft = 0
        /// The fade-out under way ends a stop (`stopFrame`).
        var stopping = false
        /// The output frame where the latest jump (or resume) began, and where timeline frame 0 was
        /// rendered: no rewind goes back to them (see `rewindFloor`).
        var jumpOutput = -1
        var startOutput = -1
        /// The timeline frame the latest jump went to. A held frame before it was jumped over:
        /// it holds nothing (the timeline heard, still the one before the jump, would
        /// otherwise keep the renderer waiting for a frame that never comes, until the device
        /// ran dry).
        var jumpTimeline = 0
        /// The output frame where the latest pause's silence began, and where the latest
        /// fade-in began.
        var pausedOutput = 0
        var fadeInOutput = Int.min
        /// The gains' change count last seen.
        var gainChanges = 0
        /// The speed being rendered, and whether the stretcher renders it (at speed 1 once a
        /// fade brings the change: the mixer renders straight to the output again).
        var speed: Double = 1
        var stretching = false
        /// When the clock last began to settle: a device whose reports never agree (ALSA's
        /// `null` device takes audio as fast as it comes) cannot time cues.
        var settlingSince: Int64 = 0
        /// The latest reading that agreed with the anchor.
        var confirmedTime: Int64 = 0
        /// The timeline frame being heard, as of the latest reading.
        var heardTimeline = 0
        /// Until when cues are timed `recoveryMargin` later (after an interruption), 0 when not.
        var cautiousUntil: Int64 = 0
        var recovering = false
        var started = false
        /// Silence is rendered, the timeline waiting, until the streamed voices' rings hold
        /// the audio from the mixer's position (`waitForStreams`).
        var waitingForStreams = false
    }

    private var state = RenderState()
    private var segments = SegmentMap()

    /// How far back the clock's envelope looks for an output whose readings wander.
    static let wanderWindow: Int64 = 1_500_000_000

    init(
        schedule: Schedule, lanes: StreamLanes, negotiated: NegotiatedOutput, clock: any PlaybackClock, gains: MixGains,
        readingWander: Int64 = 0
    ) {
        self.negotiated = negotiated
        self.clock = clock
        blockFrames = max(8192, negotiated.periodFrames)
        mixer = Mixer(schedule: schedule, lanes: lanes, maxBlockFrames: blockFrames, gains: gains)
        fadeFrames = max(1, negotiated.sampleRate * 5 / 1000)
        rewindMarginFrames = negotiated.periodFrames
        filter = AudioClockFilter(
            rate: negotiated.sampleRate, envelope: readingWander > 0 ? (span: Self.wanderWindow, startMargin: readingWander) : nil)
        frameBytes = negotiated.channels * negotiated.format.bytesPerSample
        floatBlock = .allocate(capacity: blockFrames * negotiated.channels)
        // A block can be as short as a few frames (a pull output's small requests): room for
        // the buffer's worth in blocks of 16 frames, 64 at least.
        levelMarks = .allocate(capacity: max(64, negotiated.bufferFrames / 16 + 1))
        levelMarks.initialize(repeating: LevelMark(output: 0, timeline: 0, frames: 0, levels: mixer.levels))
        transportMarks = .allocate(capacity: 4)
        transportMarks.initialize(repeating: RenderedMark(kind: .rewind, timelineFrame: 0, outputFrame: 0))
        holdMarginFrames = negotiated.sampleRate * 10 / 1000
        let nanosecondsPerFrame = 1e9 / Double(negotiated.sampleRate)
        settleLimit =
            2_000_000_000
            + Int64(Double(negotiated.bufferFrames + (filter.agreement + 2) * negotiated.periodFrames) * nanosecondsPerFrame)
    }

    deinit {
        floatBlock.deallocate()
        levelMarks.deallocate()
        transportMarks.deallocate()
    }

    var blockCapacity: Int { blockFrames }

    // MARK: What an output calls

    /// Whether the output should let the device go: a pause has lasted the engine's
    /// `releaseDeviceAfterPause`. While this holds, the output stops the device (a pull stream
    /// corks; a push loop drops what the device holds), calls `released()` once, then no
    /// `render`, only `standingBy()` every few milliseconds. Once it clears (a resume, a seek,
    /// a word to say), the output starts the device again and renders; the clock settles anew
    /// before the timeline moves.
    public var wantsStandby: Bool {
        standbyWanted.load(ordering: .acquiring) && pauseWanted.load(ordering: .acquiring)
            && jumpWanted.load(ordering: .acquiring) < 0 && stopFrame.load(ordering: .acquiring) < 0
    }

    /// In standby: the device is let go on purpose (it is not lost).
    public func standingBy() { lastProgress.store(clock.now(), ordering: .releasing) }

    /// Whether the output should stop: playback is over, canceled, or failed. A push output's
    /// loop checks it every turn; then it drops what the device holds and returns.
    public var shouldStop: Bool { exit.load(ordering: .acquiring) != FeedExit.running.rawValue }

    /// Takes what the caller asked (a pause, a resume, a seek, a speed, a gain) between two
    /// renders, when the output has no room to render yet: what the output holds beyond its
    /// `rewindMarginFrames` is taken back (`rewind`) now, so that the change is rendered into
    /// that room at once and heard within a period, not after the period the device still
    /// had. An output calls it every millisecond or two while it waits (see `AudioOutput`).
    /// Real time; does nothing when nothing was asked.
    public func takeTransportRequests() {
        // Back from standby, `render` comes first: the clock settles again before a resume.
        guard state.started, state.timelineRunning, !shouldStop, !standbyWanted.load(ordering: .relaxed) else { return }
        adoptSpeedStage()
        // (It does nothing when nothing was asked: the same checks as in `render`.)
        takeTransportRequests(now: clock.now())
    }

    /// Takes the stretcher the engine made (off this thread) once it is offered.
    private func adoptSpeedStage() {
        if speedStage == nil && speedStageReady.load(ordering: .acquiring) { speedStage = offeredSpeedStage }
    }

    /// Renders up to `frames` frames into `buffer` (interleaved, `negotiated.format`) and
    /// returns how many it rendered: all of them, or fewer (down to none) while the plan holds
    /// before a frame a tap may still change, or once playback is over. Real time.
    public func render(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int {
        let now = clock.now()
        lastProgress.store(now, ordering: .releasing)
        guard frames > 0, !shouldStop else { return 0 }
        if !state.started {
            state.started = true
            state.settlingSince = now
            // Gains set before playback began apply from its first frame, without a ramp.
            mixer.settleGains()
            state.gainChanges = mixer.gains?.changes ?? 0
        }
        adoptSpeedStage()
        if standbyWanted.load(ordering: .relaxed) && !wantsStandby {
            // Back from standby: the clock settles from now, and a further pause is counted
            // from here.
            standbyWanted.store(false, ordering: .releasing)
            state.settlingSince = now
            state.pausedOutput = state.rendered
        }
        if planState.load(ordering: .relaxed) == 1,
            planState.compareExchange(expected: 1, desired: 3, ordering: .acquiringAndReleasing).exchanged
        {
            adoptPlan()
        }
        if !state.timelineRunning {
            // The clock has not settled: silence, while the timeline waits where it is.
            if now - state.settlingSince > settleLimit {
                end(.noClock)
                return 0
            }
            // What the stretcher made ahead is dropped: the timeline waits at what was rendered.
            if state.stretching { dropStretched() }
            buffer.initializeMemory(as: UInt8.self, repeating: 0, count: frames * frameBytes)
            segments.begin(output: state.rendered, timeline: mixer.position, advancing: false)
            handedOver(frames, now: now)
            return frames
        }
        takeTransportRequests(now: now)
        var done = 0
        while done < frames {
            let target = buffer + done * frameBytes
            if state.paused {
                // The timeline waits; the device goes on playing (and reporting its clock),
                // until the pause has lasted long enough to let it go.
                if state.heardOutput - state.pausedOutput >= releaseAfterFrames.load(ordering: .relaxed) {
                    standbyWanted.store(true, ordering: .releasing)
                }
                // A seek while paused has its streamed voices refilled now, ahead of the resume.
                _ = mixer.streamsReady()
                target.initializeMemory(as: UInt8.self, repeating: 0, count: (frames - done) * frameBytes)
                segments.begin(output: state.rendered, timeline: mixer.position, advancing: false)
                handedOver(frames - done, now: now)
                done = frames
                break
            }
            if state.waitingForStreams && state.fadeOutLeft > 0 && !mixer.streamsReady() {
                // A fade-out while the streams refill fades silence: over at once.
                state.fadeOutLeft = 0
                if fadingOut {
                    fadingOut = false
                    afterFadeOut()
                }
                continue
            }
            if let silence = waitForStreams(into: target, frames: frames - done, now: now) {
                done += silence
                break
            }
            var count = min(frames - done, state.stretching ? speedStage!.feedFrames : blockFrames)
            let stop = stopFrame.load(ordering: .acquiring)
            if stop >= 0 && !fadingOut && jumpWanted.load(ordering: .relaxed) < 0 {
                // Render up to the stop's fade-out, then fade out to end where the stop frame
                // is heard (in output frames: the stretcher's line places it).
                let here = state.stretching ? state.rendered : mixer.position
                let stopAt =
                    state.stretching
                    ? speedStage!.outputFrame(ofTimeline: stop, orStartingAt: state.rendered, mixer.position) : stop
                if here < stopAt - fadeFrames {
                    count = min(count, stopAt - fadeFrames - here)
                } else {
                    fadingOut = true
                    state.stopping = true
                    state.fadeOutLeft = max(1, min(fadeFrames, stopAt - here))
                    state.fadeInLeft = 0
                }
            }
            if state.fadeOutLeft > 0 { count = min(count, state.fadeOutLeft) }
            if state.stretching {
                count = renderStretched(upTo: count)
                guard count > 0 else { break }
            } else {
                let hold = holdFrame.load(ordering: .acquiring)
                if mixer.position < hold {
                    count = min(count, hold - mixer.position)
                } else if hold != Int.max && hold >= state.jumpTimeline && state.heardTimeline < hold - holdMarginFrames {
                    // Held: the frame is written only once it comes close to being heard.
                    break
                }
                let from = state.rendered - mixer.position
                count = markCues(upTo: count) { from + $0 }
                guard count > 0 else { break }
                segments.begin(output: state.rendered, timeline: mixer.position, advancing: true)
                // Past the schedule's end the mixer renders silence: the device keeps running
                // (and reporting its clock) until the last cue has been delivered.
                let levels = mixer.levels
                noteLevels(LevelMark(output: state.rendered, timeline: mixer.position, frames: count, levels: levels))
                mixer.render(into: floatBlock, frameCount: count, towards: levels.targets)
            }
            applyFades(frames: count)
            convert(samples: count * negotiated.channels, into: target)
            handedOver(count, now: now)
            done += count
            if state.fadeOutLeft == 0 && fadingOut {
                fadingOut = false
                afterFadeOut()
            }
        }
        return done
    }

    /// Renders up to `count` output frames into `floatBlock` through the stretcher, feeding it
    /// what the mixer renders next (and marking its cues at the output frames the stretcher's
    /// line puts them); returns how many: fewer while the plan holds, or the marks' ring is
    /// full. `count` is at most the stage's `feedFrames`.
    private func renderStretched(upTo count: Int) -> Int {
        let stage = speedStage!
        let stretcher = stage.stretcher
        let channels = negotiated.channels
        while stretcher.availableFrames < count {
            var n = stage.feedFrames
            let hold = holdFrame.load(ordering: .acquiring)
            if mixer.position < hold {
                n = min(n, hold - mixer.position)
            } else if hold != Int.max && hold >= state.jumpTimeline && state.heardTimeline < hold - holdMarginFrames - stage.lagFrames {
                // Held; the stretcher keeps back up to `lagFrames` of what it was fed, so the
                // hold lets go that much earlier.
                break
            }
            if stage.origin == nil {
                stage.origin = (state.rendered, mixer.position)
                segments.begin(output: state.rendered, timeline: mixer.position, speed: stage.speed)
            }
            let (output, timeline) = stage.origin!
            let speed = stage.speed
            n = markCues(upTo: n) { output + TimeStretcher.outputFrame(forInput: $0 - timeline, speed: speed) }
            guard n > 0 else { break }
            let levels = mixer.levels
            noteLevels(LevelMark(output: state.rendered, timeline: mixer.position, frames: n, levels: levels))
            mixer.render(into: stage.input, frameCount: n, towards: levels.targets)
            stretcher.feed(UnsafeBufferPointer(rebasing: stage.input[0..<n * channels]))
        }
        return stretcher.take(into: UnsafeMutableBufferPointer(rebasing: floatBlock[0..<count * channels]))
    }

    // MARK: Transport, on the rendering thread

    /// Whether a fade-out is under way (its end pauses or jumps).
    private var fadingOut = false

    /// Starts what the caller asked since the last call: a fade-out towards a pause or a jump
    /// (after taking back what the output holds beyond the rewind margin), or, while paused,
    /// a jump and a resume.
    private func takeTransportRequests(now: Int64) {
        if let gains = mixer.gains, gains.changes != state.gainChanges {
            // A new gain is heard within a period: what the output holds is mixed again.
            state.gainChanges = gains.changes
            if !state.paused && !fadingOut { takeBackBeyondMargin(now: now) }
        }
        let wantPause = pauseWanted.load(ordering: .acquiring)
        let jump = jumpWanted.load(ordering: .acquiring)
        let newSpeed = speedToApply
        if newSpeed != nil && !state.startMarked && !state.paused && !fadingOut {
            // Nothing of the timeline is rendered yet: the first frame starts at the new speed.
            applySpeed()
        }
        if state.paused {
            guard jump >= 0 || !wantPause else { return }
            // The silence the output holds is taken back (not the pause's fade-out): what
            // comes next is heard within a period.
            takeBackBeyondMargin(now: now, notBefore: state.pausedOutput + 1)
            if jump >= 0 {
                jumpTimeline()
                pausedTimeline.store(mixer.position, ordering: .releasing)
            }
            if !wantPause {
                applySpeed()
                state.paused = false
                pausedTimeline.store(-1, ordering: .releasing)
                startFadeIn()
                // No rewind goes back past the resume: it would void the `resumed` mark.
                state.jumpOutput = state.rendered
                pushTransportMark(RenderedMark(kind: .resumed, timelineFrame: mixer.position, outputFrame: state.rendered))
            }
            return
        }
        guard !fadingOut, wantPause || jump >= 0 || speedToApply != nil else { return }
        takeBackBeyondMargin(now: now)
        fadingOut = true
        // A fade-in under way is turned into a fade-out from the level it reached.
        state.fadeOutLeft = state.fadeInLeft > 0 ? max(1, fadeFrames - state.fadeInLeft) : fadeFrames
        state.fadeInLeft = 0
    }

    /// The speed asked for, when it is not the one rendered and can be rendered (the engine
    /// hands the stretcher over before it asks for a speed other than 1).
    private var speedToApply: Double? {
        let wanted = Double(bitPattern: speedWanted.load(ordering: .acquiring))
        guard wanted != state.speed, wanted == 1 || speedStage != nil else { return nil }
        return wanted
    }

    /// Renders at the speed asked for from here on (after a fade-out, a pause, or before the
    /// first frame): the stretcher starts afresh at the timeline frame where the mixer is.
    private func applySpeed() {
        guard let speed = speedToApply else { return }
        if state.stretching { dropStretched() }
        state.speed = speed
        if state.stretching != (speed != 1) { levelMarkCount = 0 }
        state.stretching = speed != 1
        if state.stretching { speedStage!.restart(speed: speed) }
        guard state.startMarked else { return }
        // Heard from here (before the first frame, `start` says the speed instead). No rewind
        // goes back past it: it would void the mark, and the frames after it are at the new
        // speed whatever comes.
        pushTransportMark(RenderedMark(kind: .speed, index: Int(bitPattern: UInt(speed.bitPattern)), timelineFrame: mixer.position, outputFrame: state.rendered))
        state.jumpOutput = state.rendered
    }

    /// Drops what the stretcher was fed beyond what is rendered: the timeline (the mixer and
    /// the cue marks) goes back to the frame heard at the end of what is rendered, where the
    /// stretcher starts again.
    private func dropStretched() {
        guard state.stretching, let stage = speedStage, stage.origin != nil else { return }
        marks.push(RenderedMark(kind: .rewind, timelineFrame: 0, outputFrame: state.rendered))
        let timeline = segments.timeline(atOutput: state.rendered).frame
        moveMixer(to: timeline)
        restoreLevels(of: mixer)
        stage.restart(speed: state.speed)
    }

    /// Moves the mixer (and the cue marks with it) back to `timeline`, a frame already marked
    /// whose marks past it a rewind mark has voided.
    private func moveMixer(to timeline: Int) {
        guard timeline != mixer.position else { return }
        mixer.seek(to: timeline)
        state.cueCursor = Self.firstCue(in: mixer.cueFrames, atOrAfter: timeline)
        if allMarked.load(ordering: .relaxed) >= 0 {
            allMarked.store(-1, ordering: .releasing)
            jumps.add(1, ordering: .releasing)
        }
    }

    /// After a fade-out: the jump asked for (if any), a new speed, then a pause (if still
    /// wanted) or a fade-in.
    private func afterFadeOut() {
        dropStretched()
        if state.stopping {
            state.stopping = false
            stopFrame.store(-1, ordering: .releasing)
            let back = returnFrame.exchange(-1, ordering: .acquiringAndReleasing)
            if back >= 0 { jumpWanted.store(back, ordering: .releasing) }
            let resumesBefore = resumes.load(ordering: .acquiring)
            if pauseAfterStop.load(ordering: .acquiring) {
                pauseWanted.store(true, ordering: .releasing)
                // A resume from another thread between the load and the store cleared the
                // pause before it was set: it wins (`PlaybackEngine.resume` counts before it
                // clears `pauseWanted`).
                if resumes.load(ordering: .acquiring) != resumesBefore { pauseWanted.store(false, ordering: .releasing) }
            }
        }
        if jumpWanted.load(ordering: .acquiring) >= 0 { jumpTimeline() }
        if pauseWanted.load(ordering: .acquiring) {
            // (A new speed applies at the resume.)
            state.paused = true
            state.pausedOutput = state.rendered
            pausedTimeline.store(mixer.position, ordering: .releasing)
            marks.push(RenderedMark(kind: .paused, timelineFrame: mixer.position, outputFrame: state.rendered))
        } else {
            applySpeed()
            startFadeIn()
        }
    }

    private func startFadeIn() {
        state.fadeInLeft = fadeFrames
        state.fadeInOutput = state.rendered
    }

    /// After a rewind: a fade-in that had begun by the frame rewound to goes on from the level
    /// it had there (not from where the frames taken back had brought it).
    private func restoreFadeIn() {
        guard !fadingOut, state.fadeInOutput != Int.min else { return }
        let done = state.rendered - state.fadeInOutput
        if done >= 0 && done < fadeFrames { state.fadeInLeft = fadeFrames - done }
    }

    /// Moves the timeline to the frame asked for (clamped to the plan): the mixer and the cue
    /// marks go on from there.
    private func jumpTimeline() {
        let wanted = jumpWanted.exchange(-1, ordering: .acquiringAndReleasing)
        guard wanted >= 0 else { return }
        let to = min(wanted, mixer.schedule.frames)
        let from = mixer.position
        allMarked.store(-1, ordering: .releasing)
        jumps.add(1, ordering: .releasing)
        mixer.seek(to: to)
        state.cueCursor = Self.firstCue(in: mixer.cueFrames, atOrAfter: to)
        pushTransportMark(RenderedMark(kind: .seeked, index: from, timelineFrame: to, outputFrame: state.rendered))
        state.jumpOutput = state.rendered
        state.jumpTimeline = to
        levelMarkCount = 0
        if state.stretching { speedStage!.restart(speed: state.speed) }
    }

    /// Asks the output to take back what it holds beyond `rewindMarginFrames` past the frame
    /// heard now, so that a pause or a seek is heard within a period (an output that cannot
    /// rewind plays what it holds first). The timeline goes back with it.
    private func takeBackBeyondMargin(now: Int64, notBefore: Int = 0) {
        guard state.heardAt > 0 else { return }
        let heardNow = state.heardOutput + max(0, Int((now - state.heardAt) * Int64(negotiated.sampleRate) / 1_000_000_000))
        let keep = max(heardNow + rewindMarginFrames, notBefore, rewindFloor)
        guard state.rendered > keep else { return }
        let back = output.rewind(state.rendered - keep)
        guard back > 0 else { return }
        state.rendered -= back
        segments.truncate(at: state.rendered)
        marks.push(RenderedMark(kind: .rewind, timelineFrame: 0, outputFrame: state.rendered))
        restoreFadeIn()
        moveMixer(to: segments.timeline(atOutput: state.rendered).frame)
        restoreLevels(of: mixer)
        if state.stretching { speedStage!.restart(speed: state.speed) }
    }

    /// Notes where a mixer block begins and the levels there (`LevelMark`).
    @inline(__always)
    private func noteLevels(_ mark: LevelMark) {
        levelMarks[levelMarkNext] = mark
        levelMarkNext = (levelMarkNext + 1) % levelMarks.count
        levelMarkCount = min(levelMarkCount + 1, levelMarks.count)
    }

    /// After the timeline went back (a rewind to `state.rendered`, or what the stretcher was fed
    /// dropped) to where the mixer now is: the gain ramps and the music's ducking go back to the
    /// levels they had at that frame (the block it fell in is rendered again up to it, towards
    /// the targets of then, into the scratch block), so that the frames rendered anew go on
    /// from there, not from where the taken-back frames had left them. The block is found by
    /// its output frame, or while stretching by its timeline frame (the marks since the latest
    /// jump only: their timeline frames rise).
    private func restoreLevels(of mixer: Mixer) {
        let output = state.rendered
        let wanted = mixer.position
        var newest = -1
        var k = 0
        while k < levelMarkCount {
            let index = (levelMarkNext - 1 - k + levelMarks.count) % levelMarks.count
            if state.stretching ? levelMarks[index].timeline < wanted : levelMarks[index].output < output {
                newest = index
                break
            }
            k += 1
        }
        // Marks at or past the frame gone back to are of frames taken back.
        levelMarkCount -= k
        levelMarkNext = (levelMarkNext - k + levelMarks.count) % levelMarks.count
        guard newest >= 0 else { return }
        let mark = levelMarks[newest]
        let again = min(mark.frames, state.stretching ? wanted - mark.timeline : output - mark.output)
        levelMarks[newest].frames = again
        mixer.seek(to: mark.timeline)
        mixer.restore(mark.levels)
        var done = 0
        while done < again {
            let count = min(again - done, blockFrames)
            // Only the levels matter here: streamed voices are left in their rings.
            mixer.render(into: floatBlock, frameCount: count, towards: mark.levels.targets, streams: false)
            done += count
        }
        if mixer.position != wanted { mixer.seek(to: wanted) }
    }

    /// The earliest output frame a rewind may go back to: past the start mark and past the
    /// latest jump, whose marks (`start`, `seeked`) a rewind to them would void and nothing
    /// would push again, and whose segment the map would lose (the timeline would go back
    /// to before the jump, undoing a seek the caller asked for).
    private var rewindFloor: Int { max(state.startOutput, state.jumpOutput) + 1 }

    /// Applies the fade under way to the block just mixed (`frames` frames of `floatBlock`).
    @inline(__always)
    private func applyFades(frames: Int) {
        guard state.fadeOutLeft > 0 || state.fadeInLeft > 0 else { return }
        let channels = negotiated.channels
        let scale = 1 / Float(fadeFrames)
        for f in 0..<frames {
            let gain: Float
            if state.fadeOutLeft > 0 {
                state.fadeOutLeft -= 1
                gain = Float(state.fadeOutLeft) * scale
            } else if state.fadeInLeft > 0 {
                gain = Float(fadeFrames - state.fadeInLeft + 1) * scale
                state.fadeInLeft -= 1
            } else {
                break
            }
            for c in 0..<channels { floatBlock[f * channels + c] *= gain }
        }
    }

    /// The device's position: of all the frames rendered so far, `delay` are not heard yet at
    /// monotonic time `at`. Report only while the device plays.
    public func report(delay: Int, at time: Int64) {
        let heard = state.rendered - delay
        lastProgress.store(clock.now(), ordering: .releasing)
        let (heardTimeline, speed) = segments.timeline(atOutput: heard)
        state.heardTimeline = heardTimeline
        state.heardOutput = heard
        state.heardAt = time
        let anchor = filter.add(heardFrame: heard, at: time)
        guard filter.settled else { return }
        // The device confirms the clock when this reading agrees with the recent ones (their
        // median): it is still consuming at the pace they showed.
        if let median = filter.lastMedian,
            abs(median.time(ofFrame: heard, rate: negotiated.sampleRate) - time) <= confirmationTolerance
        {
            state.confirmedTime = time
        }
        if !state.timelineRunning {
            // The clock is trustworthy: the timeline starts (or resumes) with the next block.
            state.timelineRunning = true
            state.confirmedTime = time
            if firstDelay.load(ordering: .relaxed) < 0 { firstDelay.store(delay, ordering: .releasing) }
            if state.recovering {
                state.recovering = false
                state.cautiousUntil = time + recoveryCaution
            }
        }
        let margin = time < state.cautiousUntil ? recoveryMargin : 0
        publication.publish(
            anchor: ClockAnchor(frame: anchor.frame, time: anchor.time + margin), readingTime: state.confirmedTime,
            heardTimeline: heardTimeline, heardAt: time, speed: speed)
    }

    /// The device ran dry or was suspended; the output recovers it next. The clock is
    /// forgotten and settles again before the timeline resumes.
    public func interrupted() {
        underruns.add(1, ordering: .releasing)
        forgetClock()
    }

    /// The output let the device go for a long pause (`wantsStandby`): like an interruption,
    /// but on purpose, so no `underrun` is reported.
    public func released() { forgetClock() }

    private func forgetClock() {
        state.heardAt = 0
        filter.reset()
        publication.publish(anchor: nil, readingTime: 0, heardTimeline: state.heardTimeline, heardAt: 0, speed: 0)
        state.timelineRunning = false
        state.recovering = true
        let now = clock.now()
        lastProgress.store(now, ordering: .releasing)
        state.settlingSince = now
    }

    /// The device is gone, or could not be brought back: playback ends with an `error`.
    public func failed(_ failure: DeviceFailure) {
        failureCode.store(failure.errno, ordering: .relaxed)
        end(.failed)
    }

    // MARK: The engine's side

    /// Ends playback for `reason` unless it has ended already; true when this call ended it.
    @discardableResult
    func end(_ reason: FeedExit) -> Bool {
        // The clock publication is the rendering thread's to write: the cue thread reads the
        // exit before any anchor, so none is withdrawn here.
        exit.compareExchange(expected: FeedExit.running.rawValue, desired: reason.rawValue, ordering: .acquiringAndReleasing)
            .exchanged
    }

    var exitReason: FeedExit { FeedExit(rawValue: exit.load(ordering: .acquiring)) ?? .running }

    private func handedOver(_ frames: Int, now: Int64) {
        if state.rendered == 0 { firstRender.store(now, ordering: .releasing) }
        state.rendered += frames
        transportMarkCount = 0
    }

    /// Pushes a mark of the transport (`seeked`, `resumed`, `speed`) and remembers it until
    /// frames are handed over: if the audio it announces must wait for streamed voices, it is
    /// voided and pushed again where that audio begins (`waitForStreams`).
    private func pushTransportMark(_ mark: RenderedMark) {
        marks.push(mark)
        if transportMarkCount < transportMarks.count {
            transportMarks[transportMarkCount] = mark
            transportMarkCount += 1
        }
    }

    /// nil when the mixer's streamed voices hold the audio from its position (after a move,
    /// their feeder refills their rings off this thread). If not, the timeline waits: the
    /// output gets only the silence it needs not to run dry (what it holds is kept at the
    /// rewind margin and 2 ms), so that the audio follows as soon as the rings hold it, not a
    /// buffer of silence later; returns how many frames of silence went into `target` (maybe
    /// none: a hold). The transport marks just pushed (`seeked`, `resumed`, `speed`) are
    /// voided and pushed again, and the fade-in begins, where the audio begins: after the
    /// fade-in, the output is the render from the frame moved to.
    private func waitForStreams(into target: UnsafeMutableRawPointer, frames: Int, now: Int64) -> Int? {
        if mixer.streamsReady() {
            if state.waitingForStreams {
                state.waitingForStreams = false
                for index in 0..<transportMarkCount {
                    var mark = transportMarks[index]
                    mark.outputFrame = state.rendered
                    marks.push(mark)
                }
                // No rewind goes back past where the audio resumes.
                state.jumpOutput = state.rendered
                if state.fadeInLeft == 0 { state.fadeInLeft = fadeFrames }
                state.fadeInOutput = state.rendered
            }
            return nil
        }
        if !state.waitingForStreams {
            state.waitingForStreams = true
            streamFeeder?.wake()
            if transportMarkCount > 0 {
                marks.push(RenderedMark(kind: .rewind, timelineFrame: 0, outputFrame: state.rendered))
            }
        }
        var count = frames
        if state.heardAt > 0 {
            let heardNow = state.heardOutput + max(0, Int((now - state.heardAt) * Int64(negotiated.sampleRate) / 1_000_000_000))
            let keep = output.refillLeadFrames
            count = min(frames, max(0, keep - (state.rendered - heardNow)))
        }
        guard count > 0 else { return 0 }
        target.initializeMemory(as: UInt8.self, repeating: 0, count: count * frameBytes)
        segments.begin(output: state.rendered, timeline: mixer.position, advancing: false)
        if state.rendered == 0 { firstRender.store(now, ordering: .releasing) }
        state.rendered += count
        return count
    }

    /// Marks the cues among the next `count` timeline frames (and frame 0's start) for the cue
    /// thread, each with the output frame it is heard at (`outputFrame(timelineFrame)`);
    /// returns how many frames to render: fewer when the marks' ring is full (the rest go
    /// with a later call).
    private func markCues(upTo count: Int, outputFrame: (Int) -> Int) -> Int {
        let from = mixer.position
        let frames = mixer.cueFrames
        // A few slots stay free for the transport's marks (rewind, pause, seek, resume).
        let reserve = 4
        if from == 0 && !state.startMarked {
            guard marks.free > reserve else { return 0 }
            state.startOutput = outputFrame(0)
            marks.push(RenderedMark(kind: .start, timelineFrame: 0, outputFrame: state.startOutput))
            state.startMarked = true
        }
        var count = count
        while state.cueCursor < frames.count, frames[state.cueCursor] < from + count {
            let frame = frames[state.cueCursor]
            guard marks.free > reserve else {
                count = frame - from
                break
            }
            marks.push(
                RenderedMark(
                    kind: .cue, generation: state.generation, index: state.cueCursor, timelineFrame: frame,
                    outputFrame: outputFrame(frame)))
            state.cueCursor += 1
        }
        if state.cueCursor == frames.count && allMarked.load(ordering: .relaxed) != state.generation {
            allMarked.store(state.generation, ordering: .releasing)
        }
        return count
    }

    /// Takes the offered plan at its frame, asking the output to take back what it has past
    /// it. No allocation: the mixer was built by the offering thread.
    private func adoptPlan() {
        guard let next = offeredMixer else {
            planState.store(0, ordering: .releasing)
            return
        }
        // Not during a pause or its fade (the fade would be cut and the pause's mark voided),
        // nor back past the start or a jump: the plan then switches later (`lateSwitch`).
        let wanted = segments.outputFrame(ofTimeline: offeredFrame, before: state.rendered).map { max($0, rewindFloor) }
        if let wanted, state.rendered > wanted, !state.paused, !fadingOut {
            let back = output.rewind(state.rendered - wanted)
            if back > 0 {
                state.rendered -= back
                segments.truncate(at: state.rendered)
                marks.push(RenderedMark(kind: .rewind, timelineFrame: 0, outputFrame: state.rendered))
                restoreFadeIn()
                // The new plan continues the old one's ramps from the frame it takes over at.
                let at = segments.timeline(atOutput: state.rendered).frame
                mixer.seek(to: at)
                restoreLevels(of: mixer)
            }
        }
        if state.stretching {
            // The stretcher was fed (and the old plan's cues marked) past what is rendered.
            marks.push(RenderedMark(kind: .rewind, timelineFrame: 0, outputFrame: state.rendered))
            speedStage!.restart(speed: state.speed)
        }
        let switched = segments.timeline(atOutput: state.rendered).frame
        next.seek(to: switched, continuing: mixer)
        retiredMixer = mixer
        mixer = next
        state.generation += 1
        state.cueCursor = Self.firstCue(in: next.cueFrames, atOrAfter: switched)
        if switched > offeredFrame {
            // A late switch (the output could not take back enough): the new plan's cues from
            // the frame asked for to the switch were never rendered, yet they happened (an
            // answer's `tap` and `feedback`, its response's `clipStart`). They are marked at
            // the switch, heard with its first frame, instead of being lost.
            var cursor = Self.firstCue(in: next.cueFrames, atOrAfter: offeredFrame)
            while cursor < state.cueCursor && marks.free > 4 {
                marks.push(
                    RenderedMark(
                        kind: .cue, generation: state.generation, index: cursor, timelineFrame: next.cueFrames[cursor],
                        outputFrame: state.rendered))
                cursor += 1
            }
        }
        switchedAt.store(switched, ordering: .relaxed)
        planState.store(2, ordering: .releasing)
    }

    /// The index of the first of `frames` (ascending) at or after `frame`.
    static func firstCue(in frames: UnsafeBufferPointer<Int>, atOrAfter frame: Int) -> Int {
        var low = 0
        var high = frames.count
        while low < high {
            let middle = (low + high) / 2
            if frames[middle] < frame { low = middle + 1 } else { high = middle }
        }
        return low
    }

    @inline(__always)
    private func convert(samples: Int, into target: UnsafeMutableRawPointer) {
        let source = UnsafePointer(floatBlock.baseAddress!)
        switch negotiated.format {
        case .s16:
            SampleConversion.toInt16(source, target.assumingMemoryBound(to: Int16.self), count: samples)
        case .s32:
            SampleConversion.toInt32(source, target.assumingMemoryBound(to: Int32.self), count: samples)
        case .float:
            SampleConversion.toQuantisedFloat(source, target.assumingMemoryBound(to: Float.self), count: samples)
        }
    }
}
