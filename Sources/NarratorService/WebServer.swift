import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NarratorKit

/// The protocol over WebSocket (`/ws?token=…`, one request or event per text message), and the
/// component's demo page at `/` (and the read-along page at `/read-along.html`), served by Hummingbird.
enum WebServer {
    /// Messages up to this size are read whole (and then refused by the service when over its
    /// own limit, the connection staying up); a bigger one closes the connection (1009), and
    /// so does one of more than `WebSocketGuard.maxFragments` frames. Text must be UTF-8
    /// (1007); the rest of RFC 6455's checks are `WebSocketGuard`'s and the library's.
    static let transportLimit = 1 << 20

    static func make(
        host: String, port: Int, token: String, service: NarratorService, gate: ConnectionGate, loops: any EventLoopGroup, logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void
    ) throws -> some ApplicationProtocol {
        let page = try Page.load()
        let router = Router()
        for (path, file) in page.files {
            router.get(RouterPath(stringLiteral: path)) { _, _ in
                var headers = HTTPFields()
                headers[.contentType] = file.contentType
                headers[.cacheControl] = "no-store"
                // The component is loaded by apps' own pages, from their origins (a module
                // script needs CORS); it holds no secret, the WebSocket asks for the token.
                if path == "/narrator-player.js" { headers[.accessControlAllowOrigin] = "*" }
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: file.bytes)))
            }
        }
        // A lesson's picture (`PictureRoute`): its bytes as they are, never run as a page.
        router.get("/pictures/:lesson/:name") { _, context -> Response in
            guard let lesson = context.parameters.get("lesson")?.removingPercentEncoding,
                let name = context.parameters.get("name")?.removingPercentEncoding
            else { return Self.refusal(404, "not a lesson's picture") }
            switch await PictureRoute.answer(lesson: lesson, name: name, service: service) {
            case .picture(let bytes, let kind):
                var headers = HTTPFields()
                headers[.contentType] = kind.contentType
                headers[.cacheControl] = "no-cache"
                headers[Self.noSniff] = "nosniff"
                if kind == .svg {
                    // An SVG opened on its own runs no script and loads nothing.
                    headers[.contentSecurityPolicy] = "sandbox; default-src 'none'; style-src 'unsafe-inline'"
                }
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
            case .refused(let status, let message):
                return Self.refusal(status, message)
            }
        }
        // Reached only when the upgrade was refused: a wrong or missing token.
        router.get("/ws") { _, _ -> Response in
            Response(status: .unauthorized, body: .init(byteBuffer: ByteBuffer(string: "a WebSocket upgrade with ?token= is required\n")))
        }

        let sockets = Router(context: SocketContext.self)
        sockets.ws("/ws") { request, context in
            guard let given = request.uri.queryParameters.get("token"), Self.same(given, token) else { throw HTTPError(.unauthorized) }
            // In place before the upgrade: it puts the frame checks of RFC 6455 that
            // Hummingbird lacks in front of the handler before the first frame is read.
            let channel = context.channel
            try await channel.eventLoop.submit { try channel.pipeline.syncOperations.addHandler(WebSocketGuardInstaller()) }.get()
            return .upgrade([:])
        } onUpgrade: { inbound, _, context in
            // Events are written to the channel from the cue thread (`ChannelOutlet`); this
            // task reads requests until the client goes or the daemon is done with it.
            let (finished, finish) = AsyncStream.makeStream(of: Never.self)
            let channel = context.requestContext.channel
            // The guard is in place before the first frame is read (`WebSocketGuardInstaller`);
            // a pipeline without it was closed.
            let guardian = try await channel.eventLoop.submit {
                NIOLoopBound(try channel.pipeline.syncOperations.handler(type: WebSocketGuard.self), eventLoop: channel.eventLoop)
            }.get()
            let connection = service.connect(ChannelOutlet(channel: channel, framing: .webSocket(guardian)) { finish.finish() })
            // Before the handler sends its Close: no event is queued after it.
            defer { connection.disconnect() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in finished {}
                }
                group.addTask {
                    // A message that breaks the protocol ends this with the handler's error, which
                    // is rethrown: the handler closes with its code (1002, 1007, 1009).
                    for try await message in inbound.messages(maxSize: transportLimit) {
                        switch message {
                        case .text(let text): connection.receive(Data(text.utf8))
                        case .binary: connection.refuseBinary()
                        }
                    }
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        }
        let idle = service.configuration.idleTimeout.map { TimeAmount.nanoseconds(NarratorService.nanoseconds($0)) }
        let webSockets = sockets.buildResponder()
        return Application(
            router: router,
            // The page's HTTP connections close after the idle timeout between requests, a
            // connection that sends nothing after it from its accept; a WebSocket's is the
            // service's (no request and nothing unwritten).
            server: .gated(gate, idleTimeout: idle, server: "narrator serve") { responder in
                HTTP1WebSocketUpgradeChannel(
                    responder: responder, webSocketResponder: webSockets,
                    configuration: .init(http1: .init(idleTimeout: idle), ws: .init(maxFrameSize: transportLimit, validateUTF8: true)))
            },
            configuration: .init(address: .hostname(host, port: port), serverName: "narrator"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) },
            eventLoopGroupProvider: .shared(loops),
            logger: logger)
    }

    /// `X-Content-Type-Options` (`nosniff`: a picture is taken for what its type says).
    static let noSniff = HTTPFields.Element.Name("X-Content-Type-Options")!

    /// An error answer: `status` and why, as plain text.
    static func refusal(_ status: Int, _ message: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[Self.noSniff] = "nosniff"
        return Response(status: HTTPResponse.Status(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(string: message + "\n")))
    }

    /// Compares without stopping at the first difference.
    static func same(_ given: String, _ token: String) -> Bool {
        let a = Array(given.utf8)
        let b = Array(token.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<min(a.count, b.count) { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

/// The request context of the WebSocket router: Hummingbird's, plus the channel, which
/// events are written to directly.
struct SocketContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<SocketContext>
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}

/// The read-along page's files, from the target's resources.
public struct Page: Sendable {
    struct File: Sendable {
        let bytes: [UInt8]
        let contentType: String
    }
    /// Served at these paths.
    let files: [String: File]

    static func load() throws -> Page {
        let names = [
            // `/`: the <narrator-player> component's demo page (docs/component.md); the
            // read-along page of docs/read-along.md at /read-along.html.
            ("/", "index.html", "text/html; charset=utf-8"), ("/narrator-player.js", "narrator-player.js", "text/javascript; charset=utf-8"),
            ("/read-along.html", "read-along.html", "text/html; charset=utf-8"), ("/read-along.js", "read-along.js", "text/javascript; charset=utf-8"),
        ]
        var files: [String: File] = [:]
        for (path, name, type) in names {
            files[path] = File(bytes: try read(name), contentType: type)
        }
        return Page(files: files)
    }

    /// The page's file `name`, from the target's resources (`pack --web` ships the component
    /// and its demo page from here too).
    public static func read(_ name: String) throws(NarratorError) -> [UInt8] {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Page"),
            let data = try? Data(contentsOf: url)
        else { throw NarratorError(file: name, "the read-along page's file is missing from the installation") }
        return Array(data)
    }
}
