import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A WebSocket client that sends whatever it is told: frames built here with any bits set,
/// masked or not, any length field, written whole or a few bytes at a time. It judges nothing
/// the server sends; it only answers a Close with a Close, as a client must (RFC 6455 §5.5.1).
final class RawWebSocket {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// A frame the server sent.
    struct Frame {
        let fin: Bool
        let rsv: UInt8
        let opcode: UInt8
        let masked: Bool
        let payload: [UInt8]

        /// A Close frame's status code; 1005 ("none given") for an empty Close body.
        var closeCode: Int? {
            guard opcode == 0x8 else { return nil }
            return payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 1005
        }
        var isData: Bool { opcode < 0x8 }
    }

    let socket: Int32
    private var received: [UInt8] = []
    private(set) var sentClose = false

    /// Connects to the daemon's `/ws` on `port` with `token` and completes the handshake;
    /// `early` is sent with the handshake's request, before its answer. `receiveBuffer` sets
    /// SO_RCVBUF before the connection is made, which bounds the window it offers.
    init(port: Int, token: String, early: [UInt8] = [], receiveBuffer: Int32? = nil) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure("socket: errno \(errno)") }
        if var size = receiveBuffer { setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var noDelay: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(socket)
            throw Failure("connect to port \(port): errno \(errno)")
        }
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        send(Array(("GET /ws?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8) + early)
        while !received.ends(with: Array("\r\n\r\n".utf8)) {
            var byte: UInt8 = 0
            guard waitReadable(seconds: 10), Glibc.read(socket, &byte, 1) == 1 else {
                Glibc.close(socket)
                throw Failure("the handshake got no answer")
            }
            received.append(byte)
        }
        let status = String(decoding: received.prefix { $0 != 13 }, as: UTF8.self)
        received = []
        guard status.hasPrefix("HTTP/1.1 101") else {
            Glibc.close(socket)
            throw Failure("handshake refused: \(status)")
        }
    }

    deinit { Glibc.close(socket) }

    /// One frame's bytes. `length` puts another number in the length field than the payload's
    /// (the payload is still what is sent).
    static func frame(_ opcode: UInt8, _ payload: [UInt8] = [], fin: Bool = true, rsv: UInt8 = 0, masked: Bool = true, length: UInt64? = nil) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | (rsv & 0x7) << 4 | (opcode & 0xF)]
        let count = length ?? UInt64(payload.count)
        let maskBit: UInt8 = masked ? 0x80 : 0
        if count < 126 {
            bytes.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            bytes += [maskBit | 126, UInt8(count >> 8), UInt8(count & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            bytes += (0..<8).reversed().map { UInt8((count >> (8 * UInt64($0))) & 0xFF) }
        }
        guard masked else { return bytes + payload }
        let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
        bytes += mask
        bytes += payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
        return bytes
    }

    /// Writes `bytes`, in pieces of `chop` bytes with a pause between them when `chop` > 0 (each
    /// piece its own TCP segment). Returns false once the server has closed the connection, or
    /// has taken nothing for 5 s (it stopped reading).
    @discardableResult
    func send(_ bytes: [UInt8], chop: Int = 0) -> Bool {
        let piece = chop > 0 ? chop : max(bytes.count, 1)
        var sent = 0
        while sent < bytes.count {
            let end = min(sent + piece, bytes.count)
            var at = sent
            while at < end {
                let wrote = bytes[at..<end].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                if wrote < 0 && errno == EINTR { continue }
                if wrote < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    var descriptor = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
                    guard poll(&descriptor, 1, 5000) > 0 else { return false }
                    continue
                }
                guard wrote > 0 else { return false }
                at += wrote
            }
            sent = end
            if chop > 0 && sent < bytes.count { usleep(2_000) }
        }
        return true
    }

    /// Reads the server's frames until `done` is satisfied, the server closes the connection
    /// (`eof`), or nothing arrives for `quiet` seconds. A Close is answered with a Close of the
    /// same code, once.
    func read(quiet: Double, until done: ([Frame]) -> Bool = { _ in false }) -> (frames: [Frame], eof: Bool) {
        var frames: [Frame] = []
        while true {
            while let frame = nextFrame() {
                frames.append(frame)
                if let code = frame.closeCode, !sentClose {
                    sentClose = true
                    send(Self.frame(0x8, code == 1005 ? [] : [UInt8(code >> 8), UInt8(code & 0xFF)]))
                }
            }
            if done(frames) { return (frames, false) }
            guard waitReadable(seconds: quiet) else { return (frames, false) }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = chunk.withUnsafeMutableBytes { Glibc.recv(socket, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                while let frame = nextFrame() { frames.append(frame) }
                return (frames, true)
            }
            received += chunk[0..<count]
        }
    }

    private func waitReadable(seconds: Double) -> Bool {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let left = max(0, Int32(deadline.timeIntervalSinceNow * 1000))
            let ready = poll(&descriptor, 1, left)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0
        }
    }

    /// The first whole frame of what was read, taken off it.
    private func nextFrame() -> Frame? {
        guard received.count >= 2 else { return nil }
        let masked = received[1] & 0x80 != 0
        var length = Int(received[1] & 0x7F)
        var header = 2
        if length >= 126 {
            let size = length == 126 ? 2 : 8
            guard received.count >= 2 + size else { return nil }
            length = received[2..<(2 + size)].reduce(0) { $0 << 8 | Int($1) }
            header += size
        }
        let maskKey = masked ? 4 : 0
        guard received.count >= header + maskKey + length else { return nil }
        var payload = Array(received[(header + maskKey)..<(header + maskKey + length)])
        if masked {
            let mask = Array(received[header..<(header + 4)])
            payload = payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
        }
        let frame = Frame(fin: received[0] & 0x80 != 0, rsv: (received[0] >> 4) & 0x7, opcode: received[0] & 0xF, masked: masked, payload: payload)
        received.removeFirst(header + maskKey + length)
        return frame
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
