import Foundation
import NarratorTestSupport
import Testing

/// The live suites' CPU spinners, read back from the kernel's own view of this process's
/// threads: one per allowed CPU, pinned there, at SCHED_IDLE, and gone once released.
@Suite struct AwakeCPUsTests {
    struct Spinner: Equatable {
        let name: String
        let policy: Int
        let allowedCPUs: String
    }

    /// This process's threads named `awake-cpu…`: their policy (/proc/self/task/T/stat field
    /// 41) and the CPUs they may run on (`Cpus_allowed_list` of /proc/self/task/T/status).
    static func spinners() -> [Spinner] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
            else { return nil }
            let name = String(stat[stat.index(after: open)..<close])
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard name.hasPrefix("awake-cpu"), fields.count > 38, let policy = Int(fields[38]),
                let allowed = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
            else { return nil }
            return Spinner(name: name, policy: policy, allowedCPUs: allowed.split(separator: "\t").last.map(String.init) ?? "")
        }
    }

    @Test func oneIdleSpinnerPinnedToEachCPU() throws {
        // The CPUs this process may run on, as the kernel lists them: "0-1", "0,2-3", …
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let list = try #require(status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") })
        let expected = list.split(separator: "\t").last!.split(separator: ",").flatMap { range -> [Int] in
            let ends = range.split(separator: "-").compactMap { Int($0) }
            return Array(ends[0]...(ends.last ?? ends[0]))
        }
        #expect(Self.spinners().isEmpty)

        let awake = AwakeCPUs()
        #expect(awake.cpus == expected)
        // The threads name and place themselves as they start.
        let deadline = Date().addingTimeInterval(5)
        while Self.spinners().count < expected.count && Date() < deadline { usleep(1_000) }
        let spinners = Self.spinners().sorted { $0.name < $1.name }
        let idle = 5  // SCHED_IDLE in <linux/sched.h>
        #expect(spinners == expected.map { Spinner(name: "awake-cpu\($0)", policy: idle, allowedCPUs: "\($0)") })

        awake.release()
        // release() returns once every spinner has left its loop; the threads then exit.
        let gone = Date().addingTimeInterval(5)
        while !Self.spinners().isEmpty && Date() < gone { usleep(1_000) }
        #expect(Self.spinners().isEmpty, "the spinners still run after release()")
        awake.release()  // idempotent
    }
}
