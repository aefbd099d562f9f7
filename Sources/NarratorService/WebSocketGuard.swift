import NIOCore
import NIOHTTP1
import NIOWebSocket

/// The RFC 6455 rules that Hummingbird's WebSocket handler (swift-websocket) does not enforce,
/// checked on every frame between NIO's frame decoder and that handler:
///
/// - a client's frame that is not masked fails the connection (1002, §5.1);
/// - a reserved bit set fails it (1002, §5.2; no extension is negotiated), control frames too;
/// - a reserved opcode fails it (1002, §5.2); swift-websocket sends its close but goes on
///   handing the frames after it to the application;
/// - a message of more than `maxFragments` frames fails it (1009): the handler keeps every
///   fragment until the last, and empty ones would otherwise add up without bound;
/// - a Close frame is checked (§5.5.1, §7.4): a 1-byte body, a code outside 1000–1003,
///   1007–1014 and 3000–4999 (1002), a reason that is not UTF-8 (1007) fail the connection; a
///   valid one is answered with its code and the connection closed (swift-websocket refuses
///   IANA's 1012–1014);
/// - nothing is written after a Close frame: neither an event queued by the service meanwhile
///   nor a second Close (§5.5.1).
///
/// The service's events come in through `writeEvents`, already framed (`ChannelOutlet`): the
/// frames of one moment in one buffer, handed on past NIO's frame encoder, which would write
/// each frame's header in a buffer of its own (a frame reaches it boxed, so its payload is never
/// uniquely owned and the header cannot go in front of it).
///
/// What NIO and swift-websocket do right stays theirs: frame lengths over the limit (1009),
/// fragmented or over-long control frames (1002), by NIO's decoder and
/// `WebSocketProtocolErrorHandler`; message sequencing (a continuation with nothing before it, a
/// new message inside a fragmented one: 1002), the message size limit (1009) and UTF-8 (1007),
/// by swift-websocket, which closes with the code of the error it throws.
///
/// To fail the connection is to send a Close frame with the code and close TCP (§7.1.7): frames
/// after the offending one are not looked at.
final class WebSocketGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// Frames one message may take, its first included.
    static let maxFragments = 1024

    private enum State {
        case open
        /// A Close frame has gone out (ours or the handler's); the handler finishes the handshake.
        case closing
        /// Failed, or the client's Close answered: nothing more is read or written.
        case done
    }

    private var state = State.open
    /// Frames of the message being received so far (0 between messages).
    private var fragments = 0
    /// NIO's frame encoder's place in the pipeline: encoded frames are written from there on.
    private var encoder: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        encoder = try? context.pipeline.syncOperations.context(handlerType: WebSocketFrameEncoder.self)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        encoder = nil
    }

    /// Writes frames already encoded (unmasked, complete; see `ChannelOutlet`), in order with
    /// every other write, unless a Close frame has gone out. On the channel's event loop.
    func writeEvents(_ frames: ByteBuffer, promise: EventLoopPromise<Void>?) {
        guard case .open = state, let encoder else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        encoder.write(NIOAny(frames), promise: promise)
    }

    /// Flushes what `writeEvents` wrote. On the channel's event loop.
    func flushEvents() {
        encoder?.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch state {
        case .done: return
        case .closing:
            // Whatever the client still sends, the handler waits for its Close.
            context.fireChannelRead(data)
            return
        case .open: break
        }
        guard frame.maskKey != nil else { return fail(context, .protocolError) }
        guard frame.reservedBits.isEmpty else { return fail(context, .protocolError) }
        switch frame.opcode {
        case .text, .binary:
            fragments = frame.fin ? 0 : 1
        case .continuation:
            fragments = frame.fin ? 0 : fragments + 1
            // The last fragment is counted too: `fragments + 1` frames with it.
            guard fragments < Self.maxFragments else { return fail(context, .messageTooLarge) }
        case .ping, .pong:
            break
        case .connectionClose:
            return receivedClose(context, frame)
        default:
            return fail(context, .protocolError)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .open = state else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        if unwrapOutboundIn(data).opcode == .connectionClose { state = .closing }
        context.write(data, promise: promise)
    }

    /// The client's Close: answered with its code (1000 when it gives none), or the connection
    /// fails when the frame is malformed.
    private func receivedClose(_ context: ChannelHandlerContext, _ frame: WebSocketFrame) {
        var body = frame.unmaskedData
        var answer = WebSocketErrorCode.normalClosure
        if body.readableBytes > 0 {
            guard let code = body.readInteger(as: UInt16.self) else { return fail(context, .protocolError) }
            guard Self.isValidCloseCode(code) else { return fail(context, .protocolError) }
            guard (try? body.readUTF8ValidatedString(length: body.readableBytes)) != nil else {
                return fail(context, .dataInconsistentWithMessage)
            }
            answer = WebSocketErrorCode(codeNumber: Int(code))
        }
        sendCloseAndClose(context, answer)
    }

    /// Codes a Close frame may carry (RFC 6455 §7.4, IANA's registry): 1004, 1005, 1006 and
    /// 1015 are reserved or never sent, 1016–2999 unassigned, below 1000 and from 5000 unused.
    static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    private func fail(_ context: ChannelHandlerContext, _ code: WebSocketErrorCode) {
        if case .open = state {
            sendCloseAndClose(context, code)
        } else {
            state = .done
            context.close(promise: nil)
        }
    }

    private func sendCloseAndClose(_ context: ChannelHandlerContext, _ code: WebSocketErrorCode) {
        state = .done
        var body = context.channel.allocator.buffer(capacity: 2)
        body.write(webSocketErrorCode: code)
        let loopBound = context.loopBound
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: body))).whenComplete { _ in
            loopBound.value.close(promise: nil)
        }
    }
}

/// Puts a `WebSocketGuard` in a connection's pipeline when its upgrade to WebSocket completes:
/// after NIO's frame decoder, before any frame reaches the handlers. Added to the HTTP pipeline
/// while the upgrade is decided, behind the upgrade handler, which holds back every byte that
/// follows the request until this event has been delivered.
final class WebSocketGuardInstaller: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Never

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .upgradeComplete = event as? HTTPServerUpgradeEvents {
            let pipeline = context.pipeline.syncOperations
            do {
                let decoder = try pipeline.handler(type: ByteToMessageHandler<WebSocketFrameDecoder>.self)
                try pipeline.addHandler(WebSocketGuard(), position: .after(decoder))
                pipeline.removeHandler(context: context, promise: nil)
            } catch {
                // A pipeline not laid out as expected: no unchecked connection.
                context.close(promise: nil)
            }
        }
        context.fireUserInboundEventTriggered(event)
    }
}
