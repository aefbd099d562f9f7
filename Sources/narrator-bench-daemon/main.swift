// Daemon benchmark: prints figures, asserts nothing. Run by scripts/bench-daemon.sh.
//
//   narrator-bench-daemon NARRATOR [CLIENTS]
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

Bench.report("Daemon benchmark (\(narrator)): \(clients) subscribers in \(processes) client processes, one playback of the sample chain ×4, through a private PulseAudio pipe sink")
let runs = [("native", "unix"), ("native", "ws"), ("python", "unix"), ("python", "ws")]
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
    guard let daemon = try? Daemon(dir: dir, library: library, server: server, executable: narrator, arguments: []) else { Bench.fail("cannot start narrator serve") }
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
    let owner = try! runTool("python3", [client, "run", "--unix", daemon.socket, request])
    var events: [ReceivedEvent] = []
    for (load, _) in loads { events += (try? load.finish().events) ?? [] }
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
    for event in events where event.isCue {
        guard let frame = event.frame, let range = alignment.recordingFrames(ofReferenceFrame: frame), range.count == 1 else { continue }
        let heard = Int64(recording.audibleTime(ofFrame: range.lowerBound))
        let late = Double(event.received - heard) / 1e6
        if late < -1 { early += 1 }
        lateness.append(abs(late))
        byFrame[frame, default: []].append(late)
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
    let spreads = byFrame.values.map { $0.max()! - $0.min()! }
    Bench.report("             first client's arrival − heard: \(Bench.percentiles(firsts)); last − first client per cue: \(Bench.percentiles(spreads))")
    Bench.report("             the daemon's heard stamps vs heard: \(Bench.percentiles(stamps)); recording holds the render: \(alignment.isComplete && alignment.gaps.isEmpty)")
}
