// Daemon benchmark: prints figures, asserts nothing. Run by scripts/bench-daemon.sh.
//
//   narrator-bench-daemon NARRATOR [CLIENTS]
//
// `narrator serve` plays through ALSA into a private PulseAudio server (PulseTestServer), whose
// pipe sink's recording is the independent clock of what was heard. CLIENTS (default 50)
// subscribe to the playback, over the Unix socket and then over WebSocket, in 5 Python
// processes (Tests/clients/narrator_client.py load); each event's arrival in the client is
// compared with when its frame was heard.
import Foundation
import NarratorTestSupport

#if canImport(Glibc)
    import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: narrator-bench-daemon NARRATOR [CLIENTS]\n".utf8))
    exit(2)
}
let narrator = arguments[1]
let clients = arguments.count > 2 ? Int(arguments[2]) ?? 50 : 50
let processes = 5
let client = Repo.path("Tests/clients/narrator_client.py")
let library = Repo.path("Timings/lessons")
let work = TempDir()
defer { work.remove() }

func report(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bench: \(message)\n".utf8))
    exit(1)
}

func percentiles(_ values: [Double]) -> String {
    guard !values.isEmpty else { return "n/a" }
    let sorted = values.sorted()
    func at(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))] }
    return String(format: "p50 %.3f ms, p99 %.3f ms, max %.3f ms (n=%d)", at(0.5), at(0.99), sorted.last!, sorted.count)
}

let chain = ["--chain", "correct", "--seed", "7", "--repeat", "4"]
let request = #"{"id": "owner", "op": "play", "lesson": "sample.json", "chain": "correct", "seed": 7, "repeat": 4}"#
let rendered = try! run(narrator, ["render", library + "/sample.json"] + chain + ["--output", work.file("reference.wav")])
guard rendered.status == 0, let reference = try? WAVFile(path: work.file("reference.wav")).int16Samples else { fail("render: \(rendered.stderr)") }

report("Daemon benchmark (\(narrator)): \(clients) subscribers in \(processes) Python processes, one playback of the sample chain ×4, through a private PulseAudio pipe sink")
for transport in ["unix", "ws"] {
    guard let server = try? PulseTestServer() else { fail("cannot start the PulseAudio test server") }
    let dir = TempDir()
    guard let daemon = try? Daemon(dir: dir, library: library, server: server, executable: narrator) else { fail("cannot start narrator serve") }
    var loads: [(Process, Pipe, String)] = []
    for group in 0..<processes {
        let ready = dir.file("ready-\(group)")
        let load = Process()
        load.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let way = transport == "unix" ? ["--unix", daemon.socket] : ["--ws", daemon.url, "--token", daemon.token, "--fast"]
        load.arguments = ["python3", client, "load"] + way + ["--clients", "\(clients / processes)", "--first", "\(group * clients / processes)", "--ready", ready]
        let output = Pipe()
        load.standardOutput = output
        try! load.run()
        loads.append((load, output, ready))
    }
    let deadline = Date().addingTimeInterval(60)
    while !loads.allSatisfy({ FileManager.default.fileExists(atPath: $0.2) }) && Date() < deadline { usleep(20_000) }
    let owner = try! runTool("python3", [client, "run", "--unix", daemon.socket, request])
    var output = Data()
    for (load, pipe, _) in loads {
        output += pipe.fileHandleForReading.readDataToEndOfFile()
        load.waitUntilExit()
    }
    daemon.stop()
    guard owner.status == 0, let events = try? ReceivedEvent.parse(String(decoding: output, as: UTF8.self)),
        let ownerEvents = try? ReceivedEvent.parse(owner.stdout),
        let recording = try? server.recording(), let alignment = recording.locate(reference, channels: 2)
    else { fail("\(transport): the run failed: \(owner.stderr) \(daemon.stderr)\n\(server.logTail())") }
    server.stop()
    dir.remove()

    var lateness: [Double] = []
    var stamps: [Double] = []
    var early = 0
    for event in events where event.event == "cue" {
        guard let frame = event.frame, let range = alignment.recordingFrames(ofReferenceFrame: frame), range.count == 1 else { continue }
        let heard = Int64(recording.audibleTime(ofFrame: range.lowerBound))
        let late = Double(event.received - heard) / 1e6
        if late < -1 { early += 1 }
        lateness.append(abs(late))
        if let stamp = event.heard { stamps.append(abs(Double(stamp - heard) / 1e6)) }
    }
    let expected = ownerEvents.filter { $0.event == "cue" }.count
    let complete = (0..<clients).filter { number in
        let mine = events.filter { ($0.fields["client"] as? Int) == number }
        return mine.filter { $0.event == "cue" }.count == expected && mine.filter(\.isTerminal).count == 1
    }.count
    report("\(transport == "unix" ? "Unix socket" : "WebSocket  "): received − heard \(percentiles(lateness)); \(early) more than 1 ms early; "
        + "\(complete)/\(clients) clients got all \(expected) cues and one terminal event")
    report("             the daemon's heard stamps vs heard: \(percentiles(stamps)); recording holds the render: \(alignment.isComplete && alignment.gaps.isEmpty)")
}
