import Foundation
import NarratorAudioFile
import NarratorCore
import Synchronization

/// Plays a schedule through an ALSA device and delivers each cue at the moment its frame is
/// heard.
///
/// Two threads: the audio thread renders with the same `Mixer` as offline rendering, converts
/// and writes periods, and after each write turns the device's report (its delay and the
/// monotonic time of that report) into a frame-to-clock anchor (`AudioClockFilter`), published
/// without locks (`ClockPublication`). It allocates nothing, takes no lock, logs nothing and
/// reads no file: all it needs is allocated in `init`, and long files reach it through the
/// rings a `StreamFeeder` thread fills. The calling thread of `run` delivers cues: it sleeps to
/// each cue's audible time on the current anchor, checks the anchor again on waking, and
/// delivers only on a fresh anchor for a frame already written, so that no cue comes before it
/// is heard, even across an underrun.
public final class LivePlayer: @unchecked Sendable {
    // Sendable: `cancel()` only touches atomics; everything else belongs to `run`'s threads.
    public let schedule: Schedule
    public let output: NegotiatedOutput

    private let pcm: any PCMDevice
    private var mixer: Mixer
    private let feeder: StreamFeeder
    private let clock = ClockPublication()
    private let filter: AudioClockFilter
    private let floatBlock: UnsafeMutableBufferPointer<Float>
    private let deviceBlock: UnsafeMutableRawPointer
    private let silenceBlock: UnsafeMutableRawPointer
    private let frameBytes: Int

    /// Problems of the stream feeder's thread, passed on by the cue thread.
    private let streamProblems = Mutex<[NarratorError]>([])
    private let cancelRequest = Atomic<Bool>(false)
    private let cuesDone = Atomic<Bool>(false)
    /// 0 while playing; then one of `AudioExit`.
    private let audioExit = Atomic<Int>(0)
    private let audioErrorCode = Atomic<Int32>(0)
    private let underruns = Atomic<Int>(0)
    private let firstDelay = Atomic<Int>(-1)
    private let firstWrite = Atomic<Int64>(0)
    private let audioRealtime = Atomic<Bool>(false)
    /// How long the device may take no audio before it counts as lost (under a second, so
    /// that the error comes within one).
    private let stallLimit: Int64 = 900_000_000
    /// How long the device's timing reports may take to agree: two seconds beyond what a slow
    /// device needs (its buffer and a few periods of readings).
    private let settleLimit: Int64
    /// A reading within this of the anchor confirms it; a cue goes out only once a confirming
    /// reading was taken no earlier than `confirmationWindow` before the cue's moment. A device
    /// that stops consuming without a word can therefore make a cue early only if it stopped
    /// within that window before the cue's frame.
    private let confirmationTolerance: Int64 = 1_000_000
    private let confirmationWindow: Int64 = 1_000_000
    /// After a stall the sound server restarts its stream, and its delay reports can run up to
    /// about a millisecond early for a while (seen after SIGSTOP against the recording: cues
    /// 1.8–2.2 ms before heard, at most 1 in 9 runs). For `recoveryCaution` after the clock
    /// settles again, cues are timed `recoveryMargin` later: a little late, never early.
    private let recoveryCaution: Int64 = 1_000_000_000
    private let recoveryMargin: Int64 = 2_000_000
    private let running = Atomic<Bool>(false)
    private let realtime: Bool

    private enum AudioExit: Int {
        /// failed: the device failed (`audioErrorCode` holds its errno); stalled: it took no
        /// audio for `stallLimit`; noClock: its reports never settled.
        case running = 0, finished, canceled, failed, stalled, noClock
    }

    /// Opens the device and prepares everything the audio thread needs.
    /// `realtime` asks for SCHED_FIFO on the audio and cue threads (see `RealtimePriority`).
    public convenience init(
        schedule: Schedule, device: String = "default", latencyMs: Int = 50, realtime: Bool = false
    ) throws(PlaybackError) {
        self.init(
            schedule: schedule,
            pcm: try AlsaPCM(device: device, rate: schedule.sampleRate, channels: schedule.channels, latencyMs: latencyMs),
            realtime: realtime)
    }

    /// Plays on a device of the caller's (tests).
    @_spi(Testing) public init(schedule: Schedule, pcm: any PCMDevice, realtime: Bool = false) {
        self.realtime = realtime
        precondition(pcm.output.sampleRate == schedule.sampleRate && pcm.output.channels == schedule.channels)
        self.schedule = schedule
        self.pcm = pcm
        output = pcm.output
        feeder = StreamFeeder(schedule: schedule)
        mixer = Mixer(schedule: schedule, lanes: feeder.lanes, maxBlockFrames: max(8192, pcm.output.periodFrames))
        filter = AudioClockFilter(rate: schedule.sampleRate)
        let nanosecondsPerFrame = 1e9 / Double(schedule.sampleRate)
        settleLimit =
            2_000_000_000
            + Int64(Double(output.bufferFrames + (filter.agreement + 2) * output.periodFrames) * nanosecondsPerFrame)
        floatBlock = .allocate(capacity: output.periodFrames * output.channels)
        frameBytes = output.channels * output.format.bytesPerSample
        deviceBlock = .allocate(byteCount: output.periodFrames * frameBytes, alignment: 16)
        silenceBlock = .allocate(byteCount: output.periodFrames * frameBytes, alignment: 16)
        silenceBlock.initializeMemory(as: UInt8.self, repeating: 0, count: output.periodFrames * frameBytes)
    }

    deinit {
        floatBlock.deallocate()
        deviceBlock.deallocate()
        silenceBlock.deallocate()
    }

    /// When `run` began, in monotonic nanoseconds: the origin of the events' `t`.
    /// Safe from any thread; 0 before `run`.
    public var startTime: Int64 { startedAt.load(ordering: .acquiring) }
    private let startedAt = Atomic<Int64>(0)

    /// For tests: called on the audio thread just before its loop starts (true) and just after
    /// it ends (false), e.g. to count allocations in between. Set it before `run`.
    @_spi(Testing) public var audioThreadProbe: (@Sendable (Bool) -> Void)?

    /// Stops playback: the device drops what it holds, and `run` ends with `canceled`.
    /// Safe from any thread.
    public func cancel() { cancelRequest.store(true, ordering: .releasing) }

    /// Plays the schedule, calling `onEvent` for each event from this thread, and returns once
    /// the last frame has been heard, or on cancel or a device failure. Exactly one terminal
    /// event comes last: the final `chainEnd` cue, `canceled` or `error`.
    /// What `run` asks, between cues, of a caller that changes the plan while it plays (a live
    /// activity answering taps): given the frame heard now and the frame where a response can
    /// start, a new plan for the whole timeline and the first frame where it differs from the
    /// current one, or nil.
    public typealias Replanner = (_ heard: Int, _ responseFrame: Int) -> (plan: Schedule, differsFrom: Int)?

    /// How far ahead of what is heard a response starts: time to re-plan and hand the plan over.
    public var responseDelayFrames: Int { output.sampleRate * 30 / 1000 }
    /// How close to what is heard the audio can still be changed (taken back with a rewind):
    /// what a sound server has already rendered is beyond recall.
    public var rewindMarginFrames: Int { output.sampleRate * 5 / 1000 }

    public func run(onEvent: (PlaybackEvent) -> Void) -> PlaybackOutcome {
        run(replanner: nil) { events in events.forEach(onEvent) }
    }

    /// Like `run(onEvent:)`, asking `replanner` for a new plan every few milliseconds, and
    /// handing over together the events of one moment: the cues of a frame (a clip's end, the
    /// next one's start and its first word) come in one call, so that a caller forwarding
    /// them (the daemon) can send them in one write.
    public func run(replanner: Replanner?, onEvents: ([PlaybackEvent]) -> Void) -> PlaybackOutcome {
        precondition(!running.exchange(true, ordering: .acquiringAndReleasing), "a LivePlayer plays once")
        let startTime = MonotonicClock.now()
        startedAt.store(startTime, ordering: .releasing)
        feeder.start { [self] problem in
            self.streamProblems.withLock { $0.append(problem) }
        }
        let done = DispatchSemaphore(value: 0)
        let probe = audioThreadProbe
        let audio = Thread { [self] in
            if realtime { audioRealtime.store(RealtimePriority.raise(20) != nil, ordering: .releasing) }
            probe?(true)
            audioLoop()
            probe?(false)
            done.signal()
        }
        audio.name = "narrator-audio"
        audio.qualityOfService = .userInteractive
        audio.start()
        // The cue thread keeps time too, one step below the audio thread.
        let previous = realtime ? RealtimePriority.raise(19) : nil
        defer {
            RealtimePriority.restore(previous)
            cuesDone.store(true, ordering: .releasing)
            // A device stuck in a call (a hung sound server) must not hold the caller: the
            // audio thread keeps what it needs alive and ends on its own.
            if done.wait(timeout: .now() + 0.5) == .success { feeder.stop() }
        }
        return deliverCues(startTime: startTime, replanner: replanner, onEvents: onEvents)
    }

    // MARK: Cue thread

    private func deliverCues(startTime: Int64, replanner: Replanner?, onEvents: ([PlaybackEvent]) -> Void) -> PlaybackOutcome {
        func onEvent(_ event: PlaybackEvent) { onEvents([event]) }
        let rate = schedule.sampleRate
        var started = false
        var underrunsSeen = 0
        var confirmed: (anchor: ClockAnchor, time: Int64)?

        /// The frame being heard at `time`, as far as the clock last confirmed it.
        func heardFrame(at time: Int64) -> Int {
            guard let (anchor, confirmedTime) = confirmed else { return 0 }
            let until = min(time, confirmedTime)
            return max(0, min(schedule.frames, anchor.frame + Int(Double(until - anchor.time) * Double(rate) / 1e9)))
        }

        func checkAudioThread() -> PlaybackOutcome? {
            let now = MonotonicClock.now()
            let count = underruns.load(ordering: .acquiring)
            if count > underrunsSeen {
                underrunsSeen = count
                onEvent(.underrun(count: count, at: now))
            }
            for problem in streamProblems.withLock({ problems in defer { problems = [] }; return problems }) {
                onEvent(.streamProblem(problem, at: now))
            }
            let ending = AudioExit(rawValue: audioExit.load(ordering: .acquiring)) ?? .running
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
                        .deviceLost(device: output.device, code: "ETIMEDOUT", reason: "the device took no audio for a second")
                    case .noClock:
                        .noClock(device: output.device)
                    default:
                        .lost(DeviceFailure(errno: audioErrorCode.load(ordering: .acquiring)), device: output.device)
                    }
                onEvent(.error(error, frame: heardFrame(at: now), at: now))
                return .failed(error)
            }
        }

        var cues = schedule.cues
        var next = 0
        var lastDelivered = -1
        holdFrame.store(nextHold(in: cues, after: -1), ordering: .releasing)
        while next < cues.count {
            if let outcome = checkAudioThread() { return outcome }
            let snapshot = clock.snapshot()
            let now = MonotonicClock.now()
            guard let anchor = snapshot.anchor else {
                sleep(until: now + 1_000_000)
                continue
            }
            if started, let replanner {
                let heard = anchor.frame + Int(Double(now - anchor.time) * Double(rate) / 1e9)
                if let (plan, differs) = replanner(heard, heard + responseDelayFrames),
                    let switched = offer(plan, at: max(heard + rewindMarginFrames, differs))
                {
                    // The plans agree before the switch: go on with the new one's cues after
                    // the last delivered.
                    if switched > max(heard + rewindMarginFrames, differs) {
                        onEvent(.lateSwitch(wanted: max(heard + rewindMarginFrames, differs), switched: switched, at: MonotonicClock.now()))
                    }
                    cues = plan.cues
                    next = cues.firstIndex { $0.frame > lastDelivered } ?? cues.count
                    holdFrame.store(nextHold(in: cues, after: max(lastDelivered, heard)), ordering: .releasing)
                    continue
                }
            }
            confirmed = (anchor, snapshot.readingTime)
            if !started {
                // `start` says when frame 0 is heard: wait until it is, on an anchor that a
                // reading taken no earlier than `confirmationWindow` before then confirms,
                // like a cue's.
                let firstDue = anchor.time(ofFrame: 0, rate: rate)
                if snapshot.framesWritten == 0 || now < firstDue {
                    sleep(until: snapshot.framesWritten == 0 ? now + 1_000_000 : min(firstDue, now + 10_000_000))
                    continue
                }
                if snapshot.readingTime < firstDue - confirmationWindow {
                    sleep(until: now + 250_000)
                    continue
                }
                started = true
                onEvent(
                    .start(
                        StartInfo(
                            output: output, measuredDelayFrames: firstDelay.load(ordering: .acquiring),
                            realtime: audioRealtime.load(ordering: .acquiring),
                            startTime: startTime, firstWriteTime: firstWrite.load(ordering: .acquiring),
                            firstFrameHeardTime: anchor.time(ofFrame: 0, rate: rate))))
            }
            let cue = cues[next]
            if cue.frame >= snapshot.framesWritten {
                // Not written yet: it will be within about the time it takes to play the gap.
                let ahead = anchor.time(ofFrame: cue.frame - output.bufferFrames, rate: rate) - now
                sleep(until: now + max(1_000_000, min(ahead, replanner == nil ? 10_000_000 : 1_000_000)))
                continue
            }
            let due = anchor.time(ofFrame: cue.frame, rate: rate)
            if now < due {
                // Wake at the deadline, or sooner to notice a cancel, a moved anchor or (every
                // millisecond when the plan can change) a tap.
                sleep(until: min(due, now + (replanner == nil ? 10_000_000 : 1_000_000)))
                continue
            }
            if snapshot.readingTime < due - confirmationWindow {
                // No reading has confirmed the clock since shortly before this cue's moment:
                // the device may have stopped consuming (a stalled sound server), so the cue
                // waits for the next reading (the audio thread takes one every millisecond)
                // rather than go out on an old promise.
                sleep(until: now + 250_000)
                continue
            }
            // This cue and every later one already due (and as well confirmed) go out
            // together, stamped alike.
            var last = next
            while last + 1 < cues.count, cues[last + 1].frame < snapshot.framesWritten {
                let laterDue = anchor.time(ofFrame: cues[last + 1].frame, rate: rate)
                guard laterDue <= now, snapshot.readingTime >= laterDue - confirmationWindow else { break }
                last += 1
            }
            var moment: [PlaybackEvent] = []
            for index in next...last {
                if index > next, audioExit.load(ordering: .acquiring) == AudioExit.canceled.rawValue { break }
                moment.append(.cue(cues[index], at: anchor.time(ofFrame: cues[index].frame, rate: rate), delivered: now))
                lastDelivered = max(lastDelivered, cues[index].frame)
                next = index + 1
            }
            onEvents(moment)
            if lastDelivered >= holdFrame.load(ordering: .relaxed) {
                holdFrame.store(nextHold(in: cues, after: lastDelivered), ordering: .releasing)
            }
        }
        return .finished
    }

    // MARK: Changing the plan while it plays

    /// Cue types before which the audio thread holds back (e.g. an activity's `idlePrompt`):
    /// it writes nothing at or past such a cue's frame until that frame is within
    /// `holdMarginFrames` of being heard, so that a tap heard until then can still change
    /// what plays there without anything having to be taken back. Set before `run`.
    public var holdBefore: Set<TraceKind> = []
    /// How close to being heard a held frame gets before it is written: the device must not
    /// run dry meanwhile.
    public var holdMarginFrames: Int { output.sampleRate * 10 / 1000 }
    private let holdFrame = Atomic<Int>(Int.max)

    /// The next frame to hold before, after `frame`, in `cues`.
    private func nextHold(in cues: [Cue], after frame: Int) -> Int {
        guard !holdBefore.isEmpty else { return Int.max }
        return cues.first { $0.frame > frame && $0.traceKind.map(holdBefore.contains) == true }?.frame ?? Int.max
    }

    /// 0: nothing offered; 1: `offeredMixer` waits for the audio thread; 2: it took it.
    private let planState = Atomic<Int>(0)
    private var offeredMixer: Mixer?
    private var offeredFrame = 0
    private var retiredMixer: Mixer?
    private let switchedAt = Atomic<Int>(-1)

    /// Hands `plan` to the audio thread to take over at `frame` (taking back what it wrote past
    /// it); returns the frame it took over at, or nil if the audio thread did not answer.
    private func offer(_ plan: Schedule, at frame: Int) -> Int? {
        offeredMixer = Mixer(schedule: plan, maxBlockFrames: max(8192, output.periodFrames))
        offeredFrame = frame
        planState.store(1, ordering: .releasing)
        let deadline = MonotonicClock.now() + 200_000_000
        while planState.load(ordering: .acquiring) != 2 {
            if MonotonicClock.now() > deadline || audioExit.load(ordering: .acquiring) != 0 { return nil }
            sleep(until: MonotonicClock.now() + 200_000)
        }
        let switched = switchedAt.load(ordering: .acquiring)
        // The old plan is released here, not on the audio thread.
        retiredMixer = nil
        offeredMixer = nil
        planState.store(0, ordering: .releasing)
        return switched
    }

    /// Audio thread: takes the offered plan at its frame, rewinding the device to it when it
    /// has written further. No allocation: the mixer was built by the offering thread.
    private func adoptPlan() {
        guard let next = offeredMixer else { return }
        var written = loop.deviceWritten - loop.inserted
        if written > offeredFrame {
            let back = pcm.rewind(written - offeredFrame)
            if back > 0 {
                loop.deviceWritten -= back
                written -= back
            }
        }
        next.seek(to: written, continuing: mixer)
        retiredMixer = mixer
        mixer = next
        loop.pendingFrom = loop.pendingTo
        switchedAt.store(written, ordering: .relaxed)
        planState.store(2, ordering: .releasing)
    }

    private func sleep(until deadline: Int64) {
        var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil) == EINTR {}
    }

    // MARK: Audio thread (real time: nothing below allocates, locks, logs or reads a file)

    /// The audio thread's own state. A stored property rather than locals captured by nested
    /// functions, which a debug build would box on the heap.
    private struct LoopState {
        /// Frames handed to the device, and how many of them were silence inserted while the
        /// clock settled (at the start and after each stall): timeline frame = device frame −
        /// `inserted`.
        var deviceWritten = 0
        var inserted = 0
        var timelineRunning = false
        /// The part of `deviceBlock` not yet written.
        var pendingFrom = 0
        var pendingTo = 0
        var lastProgress: Int64 = 0
        /// When the clock last began to settle: a device whose reports never agree (ALSA's
        /// `null` device takes audio as fast as it comes) cannot time cues.
        var settlingSince: Int64 = 0
        /// The latest reading that agreed with the anchor.
        var confirmedTime: Int64 = 0
        var anchor = ClockAnchor(frame: 0, time: 0)
        /// The timeline frame being heard, as of the latest reading.
        var heardTimeline = 0
        /// Until when cues are timed `recoveryMargin` later (after a stall), 0 when not.
        var cautiousUntil: Int64 = 0
        var recovering = false
    }

    private var loop = LoopState()

    private func audioLoop() {
        let periodFrames = output.periodFrames
        let channels = output.channels
        loop.lastProgress = MonotonicClock.now()
        loop.settlingSince = loop.lastProgress
        while true {
            if cancelRequest.load(ordering: .acquiring) { return exitLoop(.canceled) }
            if cuesDone.load(ordering: .acquiring) { return exitLoop(.finished) }
            if planState.load(ordering: .acquiring) == 1 { adoptPlan() }
            let result: Result<Int, DeviceFailure>
            if loop.timelineRunning {
                if loop.pendingFrom == loop.pendingTo {
                    let hold = holdFrame.load(ordering: .acquiring)
                    var frames = periodFrames
                    if mixer.position < hold {
                        frames = min(frames, hold - mixer.position)
                    } else if hold != Int.max && loop.heardTimeline < hold - holdMarginFrames {
                        // Held: wait for the frame to come close before writing it.
                        if case .failure(let failure) = pcm.wait(timeoutMs: 1) {
                            if let fatal = recovered(failure) { return exitLoop(.failed, failure: fatal) }
                            continue
                        }
                        takeReading()
                        loop.lastProgress = MonotonicClock.now()
                        continue
                    }
                    // Past the schedule's end the mixer renders silence: the device keeps
                    // running (and reporting its clock) until the last cue has been delivered.
                    mixer.render(into: floatBlock, frameCount: frames)
                    convert(frames: frames * channels)
                    loop.pendingFrom = 0
                    loop.pendingTo = frames
                }
                result = pcm.write(deviceBlock + loop.pendingFrom * frameBytes, frames: loop.pendingTo - loop.pendingFrom)
            } else {
                // The clock has not settled: silence, while the timeline waits where it is.
                result = pcm.write(silenceBlock, frames: periodFrames)
            }
            let now = MonotonicClock.now()
            if !loop.timelineRunning && now - loop.settlingSince > settleLimit { return exitLoop(.noClock) }
            switch result {
            case .success(let result) where result > 0:
                if loop.deviceWritten == 0 { firstWrite.store(now, ordering: .releasing) }
                loop.deviceWritten += result
                if loop.timelineRunning { loop.pendingFrom += result } else { loop.inserted += result }
                loop.lastProgress = now
                takeReading()
            case .success, .failure(.wouldBlock):
                if now - loop.lastProgress > stallLimit { return exitLoop(.stalled) }
                // Short waits, with a reading after each: the clock is confirmed every
                // millisecond, and a device that stops consuming is noticed.
                if case .failure(let failure) = pcm.wait(timeoutMs: 1) {
                    if let fatal = recovered(failure) { return exitLoop(.failed, failure: fatal) }
                    continue
                }
                takeReading()
            case .failure(let failure):
                if let fatal = recovered(failure) { return exitLoop(.failed, failure: fatal) }
            }
        }
    }

    private func exitLoop(_ reason: AudioExit, failure: DeviceFailure? = nil) {
        // Tell the cue thread first: dropping can block on a hung sound server.
        clock.publish(anchor: nil, framesWritten: max(0, loop.deviceWritten - loop.inserted), readingTime: 0)
        audioErrorCode.store(failure?.errno ?? 0, ordering: .relaxed)
        audioExit.store(reason.rawValue, ordering: .releasing)
        pcm.drop()
    }

    /// Reads the device's clock: updates the anchor, starts the timeline once it has settled,
    /// and publishes what the cue thread may rely on.
    private func takeReading() {
        guard let reading = pcm.read(), reading.running else { return }
        let heard = loop.deviceWritten - reading.delay
        loop.heardTimeline = heard - loop.inserted
        loop.anchor = filter.add(heardFrame: heard, at: reading.time)
        guard filter.settled else { return }
        // The device confirms the clock when this reading agrees with the recent ones (their
        // median): it is still consuming at the pace they showed.
        if let median = filter.lastMedian,
            abs(median.time(ofFrame: heard, rate: output.sampleRate) - reading.time) <= confirmationTolerance
        {
            loop.confirmedTime = reading.time
        }
        if !loop.timelineRunning {
            // The clock is trustworthy: the timeline starts (or resumes) with the next block.
            loop.timelineRunning = true
            loop.confirmedTime = reading.time
            if firstDelay.load(ordering: .relaxed) < 0 { firstDelay.store(reading.delay, ordering: .releasing) }
            if loop.recovering {
                loop.recovering = false
                loop.cautiousUntil = reading.time + recoveryCaution
            }
        }
        let margin = reading.time < loop.cautiousUntil ? recoveryMargin : 0
        clock.publish(
            anchor: ClockAnchor(frame: loop.anchor.frame - loop.inserted, time: loop.anchor.time + margin),
            framesWritten: max(0, loop.deviceWritten - loop.inserted), readingTime: loop.confirmedTime)
    }

    /// nil when the device recovered from `failure`; else the failure that ends playback.
    private func recovered(_ failure: DeviceFailure) -> DeviceFailure? {
        if let fatal = recover(failure, written: loop.deviceWritten - loop.inserted) { return fatal }
        loop.timelineRunning = false
        loop.recovering = true
        loop.lastProgress = MonotonicClock.now()
        loop.settlingSince = loop.lastProgress
        return nil
    }

    /// Underrun or suspend: recover and forget the clock, which must settle again before the
    /// timeline resumes. nil when it did; else the failure that ends playback: `failure` itself for a
    /// failure that is not an underrun or suspend, or why recovery failed (a sound server that
    /// died says so there: the underrun was only how its death first showed).
    private func recover(_ failure: DeviceFailure, written: Int) -> DeviceFailure? {
        guard failure.recoverable else { return failure }
        underruns.add(1, ordering: .releasing)
        filter.reset()
        clock.publish(anchor: nil, framesWritten: max(0, written), readingTime: 0)
        return pcm.recover(failure)
    }

    @inline(__always)
    private func convert(frames samples: Int) {
        let source = UnsafePointer(floatBlock.baseAddress!)
        switch output.format {
        case .s16:
            SampleConversion.toInt16(source, deviceBlock.assumingMemoryBound(to: Int16.self), count: samples)
        case .s32:
            SampleConversion.toInt32(source, deviceBlock.assumingMemoryBound(to: Int32.self), count: samples)
        case .float:
            SampleConversion.toQuantisedFloat(source, deviceBlock.assumingMemoryBound(to: Float.self), count: samples)
        }
    }
}
