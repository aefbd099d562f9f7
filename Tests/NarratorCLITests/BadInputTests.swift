import Foundation
import NarratorTestSupport
import Testing

/// Every bad input: exit status 1, exactly one line on stderr naming the file (and the place),
/// no crash, no hang, and no output file.
@Suite struct BadInputTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        /// Files to create in the lesson's folder; the lesson itself is "lesson.json".
        let files: [String: Data]
        let chain: String
        /// What the one line must contain.
        let expect: [String]
        var testDescription: String { name }
    }

    static let sentence = try! Data(contentsOf: URL(fileURLWithPath: Repo.path("Audio/fixtures/sentence.wav")))

    static func lesson(clips: String = #""a": {"file": "a.wav"}"#, pools: String = "{}", chain: String = #"[{"clip": "a"}]"#) -> Data {
        Data(#"{"sampleRate": 48000, "clips": {\#(clips)}, "pools": \#(pools), "chains": {"c": \#(chain)}}"#.utf8)
    }

    static func text(_ s: String) -> Data { Data(s.utf8) }

    static var liar: Data {
        var data = sentence.prefix(44 + 4000)
        data.replaceSubrange(4..<8, with: [0xF0, 0xFF, 0xFF, 0x7F])
        data.replaceSubrange(40..<44, with: [0xF0, 0xFF, 0xFF, 0x7F])  // ~2 GiB of "data"
        return data
    }

    /// A WAV whose header says 1 Hz: converting it to 48 kHz would take gigabytes.
    static var rateLiar: Data {
        var data = sentence.prefix(44 + 12000)
        data.replaceSubrange(24..<28, with: [1, 0, 0, 0])
        data.replaceSubrange(28..<32, with: [2, 0, 0, 0])
        data.replaceSubrange(40..<44, with: [0xE0, 0x2E, 0, 0])
        return data
    }

    static let timed = #""a": {"file": "a.wav", "timings": "t.txt"}"#

    /// A lesson whose clips come from a howler sprite map "s.json".
    static func sprited(_ map: String, chain: String = #"[{"clip": "fx.ding"}]"#) -> [String: Data] {
        ["lesson.json": Data(#"{"sampleRate": 48000, "clips": {}, "sprites": {"fx": {"map": "s.json"}}, "chains": {"c": \#(chain)}}"#.utf8),
         "s.json": text(map), "a.wav": sentence]
    }

    static let cases: [Case] = [
        Case(name: "missing audio", files: ["lesson.json": lesson()], chain: "c", expect: ["a.wav: no such file"]),
        Case(name: "empty audio", files: ["lesson.json": lesson(), "a.wav": Data()], chain: "c", expect: ["a.wav: empty"]),
        Case(name: "truncated audio", files: ["lesson.json": lesson(), "a.wav": sentence.prefix(50000)], chain: "c", expect: ["a.wav: truncated"]),
        Case(name: "not audio", files: ["lesson.json": lesson(), "a.wav": text("RIFF? no, a poem\n")], chain: "c", expect: ["a.wav: not a readable audio file"]),
        Case(name: "lying header", files: ["lesson.json": lesson(), "a.wav": liar], chain: "c", expect: ["a.wav: truncated or lying header"]),
        Case(name: "lesson not JSON", files: ["lesson.json": text("{\"sampleRate\": 48000,\n  \"clips\": {,\n}")], chain: "c", expect: ["lesson.json: line 2, column 13: not valid JSON"]),
        Case(name: "empty lesson", files: ["lesson.json": Data()], chain: "c", expect: ["lesson.json: empty file"]),
        Case(name: "unknown clip", files: ["lesson.json": lesson(chain: #"[{"clip": "a"}, {"clip": "zz"}]"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: chains.c[1].clip: unknown clip 'zz'"]),
        Case(name: "unknown pool", files: ["lesson.json": lesson(chain: #"[{"pool": "zz"}]"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: chains.c[0].pool: unknown pool 'zz'"]),
        Case(name: "unknown chain", files: ["lesson.json": lesson(), "a.wav": sentence], chain: "nope", expect: ["lesson.json: chains.nope: unknown chain"]),
        Case(name: "empty pool", files: ["lesson.json": lesson(pools: #"{"p": {"clips": []}}"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: pools.p.clips: empty pool"]),
        Case(name: "pool names unknown clip", files: ["lesson.json": lesson(pools: #"{"p": {"clips": ["a", "b"]}}"#, chain: #"[{"pool": "p"}]"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: pools.p.clips[1]: unknown clip 'b'"]),
        Case(name: "timing syntax", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.1\t0.2\ta\n0.3 0.4 b\n")], chain: "c", expect: ["t.txt: line 2: expected start<TAB>end<TAB>text"]),
        Case(name: "timing json syntax", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "timings": "t.json"}"#), "a.wav": sentence, "t.json": text("{\"words\": [\n {\"text\": \"a\", \"start\": 0.1, \"end\": }]}")], chain: "c", expect: ["t.json: line 2, column"]),
        Case(name: "end before start", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.5\t0.2\ta\n")], chain: "c", expect: ["t.txt: line 1 'a': ends (0.2 s) before it starts (0.5 s)"]),
        Case(name: "out of order", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.5\t0.6\ta\n0.1\t0.2\tb\n")], chain: "c", expect: ["t.txt: line 2 'b': out of order"]),
        Case(name: "overlapping", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.5\t0.6\ta\n0.55\t0.7\tb\n")], chain: "c", expect: ["t.txt: line 2 'b': overlaps word 0 'a'"]),
        Case(name: "past the end of audio", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.5\t0.6\ta\n3.1\t3.2\tb\n")], chain: "c", expect: ["t.txt: word 1 'b': ends at 3.2 s, past the end of its audio"]),
        Case(name: "word text with a newline", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "timings": "t.json"}"#), "a.wav": sentence, "t.json": text(#"{"words": [{"text": "a\nb", "start": 0.5, "end": 0.2}]}"#)], chain: "c", expect: [#"t.json: words[0] 'a\nb': ends"#]),
        Case(name: "empty timing file", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": Data()], chain: "c", expect: ["t.txt: holds no words"]),
        Case(name: "missing timing file", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence], chain: "c", expect: ["t.txt: no such file"]),
        Case(name: "header lies about the rate", files: ["lesson.json": lesson(), "a.wav": rateLiar], chain: "c", expect: ["a.wav: unusable header: 1 Hz"]),
        Case(name: "silence too long", files: ["lesson.json": lesson(chain: #"[{"silence": 1.8e11}]"#)], chain: "c", expect: ["lesson.json: chains.c[0].silence: silence must be between 0 and 3600 seconds"]),
        Case(name: "bad vtt", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "timings": "t.vtt"}"#), "a.wav": sentence, "t.vtt": text("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nx <1.5>y\n")], chain: "c", expect: ["t.vtt: line 4: bad timestamp"]),
        Case(name: "unknown marker use", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "markers": "beats"}"#), "a.wav": sentence], chain: "c", expect: [#"lesson.json: clips.a.markers: expected "words" or "pulses""#]),
        Case(name: "words from markers and timings", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "markers": "words", "timings": "t.txt"}"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: clips.a.markers: a clip's words come from its markers or its timings, not both"]),
        Case(name: "words from a file without markers", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "markers": "words"}"#), "a.wav": sentence], chain: "c", expect: ["a.wav: holds no labelled cue markers"]),
        Case(name: "sprite map not JSON", files: sprited("{\"src\": [\"a.wav\"],\n \"sprite\": {\"ding\": [0, 100}}"), chain: "c", expect: ["s.json: line 2, column"]),
        Case(name: "sprite without duration", files: sprited(#"{"src": ["a.wav"], "sprite": {"ding": [100]}}"#), chain: "c", expect: ["s.json: sprite.ding: expected [offset, duration] in milliseconds"]),
        Case(name: "sprite with a negative duration", files: sprited(#"{"src": ["a.wav"], "sprite": {"ding": [100, -5]}}"#), chain: "c", expect: ["s.json: sprite.ding[1]: duration must be positive"]),
        Case(name: "sprite audio only for browsers", files: sprited(#"{"src": ["a.webm", "a.m4a"], "sprite": {"ding": [0, 100]}}"#), chain: "c", expect: ["s.json: src: none of its audio files is here in a format Narrator decodes"]),
        Case(name: "sprite past the audio", files: sprited(#"{"src": "a.wav", "sprite": {"ding": [3000, 500]}}"#), chain: "c", expect: ["s.json: sprite.ding: region ends at 3.5 s, past the end of"]),
        Case(name: "sprite map missing", files: ["lesson.json": Data(#"{"sampleRate": 48000, "clips": {}, "sprites": {"fx": {"map": "s.json"}}, "chains": {"c": []}}"#.utf8)], chain: "c", expect: ["s.json: no such file"]),
    ]

    @Test(arguments: cases)
    func renderRefusesWithOneLine(_ c: Case) throws {
        let dir = TempDir()
        defer { dir.remove() }
        for (name, data) in c.files { dir.write(name, data: data) }
        let before = dir.contents()
        let out = dir.file("out.wav")
        let result = try run(Repo.narrator, ["render", dir.file("lesson.json"), "--chain", c.chain, "--output", out, "--cues", dir.file("out.json")])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        for fragment in c.expect {
            #expect(result.stderr.contains(fragment), "\(result.stderr)")
        }
        #expect(result.stderr.contains(dir.path), "names the file by its path")
        #expect(dir.contents() == before, "no output file, no partial file")

        let cues = try run(Repo.narrator, ["cues", dir.file("lesson.json"), "--chain", c.chain])
        #expect(cues.status == 1)
        #expect(cues.stdout.isEmpty)
        #expect(cues.stderr == result.stderr)
    }

    @Test func usageErrorsExitOneWithOneLine() throws {
        for arguments in [["render", Repo.path("Timings/lessons/sample.json"), "--chain", "popup", "--output", "/tmp/x.wav", "--repeat", "0"], ["cues"], ["frobnicate"]] {
            let result = try run(Repo.narrator, arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(result.stderr.hasPrefix("narrator: "))
        }
    }

    @Test func failedCueSheetLeavesNoAudioEither() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try run(Repo.narrator, [
            "render", Repo.path("Timings/lessons/sample.json"), "--chain", "popup", "--output", dir.file("o.wav"),
            "--cues", dir.file("missing/c.json"),
        ])
        #expect(result.status == 1)
        #expect(result.stderr.contains("missing/c.json: cannot write the cue sheet"))
        #expect(dir.contents().isEmpty)
    }

    @Test func interruptedRenderLeavesNoPartialFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repo.narrator)
        process.arguments = ["render", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "--repeat", "800", "--output", dir.file("o.wav")]
        try process.run()
        // Wait until the partial file exists, then interrupt.
        let deadline = Date().addingTimeInterval(20)
        while dir.contents().isEmpty, process.isRunning, Date() < deadline { usleep(1000) }
        #expect(dir.contents().first?.hasPrefix(".o.wav.partial-") == true)
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        #expect(process.terminationStatus == 128 + SIGINT)
        #expect(dir.contents().isEmpty)
    }

    @Test func unwritableOutputLeavesNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try run(Repo.narrator, [
            "render", Repo.path("Timings/lessons/sample.json"), "--chain", "popup", "--output", dir.file("no/such/folder/out.wav"),
        ])
        #expect(result.status == 1)
        #expect(result.stderr.contains("no/such/folder/out.wav: cannot write"))
        #expect(dir.contents().isEmpty)
    }

    @Test func inspectRefusesBadAudioWithOneLine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.write("bad.flac", data: Data("fLaC but not really".utf8))
        let result = try run(Repo.narrator, ["inspect", path])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.contains("bad.flac: not a readable audio file"))
    }
}
