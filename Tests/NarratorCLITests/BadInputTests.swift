import Foundation
import Synchronization
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
        /// What it must not say.
        var absent: [String] = []
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
        Case(name: "missing audio", files: ["lesson.json": lesson()], chain: "c", expect: ["a.wav: no such file (clips.a)"]),
        Case(name: "empty audio", files: ["lesson.json": lesson(), "a.wav": Data()], chain: "c", expect: ["a.wav: empty"]),
        Case(name: "truncated audio", files: ["lesson.json": lesson(), "a.wav": sentence.prefix(50000)], chain: "c", expect: ["a.wav: truncated"]),
        Case(name: "not audio", files: ["lesson.json": lesson(), "a.wav": text("RIFF? no, a poem\n")], chain: "c", expect: ["a.wav: not a readable audio file"]),
        Case(name: "lying header", files: ["lesson.json": lesson(), "a.wav": liar], chain: "c", expect: ["a.wav: truncated or lying header"]),
        Case(name: "lesson not JSON", files: ["lesson.json": text("{\"sampleRate\": 48000,\n  \"clips\": {,\n}")], chain: "c", expect: ["lesson.json: line 2, column 13: not valid JSON"]),
        Case(name: "empty lesson", files: ["lesson.json": Data()], chain: "c", expect: ["lesson.json: empty file"]),
        Case(name: "unknown clip", files: ["lesson.json": lesson(chain: #"[{"clip": "a"}, {"clip": "zz"}]"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: chains.c[1].clip: unknown clip 'zz' (the lesson has: a)\n"]),
        Case(name: "unknown pool", files: ["lesson.json": lesson(chain: #"[{"pool": "zz"}]"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: chains.c[0].pool: unknown pool 'zz' (the lesson has no pools)\n"]),
        Case(name: "unknown pool among pools", files: ["lesson.json": lesson(pools: #"{"p": {"clips": ["a"]}, "q": {"clips": ["a"]}}"#, chain: #"[{"pool": "pp"}]"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: chains.c[0].pool: unknown pool 'pp' (the lesson has: p, q)\n"]),
        Case(name: "unknown chain", files: ["lesson.json": lesson(), "a.wav": sentence], chain: "nope", expect: ["lesson.json: chains.nope: unknown chain (the lesson has: c)\n"]),
        Case(name: "empty pool", files: ["lesson.json": lesson(pools: #"{"p": {"clips": []}}"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: pools.p.clips: empty pool"]),
        Case(name: "pool names unknown clip", files: ["lesson.json": lesson(pools: #"{"p": {"clips": ["a", "b"]}}"#, chain: #"[{"pool": "p"}]"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: pools.p.clips[1]: unknown clip 'b'"]),
        Case(name: "timing syntax", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.1\t0.2\ta\n0.3 0.4 b\n")], chain: "c", expect: ["t.txt: line 2: expected start<TAB>end<TAB>text"]),
        Case(name: "timing json syntax", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "timings": "t.json"}"#), "a.wav": sentence, "t.json": text("{\"words\": [\n {\"text\": \"a\", \"start\": 0.1, \"end\": }]}")], chain: "c", expect: ["t.json: line 2, column"]),
        Case(name: "end before start", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.5\t0.2\ta\n")], chain: "c", expect: ["t.txt: line 1 'a': ends (0.2 s) before it starts (0.5 s)"]),
        Case(name: "out of order", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.5\t0.6\ta\n0.1\t0.2\tb\n")], chain: "c", expect: ["t.txt: line 2 'b': out of order"]),
        Case(name: "overlapping", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.5\t0.6\ta\n0.55\t0.7\tb\n")], chain: "c", expect: ["t.txt: line 2 'b': overlaps word 0 'a'"]),
        Case(name: "past the end of audio", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.5\t0.6\ta\n3.1\t3.2\tb\n")], chain: "c", expect: ["t.txt: word 1 'b': ends at 3.2 s, past the end of its audio"], absent: ["milliseconds"]),
        // Times written in milliseconds: 2900 "seconds" for 3.16 s of audio.
        Case(name: "timings in milliseconds", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("500\t600\ta\n700\t2900\tb\n")], chain: "c", expect: ["t.txt: word 0 'a': ends at 600 s, past the end of its audio", "a.wav (3.16 s); the times look like milliseconds (2900 s would be 2.9 s): timing files give seconds\n"]),
        // Ten times the audio's length but not a thousand: a slip, not a unit.
        Case(name: "timings far past the end, not milliseconds", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": text("0.5\t0.6\ta\n10\t3200\tb\n")], chain: "c", expect: ["t.txt: word 1 'b': ends at 3200 s, past the end of its audio"], absent: ["milliseconds"]),
        Case(name: "word text with a newline", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "timings": "t.json"}"#), "a.wav": sentence, "t.json": text(#"{"words": [{"text": "a\nb", "start": 0.5, "end": 0.2}]}"#)], chain: "c", expect: [#"t.json: words[0] 'a\nb': ends"#]),
        Case(name: "empty timing file", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence, "t.txt": Data()], chain: "c", expect: ["t.txt: holds no words (clips.a.timings)"]),
        Case(name: "missing timing file", files: ["lesson.json": lesson(clips: timed), "a.wav": sentence], chain: "c", expect: ["t.txt: no such file (clips.a.timings)"]),
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
        // Strict JSON (RFC 8259): the fault's line and column, counted by hand.
        Case(name: "lesson with a trailing comma", files: ["lesson.json": text("{\"sampleRate\": 48000,\n \"clips\": {\"a\": {\"file\": \"a.wav\"},},\n \"chains\": {\"c\": [{\"clip\": \"a\"}]}}"), "a.wav": sentence], chain: "c", expect: ["lesson.json: line 2, column 34: not valid JSON: trailing comma before '}'"]),
        Case(name: "lesson with a comment", files: ["lesson.json": text("{\"sampleRate\": 48000, // rate\n \"clips\": {}, \"chains\": {\"c\": []}}")], chain: "c", expect: ["lesson.json: line 1, column 23: not valid JSON: expected a key in double quotes, found '/' (JSON has no comments)"]),
        Case(name: "lesson with NaN", files: ["lesson.json": text(#"{"sampleRate": NaN, "clips": {}, "chains": {"c": []}}"#)], chain: "c", expect: ["lesson.json: line 1, column 16: not valid JSON: 'NaN' is not a JSON value"]),
        Case(name: "lesson with a leading zero", files: ["lesson.json": text(#"{"sampleRate": 048000, "clips": {}, "chains": {"c": []}}"#)], chain: "c", expect: ["lesson.json: line 1, column 16: not valid JSON: a number with a leading zero"]),
        Case(name: "lesson with single quotes", files: ["lesson.json": text(#"{'sampleRate': 48000}"#)], chain: "c", expect: ["lesson.json: line 1, column 2: not valid JSON: expected a key in double quotes, found '''"]),
        Case(name: "lesson with a raw tab in a key", files: ["lesson.json": text("{\"sampleRate\": 48000,\n\"clips\": {\"a\tb\": {}}}")], chain: "c", expect: ["lesson.json: line 2, column 13: not valid JSON: control character U+0009 inside a string"]),
        Case(name: "lesson with invalid UTF-8", files: ["lesson.json": text("{\"sampleRate\": 48000,\n\"clips\": {\"a") + Data([0xE1, 0x28]) + text("\": {}}}")], chain: "c", expect: ["lesson.json: line 2, column 13: not valid JSON: byte 0xE1 (not UTF-8) inside a string"]),
        Case(name: "lesson with a lone surrogate", files: ["lesson.json": text("{\"sampleRate\": 48000,\n\"clips\": {\"\\uD800\": {}}}")], chain: "c", expect: ["lesson.json: line 2, column 12: not valid JSON: lone surrogate \\uD800"]),
        Case(name: "lesson with a duplicate key", files: ["lesson.json": text(#"{"sampleRate": 48000, "sampleRate": 44100, "clips": {}, "chains": {"c": []}}"#)], chain: "c", expect: ["lesson.json: line 1, column 23: not valid JSON: duplicate key 'sampleRate'"]),
        Case(name: "lesson unclosed", files: ["lesson.json": text("{\"sampleRate\": 48000,\n \"clips\": {\"a\": {\"file\": \"a.wav\"}}")], chain: "c", expect: ["lesson.json: line 2, column 35: not valid JSON: the file ends inside the object opened at line 1, column 1: expected ',' or '}'"]),
        Case(name: "lesson nested too deep", files: ["lesson.json": text(#"{"sampleRate": 48000, "clips": {}, "chains": {"c": "# + String(repeating: "[", count: 100_000))], chain: "c", expect: ["lesson.json: line 1, column 562: not valid JSON: nested deeper than 512 levels"]),
        Case(name: "lesson with a huge exponent", files: ["lesson.json": text(#"{"sampleRate": 48000, "clips": {}, "chains": {"c": [{"silence": 1e400}]}}"#)], chain: "c", expect: ["lesson.json: line 1, column 65: not valid JSON: the number 1e400 is out of range"]),
        Case(name: "sprite map with a trailing comma", files: sprited("{\"src\": [\"a.wav\",], \"sprite\": {\"ding\": [0, 100]}}"), chain: "c", expect: ["s.json: line 1, column 17: not valid JSON: trailing comma before ']'"]),
        // Numbers that do not fit: one line naming the key, never a trap.
        Case(name: "sample rate 1e30", files: ["lesson.json": text(#"{"sampleRate": 1e30, "clips": {}, "chains": {"c": []}}"#)], chain: "c", expect: ["lesson.json: sampleRate: expected a whole number in 1000...768000, got 1e+30"]),
        Case(name: "sample rate 2^64", files: ["lesson.json": text(#"{"sampleRate": 18446744073709551616, "clips": {}, "chains": {"c": []}}"#)], chain: "c", expect: ["lesson.json: sampleRate: expected a whole number in 1000...768000, got 1.8446744073709552e+19"]),
        Case(name: "sample rate -0", files: ["lesson.json": text(#"{"sampleRate": -0, "clips": {}, "chains": {"c": []}}"#)], chain: "c", expect: ["lesson.json: sampleRate: expected a whole number in 1000...768000, got 0"]),
        // A rate no narration is made at: a digit dropped, most likely.
        Case(name: "sample rate 4800", files: ["lesson.json": text(#"{"sampleRate": 4800, "clips": {}, "chains": {"c": []}}"#)], chain: "c", expect: ["lesson.json: sampleRate: 4800 Hz is under 8000 Hz", "typo", "48000"]),
        Case(name: "sample rate 1000", files: ["lesson.json": text(#"{"sampleRate": 1000, "clips": {}, "chains": {"c": []}}"#)], chain: "c", expect: ["lesson.json: sampleRate: 1000 Hz is under 8000 Hz", "typo"]),
        Case(name: "channels 2^64", files: ["lesson.json": text(#"{"sampleRate": 48000, "channels": 18446744073709551616, "clips": {}, "chains": {"c": []}}"#)], chain: "c", expect: ["lesson.json: channels: expected a whole number in 1...32, got 1.8446744073709552e+19"]),
        Case(name: "noRepeat 1e308", files: ["lesson.json": lesson(pools: #"{"p": {"clips": ["a"], "noRepeat": 1e308}}"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: pools.p.noRepeat: expected a whole number in 0...1000000, got 1e+308"]),
        Case(name: "silence 1e308", files: ["lesson.json": lesson(chain: #"[{"silence": 1e308}]"#)], chain: "c", expect: ["lesson.json: chains.c[0].silence: silence must be between 0 and 3600 seconds"]),
        Case(name: "clip start 1e30", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "start": 1e30}"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: clips.a.start: expected seconds between 0 and 86400 (a day), got 1e+30"]),
        Case(name: "clip end 2^64", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "end": 18446744073709551616}"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: clips.a.end: expected seconds between 0 and 86400 (a day), got 1.8446744073709552e+19"]),
        Case(name: "clip start negative", files: ["lesson.json": lesson(clips: #""a": {"file": "a.wav", "start": -1e-300}"#), "a.wav": sentence], chain: "c", expect: ["lesson.json: clips.a.start: expected seconds between 0 and 86400"]),
        Case(name: "polyphony 2^64", files: ["lesson.json": text(#"{"sampleRate": 48000, "clips": {}, "chains": {"c": []}, "activities": {"x": {"intro": "c", "polyphony": 18446744073709551616}}}"#)], chain: "c", expect: ["lesson.json: activities.x.polyphony: expected a whole number in 1...16, got 1.8446744073709552e+19"]),
        Case(name: "idle seconds 1e308", files: ["lesson.json": text(#"{"sampleRate": 48000, "clips": {}, "chains": {"c": []}, "activities": {"x": {"intro": "c", "idleSeconds": 1e308}}}"#)], chain: "c", expect: ["lesson.json: activities.x.idleSeconds: idle wait must be more than 0 (at least one frame, 1/48000 s) and at most 3600 seconds, got 1e+308 s"]),
        // 0 is refused, and the message says so (it said "between 0 and 3600").
        Case(name: "idle seconds 0", files: ["lesson.json": text(#"{"sampleRate": 48000, "clips": {}, "chains": {"c": []}, "activities": {"x": {"intro": "c", "idleSeconds": 0}}}"#)], chain: "c", expect: ["lesson.json: activities.x.idleSeconds: idle wait must be more than 0 (at least one frame, 1/48000 s) and at most 3600 seconds, got 0 s\n"]),
        Case(name: "step idle seconds under a frame", files: ["lesson.json": text(#"{"sampleRate": 8000, "clips": {}, "chains": {"c": []}, "activities": {"x": {"steps": [{"answer": "a", "correct": "c", "wrong": ["c"], "idleSeconds": 0.00001}]}}}"#)], chain: "c", expect: ["lesson.json: activities.x.steps[0].idleSeconds: idle wait must be more than 0 (at least one frame, 1/8000 s) and at most 3600 seconds, got 1e-05 s\n"]),
        Case(name: "ducking attack 1e308", files: ["lesson.json": text(#"{"sampleRate": 48000, "clips": {}, "chains": {"c": []}, "ducking": {"attack": 1e308}}"#)], chain: "c", expect: ["lesson.json: ducking.attack: a ramp lasts between 0 and 10 seconds"]),
        Case(name: "sprite offset 1e308", files: sprited(#"{"src": "a.wav", "sprite": {"ding": [1e308, 100]}}"#), chain: "c", expect: ["s.json: sprite.ding[0]: offset must be under 86400000 ms (a day), got 1e+308"]),
        Case(name: "sprite duration 1e308", files: sprited(#"{"src": "a.wav", "sprite": {"ding": [10, 1e308]}}"#), chain: "c", expect: ["s.json: sprite.ding[1]: the sprite must end within 86400000 ms (a day), got 1e+308"]),
        Case(name: "sprite offset 2^64", files: sprited(#"{"src": "a.wav", "sprite": {"ding": [18446744073709551616, 1]}}"#), chain: "c", expect: ["s.json: sprite.ding[0]: offset must be under 86400000 ms"]),
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
        for fragment in c.absent {
            #expect(!result.stderr.contains(fragment), "\(result.stderr)")
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

    /// Targets that are not regular files (a FIFO here, like `/dev/null` or `/dev/stdout`) are
    /// written in place, never replaced by a file nor removed; a regular events file already
    /// there is kept as it was when the device cannot be opened. (`--events /dev/null` once
    /// replaced the machine's /dev/null with a file.)
    @Test func specialTargetsAreWrittenInPlaceAndKept() throws {
        let dir = TempDir()
        defer { dir.remove() }
        func fifo(_ name: String) throws -> (path: String, read: () -> String) {
            let path = dir.file(name)
            try #require(mkfifo(path, 0o600) == 0)
            let got = Mutex<String?>(nil)
            Thread { got.withLock { $0 = String(decoding: readAll(path), as: UTF8.self) } }.start()
            return (path, {
                let end = Date().addingTimeInterval(10)
                while got.withLock({ $0 }) == nil && Date() < end { Thread.sleep(forTimeInterval: 0.01) }
                return got.withLock { $0 } ?? ""
            })
        }
        func isFIFO(_ path: String) -> Bool {
            var info = stat()
            return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO
        }
        let lesson = Repo.path("Timings/lessons/sample.json")
        let cues = try fifo("cues")
        let rendered = try run(Repo.narrator, ["render", lesson, "--chain", "popup", "--output", dir.file("o.wav"), "--cues", cues.path])
        #expect(rendered.status == 0, "\(rendered.stderr)")
        let sheet = try run(Repo.narrator, ["cues", lesson, "--chain", "popup"])
        #expect(cues.read() == sheet.stdout, "the cue sheet came through the FIFO")
        #expect(isFIFO(cues.path))
        // A device that cannot be opened: the events FIFO stays, and so does an events file.
        let events = try fifo("events")
        let failed = try run(Repo.narrator, ["play", lesson, "--chain", "popup", "--output", "alsa", "--device", "no-such-device", "--events", events.path])
        #expect(failed.status == 1)
        _ = events.read()
        #expect(isFIFO(events.path), "the events FIFO is still a FIFO")
        let kept = dir.write("old.jsonl", "an earlier run's events\n")
        let again = try run(Repo.narrator, ["play", lesson, "--chain", "popup", "--output", "alsa", "--device", "no-such-device", "--events", kept])
        #expect(again.status == 1)
        #expect((try? String(contentsOfFile: kept, encoding: .utf8)) == "an earlier run's events\n")
        #expect(!FileManager.default.fileExists(atPath: dir.file("new.jsonl")))
        let fresh = try run(Repo.narrator, ["play", lesson, "--chain", "popup", "--output", "alsa", "--device", "no-such-device", "--events", dir.file("new.jsonl")])
        #expect(fresh.status == 1 && !FileManager.default.fileExists(atPath: dir.file("new.jsonl")), "an events file made by the failed run is removed")
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

    /// An activity's unknown chain is named by its full key path, wherever it is referenced.
    @Test func activityUnknownChainNamesTheKeyPath() throws {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("a.wav", data: Self.sentence)
        let cases: [(activity: String, place: String)] = [
            (#"{"steps": [{"answer": "a", "correct": "c", "wrong": ["c"]}, {"answer": "b", "correct": "x", "wrong": ["c"]}]}"#, "activities.bad.steps[1].correct"),
            (#"{"steps": [{"answer": "a", "correct": {"chain": "x", "pulse": ["t"]}, "wrong": ["c"]}]}"#, "activities.bad.steps[0].correct.chain"),
            (#"{"steps": [{"answer": "a", "correct": "c", "wrong": ["c", {"chain": "x"}]}]}"#, "activities.bad.steps[0].wrong[1].chain"),
            (#"{"steps": [{"answer": "a", "correct": "c", "wrong": ["c", "x"]}]}"#, "activities.bad.steps[0].wrong[1]"),
            (#"{"steps": [{"prompt": "x", "answer": "a", "correct": "c", "wrong": ["c"]}]}"#, "activities.bad.steps[0].prompt"),
            (#"{"steps": [{"answer": "a", "idle": "x", "correct": "c", "wrong": ["c"]}]}"#, "activities.bad.steps[0].idle"),
            (#"{"intro": "x"}"#, "activities.bad.intro"),
            (#"{"intro": {"first-use": "c", "return-use": "x"}}"#, "activities.bad.intro.return-use"),
            (#"{"intro": "c", "sounds": {"meow": "x"}}"#, "activities.bad.sounds.meow"),
            (#"{"intro": "c", "final": "x"}"#, "activities.bad.final"),
        ]
        for (activity, place) in cases {
            let lesson = dir.write("lesson.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "a.wav"}}, "chains": {"c": [{"clip": "a"}]}, "activities": {"bad": \#(activity)}}"#)
            let result = try run(Repo.narrator, ["cues", lesson, "--activity", "bad"])
            #expect(result.status == 1)
            #expect(result.stdout.isEmpty)
            #expect(result.stderr == "narrator: \(lesson): \(place): unknown chain 'x' (the lesson has: c)\n", "\(activity)")
        }
    }

    /// Names a lesson does not have: the message lists the ones it has (or says it has none).
    @Test func unknownNamesListTheLessons() throws {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("a.wav", data: Self.sentence)
        let lesson = dir.write("lesson.json", data: Self.lesson())
        let cases: [(arguments: [String], line: String)] = [
            (["--activity", "quiz"], "activities.quiz: unknown activity (the lesson has no activities)"),
            (["--chain", "d"], "chains.d: unknown chain (the lesson has: c)"),
            (["--requests", "0:text:d"], "chains.d: unknown chain (the lesson has: c)"),
        ]
        for (arguments, line) in cases {
            let result = try run(Repo.narrator, ["cues", lesson] + arguments)
            #expect(result.status == 1 && result.stdout.isEmpty)
            #expect(result.stderr == "narrator: \(lesson): \(line)\n", "\(arguments)")
        }
    }

    /// inspect says it too: times that look like milliseconds suggest seconds.
    @Test func inspectSaysTimingsLookLikeMilliseconds() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let audio = dir.write("a.wav", data: Self.sentence)
        let timings = dir.write("t.txt", "500\t600\ta\n700\t2900\tb\n")
        let result = try run(Repo.narrator, ["inspect", audio, "--timings", timings])
        #expect(result.status == 1 && result.stdout.isEmpty)
        #expect(result.stderr == "narrator: \(timings): word 0 'a': ends at frame 28800000, past the end of \(audio) (151663 frames); the times look like milliseconds (2900 s would be 2.9 s): timing files give seconds\n")
    }

    /// `serve` where the default library (Timings/lessons, relative) is not: one line saying
    /// where it looked and to give --library.
    @Test func serveWithoutALibrarySuggestsTheOption() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try run(Repo.narrator, ["serve", "--no-socket", "--listen", "127.0.0.1:0"], cwd: dir.path)
        #expect(result.status == 1 && result.stdout.isEmpty)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.hasPrefix("narrator: Timings/lessons: the lesson library is not a readable folder (looked for at "))
        #expect(result.stderr.hasSuffix("/Timings/lessons); give the folder of your lessons with --library FOLDER\n"), "\(result.stderr)")
        let named = try run(Repo.narrator, ["serve", "--no-socket", "--listen", "127.0.0.1:0", "--library", dir.file("lessons")], cwd: dir.path)
        #expect(named.status == 1)
        #expect(named.stderr == "narrator: \(dir.file("lessons")): the lesson library is not a readable folder; give the folder of your lessons with --library FOLDER\n")
    }

    /// A lesson may start with a UTF-8 byte order mark (RFC 8259 lets a reader skip it):
    /// it plays as the same lesson without one.
    @Test func lessonWithByteOrderMarkPlays() throws {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("a.wav", data: Self.sentence)
        let plain = dir.write("plain.json", data: Self.lesson())
        let marked = dir.write("marked.json", data: Data([0xEF, 0xBB, 0xBF]) + Self.lesson())
        let a = try run(Repo.narrator, ["cues", plain, "--chain", "c"])
        let b = try run(Repo.narrator, ["cues", marked, "--chain", "c"])
        #expect(a.status == 0 && b.status == 0, "\(b.stderr)")
        #expect(a.stdout == b.stdout && a.stdout.contains("\"clipStart\""))
    }

    /// Numeric options that do not fit: exit 1 and one line naming the option.
    @Test func numericOptionsOutOfRange() throws {
        let lesson = Repo.path("Timings/lessons/sample.json")
        let activityLesson = Repo.path("Timings/lessons/homer-sight-words.json")
        let cases: [(arguments: [String], says: String)] = [
            (["cues", lesson, "--chain", "correct", "--seed", "18446744073709551616"], "--seed"),
            (["cues", lesson, "--chain", "correct", "--seed", "-1"], "--seed"),
            (["cues", lesson, "--chain", "correct", "--seed", "1e30"], "--seed"),
            (["cues", lesson, "--chain", "correct", "--repeat", "1e30"], "--repeat"),
            (["cues", lesson, "--chain", "correct", "--repeat", "18446744073709551616"], "--repeat"),
            (["cues", lesson, "--chain", "correct", "--repeat", "-0"], "--repeat"),
            (["cues", activityLesson, "--activity", "sight-words", "--until", "nan"], "--until"),
            (["cues", activityLesson, "--activity", "sight-words", "--until", "1e308"], "--until"),
            (["cues", activityLesson, "--activity", "sight-words", "--until", "inf"], "--until"),
            (["cues", activityLesson, "--activity", "sight-words", "--taps", "1e300:the"], "--taps: item 1 '1e300:the': seconds must be between 0 and 86400"),
            (["cues", activityLesson, "--activity", "sight-words", "--taps", "86400.001:the"], "--taps: item 1"),
            (["cues", activityLesson, "--activity", "sight-words", "--taps", "nan:the"], "--taps: item 1"),
            (["cues", activityLesson, "--activity", "sight-words", "--taps=-inf:the"], "--taps: item 1"),
            (["cues", lesson, "--requests", "1e20:text:correct"], "--requests: item 1 '1e20:text:correct': seconds must be between 0 and 86400"),
            (["play", lesson, "--chain", "correct", "--latency", "1e30"], "--latency"),
            (["play", lesson, "--chain", "correct", "--latency", "99999999999999999999"], "--latency"),
            (["serve", "--latency", "-9223372036854775809"], "--latency"),
            (["synth", "hi", "--output", "/tmp/never.wav", "--timings", "/tmp/never.json", "--rate", "1e30"], "--rate"),
            (["timings", "convert", "in.txt", "out.json", "--rate", "18446744073709551616"], "--rate"),
            (["plot", lesson, "--chain", "correct", "--output", "/tmp/never.svg", "--width", "1e30"], "--width"),
        ]
        for (arguments, says) in cases {
            let result = try run(Repo.narrator, arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stdout.isEmpty, "\(arguments)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
            #expect(result.stderr.hasPrefix("narrator: ") && result.stderr.contains(says), "\(arguments): \(result.stderr)")
        }
    }
}
