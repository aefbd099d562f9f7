import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// `narrator align` against ground truth no aligner computed: espeak-ng speaks each word alone,
/// the words are cut to their sound (first to last sample at or above −50 dBFS) and laid end
/// to end with digital silences of known lengths, so every word's first and last frame is
/// known exactly. Measured at three speaking rates and once with a music bed (sox) under the
/// voice: the boundary error of aeneas alone and after refinement (docs/align.md).
@Suite(
    "align", .serialized,
    .requires(PulseTestServer.findExecutable("espeak-ng") != nil && PulseTestServer.findExecutable("sox") != nil, "needs espeak-ng and sox"))
struct AlignTests {
    static let words = SpokenWords.words
    static let rate = SpokenWords.rate

    struct Result {
        let aligner: [(start: Int, end: Int)]
        let refined: [(start: Int, end: Int)]
        let confidence: [Double]
    }

    static func align(_ audio: String, in dir: TempDir, name: String, repeats: Int = 1, extra: [String] = []) throws -> Result {
        let out = dir.file("\(name).json")
        let text = Array(repeating: words.joined(separator: " "), count: repeats).joined(separator: " ")
        let aligned = try run(
            // These fixtures measure the aeneas path (every language but English, and English's
            // fallback): PocketSphinx on espeak-ng's voice is AlignEnginesTests'.
            Repo.narrator, ["align", audio, "--text", text, "--timings", out, "--rate", "\(rate)", "--json", "--first-stage", "aeneas"] + extra)
        try #require(aligned.status == 0, "\(aligned.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(aligned.stdout.utf8)) as? [String: Any])
        let list = try #require(object["words"] as? [[String: Any]])
        try #require(list.map { $0["text"] as? String } == Array(Array(repeating: words, count: repeats).joined()))
        func frames(_ a: String, _ b: String) -> [(start: Int, end: Int)] { list.map { (($0[a] as? Int) ?? -1, ($0[b] as? Int) ?? -1) } }
        let result = Result(
            aligner: frames("alignerStartFrame", "alignerEndFrame"), refined: frames("startFrame", "endFrame"),
            confidence: list.map { ($0["confidence"] as? Double) ?? -1 })
        // The file holds the refined frames (seconds to the microsecond: exact at 22050 Hz).
        let written = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as? [String: Any])
        let file = try #require(written["words"] as? [[String: Any]]).map {
            (Int(((($0["start"] as? Double) ?? -1) * Double(rate)).rounded()), Int(((($0["end"] as? Double) ?? -1) * Double(rate)).rounded()))
        }
        #expect(file.map { [$0.0, $0.1] } == result.refined.map { [$0.start, $0.end] })
        return result
    }

    /// One case: aeneas's error, then the refined error, which must be p95 ≤ 20 ms.
    static func measure(
        _ audio: String, truth: [(start: Int, end: Int)], in dir: TempDir, name: String, connected: Bool = false, repeats: Int = 1, extra: [String] = []
    ) throws {
        let result = try align(audio, in: dir, name: name, repeats: repeats, extra: extra)
        let before = try SpokenWords.errors(result.aligner, truth)
        let after = try SpokenWords.errors(result.refined, truth)
        let starts = try SpokenWords.errors(result.refined.map { ($0.start, $0.start) }, truth.map { ($0.start, $0.start) })
        let alignerStarts = try SpokenWords.errors(result.aligner.map { ($0.start, $0.start) }, truth.map { ($0.start, $0.start) })
        let ends = try SpokenWords.errors(result.refined.map { ($0.end, $0.end) }, truth.map { ($0.end, $0.end) })
        print("align \(name): aeneas \(SpokenWords.describe(before)) (starts \(SpokenWords.describe(alignerStarts))); refined \(SpokenWords.describe(after)) (starts \(SpokenWords.describe(starts)); ends \(SpokenWords.describe(ends))); confidence min \(String(format: "%.2f", result.confidence.min() ?? -1))")
        if connected {
            // Gaps too short to be pauses: energy alone cannot place most joins. The refinement
            // must still not make the alignment worse.
            #expect(after.p50 <= before.p50 && after.p95 <= before.p95, "\(name): refined \(SpokenWords.describe(after)), aeneas \(SpokenWords.describe(before))")
            return
        }
        #expect(after.p95 <= 20, "\(name): refined \(SpokenWords.describe(after)), aeneas \(SpokenWords.describe(before))")
        // Every gap the fixture holds is a gap in the timings: no word runs into a pause.
        for (index, (word, real)) in zip(result.refined, truth).enumerated() where index > 0 {
            #expect(word.start > result.refined[index - 1].end, "\(name): word \(index) \(words[index % words.count]) touches the word before it")
            _ = real
        }
    }

    @Test(arguments: [130, 175, 240])
    func cleanSpeechAtASpeakingRate(speed: Int) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fixture = try SpokenWords.assemble(speed: speed, in: dir)
        try Self.measure(fixture.path, truth: fixture.truth, in: dir, name: "clean, espeak -s \(speed)")
    }

    /// 50 seconds of speech (the words 7 times) aligned in 20-second pieces (as a long file is in 120-second ones):
    /// the pieces' frames are offset back into the whole file, and no word is lost or doubled
    /// at a cut.
    @Test func aLongerRecordingAlignedInPieces() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fixture = try SpokenWords.assemble(speed: 175, repeats: 7, in: dir)
        #expect(fixture.frames > 50 * Self.rate)
        try Self.measure(fixture.path, truth: fixture.truth, in: dir, name: "51 s in 20 s pieces, espeak -s 175", repeats: 7, extra: ["--piece", "20"])
    }

    /// WebVTT has a place for the confidence: a NOTE block, which players and Narrator's own
    /// reader skip; the cues read back are the --json's refined frames (to the millisecond).
    @Test func webVTTCarriesTheConfidenceInANote() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fixture = try SpokenWords.assemble(speed: 175, in: dir)
        let vtt = dir.file("out.vtt")
        let aligned = try run(
            Repo.narrator, ["align", fixture.path, "--text", Self.words.joined(separator: " "), "--timings", vtt, "--rate", "\(Self.rate)", "--json"])
        try #require(aligned.status == 0, "\(aligned.stderr)")
        let text = try String(contentsOfFile: vtt, encoding: .utf8)
        #expect(text.hasPrefix("WEBVTT\n\nNOTE\nnarrator align: confidence per word"))
        #expect(text.contains("\n3 big "), "\(text)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(aligned.stdout.utf8)) as? [String: Any])
        let list = try #require(object["words"] as? [[String: Any]])
        for word in list {
            let line = "\(word["text"] as? String ?? "?") \(String(format: "%.2f", word["confidence"] as? Double ?? -1)) ("
            #expect(text.contains(line), "\(line)")
        }
        let back = try run(Repo.narrator, ["timings", "convert", vtt, dir.file("back.json"), "--rate", "8000"])
        try #require(back.status == 0, "\(back.stderr)")
        let read = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("back.json")))) as? [String: Any])
        let words = try #require(read["words"] as? [[String: Any]])
        #expect(words.map { $0["text"] as? String } == Self.words)
        #expect(zip(words, list).allSatisfy { abs(($0["start"] as? Double ?? -1) - ($1["start"] as? Double ?? 0)) <= 0.0005 })
    }

    @Test func connectedSpeech() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fixture = try SpokenWords.assemble(speed: 175, gaps: [150, 0, 20, 10, 0, 25, 15, 0, 30, 5, 0, 20, 10, 0, 25], in: dir)
        try Self.measure(fixture.path, truth: fixture.truth, in: dir, name: "connected (gaps 0-30 ms), espeak -s 175", connected: true)
    }

    /// A manifest of five recordings (the fourth missing) aligned by three workers
    /// (`--shard 1/3` … `3/3`) and merged: the same timing files, byte for byte, and the same
    /// report as one unsharded run; each item once; the missing one reported, not fatal.
    @Test func aShardedBatchIsOneRun() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let sentences = ["one two three", "I can see", "a red apple", "missing", "the big dog runs"]
        var lines: [String] = []
        for (k, sentence) in sentences.enumerated() {
            let audio = "rec\(k + 1).wav"
            if sentence != "missing" {
                let spoken = try runTool("espeak-ng", ["-v", "en", "-w", dir.file(audio), sentence])
                try #require(spoken.status == 0, "\(spoken.stderr)")
            }
            let ext = ["json", "vtt", "json", "json", "srt"][k]
            lines.append(#"{"audio": "\#(audio)", "text": "\#(sentence)", "timings": "out/\#(k + 1).\#(ext)"}"#)
            if k == 1 { lines.append("") }
        }
        let manifest = dir.write("book.jsonl", lines.joined(separator: "\n") + "\n")
        try FileManager.default.createDirectory(atPath: dir.file("out"), withIntermediateDirectories: true)
        func outputs() throws -> [String: Data] {
            var found: [String: Data] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: dir.file("out")) {
                found[name] = try Data(contentsOf: URL(fileURLWithPath: dir.file("out/\(name)")))
            }
            return found
        }

        let whole = try run(Repo.narrator, ["align", "--manifest", manifest, "--report", dir.file("whole.jsonl")])
        #expect(whole.status == 1, "the missing recording fails the batch")
        #expect(whole.stderr.contains("book.jsonl: line 5: ") && whole.stderr.contains("rec4.wav"), "\(whole.stderr)")
        #expect(whole.stderr.contains("1 item of shard 1/1 failed"), "\(whole.stderr)")
        let once = try outputs()
        #expect(once.keys.sorted() == ["1.json", "2.vtt", "3.json", "5.srt"])
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.file("out")) {
            try FileManager.default.removeItem(atPath: dir.file("out/\(name)"))
        }

        var parts: [String] = []
        for k in [3, 1, 2] {
            let part = dir.file("part\(k).jsonl")
            let result = try run(Repo.narrator, ["align", "--manifest", manifest, "--shard", "\(k)/3", "--report", part])
            // Shard 1/3 holds items 1 and 4 (the missing one).
            #expect(result.status == (k == 1 ? 1 : 0), "shard \(k)/3: \(result.stderr)")
            let items = try String(contentsOfFile: part, encoding: .utf8).split(separator: "\n").dropFirst().map { line in
                try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])["item"] as? Int
            }
            #expect(items == Array(stride(from: k, through: 5, by: 3)), "shard \(k)/3 aligned items \(items)")
            parts.append(part)
        }
        #expect(try outputs() == once, "the workers wrote the same timing files as one run")
        let merged = try run(Repo.narrator, ["merge"] + parts + ["--to", dir.file("merged.jsonl")])
        #expect(merged.status == 0, "\(merged.stderr)")
        let mergedReport = try String(contentsOfFile: dir.file("merged.jsonl"), encoding: .utf8)
        let wholeReport = try String(contentsOfFile: dir.file("whole.jsonl"), encoding: .utf8)
        #expect(mergedReport == wholeReport)
        // The report itself: one header, then items 1 to 5 once each, the fourth an error.
        let rows = wholeReport.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(rows.count == 6 && rows[0]?["shard"] as? String == "1/1")
        #expect(rows.dropFirst().map { $0?["item"] as? Int } == [1, 2, 3, 4, 5])
        #expect(rows[4]?["error"] != nil && rows[1]?["words"] as? Int == 3 && rows[5]?["words"] as? Int == 4)
        // A part missing: merge refuses, and writes nothing.
        let short = try run(Repo.narrator, ["merge", parts[0], parts[1], "--to", dir.file("short.jsonl")])
        #expect(short.status == 1 && short.stderr.contains("missing the report of shard 2/3"), "\(short.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("short.jsonl")))
    }

    @Test func speechOverAMusicBed() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fixture = try SpokenWords.assemble(speed: 175, in: dir)
        // A chord that swells and fades at 4 Hz, about 25 dB under the voice's loud parts.
        let seconds = String(format: "%.6f", Double(fixture.frames) / Double(Self.rate))
        let bed = dir.file("bed.wav")
        let made = try runTool(
            "sox", ["-n", "-r", "\(Self.rate)", "-c", "1", "-b", "16", bed, "synth", seconds, "sine", "196", "sine", "247", "tremolo", "4", "60", "vol", "0.02"])
        try #require(made.status == 0, "\(made.stderr)")
        let mixed = dir.file("mixed.wav")
        let mixing = try runTool("sox", ["-m", "-v", "1", fixture.path, "-v", "1", bed, mixed])
        try #require(mixing.status == 0, "\(mixing.stderr)")
        #expect(try WAVFile(path: mixed).frames == fixture.frames)
        try Self.measure(mixed, truth: fixture.truth, in: dir, name: "music bed, espeak -s 175")
    }
}

/// How `narrator align` fails: one line naming the file, exit status 1, and no timing file
/// (not even a partial one). aeneas is replaced by a stand-in `python3` first on PATH.
@Suite("align failures")
struct AlignFailureTests {
    static func attempt(_ dir: TempDir, python: String?, _ extra: [String] = [], text: [String] = ["--text", "one two"]) throws -> ProcessResult {
        let audio = dir.write("clip.wav", data: WAVFile.pcm16([Int16](repeating: 1000, count: 8000), rate: 16000))
        var path = "/nonexistent"
        if let python {
            let bin = dir.file("bin")
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            let script = dir.write("bin/python3", "#!/bin/sh\n\(python)\n")
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
            path = bin
        }
        return try run("/usr/bin/env", ["PATH=\(path)", Repo.narrator, "align", audio] + text + ["--timings", dir.file("out.json")] + extra)
    }

    static func expectOneLine(_ result: ProcessResult, _ dir: TempDir, saying: String) {
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && result.stderr.contains(saying), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("out.json")))
        #expect(dir.contents().allSatisfy { !$0.hasPrefix("out") }, "\(dir.contents())")
    }

    @Test func noPython() throws {
        let dir = TempDir()
        defer { dir.remove() }
        Self.expectOneLine(try Self.attempt(dir, python: nil), dir, saying: "aeneas is not installed")
    }

    @Test func aeneasNotInstalled() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try Self.attempt(dir, python: "echo \"/usr/bin/python3: No module named aeneas\" >&2; exit 1")
        Self.expectOneLine(result, dir, saying: "aeneas is not installed (/usr/bin/python3: No module named aeneas)")
    }

    @Test func aeneasFails() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try Self.attempt(dir, python: "echo 'noise'; echo '[ERRO] An unexpected error occurred: boom' >&2; exit 1")
        Self.expectOneLine(result, dir, saying: "clip.wav: aeneas failed (exit status 1): [ERRO] An unexpected error occurred: boom")
    }

    @Test func aeneasHangsAndIsStopped() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let began = Date()
        // What the stand-in started (as aeneas starts ffmpeg) is stopped with it.
        let pidFile = dir.file("child.pid")
        let result = try Self.attempt(dir, python: "/bin/sleep 61 & echo $! > \(pidFile); exec /bin/sleep 60", ["--timeout", "1"])
        Self.expectOneLine(result, dir, saying: "aeneas did not finish within 1 s")
        #expect(Date().timeIntervalSince(began) < 20)
        let child = try #require(Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        usleep(200_000)
        let alive = kill(child, 0) == 0 && (try? String(contentsOfFile: "/proc/\(child)/cmdline", encoding: .utf8))?.contains("61") == true
        if alive { kill(child, SIGKILL) }
        #expect(!alive, "the stand-in's child \(child) outlived the timeout")
    }

    /// PocketSphinx runs as one worker for the run: one that dies before it answers is one line
    /// saying how it ended and what it said last, exit 1, and nothing written.
    @Test func thePocketSphinxWorkerDies() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try Self.attempt(dir, python: "read job; echo 'worker crashed' >&2; kill -9 $$", ["--first-stage", "pocketsphinx"])
        Self.expectOneLine(result, dir, saying: "clip.wav: PocketSphinx's worker ended (signal 9) before it answered: worker crashed")
    }

    /// A worker that never answers is stopped after --timeout, whatever it started with it.
    @Test func thePocketSphinxWorkerHangs() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let began = Date()
        let result = try Self.attempt(dir, python: "read job; exec /bin/sleep 60", ["--first-stage", "pocketsphinx", "--timeout", "1"])
        Self.expectOneLine(result, dir, saying: "clip.wav: PocketSphinx did not finish within 1 s (--timeout)")
        #expect(Date().timeIntervalSince(began) < 20)
    }

    /// A worker that never reads its job, with a job longer than a pipe holds (a 20,000-word
    /// text: about 95 KB of text, more as a job): `align` gives up at `--timeout` instead of blocking on the write.
    @Test func aWorkerThatDoesNotReadALongJob() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let words = (0..<20_000).map { ["one", "two", "three"][$0 % 3] }.joined(separator: " ")
        let began = Date()
        let result = try Self.attempt(dir, python: "exec /bin/sleep 60", ["--first-stage", "pocketsphinx", "--timeout", "1"], text: ["--text", words])
        Self.expectOneLine(result, dir, saying: "clip.wav: PocketSphinx did not take its job within 1 s (--timeout)")
        #expect(Date().timeIntervalSince(began) < 20)
    }

    /// A batch starts one worker for all its items (its model loads once): the stand-in counts
    /// its starts and answers each job with a piece it could not align.
    @Test func aBatchStartsOneWorker() throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = dir.write("clip.wav", data: WAVFile.pcm16([Int16](repeating: 1000, count: 8000), rate: 16000))
        let bin = dir.file("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let starts = dir.file("starts")
        let script = dir.write(
            "bin/python3", "#!/bin/sh\necho start >> \(starts)\nwhile read job; do echo '{\"pieces\": [{\"error\": \"stand-in\"}]}'; done\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        let manifest = dir.write(
            "batch.jsonl", (1...3).map { #"{"audio": "clip.wav", "text": "one two", "timings": "t\#($0).json"}"# }.joined(separator: "\n") + "\n")
        let result = try run("/usr/bin/env", ["PATH=\(bin)", Repo.narrator, "align", "--manifest", manifest, "--first-stage", "pocketsphinx"])
        #expect(result.status == 1)
        #expect(result.stderr.components(separatedBy: "PocketSphinx could not align it: stand-in").count - 1 == 3, "\(result.stderr)")
        #expect(try String(contentsOfFile: starts, encoding: .utf8) == "start\n", "one worker for the three items")
    }

    /// In a batch, the item whose worker died fails (its own line) and the next item gets a new
    /// worker: here the stand-in dies on its first job and answers nothing that is JSON on the
    /// second, so both items fail, each with its own reason, and nothing is written.
    @Test func aBatchStartsANewWorkerAfterOneDies() throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = dir.write("clip.wav", data: WAVFile.pcm16([Int16](repeating: 1000, count: 8000), rate: 16000))
        let bin = dir.file("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        // The first worker dies; the second (a marker file says one ran) answers a line that is not JSON.
        let marker = dir.file("started")
        let script = dir.write(
            "bin/python3", "#!/bin/sh\nif [ -e \(marker) ]; then read job; echo 'not json'; read job; exit 0; fi\nread job; : > \(marker); kill -9 $$\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        let manifest = dir.write(
            "batch.jsonl", #"{"audio": "clip.wav", "text": "one two", "timings": "a.json"}"# + "\n" + #"{"audio": "clip.wav", "text": "one two", "timings": "b.json"}"# + "\n")
        let result = try run("/usr/bin/env", ["PATH=\(bin)", Repo.narrator, "align", "--manifest", manifest, "--first-stage", "pocketsphinx"])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(result.stderr)")
        #expect(lines.first.map { $0.contains("line 1: ") && $0.contains("clip.wav: PocketSphinx's worker ended (signal 9) before it answered") } == true)
        #expect(lines.dropFirst().first.map { $0.contains("line 2: ") && $0.contains("clip.wav: PocketSphinx's output") } == true, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("a.json")) && !FileManager.default.fileExists(atPath: dir.file("b.json")))
    }

    @Test func aeneasWritesSomethingElse() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // Exits 0 having written a sync map with one fragment for the two words.
        let result = try Self.attempt(
            dir, python: "printf '{\"fragments\": [{\"begin\": \"0.000\", \"end\": \"0.400\", \"id\": \"f1\", \"lines\": [\"one\"]}]}' > \"$6\"")
        Self.expectOneLine(result, dir, saying: "aeneas returned 1 words for the 2 of the text")
        let nan = try Self.attempt(
            dir, python: "printf '{\"fragments\": [{\"begin\": \"nan\", \"end\": \"1e400\", \"id\": \"f1\", \"lines\": [\"one\"]}]}' > \"$6\"")
        #expect(nan.status == 1 && nan.stderr.split(separator: "\n").count == 1, "\(nan.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("out.json")))
    }

    /// A bad manifest or shard is one line naming the manifest's line and key, before any
    /// item is aligned.
    @Test func badManifestsFailBeforeAeneas() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let marker = dir.file("ran")
        let bin = dir.file("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let script = dir.write("bin/python3", "#!/bin/sh\ntouch \(marker); exit 1\n")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
        let good = #"{"audio": "a.wav", "text": "one", "timings": "a.json"}"#
        func attempt(_ manifest: String, _ extra: [String] = []) throws -> ProcessResult {
            let path = dir.write("m.jsonl", manifest)
            return try run("/usr/bin/env", ["PATH=\(bin)", Repo.narrator, "align", "--manifest", path] + extra)
        }
        // Timings are written inside their folder (--to, else the manifest's), wherever a path
        // or a link inside it leads.
        let to = dir.file("out")
        try FileManager.default.createDirectory(atPath: to + "/sub", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: to + "/escape", withDestinationPath: dir.file("elsewhere"))
        try FileManager.default.createSymbolicLink(atPath: to + "/up", withDestinationPath: "..")
        try FileManager.default.createSymbolicLink(atPath: to + "/f.json", withDestinationPath: dir.file("elsewhere.json"))
        func writing(_ timings: String) -> String { #"{"audio": "a.wav", "text": "one", "timings": "\#(timings)"}"# }
        let outside: [(String, [String], String)] = [
            (writing("../x.json"), ["--to", to], "line 1.timings: '../x.json' leads outside"),
            (writing("sub/../../../x.json"), ["--to", to], "line 1.timings: 'sub/../../../x.json' leads outside"),
            (writing(dir.file("x.json")), ["--to", to], "line 1.timings: '\(dir.file("x.json"))' leads outside"),
            (writing("escape/x.json"), ["--to", to], "line 1.timings: 'escape/x.json' leads outside"),
            (writing("up/x.json"), ["--to", to], "line 1.timings: 'up/x.json' leads outside"),
            (good + "\n" + writing("f.json"), ["--to", to], "line 2.timings: 'f.json' leads outside"),
            (writing("../x.json"), [], "line 1.timings: '../x.json' leads outside"),
        ]
        let cases: [(String, [String], String)] = outside + [
            (good + "\n{\"audio\": \"b.wav\"\n", [], "m.jsonl: line 2"),
            (good + "\n" + #"{"audio": "b.wav", "text": "one", "timings": "b.json", "speed": 2}"#, [], "line 2.speed: unknown key"),
            (#"{"text": "one", "timings": "b.json"}"#, [], "line 1.audio: missing key"),
            (#"{"audio": "b.wav", "text": "one"}"#, [], "line 1.timings: missing key"),
            (#"{"audio": "b.wav", "text": "one", "transcript": "t.txt", "timings": "b.json"}"#, [], "line 1: give the words"),
            (#"{"audio": 3, "text": "one", "timings": "b.json"}"#, [], "line 1.audio: expected a string"),
            (#"{"audio": "", "text": "one", "timings": "b.json"}"#, [], "line 1.audio: expected a file path"),
            (#"{"audio": "b.wav", "text": "one", "timings": "b.json", "language": "eng|x=y"}"#, [], "line 1.language"),
            (good + "\n" + #"{"audio": "b.wav", "text": "two", "timings": "./a.json"}"#, [], "is written by line 1 too"),
            (#"{"audio": "b.wav", "text": "one", "timings": "b.TextGrid"}"#, [], "cannot write '.textgrid'"),
            ("\n \n", [], "lists no recordings"),
            (good + "\r\n{\"audio\": 3}\r\n", [], "line 2.audio: expected a string"),
            ("[1, 2]", [], "line 1: expected an object"),
            (good, ["--shard", "3/2"], "K must be between 1 and N"),
            (good, ["--shard", "x"], "is not K/N"),
        ]
        for (manifest, extra, saying) in cases {
            let result = try attempt(manifest, extra)
            #expect(result.status == 1 && result.stderr.contains(saying), "\(manifest) \(extra): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.file("elsewhere")) && !FileManager.default.fileExists(atPath: dir.file("x.json")))
        let mixed = try run(Repo.narrator, ["align", dir.file("a.wav"), "--manifest", dir.file("m.jsonl")])
        #expect(mixed.status == 1 && mixed.stderr.contains("with --manifest"), "\(mixed.stderr)")
        let loose = try run(Repo.narrator, ["align", dir.file("a.wav"), "--text", "one", "--timings", dir.file("a.json"), "--shard", "1/2"])
        #expect(loose.status == 1 && loose.stderr.contains("--shard, --report and --to go with --manifest"), "\(loose.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker))
    }

    @Test func badArgumentsFailBeforeAeneas() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // A stand-in that would leave a mark if it ran.
        let marker = dir.file("ran")
        let python = "touch \(marker); exit 1"
        Self.expectOneLine(try Self.attempt(dir, python: python, text: ["--text", "  \n "]), dir, saying: "--text: holds no words")
        Self.expectOneLine(
            try Self.attempt(dir, python: python, text: ["--transcript", dir.file("missing.txt")]), dir, saying: "missing.txt")
        Self.expectOneLine(try Self.attempt(dir, python: python, ["--language", "eng|x=y"]), dir, saying: "--language")
        let wrong = try run(
            Repo.narrator, ["align", dir.file("clip.wav"), "--text", "one", "--timings", dir.file("out.TextGrid")])
        #expect(wrong.status == 1 && wrong.stderr.contains("cannot write '.textgrid'"), "\(wrong.stderr)")
        #expect(!FileManager.default.fileExists(atPath: marker))
    }
}

/// `narrator align` (PocketSphinx, then the phone-stage refinement) on two synthetic engines
/// other than the fixtures' single voice: espeak-ng and flite speak each word alone, the words
/// are cut to their sound (−50 dBFS) and laid end to end at 22.05 kHz with digital silences of
/// 30–80 ms, so every boundary is exact. The bounds asserted are the ones measured here
/// (docs/align.md), with a little room.
@Suite(
    "align: two synthetic engines", .serialized,
    .requires(
        PulseTestServer.findExecutable("espeak-ng") != nil && PulseTestServer.findExecutable("flite") != nil
            && PulseTestServer.findExecutable("sox") != nil, "needs espeak-ng, flite and sox"))
struct AlignEnginesTests {
    static let text = "A small brown dog jumped over the fence and ran quickly into the garden"
    static let gaps = [180, 45, 70, 30, 60, 80, 35, 50, 75, 40, 65, 30, 55, 70]

    static func assemble(engine: String, in dir: TempDir) throws -> SpokenWords.Fixture {
        let rate = SpokenWords.rate
        var samples: [Int16] = []
        var truth: [(start: Int, end: Int)] = []
        for (index, word) in text.split(separator: " ").enumerated() {
            let raw = dir.file("\(engine)-\(index)-raw.wav")
            let spoken =
                engine == "flite"
                ? try runTool("flite", ["-voice", "slt", "-t", String(word), "-o", raw])
                : try runTool("espeak-ng", ["-v", "en-us", "-s", "165", "-w", raw, String(word)])
            try #require(spoken.status == 0, "\(spoken.stderr)")
            let file = dir.file("\(engine)-\(index).wav")
            let converted = try runTool("sox", [raw, "-r", "\(rate)", "-c", "1", "-b", "16", file])
            try #require(converted.status == 0, "\(converted.stderr)")
            let voice = try WAVFile(path: file).int16Samples
            let first = try #require(voice.firstIndex { abs(Int($0)) >= Int(SpokenWords.soundLevel) })
            let last = try #require(voice.lastIndex { abs(Int($0)) >= Int(SpokenWords.soundLevel) })
            samples += [Int16](repeating: 0, count: gaps[index] * rate / 1000)
            truth.append((samples.count, samples.count + last + 1 - first))
            samples += voice[first...last]
        }
        samples += [Int16](repeating: 0, count: SpokenWords.tail * rate / 1000)
        let path = dir.write("\(engine).wav", data: WAVFile.pcm16(samples, rate: rate, channels: 1))
        return SpokenWords.Fixture(path: path, truth: truth, frames: samples.count)
    }

    /// The same words over a bed of chords made by sox (three sines, a new chord every
    /// 0.45–0.85 s), 20 dB under the voice's RMS over its words. Measured over four runs (the
    /// first stage's answers vary a little from run to run): refined p50 0.4–6.3 ms against
    /// PocketSphinx's 17.5–29.8, p95 56.3–150.6 against 85.9–145.6: most boundaries exact, a
    /// few taken to the wrong pause. The issue's goal, p95 ≤ 30 ms, is not met here (docs/align.md
    /// § 3, *Under a steady background*); the test holds what is: the median at most half the
    /// stage's, the tail no more than 10 ms worse than the stage's.
    @Test(arguments: ["espeak-ng", "flite"])
    func exactBoundariesUnderAChordBed(engine: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fixture = try Self.assemble(engine: engine, in: dir)
        let rate = SpokenWords.rate
        let chords = [["C3", "E3", "G3"], ["A2", "C3", "E3"], ["F2", "A2", "C3"], ["G2", "B2", "D3"]]
        let lengths = [0.55, 0.8, 0.45, 0.7, 0.65, 0.85, 0.5, 0.75]
        var pieces: [String] = []
        var total = 0.0
        while total * Double(rate) < Double(fixture.frames) {
            let index = pieces.count
            let length = lengths[index % lengths.count]
            let piece = dir.file("chord-\(index).wav")
            let notes = chords[index % chords.count].flatMap { ["sine", $0] }
            let made = try runTool(
                "sox", ["-n", "-r", "\(rate)", "-c", "1", "-b", "32", "-e", "float", piece, "synth", "\(length)"] + notes
                    + ["fade", "h", "0.01", "\(length)", "0.03"])
            try #require(made.status == 0, "\(made.stderr)")
            pieces.append(piece)
            total += length
        }
        let chain = dir.file("chain.wav")
        let joined = try runTool("sox", pieces + [chain, "trim", "0", "\(fixture.frames)s"])
        try #require(joined.status == 0, "\(joined.stderr)")
        // 20 dB under the voice: both RMS levels from the samples, the voice's over its words.
        let voice = try WAVFile(path: fixture.path).int16Samples.map { Double($0) / 32768 }
        let spoken = fixture.truth.flatMap { voice[$0.start..<$0.end] }
        let bedSamples = try WAVFile(path: chain).floatSamples.map(Double.init)
        func rms(_ values: [Double]) -> Double { (values.reduce(0) { $0 + $1 * $1 } / Double(max(1, values.count))).squareRoot() }
        let gain = rms(spoken) * 0.1 / rms(bedSamples)
        let mixed = dir.file("mixed.wav")
        let mixing = try runTool("sox", ["-m", "-v", "1", fixture.path, "-v", String(format: "%.6f", gain), chain, "-b", "16", mixed])
        try #require(mixing.status == 0, "\(mixing.stderr)")
        let aligned = try run(
            Repo.narrator, ["align", mixed, "--text", Self.text, "--timings", dir.file("out.json"), "--rate", "\(rate)", "--json"])
        try #require(aligned.status == 0, "\(aligned.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(aligned.stdout.utf8)) as? [String: Any])
        let list = try #require(object["words"] as? [[String: Any]])
        try #require(list.count == fixture.truth.count)
        func frames(_ a: String, _ b: String) -> [(start: Int, end: Int)] { list.map { (($0[a] as? Int) ?? -1, ($0[b] as? Int) ?? -1) } }
        let stage = try SpokenWords.errors(frames("alignerStartFrame", "alignerEndFrame"), fixture.truth)
        let refined = try SpokenWords.errors(frames("startFrame", "endFrame"), fixture.truth)
        print("align \(engine) under chords: PocketSphinx \(SpokenWords.describe(stage)); refined \(SpokenWords.describe(refined))")
        #expect(refined.p50 <= stage.p50 / 2 && refined.p95 <= stage.p95 + 10, "\(engine): refined \(SpokenWords.describe(refined)), stage \(SpokenWords.describe(stage))")
    }

    /// p50 and p95 of the refined error must stay within the bound (the issue's goal for clean
    /// synthetic speech, p95 ≤ 5 ms; measured 0.9 ms for both, the stage alone 122 and 84 ms);
    /// the first stage's own error is printed beside it.
    @Test(arguments: [("espeak-ng", 2.0, 5.0), ("flite", 2.0, 5.0)])
    func exactBoundariesOfAnEngine(engine: String, p50Bound: Double, p95Bound: Double) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fixture = try Self.assemble(engine: engine, in: dir)
        let out = dir.file("out.json")
        let aligned = try run(
            Repo.narrator, ["align", fixture.path, "--text", Self.text, "--timings", out, "--rate", "\(SpokenWords.rate)", "--json"])
        try #require(aligned.status == 0, "\(aligned.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(aligned.stdout.utf8)) as? [String: Any])
        let list = try #require(object["words"] as? [[String: Any]])
        try #require(list.count == fixture.truth.count)
        #expect(list.allSatisfy { $0["stage"] as? String == "pocketsphinx" }, "English goes to PocketSphinx")
        func frames(_ a: String, _ b: String) -> [(start: Int, end: Int)] { list.map { (($0[a] as? Int) ?? -1, ($0[b] as? Int) ?? -1) } }
        let stage = try SpokenWords.errors(frames("alignerStartFrame", "alignerEndFrame"), fixture.truth)
        let refined = try SpokenWords.errors(frames("startFrame", "endFrame"), fixture.truth)
        print("align \(engine): PocketSphinx \(SpokenWords.describe(stage)); refined \(SpokenWords.describe(refined))")
        #expect(refined.p50 <= p50Bound && refined.p95 <= p95Bound, "\(engine): refined \(SpokenWords.describe(refined))")
        #expect(refined.p95 <= stage.p95, "\(engine): the refinement made it worse: \(SpokenWords.describe(refined)) vs \(SpokenWords.describe(stage))")
        for key in ["acousticScore", "squeezedPhones", "stageShiftMs", "agreement", "voiced"] {
            #expect(list.allSatisfy { $0[key] is Double || $0[key] is Int }, "\(key) per word")
        }
    }
}

/// A page or chapter read in one take (issue 29, point 4): `align`'s own memory must not grow
/// with the recording's length. long.py's fixture (espeak-ng's words laid end to end, a
/// sentence of 15 words repeated, 600 ms between sentences) with half a bit of seeded noise so
/// that PocketSphinx aligns every piece, at two lengths, aligned at 48 kHz; `align`'s peak
/// resident memory (VmHWM, its own, not its PocketSphinx worker's) read while it runs. Before
/// the recording was read a piece at a time it grew by 51 MB a minute on this fixture (debug
/// build: 83 MB at 59 s, 183 MB at 177 s, 289 MB at 5 minutes); now 0–2 MB a minute (45.8,
/// 46.1, 46.7 MB at 1, 3 and 5 minutes, 50.7 at 10: the 1 ms energies the sentence anchors
/// read, PocketSphinx's answer). docs/align.md § Long recordings.
@Suite(
    "align: a long recording", .serialized,
    .requires(PulseTestServer.findExecutable("espeak-ng") != nil, "needs espeak-ng"))
struct AlignLongRecordingTests {
    /// Peak resident memory may grow at most this much a minute of recording.
    static let growthPerMinute = 6.0 * 1024

    /// Runs `align` on `repeats` sentences; returns its peak resident KiB and the seconds aligned.
    static func peak(repeats: Int, in dir: TempDir) throws -> (kib: Int, seconds: Double) {
        let fixture = try SpokenWords.assemble(speed: 175, repeats: repeats, in: dir)
        // Half a bit of seeded noise: PocketSphinx loses the text's end over digital silence.
        var seed: UInt64 = 7
        let dithered = try WAVFile(path: fixture.path).int16Samples.map { sample -> Int16 in
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int16(clamping: Int(sample) + Int(seed >> 62) % 3 - 1)
        }
        let audio = dir.write("long-\(repeats).wav", data: WAVFile.pcm16(dithered, rate: SpokenWords.rate))
        let text = (0..<repeats).map { _ in SpokenWords.words.joined(separator: " ") + "." }.joined(separator: " ")
        let out = dir.file("long-\(repeats).out")
        try #require(FileManager.default.createFile(atPath: out, contents: nil))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repo.narrator)
        process.arguments = ["align", audio, "--text", text, "--timings", dir.file("long-\(repeats).json"), "--rate", "48000", "--json"]
        process.standardOutput = FileHandle(forWritingAtPath: out)
        process.standardError = FileHandle(forWritingAtPath: out)
        try process.run()
        var peak = 0
        // VmHWM only grows: read until the process ends, the last read holds its peak.
        while process.isRunning {
            if let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
                let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
            {
                peak = max(peak, kib)
            }
            usleep(10_000)
        }
        process.waitUntilExit()
        let said = try String(contentsOfFile: out, encoding: .utf8)
        try #require(process.terminationStatus == 0, "\(said)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(said.utf8)) as? [String: Any])
        let list = try #require(object["words"] as? [[String: Any]])
        try #require(list.count == fixture.truth.count)
        let found = list.map { (($0["startFrame"] as? Int) ?? -1, ($0["endFrame"] as? Int) ?? -1) }
        // The fixture's frames are at 22.05 kHz, the timings at 48 kHz.
        let truth = fixture.truth.map { ($0.start * 48000 / SpokenWords.rate, $0.end * 48000 / SpokenWords.rate) }
        let errors = zip(found, truth).flatMap { [abs($0.0 - $1.0), abs($0.1 - $1.1)] }.map { Double($0) / 48 }.sorted()
        let p50 = errors[errors.count / 2], p95 = errors[errors.count * 95 / 100]
        let seconds = Double(fixture.frames) / Double(SpokenWords.rate)
        print(String(format: "align, long recording: %.1f s, %d words (%d by PocketSphinx), peak %.1f MB, p50 %.1f ms, p95 %.1f ms", seconds, list.count,
                     list.filter { $0["stage"] as? String == "pocketsphinx" }.count, Double(peak) / 1024, p50, p95))
        // Aligned, not only run: most boundaries exact (PocketSphinx misplaces a few stretches
        // of espeak-ng's voice by 200–300 ms, docs/align.md).
        #expect(p50 <= 2, "\(repeats) sentences: p50 \(p50) ms")
        return (peak, seconds)
    }

    @Test func memoryStaysFlatWithLength() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let short = try Self.peak(repeats: 8, in: dir)
        let long = try Self.peak(repeats: 24, in: dir)
        let growth = Double(long.kib - short.kib) / ((long.seconds - short.seconds) / 60)
        let said = String(
            format: "peak grew %.1f MB a minute (%.1f MB at %.0f s, %.1f MB at %.0f s)", growth / 1024, Double(short.kib) / 1024, short.seconds,
            Double(long.kib) / 1024, long.seconds)
        print("align, long recording: \(said)")
        #expect(growth <= Self.growthPerMinute, "\(said)")
    }
}
