import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's bounds on what clients hold: listings parked while their client does not read
/// (no worker waits), the connection cap (below the descriptor limit, with accept backing off
/// when descriptors run out anyway), the idle timeout, and the documented per-connection bounds
/// (64 active requests, 4 MiB unwritten, volume kept across playbacks, the warning for a
/// WebSocket beyond this machine). Each bounds work or counts, not wall time (wall-time checks
/// are in DaemonFairnessTests, run alone).
@Suite("Daemon limits")
struct DaemonLimitsTests {
    static let library = Repo.path("Timings/lessons")
    static let nullDevice = ["--output", "alsa", "--device", "null"]

    /// The loader children of `pid` now.
    static func children(of pid: Int32) -> [Int32] {
        var found: [Int32] = []
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            let listed = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
            found += listed.split(separator: " ").compactMap { Int32($0) }
        }
        return found
    }

    /// Clock ticks of CPU (user + system) `pid` has used.
    static func cpuTicks(_ pid: Int32) -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the name: state is field 3, utime 14, stime 15 (1-based, name = 2).
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    /// Bytes a connection is sent until the peer closes it (or `timeout` passes: nil).
    static func readToEnd(_ fd: Int32, timeout: TimeInterval = 30) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(timeout)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return nil }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return received }
            received += buffer[0..<count]
        }
    }

    /// A TCP connection to 127.0.0.1:`port`, or -1.
    static func connectTCP(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if connected != 0 {
            close(fd)
            return -1
        }
        return fd
    }

    // MARK: 28.7: clients that never read

    /// Twelve connections each ask for a long cue listing (`repeat` 1000: 9 MB) and never read.
    /// Before, each held a worker for up to 5 s while its backlog was full (three workers: a
    /// fourth client's request waited 22 s). Now a listing whose client has 256 KiB unwritten
    /// is parked: its loader child waits on its pipe, the worker goes on. So another client's
    /// request is answered while all twelve are still parked (their children alive, none
    /// ended), and what each non-reader was sent stays bounded.
    @Test func unreadListingsAreParkedAndHoldNoWorker() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: Self.nullDevice)
        defer { daemon.stop() }
        let pid = daemon.process.processIdentifier
        var slow: [SocketClient] = []
        for client in 0..<12 {
            let connection = try SocketClient(daemon.socket)
            connection.send(#"{"id": "slow-\#(client)", "op": "cues", "lesson": "sample.json", "chain": "correct", "repeat": 1000}"#)
            slow.append(connection)
        }
        // Every slow listing started (a child each), without any being read.
        var deadline = Date().addingTimeInterval(60)
        while Self.children(of: pid).count < 12 && Date() < deadline { usleep(20_000) }
        let parked = Self.children(of: pid)
        #expect(parked.count >= 12, "loader children of the slow listings: \(parked.count)")
        let good = try SocketClient(daemon.socket)
        good.send(#"{"id": "good", "op": "cues", "lesson": "sample.json", "chain": "correct"}"#)
        let answer = good.events(timeout: 60) { $0.isTerminal }
        #expect(answer?.last?.type == "finished", "\(answer?.last?.fields ?? [:])")
        // Answered while every slow listing was still waiting for its client: none of their
        // children had been stopped or had ended (before, at most three ran at once, and a
        // worker was freed only by a slow listing ending).
        let still = Set(Self.children(of: pid))
        #expect(Set(parked).isSubset(of: still), "slow listings ended before the good one was answered: \(parked.count - Set(parked).intersection(still).count)")
        // What a non-reader was sent is bounded: the socket's buffers plus the parking
        // threshold (256 KiB) and one read of the child, not 9 MB.
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.map(String.init) ?? ""
        print("daemon with 12 parked listings: \(rss)")
        // A parked listing whose client reads is taken up again and ends.
        let reader = slow[0]
        let all = reader.events(timeout: 120) { $0.isTerminal }
        #expect(all?.last?.type == "finished", "the parked listing, read: \(all?.last?.fields ?? [:])")
        #expect((all?.count ?? 0) > 1000, "\(all?.count ?? 0) events")
        // Closing the other connections ends their children.
        slow.removeAll()
        deadline = Date().addingTimeInterval(30)
        while !Self.children(of: pid).isEmpty && Date() < deadline { usleep(20_000) }
        #expect(Self.children(of: pid).isEmpty, "children left: \(Self.children(of: pid))")
        #expect(daemon.process.isRunning)
    }

    /// `--idle-timeout`: a connection with no request active and nothing unwritten is told why
    /// and closed once that long has passed; one with a request active (a subscription) is not.
    @Test func idleConnectionsAreClosedAndBusyOnesKept() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: Self.nullDevice + ["--idle-timeout", "0.3"])
        defer { daemon.stop() }
        let idle = try SocketClient(daemon.socket)
        let busy = try SocketClient(daemon.socket)
        busy.send(#"{"id": "s", "op": "subscribe", "playback": "next"}"#)
        let said = try #require(Self.readToEnd(idle.fd), "the idle connection was not closed")
        let line = String(decoding: said, as: UTF8.self)
        #expect(line.contains(#""type":"error""#) && line.contains("idle timeout"), "\(line)")
        // The busy one outlived the idle one, and still answers (its subscription was active).
        busy.send(#"{"id": "v", "op": "volume", "bus": "master", "gain": 1}"#)
        let answer = busy.events(timeout: 30) { $0.id == "v" && $0.isTerminal }
        #expect(answer?.last?.type == "finished", "the busy connection: \(answer?.last?.fields ?? [:])")
        // Once it has nothing active, it too is closed.
        busy.send(#"{"id": "x", "op": "stop", "request": "s"}"#)
        #expect(Self.readToEnd(busy.fd) != nil, "the connection with nothing active was not closed")
    }

    /// `--max-connections`: one connection beyond the cap gets one `error` line ("busy") and is
    /// closed, on either transport (WebSocket: HTTP 503); once one closes, a new one is served.
    @Test func connectionsBeyondTheCapAreToldAndClosed() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: Self.nullDevice + ["--max-connections", "3"])
        defer { daemon.stop() }
        var held = try (0..<3).map { _ in try SocketClient(daemon.socket) }
        for (index, client) in held.enumerated() {
            client.send(#"{"id": \#(index), "op": "volume", "bus": "master", "gain": 1}"#)
            #expect(client.events(timeout: 30) { $0.isTerminal }?.last?.type == "finished")
        }
        let beyond = try SocketClient(daemon.socket)
        let said = String(decoding: try #require(Self.readToEnd(beyond.fd), "not closed"), as: UTF8.self)
        #expect(said.contains(#""type":"error""#) && said.contains("busy") && said.contains("3 connections"), "\(said)")
        let web = Self.connectTCP(daemon.port)
        try #require(web >= 0)
        defer { close(web) }
        let http = String(decoding: try #require(Self.readToEnd(web), "the WebSocket port did not close"), as: UTF8.self)
        #expect(http.hasPrefix("HTTP/1.1 503") && http.contains("3 connections"), "\(http)")
        held.removeFirst()
        var served = false
        let deadline = Date().addingTimeInterval(30)
        while !served && Date() < deadline {
            let again = try SocketClient(daemon.socket)
            again.send(#"{"id": "again", "op": "volume", "bus": "master", "gain": 1}"#)
            served = again.events(timeout: 30) { $0.isTerminal }?.last?.type == "finished"
            if !served { usleep(50_000) }
        }
        #expect(served, "no connection was served after one of the three closed")
    }

    // MARK: 28.9: out of descriptors

    /// Under `prlimit --nofile=256`, 300 idle connections: the daemon stays up (before: SIGILL
    /// once in 15 runs), uses little CPU while they are held (before: its accept loop spun at
    /// 20–50 % of a core on EMFILE), tells those beyond its cap so, and serves again once they
    /// have gone. CPU is read from /proc (ticks over a second): work, not wall time.
    @Test(.requires(PulseTestServer.findExecutable("prlimit") != nil, "needs prlimit (util-linux)"))
    func outOfDescriptorsNeitherCrashesNorSpins() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let prlimit = try #require(PulseTestServer.findExecutable("prlimit"))
        let wrapper = dir.write("narrator-256", "#!/bin/sh\nexec \(prlimit) --nofile=256 \(Repo.narrator) \"$@\"\n")
        chmod(wrapper, 0o755)
        let daemon = try Daemon(dir: dir, library: Self.library, executable: wrapper, arguments: Self.nullDevice)
        defer { daemon.stop() }
        let pid = daemon.process.processIdentifier
        let limits = try String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8)
        try #require(limits.split(separator: "\n").contains { $0.hasPrefix("Max open files") && $0.contains(" 256 ") }, "\(limits)")
        var clients: [SocketClient] = []
        for _ in 0..<300 { clients.append(try SocketClient(daemon.socket)) }
        // What each was told: the first ones nothing (held), those beyond the cap one line.
        usleep(500_000)
        var refused = 0
        for client in clients.suffix(60) {
            var poller = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, 2000) > 0, let said = Self.readToEnd(client.fd, timeout: 5),
                String(decoding: said, as: UTF8.self).contains("busy")
            {
                refused += 1
            }
        }
        #expect(refused == 60, "of the last 60 of 300 connections, \(refused) were told the daemon is busy")
        let before = try #require(Self.cpuTicks(pid))
        usleep(1_000_000)
        let after = try #require(Self.cpuTicks(pid))
        let ticksPerSecond = Int(sysconf(Int32(_SC_CLK_TCK)))
        print("daemon CPU with 300 connections under nofile 256: \(after - before) ticks in 1 s (\(ticksPerSecond) a second)")
        #expect(after - before <= ticksPerSecond / 10, "the daemon used \(after - before) ticks of CPU in a second while idle")
        #expect(daemon.process.isRunning, "the daemon died: \(daemon.stderr)")
        clients.removeAll()
        // Served again.
        var answer: [ReceivedEvent]?
        let deadline = Date().addingTimeInterval(30)
        while answer?.last?.type != "finished" && Date() < deadline {
            let client = try SocketClient(daemon.socket)
            client.send(#"{"id": "after", "op": "cues", "lesson": "sample.json", "chain": "correct"}"#)
            answer = client.events(timeout: 30) { $0.isTerminal }
        }
        #expect(answer?.last?.type == "finished", "\(answer?.last?.fields ?? [:])")
        #expect(daemon.stop() == 0, "\(daemon.stderr)")
    }

    // MARK: 28.25: documented bounds, tested

    /// "A connection may have 64 requests active at once": 64 subscriptions are taken, the 65th
    /// request is refused with an error naming the bound, and once one ends another is taken.
    @Test func aConnectionHas64RequestsActiveAtMost() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: Self.nullDevice)
        defer { daemon.stop() }
        let client = try SocketClient(daemon.socket)
        for index in 0..<64 { client.send(#"{"id": "s\#(index)", "op": "subscribe", "playback": "next"}"#) }
        client.send(#"{"id": "one-too-many", "op": "subscribe", "playback": "next"}"#)
        let refused = client.events(timeout: 30) { $0.id == "one-too-many" && $0.isTerminal }
        #expect(refused?.last?.type == "error", "\(refused?.last?.fields ?? [:])")
        #expect((refused?.last?.fields["message"] as? String)?.contains("64 requests are already active") == true, "\(refused?.last?.fields ?? [:])")
        // Nothing else ended meanwhile.
        #expect(refused?.count == 1, "\(refused?.map(\.type) ?? [])")
        client.send(#"{"id": "stop", "op": "stop", "request": "s0"}"#)
        #expect(client.events(timeout: 30) { $0.id == "stop" && $0.isTerminal }?.last?.type == "finished")
        client.send(#"{"id": "room", "op": "subscribe", "playback": "next"}"#)
        client.send(#"{"id": "probe", "op": "volume", "bus": "master", "gain": 1}"#)
        let after = client.events(timeout: 30) { $0.id == "probe" && $0.isTerminal }
        #expect(!(after ?? []).contains { $0.id == "room" }, "the 64th place, freed, was refused: \(after?.map(\.fields) ?? [])")
    }

    /// "A client that stops reading is disconnected once 4 MiB of its events are unwritten": a
    /// playback of 40 moments that each pulse 5,000 targets (some 300 KB of events a moment,
    /// 12 MB in all) for a client that never reads. Its connection is closed having been sent
    /// far less than that, and the playback stops: a subscriber that reads (raw bytes, so it
    /// keeps up) gets `stopped`, reason "client disconnected", before the last moment.
    @Test func aClientThatStopsReadingIsDroppedAfter4MiB() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let targets = (0..<5_000).map { #""target-\#($0)""# }.joined(separator: ",")
        let items = (0..<40).map { _ in #"{"pulse": [\#(targets)]}, {"silence": 0.05}"# }.joined(separator: ", ")
        _ = dir.write("lib/pulses.json", #"{"sampleRate": 48000, "clips": {}, "chains": {"many": [\#(items)]}}"#)
        let daemon = try Daemon(dir: dir, library: dir.file("lib"), arguments: ["--output", "file", "--device", dir.file("heard.wav")])
        defer { daemon.stop() }
        let listener = try SocketClient(daemon.socket)
        listener.send(#"{"id": "l", "op": "subscribe", "playback": "next"}"#)
        let deaf = try SocketClient(daemon.socket)
        var small = Int32(16384)
        setsockopt(deaf.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        deaf.send(#"{"id": "p", "op": "play", "lesson": "pulses.json", "chain": "many"}"#)
        // The subscriber's stream, read raw until its terminal line.
        var heard = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        let deadline = Date().addingTimeInterval(120)
        var terminal: String?
        while terminal == nil && Date() < deadline {
            var poller = pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 1000) > 0 else { continue }
            let count = read(listener.fd, &buffer, buffer.count)
            if count <= 0 { break }
            let from = max(0, heard.count - 200)
            heard.append(contentsOf: buffer[0..<count])
            for type in ["stopped", "finished", "error"] where heard[from...].range(of: Data(#""type":"\#(type)""#.utf8)) != nil {
                let start = heard[from...].range(of: Data(#""type":"\#(type)""#.utf8))!.lowerBound
                let lineStart = heard[..<start].lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? heard.startIndex
                let lineEnd = heard[start...].firstIndex(of: UInt8(ascii: "\n")) ?? heard.endIndex
                terminal = String(decoding: heard[lineStart..<lineEnd], as: UTF8.self)
            }
        }
        let line = try #require(terminal, "the subscriber had no terminal event (\(heard.count) bytes)")
        #expect(line.contains(#""type":"stopped""#) && line.contains(#""reason":"client disconnected""#), "\(line)")
        var moments = 0
        var searchFrom = heard.startIndex
        while let found = heard[searchFrom...].range(of: Data(#""target":"target-0","#.utf8)) {
            moments += 1
            searchFrom = found.upperBound
        }
        #expect(moments < 40, "the playback went on to its end: \(moments) moments")
        let sent = try #require(Self.readToEnd(deaf.fd, timeout: 60), "the non-reader's connection was not closed")
        print("a non-reading client was sent \(sent.count) bytes before it was dropped; the subscriber heard \(moments) of 40 moments (\(heard.count) bytes)")
        #expect(sent.count < 8 << 20, "\(sent.count) bytes")
    }

    /// The peak amplitude of a WAV file, by sox.
    static func peak(_ path: String) throws -> Double {
        let result = try runTool("sox", [path, "-n", "stat"])
        let line = try #require(result.stderr.split(separator: "\n").first { $0.hasPrefix("Maximum amplitude") }, "\(result.stderr)")
        return try #require(Double(line.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? ""))
    }

    /// "`volume`: this connection's levels, kept across its playbacks": master muted before the
    /// first playback leaves both that one and the next silent, on the file output; another
    /// connection's playback of the same chain is not.
    @Test(.requires(PulseTestServer.findExecutable("sox") != nil, "needs sox"))
    func volumeIsKeptAcrossAConnectionsPlaybacks() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let heard = dir.file("heard.wav")
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "file", "--device", heard, "--latency", "100"])
        defer { daemon.stop() }
        func play(on client: SocketClient, _ id: String) throws -> Double {
            client.send(#"{"id": "\#(id)", "op": "play", "lesson": "sample.json", "chain": "popup"}"#)
            let events = client.events(timeout: 60) { $0.id == id && $0.isTerminal }
            try #require(events?.last?.type == "finished", "\(events?.last?.fields ?? [:])")
            // The file appears under its name once the playback has stopped.
            let deadline = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: heard) && Date() < deadline { usleep(20_000) }
            defer { try? FileManager.default.removeItem(atPath: heard) }
            return try Self.peak(heard)
        }
        let quiet = try SocketClient(daemon.socket)
        quiet.send(#"{"id": "v", "op": "volume", "bus": "master", "muted": true}"#)
        #expect(quiet.events(timeout: 30) { $0.isTerminal }?.last?.type == "finished")
        let first = try play(on: quiet, "p1")
        let second = try play(on: quiet, "p2")
        let other = try play(on: try SocketClient(daemon.socket), "o")
        print("peaks: muted connection \(first), \(second); another connection \(other)")
        #expect(other > 0.05, "the chain is not silent: \(other)")
        #expect(first == 0 && second == 0, "muted, the connection's playbacks peaked at \(first) and \(second)")
    }

    /// "Loopback unless told otherwise (another host prints a warning)": `--listen 0.0.0.0:0`
    /// warns on stderr that the WebSocket is reachable beyond this machine; loopback does not.
    @Test func aWebSocketBeyondThisMachineIsWarnedOf() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let open = try Daemon(dir: dir, library: Self.library, arguments: Self.nullDevice + ["--listen", "0.0.0.0:0"])
        #expect(open.stop() == 0)
        #expect(open.stderr.contains("warning: WebSocket listens on 0.0.0.0, beyond this machine"), "\(open.stderr)")
        let other = TempDir()
        defer { other.remove() }
        let loopback = try Daemon(dir: other, library: Self.library, arguments: Self.nullDevice)
        #expect(loopback.stop() == 0)
        #expect(!loopback.stderr.contains("beyond this machine"), "\(loopback.stderr)")
    }
}
