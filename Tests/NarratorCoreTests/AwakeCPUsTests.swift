import Foundation
import NarratorTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The live suites' CPU spinners, read back from the kernel's own view of this process's
/// threads: one per allowed CPU, pinned there, at SCHED_IDLE, and gone once released. Only the
/// threads of the instance under test are looked at, so a live suite's spinners running at the
/// same time change nothing.
@Suite struct AwakeCPUsTests {
    struct Placement: Equatable {
        let name: String
        let policy: Int
        let allowedCPUs: String
    }

    /// Thread `id` of this process: its name and policy (/proc/self/task/ID/stat, fields 2 and
    /// 41) and the CPUs it may run on (`Cpus_allowed_list` of its status); nil once it has ended.
    static func placement(ofThread id: Int32) -> Placement? {
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(id)/stat", encoding: .utf8),
            let status = try? String(contentsOfFile: "/proc/self/task/\(id)/status", encoding: .utf8),
            let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 38, let policy = Int(fields[38]) else { return nil }
        return Placement(
            name: String(stat[stat.index(after: open)..<close]), policy: policy,
            allowedCPUs: Self.allowedList(status))
    }

    /// The `Cpus_allowed_list` value of a /proc status text: "0-1", "0,2-3", …
    static func allowedList(_ status: String) -> String {
        let line = status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") } ?? ""
        return line.split(separator: "\t").last.map(String.init) ?? ""
    }

    @Test func oneIdleSpinnerPinnedToEachCPU() throws {
        // The CPUs this thread may run on, as the kernel lists them.
        let tid = try String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)
        let expected = Self.allowedList(tid).split(separator: ",").flatMap { range -> [Int] in
            let ends = range.split(separator: "-").compactMap { Int($0) }
            return Array(ends[0]...(ends.last ?? ends[0]))
        }
        #expect(!expected.isEmpty)

        let awake = AwakeCPUs()
        #expect(awake.problems.isEmpty)
        #expect(awake.spinners.map(\.cpu) == expected)
        let idle = 5  // SCHED_IDLE in <linux/sched.h>
        for spinner in awake.spinners {
            #expect(Self.placement(ofThread: spinner.threadID)
                == Placement(name: "awake-cpu\(spinner.cpu)", policy: idle, allowedCPUs: "\(spinner.cpu)"))
        }

        awake.release()
        // release() returns once every spinner has left its loop; the threads then end.
        let deadline = Date().addingTimeInterval(5)
        while awake.spinners.contains(where: { Self.placement(ofThread: $0.threadID) != nil }) && Date() < deadline {
            usleep(1_000)
        }
        #expect(awake.spinners.allSatisfy { Self.placement(ofThread: $0.threadID) == nil }, "a spinner still runs after release()")
        awake.release()  // idempotent
    }
}
