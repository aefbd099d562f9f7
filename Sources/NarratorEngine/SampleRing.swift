import Synchronization

/// A lock-free single-producer, single-consumer ring of samples, allocated once.
///
/// One thread writes (a file reader), one thread reads (the mixer on the real-time thread).
/// Neither side allocates, locks or waits: the consumer takes what is there, the producer
/// fills what is free.
///
/// Moving: the producer never overwrites the last `historyCapacity` samples the consumer
/// read, so the consumer can step back over them (`unread`: a take-back, a rewind of a few
/// blocks). For a longer move it asks the producer to refill from another place
/// (`requestRefill`, a generation number and a timeline frame in one atomic word); the
/// producer repositions its decoder and acknowledges with the sample count where the new
/// place begins (`acknowledge`), and the consumer drops everything before that
/// (`takeRefill`). Neither side waits for the other.
public final class SampleRing: @unchecked Sendable {
    // Sendable: the storage is shared, but the producer only writes slots the consumer has
    // released (and left out of its history) and the consumer only reads slots the producer
    // has published, ordered by the acquire/release atomics below. The consumer's own
    // bookkeeping (`highestRead`, `floor`, `generation`) is touched by the consumer only.
    private let storage: UnsafeMutablePointer<Float>
    /// A power of two, in samples.
    public let capacity: Int
    /// Samples already read that the producer keeps (a quarter of the ring).
    public let historyCapacity: Int
    private let mask: Int
    /// Total samples ever written / read; their difference is what the ring holds.
    private let written = Atomic<Int>(0)
    private let read = Atomic<Int>(0)
    /// The consumer's latest refill request: generation << 40 | frame.
    private let request = Atomic<Int>(0)
    /// The producer's acknowledgement: the generation it refilled for, and the sample count
    /// where that refill's samples begin (stored first).
    private let acknowledgedGeneration = Atomic<Int>(0)
    private let acknowledgedStart = Atomic<Int>(0)

    /// Consumer's: the highest read count ever published (the producer may still be working
    /// from it), the first sample of the current refill, and the latest generation asked for.
    private var highestRead = 0
    private var floor = 0
    private var generation = 0

    private static let frameBits = 40
    private static let frameMask = (1 << frameBits) - 1
    private static let generationMask = (1 << 22) - 1

    public init(minimumCapacity: Int) {
        var size = 1
        while size < max(minimumCapacity, 2) { size <<= 1 }
        capacity = size
        mask = size - 1
        historyCapacity = size / 4
        storage = .allocate(capacity: size)
        storage.initialize(repeating: 0, count: size)
    }

    deinit { storage.deallocate() }

    // MARK: Producer

    /// Samples the producer may write now (the consumer's history is kept).
    public var freeCount: Int {
        max(0, capacity - historyCapacity - (written.load(ordering: .relaxed) - read.load(ordering: .acquiring)))
    }

    /// Copies up to `count` samples in; returns how many fitted.
    @discardableResult
    public func write(_ source: UnsafePointer<Float>, count: Int) -> Int {
        let head = written.load(ordering: .relaxed)
        let n = min(count, freeCount)
        guard n > 0 else { return 0 }
        let start = head & mask
        let first = min(n, capacity - start)
        (storage + start).update(from: source, count: first)
        if n > first { storage.update(from: source + first, count: n - first) }
        written.store(head + n, ordering: .releasing)
        return n
    }

    /// The latest refill the consumer asked for: its generation and timeline frame (0, 0: none).
    public var refillRequest: (generation: Int, frame: Int) {
        let word = request.load(ordering: .acquiring)
        return (word >> Self.frameBits, word & Self.frameMask)
    }

    /// The producer has moved to the place `generation` asked for: what it writes from now on
    /// is from there. Call before writing any of it.
    public func acknowledge(_ generation: Int) {
        acknowledgedStart.store(written.load(ordering: .relaxed), ordering: .relaxed)
        acknowledgedGeneration.store(generation, ordering: .releasing)
    }

    // MARK: Consumer

    /// Samples the consumer may read now.
    public var availableCount: Int {
        written.load(ordering: .acquiring) - read.load(ordering: .relaxed)
    }

    @inline(__always)
    private func publishRead(_ value: Int) {
        read.store(value, ordering: .releasing)
        if value > highestRead { highestRead = value }
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
        publishRead(tail + count)
    }

    /// Drops up to `count` samples; returns how many were dropped.
    public func discard(_ count: Int) -> Int {
        let n = min(count, availableCount)
        if n > 0 { publishRead(read.load(ordering: .relaxed) + n) }
        return n
    }

    /// Steps back over the last `count` samples read, if the ring still holds them (they are
    /// of the current refill and within the history the producer keeps); false otherwise,
    /// and nothing moves.
    public func unread(_ count: Int) -> Bool {
        let tail = read.load(ordering: .relaxed)
        guard count > 0 else { return true }
        guard tail - count >= max(floor, highestRead - historyCapacity) else { return false }
        read.store(tail - count, ordering: .releasing)
        return true
    }

    /// Asks the producer to refill from timeline frame `frame`; what the ring holds is stale
    /// from now on. Returns the request's generation, for `takeRefill`.
    public func requestRefill(from frame: Int) -> Int {
        precondition(frame >= 0 && frame <= Self.frameMask, "frame \(frame) out of range")
        generation = generation & Self.generationMask + 1
        request.store(generation << Self.frameBits | frame, ordering: .releasing)
        return generation
    }

    /// Drops what is stale; true once the producer has acknowledged `generation` (the ring
    /// then starts at the refill's first sample).
    public func takeRefill(_ generation: Int) -> Bool {
        // The write count first: if the acknowledgement is not seen after it, every sample
        // below it was written before the refill began (the producer acknowledges before it
        // writes), so all of them are stale.
        let head = written.load(ordering: .acquiring)
        if acknowledgedGeneration.load(ordering: .acquiring) == generation {
            let start = acknowledgedStart.load(ordering: .relaxed)
            publishRead(start)
            floor = start
            return true
        }
        if head > read.load(ordering: .relaxed) { publishRead(head) }
        return false
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
