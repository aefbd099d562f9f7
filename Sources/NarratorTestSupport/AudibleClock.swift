import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// When each recording frame was heard, fitted from the recorder's read times.
///
/// **What is heard when.** module-pipe-sink with `use_system_clock_for_timing=yes` keeps a
/// timestamp `T`, the start of the time slot of the next byte it will write. When CLOCK_MONOTONIC
/// reaches `T` it wakes, renders the chunk for the slot `[T, T + B)` and writes it at once, so a
/// chunk's first byte reaches the FIFO at about its slot start and frame `o` of the chunk is heard
/// at `T + o / rate`. That is the ground truth this clock models: recording frame `k` is heard at
/// `origin + k × nanosecondsPerFrame`.
///
/// **What the recorder sees.** One line per read: all bytes so far, and the time just after the
/// read returned. The reader is only ever late, so for a read that starts with the first byte
/// of a wake-up's writes, `slotStart(startByte) ≤ readTime`. Not every read is such a read:
///
/// - One wake-up may write more than one chunk (PulseAudio 16's `process_render_use_timing`
///   keeps rendering while `T < now + block` and the chunks come out shorter than the maximum
///   request), and a write longer than the recorder's 4096-byte read is read in two. The bytes
///   after the first read of a wake-up were written up to a block *ahead* of their slot, so
///   those reads would lie a block (~21 ms) below the line. Observed: during `aplay` playback,
///   one wake-up in six wrote 7632 bytes, read as 4096 + 3536 bytes 0.1 ms apart.
/// - Two chunks of one wake-up are two write(2) calls, tens of microseconds apart (the second
///   is rendered in between), and a reader on another core often drains the first before the
///   second arrives: a short read, then the rest ~0.1 ms later, again a block early. Observed
///   in most `aplay` runs: a 3540-byte read, then a 4092-byte one 0.095 ms later, 18 ms early.
///   So the pipe being empty after a short read does not mean the next read starts a wake-up.
/// - So a read is used as a point `(startByte, readTime)` only when it came at least
///   ``freshReadGapNanoseconds`` (1 ms) after the read before it: the reader was blocked on an
///   empty pipe for that long, so the sink had gone back to sleep. Reads of one wake-up follow
///   each other within ~0.1 ms. (A sink block shorter than ~2 ms, i.e. a stream asking for a
///   latency that low, would leave few points.)
///
/// **The fit.** A least-squares line of read time on start frame over those points is refitted
/// three times without the points farther than `max(6 × 1.4826 × MAD, 0.25 ms)` from the median
/// residual: reader stalls (late by milliseconds) and the rare early point the rules above let
/// through (e.g. a reader descheduled between two reads of one wake-up). Then the lower
/// envelope: the two kept points lowest under that line are set aside, so that up to two bogus
/// early points that survived the trimming cannot pull the clock early, and the line is the
/// one under all the other kept points that lies closest to them on average (the edge of their
/// lower convex hull above their mean frame: the linear program "maximise Σ line(xᵢ) subject to
/// line(xᵢ) ≤ tᵢ"). Unlike least squares it rests on the points nearest the envelope only, so a
/// reader whose lateness changes with load cannot tilt it (on synthetic reads late by 0–1 ms,
/// uniformly, least squares missed the slope by up to 2.9 ppm, this by up to 1.6 ppm, and T0 by
/// a few microseconds). The clock is therefore late by the smallest sink-to-reader latency
/// (timer wake-up + pipe read, tens of microseconds), which no recording can reveal.
///
/// **Drift.** The sink's clock is CLOCK_MONOTONIC, but it advances `T` by each chunk's duration
/// in whole microseconds, rounded down: 1024-frame chunks (idle at 48 kHz: 21333.33 µs → 21333)
/// run 15.6 ppm fast, 1023-frame chunks (a stream asking for ~21 ms) 23.5 ppm, and the chunks
/// follow the client's writes: with `aplay --period-time=25000` each wake-up writes its 1200
/// frames as two chunks, 1023 + 177 frames (21312 + 3687 µs for 25 ms: 40 ppm fast). The slope
/// is fitted rather than nominal for that reason (measured: −22.7 ppm over 70 s of idle and
/// default `aplay` playback, whose chunks alternate between 1023 and 884/885 frames; −48 to
/// −64 ppm with 25 ms periods). A recording that switches between chunk sizes for long
/// stretches bends by up to a few ppm × its duration, which ``residualsMs`` shows; over those
/// 70 s the envelope stayed within 0.11 ms of the line. On a 3.5 s recording the fitted slope
/// scatters by ±20 ppm, i.e. ±35 µs at its ends.
public struct AudibleClock: Sendable {
    /// The residuals in milliseconds: read time minus the fitted slot start of the read's first
    /// byte, over every point the fit considered. The typical value is the sink-to-reader
    /// latency; the late tail is the reader's stalls (a loaded machine); negative values are
    /// the bogus early points the fit set aside.
    public struct Residuals: Sendable, CustomStringConvertible {
        /// The smallest (negative when there were bogus early points).
        public let min: Double
        /// The median: the typical sink-to-reader latency.
        public let p50: Double
        /// The 99th percentile (reader stalls show here).
        public let p99: Double
        /// The largest: the worst reader stall.
        public let max: Double
        /// Points considered.
        public let count: Int
        /// Points more than 0.25 ms below the envelope: reads that the rules took for the start
        /// of a wake-up but that were not (e.g. the reader stalled between two reads of one
        /// wake-up's writes), set aside by the fit.
        public let early: Int
        /// One line for test output.
        public var description: String {
            String(format: "p50 %.3f ms, p99 %.3f ms, max %.3f ms over %d reads (%d early, min %.3f ms)",
                   p50, p99, max, count, early, min)
        }
    }

    /// Sample rate.
    public let rate: Int
    /// CLOCK_MONOTONIC nanoseconds at which recording frame 0 was heard.
    public let originNanoseconds: Double
    /// Fitted nanoseconds per frame.
    public let nanosecondsPerFrame: Double
    /// Residual statistics (see ``Residuals``).
    public let residualsMs: Residuals
    /// Reads used as points (those taken to start a fresh wake-up), of ``readCount``.
    public let pointCount: Int
    /// Points the envelope was fitted under (after trimming, less the two lowest set aside).
    public let fittedPointCount: Int
    /// All reads.
    public let readCount: Int

    /// The fitted slope against the nominal `1e9 / rate` ns per frame, in parts per million
    /// (negative: the sink's clock runs fast).
    public var slopePPM: Double { (nanosecondsPerFrame * Double(rate) / 1e9 - 1) * 1e6 }

    /// When (fractional) recording frame `frame` was heard, in CLOCK_MONOTONIC nanoseconds.
    public func nanoseconds(atFrame frame: Double) -> Double { originNanoseconds + frame * nanosecondsPerFrame }

    /// Which (fractional) recording frame was heard at `nanoseconds`.
    public func frame(atNanoseconds nanoseconds: Double) -> Double { (nanoseconds - originNanoseconds) / nanosecondsPerFrame }

    /// A read counts as starting a fresh wake-up of the sink when it came at least this long
    /// after the previous read.
    public static let freshReadGapNanoseconds: UInt64 = 1_000_000

    /// Fits the clock to `reads` (see the type's documentation).
    public init(reads: [Recording.Read], bytesPerFrame: Int, rate: Int) throws {
        self.rate = rate
        readCount = reads.count
        // Points: x = start frame of the read, y = read time, relative to the first read.
        guard let t0 = reads.first?.nanoseconds else {
            throw PulseTestServerError("no reads recorded: cannot fit the audible clock")
        }
        var xs: [Double] = []
        var ys: [Double] = []
        for i in reads.indices.dropFirst() {
            // Read 0 has no read before it (and the recorder's backlog drop may have ended
            // inside a write): it is never a point.
            guard reads[i].nanoseconds - reads[i - 1].nanoseconds >= Self.freshReadGapNanoseconds else { continue }
            xs.append(Double(reads[i - 1].bytes) / Double(bytesPerFrame))
            ys.append(Double(reads[i].nanoseconds - t0))
        }
        guard xs.count >= 2, xs.first != xs.last else {
            throw PulseTestServerError("\(reads.count) reads (\(xs.count) usable) are too few to fit the audible clock")
        }
        pointCount = xs.count

        var keep = [Bool](repeating: true, count: xs.count)
        var (a, slope) = Self.leastSquares(xs, ys, keep)
        for _ in 0..<3 {
            let residuals = xs.indices.map { ys[$0] - (a + slope * xs[$0]) }
            let median = Self.percentile(residuals.sorted(), 50)
            let mad = Self.percentile(residuals.map { abs($0 - median) }.sorted(), 50)
            let tolerance = Swift.max(6 * 1.4826 * mad, 250_000)
            let next = residuals.map { abs($0 - median) <= tolerance }
            guard next.contains(true) else { break }
            keep = next
            (a, slope) = Self.leastSquares(xs, ys, keep)
        }
        // The lower envelope. Set aside the two kept points lowest under the trimmed
        // least-squares line (bogus early points, if any: up to two are harmless), then take the
        // line under all the others that lies closest to them on average: the lower convex hull's
        // edge above their mean x (the linear program "maximise Σ line(x_i) subject to
        // line(x_i) ≤ y_i"). Its error shrinks like 1/n, not 1/√n as least squares' does, and the
        // reader's lateness, which varies with load, cannot tilt it.
        var kept = xs.indices.filter { keep[$0] }.map { (x: xs[$0], r: ys[$0] - (a + slope * xs[$0])) }
        if kept.count > 8 {
            for lowest in kept.indices.sorted(by: { kept[$0].r < kept[$1].r }).prefix(2).sorted(by: >) {
                kept.remove(at: lowest)
            }
        }
        var hull: [(x: Double, r: Double)] = []  // kept is in x order (reads are)
        for point in kept {
            while hull.count >= 2 {
                let o = hull[hull.count - 2], p = hull[hull.count - 1]
                guard (p.x - o.x) * (point.r - o.r) - (p.r - o.r) * (point.x - o.x) <= 0 else { break }
                hull.removeLast()
            }
            hull.append(point)
        }
        let meanX = kept.reduce(0) { $0 + $1.x } / Double(kept.count)
        if let edge = hull.indices.dropLast().first(where: { hull[$0 + 1].x >= meanX }) {
            let p = hull[edge], q = hull[edge + 1]
            let ds = (q.r - p.r) / (q.x - p.x)
            a += p.r - ds * p.x
            slope += ds
        } else if let only = hull.first {
            a += only.r
        }
        fittedPointCount = kept.count
        nanosecondsPerFrame = slope
        originNanoseconds = Double(t0) + a

        let all = xs.indices.map { (ys[$0] - (a + slope * xs[$0])) / 1e6 }.sorted()
        residualsMs = Residuals(
            min: all.first!, p50: Self.percentile(all, 50), p99: Self.percentile(all, 99), max: all.last!,
            count: all.count, early: all.prefix { $0 < -0.25 }.count)
    }

    /// Intercept and slope of the least-squares line through the kept points (centred, so that
    /// nanosecond-sized numbers keep their precision).
    private static func leastSquares(_ xs: [Double], _ ys: [Double], _ keep: [Bool]) -> (Double, Double) {
        var n = 0.0, sx = 0.0, sy = 0.0
        for i in xs.indices where keep[i] {
            n += 1
            sx += xs[i]
            sy += ys[i]
        }
        let mx = sx / n, my = sy / n
        var sxy = 0.0, sxx = 0.0
        for i in xs.indices where keep[i] {
            sxy += (xs[i] - mx) * (ys[i] - my)
            sxx += (xs[i] - mx) * (xs[i] - mx)
        }
        let slope = sxx > 0 ? sxy / sxx : 0
        return (my - slope * mx, slope)
    }

    /// The `p`-th percentile of sorted values (``Percentile``'s nearest rank: a reported
    /// spread, not a checked bound).
    private static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        Percentile.nearestRank(p, sorted: sorted)
    }
}
