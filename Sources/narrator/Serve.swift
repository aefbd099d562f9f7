import ArgumentParser
import Foundation
import Logging
import NarratorKit
import Synchronization
import NarratorService

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve timed cues to apps: JSON lines over a Unix socket and WebSocket, and the read-along page.",
        discussion: """
            Requests name lessons inside --library; each plays on --device, and its events (start, \
            each cue, finished, stopped, error) carry their frame and the CLOCK_MONOTONIC time it is heard \
            (docs/events.md). Once a transport accepts clients, a JSON line on stdout says where (and, for WebSocket, \
            the page's address with its token). SIGTERM or SIGINT ends every request with \
            "stopped" and exits 0. The protocol is in docs/daemon.md.

            Example (port 0 takes a free port; the line on stdout gives the page's address):
              narrator serve --library Timings/lessons --listen 127.0.0.1:0
            """)

    @Option(help: "The folder of lessons that requests may name (paths outside it are refused).")
    var library = "Timings/lessons"

    @Option(help: "The Unix socket to listen on (created 0600). Default: $XDG_RUNTIME_DIR/narrator.sock, or /tmp/narrator-UID.sock.")
    var socket: String?

    @Flag(help: "Do not listen on a Unix socket.")
    var noSocket = false

    @Option(help: "Also serve WebSocket (/ws) and the read-along pages (/, /read-along.html) on HOST:PORT; port 0 picks a free one. Loopback unless told otherwise.")
    var listen: String?

    @Option(help: "The token WebSocket clients must give (/ws?token=…). Default: a random one, printed on stdout.")
    var token: String?

    @OptionGroup var outputOptions: OutputOptions

    @Option(help: "Connections held at once, both transports together (lowered to fit the descriptor limit, keeping 128 free); one more is told so and closed.")
    var maxConnections = NarratorDaemon.defaultMaxConnections

    @Option(help: "Seconds a connection may stay with no request active and nothing unwritten before it is closed; 0: no limit.")
    var idleTimeout: Double = 300

    @Option(help: "Log every touch heard (a word said, an answer, a replay, a close) as a row of this SQLite file, created if missing (docs/touches.md; read it with narrator touches).")
    var touches: String?

    @Flag(inversion: .prefixedNo, help: "Run the threads that write events to clients (the event loops) with real-time priority (SCHED_FIFO 18) when permitted; playbacks' own threads keep their own policy (--realtime).")
    var realtimeDelivery = true

    @Option(help: "Microseconds before each cue is heard at which the threads that write events to clients wake (then sleep again and spin briefly until it is heard, so that they are not woken late from idle); 0: woken by the events (docs/daemon.md).")
    var wakeAhead: Int = Int(WakeAhead.defaultWake / 1000)

    /// The daemon's own child: prepares one request's lesson and writes its events (see
    /// `LessonLoader`). Not for people.
    @Option(help: .hidden)
    var prepareRequest: String?

    func validate() throws {
        if noSocket && listen == nil { throw ValidationError("--no-socket needs --listen: the daemon would have no way in") }
        if let listen, Self.address(listen) == nil { throw ValidationError("--listen takes HOST:PORT, e.g. 127.0.0.1:8700") }
        if let token, token.count < 8 { throw ValidationError("--token must be at least 8 characters") }
        guard (1...65536).contains(maxConnections) else { throw ValidationError("--max-connections must be between 1 and 65536, got \(maxConnections)") }
        guard (0...Int(WakeAhead.maxWake / 1000)).contains(wakeAhead) else { throw ValidationError("--wake-ahead must be between 0 and \(WakeAhead.maxWake / 1000) microseconds, got \(wakeAhead)") }
        guard idleTimeout.isFinite, (0...86400).contains(idleTimeout) else { throw ValidationError("--idle-timeout must be between 0 and 86400 seconds, got \(idleTimeout)") }
    }

    static func address(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    /// The library's folder missing says where it was looked for and how to give another: the
    /// default is relative to the current folder, so `serve` run outside the repository finds none.
    static func explained(_ error: NarratorError, library: String) -> String {
        guard error.file == library else { return error.description }
        let resolved = URL(fileURLWithPath: library).standardizedFileURL.path
        let looked = resolved == library ? "" : " (looked for at \(resolved))"
        return "\(error.description)\(looked); give the folder of your lessons with --library FOLDER"
    }

    static var defaultSocket: String {
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/narrator.sock" }
        return "/tmp/narrator-\(getuid()).sock"
    }

    func run() throws {
        if let prepareRequest {
            let status = NarratorDaemon.prepareInChild(library: library, request: prepareRequest)
            if status != 0 { throw ExitCode(status) }
            return
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        let listen = listen.flatMap(Self.address)
        if let host = listen?.host, !["127.0.0.1", "::1", "localhost"].contains(host) {
            printError("warning: WebSocket listens on \(host), beyond this machine; the token is all that guards it")
        }
        let options = NarratorDaemon.Options(
            configuration: .init(
                library: library, output: outputOptions.kind, device: outputOptions.device, latencyMs: outputOptions.latency,
                realtime: outputOptions.usesRealtime,
                idleTimeout: idleTimeout > 0 ? .milliseconds(Int64((idleTimeout * 1000).rounded())) : nil,
                wakeAhead: wakeAhead > 0 ? WakeAhead(wake: Int64(wakeAhead) * 1000) : nil),
            socket: noSocket ? nil : (socket ?? Self.defaultSocket), listen: listen, token: token ?? NarratorDaemon.makeToken(),
            realtimeDelivery: realtimeDelivery, maxConnections: maxConnections, touches: touches)
        let failure = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                try await NarratorDaemon.run(options, logger: Logger(label: "narrator")) { line in
                    Output.write(line + "\n", to: STDOUT_FILENO)
                }
            } catch let error as NarratorError {
                failure.withLock { $0 = Self.explained(error, library: library) }
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
            done.signal()
        }
        done.wait()
        if let message = failure.withLock({ $0 }) {
            printError(message)
            throw ExitCode(1)
        }
    }
}
