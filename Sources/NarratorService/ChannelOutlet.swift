import NIOCore
import NIOWebSocket
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
    /// been queued since the last `wake` (a moment being queued).
    private let pending = Mutex<(items: [Item], woken: Bool, queuing: Bool)>(([], false, false))

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
            defer { pending.queuing = true }
            guard !pending.woken, !pending.queuing else { return false }
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
            guard !pending.woken, !pending.items.isEmpty else { return false }
            pending.woken = true
            return true
        }
        if wake { loop.execute { self.drain() } }
    }

    /// Writes what is queued until nothing is, then lets the next `add` wake the loop again.
    private func drain() {
        while true {
            var items: [Item] = []
            pending.withLock { pending in
                swap(&items, &pending.items)
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
