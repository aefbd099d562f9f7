import Foundation
import NarratorOutputs
import NarratorTestSupport
import NarratorTestTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `narrator play` end to end: real libasound, ALSA's pulse plugin, a private PulseAudio server
/// whose pipe sink hands back exactly what it played, timestamped by a recorder that knows
/// nothing of Narrator. The recorder's clock is the ground truth of when a frame was heard.
///
/// These tests measure timing, so `make test` runs them on their own after the others, with the
/// CPUs kept awake (`AwakeCPUs`: on a VM, waking an idle vCPU takes milliseconds).
@Suite("Live playback", .serialized, .awakeCPUs, .requires(PulseTestServer.isAvailable, "needs pulseaudio, pulseaudio-utils, libasound2-plugins and python3"))
struct LivePlaybackTests {
    @Test(arguments: LivePlay.timedOutputs)
    func playsTheRenderSampleForSampleWithCuesWhenHeard(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try LivePlay.liveLesson(dir)
        let reference = try LivePlay.reference(dir, lesson: lesson)
        let server = try PulseTestServer()
        defer { server.stop() }
        let played = try server.runClient(
            Repo.narrator, ["play", lesson] + LivePlay.chainArguments + ["--output", output.rawValue, "--events", dir.file("events.jsonl"), "--verbose"])
        #expect(played.status == 0, "\(played.stderr)\n\(server.logTail())")
        let recording = try server.recording()
        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        #expect(alignment.isComplete && alignment.gaps.isEmpty, "\(alignment)")

        let events = try LivePlay.events(dir.file("events.jsonl"))
        #expect(events.first?.type == "start")
        #expect(events.last?.type == "chainEnd" && events.last?.fields["final"] as? Bool == true)
        // Each line as docs/events.schema.json says (python3-jsonschema) (make deps installs it).
        let problems = try EventSchema.problems(try String(contentsOfFile: dir.file("events.jsonl"), encoding: .utf8), as: "playLine")
        #expect(problems == nil, "\(problems ?? "")")
        // Every cue of the cue sheet once, in order, and nothing else.
        let sheet = try run(Repo.narrator, ["cues", lesson] + LivePlay.chainArguments)
        let sheetObject = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])
        let expected = try #require(sheetObject["cues"] as? [[String: Any]]).map { "\($0["type"]!) \($0["frame"]!)" }
        #expect(events.dropFirst().map { "\($0.type) \($0.frame ?? -1)" } == expected)
        let measured = try LivePlay.deliveryErrors(events, recording: recording, alignment: alignment)
        let spread = Spread(absoluteNanoseconds: measured.map(\.error))
        print("live cue delivery through PulseAudio (\(output)): \(spread) cues; "
            + "clock fit \(recording.clock.residualsMs), \(String(format: "%.1f", recording.clock.slopePPM)) ppm; \(played.stderr)")
        #expect(measured.count >= 20)
        // The goal, p99 ≤ 2 ms and max ≤ 5 ms; a run's 20–45 cues are too few for a p99 (nearest
        // rank), so each of them must be within 2 ms (Spread.exceeds).
        let allowance = LivePlay.wander(output)
        let missed = spread.exceeds(p99: 2 + allowance, max: 5 + allowance)
        #expect(missed == nil, "\(missed ?? "")")
    }

    /// The same lesson with the CPUs loaded (two spinning threads of normal priority on each
    /// CPU, beside whatever else runs): the audio may underrun and the cues come late, but no
    /// cue is stamped before the recording heard it (`LivePlay.deliveryErrors` checks each),
    /// every frame of the render is heard in order, and no cue is more than 100 ms late.
    /// Through the native pulse output only, for now: through ALSA's pulse plugin a fresh
    /// clone's `.ci/run` here (2026-11-27) saw the first cues 5.5–6.7 ms before heard and the
    /// later ones p50 19.7 ms after, while the busy threads also starved the recorder (its reads
    /// up to 7–25 ms late: the ground truth itself was off); it passed on retry and twice at
    /// load 6–8. Open until the recorder runs above the load (docs/status.md).
    @Test(arguments: LivePlay.timedOutputs.filter { $0 == .pulse })
    func cuesAreNeverEarlyWithTheCPUsLoaded(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try LivePlay.liveLesson(dir)
        let reference = try LivePlay.reference(dir, lesson: lesson)
        let server = try PulseTestServer()
        defer { server.stop() }
        let load = BusyCPUs()
        let played = try server.runClient(
            Repo.narrator, ["play", lesson] + LivePlay.chainArguments + ["--output", output.rawValue, "--events", dir.file("events.jsonl")])
        load.release()
        #expect(played.status == 0, "\(played.stderr)\n\(server.logTail())")
        let recording = try server.recording()
        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        #expect(alignment.isComplete, "\(alignment)")
        let events = try LivePlay.events(dir.file("events.jsonl"))
        let measured = try LivePlay.deliveryErrors(events, recording: recording, alignment: alignment)
        let spread = Spread(absoluteNanoseconds: measured.map(\.error))
        let underruns = events.filter { $0.type == "underrun" }.count
        print("live cue delivery with the CPUs loaded (\(output), \(load.threads) busy threads): \(spread) cues, \(underruns) underruns, \(alignment.gaps.count) gaps")
        #expect(measured.count >= 20)
        #expect(spread.max <= 100, "\(spread)")
    }

    /// An activity with scripted taps, live: the events are the simulated trace, each delivered
    /// when heard, and the recording is the activity's offline render.
    @Test(arguments: LivePlay.timedOutputs)
    func activityPlaysLiveWithTheSimulatedTrace(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = SightWordsLesson.path
        let run1 = ["--activity", "sight-words", "--taps", "3:cat,4.5:see,9:close", "--seed", "7"]
        let simulated = try run(Repo.narrator, ["simulate", lesson] + run1)
        try #require(simulated.status == 0, "\(simulated.stderr)")
        let rendered = try run(Repo.narrator, ["render", lesson] + run1 + ["--output", dir.file("reference.wav")])
        try #require(rendered.status == 0, "\(rendered.stderr)")
        let mono = try WAVFile(path: dir.file("reference.wav")).int16Samples
        let server = try PulseTestServer()
        defer { server.stop() }
        let played = try server.runClient(Repo.narrator, ["play", lesson] + run1 + ["--output", output.rawValue, "--events", dir.file("events.jsonl")])
        #expect(played.status == 0, "\(played.stderr)\n\(server.logTail())")
        let recording = try server.recording()
        let alignment = try #require(recording.locate(mono, channels: 2), "\(server.logTail())")
        #expect(alignment.isComplete, "\(alignment)")

        let events = try LivePlay.events(dir.file("events.jsonl"))
        let expected = try simulated.stdout.split(separator: "\n").map { line in
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return "\(fields["type"]!)@\(fields["frame"]!)"
        }
        #expect(events.dropFirst().map { "\($0.type)@\($0.frame ?? -1)" } == expected)
        let measured = try LivePlay.deliveryErrors(events, recording: recording, alignment: alignment)
        let spread = Spread(absoluteNanoseconds: measured.map(\.error))
        print("live activity (\(output)): \(spread) events")
        #expect(spread.max <= 5, "\(spread)")
    }

    /// Plays the tone activity, answering `x` `lead` nanoseconds before the idle deadline as
    /// heard (nil: never); returns the events, the recording and the tap's time.
    static func answerLive(_ dir: TempDir, output: OutputKind, lead: Int64?) throws -> (events: [LivePlay.Event], recording: Recording, deadline: Int64, sent: Int64) {
        let lesson = try LivePlay.toneActivity(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let player = Process()
        player.executableURL = URL(fileURLWithPath: Repo.narrator)
        player.arguments = ["play", lesson, "--activity", "a", "--output", output.rawValue, "--events", dir.file("events.jsonl")]
        player.environment = server.environment
        let stdin = Pipe()
        player.standardInput = stdin
        try player.run()
        // When the prompt is heard to end, the deadline is 1 s later.
        var promptEnd: Int64?
        let giveUp = monotonicNanoseconds() + 10_000_000_000
        while promptEnd == nil && monotonicNanoseconds() < giveUp {
            promptEnd = (try? LivePlay.events(dir.file("events.jsonl")))?.first { $0.type == "chainEnd" }?.heard
            Thread.sleep(forTimeInterval: 0.001)
        }
        let deadline = try #require(promptEnd) + 1_000_000_000
        var sent = Int64.max
        if let lead {
            while monotonicNanoseconds() < deadline - lead { Thread.sleep(forTimeInterval: 0.0005) }
            stdin.fileHandleForWriting.write(Data("x\n".utf8))
            sent = monotonicNanoseconds()
        } else {
            // After the idle prompt has played, answer.
            while monotonicNanoseconds() < deadline + 700_000_000 { Thread.sleep(forTimeInterval: 0.001) }
            stdin.fileHandleForWriting.write(Data("x\n".utf8))
        }
        try stdin.fileHandleForWriting.close()
        player.waitUntilExit()
        #expect(player.terminationStatus == 0, "\(server.logTail())")
        let events = try LivePlay.events(dir.file("events.jsonl"))
        #expect(!events.contains { ["lateSwitch", "underrun"].contains($0.type) }, "\(events.map(\.fields))")
        #expect(events.contains { $0.type == "tap" && $0.fields["result"] as? String == "correct" })
        #expect(events.last?.type == "activityEnd")
        return (events, try server.recording(), deadline, sent)
    }

    /// Answering live: a tap heard 25 ms before the idle deadline wins, and no idle-prompt audio
    /// reaches the output. The player holds back before the deadline's frame until it is 10 ms
    /// from being heard, and the new plan takes over where the plans differ.
    @Test(arguments: LivePlay.timedOutputs)
    func tapHeardBeforeTheDeadlineSilencesTheIdlePrompt(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let run = try Self.answerLive(dir, output: output, lead: 25_000_000)
        #expect(run.sent < run.deadline, "the tap went in \(Double(run.deadline - run.sent) / 1e6) ms before the deadline")
        #expect(!run.events.contains { $0.type == "idlePrompt" }, "\(run.events.map(\.type))")
        #expect(run.recording.locate(try LivePlay.stereo(dir, "yes"), channels: 2) != nil, "the answer's tone is in the recording")
        #expect(run.recording.locate(try LivePlay.stereo(dir, "prompt"), channels: 2) != nil)
        let idle = try LivePlay.stereo(dir, "idle")
        #expect(run.recording.locate(Array(idle.prefix(96)), channels: 2) == nil, "no frame of the idle prompt was heard")
    }

    /// With no tap, the held idle prompt still starts exactly 1 s after the prompt, as heard.
    @Test(arguments: LivePlay.timedOutputs)
    func heldIdlePromptStillStartsOnTime(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let run = try Self.answerLive(dir, output: output, lead: nil)
        let prompt = try #require(run.recording.locate(try LivePlay.stereo(dir, "prompt"), channels: 2))
        let idle = try #require(run.recording.locate(try LivePlay.stereo(dir, "idle"), channels: 2), "the idle prompt played")
        #expect(idle.startFrame == prompt.startFrame + prompt.referenceFrameCount + 48_000, "exactly 1 s after the prompt")
        let event = try #require(run.events.first { $0.type == "idlePrompt" })
        let heard = Int64(run.recording.audibleTime(ofFrame: idle.startFrame))
        #expect(abs(event.heard - heard) < 5_000_000, "idlePrompt delivered \(Double(event.heard - heard) / 1e6) ms from when it was heard")
    }

    @Test(arguments: LivePlay.timedOutputs)
    func stoppedPlayerUnderrunsAndRecoversInStep(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try LivePlay.liveLesson(dir)
        let reference = try LivePlay.reference(dir, lesson: lesson)
        let server = try PulseTestServer()
        defer { server.stop() }
        let player = try server.startClient(
            Repo.narrator, ["play", lesson] + LivePlay.chainArguments + ["--output", output.rawValue, "--events", dir.file("events.jsonl")])
        Thread.sleep(forTimeInterval: 1.5)
        kill(player.processIdentifier, SIGSTOP)
        Thread.sleep(forTimeInterval: 0.3)
        let continued = monotonicNanoseconds()
        kill(player.processIdentifier, SIGCONT)
        player.waitUntilExit()
        #expect(player.terminationStatus == 0, "\(server.logTail())")
        let recording = try server.recording()
        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        #expect(alignment.isComplete, "nothing lost or repeated: \(alignment)")
        #expect(alignment.gaps.count >= 1, "\(alignment)")

        let events = try LivePlay.events(dir.file("events.jsonl"))
        #expect(events.contains { $0.type == "underrun" })
        #expect(events.last?.type == "chainEnd")
        let frames = events.compactMap { $0.type == "underrun" || $0.type == "start" ? nil : $0.frame }
        #expect(frames == frames.sorted(), "in order")
        // Once the player runs again and its clock has settled, cues are back in step.
        let after = try LivePlay.deliveryErrors(events, recording: recording, alignment: alignment)
            .filter { $0.heard > continued + 250_000_000 }
        let spread = Spread(absoluteNanoseconds: after.map(\.error))
        print("after a 300 ms stop (\(output)): \(spread) cues; \(alignment.gaps)")
        #expect(after.count >= 10)
        #expect(spread.max <= 5, "\(spread)")
    }

    /// On a terminal (a pseudo-terminal from `script`), people see the words with the one being
    /// heard highlighted, pulses and a progress line, and no JSON.
    @Test(.requires(PulseTestServer.findExecutable("script") != nil, "needs script (bsdutils)"), arguments: [OutputKind.alsa, .pulse])
    func terminalShowsTheWordsBeingHeard(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try LivePlay.liveLesson(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let command = ([Repo.narrator, "play", lesson] + LivePlay.chainArguments.prefix(4) + ["--output", output.rawValue]).joined(separator: " ")
        let result = try server.runClient(try #require(PulseTestServer.findExecutable("script")), ["-qec", command, "/dev/null"])
        #expect(result.status == 0, "\(result.stderr)")
        let red = "\u{1B}[1;31m"
        for word in ["I", "can", "see", "the"] { #expect(result.stdout.contains(red + word), "\(result.stdout.suffix(300))") }
        #expect(result.stdout.contains("● pulse ticket-1"))
        #expect(result.stdout.contains("end of live"))
        #expect(!result.stdout.contains("\"type\""))
    }

    @Test(arguments: [OutputKind.alsa, .pulse])
    func ctrlCEndsPlaybackWithOneStoppedEvent(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try LivePlay.liveLesson(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let player = try server.startClient(
            Repo.narrator, ["play", lesson] + LivePlay.chainArguments + ["--output", output.rawValue, "--events", dir.file("events.jsonl")])
        Thread.sleep(forTimeInterval: 1.2)
        let interrupted = monotonicNanoseconds()
        kill(player.processIdentifier, SIGINT)
        player.waitUntilExit()
        #expect(player.terminationStatus == 130)
        let events = try LivePlay.events(dir.file("events.jsonl"))
        let last = try #require(events.last)
        #expect(last.type == "stopped")
        #expect(last.heard - interrupted < 100_000_000, "stopped \(Double(last.heard - interrupted) / 1e6) ms after Ctrl-C")
        #expect(events.filter { ["error", "stopped"].contains($0.type) || $0.fields["final"] != nil }.count == 1)
    }

    @Test(arguments: [OutputKind.alsa, .pulse])
    func killedServerEndsPlaybackWithATypedError(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try LivePlay.liveLesson(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let player = try server.startClient(
            Repo.narrator, ["play", lesson] + LivePlay.chainArguments + ["--output", output.rawValue, "--events", dir.file("events.jsonl")],
            logFile: dir.file("stderr.txt"))
        Thread.sleep(forTimeInterval: 1.5)
        let killed = monotonicNanoseconds()
        server.killDaemon()
        player.waitUntilExit()
        let ended = monotonicNanoseconds()
        #expect(player.terminationStatus == 1)
        let events = try LivePlay.events(dir.file("events.jsonl"))
        let last = try #require(events.last)
        #expect(last.type == "error")
        #expect(["EIO", "ENODEV", "ENOTTY", "EBADFD", "ETIMEDOUT"].contains(last.fields["code"] as? String ?? ""), "\(last.fields)")
        #expect(last.heard - killed < 1_000_000_000, "error \(Double(last.heard - killed) / 1e6) ms after the kill")
        #expect(ended - killed < 1_500_000_000)
        #expect(events.filter { ["error", "stopped"].contains($0.type) || $0.fields["final"] != nil }.count == 1)
        let stderr = try String(contentsOfFile: dir.file("stderr.txt"), encoding: .utf8)
        #expect(stderr.split(separator: "\n").count == 1 && stderr.contains("audio device 'default': lost while playing"), "\(stderr)")
        print("server killed (\(output)): error event \(Double(last.heard - killed) / 1e6) ms later, code \(last.fields["code"] ?? "?")")
    }
}

/// Devices that are not there or are taken: one line naming the device and how to choose
/// another, exit status 1, no events file left.
@Suite("Unavailable devices")
struct UnavailableDeviceTests {
    /// A pulse sink is looked up on a server: the private one, whose only sink is its pipe sink.
    @Test(arguments: [OutputKind.alsa] + (PulseTestServer.isAvailable ? [.pulse] : []))
    func missingDevice(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = output == .pulse ? try PulseTestServer() : nil
        defer { server?.stop() }
        let arguments = ["play", LivePlay.sampleLesson, "--chain", "correct", "--output", output.rawValue, "--device", "no_such_device", "--events", dir.file("e.jsonl")]
        let result = try server?.runClient(Repo.narrator, arguments) ?? run(Repo.narrator, arguments)
        #expect(result.status == 1)
        let (missing, lister) = output == .alsa ? ("no such ALSA device", "aplay -L") : ("no such PulseAudio sink", "pactl list short sinks")
        #expect(result.stderr == "narrator: audio device 'no_such_device': cannot open it (\(missing)); choose another with --device (\(lister) lists them)\n")
        #expect(!FileManager.default.fileExists(atPath: dir.file("e.jsonl")))
    }

    /// ALSA's `null` device swallows audio as fast as it comes: no clock to place cues on. One
    /// error event, one line, within the settling limit, not a hang. (ALSA only: a sound
    /// server's sink plays in real time, with or without hardware; there is no pulse `null`.)
    @Test func deviceWithoutAClock() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try run(
            Repo.narrator, ["play", LivePlay.sampleLesson, "--chain", "correct", "--output", "alsa", "--device", "null", "--events", dir.file("e.jsonl")])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("narrator: audio device 'null': its timing reports never settled"), "\(result.stderr)")
        let events = try LivePlay.events(dir.file("e.jsonl"))
        #expect(events.map(\.type) == ["error"])
        #expect(events.first?.fields["code"] as? String == "ETIME")
        #expect((events.first?.fields["t"] as? Double ?? 99) < 3)
    }

    /// A real ALSA PCM plugin, built here, whose open answers EBUSY as a device held by another
    /// program does. (ALSA only: a sound server mixes its clients, so a pulse sink is never busy.)
    @Test(.requires(PulseTestServer.findExecutable("gcc") != nil, "needs gcc"))
    func busyDevice() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let source = dir.write(
            "busy.c",
            """
            #include <errno.h>
            #include <alsa/asoundlib.h>
            #include <alsa/pcm_external.h>
            SND_PCM_PLUGIN_DEFINE_FUNC(busy) { (void)pcmp; (void)name; (void)root; (void)conf; (void)stream; (void)mode; return -EBUSY; }
            SND_PCM_PLUGIN_SYMBOL(busy);
            """)
        let library = dir.file("libasound_module_pcm_busy.so")
        let built = try runTool("gcc", ["-shared", "-fPIC", "-DPIC", "-o", library, source, "-lasound"])
        try #require(built.status == 0, "\(built.stderr)")
        let config = dir.write("busy.conf", "pcm_type.busy { lib \"\(library)\" }\npcm.narrator_busy { type busy }\n")
        let result = try run(
            "/usr/bin/env",
            ["ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf:\(config)", Repo.narrator, "play", LivePlay.sampleLesson, "--chain", "correct",
             "--output", "alsa", "--device", "narrator_busy"])
        #expect(result.status == 1)
        #expect(result.stderr == "narrator: audio device 'narrator_busy': busy: another program is using it; close that program or choose another with --device (aplay -L lists them)\n")
    }
}
