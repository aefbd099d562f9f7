import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// `narrator validate` on a library made broken on purpose, one fault a file, with sox making
/// the audio; and on the sample library, which must have no errors.
@Suite("narrator validate")
struct ValidateTests {
    /// A library in `dir` with one of each fault the command looks for.
    static func brokenLibrary(_ dir: TempDir) throws {
        func sox(_ file: String, _ arguments: [String]) throws {
            let made = try runTool("sox", ["-D", "-n"] + arguments.prefix(6) + [dir.file(file)] + arguments.dropFirst(6))
            try #require(made.status == 0, "\(made.stderr)")
        }
        let mono48k = ["-r", "48000", "-c", "1", "-b", "16"]
        try sox("good.wav", mono48k + ["synth", "0.5", "sine", "440", "vol", "0.5"])
        try sox("rate.wav", ["-r", "44100", "-c", "1", "-b", "16", "synth", "0.5", "sine", "440", "vol", "0.5"])
        try sox("stereo.wav", ["-r", "48000", "-c", "2", "-b", "16", "synth", "0.5", "sine", "440", "vol", "0.5"])
        try sox("silent.wav", mono48k + ["synth", "0.5", "sine", "440", "vol", "0"])
        try sox("loud.wav", mono48k + ["synth", "0.5", "sine", "440", "vol", "2"])
        try sox("unused.wav", mono48k + ["synth", "0.1", "sine", "440", "vol", "0.5"])
        let good = try Data(contentsOf: URL(fileURLWithPath: dir.file("good.wav")))
        dir.write("truncated.wav", data: good.prefix(20000))

        dir.write("hello.txt", "0.05\t0.20\tHello,\n0.25\t0.45\tworld!\n")
        dir.write("late.txt", "0.05\t0.20\tHello\n0.30\t0.60\tlate\n")
        dir.write("overlap.txt", "0.05\t0.30\tHello\n0.25\t0.45\tworld\n")
        dir.write("broken.json", "{\"words\": [\n  {\"text\": \"a\",, }]}")
        dir.write(
            "lesson.json",
            """
            {"sampleRate": 48000, "channels": 1,
             "clips": {
               "good":      {"file": "good.wav", "timings": "hello.txt", "transcript": "Hello, world!"},
               "misheard":  {"file": "good.wav", "timings": "hello.txt", "transcript": "Hello word"},
               "rate":      {"file": "rate.wav"},
               "stereo":    {"file": "stereo.wav"},
               "silent":    {"file": "silent.wav"},
               "loud":      {"file": "loud.wav"},
               "truncated": {"file": "truncated.wav"},
               "gone":      {"file": "gone.wav"},
               "late":      {"file": "good.wav", "timings": "late.txt"},
               "overlap":   {"file": "good.wav", "timings": "overlap.txt"},
               "spare":     {"file": "good.wav"}
             },
             "chains": {
               "all": [{"clip": "good"}, {"clip": "misheard"}, {"clip": "rate"}, {"clip": "stereo"}, {"clip": "silent"},
                       {"clip": "loud"}, {"clip": "truncated"}, {"clip": "gone"}, {"clip": "late"}, {"clip": "overlap"}],
               "typo": [{"clip": "godo"}]
             }}
            """)
    }

    static let expectedLines = [
        "error: broken.json: line 2, column 16: not valid JSON",
        "error: gone.wav: no such file (clips.gone)",
        "error: hello.txt: clips.misheard: word 1 of the transcript is 'word', the timings say 'world'",
        "error: late.txt: word 1 'late': ends at 0.6 s, past the end of its audio",
        "error: overlap.txt: line 2 'world': overlaps word 0 'Hello', which ends at 0.3 s",
        "error: truncated.wav: truncated",
        "error: lesson.json: chains.typo[0].clip: unknown clip 'godo'",
        "warning: lesson.json: clips.spare: no chain plays this clip",
        "warning: rate.wav: 44100 Hz in a 48000 Hz lesson: resampled each time it loads",
        "warning: stereo.wav: 2 channels in a 1-channel lesson: averaged into one",
        "warning: silent.wav: clips.silent: silent: peak digital silence",
        "warning: loud.wav: clips.loud: clipped: ",
        "warning: loud.wav: clips.loud: true peak +0.1 dBTP, over -1 dBTP",
        "warning: loud.wav: clips.loud: integrated loudness -1.6 LUFS, 8.1 LU above the median of the lesson's 6 voice clips",
        "warning: unused.wav: no lesson uses this audio file",
    ]

    @Test func findsEveryFaultAndExitsOne() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try Self.brokenLibrary(dir)
        let result = try run(Repo.narrator, ["validate", "."], cwd: dir.path)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.isEmpty, "no progress bar when stderr is not a terminal: \(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        for expected in Self.expectedLines {
            #expect(lines.contains { $0.hasPrefix(expected) }, "missing: \(expected)\n\(result.stdout)")
        }
        // Only what was planted: 7 errors (the misheard transcript, not the good one), 8 warnings
        // (the clipped clip is also too loud and peaks over -1 dBTP).
        #expect(lines.filter { $0.hasPrefix("error: ") }.count == 7, "\(result.stdout)")
        #expect(lines.filter { $0.hasPrefix("warning: ") }.count == 8, "\(result.stdout)")
        #expect(!result.stdout.contains("clips.good:"), "the good clip has no finding")
        #expect(lines.contains { $0.hasPrefix("lesson.json ") && $0.split(separator: " ").suffix(4) == ["11", "7", "6", "7"] }, "\(result.stdout)")
        #expect(lines.contains { $0.split(separator: " ") == ["transcript", "1", "0"] })
        #expect(lines.contains { $0.split(separator: " ") == ["unreferenced", "0", "2"] })
        #expect(lines.last?.hasPrefix("7 errors, 8 warnings: 1 lesson, 8 audio files in ") == true, "\(lines.last ?? "")")
    }

    /// The broken library with a second lesson, validated whole and by 2, 3 and 5 workers:
    /// each worker reports its own items (round robin), every finding of the whole run is in
    /// exactly one of them, and the merged reports are the whole run's report, byte for byte.
    @Test func shardedRunsMergeToTheWholeRun() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try Self.brokenLibrary(dir)
        dir.write("second.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "good.wav"}, "b": {"file": "nowhere.wav"}}, "chains": {"c": [{"clip": "a"}, {"clip": "b"}]}}"#)
        let whole = try run(Repo.narrator, ["validate", ".", "--report", "whole.jsonl"], cwd: dir.path)
        #expect(whole.status == 1)
        let wholeReport = try String(contentsOfFile: dir.file("whole.jsonl"), encoding: .utf8)
        let wholeLines = wholeReport.split(separator: "\n").map(String.init)
        let header = try #require(try JSONSerialization.jsonObject(with: Data(wholeLines[0].utf8)) as? [String: Any])
        let items = try #require((header["manifest"] as? [String: Any])?["items"] as? Int)
        // The paths, two lessons, and the seven audio files found.
        #expect(items == 1 + 2 + 7 && wholeLines.count == items + 1, "\(wholeReport)")
        func findings(_ lines: [String]) -> [String] {
            lines.dropFirst().flatMap { line -> [String] in
                let item = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
                return ((item?["findings"] as? [[String: Any]]) ?? []).map { "\($0["severity"]!) \($0["file"]!) \($0["message"]!)" }
            }
        }
        let all = findings(wholeLines)
        #expect(all.count == 7 + 8 + 1, "the broken library's faults and second.json's missing file: \(all)")
        for count in [2, 3, 5] {
            var parts: [String] = []
            var found: [String] = []
            for k in 1...count {
                let part = "part\(k)of\(count).jsonl"
                let result = try run(Repo.narrator, ["validate", ".", "--shard", "\(k)/\(count)", "--report", part], cwd: dir.path)
                let lines = try String(contentsOfFile: dir.file(part), encoding: .utf8).split(separator: "\n").map(String.init)
                let ordinals = lines.dropFirst().map { line in
                    ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["item"] as? Int ?? 0
                }
                #expect(ordinals == Array(stride(from: k, through: items, by: count)), "worker \(k)/\(count): items \(ordinals)")
                let mine = findings(lines)
                #expect(result.status == (mine.contains { $0.hasPrefix("error") } ? 1 : 0), "worker \(k)/\(count) exit status")
                found += mine
                parts.append(part)
            }
            #expect(found.sorted() == all.sorted(), "\(count) workers found what one run found")
            let merged = try run(Repo.narrator, ["merge"] + parts.reversed() + ["--to", "merged\(count).jsonl"], cwd: dir.path)
            #expect(merged.status == 0, "\(merged.stderr)")
            #expect(try String(contentsOfFile: dir.file("merged\(count).jsonl"), encoding: .utf8) == wholeReport, "\(count) workers merged")
        }
        // A worker of another library is refused.
        dir.write("third.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "good.wav"}}, "chains": {"c": [{"clip": "a"}]}}"#)
        _ = try run(Repo.narrator, ["validate", ".", "--shard", "2/2", "--report", "other.jsonl"], cwd: dir.path)
        let mixed = try run(Repo.narrator, ["merge", "part1of2.jsonl", "other.jsonl", "--to", "mixed.jsonl"], cwd: dir.path)
        #expect(mixed.status == 1 && mixed.stderr.contains("another manifest"), "\(mixed.stderr)")
    }

    @Test func jsonForMachines() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try Self.brokenLibrary(dir)
        let result = try run(Repo.narrator, ["validate", "--json", "."], cwd: dir.path)
        #expect(result.status == 1)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(report["errors"] as? Int == 7 && report["warnings"] as? Int == 8)
        let findings = try #require(report["findings"] as? [[String: Any]])
        let checks = findings.map { "\($0["severity"]!) \($0["check"]!)" }.sorted()
        #expect(checks == [
            "error lesson", "error missing", "error timings", "error timings", "error transcript", "error unreadable",
            "error unreadable", "warning channels", "warning clipped", "warning loudness", "warning sample-rate",
            "warning silent", "warning true-peak", "warning unreferenced", "warning unreferenced",
        ])
        let misheard = try #require(findings.first { $0["check"] as? String == "transcript" })
        #expect(misheard["lesson"] as? String == "lesson.json" && misheard["place"] as? String == "clips.misheard")
    }

    @Test func warningsOnlyExitZeroWithAProgressBar() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try Self.brokenLibrary(dir)
        // The lesson alone, with its faulty clips and chain removed: warnings are left.
        dir.write(
            "ok.json",
            #"{"sampleRate": 48000, "clips": {"rate": {"file": "rate.wav"}, "spare": {"file": "good.wav"}}, "chains": {"c": [{"clip": "rate"}]}}"#)
        let result = try run(Repo.narrator, ["validate", "--progress", "ok.json"], cwd: dir.path)
        #expect(result.status == 0, "\(result.stdout)")
        #expect(result.stdout.contains("0 errors, 2 warnings: 1 lesson, 2 audio files"), "\(result.stdout)")
        #expect(result.stderr.hasPrefix("\rvalidating [") && result.stderr.hasSuffix("] 5/5\n"), "\(result.stderr)")
    }

    /// A sprite map's alternatives (a FLAC listed before the WAV) are in use; a transcript on
    /// a clip without words is not checked; a sprite past its audio names the map and sprite.
    @Test func spriteSourcesAreUsedAndWordlessTranscriptsPass() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for ext in ["wav", "flac"] {
            let made = try runTool("sox", ["-D", "-n", "-r", "48000", "-c", "1", dir.file("fx.\(ext)"), "synth", "1", "sine", "440", "vol", "0.5"])
            try #require(made.status == 0, "\(made.stderr)")
        }
        dir.write("fx.json", #"{"src": ["fx.flac", "fx.wav"], "sprite": {"ding": [0, 400], "late": [900, 500]}}"#)
        dir.write(
            "lesson.json",
            #"{"sampleRate": 48000, "clips": {"say": {"file": "fx.wav", "transcript": "ding"}}, "sprites": {"fx": {"map": "fx.json"}}, "chains": {"c": [{"clip": "say"}, {"clip": "fx.ding"}, {"clip": "fx.late"}]}}"#)
        let result = try run(Repo.narrator, ["validate", "."], cwd: dir.path)
        let lines = result.stdout.split(separator: "\n").filter { $0.hasPrefix("error") || $0.hasPrefix("warning") }
        #expect(lines == ["error: fx.json: sprite.late: region ends at 1.4 s, past the end of \(dir.path)/fx.flac (1 s)"], "\(result.stdout)")
        #expect(result.status == 1)
    }

    @Test func sampleLibraryHasNoErrors() throws {
        let result = try run(Repo.narrator, ["validate", "--json", Repo.path("Timings/lessons"), Repo.path("Audio/lessons")])
        #expect(result.status == 0, "\(result.stdout)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(report["errors"] as? Int == 0)
        let findings = try #require(report["findings"] as? [[String: Any]])
        // The app samples are narrated at 8 and 11.025 kHz to keep Audio/ small: that is all.
        #expect(findings.allSatisfy { $0["check"] as? String == "sample-rate" }, "\(findings)")
        #expect((report["lessons"] as? [Any])?.count == 10)
    }

    /// An MP3 without a Xing/LAME header (sox's) plays its encoder's delay and padding: a
    /// warning naming it; the same sound with LAME's header (ffmpeg's default) has none.
    @Test func mp3WithoutGaplessInformationIsAWarning() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let made = try runTool("sox", ["-n", "-r", "44100", "-c", "1", dir.file("tone.wav"), "synth", "1", "sine", "440", "vol", "0.5"])
        try #require(made.status == 0, "\(made.stderr)")
        let plain = try runTool("sox", [dir.file("tone.wav"), dir.file("plain.mp3")])
        let tagged = try runTool("ffmpeg", ["-v", "error", "-i", dir.file("tone.wav"), dir.file("tagged.mp3")])
        try #require(plain.status == 0 && tagged.status == 0, "\(plain.stderr) \(tagged.stderr)")
        try FileManager.default.removeItem(atPath: dir.file("tone.wav"))
        dir.write(
            "lesson.json",
            #"{"sampleRate": 44100, "clips": {"a": {"file": "plain.mp3"}, "b": {"file": "tagged.mp3"}}, "chains": {"c": [{"clip": "a"}, {"clip": "b"}]}}"#)
        let result = try run(Repo.narrator, ["validate", "."], cwd: dir.path)
        #expect(result.status == 0, "a warning, not an error: \(result.stdout)")
        let warnings = result.stdout.split(separator: "\n").filter { $0.hasPrefix("warning") }
        #expect(warnings.count == 1, "\(result.stdout)")
        #expect(warnings.first?.hasPrefix("warning: plain.mp3: an MP3 without gapless information") == true, "\(result.stdout)")
        #expect(warnings.first?.contains("delay and padding") == true)
        #expect(result.stdout.split(separator: "\n").contains { $0.split(separator: " ") == ["gapless", "0", "1"] }, "\(result.stdout)")
    }

    @Test func missingPathIsAnError() throws {
        let result = try run(Repo.narrator, ["validate", "/nonexistent/library"])
        #expect(result.status == 1)
        #expect(result.stdout.hasPrefix("error: /nonexistent/library: no such file"), "\(result.stdout)")
    }

    /// Times a person reads (milliseconds, not 17 digits) and counts that agree with their
    /// noun, in validate's findings and summary.
    @Test func messagesReadAsAPersonWouldWriteThem() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // 0.4 s at 44.1 kHz: 17640 frames, 0.4 s exactly; the word ends at 21292/48000 s.
        let made = try runTool("sox", ["-D", "-n", "-r", "48000", "-c", "1", "-b", "16", dir.file("a.wav"), "synth", "0.4", "sine", "440", "vol", "0.5"])
        try #require(made.status == 0, "\(made.stderr)")
        dir.write("late.txt", "0.1\t0.44358333333333333\thi\n")
        dir.write("short.txt", "0.1\t0.2\thi\n")
        dir.write(
            "lesson.json",
            #"{"sampleRate": 48000, "clips": {"late": {"file": "a.wav", "timings": "late.txt"}, "short": {"file": "a.wav", "timings": "short.txt", "transcript": "hi there"}}, "chains": {"c": [{"clip": "late"}, {"clip": "short"}]}}"#)
        let result = try run(Repo.narrator, ["validate", "."], cwd: dir.path)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("error: late.txt: word 0 'hi': ends at 0.444 s, past the end of its audio \(dir.path)/a.wav (0.4 s)")
            || lines.contains("error: late.txt: word 0 'hi': ends at 0.444 s, past the end of its audio a.wav (0.4 s)"), "\(result.stdout)")
        #expect(lines.contains("error: short.txt: clips.short: the timings end after 1 word; the transcript goes on with 'there'"), "\(result.stdout)")
        #expect(lines.last?.hasPrefix("2 errors, 0 warnings: 1 lesson, 1 audio file in ") == true, "\(result.stdout)")
        #expect(!result.stdout.contains("33333"), "\(result.stdout)")
    }
}

/// The `alignment` check against timings known to the frame (SpokenWords' espeak-ng words laid
/// end to end with known silences), then corrupted on purpose, one fault a timing file: each
/// fault is found at the word where it was made, and the exact timings have none.
@Suite(
    "narrator validate: alignment",
    .requires(PulseTestServer.findExecutable("espeak-ng") != nil && PulseTestServer.findExecutable("sox") != nil, "needs espeak-ng and sox"))
struct ValidateAlignmentTests {
    typealias Words = [(start: Int, end: Int)]
    static let rate = SpokenWords.rate

    static func ms(_ milliseconds: Int) -> Int { milliseconds * rate / 1000 }

    /// Audacity labels, seconds to 7 places (exact frames back at 22050 Hz).
    static func labels(_ words: Words) -> String {
        zip(words, SpokenWords.words).map { word, text in
            String(format: "%.7f\t%.7f\t%@\n", Double(word.start) / Double(rate), Double(word.end) / Double(rate), text)
        }.joined()
    }

    /// The alignment findings, by clip: (word index, line).
    static func findings(_ stdout: String) -> [String: [(word: Int, line: String)]] {
        var result: [String: [(word: Int, line: String)]] = [:]
        for line in stdout.split(separator: "\n").map(String.init) where line.hasPrefix("warning: ") && line.contains(" word ") {
            guard let clip = line.range(of: "clips.")
                .map({ line[$0.upperBound...].prefix { $0 != " " } }),
                let word = line.range(of: " word ").flatMap({ Int(line[$0.upperBound...].prefix { $0.isNumber }) })
            else { continue }
            result[String(clip), default: []].append((word, line))
        }
        return result
    }

    @Test func faultsAreFoundAtTheWordsWhereTheyWereMade() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fixture = try SpokenWords.assemble(speed: 175, in: dir)
        let truth = fixture.truth
        var cases: [(name: String, words: Words)] = [("exact", truth)]
        // "dog" (5) 80 ms late: its sound began in the gap before it.
        var shifted = truth
        shifted[5] = (truth[5].start + Self.ms(80), truth[5].end + Self.ms(80))
        cases.append(("shifted", shifted))
        // Every time 3 % later: a drift.
        cases.append(("stretched", truth.map { ($0.start * 103 / 100, $0.end * 103 / 100) }))
        // "jumps" (9) cut to 30 ms.
        var short = truth
        short[9].end = truth[9].start + Self.ms(30)
        cases.append(("short", short))
        // The boundary between "big" (3) and "brown" (4) moved 60 ms into big's sound, brown
        // starting there: brown is padded with big's sound and the silence after it.
        var moved = truth
        moved[3].end = truth[3].end - Self.ms(60)
        moved[4].start = moved[3].end
        cases.append(("moved", moved))
        // "it" (6) placed in the 320 ms silence before it.
        var silent = truth
        silent[6] = (truth[5].end + Self.ms(50), truth[5].end + Self.ms(250))
        cases.append(("silent", silent))

        for (name, words) in cases { dir.write("\(name).txt", Self.labels(words)) }
        let audio = URL(fileURLWithPath: fixture.path).lastPathComponent
        var clips = cases.map { "\"\($0.name)\": {\"file\": \"\(audio)\", \"timings\": \"\($0.name).txt\"}" }.joined(separator: ", ")
        // A steady tone as long as the speech, timed with the same words: nothing in it stands
        // out from its floor, so where words are cannot be told, and nothing is claimed.
        let seconds = String(format: "%.6f", Double(fixture.frames) / Double(Self.rate))
        let tone = try runTool("sox", ["-D", "-n", "-r", "\(Self.rate)", "-c", "1", "-b", "16", dir.file("tone.wav"), "synth", seconds, "sine", "440", "vol", "0.3"])
        try #require(tone.status == 0, "\(tone.stderr)")
        clips += ", \"tone\": {\"file\": \"tone.wav\", \"timings\": \"exact.txt\"}"
        cases.append(("tone", truth))
        let chain = cases.map { "{\"clip\": \"\($0.name)\"}" }.joined(separator: ", ")
        dir.write("lesson.json", "{\"sampleRate\": \(Self.rate), \"clips\": {\(clips)}, \"chains\": {\"all\": [\(chain)]}}")

        let result = try run(Repo.narrator, ["validate", "lesson.json"], cwd: dir.path)
        #expect(result.status == 0, "warnings only: \(result.stdout)")
        let found = Self.findings(result.stdout)
        print("validate alignment:\n\(result.stdout)")
        #expect(found["exact"] == nil && found["tone"] == nil, "\(result.stdout)")
        func only(_ clip: String, word: Int, saying: [String]) {
            let mine = found[clip] ?? []
            #expect(!mine.isEmpty && mine.allSatisfy { $0.word == word }, "\(clip): \(mine.map(\.line))")
            for text in saying {
                #expect(mine.contains { $0.line.contains(text) }, "\(clip): no '\(text)' in \(mine.map(\.line))")
            }
        }
        only("shifted", word: 5, saying: ["shifted.txt: clips.shifted word 5 'dog': starts inside its sound: the sound began 0.08 s before its start"])
        only("short", word: 9, saying: ["short.txt: clips.short word 9 'jumps': lasts 0.03 s, shorter", "ends inside its sound"])
        only("moved", word: 3, saying: ["moved.txt: clips.moved word 3 'big': ends inside its sound: the sound goes on 0.06", "into word 4 'brown', which has a pause before its own sound"])
        only("silent", word: 6, saying: ["silent.txt: clips.silent word 6 'it': mostly silence: 0 % of its 0.2 s sounds"])
        // The drift is named at the first word whose stretched start is 50 ms further from its
        // sound than the first word's (offset −3/103 of the time).
        let first = Double(truth[0].start * 103 / 100)
        let expected = try #require(truth.indices.first { Double(truth[$0].start * 103 / 100 - Int(first)) * 3 / 103 > 0.050 * Double(Self.rate) })
        only("stretched", word: expected, saying: ["the timings drift from the audio: its word onsets move -29 ms a second"])
        #expect(found["stretched"]?.count == 1)
    }
}
