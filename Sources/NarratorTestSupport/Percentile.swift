import Foundation

/// Percentiles, one definition for every test and benchmark: **nearest rank**. The p-th
/// percentile of n values is the value at 1-based rank ⌈p/100 · n⌉ of the values sorted
/// ascending: always one of the values, never interpolated, and never below the share p of them.
///
/// **Minimum count.** With fewer than ⌈100 / (100 − p)⌉ values that rank is n: the "p99" of 45
/// values is their maximum, and the "p95" of 19 values is too. Such a percentile says nothing
/// the maximum does not, so ``Percentile/of(_:_:)`` refuses it (throws ``TooFewValues``): a test
/// with fewer values checks the maximum, and says so. p99 needs 100 values, p95 20, p50 2.
public enum Percentile {
    /// The fewest values for which the p-th percentile (0 < p < 100) is not simply the maximum.
    public static func minimumCount(_ p: Double) -> Int {
        precondition(p > 0 && p < 100, "a percentile is between 0 and 100 exclusive: \(p)")
        return Int((100 / (100 - p)).rounded(.up))
    }

    /// The nearest-rank p-th percentile of `values` (any order).
    public static func of(_ p: Double, _ values: [Double]) throws -> Double {
        guard values.count >= minimumCount(p) else {
            throw TooFewValues(p: p, count: values.count, needed: minimumCount(p))
        }
        return nearestRank(p, sorted: values.sorted())
    }

    /// The nearest-rank p-th percentile of values already sorted ascending, whatever their count
    /// (0 < p ≤ 100): for code that reports a spread (a clock fit's residuals) rather than checks
    /// a bound; a check uses ``of(_:_:)``.
    public static func nearestRank(_ p: Double, sorted: [Double]) -> Double {
        precondition(!sorted.isEmpty, "no values")
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }

    public struct TooFewValues: Error, CustomStringConvertible {
        public let p: Double
        public let count: Int
        public let needed: Int
        public var description: String {
            "a p\(p.formatted) of \(count) values is their maximum (nearest rank needs \(needed)): check the maximum instead"
        }
    }
}

/// The spread of a set of errors or latencies, in milliseconds, by ``Percentile``'s definition:
/// p50, p95 and p99 only where there are enough values for them (nil otherwise), and the maximum.
public struct Spread: Sendable, CustomStringConvertible {
    public let count: Int
    public let p50: Double
    public let p95: Double?
    public let p99: Double?
    public let max: Double

    /// The spread of `values` (none: every figure NaN, and ``exceeds(p99:max:)`` fails).
    public init(_ values: [Double]) {
        let sorted = values.sorted()
        count = sorted.count
        guard !sorted.isEmpty else {
            (p50, p95, p99, max) = (.nan, nil, nil, .nan)
            return
        }
        p50 = Percentile.nearestRank(50, sorted: sorted)
        p95 = sorted.count >= Percentile.minimumCount(95) ? Percentile.nearestRank(95, sorted: sorted) : nil
        p99 = sorted.count >= Percentile.minimumCount(99) ? Percentile.nearestRank(99, sorted: sorted) : nil
        max = sorted.last!
    }

    /// The spread of nanosecond errors as milliseconds of their magnitude.
    public init(absoluteNanoseconds errors: [Int64]) {
        self.init(errors.map { abs(Double($0) / 1e6) })
    }

    /// The p99 bound `p99` and the bound on the maximum `max`, checked as far as the count
    /// allows: with 100 values or more, p99 ≤ `p99` and max ≤ `max`; with fewer, where a p99 is
    /// the maximum, every value ≤ `p99`. nil when met, else what failed.
    public func exceeds(p99 bound: Double, max maxBound: Double) -> String? {
        if count == 0 { return "no values" }
        if let p99 {
            if p99 > bound { return "p99 \(p99) ms > \(bound) ms (\(self))" }
        } else if max > bound {
            return "\(count) values (too few for a p99): max \(max) ms > \(bound) ms (\(self))"
        }
        return max > maxBound ? "max \(max) ms > \(maxBound) ms (\(self))" : nil
    }

    public var description: String {
        var text = String(format: "p50 %.3f ms", p50)
        if let p95 { text += String(format: ", p95 %.3f ms", p95) }
        if let p99 { text += String(format: ", p99 %.3f ms", p99) }
        return text + String(format: ", max %.3f ms (n=%d)", max, count)
    }
}

extension Double {
    fileprivate var formatted: String { self == rounded() ? String(Int(self)) : String(self) }
}
