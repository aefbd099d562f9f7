import Foundation
import NarratorTestSupport
import Testing

/// `render --speed`: the stretched audio and a cue sheet whose frames are where the words are
/// in it, checked against a fixture assembled to the frame here, with onsets found in the
/// rendered audio by a threshold that knows nothing of the stretcher.
@Suite struct RenderSpeedTests {
    static let rate = 48_000

    /// Two speech-like bursts made by sox, each after a known stretch of digital silence
    /// (0.1 s and 0.05 s), with a label file whose word starts exactly there; and the lesson
    /// that places them at known frames.
    struct Fixture {
        let dir: TempDir
        let lesson: String
        /// Frames on the timeline (speed 1) where each word's sound starts, in chain order.
        let onsets: [Int]
        let frames: Int

        init() throws {
            dir = TempDir()
            let b1 = dir.file("b1.wav"), b2 = dir.file("b2.wav")
            #expect(try runTool("sox", ["-D", "-n", "-r", "48000", "-c", "1", "-b", "16", b1,
                                        "synth", "0.25", "sawtooth", "160", "vol", "0.4", "pad", "0.1", "0.1"]).status == 0)
            #expect(try runTool("sox", ["-D", "-n", "-r", "48000", "-c", "1", "-b", "16", b2,
                                        "synth", "0.25", "square", "220", "vol", "0.3", "pad", "0.05", "0.1"]).status == 0)
            _ = dir.write("b1.txt", "0.1\t0.35\tone\n")
            _ = dir.write("b2.txt", "0.05\t0.3\ttwo\n")
            lesson = dir.write("lesson.json", """
                {"sampleRate": 48000, "channels": 2,
                 "clips": {"b1": {"file": "b1.wav", "timings": "b1.txt"}, "b2": {"file": "b2.wav", "timings": "b2.txt"}},
                 "chains": {"x": [{"clip": "b1"}, {"silence": 0.2}, {"clip": "b2"}, {"silence": 0.3}, {"clip": "b1"}, {"clip": "b2"}]}}
                """)
            // b1 is 0.45 s (21600 frames), b2 0.4 s (19200); the sound starts 4800 and 2400 in.
            let b1Frames = 21_600, b2Frames = 19_200, gap1 = 9_600, gap2 = 14_400
            var at = 0
            var onsets: [Int] = []
            onsets.append(at + 4_800); at += b1Frames + gap1
            onsets.append(at + 2_400); at += b2Frames + gap2
            onsets.append(at + 4_800); at += b1Frames
            onsets.append(at + 2_400); at += b2Frames
            self.onsets = onsets
            frames = at
        }

        func render(speed: String?, name: String) throws -> (WAVFile, Sheet, ProcessResult) {
            let out = dir.file("\(name).wav"), cues = dir.file("\(name).cues.json")
            let result = try run(
                Repo.narrator,
                ["render", lesson, "--chain", "x", "--output", out, "--cues", cues] + (speed.map { ["--speed", $0] } ?? []))
            #expect(result.status == 0, "\(result.stderr)")
            return (try WAVFile(path: out), try Sheet(path: cues), result)
        }
    }

    /// Onsets: the first frame whose largest sample (any channel) is at least 0.05 after at
    /// least 50 ms below it.
    static func onsets(_ wav: WAVFile) -> [Int] {
        let samples = wav.floatSamples
        var found: [Int] = []
        var below = rate / 20
        for f in 0..<wav.frames {
            var peak: Float = 0
            for c in 0..<wav.channels { peak = max(peak, abs(samples[f * wav.channels + c])) }
            if peak >= 0.05 {
                if below >= rate / 20 { found.append(f) }
                below = 0
            } else {
                below += 1
            }
        }
        return found
    }

    @Test func theFixtureIsWhatItSays() throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let (wav, sheet, _) = try fixture.render(speed: nil, name: "plain")
        #expect(Self.onsets(wav) == fixture.onsets)
        #expect(sheet.cues.filter { $0.type == "word" }.map(\.frame) == fixture.onsets)
        #expect(wav.frames == fixture.frames && sheet.frames == fixture.frames)
    }

    @Test(arguments: ["0.75", "1.5", "0.5", "2"])
    func wordCuesAreWhereTheWordsAreInTheStretchedAudio(speed: String) throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let s = Double(speed)!
        let (wav, sheet, _) = try fixture.render(speed: speed, name: "s\(speed)")
        let heard = Self.onsets(wav)
        let words = sheet.cues.filter { $0.type == "word" }
        let fiveMs = Self.rate / 200
        #expect(heard.count == fixture.onsets.count, "onsets \(heard)")
        #expect(words.count == fixture.onsets.count)
        for (k, (cue, onset)) in zip(words, heard).enumerated() {
            #expect(abs(cue.frame - onset) <= fiveMs, "word \(k) '\(cue.text ?? "")': cue \(cue.frame), heard \(onset)")
            // And the stretcher put the sound where the speed says, from the known layout.
            let expected = Int((Double(fixture.onsets[k]) / s).rounded())
            #expect(abs(onset - expected) <= fiveMs, "word \(k): heard \(onset), expected \(expected)")
            #expect(cue.endFrame! > cue.frame)
        }
        let length = Int((Double(fixture.frames) / s).rounded())
        #expect(wav.frames == length && sheet.frames == length && wav.sampleRate == Self.rate && wav.channels == 2)
        // The clip and chain cues move with the audio too, in order.
        let frames = sheet.cues.map(\.frame)
        #expect(frames == frames.sorted() && frames.last! <= length)
    }

    /// Sentence cues move with the audio like words: at 0.75× each sentence's frame and end are
    /// round(frame / 0.75) of the 1× sheet's (the sample lesson's sentences).
    @Test func sentenceCuesMoveWithTheAudio() throws {
        let dir = TempDir()
        defer { dir.remove() }
        func sentences(_ speed: [String]) throws -> [(Int, Int)] {
            let cues = dir.file("cues.json")
            let result = try run(
                Repo.narrator,
                ["render", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "--seed", "7", "--output", dir.file("out.wav"), "--cues", cues] + speed)
            try #require(result.status == 0, "\(result.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: cues))) as? [String: Any])
            return try #require(object["cues"] as? [[String: Any]]).filter { $0["type"] as? String == "sentence" }.map {
                ($0["frame"] as? Int ?? -1, $0["endFrame"] as? Int ?? -1)
            }
        }
        let plain = try sentences([])
        let slow = try sentences(["--speed", "0.75"])
        #expect(plain.count == 2)
        func at(_ frame: Int) -> Int { Int((Double(frame) / 0.75).rounded()) }
        #expect(slow.map { [$0.0, $0.1] } == plain.map { [at($0.0), at($0.1)] })
    }

    /// Speed 1 is today's render, bit for bit: the audio and the cue sheet.
    @Test(arguments: ["1", "1.0", "1.000"])
    func speedOneIsTheRenderOfToday(speed: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = Repo.path("Timings/lessons/sample.json")
        func render(_ extra: [String], _ name: String) throws -> (Data, Data) {
            let out = dir.file("\(name).wav"), cues = dir.file("\(name).json")
            let result = try run(
                Repo.narrator, ["render", lesson, "--chain", "correct", "--seed", "7", "-o", out, "--cues", cues] + extra)
            #expect(result.status == 0, "\(result.stderr)")
            return (try Data(contentsOf: URL(fileURLWithPath: out)), try Data(contentsOf: URL(fileURLWithPath: cues)))
        }
        let today = try render([], "today")
        let one = try render(["--speed", speed], "one")
        #expect(today.0 == one.0)
        #expect(today.1 == one.1)
        // Not vacuous: another speed differs.
        let other = try render(["--speed", "0.75"], "slow")
        #expect(other.0 != today.0)
    }

    @Test(arguments: ["0.49", "2.01", "0", "-1", "nan", "inf", "abc", "1e400", ""])
    func badSpeedsAreRejectedInOneLine(speed: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let out = dir.file("x.wav")
        let result = try run(
            Repo.narrator, ["render", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "-o", out, "--speed", speed])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("speed"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func speedGoesWithAChain() throws {
        let result = try run(
            Repo.narrator,
            ["render", Repo.path("Timings/lessons/sample.json"), "--requests", "0:message:correct", "-o", "/dev/null", "--speed", "0.75"])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("--speed goes with --chain"))
    }
}
