import Foundation
import NarratorTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `narrator serve` started for a test: on a socket in `dir`, WebSocket on a free loopback
/// port, with a known token; optionally as a client of a private PulseAudio server.
final class Daemon: @unchecked Sendable {
    let dir: TempDir
    let library: String
    let socket: String
    let token = "test-token-0123456789"
    private(set) var process: Process
    private(set) var port = 0
    private let environment: [String: String]?
    private let extra: [String]

    init(dir: TempDir, library: String, server: PulseTestServer? = nil, arguments: [String] = []) throws {
        self.dir = dir
        self.library = library
        socket = dir.file("n.sock")
        environment = server?.environment
        extra = arguments
        process = Process()
        try start()
    }

    var url: String { "ws://127.0.0.1:\(port)/ws" }
    var page: String { "http://127.0.0.1:\(port)/#token=\(token)" }
    var stdoutPath: String { dir.file("daemon.out") }
    var stderrPath: String { dir.file("daemon.err") }
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Starts (again), and waits until both transports accept clients.
    func start() throws {
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: Repo.narrator)
        process.arguments = ["serve", "--library", library, "--socket", socket, "--listen", "127.0.0.1:0", "--token", token] + extra
        if let environment { process.environment = environment }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let lines = ((try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "").split(separator: "\n")
            if lines.count >= 2, let object = try? JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any],
                let port = object["port"] as? Int
            {
                self.port = port
                return
            }
            if !process.isRunning { break }
            usleep(20_000)
        }
        throw DaemonError("narrator serve did not come up: \(stderr)")
    }

    /// SIGTERM, then waits; returns the exit status.
    @discardableResult
    func stop() -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return process.terminationStatus
    }

    func crash() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}

struct DaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// An event as a client received it.
struct ReceivedEvent {
    let fields: [String: Any]
    var event: String { fields["event"] as? String ?? "" }
    var type: String { fields["type"] as? String ?? "" }
    var id: String { fields["id"].flatMap { $0 is NSNull ? nil : "\($0)" } ?? "null" }
    var frame: Int? { fields["frame"] as? Int }
    var heard: Int64? { (fields["heard"] as? NSNumber)?.int64Value }
    var received: Int64 { (fields["received"] as? NSNumber)?.int64Value ?? 0 }
    var isTerminal: Bool { ["end", "canceled", "error"].contains(event) }

    static func parse(_ text: String) throws -> [ReceivedEvent] {
        try text.split(separator: "\n").map { line in
            ReceivedEvent(fields: try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)"))
        }
    }
}

enum Clients {
    static let python = Repo.path("Tests/clients/narrator_client.py")
    static let browser = Repo.path("Tests/clients/read_along_browser.py")

    static var havePythonWebSockets: Bool {
        (try? runTool("python3", ["-c", "import websockets"]).status) == 0
    }

    /// `narrator_client.py run` against the daemon; its events.
    static func run(_ daemon: Daemon, unix: Bool = false, _ requests: [String], extra: [String] = []) throws -> (status: Int32, events: [ReceivedEvent], stderr: String) {
        let transport = unix ? ["--unix", daemon.socket] : ["--ws", daemon.url, "--token", daemon.token]
        let result = try runTool("python3", [python, "run"] + transport + extra + requests)
        return (result.status, try ReceivedEvent.parse(result.stdout), result.stderr)
    }

    /// Lines through socat, the way a shell script would talk to the daemon; what came back.
    static func socat(_ daemon: Daemon, input: String, wait: Double = 3) throws -> ProcessResult {
        let script = "{ cat \"$1\"; sleep \(wait); } | socat -t 5 - UNIX-CONNECT:\"$2\""
        let file = daemon.dir.write("socat-in-\(UUID().uuidString.prefix(8)).txt", input)
        return try NarratorTestSupport.run("/bin/sh", ["-c", script, "sh", file, daemon.socket])
    }
}
