import CThreadPlacement
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Keeps every CPU of this machine out of its idle state while timing is measured: one thread
/// per online CPU, pinned to it, at `SCHED_IDLE` (below every normal thread), spinning.
///
/// Why: on the virtual machines these tests run on, a vCPU that has gone idle (HLT) takes
/// milliseconds to run again when a thread on it wakes. Measured with a `SCHED_FIFO` 99 thread
/// per vCPU sleeping 1 ms at a time: with the machine idle it woke more than 1 ms late 370–670
/// times in 20 s, up to 60–80 ms late; with these spinners it did so 0–3 times, at most 2.6 ms.
/// A real device wakes a core in microseconds. Cue delivery is timed by the same wake-ups (the
/// cue thread's, the sound server's, the recorder's), so without the spinners the live tests
/// would measure the hypervisor. `/dev/cpu_dma_latency` does nothing here: the guest has no
/// cpuidle driver, it halts.
///
/// The threads are named `awake-cpuN` (`ps -L` shows them). A spinner gives way at once to any other thread that becomes runnable on its CPU (the
/// scheduler preempts a `SCHED_IDLE` thread on wake-up), so it takes no time from the code
/// under test; it only stands in for the idle loop.
///
/// Set `NARRATOR_IDLE_CPUS=1` in the environment to leave the CPUs alone (to measure the
/// difference).
public final class AwakeCPUs: Sendable {
    /// What the spinners share; they hold it, not the ``AwakeCPUs``, so that `deinit` can stop
    /// them.
    private final class Spin: Sendable {
        let running = Atomic(true)
        let finished = DispatchGroup()
    }

    private let spin = Spin()

    /// The CPUs kept awake, one spinner each: every CPU this process may run on, or none when
    /// `NARRATOR_IDLE_CPUS` is set.
    public let cpus: [Int]

    /// Starts one spinner per CPU this process may run on.
    public init() {
        cpus = ProcessInfo.processInfo.environment["NARRATOR_IDLE_CPUS"] != nil ? [] : Self.allowedCPUs()
        for cpu in cpus {
            spin.finished.enter()
            let spinner = Thread { [spin] in
                defer { spin.finished.leave() }
                _ = narrator_thread_place("awake-cpu\(cpu)", Int32(cpu), 1)
                while spin.running.load(ordering: .relaxed) {}
            }
            spinner.start()
        }
    }

    /// Stops the spinners and waits for them to end. Idempotent; `deinit` calls it.
    public func release() {
        spin.running.store(false, ordering: .relaxed)
        spin.finished.wait()
    }

    deinit { release() }

    /// The CPUs this process may run on.
    public static func allowedCPUs() -> [Int] {
        var allowed = [Int32](repeating: 0, count: 1024)
        let found = Int(narrator_allowed_cpus(&allowed, Int32(allowed.count)))
        return found < 0 ? [] : allowed.prefix(found).map(Int.init)
    }
}

/// How late a thread wakes from a sleep on this machine: one thread per CPU, pinned there at
/// normal priority (as the live tests run `narrator`), sleeping to each next millisecond in
/// turn; each wake-up's lateness is kept. The figure ``AwakeCPUs`` exists for.
public enum WakeUpProbe {
    /// Every wake-up's lateness in milliseconds, over `seconds`, from all CPUs together.
    public static func lateness(seconds: Double) -> [Double] {
        let cpus = AwakeCPUs.allowedCPUs()
        let results = Mutex<[Double]>([])
        let finished = DispatchGroup()
        let wakeUps = Int(seconds * 1000)
        for cpu in cpus {
            finished.enter()
            Thread {
                defer { finished.leave() }
                _ = narrator_thread_place("wake-probe\(cpu)", Int32(cpu), 0)
                var late = [Double](repeating: 0, count: wakeUps)
                var next = monotonicNanoseconds()
                for index in 0..<wakeUps {
                    next += 1_000_000
                    var until = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
                    _ = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nil)
                    let woke = monotonicNanoseconds()
                    late[index] = Double(woke - next) / 1e6
                    next = max(next, woke)  // after a stall, the next sleep is a whole millisecond
                }
                results.withLock { $0 += late }
            }.start()
        }
        finished.wait()
        return results.withLock { $0 }
    }

    private static func monotonicNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
