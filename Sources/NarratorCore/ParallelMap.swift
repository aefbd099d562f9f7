import Dispatch
import Foundation
import Synchronization

/// Batch work over a library (validate, pack) spread over the machine's cores: `transform` of
/// each item, at most `workers` at a time, results in the items' order whatever order they
/// finish in, so the output is the same as a sequential run's.
///
/// `workers` defaults to `ParallelWork.workers`: the cores this process may run on, or the
/// NARRATOR_JOBS environment variable (1 runs everything in order on the calling thread).
public func parallelMap<T: Sendable, R: Sendable>(
    _ items: [T], workers: Int = ParallelWork.workers, _ transform: @Sendable (T) -> R
) -> [R] {
    let workers = max(1, min(items.count, workers))
    if workers == 1 { return items.map(transform) }
    let results = Mutex<[R?]>(Array(repeating: nil, count: items.count))
    let next = Atomic<Int>(0)
    DispatchQueue.concurrentPerform(iterations: workers) { _ in
        while true {
            let index = next.add(1, ordering: .relaxed).oldValue
            if index >= items.count { return }
            let result = transform(items[index])
            results.withLock { $0[index] = result }
        }
    }
    return results.withLock { $0.map { $0! } }
}

public enum ParallelWork {
    /// The most items batch work runs at once: NARRATOR_JOBS when it is a whole number from 1
    /// to 1024, else the cores this process may run on (its CPU affinity: `taskset -c 0` gives 1).
    public static let workers: Int = {
        if let text = ProcessInfo.processInfo.environment["NARRATOR_JOBS"], let jobs = Int(text), (1...1024).contains(jobs) {
            return jobs
        }
        return max(1, ProcessInfo.processInfo.activeProcessorCount)
    }()
}
