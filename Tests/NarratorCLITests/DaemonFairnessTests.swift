import Foundation
import NarratorTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's fairness under hostile clients, measured in wall time: another client's request
/// is answered within seconds while others storm it or never read. A wall-time bound does not
/// belong beside the parallel suites, where the host's stalls of 3 s are recorded: this suite is
/// in the Makefile's LIVE_TESTS and runs alone, after them (docs/testing.md). What it bounds
/// besides time (threads, memory, loader children) holds whatever the timing.
@Suite("Daemon fairness", .serialized)
struct DaemonFairnessTests {
    /// 1000 clients that each ask for a long cue sheet (`repeat` 50), or one in five to play it,
    /// and close at once, from
    /// four threads, while the daemon's threads and memory are read from /proc every 10 ms and
    /// another client's request must be answered within 5 s. Bounds: 64 threads, 256 MiB.
    @Test func abandonedRequestStormStaysBounded() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Repo.path("Timings/lessons"), arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let pid = daemon.process.processIdentifier
        let requests = [
            #"{"id": 1, "op": "cues", "lesson": "sample.json", "chain": "correct", "repeat": 50}"#,
            #"{"id": 1, "op": "play", "lesson": "sample.json", "chain": "correct", "repeat": 50}"#,
        ]
        // Before: how long a good request takes with nothing else going on.
        let calm = try SocketClient(daemon.socket)
        let calmStart = Date()
        calm.send(#"{"id": "calm", "op": "cues", "lesson": "sample.json", "chain": "correct"}"#)
        #expect(calm.events { $0.isTerminal }?.last?.type == "finished")
        let calmSeconds = Date().timeIntervalSince(calmStart)

        final class Peak: @unchecked Sendable {
            var threads = 0, rssKiB = 0, peakKiB = 0, samples = 0
            /// The daemon's VmRSS plus its loader children's, at the largest sample.
            var treeKiB = 0, children = 0
            var running = true
            /// What the sampler could not read: a tree it did not see in full.
            var unreadable: [String] = []
            let lock = NSLock()
        }
        let peak = Peak()
        let sampler = Thread {
            while peak.lock.withLock({ peak.running }) {
                if let size = ProcessSize(pid: pid) {
                    var tree = size.rssKiB, count = 0
                    let tasks = "/proc/\(pid)/task"
                    var listedTasks: [String] = []
                    do {
                        listedTasks = try FileManager.default.contentsOfDirectory(atPath: tasks)
                    } catch {
                        peak.lock.withLock { peak.unreadable.append("\(tasks): \(error)") }
                    }
                    for task in listedTasks {
                        let listed: String
                        do {
                            listed = try String(contentsOfFile: "\(tasks)/\(task)/children", encoding: .utf8)
                        } catch {
                            // A thread that ended since the listing has no children; any other
                            // failure hides part of the tree.
                            if FileManager.default.fileExists(atPath: "\(tasks)/\(task)") {
                                peak.lock.withLock { peak.unreadable.append("\(tasks)/\(task)/children: \(error)") }
                            }
                            continue
                        }
                        for child in listed.split(separator: " ").compactMap({ Int32($0) }) {
                            if let childSize = ProcessSize(pid: child) {
                                tree += childSize.rssKiB
                                count += 1
                            }
                        }
                    }
                    peak.lock.withLock {
                        peak.treeKiB = max(peak.treeKiB, tree)
                        peak.children = max(peak.children, count)
                        peak.threads = max(peak.threads, size.threads)
                        peak.rssKiB = max(peak.rssKiB, size.rssKiB)
                        peak.peakKiB = max(peak.peakKiB, size.peakKiB)
                        peak.samples += 1
                    }
                }
                usleep(10_000)
            }
        }
        sampler.start()
        let started = Date()
        let storm = DispatchGroup()
        final class Count: @unchecked Sendable {
            var value = 0
            let lock = NSLock()
        }
        let refused = Count()
        for _ in 0..<4 {
            storm.enter()
            Thread {
                defer { storm.leave() }
                for number in 0..<250 {
                    guard let client = try? SocketClient(daemon.socket) else {
                        refused.lock.withLock { refused.value += 1 }
                        continue
                    }
                    client.send(requests[number % 5 == 4 ? 1 : 0])
                    _ = client  // closed here, at once
                }
            }.start()
        }
        // In the middle of the storm, a good request.
        usleep(300_000)
        let good = try SocketClient(daemon.socket)
        let goodStart = Date()
        good.send(#"{"id": "good", "op": "cues", "lesson": "sample.json", "chain": "correct"}"#)
        let answered = good.events(timeout: 30) { $0.isTerminal }
        let goodSeconds = Date().timeIntervalSince(goodStart)
        storm.wait()
        let stormSeconds = Date().timeIntervalSince(started)
        // The daemon settles: its preparations for the gone clients stop.
        usleep(2_000_000)
        peak.lock.withLock { peak.running = false }
        let after = ProcessSize(pid: pid)
        print(String(format: "storm of 1000 abandoning clients in %.1f s (%d refused at connect): peak %d threads, VmRSS %d MiB, VmHWM %d MiB over %d samples; with its loader children (at most %d at once) VmRSS %d MiB; good request %.2f s (alone %.2f s); after: %d threads",
                     stormSeconds, refused.value, peak.threads, peak.rssKiB / 1024, peak.peakKiB / 1024, peak.samples, peak.children, peak.treeKiB / 1024, goodSeconds, calmSeconds, after?.threads ?? -1))
        #expect(peak.samples >= 10)
        let unreadable = peak.lock.withLock { peak.unreadable }
        #expect(unreadable.isEmpty, "the sampler could not read: \(unreadable.prefix(3))")
        #expect(peak.threads <= 64, "\(peak.threads) threads")
        #expect(peak.peakKiB <= 256 * 1024, "VmHWM \(peak.peakKiB / 1024) MiB")
        // The tree: the daemon and at most 3 loader children (one a worker), each a few tens of
        // MiB for this lesson.
        #expect(peak.children <= 3, "\(peak.children) loader children at once")
        #expect(peak.treeKiB <= 512 * 1024, "daemon and children: VmRSS \(peak.treeKiB / 1024) MiB")
        #expect(answered?.last?.type == "finished", "\(answered?.last?.fields ?? [:])")
        #expect(goodSeconds < 5, "the good request took \(goodSeconds) s")
        #expect(daemon.process.isRunning)
        // Still answering, and no preparation left running.
        let later = try SocketClient(daemon.socket)
        later.send(#"{"id": "later", "op": "cues", "lesson": "sample.json", "chain": "correct"}"#)
        #expect(later.events { $0.isTerminal }?.last?.type == "finished")
        let children = try String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)
        #expect(children.trimmingCharacters(in: .whitespaces).isEmpty, "loader children left: \(children)")
        #expect(daemon.stop() == 0)
    }

    /// Two clients that each ask for several long cue sheets and never read them (each holds
    /// a worker while its backlog is full, up to 5 s) cannot hold every worker: a worker takes
    /// one request of a connection at a time, so a third client's request is answered at once
    /// (before, it waited the 5 s). The requests travel on the loader children's input: none
    /// is in a child's command line.
    @Test func slowClientsCannotHoldEveryWorker() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = Repo.path("Timings/lessons")
        let daemon = try Daemon(dir: dir, library: library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        var slow: [SocketClient] = []
        for client in 0..<2 {
            let connection = try SocketClient(daemon.socket)
            for request in 0..<3 {
                connection.send(#"{"id": "slow-\#(client)-\#(request)", "op": "cues", "lesson": "sample.json", "chain": "correct", "repeat": 1000}"#)
            }
            slow.append(connection)
        }
        usleep(500_000)
        let pid = daemon.process.processIdentifier
        var commandLines: [String] = []
        for task in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
            let listed = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? ""
            for child in listed.split(separator: " ") {
                let status = (try? String(contentsOfFile: "/proc/\(child)/status", encoding: .utf8)) ?? ""
                print("loader child: " + status.split(separator: "\n").filter { $0.hasPrefix("VmPeak") || $0.hasPrefix("VmHWM") }.joined(separator: " "))
                if let line = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(child)/cmdline")) {
                    commandLines.append(String(decoding: line.map { $0 == 0 ? 32 : $0 }, as: UTF8.self))
                }
            }
        }
        print("loader children while the slow requests wait: \(commandLines)")
        #expect(commandLines.count == 2, "\(commandLines)")
        #expect(!commandLines.contains { $0.contains("slow") || $0.contains("\"op\"") }, "\(commandLines)")
        let good = try SocketClient(daemon.socket)
        let start = Date()
        good.send(#"{"id": "good", "op": "cues", "lesson": "sample.json", "chain": "correct"}"#)
        let answer = good.events(timeout: 30) { $0.isTerminal }
        let seconds = Date().timeIntervalSince(start)
        print(String(format: "good request beside 6 unread ones of 2 clients: %.2f s", seconds))
        #expect(answer?.last?.type == "finished", "\(answer?.last?.fields ?? [:])")
        #expect(seconds < 3, "the good request took \(seconds) s")
        #expect(daemon.process.isRunning)
    }

    /// Twelve connections that each ask for a long listing (`repeat` 1000) and never read
    /// (before: another client's small request waited 22 s in a release build, each of the
    /// three workers held up to 5 s by a non-reader). Now the listings are parked and no worker
    /// waits: another client's request takes at most 100 ms more than it does alone (median of
    /// three each, measured in the same run).
    @Test func unreadListingsDelayOthersBy100msAtMost() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Repo.path("Timings/lessons"), arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        func timed(_ label: String) throws -> Double {
            var times: [Double] = []
            for attempt in 0..<3 {
                let good = try SocketClient(daemon.socket)
                let start = Date()
                good.send(#"{"id": "\#(label)-\#(attempt)", "op": "cues", "lesson": "sample.json", "chain": "correct"}"#)
                let answer = good.events(timeout: 60) { $0.isTerminal }
                times.append(Date().timeIntervalSince(start))
                #expect(answer?.last?.type == "finished", "\(answer?.last?.fields ?? [:])")
            }
            return times.sorted()[1]
        }
        let alone = try timed("alone")
        var slow: [SocketClient] = []
        for client in 0..<12 {
            let connection = try SocketClient(daemon.socket)
            connection.send(#"{"id": "slow-\#(client)", "op": "cues", "lesson": "sample.json", "chain": "correct", "repeat": 1000}"#)
            slow.append(connection)
        }
        // Until every slow listing has filled its client's buffers and is parked.
        let pid = daemon.process.processIdentifier
        let deadline = Date().addingTimeInterval(60)
        while DaemonLimitsTests.children(of: pid).count < 12 && Date() < deadline { usleep(20_000) }
        usleep(500_000)
        let beside = try timed("beside")
        print(String(format: "a cues request alone: %.3f s; beside 12 unread listings: %.3f s", alone, beside))
        #expect(beside <= alone + 0.1, "beside 12 non-readers: \(beside) s, alone \(alone) s")
        #expect(slow.count == 12 && daemon.process.isRunning)
    }
}
