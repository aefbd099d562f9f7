import NarratorCore
import Testing

@Suite("Audio clock")
struct AudioClockTests {
    let rate = 48000
    /// Readings every 600 frames of a device that hears frame f at `origin + f / rate`.
    func reading(_ k: Int, origin: Int64, noise: Int64 = 0) -> (frame: Int, time: Int64) {
        let frame = 600 * k
        return (frame, origin + Int64(frame) * 1_000_000_000 / Int64(rate) + noise)
    }

    @Test func settlesOnlyOnceReadingsAgree() {
        let filter = AudioClockFilter(rate: rate)
        // A stream that has not begun to play: the heard frame stands still while time runs.
        for k in 0..<3 {
            _ = filter.add(heardFrame: 60, at: 1_000_000_000 + Int64(k) * 12_500_000)
            #expect(!filter.settled)
        }
        // Then it plays: frame 0 heard at 1.040 s.
        let origin: Int64 = 1_040_000_000
        var anchor = ClockAnchor(frame: 0, time: 0)
        for k in 4..<8 { anchor = filter.add(heardFrame: reading(k, origin: origin).frame, at: reading(k, origin: origin).time) }
        #expect(filter.settled)
        // The stalled readings were dropped: the anchor is exact.
        #expect(anchor.time(ofFrame: 0, rate: rate) == origin)
    }

    @Test func oneWildReadingDoesNotMoveIt() {
        let filter = AudioClockFilter(rate: rate)
        let origin: Int64 = 5_000_000_000
        for k in 0..<9 { _ = filter.add(heardFrame: reading(k, origin: origin).frame, at: reading(k, origin: origin).time) }
        // 30 ms late: the thread was preempted between the delay and the timestamp.
        let wild = reading(9, origin: origin, noise: 30_000_000)
        let anchor = filter.add(heardFrame: wild.frame, at: wild.time)
        #expect(anchor.time(ofFrame: 0, rate: rate) == origin)
        // Noise of ±0.3 ms: the median of nine stays within 0.25 ms.
        let noisy = AudioClockFilter(rate: rate)
        var generator = SeededGenerator(seed: 3)
        var worst: Int64 = 0
        for k in 0..<200 {
            let r = reading(k, origin: origin, noise: Int64.random(in: -300_000...300_000, using: &generator))
            let a = noisy.add(heardFrame: r.frame, at: r.time)
            if k >= 9 { worst = max(worst, abs(a.time(ofFrame: 0, rate: rate) - origin)) }
        }
        #expect(worst < 250_000, "worst \(worst) ns")
    }

    @Test func followsAStepAfterTwoReadings() {
        let filter = AudioClockFilter(rate: rate)
        let origin: Int64 = 5_000_000_000
        for k in 0..<9 { _ = filter.add(heardFrame: reading(k, origin: origin).frame, at: reading(k, origin: origin).time) }
        // The server played 1023 frames of silence: every frame is now heard 21.3 ms later.
        let shifted = origin + 1023 * 1_000_000_000 / 48000
        let first = filter.add(heardFrame: reading(9, origin: shifted).frame, at: reading(9, origin: shifted).time)
        #expect(first.time(ofFrame: 0, rate: rate) == origin, "one reading is not enough")
        let second = filter.add(heardFrame: reading(10, origin: shifted).frame, at: reading(10, origin: shifted).time)
        #expect(second.time(ofFrame: 0, rate: rate) == shifted)
    }

    @Test func followsAStepEarlierOnlyByTheMedian() {
        let filter = AudioClockFilter(rate: rate)
        let origin: Int64 = 5_000_000_000
        for k in 0..<9 { _ = filter.add(heardFrame: reading(k, origin: origin).frame, at: reading(k, origin: origin).time) }
        // Frames now heard 3 ms earlier: following two readings at once could send cues early.
        let earlier = origin - 3_000_000
        var anchors: [Int64] = []
        for k in 9..<16 {
            let r = reading(k, origin: earlier)
            anchors.append(filter.add(heardFrame: r.frame, at: r.time).time(ofFrame: 0, rate: rate))
        }
        #expect(anchors.prefix(4).allSatisfy { $0 == origin }, "\(anchors)")
        #expect(anchors.last == earlier)
    }

    @Test func followsDrift() {
        // A device clock 100 ppm fast against the monotonic clock, for ten minutes.
        let filter = AudioClockFilter(rate: rate)
        var worst = 0.0
        for k in 0..<(10 * 60 * 80) {
            let frame = 600 * k
            let time = Int64((Double(frame) / 48000 * (1 - 100e-6) * 1e9).rounded())
            let anchor = filter.add(heardFrame: frame, at: time)
            if k > 9 { worst = max(worst, abs(Double(anchor.time(ofFrame: frame, rate: rate) - time))) }
        }
        #expect(worst < 10_000, "worst \(worst) ns")
    }

    /// A report that ramps away at 600 ppm for 1.5 s and then steps back, over and over (what
    /// PulseAudio's interpolated latency does at its worst): the anchor stays within a quarter
    /// of the ramp's height of the truth.
    @Test func doesNotFollowAReportThatRampsFasterThanAClockDrifts() {
        let filter = AudioClockFilter(rate: rate)
        let origin: Int64 = 5_000_000_000
        var worst: Int64 = 0
        for k in 0..<8000 {  // 1 ms apart: 8 s
            let frame = 48 * k
            let truth = origin + Int64(frame) * 1_000_000_000 / 48000
            let sinceCorrection = Int64(k % 1500) * 1_000_000
            let reported = truth + Int64(Double(sinceCorrection) * 600e-6)  // up to +0.9 ms
            let anchor = filter.add(heardFrame: frame, at: reported)
            if k > 20 { worst = max(worst, abs(anchor.time(ofFrame: frame, rate: rate) - truth)) }
        }
        #expect(worst < 300_000, "worst \(worst) ns")
    }
}
