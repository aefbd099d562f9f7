import Foundation
import NarratorCore
import NarratorTestSupport
import Testing

/// Importing the timing files aligners and subtitle tools write, and exporting what web players
/// read. The samples (Timings/fixtures/formats, written by scripts/make-fixtures.py from each
/// format's specification) come with truth files: the frames the printed times mean, computed
/// in exact decimal arithmetic by the script, not by the code under test.
@Suite("Timing formats")
struct TimingFormatTests {
    static let folder = Repo.path("Timings/fixtures/formats")

    struct Truth: Decodable {
        struct Word: Decodable, Equatable {
            let text: String
            let startFrame: Int
            let endFrame: Int
        }
        let sampleRate: Int
        let words: [Word]
    }

    static func truth(_ name: String) throws -> [Truth.Word] {
        try JSONDecoder().decode(Truth.self, from: Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))).words
    }

    static func words(_ timings: [WordTiming]) -> [Truth.Word] {
        timings.map { Truth.Word(text: $0.text, startFrame: $0.startFrame, endFrame: $0.endFrame) }
    }

    static let samples: [(file: String, format: TimingFormat, truth: String)] = [
        ("sentence.srt", .srt, "sentence.srt.truth.json"),
        ("sentence.TextGrid", .textgrid, "sentence.TextGrid.truth.json"),
        ("sentence.short.TextGrid", .textgrid, "sentence.TextGrid.truth.json"),
        ("sentence.aeneas.json", .aeneasJSON, "sentence.aeneas.truth.json"),
        ("sentence.csv", .aeneasCSV, "sentence.aeneas.truth.json"),
        ("sentence.tsv", .aeneasTSV, "sentence.tsv.truth.json"),
        ("sentence.aeneas.smil", .smil, "sentence.aeneas.truth.json"),
        ("sentence.gentle.json", .gentle, "sentence.gentle.truth.json"),
        ("epub/chapter.smil", .smil, "epub/chapter.smil.truth.json"),
    ]

    @Test(arguments: samples.map(\.file))
    func importsToTheFrame(file: String) throws {
        let sample = try #require(Self.samples.first { $0.file == file })
        let imported = try WordTimings.read(path: Self.folder + "/" + file, rate: 48000)
        #expect(imported.format == sample.format)
        #expect(Self.words(imported.words) == (try Self.truth(sample.truth)))
    }

    @Test func gentleWordsNotFoundAreSkippedAndReported() throws {
        let imported = try WordTimings.read(path: Self.folder + "/sentence.gentle.json", rate: 48000)
        #expect(!imported.words.contains { $0.text == "indeed" })
        #expect(imported.notes.count == 1 && imported.notes[0].contains("'indeed' (not-found-in-audio)"), "\(imported.notes)")
    }

    @Test func smilTextComesFromItsPageOrTheID() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // The same SMIL without its XHTML page: the words are named by their ids, with a note.
        let smil = try String(contentsOfFile: Self.folder + "/sentence.aeneas.smil", encoding: .utf8)
        let imported = try WordTimings.read(path: dir.write("alone.smil", smil), rate: 48000)
        #expect(imported.words.map(\.text) == (1...7).map { String(format: "f%06d", $0) })
        #expect(imported.notes.count == 1 && imported.notes[0].contains("sentence.xhtml: not found"))
    }

    /// Import → export → import gives the same frames wherever the written format holds them:
    /// JSON, Audacity labels and SMIL (microseconds) always; SRT and WebVTT (milliseconds) when the source's
    /// times were whole milliseconds, and within half a millisecond otherwise.
    @Test(arguments: samples.map(\.file))
    func roundTripsToTheFrame(file: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let source = try WordTimings.read(path: Self.folder + "/" + file, rate: 48000)
        let wholeMilliseconds = source.words.allSatisfy { $0.startFrame % 48 == 0 && $0.endFrame % 48 == 0 }
        for ext in ["json", "txt", "smil", "vtt", "srt"] {
            let path = dir.file("out." + ext)
            try WordTimings.write(source.words, rate: 48000, to: path)
            let back = try WordTimings.read(path: path, rate: 48000)
            #expect(back.words.map(\.text) == source.words.map(\.text), "\(file) → .\(ext)")
            if ext == "json" || ext == "txt" || ext == "smil" || wholeMilliseconds {
                #expect(Self.words(back.words) == Self.words(source.words), "\(file) → .\(ext)")
            } else {
                for (a, b) in zip(back.words, source.words) {
                    #expect(abs(a.startFrame - b.startFrame) <= 24 && abs(a.endFrame - b.endFrame) <= 24, "\(file) → .\(ext): \(a) vs \(b)")
                }
            }
        }
    }

    /// The WebVTT written is what web players read: karaoke timestamps inside cues, pauses
    /// marked where a word ends.
    @Test func webVTTHasKaraokeTimestamps() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let source = try WordTimings.read(path: Self.folder + "/sentence.srt", rate: 48000)
        try WordTimings.write(source.words, rate: 48000, to: dir.file("out.vtt"))
        let vtt = try String(contentsOfFile: dir.file("out.vtt"), encoding: .utf8)
        #expect(vtt.hasPrefix("WEBVTT\n\n1\n00:00:00.100 --> "))
        // "red" starts at 0.449 s (frame 21552), after a pause from 0.399 s.
        #expect(vtt.contains("a <00:00:00.399> <00:00:00.449>red"), "\(vtt)")
    }

    @Test func smilExportWritesItsPage() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let source = try WordTimings.read(path: Self.folder + "/sentence.TextGrid", rate: 48000)
        try WordTimings.write(source.words, rate: 48000, to: dir.file("clip.smil"), audio: "clip.wav")
        let smil = try String(contentsOfFile: dir.file("clip.smil"), encoding: .utf8)
        let page = try String(contentsOfFile: dir.file("clip.xhtml"), encoding: .utf8)
        let apple = try Self.truth("sentence.TextGrid.truth.json")[2]
        let begin = String(format: "%.6fs", Double(apple.startFrame) / 48000)
        #expect(smil.contains(#"<text src="clip.xhtml#w0003"/>"#) && smil.contains(#"src="clip.wav" clipBegin="\#(begin)""#), "\(smil)")
        #expect(page.contains(#"<span id="w0003">apple</span>"#))
    }

    /// Each malformed input: one error naming the file and the place.
    @Test(arguments: [
        ("bad.srt", "1\n00:00:01,000 -> 00:00:02,000\nhi\n", "line 1: expected a cue"),
        ("bad2.srt", "1\n00:00:01,000 --> 00:00:0x,000\nhi\n", "line 2: bad cue timing line"),
        ("bad.TextGrid", "File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\n0\n1\n<exists>\n2\n\"IntervalTier\"\n\"phones\"\n0\n1\n1\n0\n1\n\"a\"\n\"IntervalTier\"\n\"syllables\"\n0\n1\n1\n0\n1\n\"a\"\n", "no interval tier named 'words' (tiers: 'phones', 'syllables')"),
        ("cut.TextGrid", "File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\n0\n1\n<exists>\n1\n\"IntervalTier\"\n\"words\"\n0\n1\n2\n0\n0.5\n\"a\"\n0.5\n", "line 12: announces 2 intervals, but the rest of the file holds at most 1"),
        ("quote.TextGrid", "File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\n0\n1\n<exists>\n1\n\"IntervalTier\"\n\"words\n", "line 9: unclosed quoted text"),
        ("bad.csv", "f1,0.0,0.5,\"a\nf2,0.5,1.0,\"b\"\n", "line 1: expected id,begin,end"),
        ("bad.json", #"{"fragments": [{"begin": "zero", "end": "1.0", "lines": ["a"]}]}"#, "fragments[0].begin: expected seconds, got 'zero'"),
        ("gentle.json", #"{"transcript": "a", "words": [{"word": "a", "case": "success", "end": 1.0}]}"#, "words[0].start: missing key"),
        ("bad.smil", "<smil><body><par><text src=\"p.xhtml#a\"/><audio clipBegin=\"1s\"/></par></body></smil>", "line 1: <audio> needs clipBegin and clipEnd"),
        ("clock.smil", "<smil><body><par><text src=\"p.xhtml#a\"/><audio clipBegin=\"1s\" clipEnd=\"soon\"/></par></body></smil>", "bad clock value"),
        ("broken.smil", "<smil><body x=1></body></smil>", "line 1: not well-formed XML"),
        ("order.srt", "1\n00:00:02,000 --> 00:00:03,000\nb\n\n2\n00:00:01,000 --> 00:00:01,500\na\n", "line 6 'a': out of order"),
        ("x.ass", "whatever", "unknown timing format '.ass'"),
    ])
    func malformedInputNamesTheFileAndPlace(name: String, content: String, expected: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.write(name, content)
        do {
            _ = try WordTimings.read(path: path, rate: 48000)
            Issue.record("\(name) was accepted")
        } catch {
            #expect(error.description.hasPrefix(path + ": "), "\(error.description)")
            #expect(error.description.contains(expected), "\(error.description)")
            #expect(!error.description.contains("\n"))
        }
    }
}
