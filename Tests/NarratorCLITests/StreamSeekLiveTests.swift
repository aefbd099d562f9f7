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

/// Seeks on a real sound server, of a voice streamed from disk (issue 28.3b) and of the same
/// voice in memory. The virtual output's StreamSeekTests prove the samples; here the ring's
/// refill, off the real-time thread, races a device that keeps playing, and the output's
/// take-back meets a real server. A 20 s two-tone sweep is sought forward and back further
/// than a ring holds (2 s), through the native PulseAudio output and through ALSA's pulse
/// plugin. After each seek the recording holds the render from the frame sought (after the
/// 5 ms fade-in), bit for bit, where the `seeked` event says it is heard; what played before
/// ends at the seek's fade-out, never past it (audio taken back is not heard); the silence
/// between the fade-out and the fade-in (the refill's cost, if any) is measured and bounded.
/// ALSA's pulse plugin cannot take audio back (alsa-lib's I/O plugins only move their own
/// pointer on a rewind, `AlsaOutput.endsAtCard`): before that was known, 38–50 ms of the old
/// audio played past every seek's fade-out there.
@Suite("Streamed seeks on a device", .serialized, .awakeCPUs, .requires(PulseTestServer.isAvailable, "needs pulseaudio, pulseaudio-utils, libasound2-plugins and python3"))
struct StreamSeekLiveTests {
    static let rate = 48_000
    static let fade = 240

    /// The refill must fit well inside the device's buffer: a refill that took this long
    /// would be heard as a gap a child notices (the fade-in comes after it).
    static let refillBoundFrames = 48_000 * 40 / 1000

    @Test(arguments: LivePlay.timedOutputs, [true, false])
    func aSweepSoughtFurtherThanItsRingLandsOnTheRender(kind: OutputKind, streamed: Bool) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let sweep = dir.file("sweep.wav")
        let made = try runTool("sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", sweep, "synth", "20", "sine", "200-2000", "sine", "330", "vol", "0.3"])
        try #require(made.status == 0, "sox: \(made.stderr)")
        let lessonPath = dir.write("stream.json", #"{"sampleRate": 48000, "channels": 2, "clips": {"s": {"file": "\#(sweep)"}}, "chains": {"c": [{"clip": "s"}]}}"#)
        let bank = try ClipBank.prepare(lesson: try Lesson.load(path: lessonPath), clipIDs: ["s"], decoder: SndFileDecoder(streamAboveSeconds: streamed ? 1 : nil))
        var draws = PoolDraws(seed: 1)
        let schedule = try Scheduler.schedule(chain: "c", repeats: 1, bank: bank, draws: &draws)
        try #require(schedule.voices.allSatisfy { if case .stream = $0.audio.source { true } else { false } } == streamed, "the sweep streams: \(streamed)")
        try OfflineRenderer.render(schedule, to: dir.file("reference.wav"), format: .s16)
        let reference = try WAVFile(path: dir.file("reference.wav")).int16Samples

        let server = try PulseTestServer()
        defer { server.stop() }
        let saved = server.clientVariables.keys.map { ($0, ProcessInfo.processInfo.environment[$0]) }
        for (key, value) in server.clientVariables { setenv(key, value, 1) }
        defer { for (key, value) in saved { if let value { setenv(key, value, 1) } else { unsetenv(key) } } }
        let output = try Outputs.open(kind, rate: Self.rate, channels: 2, latencyMs: 50)
        let run = EngineRun(PlaybackEngine(schedule: schedule, output: output))
        let engine = run.engine
        try #require(run.waitForStart(seconds: 5), "\(server.logTail())")
        // Forward 10 s, back 8 s, forward to the last 1.5 s: each further than the 2 s ring.
        let targets = [11 * Self.rate + 123, 3 * Self.rate + 4567, 18 * Self.rate + 89]
        var asked: [Int64] = []
        for target in targets {
            Thread.sleep(forTimeInterval: 0.6)
            asked.append(monotonicNanoseconds())
            #expect(engine.seek(to: target))
        }
        try #require(run.waitForEnd(seconds: 10), "\(server.logTail())")
        #expect(run.outcome == .finished)
        let all = run.events
        #expect(!all.contains { if case .underrun = $0 { true } else { false } }, "no underrun")
        let seeks = all.compactMap { if case .seeked(let from, let to, let at) = $0 { (from: from, to: to, at: at) } else { nil } }
        try #require(seeks.map(\.to) == targets, "\(seeks)")

        let recording = try server.recording()
        func heard(_ from: Int, _ count: Int) -> Alignment? {
            recording.locate(Array(reference[(from * 2)..<((from + count) * 2)]), channels: 2)
        }
        var gaps: [Double] = []
        var stamps: [Double] = []
        var answered: [Double] = []
        var previous = 0
        for (index, seek) in seeks.enumerated() {
            // The 100 ms before the fade-out that the seek began with, where the last stretch
            // played: its end is where the fade-out starts in the recording.
            let before = try #require(heard(seek.from - Self.fade - 4800, 4800), "seek \(index): the audio before its fade-out")
            let fadeOutEnd = before.startFrame + 4800 + Self.fade
            // From the end of the fade-in, 0.5 s of the render from the frame sought.
            let after = try #require(heard(seek.to + Self.fade, 24_000), "seek \(index) to \(seek.to): the render from there")
            #expect(after.isComplete, "seek \(index): \(after.issues)")
            let fadeInStart = after.startFrame - Self.fade
            let gap = fadeInStart - fadeOutEnd
            gaps.append(Double(gap) * 1000 / Double(Self.rate))
            #expect(gap >= 0 && gap <= Self.refillBoundFrames, "seek \(index): \(gap) frames between the fade-out and the fade-in")
            // Only silence in the refill's gap (no old audio, no audio from the ring's past).
            if gap > 0 {
                let silence = recording.samples[(fadeOutEnd * 2)..<(fadeInStart * 2)]
                #expect(silence.allSatisfy { $0 == 0 }, "seek \(index): sound in the \(gap) frames of the refill")
            }
            // The `seeked` stamp is when the fade-in is heard: never earlier than the
            // recorder's resolution, later by at most what the output says its readings
            // wander (ALSA's pulse plugin: up to 2 ms in its first 1.5 s) and that resolution.
            let heardAt = Double(recording.audibleTime(ofFrame: fadeInStart))
            let stamp = (Double(seek.at) - heardAt) / 1e6
            stamps.append(stamp)
            let resolution = Double(LivePlay.resolution) / 1e6
            #expect(stamp >= -resolution && stamp <= LivePlay.wander(kind) + resolution, "seek \(index): stamped \(stamp) ms from when its fade-in was heard")
            answered.append((heardAt - Double(asked[index])) / 1e6)
            // What played before this seek began from the previous one's frame, unbroken.
            #expect(seek.from > previous)
            previous = seek.to
        }
        let text = { (values: [Double]) in values.map { String(format: "%.2f", $0) }.joined(separator: ", ") }
        print("\(kind) \(streamed ? "streamed" : "in memory") seeks: refill silence \(text(gaps)) ms; seeked stamp − heard \(text(stamps)) ms; asked → fade-in heard \(text(answered)) ms")
    }
}
