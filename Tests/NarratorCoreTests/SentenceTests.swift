import Foundation
import NarratorTestSupport
import Testing

@testable import NarratorCore
@testable import NarratorEngine

/// Sentences from every timing format, what a region keeps of them, their cues' place in the
/// schedule, and the lookups seek and resume use. Fixtures are written here with times that
/// are whole milliseconds, so the frames at 48 kHz are known exactly (0.5 s = 24000).
@Suite("Sentences")
struct SentenceTests {
    typealias S = SentenceTiming

    /// Reads `text` as the file `name` in a fresh folder (with `others` beside it).
    static func read(_ name: String, _ text: String, others: [String: String] = [:]) throws -> TimingImport {
        let dir = TempDir()
        defer { dir.remove() }
        for (file, body) in others { try body.write(toFile: dir.file(file), atomically: true, encoding: .utf8) }
        try text.write(toFile: dir.file(name), atomically: true, encoding: .utf8)
        return try WordTimings.read(path: dir.file(name), rate: 48000)
    }

    /// The error `read` gives, as one line.
    static func failure(_ name: String, _ text: String) -> String? {
        do {
            _ = try read(name, text)
            return nil
        } catch let error as NarratorError {
            return error.description
        } catch {
            return "\(error)"
        }
    }

    // "Hello Tom" has no full stop and "Mr." has one: punctuation alone would group these words
    // as "Hello Tom Mr." and "Smith came."; the file's own grouping says otherwise.
    static let grouped = [
        S(index: 0, words: 0...1, text: "Hello Tom", startFrame: 24000, endFrame: 72000),
        S(index: 1, words: 2...4, text: "Mr. Smith came.", startFrame: 96000, endFrame: 168000),
    ]

    @Test func webVTTCuesAreSentences() throws {
        let vtt = """
            WEBVTT

            1
            00:00:00.500 --> 00:00:01.500
            Hello <00:00:01.000>Tom

            2
            00:00:02.000 --> 00:00:03.500
            <v Ann>Mr. <00:00:02.500>Smith <00:00:03.000>came.

            """
        let imported = try Self.read("t.vtt", vtt)
        #expect(imported.words.map(\.text) == ["Hello", "Tom", "Mr.", "Smith", "came."])
        #expect(imported.sentences == Self.grouped)
    }

    @Test func webVTTWithOneWordPerCueFallsBackToPunctuation() throws {
        let vtt = "WEBVTT\n\n00:00:00.500 --> 00:00:01.000\nOne.\n\n00:00:01.000 --> 00:00:01.500\nTwo\n\n00:00:01.500 --> 00:00:02.000\nthree!\n"
        #expect(try Self.read("t.vtt", vtt).sentences == [
            S(index: 0, words: 0...0, text: "One.", startFrame: 24000, endFrame: 48000),
            S(index: 1, words: 1...2, text: "Two three!", startFrame: 48000, endFrame: 96000),
        ])
    }

    static let page = """
        <?xml version="1.0" encoding="UTF-8"?>
        <html xmlns="http://www.w3.org/1999/xhtml"><body>
          <p><span class="read sentence"><span id="w1">Hello</span> <span id="w2">Tom</span></span>
             <span class="sentence"><span id="w3">Mr.</span> <span id="w4">Smith</span> <span id="w5">came.</span></span></p>
        </body></html>
        """

    /// Pars naming `ids` in the page, at the times of the five words of `grouped`.
    static func pars(_ ids: [String], from first: Int = 0) -> String {
        let times = [(0.5, 1.0), (1.0, 1.5), (2.0, 2.5), (2.5, 3.0), (3.0, 3.5)][first...]
        return zip(ids, times).map { id, time in
            #"<par><text src="p.xhtml#\#(id)"/><audio src="a.wav" clipBegin="\#(time.0)s" clipEnd="\#(time.1)s"/></par>"#
        }.joined(separator: "\n")
    }

    @Test func smilWordsOfASentenceElementAreASentence() throws {
        let smil = """
            <smil xmlns="http://www.w3.org/ns/SMIL" xmlns:epub="http://www.idpf.org/2007/ops" version="3.0"><body>
            <seq epub:textref="p.xhtml">
            \(Self.pars(["w1", "w2", "w3", "w4", "w5"]))
            </seq></body></smil>
            """
        #expect(try Self.read("t.smil", smil, others: ["p.xhtml": Self.page]).sentences == Self.grouped)
    }

    @Test func smilParsOfASeqNamingAnElementAreASentence() throws {
        let plain = Self.page.replacingOccurrences(of: #" class="read sentence""#, with: "").replacingOccurrences(of: #" class="sentence""#, with: "")
        let smil = """
            <smil xmlns="http://www.w3.org/ns/SMIL" xmlns:epub="http://www.idpf.org/2007/ops" version="3.0"><body>
            <seq epub:textref="p.xhtml"><seq epub:textref="p.xhtml#s1">
            \(Self.pars(["w1", "w2"]))
            </seq>
            <seq epub:textref="p.xhtml#s2">
            \(Self.pars(["w3", "w4", "w5"], from: 2))
            </seq></seq></body></smil>
            """
        let imported = try Self.read("t.smil", smil, others: ["p.xhtml": plain])
        #expect(imported.words.map(\.startFrame) == [24000, 48000, 96000, 120000, 144000])
        #expect(imported.sentences == Self.grouped)
        // Without the inner seqs, nothing groups the words: punctuation splits after "Mr.".
        let flat = """
            <smil xmlns="http://www.w3.org/ns/SMIL" version="3.0"><body><seq>
            \(Self.pars(["w1", "w2", "w3", "w4", "w5"]))
            </seq></body></smil>
            """
        #expect(try Self.read("t.smil", flat, others: ["p.xhtml": plain]).sentences.map(\.text) == ["Hello Tom Mr.", "Smith came."])
    }

    /// Pars that come back to a sentence they left (out of page order): a sentence is
    /// consecutive words, so each run is one.
    @Test func smilSentenceElementsInterleavedGiveOneSentencePerRun() throws {
        let smil = """
            <smil xmlns="http://www.w3.org/ns/SMIL" version="3.0"><body><seq>
            \(Self.pars(["w1", "w3", "w2", "w4", "w5"]))
            </seq></body></smil>
            """
        let sentences = try Self.read("t.smil", smil, others: ["p.xhtml": Self.page]).sentences
        #expect(sentences.map(\.text) == ["Hello", "Mr.", "Tom", "Smith came."])
        #expect(sentences.map(\.words) == [0...0, 1...1, 2...2, 3...4])
    }

    /// SMIL written with the sentences reads back with them: the page wraps each sentence's
    /// words in `<span class="sentence">` ("Mr." inside one, which punctuation would split).
    @Test func smilWrittenWithSentencesReadsThemBack() throws {
        let grid = Self.textGrid(words: Self.gridWords, phrases: [(0, 1.5, "a"), (1.5, 3.5, "b")])
        let source = try Self.read("t.TextGrid", grid)
        let dir = TempDir()
        defer { dir.remove() }
        try WordTimings.write(source.words, rate: 48000, to: dir.file("out.smil"), audio: "a.wav", sentences: source.sentences)
        let page = try String(contentsOfFile: dir.file("out.xhtml"), encoding: .utf8)
        #expect(page.contains(#"<p><span class="sentence"><span id="w0001">Hello</span> <span id="w0002">Tom</span></span> <span class="sentence"><span id="w0003">Mr.</span>"#), "\(page)")
        let back = try WordTimings.read(path: dir.file("out.smil"), rate: 48000)
        #expect(back.words == source.words && back.sentences == Self.grouped)
        // Without sentences, the page is as before: no sentence elements.
        try WordTimings.write(source.words, rate: 48000, to: dir.file("plain.smil"), audio: "a.wav")
        #expect(!(try String(contentsOfFile: dir.file("plain.xhtml"), encoding: .utf8)).contains("sentence"))
    }

    /// WebVTT written with the sentences: a cue per sentence (each short and without a pause
    /// here), read back as the same sentences; without them, "Mr." ends a cue.
    @Test func webVTTWrittenWithSentencesReadsThemBack() throws {
        let grid = Self.textGrid(words: Self.gridWords, phrases: [(0, 1.5, "a"), (1.5, 3.5, "b")])
        let source = try Self.read("t.TextGrid", grid)
        let dir = TempDir()
        defer { dir.remove() }
        try WordTimings.write(source.words, rate: 48000, to: dir.file("out.vtt"), sentences: source.sentences)
        let vtt = try String(contentsOfFile: dir.file("out.vtt"), encoding: .utf8)
        #expect(vtt == "WEBVTT\n\n1\n00:00:00.500 --> 00:00:01.500\nHello <00:00:01.000>Tom\n\n2\n00:00:02.000 --> 00:00:03.500\nMr. <00:00:02.500>Smith <00:00:03.000>came.\n\n", "\(vtt)")
        let back = try WordTimings.read(path: dir.file("out.vtt"), rate: 48000)
        #expect(back.words == source.words && back.sentences == Self.grouped)
        try WordTimings.write(source.words, rate: 48000, to: dir.file("plain.vtt"))
        #expect(try WordTimings.read(path: dir.file("plain.vtt"), rate: 48000).sentences.map(\.text) == ["Hello Tom", "Mr.", "Smith came."])
    }

    /// A TextGrid (short text format) with a `words` tier and a phrase tier.
    static func textGrid(
        words: [(Double, Double, String)], phrases: [(Double, Double, String)], phraseTier: String = "phrases", end: Double = 3.5
    ) -> String {
        func tier(_ name: String, _ intervals: [(Double, Double, String)]) -> String {
            "\"IntervalTier\"\n\"\(name)\"\n0\n\(end)\n\(intervals.count)\n" + intervals.map { "\($0.0)\n\($0.1)\n\"\($0.2)\"\n" }.joined()
        }
        return "File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\n0\n\(end)\n<exists>\n2\n" + tier("words", words) + tier(phraseTier, phrases)
    }

    static let gridWords: [(Double, Double, String)] = [
        (0, 0.5, ""), (0.5, 1, "Hello"), (1, 1.5, "Tom"), (1.5, 2, ""), (2, 2.5, "Mr."), (2.5, 3, "Smith"), (3, 3.5, "came."),
    ]

    @Test func textGridPhraseTierGroupsTheWords() throws {
        let grid = Self.textGrid(words: Self.gridWords, phrases: [(0, 0.5, ""), (0.5, 1.5, "Hello Tom"), (1.5, 2, ""), (2, 3.5, "Mr. Smith came.")])
        #expect(try Self.read("t.TextGrid", grid).sentences == Self.grouped)
        // The tier is found by its name in any case; a tier of another name groups nothing.
        let upper = Self.textGrid(words: Self.gridWords, phrases: [(0, 1.5, "a"), (1.5, 3.5, "b")], phraseTier: "Sentences")
        #expect(try Self.read("t.TextGrid", upper).sentences == Self.grouped)
        let other = Self.textGrid(words: Self.gridWords, phrases: [(0, 1.5, "a"), (1.5, 3.5, "b")], phraseTier: "notes")
        #expect(try Self.read("t.TextGrid", other).sentences.map(\.text) == ["Hello Tom Mr.", "Smith came."])
    }

    @Test func textGridPhrasesThatDoNotHoldTheWordsAreOneLineErrors() throws {
        // "Tom" (1 to 1.5 s) straddles the phrase boundary at 1.2 s.
        let straddle = Self.textGrid(words: Self.gridWords, phrases: [(0, 1.2, "Hello"), (1.2, 3.5, "Tom Mr. Smith came.")])
        let message = try #require(Self.failure("t.TextGrid", straddle))
        #expect(message.hasSuffix("interval 3 'Tom': (1 s to 1.5 s) is not inside an interval of tier 'phrases'"), "\(message)")
        #expect(!message.contains("\n"))
        // A word in a pause of the phrase tier (an empty interval is no phrase).
        let pause = Self.textGrid(words: Self.gridWords, phrases: [(0, 1.5, "Hello Tom"), (1.5, 2.5, ""), (2.5, 3.5, "Smith came.")])
        #expect(Self.failure("t.TextGrid", pause)?.contains("interval 5 'Mr.': (2 s to 2.5 s) is not inside an interval of tier 'phrases'") == true)
        // Overlapping phrases.
        let overlap = Self.textGrid(words: Self.gridWords, phrases: [(0, 2.5, "Hello Tom Mr."), (2, 3.5, "Mr. Smith came.")])
        let overlapping = try #require(Self.failure("t.TextGrid", overlap))
        #expect(overlapping.contains("tier 'phrases' interval 2 'Mr. Smith came.': overlaps the interval before it in tier 'phrases', which ends at"), "\(overlapping)")
        // Phrases past the words and before them.
        let early = Self.textGrid(words: Self.gridWords, phrases: [(0, 0.4, "x")])
        #expect(Self.failure("t.TextGrid", early)?.contains("interval 2 'Hello': (0.5 s to 1 s) is not inside") == true)
        let backwards = Self.textGrid(words: Self.gridWords, phrases: [(1.5, 0.5, "x")])
        #expect(Self.failure("t.TextGrid", backwards)?.contains("ends (0.5 s) before it starts (1.5 s)") == true)
        let huge = Self.textGrid(words: Self.gridWords, phrases: [(0, 1e300, "x")])
        #expect(Self.failure("t.TextGrid", huge)?.contains("beyond any audio") == true)
    }

    /// A file whose one tier is named like a phrase tier: its intervals are the words, as before.
    @Test func textGridWhoseOnlyTierIsNamedSentences() throws {
        let grid = "File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\n0\n1\n<exists>\n1\n\"IntervalTier\"\n\"sentences\"\n0\n1\n2\n0\n0.5\n\"Hi.\"\n0.5\n1\n\"Bye.\"\n"
        let imported = try Self.read("t.TextGrid", grid)
        #expect(imported.words.map(\.text) == ["Hi.", "Bye."])
        #expect(imported.sentences.map(\.words) == [0...0, 1...1])
    }

    // MARK: Punctuation

    static let punctuated = [
        S(index: 0, words: 0...0, text: "\"Stop!\"", startFrame: 24000, endFrame: 48000),
        S(index: 1, words: 1...2, text: "he said.", startFrame: 48000, endFrame: 96000),
        S(index: 2, words: 3...3, text: "Why?”)", startFrame: 96000, endFrame: 120000),
        S(index: 3, words: 4...4, text: "OK", startFrame: 120000, endFrame: 144000),
    ]
    static let punctuatedWords: [(Double, Double, String)] = [(0.5, 1, "\"Stop!\""), (1, 1.5, "he"), (1.5, 2, "said."), (2, 2.5, "Why?”)"), (2.5, 3, "OK")]

    @Test func audacityLabelsSplitByPunctuation() throws {
        let labels = Self.punctuatedWords.map { "\($0.0)\t\($0.1)\t\($0.2)\n" }.joined()
        #expect(try Self.read("t.txt", labels).sentences == Self.punctuated)
    }

    @Test func jsonSplitsByPunctuationAndLeavesEmptyTextsOut() throws {
        let json = #"{"words": [{"text": "Wait…", "start": 0.5, "end": 1}, {"text": "go", "start": 1, "end": 1.5}, {"text": "", "start": 1.5, "end": 2}, {"text": "now.", "start": 2, "end": 2.5}]}"#
        #expect(try Self.read("t.json", json).sentences == [
            S(index: 0, words: 0...0, text: "Wait…", startFrame: 24000, endFrame: 48000),
            S(index: 1, words: 1...3, text: "go now.", startFrame: 48000, endFrame: 120000),
        ])
        let empty = #"{"words": [{"text": "", "start": 0.5, "end": 1}, {"text": "", "start": 1, "end": 1.5}]}"#
        #expect(try Self.read("t.json", empty).sentences == [S(index: 0, words: 0...1, text: "", startFrame: 24000, endFrame: 72000)])
    }

    @Test func aeneasAndSubRipSplitByPunctuation() throws {
        let aeneas = #"{"fragments": [{"begin": "0.500", "end": "1.000", "id": "f1", "lines": ["Hi there."]}, {"begin": "1.000", "end": "2.000", "id": "f2", "lines": ["How are"]}, {"begin": "2.000", "end": "2.500", "id": "f3", "lines": ["you?"]}]}"#
        let expected = [
            S(index: 0, words: 0...0, text: "Hi there.", startFrame: 24000, endFrame: 48000),
            S(index: 1, words: 1...2, text: "How are you?", startFrame: 48000, endFrame: 120000),
        ]
        #expect(try Self.read("t.json", aeneas).sentences == expected)
        let srt = "1\n00:00:00,500 --> 00:00:01,000\nHi there.\n\n2\n00:00:01,000 --> 00:00:02,000\n<i>How</i> are\n\n3\n00:00:02,000 --> 00:00:02,500\nyou?\n"
        #expect(try Self.read("t.srt", srt).sentences == expected)
    }

    @Test func punctuationEndsASentence() {
        for ending in ["end.", "end!", "end?", "end…", "end?!", "end.\"", "end.”", "end!’)", "end.»", "終わり。", "end?」", "end. "] {
            #expect(Sentences.endsSentence(ending), "\(ending)")
        }
        for going in ["on", "on,", "on;", "on:", "", "\"", "on—", "3.5x", "(on)"] {
            #expect(!Sentences.endsSentence(going), "\(going)")
        }
    }

    // MARK: Grouping, hostile

    static func words(_ count: Int, text: (Int) -> String = { "w\($0)" }) -> [WordTiming] {
        (0..<count).map { WordTiming(index: $0, text: text($0), startFrame: $0 * 10, endFrame: $0 * 10 + 10) }
    }

    @Test func groupsOfOneWordEachAreNoGrouping() {
        let words = Self.words(4) { ["a", "b.", "c", "d"][$0] }
        #expect(Sentences.group(words, groups: [0, 1, 2, 3]).map(\.words) == [0...1, 2...3])
        // Grouped and ungrouped words mixed: the groups hold; the rest split by punctuation.
        #expect(Sentences.group(words, groups: [nil, nil, 5, 5]).map(\.words) == [0...1, 2...3])
        #expect(Sentences.group(words, groups: [7, 7, nil, nil]).map(\.words) == [0...1, 2...3])
        #expect(Sentences.group(Self.words(4) { ["a", "b", "c", "d"][$0] }, groups: [nil, 3, 3, nil]).map(\.words) == [0...0, 1...2, 3...3])
        #expect(Sentences.group([]) == [])
        // Groups that are not one per word are no grouping.
        #expect(Sentences.group(words, groups: [1, 1]).map(\.words) == [0...1, 2...3])
    }

    /// Cues whose sentences would overlap: their words overlap, which the reader refuses in one
    /// line naming the word; a sentence element inside another: the nearest one holds the word.
    @Test func overlappingAndNestedSentences() throws {
        let vtt = "WEBVTT\n\n00:00:01.000 --> 00:00:03.000\nOne <00:00:02.000>two\n\n00:00:02.500 --> 00:00:04.000\nthree\n"
        let message = try #require(Self.failure("t.vtt", vtt))
        #expect(message.hasSuffix("t.vtt: line 7 'three': overlaps word 1 'two', which ends at 3 s"), "\(message)")
        let nested = Self.page.replacingOccurrences(of: #"<span class="read sentence">"#, with: #"<span class="sentence"><span class="sentence">"#)
            .replacingOccurrences(of: #"<span id="w2">Tom</span></span>"#, with: #"</span><span id="w2">Tom</span></span>"#)
        let smil = """
            <smil xmlns="http://www.w3.org/ns/SMIL" version="3.0"><body><seq>
            \(Self.pars(["w1", "w2", "w3", "w4", "w5"]))
            </seq></body></smil>
            """
        #expect(try Self.read("t.smil", smil, others: ["p.xhtml": nested]).sentences.map(\.text) == ["Hello", "Tom", "Mr. Smith came."])
    }

    @Test func aHundredThousandWordsInLinearTime() throws {
        let count = 100_000
        let words = Self.words(count) { $0 % 10 == 9 ? "end." : "w" }
        let start = ContinuousClock.now
        let sentences = Sentences.group(words)
        let grouped = Sentences.group(words, groups: (0..<count).map { $0 / 7 })
        let clipped = Sentences.clip(sentences, to: Array(words[5..<(count - 5)]))
        var found = 0
        for k in stride(from: 0, to: count, by: 1) where Sentences.sentence(containingWord: k, in: sentences) == k / 10 { found += 1 }
        let elapsed = ContinuousClock.now - start
        #expect(sentences.count == count / 10 && grouped.count == (count + 6) / 7 && found == count)
        #expect(clipped.count == count / 10 && clipped.first?.words == 5...9 && clipped.last?.words == (count - 10)...(count - 6))
        #expect(elapsed < .seconds(5), "\(elapsed)")

        // And through a file: a TextGrid of 10^5 words, a phrase per 10 words.
        var lines: [(Double, Double, String)] = []
        var phrases: [(Double, Double, String)] = []
        for k in 0..<count {
            lines.append((Double(k) / 100, Double(k + 1) / 100, "w"))
            if k % 10 == 0 { phrases.append((Double(k) / 100, Double(k + 10) / 100, "p")) }
        }
        let imported = try Self.read("big.TextGrid", Self.textGrid(words: lines, phrases: phrases, end: 1000))
        #expect(imported.sentences.count == count / 10 && imported.sentences[1234].words == 12340...12349)
        #expect(imported.sentences[1234].startFrame == 12340 * 480 && imported.sentences[1234].endFrame == 12350 * 480)
    }

    // MARK: Lookups

    @Test func lookupsForSeekAndResume() {
        // Words: 0 [100,200) 1 [250,300) 2 [300,300) 3 [300,400); sentences {0,1} {2,3}.
        let words = [
            WordTiming(index: 0, text: "a", startFrame: 100, endFrame: 200), WordTiming(index: 1, text: "b.", startFrame: 250, endFrame: 300),
            WordTiming(index: 2, text: "c", startFrame: 300, endFrame: 300), WordTiming(index: 3, text: "d", startFrame: 300, endFrame: 400),
        ]
        let sentences = Sentences.group(words)
        #expect(sentences.map(\.words) == [0...1, 2...3])
        #expect((0..<4).map { Sentences.sentence(containingWord: $0, in: sentences) } == [0, 0, 1, 1])
        #expect(Sentences.sentence(containingWord: 4, in: sentences) == nil && Sentences.sentence(containingWord: -1, in: sentences) == nil)
        #expect([0, 99, 100, 199, 200, 249, 250, 299, 300, 399, 400, 10_000].map { Sentences.word(heardAt: $0, in: words) }
            == [nil, nil, 0, 0, 0, 0, 1, 1, 3, 3, 3, 3])
        #expect([50, 150, 220, 260, 350].map { Sentences.resumeFrame($0, from: .word, words: words, sentences: sentences) } == [50, 100, 100, 250, 300])
        #expect([50, 150, 220, 260, 350].map { Sentences.resumeFrame($0, from: .sentence, words: words, sentences: sentences) } == [50, 100, 100, 100, 300])
        #expect(Sentences.resumeFrame(260, from: .frame, words: words, sentences: sentences) == 260)
        // A region's clip: word indexes from 5 on.
        let region = words.map { WordTiming(index: $0.index + 5, text: $0.text, startFrame: $0.startFrame, endFrame: $0.endFrame) }
        let regionSentences = Sentences.group(region)
        #expect(Sentences.sentence(containingWord: 7, in: regionSentences) == 1 && Sentences.sentence(containingWord: 2, in: regionSentences) == nil)
    }

    // MARK: Schedule

    static let decoder = MemoryDecoder(files: ["9.wav": (1, 200_000), "3.wav": (1, 300)])

    func schedule(_ clips: String, timings: [String: String]) throws -> [Cue] {
        let (l, dir) = try lesson(
            #"{"sampleRate": 48000, "clips": {\#(clips), "s": {"file": "3.wav"}}, "chains": {"c": [{"clip": "s"}, {"clip": "r"}]}}"#,
            timings: timings)
        defer { dir.remove() }
        let bank = try ClipBank.prepare(lesson: l, chain: "c", decoder: Self.decoder)
        var draws = PoolDraws(seed: 1)
        return try Scheduler.schedule(chain: "c", bank: bank, draws: &draws).cues
    }

    @Test func sentenceCueComesRightBeforeItsFirstWordsCue() throws {
        // A zero-length word ends the first sentence at the frame where the second starts.
        let labels = "0.5\t1\tHello\n1\t1\tthere.\n1\t1.5\tBye\n"
        let cues = try schedule(#""r": {"file": "9.wav", "timings": "t.txt"}"#, timings: ["t.txt": labels])
        #expect(cues.filter { $0.frame >= 300 } == [
            Cue(frame: 300, kind: .clipEnd(clip: "s", pool: nil)),
            Cue(frame: 300, kind: .clipStart(clip: "r", pool: nil)),
            Cue(frame: 300 + 24000, kind: .sentence(clip: "r", index: 0, text: "Hello there.", endFrame: 300 + 48000)),
            Cue(frame: 300 + 24000, kind: .word(clip: "r", index: 0, text: "Hello", endFrame: 300 + 48000)),
            Cue(frame: 300 + 48000, kind: .word(clip: "r", index: 1, text: "there.", endFrame: 300 + 48000)),
            Cue(frame: 300 + 48000, kind: .sentence(clip: "r", index: 1, text: "Bye", endFrame: 300 + 72000)),
            Cue(frame: 300 + 48000, kind: .word(clip: "r", index: 2, text: "Bye", endFrame: 300 + 72000)),
            Cue(frame: 300 + 200_000, kind: .clipEnd(clip: "r", pool: nil)),
            Cue(frame: 300 + 200_000, kind: .chainEnd(chain: "c")),
        ])
        // A sentence at the clip's first frame comes after its clipStart.
        let first = try schedule(#""r": {"file": "9.wav", "timings": "t.txt"}"#, timings: ["t.txt": "0\t0.5\tGo!\n"])
        #expect(first.filter { $0.frame == 300 }.map(\.type) == ["clipEnd", "clipStart", "sentence", "word"])
    }

    @Test func aRegionCutsSentencesToTheWordsItKeeps() throws {
        // Sentences: "One two three." (0.5 to 2 s), "Four five." (2 to 3 s), "Six." (3 to 3.5 s).
        // The region 1.25 s to 2.5 s keeps "two" (cut to 1.25 to 1.5 s), "three.", "Four".
        let labels = "0.5\t1\tOne\n1\t1.5\ttwo\n1.5\t2\tthree.\n2\t2.5\tFour\n2.5\t3\tfive.\n3\t3.5\tSix.\n"
        let cues = try schedule(#""r": {"file": "9.wav", "timings": "t.txt", "start": 1.25, "end": 2.5}"#, timings: ["t.txt": labels])
        let start = 300 - 60000  // the region starts at frame 60000 of the file
        #expect(cues.filter { $0.type == "sentence" || $0.type == "word" } == [
            Cue(frame: 300, kind: .sentence(clip: "r", index: 0, text: "two three.", endFrame: start + 96000)),
            Cue(frame: 300, kind: .word(clip: "r", index: 1, text: "two", endFrame: start + 72000)),
            Cue(frame: start + 72000, kind: .word(clip: "r", index: 2, text: "three.", endFrame: start + 96000)),
            Cue(frame: start + 96000, kind: .sentence(clip: "r", index: 1, text: "Four", endFrame: start + 120000)),
            Cue(frame: start + 96000, kind: .word(clip: "r", index: 3, text: "Four", endFrame: start + 120000)),
        ])
        #expect(cues.last == Cue(frame: 300 + 60000, kind: .chainEnd(chain: "c")))
    }

    @Test func sentenceCueLineAndShift() {
        let cue = Cue(frame: 7, kind: .sentence(clip: "a", index: 2, text: "I \"see\".", endFrame: 90))
        #expect(cue.jsonLine == #"{"clip":"a","endFrame":90,"frame":7,"index":2,"text":"I \"see\".","type":"sentence"}"#)
        #expect(cue.type == "sentence")
        #expect(cue.members == ["clip": .string("a"), "index": .int(2), "text": .string("I \"see\"."), "endFrame": .int(90)])
        #expect(cue.shifted(by: 100) == Cue(frame: 107, kind: .sentence(clip: "a", index: 2, text: "I \"see\".", endFrame: 190)))
    }
}
