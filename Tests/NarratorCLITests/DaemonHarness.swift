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
