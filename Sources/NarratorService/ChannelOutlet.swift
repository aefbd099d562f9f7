import NIOCore
import NIOWebSocket
import Synchronization

/// An outlet that writes straight to a NIO channel from the thread that delivers the event
/// (a playback's cue thread): no task hop on the way out. Lines for the same event loop are
/// batched, so an event for fifty clients wakes each loop once, not fifty times.
struct ChannelOutlet: EventOutlet {
    enum Framing: Sendable {
        /// Raw bytes, the line with its newline (Unix socket).
        case lines
        /// One WebSocket text frame per event, without the newline.
        case webSocket
    }

    let channel: any Channel
    let framing: Framing
    /// Called once the daemon is done with the client.
    let onFinish: @Sendable () -> Void

    func send(_ line: String) -> Bool {
        guard channel.isActive else { return true }  // gone: the transport reports it
        let payload: Batch.Payload =
            switch framing {
            case .lines: .bytes(ByteBuffer(string: line))
            case .webSocket: .frame(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: String(line.dropLast()))))
            }
        Batch.on(channel.eventLoop).add(channel, payload)
        // Over the high water mark: the client has stopped reading.
        return channel.isWritable
    }

    func finish() { onFinish() }
}

/// Writes queued for one event loop, flushed in one task on it.
private final class Batch: Sendable {
    enum Payload: Sendable {
        case bytes(ByteBuffer)
        case frame(WebSocketFrame)
    }

    private let loop: any EventLoop
    private let pending = Mutex<[(channel: any Channel, payload: Payload)]>([])

    private init(loop: any EventLoop) { self.loop = loop }

    private static let batches = Mutex<[ObjectIdentifier: Batch]>([:])

    static func on(_ loop: any EventLoop) -> Batch {
        batches.withLock { batches in
            if let batch = batches[ObjectIdentifier(loop)] { return batch }
            let batch = Batch(loop: loop)
            batches[ObjectIdentifier(loop)] = batch
            return batch
        }
    }

    func add(_ channel: any Channel, _ payload: Payload) {
        let first = pending.withLock { pending in
            pending.append((channel, payload))
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
        for (channel, payload) in items {
            switch payload {
            case .bytes(let buffer): channel.write(buffer, promise: nil)
            case .frame(let frame): channel.write(frame, promise: nil)
            }
            written[ObjectIdentifier(channel)] = channel
        }
        for channel in written.values { channel.flush() }
    }
}
