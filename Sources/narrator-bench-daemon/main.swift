// Daemon benchmark: prints figures, asserts nothing. Run by scripts/bench-daemon.sh.
//
//   narrator-bench-daemon NARRATOR [CLIENTS]
//   narrator-bench-daemon loopback [CLIENTS]     (LoopbackFloor: the fan-out's floor on this machine)
//
// It starts with the loopback floor (LoopbackFloor), in the same run, and reports each case
// against the goal of issue 28.8: the first client p99 ≤ 0.5 ms after heard, the last client
// p99 ≤ the floor's p99 for its transport + 0.5 ms (meant for the CPUs idle).
//
// Environment (for experiments; the figures in docs/ use neither): BENCH_SERVE_ARGS, extra
// arguments for `narrator serve` (split on spaces); BENCH_CASES, the cases to run, a
// comma-separated list of native-unix, native-ws, python-unix, python-ws (default: all four).
//
// `narrator serve` plays through ALSA into a private PulseAudio server (PulseTestServer), whose
// pipe sink's recording is the independent clock of what was heard. CLIENTS (default 50)
// subscribe to the playback, over the Unix socket and then over WebSocket, in 5 processes:
// first native ones (this program's `load` mode, LoadClient: a few microseconds a read, so the
// figure is the daemon's), then Python ones (Tests/clients/narrator_client.py load --fast).
// Each event's arrival in its client is compared with when its frame was heard; per cue frame,
// the first client's arrival and the spread to the last show the fan-out. Each case runs
// twice, with the CPUs left to idle and kept awake (see AwakeCPUs), alternating which is first.
import Foundation
import NarratorTestSupport

#if canImport(Glibc)
    import Glibc
#endif

let arguments = CommandLine.arguments
if arguments.count >= 2 && arguments[1] == "load" { exit(LoadClient.main(Array(arguments.dropFirst(2)))) }
if arguments.count >= 2 && arguments[1] == "loopback" {
    LoopbackFloor.main(clients: max(1, min(arguments.count > 2 ? Int(arguments[2]) ?? 50 : 50, 1000)))
    exit(0)
}
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: narrator-bench-daemon NARRATOR [CLIENTS]\n".utf8))
    exit(2)
}
let narrator = arguments[1]
let clients = arguments.count > 2 ? Int(arguments[2]) ?? 50 : 50
let processes = 5
let client = DaemonClient.script
let this = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? arguments[0]
let library = Repo.path("Timings/lessons")
let work = TempDir()
defer { work.remove() }

let chain = ["--chain", "correct", "--seed", "7", "--repeat", "4"]
let request = #"{"id": "owner", "op": "play", "lesson": "sample.json", "chain": "correct", "seed": 7, "repeat": 4}"#
let rendered = try! run(narrator, ["render", library + "/sample.json"] + chain + ["--output", work.file("reference.wav")])
guard rendered.status == 0, let reference = try? WAVFile(path: work.file("reference.wav")).int16Samples else { Bench.fail("render: \(rendered.stderr)") }

let floors = LoopbackFloor.main(clients: clients)
Bench.report("Daemon benchmark (\(narrator)): \(clients) subscribers in \(processes) client processes, one playback of the sample chain ×4, through a private PulseAudio pipe sink")
let serveArguments = (ProcessInfo.processInfo.environment["BENCH_SERVE_ARGS"] ?? "").split(separator: " ").map(String.init)
let chosen = ProcessInfo.processInfo.environment["BENCH_CASES"].map { Set($0.split(separator: ",").map(String.init)) }
let runs = [("native", "unix"), ("native", "ws"), ("python", "unix"), ("python", "ws")].filter { chosen?.contains("\($0.0)-\($0.1)") ?? true }
if !serveArguments.isEmpty { Bench.report("narrator serve \(serveArguments.joined(separator: " "))") }
for (index, (kind, transport)) in runs.enumerated() {
    // Idle first in every other case, so that neither condition always comes first.
    for awake in index % 2 == 0 ? [false, true] : [true, false] { measure(kind: kind, transport: transport, awake: awake) }
}

/// One run: `clients` subscribers of `kind` over `transport`, with the CPUs kept awake or not.
func measure(kind: String, transport: String, awake: Bool) {
    let cpus = awake ? AwakeCPUs() : nil
    defer { cpus?.release() }
    guard let server = try? PulseTestServer() else { Bench.fail("cannot start the PulseAudio test server") }
    let dir = TempDir()
    guard let daemon = try? Daemon(dir: dir, library: library, server: server, executable: narrator, arguments: serveArguments) else { Bench.fail("cannot start narrator serve") }
    var loads: [(DaemonClient, String)] = []
    for group in 0..<processes {
        let ready = dir.file("ready-\(group)")
        let way = transport == "unix" ? ["--unix", daemon.socket] : ["--ws", daemon.url, "--token", daemon.token]
        let load = ["load"] + way + ["--clients", "\(clients / processes)", "--first", "\(group * clients / processes)", "--ready", ready]
        guard let load = try? (kind == "native" ? DaemonClient(executable: this, load) : DaemonClient(load + ["--fast"]))
        else { Bench.fail("cannot start the load clients") }
        loads.append((load, ready))
    }
    let deadline = Date().addingTimeInterval(60)
    while !loads.allSatisfy({ FileManager.default.fileExists(atPath: $0.1) }) && Date() < deadline { usleep(20_000) }
    let pid = daemon.process.processIdentifier
    let before = DaemonThreads.read(pid)
    let syscalls = SyscallCount(pid)
    let owner = try! runTool("python3", [client, "run", "--unix", daemon.socket, request])
    var events: [ReceivedEvent] = []
    for (load, _) in loads { events += (try? load.finish().events) ?? [] }
    let after = DaemonThreads.read(pid)
    let counted = syscalls?.finish() ?? [:]
    daemon.stop()
    guard owner.status == 0, let ownerEvents = try? ReceivedEvent.parse(owner.stdout),
        let recording = try? server.recording(), let alignment = recording.locate(reference, channels: 2)
    else { Bench.fail("\(transport): the run failed: \(owner.stderr) \(daemon.stderr)\n\(server.logTail())") }
    server.stop()
    dir.remove()

    var lateness: [Double] = []
    var stamps: [Double] = []
    var early = 0
    var byFrame: [Int: [Double]] = [:]
    // When the daemon's cue thread released each moment (the events' `delivered`), against heard.
    var released: [Int: Double] = [:]
    for event in events where event.isCue {
        guard let frame = event.frame, let range = alignment.recordingFrames(ofReferenceFrame: frame), range.count == 1 else { continue }
        let heard = Int64(recording.audibleTime(ofFrame: range.lowerBound))
        let late = Double(event.received - heard) / 1e6
        if late < -1 { early += 1 }
        lateness.append(abs(late))
        byFrame[frame, default: []].append(late)
        if let delivered = (event.fields["delivered"] as? NSNumber)?.int64Value { released[frame] = Double(delivered - heard) / 1e6 }
        if let stamp = event.heard { stamps.append(abs(Double(stamp - heard) / 1e6)) }
    }
    let expected = ownerEvents.filter(\.isCue).count
    let complete = (0..<clients).filter { number in
        let mine = events.filter { ($0.fields["client"] as? Int) == number }
        return mine.filter(\.isCue).count == expected && mine.filter(\.isTerminal).count == 1
    }.count
    Bench.report("\(kind) \(transport == "unix" ? "Unix socket" : "WebSocket  "), CPUs \(awake ? "awake" : "idle "): received − heard \(Bench.percentiles(lateness)); \(early) more than 1 ms early; "
        + "\(complete)/\(clients) clients got all \(expected) cues and one terminal event")
    let firsts = byFrame.values.map { $0.min()! }
    let lasts = byFrame.values.map { $0.max()! }
    let spreads = byFrame.values.map { $0.max()! - $0.min()! }
    // Per moment (cue frame): nearest rank, so of 80 moments the p99 is the worst one.
    func p(_ rank: Double, _ values: [Double]) -> Double { values.isEmpty ? .nan : Percentile.nearestRank(rank, sorted: values.sorted()) }
    let floor = floors[transport == "unix" ? "unix" : "tcp"]
    let firstMet = p(99, firsts) <= 0.5
    let lastMet = p(99, lasts) <= (floor?.last ?? .nan) + 0.5
    Bench.report(String(format: "             per moment, received − heard: first client p50 %.2f p99 %.2f ms, last client p50 %.2f p99 %.2f ms; floor p99 first read %.2f, last %.2f ms; goal (28.8): first p99 ≤ 0.5 %@, last p99 ≤ %.2f %@",
                        p(50, firsts), p(99, firsts), p(50, lasts), p(99, lasts), floor?.first ?? .nan, floor?.last ?? .nan, firstMet ? "met" : "MISSED", (floor?.last ?? .nan) + 0.5, lastMet ? "met" : "MISSED"))
    Bench.report("             released by the cue thread − heard: \(Bench.percentiles(Array(released.values))); first client's arrival − heard: \(Bench.percentiles(firsts)); last − first client per cue: \(Bench.percentiles(spreads))")
    // With 50 clients a moment is 50 events, more than 1% of a run's: the p99 is the worst
    // moment's. Which moments (in playing order) were the worst says whether it is the first.
    let order = byFrame.keys.sorted()
    let worst = order.enumerated().sorted { byFrame[$0.1]!.max()! > byFrame[$1.1]!.max()! }.prefix(3)
    Bench.report("             worst moments: " + worst.map { String(format: "#%d of %d (released %.2f, first %.2f, last %.2f ms)", $0.0 + 1, order.count, released[$0.1] ?? .nan, byFrame[$0.1]!.min()!, byFrame[$0.1]!.max()!) }.joined(separator: ", "))
    // The event loops' work for the playback, per moment (a frame with cues, as the owner
    // got them) and client.
    let moments = Double(Set(ownerEvents.filter(\.isCue).compactMap(\.frame)).count * clients)
    let loop = after.loops.subtracting(before.loops)
    let ticks = loop.userTicks + loop.systemTicks
    var cost = String(format: "             event loops: %.1f µs of CPU (%.0f%% in the kernel) and %.2f times on CPU per moment per client",
                      Double(loop.runNanoseconds) / 1e3 / moments, ticks > 0 ? 100 * Double(loop.systemTicks) / Double(ticks) : 0, Double(loop.timesRun) / moments)
    if !counted.isEmpty {
        cost += "; syscalls per moment per client: "
            + counted.sorted { $0.key < $1.key }.map { String(format: "%@ %.2f", $0.key, Double($0.value) / moments) }.joined(separator: ", ")
    }
    Bench.report(cost)
    Bench.report("             the daemon's heard stamps vs heard: \(Bench.percentiles(stamps)); recording holds the render: \(alignment.isComplete && alignment.gaps.isEmpty)")
}

/// CPU time of the daemon's threads, from /proc/PID/task/*/schedstat (time on CPU, times run).
struct DaemonThreads {
    struct Use {
        var runNanoseconds = 0
        var timesRun = 0
        /// Of which in the kernel (stat's stime, in clock ticks of 10 ms: a coarse share).
        var systemTicks = 0
        var userTicks = 0
        func subtracting(_ other: Use) -> Use {
            Use(runNanoseconds: runNanoseconds - other.runNanoseconds, timesRun: timesRun - other.timesRun, systemTicks: systemTicks - other.systemTicks,
                userTicks: userTicks - other.userTicks)
        }
    }
    /// NIO's event loops (`NIO-ELT-…`): the threads that write every event to every client.
    var loops = Use()

    static func read(_ pid: Int32) -> DaemonThreads {
        var threads = DaemonThreads()
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let name = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8), name.hasPrefix("NIO-ELT"),
                let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8)
            else { continue }
            let fields = stat.split(separator: " ").map { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 }
            guard fields.count == 3 else { continue }
            threads.loops.runNanoseconds += fields[0]
            threads.loops.timesRun += fields[2]
            // stat: utime and stime are fields 14 and 15, the 12th and 13th after the name.
            if let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") {
                let after = stat[stat.index(after: close)...].split(separator: " ")
                if after.count > 13 {
                    threads.loops.userTicks += Int(after[11]) ?? 0
                    threads.loops.systemTicks += Int(after[12]) ?? 0
                }
            }
        }
        return threads
    }
}

/// With BENCH_SYSCALLS=1: the event loops' write syscalls and epoll waits while a case plays,
/// counted by `perf stat` on the kernel's tracepoints (it needs perf and tracefs; root).
final class SyscallCount {
    static let events = ["write", "writev", "sendmsg", "epoll_wait", "read"]
    private let perf = Process()
    private let output: String

    init?(_ pid: Int32) {
        guard ProcessInfo.processInfo.environment["BENCH_SYSCALLS"] == "1" else { return nil }
        output = NSTemporaryDirectory() + "/bench-syscalls-\(pid).csv"
        perf.executableURL = URL(fileURLWithPath: "/usr/bin/perf")
        perf.arguments = ["stat", "-x", ",", "--per-thread", "-o", output, "-e", Self.events.map { "syscalls:sys_enter_\($0)" }.joined(separator: ","), "-p", "\(pid)"]
        perf.standardError = FileHandle.nullDevice
        guard (try? perf.run()) != nil else { return nil }
        usleep(300_000)  // attached before the playback starts
    }

    /// Stops counting; the event loops' count of each syscall.
    func finish() -> [String: Int] {
        kill(perf.processIdentifier, SIGINT)
        perf.waitUntilExit()
        defer { unlink(output) }
        var counts: [String: Int] = [:]
        for line in ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n") {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count > 3, fields[0].hasPrefix("NIO-ELT"), let count = Int(fields[1]) else { continue }
            let name = String(fields[3].split(separator: "_").dropFirst(2).joined(separator: "_"))
            counts[name, default: 0] += count
        }
        return counts
    }
}
