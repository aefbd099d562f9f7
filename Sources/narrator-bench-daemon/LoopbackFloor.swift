import Foundation
import NarratorCore
import NarratorTestSupport
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What writing one small message to each of N local clients costs on this machine with no
/// framework at all: the floor under the daemon's fan-out. One thread writes a 120-byte message
/// (an event's size) to each of N connected sockets with plain `write(2)`, every 300 ms (the
/// daemon's moments are 100 ms to 1 s apart); a second thread reads them all in one poll loop,
/// as the bench's load clients do, and stamps each arrival. Over the Unix socket (a
/// `socketpair`) and loopback TCP (`TCP_NODELAY`, as the daemon's WebSocket connections are).
///
///     narrator-bench-daemon loopback [CLIENTS]
///
/// Per transport it prints the writer's wall-clock and CPU time per write, the time to write
/// all N, and when the first and the last of them were read, from the moment's first write; it
/// returns those reads' p99s (nearest rank, of 100 moments), per transport ("unix", "tcp"):
/// the daemon bench's goal for its last client is measured against the last read's, and the
/// first read's says how near this machine lets any server come to the first client's goal
/// (issue 28.8: 0.5 ms), the reader having slept in `poll` between moments as a client does.
enum LoopbackFloor {
    static let moments = 102
    static let warmUp = 2
    static let gap: useconds_t = 150_000
    static let message = [UInt8](repeating: UInt8(ascii: "x"), count: 120)

    /// The first and the last read's p99 of one transport, ms from the moment's first write.
    struct Floor {
        let first: Double
        let last: Double
    }

    @discardableResult
    static func main(clients: Int) -> [String: Floor] {
        Bench.report("Loopback floor: \(clients) sockets written one after the other by one thread (write(2), \(message.count) bytes), read by another in one poll loop, \(moments - warmUp) moments \(gap / 1000) ms apart")
        var floors: [String: Floor] = [:]
        for transport in ["unix", "tcp"] {
            guard let pairs = connect(clients, tcp: transport == "tcp") else { Bench.fail("loopback: cannot connect \(clients) \(transport) sockets (errno \(errno))") }
            floors[transport] = measure(transport, pairs)
            for pair in pairs {
                close(pair.writer)
                close(pair.reader)
            }
        }
        return floors
    }

    /// The first and the last read's p99 (ms from the moment's first write).
    private static func measure(_ transport: String, _ pairs: [(writer: Int32, reader: Int32)]) -> Floor {
        let starts = UnsafeMutablePointer<Int64>.allocate(capacity: moments)
        defer { starts.deallocate() }
        let lastArrival = Mutex<[Int64]>(Array(repeating: 0, count: moments))
        let firstArrival = Mutex<[Int64]>(Array(repeating: 0, count: moments))
        let reader = Thread {
            var watched = pairs.map { pollfd(fd: $0.reader, events: Int16(POLLIN), revents: 0) }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            var left = pairs.count * moments * message.count
            while left > 0 {
                guard poll(&watched, nfds_t(watched.count), 10_000) > 0 else { return }
                for index in watched.indices where watched[index].revents != 0 {
                    let got = read(watched[index].fd, &buffer, buffer.count)
                    let now = MonotonicClock.now()
                    guard got > 0 else { return }
                    left -= got
                    // Every message of a moment is read before the next moment starts.
                    let moment = pairs.count * moments * message.count - left - 1
                    lastArrival.withLock { $0[moment / (pairs.count * message.count)] = now }
                    firstArrival.withLock { if $0[moment / (pairs.count * message.count)] == 0 { $0[moment / (pairs.count * message.count)] = now } }
                }
            }
        }
        reader.start()
        var wall: [Double] = []
        var cpu: [Double] = []
        var fanOut: [Double] = []
        for moment in 0..<moments {
            usleep(gap)
            let cpuBefore = threadCPU()
            let before = MonotonicClock.now()
            starts[moment] = before
            for pair in pairs { _ = message.withUnsafeBytes { write(pair.writer, $0.baseAddress, $0.count) } }
            let after = MonotonicClock.now()
            let cpuAfter = threadCPU()
            guard moment >= warmUp else { continue }
            wall.append(Double(after - before) / 1e3 / Double(pairs.count))
            cpu.append(Double(cpuAfter - cpuBefore) / 1e3 / Double(pairs.count))
            fanOut.append(Double(after - before) / 1e6)
        }
        usleep(gap)
        let lasts = lastArrival.withLock { $0 }
        let received = (warmUp..<moments).compactMap { lasts[$0] > 0 ? Double(lasts[$0] - starts[$0]) / 1e6 : nil }
        let firsts = firstArrival.withLock { $0 }
        let firstReceived = (warmUp..<moments).compactMap { firsts[$0] > 0 ? Double(firsts[$0] - starts[$0]) / 1e6 : nil }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        Bench.report(
            String(
                format: "  %@: a write %.1f µs (wall, median), %.1f µs of the writer's CPU; all %d: %@; the first read: %@; the last read: %@",
                transport == "tcp" ? "loopback TCP" : "Unix socket ", median(wall), median(cpu), pairs.count, Bench.percentiles(fanOut),
                Bench.percentiles(firstReceived), Bench.percentiles(received)))
        func p99(_ values: [Double]) -> Double { values.isEmpty ? .nan : Percentile.nearestRank(99, sorted: values.sorted()) }
        return Floor(first: p99(firstReceived), last: p99(received))
    }

    /// `count` connected pairs of stream sockets: a `socketpair`, or loopback TCP through a
    /// listening socket on an ephemeral port.
    private static func connect(_ count: Int, tcp: Bool) -> [(writer: Int32, reader: Int32)]? {
        var pairs: [(writer: Int32, reader: Int32)] = []
        guard tcp else {
            for _ in 0..<count {
                var ends: [Int32] = [0, 0]
                guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else { return nil }
                pairs.append((ends[0], ends[1]))
            }
            return pairs
        }
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && listen(listener, 128) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        guard bound else { return nil }
        for _ in 0..<count {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(client, $0, length) == 0 }
            }
            let server = accept(listener, nil, nil)
            guard connected, server >= 0 else { return nil }
            var on: Int32 = 1
            for end in [client, server] { setsockopt(end, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size)) }
            pairs.append((server, client))
        }
        return pairs
    }

    private static func threadCPU() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
