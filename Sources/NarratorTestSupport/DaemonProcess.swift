import Foundation
import NarratorCore

#if canImport(Glibc)
    import Glibc
#endif

/// `narrator serve` started for a test: on a socket in `dir`, WebSocket on a free loopback
/// port, with a known token; optionally as a client of a private PulseAudio server.
public final class Daemon: @unchecked Sendable {
    public let dir: TempDir
    public let library: String
    public let socket: String
    public let token = "test-token-0123456789"
    public private(set) var process: Process
    public private(set) var port = 0
    private let environment: [String: String]?
    private let extra: [String]
    private let executable: String

    public init(dir: TempDir, library: String, server: PulseTestServer? = nil, executable: String = Repo.narrator, arguments: [String] = []) throws {
        self.dir = dir
        self.library = library
        socket = dir.file("n.sock")
        environment = server?.environment
        extra = arguments
        self.executable = executable
        process = Process()
        try start()
    }

    public var url: String { "ws://127.0.0.1:\(port)/ws" }
    public var page: String { "http://127.0.0.1:\(port)/#token=\(token)" }
    public var stdoutPath: String { dir.file("daemon.out") }
    public var stderrPath: String { dir.file("daemon.err") }
    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Starts (again), and waits until both transports accept clients.
    public func start() throws {
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        // stderr is kept across restarts: what an earlier run said still matters.
        if !FileManager.default.fileExists(atPath: stderrPath) { _ = FileManager.default.createFile(atPath: stderrPath, contents: nil) }
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--library", library, "--socket", socket, "--listen", "127.0.0.1:0", "--token", token] + extra
        if let environment { process.environment = environment }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: stdoutPath)
        let errors = FileHandle(forWritingAtPath: stderrPath)
        errors?.seekToEndOfFile()
        process.standardError = errors
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
    public func stop() -> Int32 {
        guard process.isRunning else { return process.terminationStatus }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return process.terminationStatus
    }

    public func crash() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
}

public struct DaemonError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// An event as a client received it.
public struct ReceivedEvent: @unchecked Sendable {
    public let fields: [String: Any]
    public init(fields: [String: Any]) { self.fields = fields }
    public var type: String { fields["type"] as? String ?? "" }
    public var id: String { fields["id"].flatMap { $0 is NSNull ? nil : "\($0)" } ?? "null" }
    public var frame: Int? { fields["frame"] as? Int }
    public var heard: Int64? { (fields["heard"] as? NSNumber)?.int64Value }
    public var received: Int64 { (fields["received"] as? NSNumber)?.int64Value ?? 0 }
    /// A request's last event (docs/events.md).
    public var isTerminal: Bool { ["finished", "stopped", "error"].contains(type) }
    /// A cue's event: it has a `type`, the cue's, none of the names of the other events (a
    /// client's own marks, such as `{"client": "reconnected"}`, have none).
    public var isCue: Bool { !type.isEmpty && !EventEncoder.Kind.allCases.contains { $0.rawValue == type } }

    public static func parse(_ text: String) throws -> [ReceivedEvent] {
        try text.split(separator: "\n").map { line in
            guard let fields = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw DaemonError("not an event: \(line)")
            }
            return ReceivedEvent(fields: fields)
        }
    }
}


/// A client of the daemon running in the background (`Tests/clients/narrator_client.py`
/// through `python3`); its events are read once it has ended, or as they come with `waitFor`.
public final class DaemonClient: @unchecked Sendable {
    public static let script = Repo.path("Tests/clients/narrator_client.py")
    public let process = Process()
    /// Where its standard output goes (nil: discarded).
    private let outputFile: String?
    /// How long `finish` waits before it kills the client: no test hangs on one (a watcher of
    /// a playback that never starts waits for ever, as it should).
    public static let limit: TimeInterval = 120

    /// Starts `narrator_client.py ARGUMENTS`; `keepOutput: false` discards what it prints.
    public convenience init(_ arguments: [String], keepOutput: Bool = true) throws {
        try self.init(executable: "/usr/bin/env", ["python3", Self.script] + arguments, keepOutput: keepOutput)
    }

    /// Starts another client program that prints events the same way (the daemon bench's `load`).
    public init(executable: String, _ arguments: [String], keepOutput: Bool = true) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if keepOutput {
            let file = NSTemporaryDirectory() + "narrator-client-\(UUID().uuidString).jsonl"
            guard FileManager.default.createFile(atPath: file, contents: nil), let handle = FileHandle(forWritingAtPath: file) else {
                throw DaemonError("cannot create \(file)")
            }
            outputFile = file
            process.standardOutput = handle
            try process.run()
            try handle.close()
        } else {
            outputFile = nil
            process.standardOutput = FileHandle.nullDevice
            try process.run()
        }
    }

    deinit {
        if let outputFile { try? FileManager.default.removeItem(atPath: outputFile) }
    }

    /// What it has printed so far.
    private var printed: String {
        outputFile.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
    }

    /// Waits until it has printed an event of `type` (true), or for at most `seconds`.
    public func waitFor(_ type: String, within seconds: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            // Whole lines only: the last may still be being written.
            let text = printed
            if let end = text.lastIndex(of: "\n"), let events = try? ReceivedEvent.parse(String(text[..<end])),
                events.contains(where: { $0.type == type })
            {
                return true
            }
            usleep(10_000)
        }
        return false
    }

    /// Waits for it to end (killing it after `limit`): its exit status and the events it printed.
    public func finish() throws -> (status: Int32, events: [ReceivedEvent]) {
        let deadline = Date(timeIntervalSinceNow: Self.limit)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill()
            throw DaemonError("the client did not end within \(Int(Self.limit)) s: \(process.arguments ?? []); it printed \(printed)")
        }
        process.waitUntilExit()
        return (process.terminationStatus, try ReceivedEvent.parse(printed))
    }

    public func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
