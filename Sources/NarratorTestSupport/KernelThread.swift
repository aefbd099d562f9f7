import Foundation

/// A thread as the kernel reports it in /proc: for tests that check how threads are scheduled.
public struct KernelThread: Sendable, Equatable {
    /// The thread's name (`comm`, at most 15 bytes).
    public let name: String
    /// Scheduling policy (`SCHED_OTHER` 0, `SCHED_FIFO` 1, `SCHED_IDLE` 5, …): stat field 41.
    public let policy: Int
    /// Real-time priority (0 outside the real-time policies): stat field 40.
    public let realtimePriority: Int
    /// The CPUs it may run on, as the kernel lists them: "0-1", "0,2-3", …
    public let allowedCPUs: String

    /// Memberwise (what a test expects a thread to be).
    public init(name: String, policy: Int, realtimePriority: Int, allowedCPUs: String) {
        self.name = name
        self.policy = policy
        self.realtimePriority = realtimePriority
        self.allowedCPUs = allowedCPUs
    }

    /// Thread `thread` of process `process` (`"self"` for this one); nil once it has ended.
    public static func read(process: String = "self", thread: String) -> KernelThread? {
        let directory = "/proc/\(process)/task/\(thread)"
        guard let stat = try? String(contentsOfFile: directory + "/stat", encoding: .utf8),
            let status = try? String(contentsOfFile: directory + "/status", encoding: .utf8),
            let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
        else { return nil }
        // The fields after the name start at field 3 (state).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 38, let priority = Int(fields[37]), let policy = Int(fields[38]) else { return nil }
        return KernelThread(
            name: String(stat[stat.index(after: open)..<close]), policy: policy, realtimePriority: priority,
            allowedCPUs: allowedList(status))
    }

    /// Every thread of process `process`.
    public static func all(of process: String = "self") -> [KernelThread] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process)/task")) ?? []
        return tasks.compactMap { read(process: process, thread: $0) }
    }

    /// The `Cpus_allowed_list` value of a /proc status text.
    public static func allowedList(_ status: String) -> String {
        let line = status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") } ?? ""
        return line.split(separator: "\t").last.map(String.init) ?? ""
    }
}
