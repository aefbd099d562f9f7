import Foundation
import NarratorTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `--idle-timeout` for a client that stops reading while output waits for it (issue 28.7):
/// the connection is closed once its peer has read nothing for the timeout, on the daemon's
/// Unix socket, its WebSocket and `narrator edit`'s HTTP server. Before, such a connection
/// was held by the daemon until the connection cap or the 4 MiB drop (a parked listing, once
/// its loader's 20 s were up, became a connection with no request and events unwritten, kept
/// for ever), and by `edit` for ever (Hummingbird's idle timeout stops while a response is
/// being written). The timeout is wall time by nature; the margins are many times it.
@Suite("Stalled readers")
struct StalledReaderTests {
    /// Reads what `fd` was sent until the peer closes it (EOF or reset) or `timeout` passes.
    static func drain(_ fd: Int32, timeout: TimeInterval = 60) -> (bytes: [UInt8], closed: Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while deadline.timeIntervalSinceNow > 0 {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 200) > 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return (received, true) }
            received += buffer[0..<count]
        }
        return (received, false)
    }

    static func shrinkReceiveBuffer(_ fd: Int32) {
        var small = Int32(16384)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Two clients, one on each transport, ask for three long cue listings (2.3 MB each over
    /// WebSocket: TCP's buffers over loopback take up to 4 MB before anything waits in the
    /// daemon) and read nothing. Another client is answered meanwhile. Both stalled connections
    /// are closed within a few seconds of the 1 s timeout (their listings' loader children end
    /// with them, well before the loader's 20 s limit would end them), and what each had been
    /// sent stops short: read after the close, it holds no terminal event for the last
    /// listing, and no idle-timeout line (the rule for a connection with nothing unwritten).
    @Test func daemonClosesConnectionsWhosePeerStoppedReading() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: DaemonLimitsTests.library, arguments: DaemonLimitsTests.nullDevice + ["--idle-timeout", "1"])
        defer { daemon.stop() }
        let pid = daemon.process.processIdentifier
        let listings = (1...3).map { #"{"id": "deaf-\#($0)", "op": "cues", "lesson": "sample.json", "chain": "correct", "repeat": 1000}"# }
        let unix = try SocketClient(daemon.socket)
        Self.shrinkReceiveBuffer(unix.fd)
        for listing in listings { unix.send(listing) }
        // Its receive buffer made small before it connects: TCP's buffers over loopback hold
        // the whole listing otherwise (nothing would wait in the daemon).
        let web = try RawWebSocket(port: daemon.port, token: daemon.token, receiveBuffer: 16384)
        for listing in listings { web.send(RawWebSocket.frame(0x1, Array(listing.utf8))) }
        // Both listings under way (a loader child each), neither read.
        var deadline = Date().addingTimeInterval(60)
        while DaemonLimitsTests.children(of: pid).count < 2 && Date() < deadline { usleep(20_000) }
        try #require(DaemonLimitsTests.children(of: pid).count >= 2, "the two listings did not start")
        let started = Date()
        // Another client is served while they stall.
        let good = try SocketClient(daemon.socket)
        good.send(#"{"id": "good", "op": "cues", "lesson": "sample.json", "chain": "correct"}"#)
        #expect(good.events(timeout: 30) { $0.isTerminal }?.last?.type == "finished", "the other client was not served")
        // Closed: the connections are dropped, and their listings' children with them.
        deadline = started.addingTimeInterval(10)
        while !DaemonLimitsTests.children(of: pid).isEmpty && Date() < deadline { usleep(20_000) }
        let ended = Date().timeIntervalSince(started)
        print("stalled listings dropped \(String(format: "%.2f", ended)) s after they started (idle timeout 1 s)")
        #expect(DaemonLimitsTests.children(of: pid).isEmpty, "the stalled listings were still held \(ended) s after they started")
        // What each was sent ends without the listing's terminal event: cut off, not finished.
        let overSocket = Self.drain(unix.fd)
        #expect(overSocket.closed, "the Unix socket connection was not closed")
        func cutOff(_ events: [Substring]) -> Bool {
            events.count > 100 && !events.contains { ($0.contains(#""id":"deaf-3""#) && $0.contains(#""type":"finished""#)) || $0.contains(#""type":"error""#) }
        }
        let lines = String(decoding: overSocket.bytes, as: UTF8.self).split(separator: "\n")
        let socketCutOff = cutOff(lines)
        #expect(socketCutOff, "Unix socket: \(lines.count) lines, last \(lines.last ?? "")")
        let overWeb = web.read(quiet: 60)
        #expect(overWeb.eof, "the WebSocket connection was not closed")
        let texts = overWeb.frames.filter { $0.opcode == 0x1 }.map { Substring(decoding: $0.payload, as: UTF8.self) }
        let webCutOff = cutOff(texts)
        #expect(webCutOff, "WebSocket: \(texts.count) events, last \(texts.last ?? "")")
        print("sent before the close: \(overSocket.bytes.count) bytes (Unix socket), \(texts.count) events (WebSocket)")
        #expect(daemon.process.isRunning, "\(daemon.stderr)")
    }

    /// `narrator edit --idle-timeout 1`: a client asks for a clip's audio (11.5 MB) and reads
    /// nothing. Read 6 s later, the answer stops short of its Content-Length and the connection
    /// is closed: it was dropped while its response was waiting. A request on another
    /// connection is answered meanwhile. (This held before the change too: Hummingbird hands
    /// the whole answer to the channel at once, and its idle timeout then counts.)
    @Test func editClosesAConnectionWhosePeerStoppedReading() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let rate = 48000
        let frames = 120 * rate
        var samples = [Int16](repeating: 0, count: frames)
        for frame in rate..<(2 * rate) { samples[frame] = Int16(9000 * sin(Double(frame) * 2 * .pi * 440 / Double(rate))) }
        _ = dir.write("long.wav", data: WAVFile.pcm16(samples, rate: rate))
        _ = dir.write("long.json", #"{"words": [{"text": "tone", "start": 1.0, "end": 2.0}]}"#)
        let lesson = dir.write(
            "lesson.json", #"{"sampleRate": 48000, "clips": {"w": {"file": "long.wav", "timings": "long.json"}}, "chains": {"c": [{"clip": "w"}]}}"#)
        let editor = try EditTests.Editor(dir, lesson: lesson, arguments: ["--idle-timeout", "1"])
        defer { _ = editor.stop() }
        let port = try #require(URL(string: editor.url)?.port)
        let deaf = DaemonLimitsTests.connectTCP(port)
        try #require(deaf >= 0)
        defer { close(deaf) }
        Self.shrinkReceiveBuffer(deaf)
        let request = Array("GET /audio.wav HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { write(deaf, $0.baseAddress, $0.count) }
        // Another connection is served meanwhile.
        let other = DaemonLimitsTests.connectTCP(port)
        try #require(other >= 0)
        defer { close(other) }
        let ask = Array("GET /clip.json HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        _ = ask.withUnsafeBytes { write(other, $0.baseAddress, $0.count) }
        let answer = String(decoding: Self.drain(other, timeout: 30).bytes, as: UTF8.self)
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(200))")
        usleep(6_000_000)
        let (bytes, closed) = Self.drain(deaf)
        let head = String(decoding: bytes.prefix(1024), as: UTF8.self)
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") }
        let body = (bytes.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound).map { bytes.count - $0 } ?? 0
        print("edit: a non-reader of \(length ?? -1) bytes of audio had \(body) when it was closed")
        #expect(head.hasPrefix("HTTP/1.1 200") && (length ?? 0) > 5_000_000, "\(head.prefix(300))")
        #expect(closed && body < (length ?? 0), "closed: \(closed), \(body) of \(length ?? -1) bytes: the response was not cut off")
    }
}
