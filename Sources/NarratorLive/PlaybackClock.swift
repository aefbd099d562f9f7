import Foundation
import NarratorCore
import Synchronization

/// The time the engine keeps: nanoseconds of CLOCK_MONOTONIC on a real output, or of a
/// virtual clock that a test advances (`VirtualClock`). Every wait of the engine's cue thread
/// goes through `sleep(until:)`, so that a virtual clock knows when that thread is idle.
public protocol PlaybackClock: Sendable {
    /// Now, in nanoseconds. Cheap and allocation-free: the audio side calls it.
    func now() -> Int64
    /// Blocks the calling thread until `deadline` has come.
    func sleep(until deadline: Int64)
    /// A thread that keeps time on this clock is about to start (called before it is
    /// created); `leave()` when it has ended. A virtual clock waits for such threads to be
    /// asleep before it moves on.
    func enter()
    func leave()
    /// `sleep(until:)`, returning early once `stopping()` holds and `wake()` is called (a
    /// helper thread that keeps time on the clock, told to stop).
    func sleep(until deadline: Int64, unless stopping: () -> Bool)
    /// Wakes every `sleep(until:unless:)` to look at its condition again.
    func wake()
}

extension PlaybackClock {
    /// On a real clock the sleep is short: it ends at its deadline.
    public func sleep(until deadline: Int64, unless stopping: () -> Bool) {
        if !stopping() { sleep(until: deadline) }
    }

    public func wake() {}
}

/// CLOCK_MONOTONIC, and sleeping on it: `clock_nanosleep` to an absolute deadline where the
/// system has it (Linux), else `nanosleep` for what remains.
public struct SystemClock: PlaybackClock {
    public init() {}

    @inline(__always)
    public func now() -> Int64 { MonotonicClock.now() }

    public func sleep(until deadline: Int64) {
        guard deadline > 0 else { return }
        #if os(Linux) || os(Android) || os(FreeBSD)
            var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &spec, nil) == EINTR {}
        #else
            while true {
                let remaining = deadline - now()
                guard remaining > 0 else { return }
                var spec = timespec(tv_sec: Int(remaining / 1_000_000_000), tv_nsec: Int(remaining % 1_000_000_000))
                if nanosleep(&spec, nil) == 0 { return }
            }
        #endif
    }

    public func enter() {}
    public func leave() {}
}

/// A clock that stands still until it is advanced, like NIOEmbedded's `advanceTime`: the
/// engine's timing logic then runs deterministically and faster than real time.
///
/// `advance(to:)` moves time forward through each sleeping thread's deadline in order: at each,
/// the threads due wake and run until every thread that keeps time on this clock (`enter`) is
/// asleep again with a later deadline, or has left. So when `advance` returns, everything that
/// was due by then has happened, exactly at its deadline.
///
/// For tests and simulations: `sleep` and `advance` take a lock; `now()` does not.
public final class VirtualClock: PlaybackClock, @unchecked Sendable {
    // @unchecked: `state` is guarded by `condition`; `current` is atomic.
    private let current: Atomic<Int64>
    private let condition = NSCondition()
    private var participants = 0
    /// Deadlines of the threads asleep now, by ticket.
    private var sleepers: [Int: Int64] = [:]
    private var nextTicket = 0
    /// How long `advance` waits (real time) for a thread to fall asleep before it decides the
    /// thread is stuck: a test failure, not a hang.
    public var stuckAfter: TimeInterval = 20

    public init(startingAt start: Int64 = 1_000_000_000) {
        current = Atomic(start)
    }

    public func now() -> Int64 { current.load(ordering: .acquiring) }

    public func sleep(until deadline: Int64) {
        condition.lock()
        defer { condition.unlock() }
        guard deadline > current.load(ordering: .relaxed) else { return }
        let ticket = nextTicket
        nextTicket += 1
        sleepers[ticket] = deadline
        condition.broadcast()
        while current.load(ordering: .relaxed) < deadline { condition.wait() }
        sleepers[ticket] = nil
        condition.broadcast()
    }

    public func sleep(until deadline: Int64, unless stopping: () -> Bool) {
        condition.lock()
        defer { condition.unlock() }
        guard deadline > current.load(ordering: .relaxed), !stopping() else { return }
        let ticket = nextTicket
        nextTicket += 1
        sleepers[ticket] = deadline
        condition.broadcast()
        while current.load(ordering: .relaxed) < deadline && !stopping() { condition.wait() }
        sleepers[ticket] = nil
        condition.broadcast()
    }

    public func wake() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    public func enter() {
        condition.lock()
        participants += 1
        condition.unlock()
    }

    public func leave() {
        condition.lock()
        participants -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Moves time to `target` (never back), waking each sleeper at its own deadline in order.
    /// Returns false if a thread did not fall asleep again within `stuckAfter` seconds.
    @discardableResult
    public func advance(to target: Int64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard settle() else { return false }
        while true {
            let now = current.load(ordering: .relaxed)
            guard let next = sleepers.values.min(), next <= target else { break }
            current.store(max(now, next), ordering: .releasing)
            condition.broadcast()
            guard settle() else { return false }
        }
        if target > current.load(ordering: .relaxed) { current.store(target, ordering: .releasing) }
        return true
    }

    /// Moves time `nanoseconds` forward.
    @discardableResult
    public func advance(by nanoseconds: Int64) -> Bool { advance(to: now() + nanoseconds) }

    /// With the lock held: waits until every participant sleeps with a deadline after now.
    private func settle() -> Bool {
        let limit = Date(timeIntervalSinceNow: stuckAfter)
        while true {
            let now = current.load(ordering: .relaxed)
            let waiting = sleepers.values.filter { $0 > now }.count
            if waiting >= participants && sleepers.values.allSatisfy({ $0 > now }) { return true }
            if !condition.wait(until: limit) { return false }
        }
    }
}
