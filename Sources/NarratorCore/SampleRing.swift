import Synchronization

/// A lock-free single-producer, single-consumer ring of samples, allocated once.
///
/// One thread writes (a file reader), one thread reads (the mixer on the real-time thread).
/// Neither side allocates, locks or waits: the consumer takes what is there, the producer
/// fills what is free.
public final class SampleRing: @unchecked Sendable {
    // Sendable: the storage is shared, but the producer only writes slots the consumer has
    // released and the consumer only reads slots the producer has published, ordered by the
    // acquire/release atomics below.
    private let storage: UnsafeMutablePointer<Float>
    /// A power of two, in samples.
    public let capacity: Int
    private let mask: Int
    /// Total samples ever written / read; their difference is what the ring holds.
    private let written = Atomic<Int>(0)
    private let read = Atomic<Int>(0)

    public init(minimumCapacity: Int) {
        var size = 1
        while size < max(minimumCapacity, 2) { size <<= 1 }
        capacity = size
        mask = size - 1
        storage = .allocate(capacity: size)
        storage.initialize(repeating: 0, count: size)
    }

    deinit { storage.deallocate() }

    // MARK: Producer

    /// Samples the producer may write now.
    public var freeCount: Int {
        capacity - (written.load(ordering: .relaxed) - read.load(ordering: .acquiring))
    }

    /// Copies up to `count` samples in; returns how many fitted.
    @discardableResult
    public func write(_ source: UnsafePointer<Float>, count: Int) -> Int {
        let head = written.load(ordering: .relaxed)
        let n = min(count, capacity - (head - read.load(ordering: .acquiring)))
        guard n > 0 else { return 0 }
        let start = head & mask
        let first = min(n, capacity - start)
        (storage + start).update(from: source, count: first)
        if n > first { storage.update(from: source + first, count: n - first) }
        written.store(head + n, ordering: .releasing)
        return n
    }

    // MARK: Consumer

    /// Samples the consumer may read now.
    public var availableCount: Int {
        written.load(ordering: .acquiring) - read.load(ordering: .relaxed)
    }

    /// Calls `body` with the next `count` samples (`count` ≤ `availableCount`) as at most two
    /// contiguous pieces, then releases them to the producer.
    @inline(__always)
    public func consume(_ count: Int, _ body: (UnsafePointer<Float>, _ count: Int, _ offset: Int) -> Void) {
        guard count > 0 else { return }
        let tail = read.load(ordering: .relaxed)
        let start = tail & mask
        let first = min(count, capacity - start)
        body(storage + start, first, 0)
        if count > first { body(storage, count - first, first) }
        read.store(tail + count, ordering: .releasing)
    }

    /// Drops up to `count` samples; returns how many were dropped.
    public func discard(_ count: Int) -> Int {
        let n = min(count, availableCount)
        if n > 0 { read.store(read.load(ordering: .relaxed) + n, ordering: .releasing) }
        return n
    }
}

/// The rings that carry a schedule's streamed voices. Streamed voices that do not overlap in
/// time share a lane, whose ring carries their samples one voice after the other in start
/// order; a chain needs one lane, a music bed under a chain of streamed clips two.
public final class StreamLanes: Sendable {
    /// For each lane, the indices of its voices in the schedule, in start order.
    public let voicesOfLane: [[Int]]
    /// For each voice of the schedule, its lane, or −1 for a voice held in memory.
    public let laneOfVoice: [Int]
    public let rings: [SampleRing]

    /// `ringSeconds` of audio per lane, at the schedule's rate and the widest channel count.
    public init(schedule: Schedule, ringSeconds: Double = 2) {
        var laneEnds: [Int] = []
        var lanes: [[Int]] = []
        var laneOf = [Int](repeating: -1, count: schedule.voices.count)
        var widest = 1
        for (index, voice) in schedule.voices.enumerated() {
            guard case .stream = voice.audio.source else { continue }
            widest = max(widest, voice.audio.channels)
            if let free = laneEnds.firstIndex(where: { $0 <= voice.startFrame }) {
                laneEnds[free] = voice.endFrame
                lanes[free].append(index)
                laneOf[index] = free
            } else {
                laneOf[index] = lanes.count
                laneEnds.append(voice.endFrame)
                lanes.append([index])
            }
        }
        voicesOfLane = lanes
        laneOfVoice = laneOf
        let samples = Int(ringSeconds * Double(schedule.sampleRate)) * widest
        rings = lanes.map { _ in SampleRing(minimumCapacity: samples) }
    }

    public var isEmpty: Bool { rings.isEmpty }
}
