import Foundation
import NIOCore
import NIOPosix
import NarratorCore
@testable import NarratorService
import Testing

/// An event loop told that a moment is coming (`ChannelOutlet.expect`) wakes by its own timer
/// ahead of it and spins until the moment's lines are queued (issue 28.8). What is checked here
/// is the logic, with leads long enough for a loaded machine: the announcement writes nothing,
/// the lines go out only once queued (never before the cue thread hands them over, which it
/// does when they are heard), the loop is spinning when they come, and a moment taken back is
/// never written and leaves the loop as it was. How early the loop really is, and what that
/// gains, is the benchmark's (docs/daemon-benchmark.md).
@Suite(.serialized) struct WakeAheadTests {
    /// One loop for the suite: an outlet's batch is per loop, for the loop's life.
    static let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    /// Leads a loaded test machine keeps: woken 30 ms ahead, spinning from 10 ms before.
    static let timing = WakeAhead(wake: 30_000_000, spin: 10_000_000, grace: 40_000_000)
    static let lines = EventLines(head: #"{"id":"a","#, bodies: [#""type":"word","frame":1}"#, #""type":"sentence","frame":1}"#])
    static let expected = #"{"id":"a","type":"word","frame":1}"# + "\n" + #"{"id":"a","type":"sentence","frame":1}"# + "\n"

    /// The outlet's channel on one end of a Unix socket pair; the test reads the other.
    struct Pair {
        let outlet: ChannelOutlet
        let reader: Int32

        init() throws {
            var ends: [Int32] = [0, 0]
            try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
            let channel = try ClientBootstrap(group: WakeAheadTests.group).withConnectedSocket(ends[0]).wait()
            outlet = ChannelOutlet(channel: channel, framing: .lines)
            reader = ends[1]
        }

        func close() {
            outlet.channel.close(promise: nil)
            _ = Glibc.close(reader)
        }

        /// What arrives on the reader by `deadline` (monotonic ns), and when its first byte came.
        func read(until deadline: Int64, bytes: Int = WakeAheadTests.expected.utf8.count) -> (first: Int64, text: String)? {
            var got: [UInt8] = []
            var first: Int64 = 0
            var buffer = [UInt8](repeating: 0, count: 4096)
            while got.count < bytes {
                let left = deadline - MonotonicClock.now()
                guard left > 0 else { break }
                var watched = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
                guard poll(&watched, 1, Int32(max(1, left / 1_000_000))) > 0 else { continue }
                let count = Glibc.read(reader, &buffer, buffer.count)
                guard count > 0 else { break }
                if got.isEmpty { first = MonotonicClock.now() }
                got += buffer[0..<count]
            }
            return got.isEmpty ? nil : (first, String(decoding: got, as: UTF8.self))
        }
    }

    static func sleep(until time: Int64) {
        let left = time - MonotonicClock.now()
        if left > 0 { usleep(useconds_t(left / 1000)) }
    }

    /// Announced 80 ms ahead, the moment's lines are queued at their time: nothing is written
    /// before they are queued, they arrive whole, and the loop was spinning for them.
    @Test func anAnnouncedMomentIsMetAwakeAndWrittenOnlyOnceQueued() throws {
        let pair = try Pair()
        defer { pair.close() }
        let before = pair.outlet.wakeAheads
        let moment = MonotonicClock.now() + 80_000_000
        pair.outlet.expect(at: moment, Self.timing)
        // A second notice for the same moment (the clock moved it a little) shares the wake-up.
        pair.outlet.expect(at: moment + 30_000, Self.timing)
        #expect(pair.read(until: moment) == nil, "written before the moment's lines were queued")
        let queued = MonotonicClock.now()
        #expect(pair.outlet.send(Self.lines))
        pair.outlet.flush()
        let arrived = try #require(pair.read(until: queued + 2_000_000_000), "never written")
        #expect(arrived.text == Self.expected)
        #expect(arrived.first >= queued)
        let after = pair.outlet.wakeAheads
        #expect(after.met - before.met == 1, "the loop was not spinning for the moment (met \(after.met - before.met), missed \(after.missed - before.missed))")
        #expect(after.missed == before.missed)
    }

    /// A moment announced and then taken back (a pause, a seek, a stop: its lines are never
    /// queued) writes nothing; the loop gives up after its grace, and the next lines, with no
    /// notice, are written as ever.
    @Test func aMomentTakenBackIsNeverWritten() throws {
        let pair = try Pair()
        defer { pair.close() }
        let before = pair.outlet.wakeAheads
        let moment = MonotonicClock.now() + 60_000_000
        pair.outlet.expect(at: moment, Self.timing)
        #expect(pair.read(until: moment + Self.timing.grace + 50_000_000) == nil, "written though nothing was queued")
        let after = pair.outlet.wakeAheads
        #expect(after.missed - before.missed == 1)
        #expect(after.met == before.met)
        #expect(pair.outlet.send(Self.lines))
        pair.outlet.flush()
        #expect(pair.read(until: MonotonicClock.now() + 2_000_000_000)?.text == Self.expected, "the loop no longer writes")
    }

    /// Two moments 60 ms apart, announced together, are each met; a notice for a time already
    /// past is ignored (the lines come by the ordinary wake-up).
    @Test func eachOfTwoMomentsIsMet() throws {
        let pair = try Pair()
        defer { pair.close() }
        let before = pair.outlet.wakeAheads
        let first = MonotonicClock.now() + 80_000_000
        let second = first + 60_000_000
        pair.outlet.expect(at: first, Self.timing)
        pair.outlet.expect(at: second, Self.timing)
        pair.outlet.expect(at: MonotonicClock.now() - 1_000_000, Self.timing)
        for moment in [first, second] {
            Self.sleep(until: moment)
            #expect(pair.outlet.send(Self.lines))
            pair.outlet.flush()
            #expect(pair.read(until: moment + 2_000_000_000)?.text == Self.expected)
        }
        let after = pair.outlet.wakeAheads
        #expect(after.met - before.met == 2, "met \(after.met - before.met), missed \(after.missed - before.missed)")
        #expect(after.missed == before.missed)
    }
}
