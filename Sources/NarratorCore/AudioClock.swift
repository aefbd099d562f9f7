#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// When a frame of the timeline is heard: `time + (frame − self.frame) / rate`, with times in
/// nanoseconds of CLOCK_MONOTONIC.
public struct ClockAnchor: Sendable, Equatable {
    public var frame: Int
    public var time: Int64

    public init(frame: Int, time: Int64) {
        self.frame = frame
        self.time = time
    }

    /// The monotonic time at which `target` is heard, at `rate` frames per second.
    @inline(__always)
    public func time(ofFrame target: Int, rate: Int) -> Int64 {
        time + Int64((Double(target - frame) * 1e9 / Double(rate)).rounded())
    }
}

/// Turns the device's noisy readings ("frame F was being heard at time T") into a steady
/// mapping from frames to the monotonic clock.
///
/// Each reading is projected onto the latest reading's frame at the nominal rate; the anchor
/// is the median of the last `window` projections, so one wild reading (a late timestamp, a
/// delay that jumped) does not move it, while a real change of the device's timing moves it
/// after `window / 2 + 1` readings. Drift between the device's clock and the monotonic clock
/// is followed because the window is short (about a tenth of a second).
///
/// A device that has just started (or restarted after a stall: the caller calls `reset()`)
/// reports nonsense at first: a sound server's stream reports a delay while it has not begun
/// to play, so the heard frame stands still while time runs. The filter is `settled` once its
/// last `agreement` readings agree within `tolerance`; the readings before them are dropped
/// then, and the player starts (or resumes) the timeline only from that moment.
///
/// A sound server's latency report is itself interpolated: PulseAudio's drifts by up to several
/// hundred ppm between its corrections (measured against the pipe sink's recording: ramps of
/// 0.2–2 ms over a second and a half, then a step back towards the truth). So when the median
/// moves smoothly the anchor follows no faster than `maxDrift` (a real clock drifts tens of
/// ppm), and when the median moves at once by over `correction` (a correction, or a step) the
/// anchor takes it.
///
/// A step in the device's timing that no error announced (a sound server that underran and
/// played a block of silence) shows as two readings in a row that agree with each other and
/// put every frame over `jump` later than the anchor does: the filter then follows them at
/// once. A step earlier is followed only by the median, so that no cue goes out early on the
/// word of two readings.
///
/// An output whose readings wander (`envelope`: ALSA through a plugin such as PulseAudio's,
/// whose delay is the sound server's interpolated latency, measured early by 0.2–1.3 ms and
/// wandering about ±1.5 ms) gets a conservative anchor besides: never earlier than the latest
/// any reading of the last `envelope` nanoseconds put a frame. Each reading says when frame 0
/// was heard (`time − frame / rate`); the filter keeps the running maximum of that over the
/// window (a monotonic queue: O(1) a reading) and the anchor is moved no earlier than it. On a
/// device whose readings are exact this is the median's own answer; on one whose readings
/// scatter, cues come late by up to the scatter, never before their sound. A device clock
/// faster than the system's by d ppm makes it late by at most d ppm of the window more.
///
/// Used by the real-time thread: fixed storage, no allocation after `init`.
public final class AudioClockFilter {
    public let rate: Int
    public let window: Int
    private let frames: UnsafeMutablePointer<Int>
    private let times: UnsafeMutablePointer<Int64>
    private let scratch: UnsafeMutablePointer<Int64>
    private var count = 0
    private var next = 0
    /// Readings that must agree before the filter is settled, and how closely (nanoseconds).
    public let agreement: Int
    public let tolerance: Int64
    public private(set) var settled = false
    /// A difference from the anchor this large, seen twice in a row, is a step to follow.
    public let jump: Int64 = 2_000_000
    /// How fast the anchor may move for changes smaller than `jump`: 150 ppm, three times what
    /// a sound card's crystal drifts against the system clock.
    public let maxDrift = 150e-6
    /// A move of the median this large from one reading to the next is a correction to take
    /// at once: no clock drifts 50 µs in a millisecond.
    public let correction: Int64 = 50_000
    /// The last anchor returned once settled, and the reading time it was returned at.
    private var output: (anchor: ClockAnchor, time: Int64)?
    /// The median of the readings, before the drift limit: what the device says now.
    public private(set) var lastMedian: ClockAnchor?

    /// How far back the conservative envelope looks, and how much later than the readings
    /// it puts frames until it has that long of them (nil: no envelope).
    public let envelope: (span: Int64, startMargin: Int64)?
    /// When the envelope's first reading came (since the last reset).
    private var envelopeSince: Int64?
    /// The envelope's monotonic queue: readings (their time, and when they put frame 0) whose
    /// frame-0 time is larger than every later one's, oldest first, in a ring.
    private let envelopeTimes: UnsafeMutablePointer<Int64>
    private let envelopeOrigins: UnsafeMutablePointer<Double>
    private let envelopeCapacity: Int
    private var envelopeHead = 0
    private var envelopeCount = 0

    public init(
        rate: Int, window: Int = 9, agreement: Int = 4, tolerance: Int64 = 500_000, envelope: (span: Int64, startMargin: Int64)? = nil
    ) {
        precondition(rate > 0 && agreement > 0 && 2 * agreement <= window)
        self.rate = rate
        self.window = window
        self.agreement = agreement
        self.tolerance = tolerance
        self.envelope = envelope
        frames = .allocate(capacity: window)
        times = .allocate(capacity: window)
        scratch = .allocate(capacity: window)
        // Readings come every millisecond or so; a full queue drops its oldest (a shorter window).
        envelopeCapacity = envelope == nil ? 1 : 4096
        envelopeTimes = .allocate(capacity: envelopeCapacity)
        envelopeOrigins = .allocate(capacity: envelopeCapacity)
    }

    deinit {
        frames.deallocate()
        times.deallocate()
        scratch.deallocate()
        envelopeTimes.deallocate()
        envelopeOrigins.deallocate()
    }

    /// Takes a reading into the envelope and returns the latest time frame 0 was heard by any
    /// reading of the window.
    private func envelopeOrigin(heardFrame: Int, at time: Int64, over span: Int64) -> Double {
        let origin = Double(time) - Double(heardFrame) * 1e9 / Double(rate)
        // Drop from the back what this reading dominates, from the front what left the window.
        while envelopeCount > 0 {
            let last = (envelopeHead + envelopeCount - 1) % envelopeCapacity
            guard envelopeOrigins[last] <= origin else { break }
            envelopeCount -= 1
        }
        if envelopeCount == envelopeCapacity {
            envelopeHead = (envelopeHead + 1) % envelopeCapacity
            envelopeCount -= 1
        }
        let slot = (envelopeHead + envelopeCount) % envelopeCapacity
        envelopeTimes[slot] = time
        envelopeOrigins[slot] = origin
        envelopeCount += 1
        while envelopeCount > 1 && time - envelopeTimes[envelopeHead] > span {
            envelopeHead = (envelopeHead + 1) % envelopeCapacity
            envelopeCount -= 1
        }
        return envelopeOrigins[envelopeHead]
    }

    /// Forgets every reading (after an underrun, a suspend, any stall).
    public func reset() {
        count = 0
        next = 0
        settled = false
        output = nil
        lastMedian = nil
        envelopeHead = 0
        envelopeCount = 0
        envelopeSince = nil
    }

    /// Adds the reading "frame `heardFrame` was being heard at `time`" and returns the anchor
    /// (with an `envelope`, no earlier than the window's latest reading puts it).
    public func add(heardFrame: Int, at time: Int64) -> ClockAnchor {
        let anchor = filtered(heardFrame: heardFrame, at: time)
        guard let envelope, settled else { return anchor }
        let since = envelopeSince ?? time
        envelopeSince = since
        let origin = envelopeOrigin(heardFrame: heardFrame, at: time, over: envelope.span)
        var floor = Int64((origin + Double(anchor.frame) * 1e9 / Double(rate)).rounded(.up))
        // Until the window is full, the readings so far may all lie early.
        if time - since < envelope.span { floor = max(floor, anchor.time + envelope.startMargin) }
        return floor > anchor.time ? ClockAnchor(frame: anchor.frame, time: floor) : anchor
    }

    private func filtered(heardFrame: Int, at time: Int64) -> ClockAnchor {
        let anchor = medianAnchor(heardFrame: heardFrame, at: time)
        defer { lastMedian = anchor }
        guard settled, let (previous, previousTime) = output, let lastMedian else {
            output = settled ? (anchor, time) : nil
            return anchor
        }
        // The median moved at once (a step, or a correction of the report): take it. It
        // moved smoothly (the report ramping): follow no faster than a clock can drift.
        let projected = previous.time(ofFrame: anchor.frame, rate: rate)
        let medianMove = anchor.time - lastMedian.time(ofFrame: anchor.frame, rate: rate)
        if abs(medianMove) > correction || abs(anchor.time - projected) > jump {
            output = (anchor, time)
            return anchor
        }
        let allowed = Int64(Double(time - previousTime) * maxDrift) + 1
        let limited = ClockAnchor(frame: anchor.frame, time: projected + max(-allowed, min(allowed, anchor.time - projected)))
        output = (limited, time)
        return limited
    }

    private func medianAnchor(heardFrame: Int, at time: Int64) -> ClockAnchor {
        frames[next] = heardFrame
        times[next] = time
        next = (next + 1) % window
        count = min(count + 1, window)
        let reference = ClockAnchor(frame: heardFrame, time: time)
        if !settled && count >= agreement {
            var low = Int64.max
            var high = Int64.min
            for back in 1...agreement {
                let i = (next - back + window) % window
                let projected = ClockAnchor(frame: frames[i], time: times[i]).time(ofFrame: heardFrame, rate: rate)
                low = min(low, projected)
                high = max(high, projected)
            }
            if high - low <= tolerance {
                settled = true
                // Keep only the readings that agree.
                for k in 0..<agreement {
                    let i = (next - agreement + k + window) % window
                    scratch[k] = Int64(frames[i])
                    scratch[window - 1 - k] = times[i]
                }
                for k in 0..<agreement {
                    frames[k] = Int(scratch[k])
                    times[k] = scratch[window - 1 - k]
                }
                count = agreement
                next = agreement % window
            }
        }
        for i in 0..<count {
            scratch[i] = ClockAnchor(frame: frames[i], time: times[i]).time(ofFrame: reference.frame, rate: rate)
        }
        // Insertion sort: at most `window` values.
        if count > 1 {
            for i in 1..<count {
                let value = scratch[i]
                var j = i - 1
                while j >= 0 && scratch[j] > value {
                    scratch[j + 1] = scratch[j]
                    j -= 1
                }
                scratch[j + 1] = value
            }
        }
        let median = count % 2 == 1 ? scratch[count / 2] : (scratch[count / 2 - 1] + scratch[count / 2]) / 2
        // A step: the last two readings agree with each other and not with the rest (the sound
        // server underran and played silence without saying so). Follow it now rather than
        // after half a window, during which every cue would be off by the step.
        if settled && count >= 3 {
            let previousIndex = (next - 2 + window) % window
            let previous = ClockAnchor(frame: frames[previousIndex], time: times[previousIndex]).time(ofFrame: heardFrame, rate: rate)
            // Only a step later: a step earlier would send cues before their sound on two
            // readings' word, so it waits for the median like any other change.
            if time - median > jump && previous - median > jump && abs(previous - time) <= tolerance {
                frames[0] = frames[previousIndex]
                times[0] = times[previousIndex]
                frames[1] = heardFrame
                times[1] = time
                count = 2
                next = 2 % window
                return ClockAnchor(frame: heardFrame, time: (previous + time) / 2)
            }
        }
        return ClockAnchor(frame: reference.frame, time: median)
    }
}

/// What the audio thread tells the cue thread, without locks: a seqlock over atomics. The
/// writer (one thread) bumps `sequence` to odd, stores, bumps it to even; a reader retries
/// until it sees the same even sequence before and after.
public final class ClockPublication: Sendable {
    private let sequence = Atomic<UInt64>(0)
    private let anchorFrame = Atomic<Int>(0)
    private let anchorTime = Atomic<Int64>(0)
    private let valid = Atomic<Bool>(false)
    private let readingTime = Atomic<Int64>(0)
    private let heardTimeline = Atomic<Int>(0)
    private let heardAt = Atomic<Int64>(0)
    private let speedBits = Atomic<UInt64>(0)

    public init() {}

    public struct Snapshot: Sendable {
        /// Output frame ↔ time (the device's clock, linear in the frames it plays); nil while no
        /// reading has been taken since the start or the last stall.
        public var anchor: ClockAnchor?
        /// Monotonic time of the latest reading that confirmed the anchor.
        public var readingTime: Int64
        /// The timeline frame being heard at `heardAt` (the latest reading), and how fast the
        /// timeline advances there: timeline frames per output frame (1; another speed
        /// through a time stretcher; 0 while paused or while the clock settles).
        public var heardTimeline: Int
        public var heardAt: Int64
        public var timelineSpeed: Double

        /// The timeline frame heard at `time`, extrapolated from the latest reading no further
        /// than the reading that confirmed the anchor.
        public func timelineFrame(at time: Int64, rate: Int) -> Int {
            guard timelineSpeed > 0 else { return heardTimeline }
            let until = min(time, readingTime)
            let advanced = Double(max(0, until - heardAt)) * Double(rate) / 1e9 * timelineSpeed
            return heardTimeline + Int(min(advanced, Double(Int32.max)))
        }
    }

    /// Writer side (the audio thread).
    public func publish(anchor: ClockAnchor?, readingTime: Int64, heardTimeline: Int, heardAt: Int64, speed: Double) {
        let s = sequence.load(ordering: .relaxed)
        sequence.store(s &+ 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        if let anchor {
            anchorFrame.store(anchor.frame, ordering: .relaxed)
            anchorTime.store(anchor.time, ordering: .relaxed)
        }
        valid.store(anchor != nil, ordering: .relaxed)
        self.readingTime.store(readingTime, ordering: .relaxed)
        self.heardTimeline.store(heardTimeline, ordering: .relaxed)
        self.heardAt.store(heardAt, ordering: .relaxed)
        speedBits.store(speed.bitPattern, ordering: .relaxed)
        sequence.store(s &+ 2, ordering: .releasing)
    }

    /// Reader side (the cue thread).
    public func snapshot() -> Snapshot {
        var spins = 0
        while true {
            let before = sequence.load(ordering: .acquiring)
            if before & 1 == 1 {
                // The writer is mid-publish; if it was preempted there, let it run.
                spins += 1
                if spins % 64 == 0 { sched_yield() }
                continue
            }
            let isValid = valid.load(ordering: .relaxed)
            let frame = anchorFrame.load(ordering: .relaxed)
            let time = anchorTime.load(ordering: .relaxed)
            let reading = readingTime.load(ordering: .relaxed)
            let timeline = heardTimeline.load(ordering: .relaxed)
            let at = heardAt.load(ordering: .relaxed)
            let speed = Double(bitPattern: speedBits.load(ordering: .relaxed))
            atomicMemoryFence(ordering: .acquiring)
            if sequence.load(ordering: .relaxed) == before {
                return Snapshot(
                    anchor: isValid ? ClockAnchor(frame: frame, time: time) : nil, readingTime: reading,
                    heardTimeline: timeline, heardAt: at, timelineSpeed: speed)
            }
        }
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
public enum MonotonicClock {
    public static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
