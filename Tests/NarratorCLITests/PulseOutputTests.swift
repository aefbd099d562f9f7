import Foundation
import NarratorAudioFile
@testable import NarratorCore
@testable import NarratorEngine
import NarratorLive
import NarratorOutputs
import NarratorTestSupport
import NarratorTestTraits
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What only the native PulseAudio output (`--output pulse`) does, through the private server
/// and its recorder: taking back audio it already gave the server (a relative seek), a server
/// that hangs or is not there. The goals it shares with ALSA are LivePlaybackTests', run on both.
@Suite("Pulse output", .serialized, .awakeCPUs, .requires(PulseTestServer.isAvailable, "needs pulseaudio, pulseaudio-utils, libasound2-plugins and python3"))
struct PulseOutputTests {
    /// An answer during the silence after the prompt starts 30 ms after it is heard, in audio
    /// the server already holds (it is given 50 ms ahead): the output seeks back over it. The
    /// answer's tone must then start in the recording exactly at the frame its events name,
    /// with only silence before it, and no idle prompt anywhere.
    @Test func answerReplacesAudioTheServerAlreadyHeld() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try LivePlay.toneActivity(dir)
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
        let giveUp = monotonicNanoseconds() + 10_000_000_000
        while (try? LivePlay.events(dir.file("events.jsonl")))?.contains(where: { $0.type == "chainEnd" }) != true
            && monotonicNanoseconds() < giveUp
        {
            Thread.sleep(forTimeInterval: 0.001)
        }
        #expect((try? LivePlay.events(dir.file("events.jsonl")))?.contains(where: { $0.type == "chainEnd" }) == true, "the prompt was not heard to end within 10 s")
        Thread.sleep(forTimeInterval: 0.4)
        stdin.fileHandleForWriting.write(Data("x\n".utf8))
        try stdin.fileHandleForWriting.close()
        player.waitUntilExit()
        #expect(player.terminationStatus == 0, "\(server.logTail())")

        let events = try LivePlay.events(dir.file("events.jsonl"))
        #expect(!events.contains { ["lateSwitch", "underrun", "idlePrompt"].contains($0.type) }, "\(events.map(\.fields))")
        let tap = try #require(events.first { $0.type == "tap" && $0.fields["result"] as? String == "correct" }, "\(events.map(\.fields))")
        let answerFrame = try #require(tap.frame)
        let recording = try server.recording()
        let prompt = try #require(recording.locate(try LivePlay.stereo(dir, "prompt"), channels: 2))
        let answer = try #require(recording.locate(try LivePlay.stereo(dir, "yes"), channels: 2), "the answer's tone was heard")
        #expect(prompt.isComplete && answer.isComplete)
        #expect(answer.startFrame - prompt.startFrame == answerFrame, "the answer starts at the frame its events name")
        let silence = (prompt.startFrame + prompt.referenceFrameCount) * 2..<answer.startFrame * 2
        #expect(!silence.isEmpty && recording.samples[silence].allSatisfy { $0 == 0 }, "only silence between the prompt and the answer")
        #expect(recording.locate(Array(try LivePlay.stereo(dir, "idle").prefix(96)), channels: 2) == nil)
    }

    /// Audio taken back and not all written again must not play. Half a second into a 2 s
    /// sweep with a held cue at 1 s (an activity's idle prompt), a seek: the output takes back
    /// what the server holds beyond the sink's block and the fade-out is written there. Seeking
    /// to 3 ms before the held cue, the renderer writes those 3 ms and holds (it writes less
    /// than it took back); seeking past it, it goes on at once (it used to hold there too,
    /// until an underrun). Not one window of the sweep from where the fade-out ends (the
    /// frames taken back and not rewritten) may be in the recording; the sweep up to the fade
    /// and from the seek's frame on is, and past the held cue, right after the fade-out.
    @Test(arguments: [72_000, 48_000 - 144])
    func audioTakenBackIsNotHeardWhenTheRendererThenHolds(target: Int) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lessonPath = try dir.soxLesson(clip: "sweep", chain: "c", channels: 2, synth: ["2", "sine", "300-3000", "vol", "0.5"])
        let bank = try ClipBank.prepare(lesson: try Lesson.load(path: lessonPath), clipIDs: ["sweep"], decoder: SndFileDecoder())
        var draws = PoolDraws(seed: 1)
        let base = try Scheduler.schedule(chain: "c", repeats: 1, bank: bank, draws: &draws)
        try OfflineRenderer.render(base, to: dir.file("reference.wav"), format: .s16)
        let reference = try WAVFile(path: dir.file("reference.wav")).int16Samples
        let held = 48_000
        let schedule = Schedule(
            sampleRate: base.sampleRate, channels: base.channels, frames: base.frames, voices: base.voices,
            cues: Cue.ordered(base.cues + [Cue(frame: held, kind: .activity(type: .idlePrompt, fields: [:]))]))

        let server = try PulseTestServer()
        defer { server.stop() }
        let saved = server.clientVariables.keys.map { ($0, ProcessInfo.processInfo.environment[$0]) }
        for (key, value) in server.clientVariables { setenv(key, value, 1) }
        defer { for (key, value) in saved { if let value { setenv(key, value, 1) } else { unsetenv(key) } } }
        let output = try PulseOutput(device: nil, rate: 48_000, channels: 2, latencyMs: 50)
        let engine = PlaybackEngine(schedule: schedule, output: output)
        engine.holdBefore = [.idlePrompt]
        let run = EngineRun(engine)
        try #require(run.waitForStart(seconds: 5), "\(server.logTail())")
        Thread.sleep(forTimeInterval: 0.5)
        #expect(engine.seek(to: target))
        try #require(run.waitForEnd(seconds: 10), "\(server.logTail())")
        #expect(run.outcome == .finished)
        let seeked = run.events.compactMap { if case .seeked(let from, let to, _) = $0 { (from, to) } else { nil } }
        try #require(seeked.count == 1 && seeked[0].1 == target, "\(seeked)")
        let fadeEnd = seeked[0].0
        try #require(fadeEnd > 240 && fadeEnd < held, "the fade-out ended at \(fadeEnd)")

        let recording = try server.recording()
        func heard(_ from: Int, _ count: Int) -> Alignment? {
            recording.locate(Array(reference[(from * 2)..<((from + count) * 2)]), channels: 2)
        }
        let before = try #require(heard(0, fadeEnd - 240), "the sweep up to the fade-out")
        #expect(before.startFrame >= 0 && before.isComplete)
        let after = heard(target + 240, 4800)
        #expect(after != nil, "the sweep after the seek")
        // Nor does the renderer wait for the held frame it jumped over: the seek's frame
        // follows the fade-out (after its own 5 ms fade-in), with no underrun.
        if target > held {
            #expect(after.map { $0.startFrame - 240 } == before.startFrame + fadeEnd, "the seek's audio right after the fade-out")
            #expect(!run.events.contains { if case .underrun = $0 { true } else { false } })
        }
        let kinds = run.events.map { "\($0)".prefix(30) }
        print("taken back, then held: fade-out ends at recording frame \(before.startFrame + fadeEnd), the seek's audio (after its fade-in) starts at \(after.map { $0.startFrame - 240 } ?? -1); events \(kinds)")
        var old: [Int] = []
        for offset in stride(from: 0, to: 2400, by: 48) where heard(fadeEnd + offset, 64) != nil { old.append(offset) }
        #expect(old.isEmpty, "old audio heard at \(old.count) of 50 windows past the fade-out (the first \(old.first ?? -1) frames after it)")
    }

    /// A server that stops answering mid-playback (SIGSTOP): one `error` event within a second,
    /// exit status 1, and the player does not wait on the server to stop.
    @Test func hungServerEndsPlaybackWithinASecond() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try LivePlay.liveLesson(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let player = try server.startClient(
            Repo.narrator, ["play", lesson] + LivePlay.chainArguments + ["--output", "pulse", "--events", dir.file("events.jsonl")])
        Thread.sleep(forTimeInterval: 1.5)
        let stopped = monotonicNanoseconds()
        kill(server.daemonPID, SIGSTOP)
        defer { kill(server.daemonPID, SIGCONT) }
        player.waitUntilExit()
        let ended = monotonicNanoseconds()
        #expect(player.terminationStatus == 1)
        #expect(ended - stopped < 1_500_000_000, "ended \(Double(ended - stopped) / 1e6) ms after the server stopped")
        let events = try LivePlay.events(dir.file("events.jsonl"))
        #expect(events.last?.type == "error" && events.last?.fields["code"] as? String == "ETIMEDOUT", "\(events.last?.fields ?? [:])")
        #expect(events.filter { ["error", "stopped"].contains($0.type) || $0.fields["final"] != nil }.count == 1)
    }

    /// libpulse's mainloop thread renders, and would inherit the policy of the thread that
    /// created it: started from a SCHED_FIFO parent, it takes the audio policy asked for. On the
    /// pulse output that is SCHED_FIFO 20 (the engine's audio priority) unless `--no-realtime`.
    @Test(
        .requires(PulseTestServer.realtimePermitted, "SCHED_FIFO is not permitted here (chrt -f 10 fails)", allowed: .realtimeScheduling),
        arguments: [([String](), true), (["--realtime"], true), (["--no-realtime"], false)])
    func mainloopThreadTakesTheAudioPolicy(flags: [String], realtime: Bool) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = try PulseTestServer()
        defer { server.stop() }
        // The parent at FIFO 10: a thread that inherited it would show 10, not 20 or normal.
        let player = try server.startClient(
            try #require(PulseTestServer.findExecutable("chrt")),
            ["-f", "10", Repo.narrator, "play", LivePlay.sampleLesson, "--chain", "correct", "--output", "pulse"] + flags)
        defer { player.waitUntilExit() }
        var threads: [KernelThread] = []
        let giveUp = monotonicNanoseconds() + 3_000_000_000
        while threads.count < 2 && monotonicNanoseconds() < giveUp {
            Thread.sleep(forTimeInterval: 0.1)
            threads = KernelThread.all(of: "\(player.processIdentifier)").filter { $0.name == "narrator-pulse" || $0.name == "narrator-cues" }
        }
        let mainloop = try #require(threads.first { $0.name == "narrator-pulse" }, "no narrator-pulse thread")
        let cues = try #require(threads.first { $0.name == "narrator-cues" }, "no narrator-cues thread")
        if realtime {
            #expect(mainloop.policy == Int(SCHED_FIFO) && mainloop.realtimePriority == 20, "\(mainloop)")
            #expect(cues.policy == Int(SCHED_FIFO) && cues.realtimePriority == 19, "\(cues)")
        } else {
            #expect(mainloop.policy == Int(SCHED_OTHER) && mainloop.realtimePriority == 0, "\(mainloop)")
            #expect(cues.policy == Int(SCHED_OTHER) && cues.realtimePriority == 0, "\(cues)")
        }
    }

    /// No server where PULSE_SERVER points: one line saying so, exit status 1, no events file.
    @Test func noServer() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try run(
            "/usr/bin/env",
            ["PULSE_SERVER=unix:\(dir.file("none.sock"))", Repo.narrator, "play", LivePlay.sampleLesson, "--chain", "correct",
             "--output", "pulse", "--events", dir.file("e.jsonl")])
        #expect(result.status == 1)
        #expect(
            result.stderr
                == "narrator: audio device 'default': cannot open it (no PulseAudio server answers: start one (or PipeWire's pulse server), or name it with PULSE_SERVER); choose another with --device (pactl list short sinks lists them)\n")
        #expect(!FileManager.default.fileExists(atPath: dir.file("e.jsonl")))
    }
}
