import Foundation

/// Stalls of the host that a test harness measured itself, kept for the Makefile's retry of the
/// live timing tests (docs/testing.md, "Retries"): a failed try is run again only when this log
/// holds a stall measured during it; any other failure fails `make test` at once.
///
/// The measure is the recorder's own: it timestamps every read of the sink's FIFO, and the lower
/// envelope of those times is the audible clock (``AudibleClock``). A read that comes more than
/// ``residualLimitMs`` after that clock (normally 0.2 ms; 14–40 ms when the shared host stalled)
/// means the machine stopped running the recorder, whatever Narrator did.
public enum HostStalls {
    /// A clock-fit residual above this, in milliseconds, is a stall of the host.
    public static let residualLimitMs = 5.0

    /// Where stalls are written (`NARRATOR_STALL_LOG`, set by `make test`); nil: not kept.
    public static var logPath: String? { ProcessInfo.processInfo.environment["NARRATOR_STALL_LOG"] }

    /// Notes a stall when `clock`'s latest read came more than ``residualLimitMs`` late;
    /// returns whether it did.
    @discardableResult
    public static func check(_ clock: AudibleClock, what: String) -> Bool {
        guard clock.residualsMs.max > residualLimitMs else { return false }
        record("\(what): the recorder's reads came up to \(String(format: "%.1f", clock.residualsMs.max)) ms after the sink's clock "
            + "(limit \(residualLimitMs) ms; \(clock.residualsMs))")
        return true
    }

    /// Appends one line to the log, if one is kept.
    public static func record(_ line: String) {
        guard let logPath else { return }
        let stamp = ISO8601DateFormatter().string(from: Date())
        let data = Data("\(stamp) \(line)\n".utf8)
        let descriptor = open(logPath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        _ = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}
