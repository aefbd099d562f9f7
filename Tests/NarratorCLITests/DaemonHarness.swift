import Foundation
import NarratorTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

enum Clients {
    static let python = DaemonClient.script
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

    /// Lines through socat, the way a shell script would talk to the daemon: it sends them and
    /// closes its side; the daemon closes the connection once each has had its terminal event.
    static func socat(_ daemon: Daemon, input: String) throws -> ProcessResult {
        let script = "socat -t 30 - UNIX-CONNECT:\"$2\" < \"$1\""
        let file = daemon.dir.write("socat-in-\(UUID().uuidString.prefix(8)).txt", input)
        return try NarratorTestSupport.run("/bin/sh", ["-c", script, "sh", file, daemon.socket])
    }
}

/// A client on the daemon's Unix socket from the test itself: lines out, events in, with a
/// deadline on every read.
final class SocketClient {
    let fd: Int32
    private var pending = [UInt8]()

    init(_ path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw DaemonError("cannot connect to \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return }
            sent += count
        }
    }

    /// Events until one satisfies `last` (included), or nil when the connection closed or the
    /// deadline passed first.
    func events(timeout: TimeInterval = 30, until last: (ReceivedEvent) -> Bool) -> [ReceivedEvent]? {
        let deadline = Date().addingTimeInterval(timeout)
        var events: [ReceivedEvent] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeFirst(newline + 1)
                // Every line the daemon writes is one event: one that is not is a failure,
                // not something to step over.
                guard let event = (try? ReceivedEvent.parse(line))?.first else {
                    Issue.record("the daemon wrote a line that is not an event: \(line.prefix(200))")
                    continue
                }
                events.append(event)
                if last(event) { return events }
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { return nil }
            pending += buffer[0..<count]
        }
    }
}

/// What the kernel says of a process's size: threads, resident memory now and at its peak.
struct ProcessSize {
    let threads: Int
    let rssKiB: Int
    let peakKiB: Int

    init?(pid: Int32) {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func value(_ key: String) -> Int? {
            status.split(separator: "\n").first { $0.hasPrefix(key + ":") }
                .flatMap { Int($0.dropFirst(key.count + 1).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") }
        }
        guard let threads = value("Threads"), let rss = value("VmRSS"), let peak = value("VmHWM") else { return nil }
        (self.threads, rssKiB, peakKiB) = (threads, rss, peak)
    }
}
