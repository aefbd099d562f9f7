import CThreadPlacement
import Foundation
import NarratorCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Keeps every CPU this process may run on out of its idle state while timing is measured: one
/// thread per CPU, pinned to it, at `SCHED_IDLE` (below every normal thread), spinning.
///
/// Why: on the virtual machines these tests run on, a vCPU that has gone idle (the guest halts
/// it) takes milliseconds to run again when a thread on it wakes; a real device wakes a core in
/// microseconds. ``WakeUpProbe`` measures it and `make bench` prints it (one run: with the CPUs
/// idle, 258 of 20000 wake-ups from a 1 ms sleep came more than 1 ms late, the worst 26 ms late;
/// with them awake, 17, the worst 3.2 ms). Cue delivery rests on the same wake-ups (the cue
/// thread's, the sound server's, the recorder's), so without the spinners the live tests would
/// measure the hypervisor. `/dev/cpu_dma_latency` does nothing here: the guest has no cpuidle
/// driver.
///
/// A spinner runs only when nothing else on its CPU can: the scheduler preempts a `SCHED_IDLE`
/// thread as soon as a normal one wakes there. So it stands in for the idle loop. It does share
/// its physical core with a hyperthread sibling, if the CPU has one, which the `pause` hint in
/// its loop eases.
///
/// `init` returns once every spinner has placed itself (named `awake-cpuN`: `ps -L` shows them).
/// A placement the kernel refused is listed in ``problems``, and that spinner does not run.
/// `NARRATOR_IDLE_CPUS=1` in the environment leaves the CPUs alone, to measure the difference.
public final class AwakeCPUs: Sendable {
    /// A running spinner: its CPU and its kernel thread id (as /proc/self/task lists it).
    public struct Spinner: Sendable, Equatable {
        public let cpu: Int
        public let threadID: Int32
    }

    /// What the spinners share; they hold it, not the ``AwakeCPUs``, so that `deinit` can stop
    /// them.
    private final class Spin: Sendable {
        struct Placement: Sendable {
            let cpu: Int
            let threadID: Int32
            let error: Int32
        }
        let running = Atomic(true)
        let placements = Mutex<[Placement]>([])
        let placed = DispatchGroup()
        let finished = DispatchGroup()
    }

    private let spin = Spin()

    /// The spinners that run, in CPU order.
    public let spinners: [Spinner]
    /// Why a CPU is not kept awake, one line each (empty when every CPU is).
    public let problems: [String]

    /// Starts one spinner per CPU this process may run on, and waits until each has placed
    /// itself.
    public init() {
        guard ProcessInfo.processInfo.environment["NARRATOR_IDLE_CPUS"] == nil else {
            spinners = []
            problems = []
            return
        }
        let cpus: [Int]
        do {
            cpus = try Self.allowedCPUs()
        } catch {
            spinners = []
            problems = ["\(error)"]
            return
        }
        for cpu in cpus {
            spin.placed.enter()
            spin.finished.enter()
            Thread { [spin] in
                defer { spin.finished.leave() }
                let error = narrator_thread_place("awake-cpu\(cpu)", Int32(cpu), 1)
                spin.placements.withLock { $0.append(.init(cpu: cpu, threadID: narrator_thread_id(), error: error)) }
                spin.placed.leave()
                guard error == 0 else { return }
                while spin.running.load(ordering: .relaxed) { narrator_cpu_relax() }
            }.start()
        }
        spin.placed.wait()
        let placements = spin.placements.withLock { $0 }.sorted { $0.cpu < $1.cpu }
        spinners = placements.filter { $0.error == 0 }.map { Spinner(cpu: $0.cpu, threadID: $0.threadID) }
        problems = placements.filter { $0.error != 0 }.map {
            "cannot keep CPU \($0.cpu) awake: \(String(cString: strerror($0.error)))"
        }
    }

    /// Stops the spinners and waits for them to leave their loops. Idempotent; `deinit` calls
    /// it.
    public func release() {
        spin.running.store(false, ordering: .relaxed)
        spin.finished.wait()
    }

    deinit { release() }

    /// Why the CPUs this thread may run on could not be read.
    public struct AffinityError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The CPUs the calling thread may run on (its affinity mask).
    public static func allowedCPUs() throws -> [Int] {
        var allowed = [Int32](repeating: 0, count: 1024)
        let found = Int(narrator_allowed_cpus(&allowed, Int32(allowed.count)))
        guard found >= 0 else {
            throw AffinityError(description: "sched_getaffinity: \(String(cString: strerror(Int32(-found))))")
        }
        return allowed.prefix(found).map(Int.init)
    }
}

/// Load for tests that must hold on a busy machine: `perCPU` threads on each CPU this process
/// may run on, pinned there at normal priority, spinning until `release()` (or `deinit`). Two
/// a CPU make a load average of about 2 × CPUs from this process alone: the live suites' "CPUs
/// loaded" cases (issue 28.3: cues must never be stamped early, whatever the load).
public final class BusyCPUs: Sendable {
    private final class Flag: Sendable { let running = Atomic(true) }
    private let flag = Flag()
    private let finished = DispatchGroup()
    /// Threads spinning.
    public let threads: Int

    public init(perCPU: Int = 2) {
        let cpus = (try? AwakeCPUs.allowedCPUs()) ?? [0]
        var started = 0
        for cpu in cpus {
            for index in 0..<perCPU {
                finished.enter()
                started += 1
                Thread { [flag, finished] in
                    defer { finished.leave() }
                    _ = narrator_thread_place("busy-cpu\(cpu)-\(index)", Int32(cpu), 0)
                    while flag.running.load(ordering: .relaxed) { narrator_cpu_relax() }
                }.start()
            }
        }
        threads = started
    }

    /// Stops the threads and waits for them. Idempotent.
    public func release() {
        flag.running.store(false, ordering: .relaxed)
        finished.wait()
    }

    deinit { release() }
}

/// How late a thread wakes from a sleep on this machine: one thread per CPU, pinned there at
/// normal priority (as the live tests run `narrator`), each sleeping 1 ms from its last wake-up,
/// over and over; each wake-up's lateness is kept. The figure ``AwakeCPUs`` exists for.
public enum WakeUpProbe {
    /// Every wake-up's lateness in milliseconds, over about `seconds`, from all CPUs together
    /// (empty when the CPUs cannot be read).
    public static func lateness(seconds: Double) -> [Double] {
        let cpus = (try? AwakeCPUs.allowedCPUs()) ?? []
        let results = Mutex<[Double]>([])
        let finished = DispatchGroup()
        let wakeUps = Int(seconds * 1000)
        for cpu in cpus {
            finished.enter()
            Thread {
                defer { finished.leave() }
                _ = narrator_thread_place("wake-probe\(cpu)", Int32(cpu), 0)
                var late = [Double](repeating: 0, count: wakeUps)
                for index in 0..<wakeUps {
                    let due = MonotonicClock.now() + 1_000_000
                    var until = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
                    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nil) == EINTR {}
                    late[index] = Double(MonotonicClock.now() - due) / 1e6
                }
                results.withLock { $0 += late }
            }.start()
        }
        finished.wait()
        return results.withLock { $0 }
    }
}
