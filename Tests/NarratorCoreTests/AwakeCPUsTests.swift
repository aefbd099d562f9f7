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
    @Test func oneIdleSpinnerPinnedToEachCPU() throws {
        // The CPUs this thread may run on, as the kernel lists them.
        let status = try String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)
        let expected = KernelThread.allowedList(status).split(separator: ",").flatMap { range -> [Int] in
            let ends = range.split(separator: "-").compactMap { Int($0) }
            return Array(ends[0]...(ends.last ?? ends[0]))
        }
        #expect(!expected.isEmpty)

        let awake = AwakeCPUs()
        #expect(awake.problems.isEmpty)
        #expect(awake.spinners.map(\.cpu) == expected)
        let idle = 5  // SCHED_IDLE in <linux/sched.h>
        for spinner in awake.spinners {
            #expect(KernelThread.read(thread: "\(spinner.threadID)")
                == KernelThread(name: "awake-cpu\(spinner.cpu)", policy: idle, realtimePriority: 0, allowedCPUs: "\(spinner.cpu)"))
        }

        awake.release()
        // release() returns once every spinner has left its loop; the threads then end.
        func running() -> Bool { awake.spinners.contains { KernelThread.read(thread: "\($0.threadID)") != nil } }
        let deadline = Date().addingTimeInterval(5)
        while running() && Date() < deadline { usleep(1_000) }
        #expect(!running(), "a spinner still runs after release()")
        awake.release()  // idempotent
    }
}
