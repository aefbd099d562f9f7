import Foundation
import NarratorAudioFile
import NarratorCore
import Synchronization

/// What live playback reports, in order, from the thread that called `LivePlayer.run`.
public enum PlaybackEvent: Sendable {
    /// Playback began: what the device agreed to and its measured output delay.
    case start(StartInfo)
    /// A cue of the schedule, delivered when its frame is heard. For `chainEnd`, when the
    /// chain's last frame has been heard.
    case cue(Cue, at: Int64)
    /// The device ran dry (or was suspended) and recovered; the timeline goes on where it was.
    case underrun(count: Int, at: Int64)
    /// A streamed file could not be read; its voice plays silence.
    case streamProblem(NarratorError, at: Int64)
    /// Terminal: `cancel()` was called. `frame` is the frame being heard then.
    case canceled(frame: Int, at: Int64)
    /// Terminal: the device failed.
    case error(PlaybackError, frame: Int, at: Int64)

    /// True for the event that ends playback: the last `chainEnd`, `canceled` or `error`.
    public var isTerminalKind: Bool {
        switch self {
        case .canceled, .error: true
        default: false
        }
    }
}

public struct StartInfo: Sendable {
    public var output: NegotiatedOutput
    /// Frames between writing a frame and hearing it, as the device reported at the start.
    public var measuredDelayFrames: Int
    /// Whether the audio thread runs with real-time priority (SCHED_FIFO).
    public var realtime: Bool
    /// When playback began (the origin of event times `t`), and when its first frame was
    /// handed to the device, in monotonic nanoseconds.
    public var startTime: Int64
    public var firstWriteTime: Int64
}

/// How a `run` ended.
public enum PlaybackOutcome: Sendable, Equatable {
    case finished
    case canceled
    case failed(PlaybackError)
}

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
    private let mixer: Mixer
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
    /// How long the device may take no audio before it counts as lost.
    private let stallLimit: Int64 = 1_000_000_000
    /// How long the device's timing reports may take to agree.
    private let settleLimit: Int64 = 2_000_000_000

    private enum AudioExit: Int {
        case running = 0, finished, canceled, failed
    }

    /// Opens the device and prepares everything the audio thread needs.
    public convenience init(schedule: Schedule, device: String = "default", latencyMs: Int = 50) throws(PlaybackError) {
        self.init(
            schedule: schedule,
            pcm: try AlsaPCM(device: device, rate: schedule.sampleRate, channels: schedule.channels, latencyMs: latencyMs))
    }

    /// Plays on a device of the caller's (tests).
    @_spi(Testing) public init(schedule: Schedule, pcm: any PCMDevice) {
        precondition(pcm.output.sampleRate == schedule.sampleRate && pcm.output.channels == schedule.channels)
        self.schedule = schedule
        self.pcm = pcm
        output = pcm.output
        feeder = StreamFeeder(schedule: schedule)
        mixer = Mixer(schedule: schedule, lanes: feeder.lanes)
        filter = AudioClockFilter(rate: schedule.sampleRate)
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
    public private(set) var startTime: Int64 = 0

    /// For tests: called on the audio thread just before its loop starts (true) and just after
    /// it ends (false), e.g. to count allocations in between. Set it before `run`.
    @_spi(Testing) public var audioThreadProbe: (@Sendable (Bool) -> Void)?

    /// Stops playback: the device drops what it holds, and `run` ends with `canceled`.
    /// Safe from any thread.
    public func cancel() { cancelRequest.store(true, ordering: .releasing) }

    /// Plays the schedule, calling `onEvent` for each event from this thread, and returns once
    /// the last frame has been heard, or on cancel or a device failure. Exactly one terminal
    /// event comes last: the final `chainEnd` cue, `canceled` or `error`.
    public func run(onEvent: (PlaybackEvent) -> Void) -> PlaybackOutcome {
        let startTime = MonotonicClock.now()
        self.startTime = startTime
        feeder.start { [self] problem in
            self.streamProblems.withLock { $0.append(problem) }
        }
        let done = DispatchSemaphore(value: 0)
        let probe = audioThreadProbe
        let audio = Thread { [self] in
            audioRealtime.store(RealtimePriority.raise(20) != nil, ordering: .releasing)
            probe?(true)
            audioLoop()
            probe?(false)
            done.signal()
        }
        audio.name = "narrator-audio"
        audio.qualityOfService = .userInteractive
        audio.start()
        // The cue thread keeps time too, one step below the audio thread.
        let previous = RealtimePriority.raise(19)
        defer {
            RealtimePriority.restore(previous)
            cuesDone.store(true, ordering: .releasing)
            done.wait()
            feeder.stop()
        }
        return deliverCues(startTime: startTime, onEvent: onEvent)
    }

    // MARK: Cue thread

    private func deliverCues(startTime: Int64, onEvent: (PlaybackEvent) -> Void) -> PlaybackOutcome {
        let rate = schedule.sampleRate
        let periodNs = Int64(output.periodFrames) * 1_000_000_000 / Int64(rate)
        // A reading older than this is not trusted: the audio thread reads after every period.
        let staleLimit = 3 * periodNs + 5_000_000
        var started = false
        var underrunsSeen = 0
        var lastAnchor: ClockAnchor?

        func heardFrame(at time: Int64) -> Int {
            guard let anchor = lastAnchor else { return 0 }
            return max(0, min(schedule.frames, anchor.frame + Int(Double(time - anchor.time) * Double(rate) / 1e9)))
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
            switch AudioExit(rawValue: audioExit.load(ordering: .acquiring)) ?? .running {
            case .running, .finished:
                return nil
            case .canceled:
                onEvent(.canceled(frame: heardFrame(at: now), at: now))
                return .canceled
            case .failed:
                let code = audioErrorCode.load(ordering: .acquiring)
                let error: PlaybackError =
                    switch code {
                    case -ETIMEDOUT:
                        .deviceLost(device: output.device, code: "ETIMEDOUT", reason: "the device took no audio for over a second")
                    case -ETIME:
                        .noClock(device: output.device)
                    default:
                        .deviceLost(device: output.device, code: PlaybackError.errnoName(code), reason: String(cString: strerror(-code)))
                    }
                onEvent(.error(error, frame: heardFrame(at: now), at: now))
                return .failed(error)
            }
        }

        let cues = schedule.cues
        var next = 0
        while next < cues.count {
            if let outcome = checkAudioThread() { return outcome }
            let snapshot = clock.snapshot()
            let now = MonotonicClock.now()
            guard let anchor = snapshot.anchor else {
                sleep(until: now + 1_000_000)
                continue
            }
            lastAnchor = anchor
            if !started {
                started = true
                onEvent(
                    .start(
                        StartInfo(
                            output: output, measuredDelayFrames: firstDelay.load(ordering: .acquiring),
                            realtime: audioRealtime.load(ordering: .acquiring),
                            startTime: startTime, firstWriteTime: firstWrite.load(ordering: .acquiring))))
            }
            let cue = cues[next]
            if cue.frame >= snapshot.framesWritten || now - snapshot.readingTime > staleLimit {
                // Not written yet, or the clock has not been confirmed lately (a stall):
                // wait for the audio thread.
                sleep(until: now + 1_000_000)
                continue
            }
            let due = anchor.time(ofFrame: cue.frame, rate: rate)
            if now < due {
                // Wake at the deadline, or sooner to notice a cancel or a moved anchor.
                sleep(until: min(due, now + 10_000_000))
                continue
            }
            // This cue and every later one already due go out together, stamped alike.
            var last = next
            while last + 1 < cues.count, cues[last + 1].frame < snapshot.framesWritten,
                anchor.time(ofFrame: cues[last + 1].frame, rate: rate) <= now
            {
                last += 1
            }
            for index in next...last { onEvent(.cue(cues[index], at: now)) }
            next = last + 1
        }
        return .finished
    }

    private func sleep(until deadline: Int64) {
        var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil) == EINTR {}
    }

    // MARK: Audio thread (real time: nothing below allocates, locks, logs or reads a file)

    private func audioLoop() {
        let periodFrames = output.periodFrames
        let channels = output.channels
        // Frames handed to the device, and how many of them were silence inserted while the
        // clock settled (at the start and after each stall): timeline frame = device frame −
        // `inserted`.
        var deviceWritten = 0
        var inserted = 0
        var timelineRunning = false
        var pendingFrom = 0
        var pendingTo = 0
        var lastProgress = MonotonicClock.now()
        // When the clock last began to settle: a device whose reports never agree (ALSA's
        // `null` device takes audio as fast as it comes) cannot time cues.
        var settlingSince = lastProgress

        func exit(_ reason: AudioExit, code: Int32 = 0) {
            pcm.drop()
            audioErrorCode.store(code, ordering: .relaxed)
            audioExit.store(reason.rawValue, ordering: .releasing)
        }

        while true {
            if cancelRequest.load(ordering: .acquiring) { return exit(.canceled) }
            if cuesDone.load(ordering: .acquiring) { return exit(.finished) }
            let result: Int
            if timelineRunning {
                if pendingFrom == pendingTo {
                    // Past the schedule's end the mixer renders silence: the device keeps
                    // running (and reporting its clock) until the last cue has been delivered.
                    mixer.render(into: floatBlock, frameCount: periodFrames)
                    convert(frames: periodFrames * channels)
                    pendingFrom = 0
                    pendingTo = periodFrames
                }
                result = pcm.write(deviceBlock + pendingFrom * frameBytes, frames: pendingTo - pendingFrom)
            } else {
                // The clock has not settled: silence, while the timeline waits where it is.
                result = pcm.write(silenceBlock, frames: periodFrames)
            }
            let now = MonotonicClock.now()
            if !timelineRunning && now - settlingSince > settleLimit { return exit(.failed, code: -ETIME) }
            if result > 0 {
                if deviceWritten == 0 { firstWrite.store(now, ordering: .releasing) }
                deviceWritten += result
                if timelineRunning { pendingFrom += result } else { inserted += result }
                lastProgress = now
            } else if result == -Int(EAGAIN) || result == 0 {
                if now - lastProgress > stallLimit { return exit(.failed, code: -ETIMEDOUT) }
                let waited = pcm.wait(timeoutMs: 100)
                if waited < 0 {
                    guard recover(waited, written: deviceWritten - inserted) else { return exit(.failed, code: waited) }
                    timelineRunning = false
                    settlingSince = MonotonicClock.now()
                }
                continue
            } else {
                guard recover(Int32(result), written: deviceWritten - inserted) else {
                    return exit(.failed, code: Int32(result))
                }
                timelineRunning = false
                lastProgress = MonotonicClock.now()
                settlingSince = lastProgress
                continue
            }
            guard let reading = pcm.read(), reading.running else { continue }
            let anchor = filter.add(heardFrame: deviceWritten - reading.delay, at: reading.time)
            guard filter.settled else { continue }
            if !timelineRunning {
                // The clock is trustworthy: the timeline starts (or resumes) with the next block.
                timelineRunning = true
                if firstDelay.load(ordering: .relaxed) < 0 { firstDelay.store(reading.delay, ordering: .releasing) }
            }
            clock.publish(
                anchor: ClockAnchor(frame: anchor.frame - inserted, time: anchor.time),
                framesWritten: max(0, deviceWritten - inserted), readingTime: reading.time)
        }
    }

    /// Underrun or suspend: recover and forget the clock, which must settle again before the
    /// timeline resumes. False for any other failure (the device is lost).
    private func recover(_ code: Int32, written: Int) -> Bool {
        guard code == -EPIPE || code == -ESTRPIPE else { return false }
        underruns.add(1, ordering: .releasing)
        filter.reset()
        clock.publish(anchor: nil, framesWritten: max(0, written), readingTime: 0)
        return pcm.recover(code) == 0
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
