import Foundation
import NIOCore
import NIOPosix
import NarratorKit
import ServiceLifecycle

/// The protocol over a Unix domain socket: one request per line in, one event per line out.
/// The socket file is created with mode 0600: only the daemon's user may connect.
struct UnixSocketServer: Service {
    let path: String
    private let channel: any Channel

    /// Binds now, so that the caller can report the socket as ready. A socket file left by a
    /// daemon that died is replaced; one that a live daemon answers on, or any other kind of
    /// file, is an error.
    static func bind(path: String, service: NarratorService, gate: ConnectionGate, loops: any EventLoopGroup) async throws -> UnixSocketServer {
        guard path.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else {
            throw NarratorError(file: path, "socket path too long (at most \(MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1) bytes)")
        }
        try claim(path)
        let limit = service.configuration.maxMessageBytes
        // Created 0600 from the start (no window in which others could connect): umask is
        // process-wide, and this runs before anything else of the daemon does.
        let oldMask = umask(0o177)
        defer { umask(oldMask) }
        let refusal = EventLine.head(for: nil) + EventLine.error("busy: the daemon holds \(gate.limit) connections, its most; try again once one has closed").body + "\n"
        let channel = try await ServerBootstrap(group: loops)
            .serverChannelOption(.backlog, value: 256)
            // Out of descriptors (EMFILE, ENFILE), accept(2) fails with the connection still
            // waiting: without a pause, the loop would try again at once, forever (NIO's
            // classic bind adds no back-off; its async one does, for the WebSocket server).
            .serverChannelInitializer { server in
                server.eventLoop.makeCompletedFuture {
                    try server.pipeline.syncOperations.addHandler(
                        AcceptBackoffHandler(shouldForwardIOErrorCaught: false) { _ in .milliseconds(100) })
                }
            }
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    guard gate.admit(child) else {
                        try child.pipeline.syncOperations.addHandler(RefusalHandler(refusal))
                        return
                    }
                    if let idle = service.configuration.idleTimeout {
                        try child.pipeline.syncOperations.addHandler(StalledReaderTimeout(.nanoseconds(NarratorService.nanoseconds(idle))))
                    }
                    try child.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineFrameDecoder(maxLength: limit)))
                    try child.pipeline.syncOperations.addHandler(ClientHandler(service: service, channel: child))
                }
            }
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: false).get()
        chmod(path, 0o600)
        return UnixSocketServer(path: path, channel: channel)
    }

    /// Makes `path` free for a new socket, or says why it is not.
    private static func claim(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            throw NarratorError(file: path, "exists and is not a socket; choose another --socket")
        }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let answered = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if answered == 0 { throw NarratorError(file: path, "another daemon is listening on this socket") }
        // A stale socket is removed; anything else at that name is not ours to remove.
        var existing = stat()
        if lstat(path, &existing) == 0 {
            guard existing.st_mode & S_IFMT == S_IFSOCK else { throw NarratorError(file: path, "exists and is not a socket: choose another --socket") }
            unlink(path)
        }
    }

    /// Accepts connections until graceful shutdown, then removes the socket file.
    func run() async throws {
        try await withGracefulShutdownHandler {
            try await channel.closeFuture.get()
        } onGracefulShutdown: { [channel] in
            channel.close(promise: nil)
        }
        unlink(path)
    }
}

/// One client on the socket: its lines go to the service, its events are written straight to
/// the channel from whichever thread delivers them (no task hop on the way out).
private final class ClientHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = LineFrame

    private let connection: ClientConnection

    init(service: NarratorService, channel: any Channel) {
        connection = service.connect(ChannelOutlet(channel: channel, framing: .lines))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .line(let buffer): connection.receive(Data(buffer.readableBytesView))
        case .oversized(let bytes): connection.refuseOversized(bytes: bytes)
        }
    }

    /// The client closed its side for writing (`printf … | socat`): no more requests, but the
    /// answers to those it sent still go out.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { connection.inputEnded() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.disconnect()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// What the line decoder hands on.
enum LineFrame: Sendable {
    /// One line, without its newline (and without a carriage return before it).
    case line(ByteBuffer)
    /// A line longer than the limit, counted up to the limit: the decoder skips the rest of it.
    case oversized(Int)
}

/// Splits the byte stream at newlines, refusing lines over `maxLength` without buffering them.
struct LineFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = LineFrame
    let maxLength: Int
    /// Inside an oversized line: drop bytes until its newline.
    private var skipping = false
    /// How many of the unread bytes are known to hold no newline: a line that comes a byte at
    /// a time is searched once, not once per byte (64 KiB would be 2·10⁹ comparisons).
    private var searched = 0

    init(maxLength: Int) { self.maxLength = maxLength }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let unread = buffer.readableBytesView
        let newline = unread[(unread.startIndex + min(searched, unread.count))...].firstIndex(of: UInt8(ascii: "\n"))
        searched = newline == nil ? unread.count : 0
        if skipping {
            guard let newline else {
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                searched = 0
                return .needMoreData
            }
            buffer.moveReaderIndex(to: newline + 1)
            skipping = false
            return .continue
        }
        guard let newline else {
            if buffer.readableBytes > maxLength {
                context.fireChannelRead(wrapInboundOut(.oversized(buffer.readableBytes)))
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                searched = 0
                skipping = true
            }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        guard length <= maxLength else {
            context.fireChannelRead(wrapInboundOut(.oversized(length)))
            buffer.moveReaderIndex(to: newline + 1)
            return .continue
        }
        var line = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        if line.readableBytesView.last == UInt8(ascii: "\r") { line = line.getSlice(at: line.readerIndex, length: length - 1)! }
        if line.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(.line(line))) }
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A last line without a newline still counts.
        if !skipping, buffer.readableBytes > 0, !buffer.readableBytesView.contains(UInt8(ascii: "\n")) {
            buffer.writeInteger(UInt8(ascii: "\n"))
        }
        return try decode(context: context, buffer: &buffer)
    }
}
