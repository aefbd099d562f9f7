// Live playback benchmark: prints figures, asserts nothing. Run by scripts/bench-live.sh.
//
//   narrator-bench-live NARRATOR [STRESS_SECONDS]
//
// Everything plays through ALSA into a private PulseAudio server (PulseTestServer), whose pipe
// sink's recording is the independent clock of what was heard.
import Foundation
import NarratorTestSupport

#if canImport(Glibc)
    import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: narrator-bench-live NARRATOR [STRESS_SECONDS]\n".utf8))
    exit(2)
}
let narrator = arguments[1]
let stressSeconds = arguments.count > 2 ? Int(arguments[2]) ?? 300 : 300
let lesson = Repo.path("Timings/lessons/sample.json")
let work = TempDir()
defer { work.remove() }

func now() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
}

func events(_ path: String) -> [[String: Any]] {
    let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
}

func int64(_ value: Any?) -> Int64 { (value as? NSNumber)?.int64Value ?? 0 }

/// |delivered − heard| for each cue the recording pins to one frame; and (signed) the latest.
func deliveryErrors(_ events: [[String: Any]], _ recording: Recording, _ alignment: Alignment) -> (abs: [Double], late: Double, early: Double) {
    var errors: [Double] = []
    var late = -Double.infinity
    var early = -Double.infinity
    for event in events {
        // A cue's event, and only a cue's, has "delivered" (docs/events.md): when the cue went
        // out, what this measures ("heard" is the clock's own stamp of its frame).
        guard event["delivered"] is NSNumber,
            let frame = event["frame"] as? Int, let range = alignment.recordingFrames(ofReferenceFrame: frame), range.count == 1
        else { continue }
        let error = Double(int64(event["delivered"]) - Int64(recording.audibleTime(ofFrame: range.lowerBound))) / 1e6
        errors.append(abs(error))
        late = max(late, error)
        early = max(early, -error)
    }
    return (errors, late, early)
}

func render(_ chainArguments: [String], to path: String) -> [Int16] {
    let result = try! run(narrator, ["render", lesson] + chainArguments + ["--output", path])
    guard result.status == 0, let wav = try? WAVFile(path: path) else { Bench.fail("render: \(result.stderr)") }
    return wav.int16Samples
}

func childCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
        + Double(usage.ru_stime.tv_usec) / 1e6
}

/// Plays a chain through a fresh server; returns the events, the recording and its alignment.
func play(_ chainArguments: [String], extra: [String] = [], reference: [Int16], label: String)
    -> (events: [[String: Any]], recording: Recording, alignment: Alignment, launched: Int64, cpu: Double)
{
    guard let server = try? PulseTestServer() else { Bench.fail("cannot start the PulseAudio test server") }
    defer { server.stop() }
    let eventsPath = work.file("\(label).jsonl")
    let cpuBefore = childCPUSeconds()
    let launched = now()
    guard let player = try? server.startClient(narrator, ["play", lesson] + chainArguments + extra + ["--events", eventsPath])
    else { Bench.fail("cannot start narrator play") }
    player.waitUntilExit()
    let cpu = childCPUSeconds() - cpuBefore
    guard player.terminationStatus == 0 else { Bench.fail("\(label): narrator play exited \(player.terminationStatus)\n\(server.logTail())") }
    guard let recording = try? server.recording(), let alignment = recording.locate(reference, channels: 2) else {
        Bench.fail("\(label): the render was not found in the recording")
    }
    return (events(eventsPath), recording, alignment, launched, cpu)
}

Bench.report("Live playback benchmark (\(narrator)), through ALSA's pulse plugin into a private PulseAudio pipe sink")
Bench.report("")

// 0. This machine: how late a thread wakes, with the CPUs left to idle and kept awake, in the
// order idle, awake, awake, idle (5 s each), so that neither always comes first.
let abba = [false, true, true, false]
var wakeUps: [Bool: [Double]] = [:]
for awake in abba {
    let cpus = awake ? AwakeCPUs() : nil
    wakeUps[awake, default: []] += WakeUpProbe.lateness(seconds: 5)
    cpus?.release()
}
for awake in [false, true] {
    let lateness = wakeUps[awake] ?? []
    Bench.report("machine, CPUs \(awake ? "awake" : "idle "): a thread per CPU sleeping 1 ms, 2 × 5 s, woke late by \(Bench.percentiles(lateness)); "
        + "\(lateness.filter { $0 > 1 }.count) wake-ups more than 1 ms late")
}
Bench.report("")

// 1. Cue delivery, start latency, CPU per second of audio: the sample chain, 8 times (~34 s),
// with the CPUs idle, awake, awake, idle.
let timingChain = ["--chain", "correct", "--seed", "7", "--repeat", "8"]
let timingReference = render(timingChain, to: work.file("reference.wav"))
for awake in abba {
    let cpus = awake ? AwakeCPUs() : nil
    defer { cpus?.release() }
    let reference = timingReference
    let run = play(timingChain, reference: reference, label: "timing")
    Bench.report("CPUs \(awake ? "awake" : "idle"):")
    let (errors, late, early) = deliveryErrors(run.events, run.recording, run.alignment)
    let seconds = Double(reference.count / 2) / 48000
    let start = run.events.first { $0["type"] as? String == "start" } ?? [:]
    let firstWrite = int64(start["firstWriteClock"])
    let firstHeard = Int64(run.recording.audibleTime(ofFrame: run.alignment.startFrame))
    Bench.report("cue delivery, |delivered − heard|: \(Bench.percentiles(errors))")
    Bench.report(String(format: "  latest delivery %.3f ms after heard; earliest %.3f ms before heard", late, early))
    Bench.report("  recording holds the render sample for sample: \(run.alignment.isComplete && run.alignment.gaps.isEmpty)")
    Bench.report("  audible clock fit: \(run.recording.clock.residualsMs), \(String(format: "%.1f", run.recording.clock.slopePPM)) ppm")
    Bench.report(String(format: "start latency: command → first frame written %.1f ms; command → first frame heard %.1f ms",
                 Double(firstWrite - run.launched) / 1e6, Double(firstHeard - run.launched) / 1e6))
    Bench.report("  negotiated: period \(start["periodFrames"] ?? "?") frames, buffer \(start["bufferFrames"] ?? "?") frames, measured delay \(start["latencyMs"] ?? "?") ms, real-time priority: \(start["realtime"] ?? "?")")
    Bench.report(String(format: "CPU: %.3f s for %.1f s of audio = %.2f ms of CPU per second of audio (%.2f%% of one core), whole process",
                 run.cpu, seconds, run.cpu / seconds * 1000, run.cpu / seconds * 100))
}
Bench.report("")

// 2. Peak memory while playing a music bed: 1 minute and 60 minutes (streamed; 20 s played).
do {
    for minutes in [1, 60] {
        let bed = work.file("bed-\(minutes).wav")
        let made = try! runTool("sox", ["-n", "-r", "44100", "-c", "2", "-b", "16", bed, "synth", "\(minutes * 60)", "sine", "220", "vol", "0.1"])
        guard made.status == 0 else { Bench.fail("sox: \(made.stderr)") }
        let bedLesson = work.write(
            "bed-\(minutes).json",
            "{\"sampleRate\": 48000, \"channels\": 2, \"clips\": {\"bed\": {\"file\": \"\(bed)\"}}, \"chains\": {\"bed\": [{\"clip\": \"bed\"}]}}")
        guard let server = try? PulseTestServer() else { Bench.fail("cannot start the PulseAudio test server") }
        guard let player = try? server.startClient(narrator, ["play", bedLesson, "--chain", "bed", "--events", work.file("bed.jsonl")])
        else { Bench.fail("cannot start narrator play") }
        Thread.sleep(forTimeInterval: 20)
        let status = (try? String(contentsOfFile: "/proc/\(player.processIdentifier)/status", encoding: .utf8)) ?? ""
        let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }.map(String.init) ?? "VmHWM: ?"
        kill(player.processIdentifier, SIGINT)
        player.waitUntilExit()
        server.stop()
        let size = (try? FileManager.default.attributesOfItem(atPath: bed)[.size] as? Int) ?? 0
        Bench.report("peak memory playing a \(minutes)-minute bed (\(size / 1_000_000) MB WAV, 44.1 kHz resampled live), 20 s in: "
            + peak.replacingOccurrences(of: "VmHWM:", with: "").trimmingCharacters(in: .whitespaces)
            + " (exit \(player.terminationStatus) after Ctrl-C)")
        try? FileManager.default.removeItem(atPath: bed)
    }
}
Bench.report("")

// 3. Underruns under stress-ng --cpu 4, at 50 and 100 ms.
do {
    guard PulseTestServer.findExecutable("stress-ng") != nil else { Bench.fail("stress-ng not found (apt-get install stress-ng)") }
    let repeats = max(1, Int((Double(stressSeconds) / 4.12).rounded(.up)))
    let chain = ["--chain", "correct", "--seed", "7", "--repeat", "\(repeats)"]
    let reference = render(chain, to: work.file("stress.wav"))
    for latency in [50, 100] {
        let stress = Process()
        stress.executableURL = URL(fileURLWithPath: PulseTestServer.findExecutable("stress-ng")!)
        stress.arguments = ["--cpu", "4", "--timeout", "\(stressSeconds + 30)s", "--quiet"]
        try! stress.run()
        let run = play(chain, extra: ["--latency", "\(latency)"], reference: reference, label: "stress-\(latency)")
        stress.terminate()
        stress.waitUntilExit()
        let underruns = run.events.filter { $0["type"] as? String == "underrun" }.count
        let (errors, _, _) = deliveryErrors(run.events, run.recording, run.alignment)
        Bench.report(String(format: "under stress-ng --cpu 4, %d ms latency, %.0f s: %d underruns, %d gaps in the recording; cue delivery %@",
                     latency, Double(reference.count / 2) / 48000, underruns, run.alignment.gaps.count, Bench.percentiles(errors)))
    }
}
