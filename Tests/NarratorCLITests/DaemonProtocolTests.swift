import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `narrator serve` without playing anything: the protocol, bad input, access. Real clients:
/// socat on the Unix socket, Python's websockets on WebSocket.
@Suite("Daemon protocol", .requires(PulseTestServer.findExecutable("socat") != nil, "needs socat"))
struct DaemonProtocolTests {
    static let library = Repo.path("Timings/lessons")

    @Test func cuesOverTheSocketAreTheCueSheet() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let reply = try Clients.socat(daemon, input: #"{"id": 7, "op": "cues", "lesson": "sample.json", "chain": "correct", "seed": 7}"# + "\n")
        let events = try ReceivedEvent.parse(reply.stdout)
        let sheet = try run(Repo.narrator, ["cues", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "--seed", "7"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])
        let cues = try #require(object["cues"] as? [[String: Any]])
        #expect(events.dropLast().map { "\($0.type)@\($0.frame ?? -1)" } == cues.map { "\($0["type"]!)@\($0["frame"]!)" })
        #expect(events.allSatisfy { $0.id == "7" })
        #expect(events.last?.type == "finished" && events.last?.frame == object["frames"] as? Int)
        #expect(events.filter(\.isTerminal).count == 1)
    }

    /// Garbage, malformed and oversized requests each get one error event that says what is
    /// wrong; the connection stays up and answers the good request after them.
    @Test func badRequestsGetAnErrorAndTheConnectionStays() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // A library with a symbolic link inside that leads out of it.
        let library = dir.file("library")
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        // The sample lesson itself, its paths made absolute so that it loads from here.
        let sample = try String(contentsOfFile: Self.library + "/sample.json", encoding: .utf8)
            .replacingOccurrences(of: "\"../../Audio/", with: "\"" + Repo.path("Audio") + "/")
            .replacingOccurrences(of: "\"timings\": \"", with: "\"timings\": \"" + Self.library + "/")
        dir.write("library/sample.json", sample)
        try FileManager.default.createSymbolicLink(atPath: library + "/escape.json", withDestinationPath: Repo.path("Package.swift"))
        let daemon = try Daemon(dir: dir, library: library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        var garbage = Data([0xff, 0xfe, 0x00, 0x01, 0x80, 0x0a])  // not UTF-8, then a newline
        garbage += Data("not json\n".utf8)
        garbage += Data(#"{"op": "play"}"# .utf8) + Data([0x0a])
        garbage += Data(#"{"id": 1, "op": "dance"}"# .utf8) + Data([0x0a])
        garbage += Data(#"{"id": 2, "op": "play", "lesson": "sample.json", "chain": 5}"# .utf8) + Data([0x0a])
        garbage += Data(#"{"id": 3, "op": "play", "lesson": "../../Package.swift", "chain": "x"}"# .utf8) + Data([0x0a])
        garbage += Data(#"{"id": 4, "op": "play", "lesson": "/etc/passwd", "chain": "x"}"# .utf8) + Data([0x0a])
        garbage += Data(#"{"id": 5, "op": "play", "lesson": "sample.json", "chain": "nope"}"# .utf8) + Data([0x0a])
        garbage += Data(#"{"id": 6, "op": "stop", "request": 99}"# .utf8) + Data([0x0a])
        garbage += Data(#"{"id": 7, "op": "cues", "lesson": "escape.json", "chain": "x"}"# .utf8) + Data([0x0a])
        garbage += Data(repeating: UInt8(ascii: "x"), count: 200_000) + Data([0x0a])
        garbage += Data(#"{"id": "ok", "op": "cues", "lesson": "sample.json", "chain": "correct"}"# .utf8) + Data([0x0a])
        let file = dir.write("garbage.bin", data: garbage)
        let reply = try run("/bin/sh", ["-c", "socat -t 30 - UNIX-CONNECT:\"$2\" < \"$1\"", "sh", file, daemon.socket])
        let events = try ReceivedEvent.parse(reply.stdout)
        let errors = events.filter { $0.type == "error" }
        let messages = errors.map { "\($0.id): \($0.fields["message"] as? String ?? "")" }
        #expect(errors.count == 11, "\(messages)")
        func said(_ id: String, _ text: String) -> Bool { messages.contains { $0.hasPrefix("\(id): ") && $0.contains(text) } }
        #expect(said("null", "not valid JSON"))
        #expect(said("null", "id: missing key"))
        #expect(said("1", "unknown op 'dance'"))
        #expect(said("2", "chain: expected a string"))
        #expect(said("3", "outside the lesson library"))
        #expect(said("4", "outside the lesson library"))
        #expect(said("5", "nope"))
        #expect(said("6", "not active"))
        #expect(said("7", "outside the lesson library"))
        #expect(said("null", "over the 65536-byte limit"))
        #expect(events.last?.id == "ok" && events.last?.type == "finished", "the connection stayed up: \(reply.stdout.suffix(300))")
        #expect(daemon.stop() == 0)
    }

    /// Controls checked before anything plays: each bad one gets one error naming the key, a
    /// good `volume` is `finished`, and controls of a request that is not playing are refused.
    @Test func badControlsGetAnErrorEach() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let reply = try Clients.socat(
            daemon,
            input: """
                {"id": 1, "op": "volume", "bus": "drums", "gain": 1}
                {"id": 2, "op": "volume", "bus": "music", "gain": 5}
                {"id": 3, "op": "volume", "bus": "music", "gain": -0.5}
                {"id": 4, "op": "volume", "bus": "music"}
                {"id": 5, "op": "volume", "bus": "music", "muted": "yes"}
                {"id": 6, "op": "pause", "request": "nothing"}
                {"id": 7, "op": "resume", "request": "a", "from": "yesterday"}
                {"id": 8, "op": "seek", "request": "a", "frame": 5, "clip": "p1"}
                {"id": 9, "op": "seek", "request": "a", "frame": 1e30}
                {"id": 10, "op": "say", "request": "a", "clip": "p1"}
                {"id": 11, "op": "say", "request": "a", "clip": "p1", "word": 0, "then": "dance"}
                {"id": 12, "op": "seek", "request": "a", "word": 2}
                {"id": 13, "op": "speed", "request": "a", "speed": 2.5}
                {"id": 14, "op": "speed", "request": "a", "speed": "fast"}
                {"id": 15, "op": "speed", "request": "a"}
                {"id": 16, "op": "speed", "request": "nothing", "speed": 0.75}
                {"id": "ok", "op": "volume", "bus": "music", "gain": 0.5, "muted": true}

                """)
        let events = try ReceivedEvent.parse(reply.stdout)
        let byID = Dictionary(events.filter(\.isTerminal).map { ($0.id, "\($0.type): \($0.fields["message"] as? String ?? "")") }, uniquingKeysWith: { a, b in a + " | " + b })
        #expect(byID.count == 17 && events.filter(\.isTerminal).count == 17, "\(byID)")
        func said(_ id: String, _ text: String) -> Bool { byID[id].map { $0.hasPrefix("error: ") && $0.contains(text) } ?? false }
        #expect(said("1", "bus: expected \"voice\""))
        #expect(said("2", "gain: expected a gain from 0 to 4"))
        #expect(said("3", "gain: expected a gain"))
        #expect(said("4", "give a gain, muted, or both"))
        #expect(said("5", "muted: expected true or false"))
        #expect(said("6", "request nothing is not playing"))
        #expect(said("7", "from: expected"))
        #expect(said("8", "give a frame, a clip, or a clip and a word"))
        #expect(said("9", "frame:"))
        #expect(said("10", "word: missing key"))
        #expect(said("11", "then: expected"))
        #expect(said("12", "give a frame, a clip, or a clip and a word"))
        #expect(said("13", "speed: expected a speed from 0.5 to 2"))
        #expect(said("14", "speed: expected a speed from 0.5 to 2"))
        #expect(said("15", "speed: missing key"))
        #expect(said("16", "request nothing is not playing"))
        #expect(byID["ok"] == "finished: ", "\(byID)")
    }

    /// Requests that arrive a few bytes at a time (a slow link) are read whole: the daemon
    /// searches each byte for the newline once, however many pieces a line comes in, and a
    /// piece that ends one request and starts the next splits them where the newline is.
    @Test func requestsInPiecesAreReadWhole() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let client = try SocketClient(daemon.socket)
        let padding = String(repeating: " ", count: 3000)
        let text = #"{"id": "a", "op": "volume", "bus": "music", "gain": 0.5\#(padding)}"# + "\n" + #"{"id": "b", "op": "volume", "bus": "drums", "gain": 1}"# + "\n"
        let bytes = Array(text.utf8)
        for start in stride(from: 0, to: bytes.count, by: 7) {
            _ = bytes[start..<min(start + 7, bytes.count)].withUnsafeBytes { send(client.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if start % 700 == 0 { usleep(1000) }
        }
        let events = try #require(client.events(timeout: 10) { $0.id == "b" && $0.isTerminal })
        let terminal = events.filter(\.isTerminal).map { "\($0.id) \($0.type)" }
        #expect(terminal == ["a finished", "b error"], "\(terminal)")
    }

    /// Taps a playback cannot take are refused, and nothing of them is kept: on a chain; with
    /// an answer over 256 bytes (a 60 KB one is the attack: kept, a flood of them would grow the
    /// daemon without bound); beyond the taps still waiting to be heard (on ALSA's null device
    /// the clock never settles, so none is heard, and no event says the playback has opened).
    @Test func tapsBeyondWhatAPlaybackTakesAreRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let client = try SocketClient(daemon.socket)
        var sent = 0
        /// The terminal event of a tap on `target`; a message when it is an error.
        func tap(_ target: String, _ answer: String) -> String {
            sent += 1
            client.send(#"{"id": "t\#(sent)", "op": "tap", "request": "\#(target)", "answer": "\#(answer)"}"#)
            guard let reply = client.events(timeout: 10, until: { $0.id == "t\(sent)" && $0.isTerminal })?.last else { return "no reply" }
            return reply.type == "error" ? reply.fields["message"] as? String ?? "" : reply.type
        }
        /// The first tap's answer once `target` plays (it opens a moment after the request).
        func firstTap(_ target: String, _ answer: String) -> String {
            for _ in 0..<100 {
                let reply = tap(target, answer)
                if !reply.contains("is not playing") { return reply }
                usleep(20_000)
            }
            return "never played"
        }
        client.send(#"{"id": "chain", "op": "play", "lesson": "sample.json", "chain": "correct", "seed": 7}"#)
        let onChain = firstTap("chain", "see")
        #expect(onChain.contains("plays a chain: only an activity answered live takes taps"), "\(onChain)")
        client.send(#"{"id": "stop", "op": "stop", "request": "chain"}"#)
        #expect(client.events(timeout: 10) { $0.id == "chain" && $0.isTerminal } != nil)

        client.send(#"{"id": "act", "op": "play", "lesson": "homer-sight-words.json", "activity": "sight-words", "seed": 7}"#)
        let long = tap("act", String(repeating: "a", count: 60_000))
        #expect(long.contains("answer: at most 256 bytes, got 60000"), "\(long)")
        var outcomes = [firstTap("act", "zebra")]
        for _ in 0..<32 { outcomes.append(tap("act", "zebra")) }
        #expect(outcomes.prefix(32).allSatisfy { $0 == "finished" }, "\(outcomes)")
        #expect(outcomes.last?.contains("has 32 taps not yet heard") == true, "\(outcomes)")
    }

    /// A play stopped before it plays has one terminal event, `stopped`. Stopped while it
    /// waits for a worker, it ends at once and its id is free again; stopped while a worker
    /// prepares it, it keeps its id until its terminal event (a new request with the same id
    /// is refused meanwhile) and the playback, once open, is stopped at once. The client's
    /// half-close (socat at the end of its input) lets every answer out, then the daemon closes.
    @Test func stopWhilePreparingEndsThatRequestOnce() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let started = Date()
        let reply = try Clients.socat(
            daemon,
            input: """
                {"id": "a", "op": "play", "lesson": "sample.json", "chain": "correct"}
                {"id": "s", "op": "stop", "request": "a"}
                {"id": "a", "op": "play", "lesson": "sample.json", "chain": "correct"}

                """)
        let events = try ReceivedEvent.parse(reply.stdout)
        #expect(Date().timeIntervalSince(started) < 10, "the daemon closed once every request had ended")
        let terminal = events.filter(\.isTerminal).map { "\($0.id) \($0.type) \($0.fields["reason"] ?? $0.fields["message"] ?? "")" }
        #expect(terminal.count == 3, "\(terminal)")
        #expect(terminal.contains { $0.hasPrefix("s finished") })
        let mine = terminal.filter { $0.hasPrefix("a ") }
        #expect(mine.count == 2, "\(terminal)")
        if mine.first == "a stopped stopped" {
            // Ended at once from the queue: the second play was a new request (the null device
            // cannot time it: an error of its own, or refused as still active if it came first).
            #expect(mine.last?.hasPrefix("a error") == true, "\(terminal)")
        } else {
            #expect(mine.contains { $0.hasPrefix("a error") && $0.contains("still active") }, "\(terminal)")
            #expect(mine.contains("a stopped stopped"), "\(terminal)")
        }
        #expect(!events.contains { $0.isCue }, "stopped before anything was heard")
    }

    /// The event-loop threads (NIO's, named NIO-ELT-…) as the kernel reports them: their
    /// scheduling policy and real-time priority.
    static func eventLoopThreads(of pid: Int32) -> [(policy: Int, priority: Int)] {
        KernelThread.all(of: "\(pid)").filter { $0.name.hasPrefix("NIO-ELT") }.map { ($0.policy, $0.realtimePriority) }
    }

    /// By default the event loops run at SCHED_FIFO 18, and nothing that plays or prepares
    /// inherits it: the workers and a playback's audio and cue threads are at normal priority.
    /// `--no-realtime-delivery` leaves the loops normal too.
    @Test(.requires(geteuid() == 0, "SCHED_FIFO needs root here", allowed: .root))
    func deliveryThreadsRunAtRealTimePriorityAndNothingInheritsIt() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "alsa", "--device", "null"])
        let pid = "\(daemon.process.processIdentifier)"
        let raised = Self.eventLoopThreads(of: daemon.process.processIdentifier)
        #expect(raised.count >= 1, "no event-loop thread found")
        #expect(raised.allSatisfy { $0.policy == Int(SCHED_FIFO) && $0.priority == 18 }, "\(raised)")
        // A playback on ALSA's null device runs for about two seconds (its clock never
        // settles, then ETIME): long enough to see its threads.
        let client = Thread {
            _ = try? Clients.socat(daemon, input: #"{"id": 1, "op": "play", "lesson": "sample.json", "chain": "correct", "seed": 7}"# + "\n")
        }
        client.start()
        var playing: [KernelThread] = []
        let deadline = Date(timeIntervalSinceNow: 10)
        while Date() < deadline {
            playing = KernelThread.all(of: pid).filter { $0.name == "narrator-audio" || $0.name == "narrator-cues" }
            if playing.count == 2 { break }
            usleep(5000)
        }
        let workers = KernelThread.all(of: pid).filter { $0.name.hasPrefix("narrator-prep-") }
        #expect(playing.count == 2, "the playback's threads were not seen: \(KernelThread.all(of: pid).map(\.name))")
        #expect(workers.count >= 1, "no worker thread found")
        #expect((playing + workers).allSatisfy { $0.policy == Int(SCHED_OTHER) && $0.realtimePriority == 0 }, "\(playing + workers)")
        #expect(daemon.stop() == 0)

        let normal = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "alsa", "--device", "null", "--no-realtime-delivery"])
        let threads = Self.eventLoopThreads(of: normal.process.processIdentifier)
        #expect(threads.count >= 1 && threads.allSatisfy { $0.policy == Int(SCHED_OTHER) && $0.priority == 0 }, "\(threads)")
        #expect(normal.stop() == 0)
    }

    @Test func socketIsPrivateAndItsFileIsManaged() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "alsa", "--device", "null"])
        var info = stat()
        #expect(lstat(daemon.socket, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600, "mode \(String(info.st_mode & 0o777, radix: 8))")
        // A second daemon on the same socket is refused while the first is alive.
        let second = try run(Repo.narrator, ["serve", "--library", Self.library, "--socket", daemon.socket])
        #expect(second.status == 1 && second.stderr.contains("another daemon is listening"), "\(second.stderr)")
        #expect(second.stderr.split(separator: "\n").count == 1)
        // Killed, it leaves its socket file; a new daemon takes it over.
        daemon.crash()
        #expect(FileManager.default.fileExists(atPath: daemon.socket))
        try daemon.start()
        let reply = try Clients.socat(daemon, input: #"{"id": 1, "op": "cues", "lesson": "sample.json", "chain": "correct"}"# + "\n")
        #expect(try ReceivedEvent.parse(reply.stdout).last?.type == "finished")
        // Stopped, it removes it.
        #expect(daemon.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socket))
        // Not a socket: left alone.
        let file = dir.write("plain", "keep me")
        let third = try run(Repo.narrator, ["serve", "--library", Self.library, "--socket", file])
        #expect(third.status == 1 && third.stderr.contains("is not a socket"), "\(third.stderr)")
        #expect((try? String(contentsOfFile: file, encoding: .utf8)) == "keep me")
    }

    @Test(.requires(Clients.havePythonWebSockets, "needs python3 websockets"))
    func webSocketNeedsTheTokenAndRefusesOversizedMessages() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        #expect(daemon.url.hasPrefix("ws://127.0.0.1:"), "loopback by default")
        let refused = try runTool("python3", [Clients.python, "run", "--ws", daemon.url, "--token", "wrong-token", #"{"id":1,"op":"cues","lesson":"sample.json","chain":"correct"}"#])
        #expect(refused.status == 1 && refused.stderr.contains("rejected WebSocket connection: HTTP 4"), "\(refused.stderr)")
        let big = #"{"id":"big","op":"cues","lesson":""# + String(repeating: "x", count: 100_000) + #""}"#
        let good = #"{"id":"good","op":"cues","lesson":"sample.json","chain":"correct"}"#
        let result = try Clients.run(daemon, ["not json", big, good])
        #expect(result.status == 0, "\(result.stderr)")
        let terminal = result.events.filter(\.isTerminal)
        #expect(terminal.count == 3)
        #expect(terminal.contains { $0.type == "error" && ($0.fields["message"] as? String ?? "").contains("65536-byte limit") })
        #expect(result.events.last?.id == "good" && result.events.last?.type == "finished")
        // The pages are served without the token (they hold none); the socket needs it.
        let fetch = "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode())"
        let page = try runTool("python3", ["-c", fetch, "http://127.0.0.1:\(daemon.port)/"])
        #expect(page.stdout.contains("narrator-player.js"))
        let readAlong = try runTool("python3", ["-c", fetch, "http://127.0.0.1:\(daemon.port)/read-along.html"])
        #expect(readAlong.stdout.contains("read-along.js"))
    }
}
