import Foundation
import NarratorTestSupport
import Testing

/// `play --output file`: a machine with no sound card plays into an audio file in real time.
/// The ground truth is `narrator render` of the same chain (sox-exact, RenderTests) and the
/// sample clock: the file is the render after the silence played while the clock settled, and
/// each cue's `heard` is its frame's place in the file. It plays in real time, so the suite runs
/// in the live phase of `make test`, alone (the Makefile's LIVE_TESTS).
@Suite("File output", .serialized)
struct FileOutputTests {
    /// Reads a WAV file's samples as floats, through sox (not Narrator's decoder).
    static func floats(_ path: String, in dir: TempDir) throws -> [Float] {
        let raw = dir.file(URL(fileURLWithPath: path).lastPathComponent + ".f32")
        let made = try runTool("sox", [path, "-t", "f32", raw])
        try #require(made.status == 0, "sox: \(made.stderr)")
        return try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    @Test func aChainPlaysIntoTheFileAsHeard() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = Repo.path("Timings/lessons/sample.json")
        let chain = ["--chain", "correct", "--seed", "7"]
        let rendered = try run(Repo.narrator, ["render", lesson] + chain + ["--output", dir.file("render.wav"), "--format", "f32"])
        try #require(rendered.status == 0, "\(rendered.stderr)")
        let started = Date()
        let played = try run(
            Repo.narrator,
            ["play", lesson] + chain + ["--output", "file", "--device", dir.file("heard.wav"), "--latency", "200", "--events", dir.file("events.jsonl")])
        let seconds = Date().timeIntervalSince(started)
        try #require(played.status == 0, "\(played.stderr)")
        let reference = try Self.floats(dir.file("render.wav"), in: dir)
        let heard = try Self.floats(dir.file("heard.wav"), in: dir)
        let frames = reference.count / 2
        // It took the audio's own time: played, not rendered.
        #expect(seconds >= Double(frames) / 48000, "played in \(seconds) s")
        let events = try String(contentsOfFile: dir.file("events.jsonl"), encoding: .utf8).split(separator: "\n")
            .map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(!events.contains { $0["type"] as? String == "underrun" }, "an underrun: the test's equality assumes none")
        // Silence while the clock settled, then exactly the render, then nothing more.
        let lead = try #require((0..<(heard.count / 2)).first { heard[$0 * 2] != 0 || heard[$0 * 2 + 1] != 0 })
        let first = try #require((0..<frames).first { reference[$0 * 2] != 0 || reference[$0 * 2 + 1] != 0 })
        let offset = lead - first
        try #require(offset >= 0 && heard.count >= (offset + frames) * 2, "file of \(heard.count / 2) frames, render \(frames), offset \(offset)")
        #expect(Array(heard[(offset * 2)..<((offset + frames) * 2)]) == reference, "the file is the render from frame \(offset)")
        #expect(heard.count / 2 - (offset + frames) <= 4800, "\(heard.count / 2 - offset - frames) frames after the end")
        // Each cue's `heard` is where its frame is in the file: frame f is file frame offset + f,
        // heard at the file's start + (offset + f) / rate. Relative to the first cue (frame 0).
        let cues = events.filter { $0["frame"] is Int && $0["heard"] is Int && $0["type"] as? String != "start" }
        let zero = try #require(cues.first { $0["frame"] as? Int == 0 })
        let zeroHeard = try #require(zero["heard"] as? Int)
        #expect(cues.count >= 10)
        for cue in cues {
            let frame = try #require(cue["frame"] as? Int)
            let when = try #require(cue["heard"] as? Int)
            let expected = zeroHeard + Int((Double(frame) / 48000 * 1e9).rounded())
            #expect(abs(when - expected) <= 100_000, "\(cue["type"] ?? "") at frame \(frame): heard \(when - expected) ns off its place in the file")
            if let delivered = cue["delivered"] as? Int { #expect(delivered >= when) }
        }
    }

    /// With no sound card and no sound server, `play` says how to play anyway (where this
    /// machine has a card, it must not say so).
    @Test func noSoundHereSaysWhatToDo() throws {
        let cards = (try? String(contentsOfFile: "/proc/asound/cards", encoding: .utf8)) ?? ""
        let hasCard = cards.contains("[") && !cards.contains("no soundcards")
        let result = try run(
            "/usr/bin/env",
            ["-u", "PULSE_SERVER", "XDG_RUNTIME_DIR=/nonexistent", Repo.narrator, "play", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "--output", "alsa"])
        let advice = "no sound card (no /dev/snd) and no sound server: play into a file in real time with --output file --device heard.wav"
        if hasCard {
            #expect(!result.stderr.contains(advice))
        } else {
            #expect(result.status == 1 && result.stderr.contains(advice), "\(result.stderr)")
            #expect(result.stderr.filter { $0 == "\n" }.count == 1, "\(result.stderr)")
        }
    }
}
