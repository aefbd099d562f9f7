import Foundation
import NarratorAudioFile
import NarratorTestSupport
import Testing

/// The cue sheet as the CLI writes it.
struct Sheet: Decodable {
    struct Cue: Decodable, Equatable {
        let frame: Int
        let type: String
        let clip: String?
        let pool: String?
        let index: Int?
        let text: String?
        let endFrame: Int?
        let target: String?
        let chain: String?
    }
    let sampleRate: Int
    let channels: Int
    let frames: Int
    let cues: [Cue]

    init(_ json: String) throws { self = try JSONDecoder().decode(Sheet.self, from: Data(json.utf8)) }
    init(path: String) throws { self = try JSONDecoder().decode(Sheet.self, from: Data(contentsOf: URL(fileURLWithPath: path))) }

    func starts(of clip: String) -> [Int] { cues.filter { $0.type == "clipStart" && $0.clip == clip }.map(\.frame) }
}

func narrator(_ arguments: String...) throws -> ProcessResult { try run(Repo.narrator, arguments) }

/// Renders `chain` of `lessonJSON` (written into `dir`) and returns the WAV and the cue sheet.
func render(_ lessonJSON: String, chain: String, in dir: TempDir, extra: [String] = []) throws -> (WAVFile, Sheet) {
    let lesson = dir.write("lesson.json", lessonJSON)
    let out = dir.file("\(chain).wav")
    let cues = dir.file("\(chain).cues.json")
    let result = try run(Repo.narrator, ["render", lesson, "--chain", chain, "--output", out, "--cues", cues] + extra)
    guard result.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["stderr": result.stderr]) }
    return (try WAVFile(path: out), try Sheet(path: cues))
}

@Suite struct BitExactTests {
    /// Mono 16-bit clips at the lesson rate: the render must equal sox concatenating the same
    /// files, silence as zero samples, sample for sample.
    @Test func monoRenderEqualsSoxConcatenation() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let a = Repo.path("Audio/fixtures/sentence.wav")
        let b = Repo.path("Audio/lessons/sight-words/part1.wav")
        let c = Repo.path("Audio/lessons/sight-words/part2.wav")
        let (wav, sheet) = try render("""
            {"sampleRate": 48000, "clips": {"a": {"file": "\(a)"}, "b": {"file": "\(b)"}, "c": {"file": "\(c)"}},
             "chains": {"x": [{"clip": "a"}, {"clip": "b"}, {"silence": 0.25}, {"clip": "c"}, {"clip": "a"}]}}
            """, chain: "x", in: dir)
        // -D: without it sox dithers the generated silence, which is then not zero.
        let silence = dir.file("silence.wav")
        #expect(try runTool("sox", ["-D", "-n", "-r", "48000", "-c", "1", "-b", "16", silence, "trim", "0", "12000s"]).status == 0)
        let expected = dir.file("sox.wav")
        #expect(try runTool("sox", ["-D", a, b, silence, c, a, expected]).status == 0)
        let reference = try WAVFile(path: expected)
        #expect(wav.channels == 1 && wav.bitsPerSample == 16 && wav.sampleRate == 48000)
        #expect(sheet.frames == reference.frames)
        #expect(wav.data == reference.data)
    }

    @Test func stereoRenderEqualsSoxConcatenationAndPoolPicksFollowTheCueSheet() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let sfx = Repo.path("Audio/lessons/sfx/correct.wav")
        let speech = Repo.path("Audio/fixtures/formats/sentence-stereo.wav")
        let (wav, sheet) = try render("""
            {"sampleRate": 48000, "clips": {"sfx": {"file": "\(sfx)"}, "s": {"file": "\(speech)"}},
             "pools": {"p": {"clips": ["sfx", "s"]}},
             "chains": {"x": [{"clip": "sfx"}, {"pool": "p"}, {"pool": "p"}, {"clip": "s"}]}}
            """, chain: "x", in: dir, extra: ["--seed", "3"])
        let picks = sheet.cues.filter { $0.type == "clipStart" && $0.pool == "p" }.map { $0.clip == "sfx" ? sfx : speech }
        #expect(picks.count == 2 && picks[0] != picks[1])
        let expected = dir.file("sox.wav")
        #expect(try runTool("sox", ["-D", sfx] + picks + [speech, expected]).status == 0)
        #expect(wav.channels == 2)
        #expect(wav.data == (try WAVFile(path: expected)).data)
    }
}

@Suite struct TimingAccuracyTests {
    /// Word cues against the audio itself: onsets found in the rendered samples (digital
    /// silence between fixture words) must equal the cue sheet's word frames, to the frame.
    @Test(arguments: ["sentence.json", "sentence.txt"])
    func wordCuesMatchOnsetsInTheRender(timings: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let audio = Repo.path("Audio/fixtures/sentence.wav")
        let timingFile = Repo.path("Timings/fixtures/\(timings)")
        let truth = try TruthWords(path: Repo.path("Timings/fixtures/sentence.truth.json"))
        // The sentence, a gap, a region of it cut around words 2…4, and the sentence again in
        // stereo output.
        let regionStart = Double(truth.words[2].startFrame - 100) / 48000
        let regionEnd = Double(truth.words[4].endFrame + 50) / 48000
        let (wav, sheet) = try render("""
            {"sampleRate": 48000, "channels": 2,
             "clips": {"s": {"file": "\(audio)", "timings": "\(timingFile)"},
                       "r": {"file": "\(audio)", "timings": "\(timingFile)", "start": \(regionStart), "end": \(regionEnd)}},
             "chains": {"x": [{"clip": "s"}, {"silence": 0.1234}, {"clip": "r"}, {"clip": "s"}]}}
            """, chain: "x", in: dir)
        // Read back through libsndfile too: both readers must see the same samples.
        let viaLibsndfile = try SndFileDecoder().decode(path: dir.file("x.wav"), sampleRate: 48000)
        #expect(viaLibsndfile.samples == wav.floatSamples)
        let found = soundSpans(viaLibsndfile.samples, channels: 2)
        let words = sheet.cues.filter { $0.type == "word" }
        #expect(found.map(\.lowerBound) == words.map(\.frame))
        #expect(found.map(\.upperBound) == words.map { $0.endFrame! })
        // And against the fixture script's truth: clip start + the word's own frame.
        let s = sheet.starts(of: "s")
        let r = sheet.starts(of: "r")[0]
        let expected =
            truth.words.map { s[0] + $0.startFrame }
            + truth.words[2...4].map { r + $0.startFrame - (truth.words[2].startFrame - 100) }
            + truth.words.map { s[1] + $0.startFrame }
        #expect(words.map(\.frame) == expected)
        #expect(words.map { $0.index! } == [0, 1, 2, 3, 4, 5, 6, 2, 3, 4, 0, 1, 2, 3, 4, 5, 6])
        #expect(r == truth.frames + 5923)  // round(0.1234 × 48000)
    }

    /// WebVTT has millisecond timestamps: cues land on the frames the file encodes.
    @Test func vttCuesLandOnTheEncodedFrames() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let truth = try TruthWords(path: Repo.path("Timings/fixtures/sentence.vtt.truth.json"))
        let (_, sheet) = try render("""
            {"sampleRate": 48000, "clips": {"s": {"file": "\(Repo.path("Audio/fixtures/sentence.wav"))",
                                                  "timings": "\(Repo.path("Timings/fixtures/sentence.vtt"))"}},
             "chains": {"x": [{"silence": 1}, {"clip": "s"}]}}
            """, chain: "x", in: dir)
        let words = sheet.cues.filter { $0.type == "word" }
        #expect(words.map(\.frame) == truth.words.map { 48000 + $0.startFrame })
        #expect(words.map { $0.endFrame! } == truth.words.map { 48000 + $0.endFrame })
        #expect(words.map { $0.text! } == truth.words.map(\.text))
    }

    /// Clips at other rates: each impulse lands within ±1 frame of its clip's start plus
    /// round(k × 48000 / r), found as peaks in the render.
    @Test func resampledClipsStayInStep() throws {
        struct Impulses: Decodable { let frames: Int; let impulses: [Int] }
        let truth = try JSONDecoder().decode(
            [String: Impulses].self,
            from: Data(contentsOf: URL(fileURLWithPath: Repo.path("Timings/fixtures/impulses.truth.json"))))
        let dir = TempDir()
        defer { dir.remove() }
        let rates = [22050, 44100, 96000, 48000]
        let clips = rates.map { #""i\#($0)": {"file": "\#(Repo.path("Audio/fixtures/impulses-\($0).wav"))"}"# }
        let items = rates.map { #"{"clip": "i\#($0)"}, {"silence": 0.01}"# }
        let (wav, sheet) = try render("""
            {"sampleRate": 48000, "clips": {\(clips.joined(separator: ","))},
             "chains": {"x": [\(items.joined(separator: ","))]}}
            """, chain: "x", in: dir)
        let samples = wav.floatSamples
        for rate in rates {
            let t = truth[String(rate)]!
            let start = sheet.starts(of: "i\(rate)")[0]
            let end = sheet.cues.first { $0.type == "clipEnd" && $0.clip == "i\(rate)" }!.frame
            #expect(end - start == (t.frames * 48000 * 2 + rate) / (2 * rate))
            for k in t.impulses {
                let expected = start + (k * 48000 * 2 + rate) / (2 * rate)
                let peak = (expected - 40...expected + 40).max { abs(samples[$0]) < abs(samples[$1]) }!
                #expect(abs(peak - expected) <= 1, "\(rate) Hz impulse \(k): \(peak) vs \(expected)")
            }
        }
    }
}

@Suite struct CommandTests {
    let sample = Repo.path("Timings/lessons/sample.json")

    @Test func cuesCommandPrintsWhatRenderWrites() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let printed = try narrator("cues", sample, "--chain", "correct", "--seed", "11", "--repeat", "3")
        #expect(printed.status == 0)
        let out = dir.file("o.wav")
        let cues = dir.file("o.json")
        #expect(try narrator("render", sample, "--chain", "correct", "--seed", "11", "--repeat", "3", "--output", out, "--cues", cues).status == 0)
        let written = try String(contentsOfFile: cues, encoding: .utf8)
        #expect(printed.stdout == written)
        let sheet = try Sheet(written)
        #expect(sheet.channels == 2 && sheet.sampleRate == 48000)
        #expect(sheet.frames == (try WAVFile(path: out)).frames)
        #expect(sheet.cues.filter { $0.type == "chainEnd" }.count == 3)
        #expect(sheet.cues.last?.frame == sheet.frames)
        #expect(zip(sheet.cues, sheet.cues.dropFirst()).allSatisfy { $0.frame <= $1.frame })
        // Three passes draw three congratulations; noRepeat 2 over a pool of 3 means all differ.
        let picks = sheet.cues.filter { $0.type == "clipStart" && $0.pool == "congrats" }.compactMap(\.clip)
        #expect(picks.count == 3 && Set(picks).count == 3)
    }

    @Test func floatOutputHoldsTheSameSignal() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let s16 = dir.file("a.wav")
        let f32 = dir.file("b.wav")
        #expect(try narrator("render", sample, "--chain", "definition", "--output", s16).status == 0)
        #expect(try narrator("render", sample, "--chain", "definition", "--output", f32, "--format", "f32").status == 0)
        let a = try WAVFile(path: s16)
        let b = try WAVFile(path: f32)
        #expect(b.bitsPerSample == 32 && a.frames == b.frames)
        #expect(a.floatSamples == b.floatSamples)  // 16-bit sources: float output is exact too
    }

    @Test func inspectReportsFormatAndWordFrames() throws {
        let result = try narrator(
            "inspect", Repo.path("Audio/fixtures/formats/sentence-44100.wav"), "--timings",
            Repo.path("Timings/fixtures/sentence.json"))
        // sentence.json runs past the 1-second excerpt: named as an error.
        #expect(result.status == 1)
        #expect(result.stderr.contains("sentence.json: word 2 'apple'"))

        let ok = try narrator("inspect", Repo.path("Audio/fixtures/sentence.wav"), "--timings", Repo.path("Timings/fixtures/sentence.txt"))
        #expect(ok.status == 0)
        #expect(ok.stdout.contains("WAV (Microsoft), Signed 16 bit PCM"))
        #expect(ok.stdout.contains("sample rate: 48000 Hz"))
        #expect(ok.stdout.contains("frames:      151663"))
        #expect(ok.stdout.contains("duration:    3.159646 s"))
        let truth = try TruthWords(path: Repo.path("Timings/fixtures/sentence.truth.json"))
        for (i, word) in truth.words.enumerated() {
            let row = ok.stdout.split(separator: "\n").first { $0.split(separator: " ").first == "\(i)" }
            #expect(row?.split(separator: " ").map(String.init) == ["\(i)", "\(word.startFrame)", "\(word.endFrame)", word.text])
        }
    }

    @Test(arguments: ["render", "cues", "inspect"])
    func helpExplainsWithAnExample(command: String) throws {
        let result = try narrator(command, "--help")
        #expect(result.status == 0)
        #expect(result.stdout.contains("Example:"))
        #expect(result.stdout.contains("narrator \(command) "))
    }

    /// The output file never exists half-written: the first time it can be seen, it is whole.
    @Test func outputAppearsOnlyWhenComplete() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let out = dir.file("long.wav")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repo.narrator)
        process.arguments = ["render", sample, "--chain", "correct", "--repeat", "150", "--output", out]
        try process.run()
        var firstSize: Int?
        while process.isRunning || firstSize == nil {
            if let size = try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int {
                firstSize = size
                break
            }
            if !process.isRunning { break }
            usleep(200)
        }
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let finalSize = try FileManager.default.attributesOfItem(atPath: out)[.size] as? Int
        #expect(firstSize == finalSize)
        #expect(dir.contents() == ["long.wav"])
    }
}
