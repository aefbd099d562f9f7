import Foundation
import NarratorTestSupport
import Testing

/// `narrator timings convert` end to end.
@Suite("timings convert")
struct TimingsCommandTests {
    static let folder = Repo.path("Timings/fixtures/formats")

    @Test func convertsAndReportsWhatItSkipped() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try run(Repo.narrator, ["timings", "convert", Self.folder + "/sentence.gentle.json", dir.file("out.vtt")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("(gentle): 7 words → "))
        #expect(result.stderr.contains("'indeed' (not-found-in-audio)") && result.stderr.split(separator: "\n").count == 1)
        #expect(try String(contentsOfFile: dir.file("out.vtt"), encoding: .utf8).hasPrefix("WEBVTT"))
    }

    /// WAV cue points with their labl labels, listed out of order in the file, at 22.05 kHz:
    /// the words at 48 kHz equal the truth the fixture script computed from the chunk it wrote.
    @Test func wavCueMarkersBecomeWords() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try run(Repo.narrator, ["timings", "convert", Repo.path("Audio/fixtures/markers-22050.wav"), dir.file("out.json")])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("(markers): 3 words → "))
        let truth = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Repo.path("Timings/fixtures/markers.truth.json")))) as? [String: Any])
        let expected = try #require(truth["words"] as? [[String: Any]]).map { "\($0["text"]!)@\($0["start"]!)-\($0["end"]!)" }
        let written = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("out.json")))) as? [String: Any])
        let got = try #require(written["words"] as? [[String: Any]]).map { word in
            let start = Int(((word["start"] as! Double) * 48000).rounded()), end = Int(((word["end"] as! Double) * 48000).rounded())
            return "\(word["text"]!)@\(start)-\(end)"
        }
        #expect(got == expected)

        // The same markers as a lesson clip's words: word cues at the same frames.
        let lesson = dir.write(
            "lesson.json",
            #"{"sampleRate": 48000, "clips": {"m": {"file": "\#(Repo.path("Audio/fixtures/markers-22050.wav"))", "markers": "words"}}, "chains": {"c": [{"clip": "m"}]}}"#)
        let cues = try run(Repo.narrator, ["cues", lesson, "--chain", "c"])
        #expect(cues.status == 0, "\(cues.stderr)")
        let sheet = try #require(try JSONSerialization.jsonObject(with: Data(cues.stdout.utf8)) as? [String: Any])
        let words = try #require(sheet["cues"] as? [[String: Any]]).filter { $0["type"] as? String == "word" }
        #expect(words.map { "\($0["text"]!)@\($0["frame"]!)-\($0["endFrame"]!)" } == expected)

        let none = try run(Repo.narrator, ["timings", "convert", Repo.path("Audio/fixtures/impulses-48000.wav"), dir.file("none.json")])
        #expect(none.status == 1 && none.stderr.hasSuffix("impulses-48000.wav: holds no labelled cue markers\n"), "\(none.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("none.json")))
    }

    @Test func badInputGivesOneLineAndNoOutput() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let input = dir.write("bad.srt", "1\n00:00:01,000 --> 00:00:00,500\nbackwards\n")
        let result = try run(Repo.narrator, ["timings", "convert", input, dir.file("out.json")])
        #expect(result.status == 1)
        #expect(result.stderr == "narrator: \(input): line 2 'backwards': ends (0.5 s) before it starts (1 s)\n", "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("out.json")))
        let unknown = try run(Repo.narrator, ["timings", "convert", Self.folder + "/sentence.srt", dir.file("out.ass")])
        #expect(unknown.status == 1 && unknown.stderr.contains("cannot write '.ass'"))
    }

    /// The inputs that killed the process (a TextGrid count no Int holds, bytes Foundation's
    /// XMLParser dies on) and their relatives, as files through the command: exit 1, one line
    /// naming the file and the place, nothing written.
    @Test func hostileFilesGiveOneLine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        func grid(_ tiers: String, _ intervals: String) -> Data {
            Data("File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\n0\n1\n<exists>\n\(tiers)\n\"IntervalTier\"\n\"words\"\n0\n1\n\(intervals)\n0\n1\n\"a\"\n".utf8)
        }
        func bytes(_ parts: [Any]) -> Data {
            var data = Data()
            for part in parts { if let text = part as? String { data.append(contentsOf: Array(text.utf8)) } else { data.append(contentsOf: (part as? [UInt8]) ?? (part as! [Int]).map { UInt8($0) }) } }
            return data
        }
        let smil = #"<smil><body><par><text src="p.xhtml#a"/><audio clipBegin="0s" clipEnd="1s"/></par></body></smil>"#
        var laughs = "<!DOCTYPE smil [<!ENTITY l0 \"ha\">"
        for level in 1...20 { laughs += "<!ENTITY l\(level) \"" + String(repeating: "&l\(level - 1);", count: 10) + "\">" }
        laughs += "]>\n<smil>&l20;</smil>"
        let cases: [(name: String, data: Data, expected: String)] = [
            ("tiers.TextGrid", grid("1e30", "1"), "line 7: announces 1e+30 tiers, but the rest of the file holds at most 1"),
            ("tiers64.TextGrid", grid("18446744073709551616", "1"), "line 7: announces 1.8446744073709552e+19 tiers"),
            ("intervals.TextGrid", grid("1", "1e30"), "line 12: announces 1e+30 intervals, but the rest of the file holds at most 1"),
            ("intervals64.TextGrid", grid("1", "18446744073709551616"), "line 12: announces 1.8446744073709552e+19 intervals"),
            ("name.smil", bytes(["<smil><body><par><aud", [0xE1], "o/></par></body></smil>"]), "line 1, column 22: not UTF-8 (byte 0xE1)"),
            ("pi.smil", bytes(["<?p", [0xE1], " x?>"]), "line 1, column 4: not UTF-8 (byte 0xE1)"),
            ("attribute.smil", bytes(["<smil ", [0xE1], "=\"1\"/>"]), "line 1, column 7: not UTF-8 (byte 0xE1)"),
            ("nul.smil", bytes(["<smil>", [0], "</smil>"]), "line 1, column 7: U+0000, a character XML does not allow"),
            ("laughs.smil", Data(laughs.utf8), "line 1: a DOCTYPE with declarations"),
            ("deep.smil", Data(("<smil>" + String(repeating: "<seq>", count: 50_000)).utf8), "line 1: "),
            ("open.smil", Data("<smil><body>".utf8), "line 1: not well-formed XML"),
            ("clock.srt", Data("1\n9223372036854775807:00:00,000 --> 00:00:01,000\na\n".utf8), "line 2: bad cue timing line"),
            ("nan.txt", Data("nan\t1\ta\n".utf8), "line 1 'a': starts at nan, not a time"),
        ]
        for item in cases {
            let input = dir.write(item.name, data: item.data)
            let result = try run(Repo.narrator, ["timings", "convert", input, dir.file("out.json")])
            #expect(result.status == 1, "\(item.name): \(result.stderr)")
            #expect(result.stderr.hasPrefix("narrator: \(input): \(item.expected)"), "\(item.name): \(result.stderr)")
            #expect(result.stderr.filter { $0 == "\n" }.count == 1 && result.stderr.hasSuffix("\n"), "\(item.name): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.file("out.json")))
        }
        // The page a SMIL file names, with the bad name: the error names the page.
        let page = dir.write("p.xhtml", data: bytes(["<html><body><sp", [0xE1], "n id=\"a\">a</span></body></html>"]))
        let input = dir.write("page.smil", smil)
        let result = try run(Repo.narrator, ["timings", "convert", input, dir.file("out.json")])
        #expect(result.status == 1 && result.stderr == "narrator: \(page): line 1, column 16: not UTF-8 (byte 0xE1): SMIL and XHTML files are UTF-8 or UTF-16\n", "\(result.stderr)")
    }

    /// Words with markup characters through SRT and back as the command writes and reads them.
    @Test func srtRoundTripKeepsMarkupCharacters() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let texts = ["<Jerry>", "Tom & Jerry", "a<b>c", "\"hi\"", "{\\an8}", "naïve 🙂", "1 < 2"]
        let words = texts.enumerated().map { #"{"text": \#(String(decoding: try! JSONEncoder().encode($1), as: UTF8.self)), "start": \#($0), "end": \#(Double($0) + 0.5)}"# }
        let source = dir.write("in.json", #"{"words": ["# + words.joined(separator: ", ") + "]}")
        let toSRT = try run(Repo.narrator, ["timings", "convert", source, dir.file("mid.srt")])
        #expect(toSRT.status == 0 && toSRT.stdout.contains("(json): 7 words → "), "\(toSRT.stderr)")
        let srt = try String(contentsOfFile: dir.file("mid.srt"), encoding: .utf8)
        #expect(srt.contains("\n&lt;Jerry&gt;\n") && srt.contains("\nTom &amp; Jerry\n") && srt.contains("\n&#123;\\an8}\n"), "\(srt)")
        let back = try run(Repo.narrator, ["timings", "convert", dir.file("mid.srt"), dir.file("back.json")])
        #expect(back.status == 0, "\(back.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("back.json")))) as? [String: Any])
        let read = try #require(json["words"] as? [[String: Any]])
        #expect(read.map { $0["text"] as? String } == texts)
        #expect(read.map { $0["start"] as? Double } == (0..<7).map { Double($0) })

        // One word: "1 word", not "1 words".
        let one = dir.write("one.txt", "0\t1\tsolo\n")
        let single = try run(Repo.narrator, ["timings", "convert", one, dir.file("one.json")])
        #expect(single.stdout.contains("(audacity): 1 word → "), "\(single.stdout)")
    }
}
