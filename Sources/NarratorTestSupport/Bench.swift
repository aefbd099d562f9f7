import Foundation

/// What the benchmark programs share: lines out at once, a failure, percentiles.
public enum Bench {
    /// A line to stdout at once (a pipe would otherwise hold it until the end).
    public static func report(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    public static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("bench: \(message)\n".utf8))
        exit(1)
    }

    /// "p50 …, p95 …, p99 …, max … (n=…)" of values in milliseconds (``Spread``: nearest rank,
    /// each percentile only when there are enough values for it).
    public static func percentiles(_ values: [Double]) -> String {
        values.isEmpty ? "n/a" : Spread(values).description
    }
}
