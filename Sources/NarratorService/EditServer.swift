import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NarratorKit
import Synchronization

/// What `narrator edit` serves for one clip: its audio, its waveform's envelope and its
/// timing file (`TimingEditor`), which Save writes.
public struct EditSession: Sendable {
    /// The lesson and the clip, for the page's title.
    public let lesson: String
    public let clip: String
    /// The clip's region as a WAV file, at the lesson's rate.
    public let wav: [UInt8]
    /// The clip's frames, and its envelope: one column per pixel of the page's waveform,
    /// `{"columns": N, "min": […], "max": […], "rms": […]}` (null for a column with no frame).
    public let envelope: String
    public let editor: TimingEditor

    public init(lesson: String, clip: String, wav: [UInt8], envelope: String, editor: TimingEditor) {
        self.lesson = lesson
        self.clip = clip
        self.wav = wav
        self.envelope = envelope
        self.editor = editor
    }
}

/// The editing page's server: `/` (edit.html), `/edit.js`, `/audio.wav`, `/clip.json` (the
/// clip, its envelope and its words in frames) and `POST /save` (the words; 400 with one line
/// when they do not pass `TimingEditor.check`, 409 when something else changed the file since
/// it was read; the file untouched either way).
public enum EditServer {
    /// A Save request's body is read up to this size (a word takes some 60 bytes).
    static let bodyLimit = 4 << 20
    /// Connections held at once (a browser opens about six), and how long one may send
    /// nothing (`narrator edit --max-connections`, `--idle-timeout`).
    public static let defaultMaxConnections = 64
    public static let defaultIdleTimeout: Double = 300

    public struct Limits: Sendable {
        public var maxConnections: Int
        /// Seconds, between requests or from the accept to the first byte; nil: none.
        public var idleTimeout: Double?

        var idle: TimeAmount? { idleTimeout.map { .milliseconds(Int64(($0 * 1000).rounded())) } }

        public init(maxConnections: Int = EditServer.defaultMaxConnections, idleTimeout: Double? = EditServer.defaultIdleTimeout) {
            self.maxConnections = maxConnections
            self.idleTimeout = idleTimeout
        }
    }

    /// Serves `session` on `host:port` (0: a free port) until SIGINT or SIGTERM; `onRunning`
    /// is given the port once it accepts connections.
    public static func run(
        _ session: EditSession, host: String, port: Int, limits: Limits = Limits(), logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void
    ) async throws {
        let files = try pageFiles()
        let editor = Mutex(session.editor)
        let router = Router()
        // The port the server listens on, once it does (0 before: nothing is answered).
        let listening = Atomic<Int>(0)
        // Every route answers a loopback Host only: a page of another site that rebinds its
        // name to 127.0.0.1 cannot read the clip or its words.
        @Sendable func loopback(_ request: Request) -> Bool {
            isLoopback(host: request.head.authority ?? "", port: listening.load(ordering: .acquiring))
        }
        let refused = response(.forbidden, "text/plain", Array("narrator edit answers 127.0.0.1 and localhost only\n".utf8))
        for (path, file) in files {
            router.get(RouterPath(stringLiteral: path)) { request, _ in loopback(request) ? response(.ok, file.type, file.bytes) : refused }
        }
        router.get("/audio.wav") { request, _ in loopback(request) ? response(.ok, "audio/wav", session.wav) : refused }
        router.get("/clip.json") { request, _ in
            guard loopback(request) else { return refused }
            let current = editor.withLock { $0 }
            let json = """
                {"lesson":\(EventEncoder.quoted(session.lesson)),"clip":\(EventEncoder.quoted(session.clip)),\
                "timings":\(EventEncoder.quoted(current.path)),"format":\(EventEncoder.quoted(current.format.rawValue)),\
                "rate":\(current.rate),"frames":\(current.clipFrames),"resolution":\(current.resolution),\
                "envelope":\(session.envelope),"words":\(TimingEditor.json(current.words))}
                """
            return response(.ok, "application/json", Array(json.utf8))
        }
        router.post("/save") { request, _ in
            // Only the page itself may save: a JSON request (which another site's page cannot
            // send here without a CORS preflight this server never grants), to a loopback Host
            // (no DNS rebinding), from no other origin.
            let host = request.head.authority ?? ""
            let origin = request.headers[.origin]
            guard loopback(request), origin == nil || origin == "http://" + host else {
                return response(.forbidden, "text/plain; charset=utf-8", Array("only the editing page on this machine may save\n".utf8))
            }
            guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true else {
                return response(.unsupportedMediaType, "text/plain; charset=utf-8", Array("Save takes application/json\n".utf8))
            }
            var request = request
            let body: ByteBuffer
            do {
                body = try await request.collectBody(upTo: bodyLimit)
            } catch {
                return response(.contentTooLarge, "text/plain; charset=utf-8", Array("the request is over \(bodyLimit) bytes\n".utf8))
            }
            let outcome = editor.withLock { editor -> Result<(TimingEditor, [WordTiming]), NarratorError>? in
                guard !editor.changedOnDisk else { return nil }
                var copy = editor
                do throws(NarratorError) {
                    let words = try copy.save(Data(buffer: body))
                    editor = copy
                    return .success((copy, words))
                } catch {
                    return .failure(error)
                }
            }
            switch outcome {
            case nil:
                let message = "\(session.editor.path): changed on disk since the page was opened; Save would overwrite that change (restart narrator edit to load it)\n"
                return response(.conflict, "text/plain; charset=utf-8", Array(message.utf8))
            case .success(let (saved, words)):
                let json = """
                    {"saved":\(EventEncoder.quoted(saved.path)),"format":\(EventEncoder.quoted(saved.format.rawValue)),\
                    "words":\(TimingEditor.json(words))}
                    """
                return response(.ok, "application/json", Array(json.utf8))
            case .failure(let error):
                // A file that could not be written is the server's failure; a bad request, the client's.
                let status: HTTPResponse.Status = error.file == TimingEditor.request ? .badRequest : .internalServerError
                return response(status, "text/plain; charset=utf-8", Array((error.description + "\n").utf8))
            }
        }
        let gate = ConnectionGate(limit: ConnectionGate.fitted(limits.maxConnections))
        let app = Application(
            router: router,
            server: .gated(gate, idleTimeout: limits.idle, server: "narrator edit") { responder in
                HTTP1Channel(responder: responder, configuration: .init(idleTimeout: limits.idle))
            },
            configuration: .init(address: .hostname(host, port: port), serverName: "narrator-edit"),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? port
                listening.store(bound, ordering: .releasing)
                await onRunning(bound)
            },
            logger: logger)
        try await app.runService()
    }

    /// Whether a request's Host (`authority`) names this server on the loopback: exactly
    /// `127.0.0.1`, `localhost` or `[::1]` (the name case-insensitive, as DNS names are) with
    /// `port`, the port listened on; without a port only when that is 80, HTTP's own. Anything
    /// else — `127.0.0.1:PORT.evil.com`, another port, userinfo, a trailing dot — is refused.
    static func isLoopback(host authority: String, port: Int) -> Bool {
        guard port > 0 else { return false }
        let names: Set<String> = ["127.0.0.1", "localhost", "[::1]"]
        let lowered = authority.lowercased()
        if names.contains(lowered) { return port == 80 }
        guard let colon = lowered.lastIndex(of: ":") else { return false }
        let name = String(lowered[..<colon])
        let digits = lowered[lowered.index(after: colon)...]
        guard names.contains(name), !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            Int(digits) == port, digits.first != "0"
        else { return false }
        return true
    }

    private static func response(_ status: HTTPResponse.Status, _ type: String, _ bytes: [UInt8]) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The editing page's files, from the target's resources, by the path they are served at.
    static func pageFiles() throws -> [String: (bytes: [UInt8], type: String)] {
        let names = [("/", "edit.html", "text/html; charset=utf-8"), ("/edit.js", "edit.js", "text/javascript; charset=utf-8")]
        var files: [String: (bytes: [UInt8], type: String)] = [:]
        for (path, name, type) in names {
            guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Page"),
                let data = try? Data(contentsOf: url)
            else { throw NarratorError(file: name, "the editing page's file is missing from the installation") }
            files[path] = (Array(data), type)
        }
        return files
    }
}
