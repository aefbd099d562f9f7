import Foundation
import NarratorCore

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon benchmark's load: N connections subscribed to the next playback, read in one
/// poll loop, each read stamped with CLOCK_MONOTONIC as it completes. It does what
/// `narrator_client.py load` does, natively: a read costs a few microseconds instead of
/// Python's 10–20, so on two shared cores the figure measures the daemon's fan-out rather
/// than the interpreter's.
///
///     load (--unix PATH | --ws URL --token T) --clients N [--first K] [--ready FILE]
///
/// Prints every event each connection received as a JSON line with `client` (numbered from
/// K) and `received` added, once every connection has had its terminal event or closed.
enum LoadClient {
    static let terminalMarks = [#""type":"finished""#, #""type":"stopped""#, #""type":"error""#].map { Array($0.utf8) }

    /// Runs the load with command-line `arguments` (after `load`); returns the exit status.
    static func main(_ arguments: [String]) -> Int32 {
        var options: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count {
            options[arguments[index]] = arguments[index + 1]
            index += 2
        }
        let clients = Int(options["--clients"] ?? "") ?? 50
        let first = Int(options["--first"] ?? "") ?? 0
        do {
            var connections: [Connection] = []
            for number in first..<(first + clients) {
                let subscribe = #"{"id": "s\#(number)", "op": "subscribe", "playback": "next"}"#
                if let path = options["--unix"] {
                    connections.append(try Connection(number: number, unix: path, subscribe: subscribe))
                } else if let url = options["--ws"] {
                    connections.append(try Connection(number: number, webSocket: url, token: options["--token"] ?? "", subscribe: subscribe))
                } else {
                    throw LoadError("give --unix PATH or --ws URL")
                }
            }
            usleep(300_000)  // the subscriptions are on their way; let the daemon register them
            if let ready = options["--ready"] { _ = FileManager.default.createFile(atPath: ready, contents: nil) }
            try read(&connections)
            var output = Data()
            for connection in connections { connection.appendEvents(to: &output) }
            FileHandle.standardOutput.write(output)
            return 0
        } catch {
            FileHandle.standardError.write(Data("load: \(error)\n".utf8))
            return 1
        }
    }

    /// Reads every connection until each has its terminal event or is closed by the daemon.
    private static func read(_ connections: inout [Connection]) throws {
        var watched = connections.map { pollfd(fd: $0.socket, events: Int16(POLLIN), revents: 0) }
        var open = connections.count
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while open > 0 {
            let count = poll(&watched, nfds_t(watched.count), 60_000)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw LoadError("no event for 60 s with \(open) connections open") }
            for index in watched.indices where watched[index].revents != 0 {
                let got = Glibc.read(connections[index].socket, &buffer, buffer.count)
                let received = MonotonicClock.now()
                if got > 0 { connections[index].reads.append((received, Array(buffer[0..<got]))) }
                if got <= 0 || connections[index].hasEnded {
                    close(connections[index].socket)
                    watched[index].fd = -1  // poll skips it from now on
                    open -= 1
                }
            }
        }
    }

    struct LoadError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// One subscribed connection and the reads it has had.
    struct Connection {
        let number: Int
        let socket: Int32
        let webSocket: Bool
        /// Each read: when it completed, and its bytes.
        var reads: [(Int64, [UInt8])] = []

        init(number: Int, unix path: String, subscribe: String) throws {
            self.number = number
            webSocket = false
            var address = sockaddr_un()
            guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else { throw LoadError("socket path too long: \(path)") }
            socket = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { sunPath in path.utf8CString.withUnsafeBytes { sunPath.copyMemory(from: $0) } }
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard connected == 0 else { throw LoadError("connect \(path): errno \(errno)") }
            try send(Array((subscribe + "\n").utf8))
        }

        init(number: Int, webSocket url: String, token: String, subscribe: String) throws {
            self.number = number
            webSocket = true
            // ws://HOST:PORT/PATH
            let authority = url.split(separator: "/", omittingEmptySubsequences: true)[1]
            guard let colon = authority.lastIndex(of: ":"), let port = UInt16(authority[authority.index(after: colon)...]) else {
                throw LoadError("not a ws://HOST:PORT/ URL: \(url)")
            }
            let host = String(authority[..<colon])
            socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var noDelay: Int32 = 1
            setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw LoadError("connect \(url): errno \(errno)") }
            let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            try send(Array(("GET /ws?token=\(token) HTTP/1.1\r\nHost: \(authority)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
            var response: [UInt8] = []
            var byte: UInt8 = 0
            // Byte by byte up to the blank line: nothing of the first frame is read with it.
            while !response.ends(with: Array("\r\n\r\n".utf8)) {
                guard Glibc.read(socket, &byte, 1) == 1 else { throw LoadError("closed during the handshake") }
                response.append(byte)
            }
            guard response.starts(with: Array("HTTP/1.1 101".utf8)) else {
                throw LoadError("handshake refused: \(String(decoding: response.prefix { $0 != 13 }, as: UTF8.self))")
            }
            // A client's frames are masked (RFC 6455 §5.3).
            let payload = Array(subscribe.utf8)
            let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
            var frame: [UInt8] = [0x81]
            if payload.count < 126 {
                frame.append(0x80 | UInt8(payload.count))
            } else {
                frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
            }
            frame += mask
            frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
            try send(frame)
        }

        private func send(_ bytes: [UInt8]) throws {
            var sent = 0
            while sent < bytes.count {
                let wrote = bytes[sent...].withUnsafeBytes { Glibc.write(socket, $0.baseAddress, $0.count) }
                guard wrote > 0 else { throw LoadError("write: errno \(errno)") }
                sent += wrote
            }
        }

        /// Whether the reads so far hold the terminal event (the daemon sends nothing after it).
        var hasEnded: Bool {
            guard let last = reads.last?.1 else { return false }
            let tail = reads.count > 1 ? reads[reads.count - 2].1.suffix(32) + last : last
            return LoadClient.terminalMarks.contains { mark in
                tail.count >= mark.count && (0...(tail.count - mark.count)).contains { start in tail[start..<(start + mark.count)].elementsEqual(mark) }
            }
        }

        /// Each message received, as a JSON line with `client` and `received` (the time of the
        /// read that completed it) added.
        func appendEvents(to output: inout Data) {
            var stream: [UInt8] = []
            for (received, bytes) in reads {
                stream += bytes
                let (messages, used) = webSocket ? Self.webSocketMessages(stream) : Self.lines(stream)
                stream.removeFirst(used)
                for message in messages where message.first == UInt8(ascii: "{") {
                    output.append(contentsOf: Array(#"{"client":\#(number),"received":\#(received),"#.utf8))
                    output.append(contentsOf: message.dropFirst())
                    output.append(UInt8(ascii: "\n"))
                }
            }
        }

        /// Complete lines (without newline) and how many bytes they took.
        static func lines(_ stream: [UInt8]) -> ([ArraySlice<UInt8>], Int) {
            var messages: [ArraySlice<UInt8>] = []
            var start = 0
            while let end = stream[start...].firstIndex(of: UInt8(ascii: "\n")) {
                messages.append(stream[start..<end])
                start = end + 1
            }
            return (messages, start)
        }

        /// Complete text messages of a server's unmasked, unfragmented frames, and how many
        /// bytes they took.
        static func webSocketMessages(_ stream: [UInt8]) -> ([ArraySlice<UInt8>], Int) {
            var messages: [ArraySlice<UInt8>] = []
            var position = 0
            while position + 2 <= stream.count {
                let opcode = stream[position] & 0x0F
                var length = Int(stream[position + 1] & 0x7F)
                var header = 2
                if length >= 126 {
                    let size = length == 126 ? 2 : 8
                    guard position + 2 + size <= stream.count else { break }
                    length = stream[(position + 2)..<(position + 2 + size)].reduce(0) { $0 << 8 | Int($1) }
                    header += size
                }
                guard position + header + length <= stream.count else { break }
                if opcode == 1 { messages.append(stream[(position + header)..<(position + header + length)]) }
                position += header + length
            }
            return (messages, position)
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
