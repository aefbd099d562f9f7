import NIOCore
import NIOWebSocket
import Synchronization

/// An outlet that hands a NIO channel its writes from the thread that delivers the event (a
/// playback's cue thread). Lines for the same event loop are batched, so an event for fifty
/// clients wakes each loop once, not fifty times; the lines of one moment go out in one write
/// (one flush), so a client is woken once per moment however many cues it holds.
struct ChannelOutlet: EventOutlet {
    enum Framing: Sendable {
        /// Raw bytes, the line with its newline (Unix socket).
        case lines
        /// One WebSocket text frame per event, without the newline.
        case webSocket
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
    }

    var backlog: Int { queued.bytes.load(ordering: .relaxed) }

    func send(_ lines: [String]) -> Bool {
        guard channel.isActive else { return true }  // gone: the transport reports it
        let payload: Batch.Payload
        switch framing {
        case .lines:
            var buffer = channel.allocator.buffer(capacity: lines.reduce(0) { $0 + $1.utf8.count })
            for line in lines { buffer.writeString(line) }
            payload = .bytes(buffer)
        case .webSocket:
            payload = .frames(
                lines.map { line in
                    var data = channel.allocator.buffer(capacity: line.utf8.count)
                    data.writeString(line)
                    data.moveWriterIndex(to: data.writerIndex - 1)  // without the newline
                    return WebSocketFrame(fin: true, opcode: .text, data: data)
                })
        }
        batch.add(channel, payload, queued)
        return backlog <= Self.maxBacklog
    }

    func finish() {
        onFinish()
        let channel = channel
        let framing = framing
        // Queued after any batch already on its way, so everything sent is written first.
        channel.eventLoop.execute {
            if framing == .lines { channel.close(mode: .output, promise: nil) }
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
}

/// Writes queued for one event loop, flushed in one task on it.
private final class Batch: Sendable {
    enum Payload: Sendable {
        case bytes(ByteBuffer)
        case frames([WebSocketFrame])

        var size: Int {
            switch self {
            case .bytes(let buffer): buffer.readableBytes
            case .frames(let frames): frames.reduce(0) { $0 + $1.data.readableBytes }
            }
        }
    }

    private let loop: any EventLoop
    private let pending = Mutex<[(channel: any Channel, payload: Payload, backlog: Backlog)]>([])

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

    func add(_ channel: any Channel, _ payload: Payload, _ backlog: Backlog) {
        backlog.bytes.add(payload.size, ordering: .relaxed)
        let first = pending.withLock { pending in
            pending.append((channel, payload, backlog))
            return pending.count == 1
        }
        if first { loop.execute { self.flush() } }
    }

    private func flush() {
        let items = pending.withLock { pending in
            defer { pending.removeAll(keepingCapacity: true) }
            return pending
        }
        var written: [ObjectIdentifier: any Channel] = [:]
        for (channel, payload, backlog) in items {
            let promise = loop.makePromise(of: Void.self)
            let size = payload.size
            promise.futureResult.whenComplete { _ in backlog.bytes.subtract(size, ordering: .relaxed) }
            switch payload {
            case .bytes(let buffer): channel.write(buffer, promise: promise)
            case .frames(let frames):
                for frame in frames.dropLast() { channel.write(frame, promise: nil) }
                channel.write(frames.last!, promise: promise)  // written in order: the last completes them all
            }
            written[ObjectIdentifier(channel)] = channel
        }
        for channel in written.values { channel.flush() }
    }
}
