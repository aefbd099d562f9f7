import NIOCore
import NIOWebSocket
import NarratorCore
import Synchronization

/// An outlet that hands a NIO channel its writes from the thread that delivers the event (a
/// playback's cue thread). That thread only queues: lines for the same event loop are batched.
/// The first line queued after a `flush` wakes the loop, which writes to the first clients
/// while the cue thread is still queuing for the rest; `flush` wakes it once more if it has
/// emptied the queue meanwhile. So an event for fifty clients wakes each loop once or twice,
/// not fifty times. The loop encodes each client's lines as it writes them. The lines of one
/// moment go out in one buffer and one write (one syscall), so a client is woken once per
/// moment however many cues it holds, on either transport.
struct ChannelOutlet: EventOutlet {
    enum Framing: Sendable {
        /// Raw bytes, each line with its newline (Unix socket).
        case lines
        /// One WebSocket text frame per line, without the newline, the frames of one moment
        /// encoded together and written by the connection's guard (`WebSocketGuard.writeEvents`).
        case webSocket(NIOLoopBound<WebSocketGuard>)
    }

    /// Unwritten events a client may leave before it is dropped (it has stopped reading).
    static let maxBacklog = 4 << 20

    let channel: any Channel
    let framing: Framing
    /// Called on `finish`, before the channel is closed: the transport's own way to end
    /// (a WebSocket close handshake); the channel is closed regardless a second later.
    let onFinish: @Sendable () -> Void
    private let queued = Backlog()
    private let batch: Batch

    init(channel: any Channel, framing: Framing, onFinish: @escaping @Sendable () -> Void = {}) {
        self.channel = channel
        self.framing = framing
        self.onFinish = onFinish
        batch = Batch.on(channel.eventLoop)
        // Closed: whoever waits for the client to read waits no more.
        channel.closeFuture.whenComplete { [queued] _ in queued.drained(force: true) }
    }

    var backlog: Int { queued.bytes.load(ordering: .relaxed) }

    func whenDrained(below threshold: Int, _ action: @escaping @Sendable () -> Void) {
        queued.whenDrained(below: threshold, action)
    }

    func send(_ lines: EventLines) -> Bool {
        guard channel.isActive else { return true }  // gone: the transport reports it
        batch.add(Batch.Item(channel: channel, framing: framing, lines: lines, size: lines.byteCount, backlog: queued))
        return backlog <= Self.maxBacklog
    }

    func flush() { batch.wake() }

    func expect(at time: Int64, _ wakeAhead: WakeAhead) { batch.expect(at: time, wakeAhead) }

    /// Moments this outlet's loop woke ahead for: met (their lines came while it spun) and
    /// missed (they never came, or came after its grace).
    var wakeAheads: (met: Int, missed: Int) { (batch.met.load(ordering: .relaxed), batch.missed.load(ordering: .relaxed)) }

    func finish() {
        onFinish()
        let channel = channel
        let framing = framing
        // Queued after the drain that `flush` scheduled or that is writing (it writes until the
        // queue is empty), so everything sent and flushed is written first.
        channel.eventLoop.execute {
            if case .lines = framing { channel.close(mode: .output, promise: nil) }
            channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
        }
    }

    func closed() async {
        let channel = channel
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await channel.closeFuture.get() }
            group.addTask { try? await Task.sleep(for: .seconds(3)) }
            await group.next()
            group.cancelAll()
        }
    }
}

/// Bytes handed to an outlet and not yet written by its channel.
final class Backlog: Sendable {
    let bytes = Atomic<Int>(0)
    /// Who waits for the backlog to fall to a threshold (`whenDrained`).
    private let waiter = Mutex<(threshold: Int, action: @Sendable () -> Void)?>(nil)

    func whenDrained(below threshold: Int, _ action: @escaping @Sendable () -> Void) {
        waiter.withLock { $0 = (threshold, action) }
        drained()
    }

    /// Bytes written (or failed): calls the waiter when the backlog is down to its threshold.
    func subtract(_ size: Int) {
        bytes.subtract(size, ordering: .relaxed)
        drained()
    }

    func drained(force: Bool = false) {
        let action: (@Sendable () -> Void)? = waiter.withLock { waiter in
            guard let waiting = waiter, force || bytes.load(ordering: .relaxed) <= waiting.threshold else { return nil }
            waiter = nil
            return waiting.action
        }
        action?()
    }
}

/// Writes queued for one event loop, encoded and flushed in one task on it.
private final class Batch: Sendable {
    struct Item: Sendable {
        let channel: any Channel
        let framing: ChannelOutlet.Framing
        let lines: EventLines
        /// The lines' bytes, counted in the outlet's backlog until written.
        let size: Int
        let backlog: Backlog
    }

    private let loop: any EventLoop
    /// Items queued; whether a task is on its way to the loop or writing; whether items have
    /// been queued since the last `wake` (a moment being queued); whether the loop is spinning
    /// for a moment it expects (`meet`), and will take what comes; the moments it is to be
    /// awake for (`expect`).
    private let pending = Mutex<(items: [Item], woken: Bool, queuing: Bool, spinning: Bool, expected: [Int64])>(([], false, false, false, []))
    /// Whether `items` holds anything: what the loop watches while it spins, without the lock
    /// the cue thread takes to queue.
    private let queued = Atomic<Bool>(false)
    /// Moments met: how many the loop was spinning for when their first lines came (or found
    /// them queued), and how many it gave up on (taken back, or later than `grace`).
    let met = Atomic<Int>(0)
    let missed = Atomic<Int>(0)

    private init(loop: any EventLoop) { self.loop = loop }

    private static let batches = Mutex<[ObjectIdentifier: Batch]>([:])

    /// The batch of `loop` (one per event loop, made on first use).
    static func on(_ loop: any EventLoop) -> Batch {
        batches.withLock { batches in
            if let batch = batches[ObjectIdentifier(loop)] { return batch }
            let batch = Batch(loop: loop)
            batches[ObjectIdentifier(loop)] = batch
            return batch
        }
    }

    /// Queues an item. The first after a `wake` wakes the loop (unless it is on its way or
    /// writing already): the loop starts writing while the rest of the moment is queued. The
    /// others do not, so a loop that keeps emptying the queue is not woken once per client.
    func add(_ item: Item) {
        item.backlog.bytes.add(item.size, ordering: .relaxed)
        let wake = pending.withLock { pending in
            pending.items.append(item)
            queued.store(true, ordering: .releasing)
            defer { pending.queuing = true }
            guard !pending.woken, !pending.queuing, !pending.spinning else { return false }
            pending.woken = true
            return true
        }
        if wake { loop.execute { self.drain() } }
    }

    /// Every item of a moment is queued: has the loop write what is left, unless a task on its
    /// way or writing will.
    func wake() {
        let wake = pending.withLock { pending in
            pending.queuing = false
            guard !pending.woken, !pending.spinning, !pending.items.isEmpty else { return false }
            pending.woken = true
            return true
        }
        if wake { loop.execute { self.drain() } }
    }

    /// A moment is announced for `time`: the loop wakes `wakeAhead.wake` before it (so that it
    /// is not woken late from idle by the moment's first lines), sleeps again until
    /// `wakeAhead.spin` before it, and then spins until the moment's lines are queued or
    /// `wakeAhead.grace` after it (`meet`). Moments within `spin` of one already expected
    /// share its wake-up. Nothing is handed ahead: the lines are queued by the cue thread when
    /// they are heard, as always, so none can be written earlier, and a moment taken back
    /// (paused, seeked past, stopped) only costs the loop its spin.
    func expect(at time: Int64, _ wakeAhead: WakeAhead) {
        let now = MonotonicClock.now()
        guard time > now else { return }
        let expecting = pending.withLock { pending in
            // (Each entry is removed by its `meet`; one whose task never ran, a loop shutting
            // down, is forgotten a second later.)
            pending.expected.removeAll { $0 < now - 1_000_000_000 }
            guard pending.expected.count < WakeAhead.maxExpected, !pending.expected.contains(where: { abs($0 - time) <= wakeAhead.spin }) else { return false }
            pending.expected.append(time)
            return true
        }
        guard expecting else { return }
        loop.scheduleTask(in: .nanoseconds(max(0, time - wakeAhead.wake - now))) {
            let now = MonotonicClock.now()
            // Awake: asleep again until the spin, unless that is already near.
            if time - wakeAhead.spin - now > WakeAhead.minimumSleep {
                self.loop.scheduleTask(in: .nanoseconds(time - wakeAhead.spin - now)) { self.meet(time, wakeAhead) }
            } else {
                self.meet(time, wakeAhead)
            }
        }
    }

    /// Spins on the loop until the moment due at `time` is queued (then writes it at once), or
    /// until `wakeAhead.grace` after it.
    private func meet(_ time: Int64, _ wakeAhead: WakeAhead) {
        pending.withLock { $0.spinning = true }
        let giveUp = time + wakeAhead.grace
        while !queued.load(ordering: .acquiring), MonotonicClock.now() < giveUp {}
        let (arrived, take) = pending.withLock { pending in
            pending.spinning = false
            if let index = pending.expected.firstIndex(of: time) { pending.expected.remove(at: index) }
            guard !pending.items.isEmpty else { return (false, false) }
            guard !pending.woken else { return (true, false) }
            pending.woken = true
            return (true, true)
        }
        if arrived { met.add(1, ordering: .relaxed) } else { missed.add(1, ordering: .relaxed) }
        if take { drain() }
    }

    /// Writes what is queued until nothing is, then lets the next `add` wake the loop again.
    private func drain() {
        while true {
            var items: [Item] = []
            pending.withLock { pending in
                swap(&items, &pending.items)
                queued.store(false, ordering: .relaxed)
                if items.isEmpty { pending.woken = false }
            }
            if items.isEmpty { return }
            write(items)
        }
    }

    /// Writes items, each channel flushed as soon as its lines are written: the first client's
    /// syscall does not wait for the other clients' encoding.
    private func write(_ items: [Item]) {
        for index in items.indices {
            let item = items[index]
            let promise = loop.makePromise(of: Void.self)
            promise.futureResult.whenComplete { [size = item.size, backlog = item.backlog] _ in
                backlog.subtract(size)
            }
            write(item, promise: promise)
            // Items of one channel come in order; it is flushed after its last one in a row
            // (twice only when a second moment was queued before this pass took them).
            if index + 1 == items.count || items[index + 1].channel !== item.channel {
                switch item.framing {
                case .lines: item.channel.flush()
                case .webSocket(let guardian): guardian.value.flushEvents()
                }
            }
        }
    }

    /// Encodes the item's lines into one buffer and writes it: the lines as they are (with
    /// newlines), or one WebSocket text frame each (without the newlines, RFC 6455 §5.2: FIN,
    /// opcode 1, unmasked, the shortest length form), headers and payloads back to back.
    private func write(_ item: Item, promise: EventLoopPromise<Void>) {
        let lines = item.lines
        switch item.framing {
        case .lines:
            var buffer = item.channel.allocator.buffer(capacity: item.size)
            for body in lines.bodies {
                buffer.writeString(lines.head)
                buffer.writeString(body)
                buffer.writeInteger(UInt8(ascii: "\n"))
            }
            item.channel.write(buffer, promise: promise)
        case .webSocket(let guardian):
            guard !lines.bodies.isEmpty else { return promise.succeed() }
            // At most 10 bytes of header a frame (2 + 8) instead of the newline's 1.
            var buffer = item.channel.allocator.buffer(capacity: item.size + 9 * lines.bodies.count)
            let head = lines.head.utf8.count
            for body in lines.bodies {
                buffer.writeWebSocketTextHeader(length: head + body.utf8.count)
                buffer.writeString(lines.head)
                buffer.writeString(body)
            }
            guardian.value.writeEvents(buffer, promise: promise)
        }
    }
}

/// How the event loops are woken ahead of a moment (`NarratorService.Configuration.wakeAhead`,
/// `serve --wake-ahead`). A loop that sleeps until a moment's first lines wake it is woken by
/// another thread, and from an idle CPU that takes a millisecond or more on some machines
/// (a virtual CPU stays halted until its host runs it); a thread's own timer is kept far
/// better. So a loop is woken by its own timer `wake` before the moment, sleeps again until
/// `spin` before it, and spins until the cue thread queues the moment's lines, at most until
/// `grace` after it: at most `spin + grace` of busy CPU a moment, none between moments.
public struct WakeAhead: Sendable, Equatable {
    /// How long before the moment the loop first wakes (ns).
    public var wake: Int64
    /// How long before the moment it starts to spin (ns).
    public var spin: Int64
    /// How long after the moment it spins at most, waiting for the cue thread, which delivers
    /// a moment a little after its time (ns).
    public var grace: Int64

    public static let defaultWake: Int64 = 1_000_000
    public static let maxWake: Int64 = 20_000_000
    /// Moments a loop is to be awake for at once, at most (several playbacks).
    static let maxExpected = 64
    /// A second sleep shorter than this is spun instead.
    static let minimumSleep: Int64 = 20_000

    public init(wake: Int64 = WakeAhead.defaultWake, spin: Int64 = 100_000, grace: Int64 = 400_000) {
        self.wake = max(wake, spin)
        self.spin = spin
        self.grace = grace
    }
}

extension ByteBuffer {
    /// The header of an unmasked, unfragmented text frame whose payload is `length` bytes
    /// (RFC 6455 §5.2).
    mutating func writeWebSocketTextHeader(length: Int) {
        writeInteger(UInt8(0x81))  // FIN, text
        switch length {
        case ...125:
            writeInteger(UInt8(length))
        case ...0xFFFF:
            writeInteger(UInt8(126))
            writeInteger(UInt16(length))
        default:
            writeInteger(UInt8(127))
            writeInteger(UInt64(length))
        }
    }
}
