import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What only the native PulseAudio output (`--output pulse`) does, through the private server
/// and its recorder: taking back audio it already gave the server (a relative seek), a server
/// that hangs or is not there. The goals it shares with ALSA are LivePlaybackTests', run on both.
@Suite("Pulse output", .serialized, .awakeCPUs, .enabled(if: PulseTestServer.isAvailable, "needs pulseaudio, pulseaudio-utils, libasound2-plugins and python3"))
struct PulseOutputTests {
    /// An answer during the silence after the prompt starts 30 ms after it is heard, in audio
    /// the server already holds (it is given 50 ms ahead): the output seeks back over it. The
    /// answer's tone must then start in the recording exactly at the frame its events name,
    /// with only silence before it, and no idle prompt anywhere.
    @Test func answerReplacesAudioTheServerAlreadyHeld() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try LivePlaybackTests.toneActivity(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let player = Process()
        player.executableURL = URL(fileURLWithPath: Repo.narrator)
        player.arguments = ["play", lesson, "--activity", "a", "--output", "pulse", "--events", dir.file("events.jsonl")]
        player.environment = server.environment
        let stdin = Pipe()
        player.standardInput = stdin
        // A player that already ended must fail the test, not kill the test process (SIGPIPE
        // on the write below).
        signal(SIGPIPE, SIG_IGN)
        try player.run()
        // The idle deadline is 1 s after the prompt is heard to end: answer in between, far
        // from both.
        let giveUp = LivePlaybackTests.now() + 10_000_000_000
        while (try? LivePlaybackTests.events(dir.file("events.jsonl")))?.contains(where: { $0.type == "chainEnd" }) != true
            && LivePlaybackTests.now() < giveUp
        {
            Thread.sleep(forTimeInterval: 0.001)
        }
        Thread.sleep(forTimeInterval: 0.4)
        stdin.fileHandleForWriting.write(Data("x\n".utf8))
        try stdin.fileHandleForWriting.close()
        player.waitUntilExit()
        #expect(player.terminationStatus == 0, "\(server.logTail())")

        let events = try LivePlaybackTests.events(dir.file("events.jsonl"))
        #expect(!events.contains { ["lateSwitch", "underrun", "idlePrompt"].contains($0.type) }, "\(events.map(\.fields))")
        let tap = try #require(events.first { $0.type == "tap" && $0.fields["result"] as? String == "correct" }, "\(events.map(\.fields))")
        let answerFrame = try #require(tap.frame)
        let recording = try server.recording()
        let prompt = try #require(recording.locate(try LivePlaybackTests.stereo(dir, "prompt"), channels: 2))
        let answer = try #require(recording.locate(try LivePlaybackTests.stereo(dir, "yes"), channels: 2), "the answer's tone was heard")
        #expect(prompt.isComplete && answer.isComplete)
        #expect(answer.startFrame - prompt.startFrame == answerFrame, "the answer starts at the frame its events name")
        let silence = (prompt.startFrame + prompt.referenceFrameCount) * 2..<answer.startFrame * 2
        #expect(!silence.isEmpty && recording.samples[silence].allSatisfy { $0 == 0 }, "only silence between the prompt and the answer")
        #expect(recording.locate(Array(try LivePlaybackTests.stereo(dir, "idle").prefix(96)), channels: 2) == nil)
    }

    /// A server that stops answering mid-playback (SIGSTOP): one `error` event within a second,
    /// exit status 1, and the player does not wait on the server to stop.
    @Test func hungServerEndsPlaybackWithinASecond() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try LivePlaybackTests.liveLesson(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let player = try server.startClient(
            Repo.narrator, ["play", lesson] + LivePlaybackTests.chainArguments + ["--output", "pulse", "--events", dir.file("events.jsonl")])
        Thread.sleep(forTimeInterval: 1.5)
        let stopped = LivePlaybackTests.now()
        kill(server.daemonPID, SIGSTOP)
        defer { kill(server.daemonPID, SIGCONT) }
        player.waitUntilExit()
        let ended = LivePlaybackTests.now()
        #expect(player.terminationStatus == 1)
        #expect(ended - stopped < 1_500_000_000, "ended \(Double(ended - stopped) / 1e6) ms after the server stopped")
        let events = try LivePlaybackTests.events(dir.file("events.jsonl"))
        #expect(events.last?.type == "error" && events.last?.fields["code"] as? String == "ETIMEDOUT", "\(events.last?.fields ?? [:])")
        #expect(events.filter { ["error", "stopped"].contains($0.type) || $0.fields["final"] != nil }.count == 1)
    }

    /// libpulse's mainloop thread renders, and would inherit the policy of the thread that
    /// created it: started from a SCHED_FIFO parent, it is still normal unless `--realtime`
    /// asks (then SCHED_FIFO 20, the engine's audio priority).
    @Test(
        .enabled(if: geteuid() == 0 && PulseTestServer.findExecutable("chrt") != nil, "SCHED_FIFO needs root and chrt here"),
        arguments: [false, true])
    func mainloopThreadTakesTheAudioPolicy(realtime: Bool) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = try PulseTestServer()
        defer { server.stop() }
        let player = try server.startClient(
            try #require(PulseTestServer.findExecutable("chrt")),
            ["-f", "10", Repo.narrator, "play", LivePlaybackTests.lesson, "--chain", "correct", "--output", "pulse"]
                + (realtime ? ["--realtime"] : []))
        defer { player.waitUntilExit() }
        var thread: KernelThread?
        let giveUp = LivePlaybackTests.now() + 3_000_000_000
        while thread == nil && LivePlaybackTests.now() < giveUp {
            Thread.sleep(forTimeInterval: 0.1)
            thread = KernelThread.all(of: "\(player.processIdentifier)").first { $0.name == "narrator-pulse" }
        }
        let mainloop = try #require(thread, "no narrator-pulse thread")
        if realtime {
            #expect(mainloop.policy == Int(SCHED_FIFO) && mainloop.realtimePriority == 20, "\(mainloop)")
        } else {
            #expect(mainloop.policy == Int(SCHED_OTHER) && mainloop.realtimePriority == 0, "\(mainloop)")
        }
    }

    /// No server where PULSE_SERVER points: one line saying so, exit status 1, no events file.
    @Test func noServer() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try run(
            "/usr/bin/env",
            ["PULSE_SERVER=unix:\(dir.file("none.sock"))", Repo.narrator, "play", LivePlaybackTests.lesson, "--chain", "correct",
             "--output", "pulse", "--events", dir.file("e.jsonl")])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "narrator: audio device 'default': cannot open it (no PulseAudio server answers: start one (or PipeWire's pulse server), or name it with PULSE_SERVER); choose another with --device (pactl list short sinks lists them)\n")
        #expect(!FileManager.default.fileExists(atPath: dir.file("e.jsonl")))
    }
}
