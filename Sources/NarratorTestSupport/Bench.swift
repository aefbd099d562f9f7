import Foundation

/// What the benchmark programs share: lines out at once, a failure, percentiles.
public enum Bench {
    /// A line to stdout at once (a pipe would otherwise hold it until the end).
    public static func report(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    public static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("bench: \(message)\n".utf8))
        exit(1)
    }

    /// "p50 …, p99 …, max … (n=…)" of values in milliseconds.
    public static func percentiles(_ values: [Double]) -> String {
        guard !values.isEmpty else { return "n/a" }
        let sorted = values.sorted()
        func at(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))] }
        return String(format: "p50 %.3f ms, p99 %.3f ms, max %.3f ms (n=%d)", at(0.5), at(0.99), sorted.last!, sorted.count)
    }
}
