import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The connections a server holds at once. One beyond them is accepted only to be told so (a
/// line, or an HTTP 503) and closed at once, so that it costs a descriptor for a moment, and
/// the accept loop never meets the process's descriptor limit (`fitted`).
public final class ConnectionGate: Sendable {
    /// The most connections held at once.
    public let limit: Int
    private let open = Atomic<Int>(0)

    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Descriptors a server keeps free besides its connections: the loader children's pipes
    /// (four a worker, one a parked listing: 32 at most), the playbacks' devices and files (8
    /// playbacks), the event loops' own, the listening sockets, the refusals being written,
    /// and libdispatch's timers (which end the process, SIGILL, when they cannot have one).
    public static let reservedDescriptors = 128

    /// `requested`, lowered to what the process's descriptor limit (RLIMIT_NOFILE) leaves once
    /// `reservedDescriptors` are set aside: under `prlimit --nofile=256`, 128.
    public static func fitted(_ requested: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return requested }
        return max(1, min(requested, Int(clamping: limit.rlim_cur) - reservedDescriptors))
    }

    /// Connections held now.
    public var count: Int { open.load(ordering: .relaxed) }

    /// Takes a place for a new connection; false when every place is taken.
    func enter() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = open.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func leave() { open.subtract(1, ordering: .relaxed) }

    /// Takes a place for `channel` until it closes; false (and the channel untouched) when full.
    func admit(_ channel: any Channel) -> Bool {
        guard enter() else { return false }
        channel.closeFuture.whenComplete { _ in self.leave() }
        return true
    }
}

/// On a connection beyond the gate's limit: writes `message` as soon as the connection is
/// active, then closes it.
final class RefusalHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let message: [UInt8]

    init(_ message: String) { self.message = Array(message.utf8) }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { refuse(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        refuse(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}  // nothing it sends is read

    private func refuse(_ context: ChannelHandlerContext) {
        let buffer = context.channel.allocator.buffer(bytes: message)
        let channel = context.channel
        context.writeAndFlush(NIOAny(buffer)).whenComplete { _ in channel.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Closes a connection that has sent nothing `timeout` after it was accepted; removes itself at
/// its first byte (from then on, the protocol's own idle timeout applies).
final class FirstByteTimeout: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = NIOAny
    let timeout: TimeAmount
    private let timer = Mutex<Scheduled<Void>?>(nil)

    init(_ timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer.withLock { $0 = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) } }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        timer.withLock { $0?.cancel() }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer.withLock { $0?.cancel() }
    }
}

/// Closes a connection whose peer has read nothing for `timeout` while output waits for it:
/// bytes were buffered for the socket (the kernel's buffer full), and none of them went out
/// since. Without it, such a connection would be bound only by the connection cap and the
/// 4 MiB drop (the daemon), or held for ever by a response that waits to be written (an HTTP
/// server's idle timeout stops while a response is in progress). Nothing is said before the
/// close: the peer reads nothing. First in the pipeline (nearest the socket), so that every
/// write passes it; progress is what the channel's buffered bytes show (`bufferedWritableBytes`,
/// which a partial write lowers too), looked at every quarter of `timeout` while anything is
/// buffered, not at all otherwise.
final class StalledReaderTimeout: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    let timeout: TimeAmount
    /// How often the buffered bytes are looked at while there are any.
    let period: TimeAmount
    /// The channel's buffered bytes at the last look, and the bytes written through since:
    /// fewer than their sum buffered now means some went out.
    private var buffered = 0
    private var added = 0
    private var lastProgress = NIODeadline.now()
    private var look: Scheduled<Void>?

    init(_ timeout: TimeAmount) {
        self.timeout = timeout
        period = .nanoseconds(min(1_000_000_000, max(10_000_000, timeout.nanoseconds / 4)))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        added += unwrapOutboundIn(data).readableBytes
        context.write(data, promise: promise)
        guard look == nil else { return }
        lastProgress = .now()
        schedule(context)
    }

    private func schedule(_ context: ChannelHandlerContext) {
        look = context.eventLoop.assumeIsolated().scheduleTask(in: period) {
            self.look = nil
            self.lookAtProgress(context)
        }
    }

    private func lookAtProgress(_ context: ChannelHandlerContext) {
        guard context.channel.isActive, let now = try? context.channel.syncOptions?.getOption(.bufferedWritableBytes) else { return }
        let time = NIODeadline.now()
        if now < buffered + added { lastProgress = time }
        buffered = now
        added = 0
        // Nothing buffered: the next write starts the clock again.
        guard now > 0 else { return }
        if time - lastProgress >= timeout {
            context.close(promise: nil)
        } else {
            schedule(context)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        look?.cancel()
        look = nil
    }
}

/// A Hummingbird server's connections behind a `ConnectionGate`: one beyond the limit is
/// answered `503 Service Unavailable` with a line saying why, and closed; one that sends
/// nothing within `idleTimeout` of being accepted, or reads nothing for that long while a
/// write waits for it (`StalledReaderTimeout`), is closed.
struct GatedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    enum Value: ServerChildChannelValue {
        case admitted(Base.Value)
        case refused(any Channel)

        var channel: any Channel {
            switch self {
            case .admitted(let value): value.channel
            case .refused(let channel): channel
            }
        }
    }

    let base: Base
    let gate: ConnectionGate
    let idleTimeout: TimeAmount?
    let server: String

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard gate.admit(channel) else {
            let text = "\(server) holds \(gate.limit) connections, its most; try again once one has closed\n"
            let response = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(text.utf8.count)\r\nConnection: close\r\nRetry-After: 1\r\n\r\n\(text)"
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(RefusalHandler(response))
                return .refused(channel)
            }
        }
        if let idleTimeout {
            do {
                try channel.pipeline.syncOperations.addHandler(FirstByteTimeout(idleTimeout), position: .first)
                try channel.pipeline.syncOperations.addHandler(StalledReaderTimeout(idleTimeout), position: .first)
            } catch {
                return channel.eventLoop.makeFailedFuture(error)
            }
        }
        return base.setup(channel: channel, logger: logger).map { .admitted($0) }
    }

    func handle(value: Value, logger: Logger) async {
        guard case .admitted(let admitted) = value else { return }
        await base.handle(value: admitted, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// Hummingbird's HTTP/1 server with WebSocket upgrade, or plain HTTP/1, behind `gate`.
    static func gated<Base: ServerChildChannel>(
        _ gate: ConnectionGate, idleTimeout: TimeAmount?, server: String, _ make: @escaping @Sendable (@escaping HTTPChannelHandler.Responder) -> Base
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in GatedChildChannel(base: make(responder), gate: gate, idleTimeout: idleTimeout, server: server) }
    }
}
