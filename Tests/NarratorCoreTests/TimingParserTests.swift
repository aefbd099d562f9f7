import Foundation
import Testing

@testable import NarratorCore
@testable import NarratorEngine

private func parse(_ text: String, _ name: String, rate: Int = 48000) throws(NarratorError) -> [WordTiming] {
    try WordTimings.parse(Data(text.utf8), path: name, rate: rate)
}

private func expectError(_ text: String, _ name: String, place: String?, containing: String, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        _ = try parse(text, name)
        Issue.record("expected an error", sourceLocation: sourceLocation)
    } catch {
        #expect(error.file == name, sourceLocation: sourceLocation)
        #expect(error.place == place, sourceLocation: sourceLocation)
        #expect(error.message.contains(containing), "\(error)", sourceLocation: sourceLocation)
    }
}

@Suite struct JSONTimingTests {
    @Test func readsWordsInFrames() throws {
        let words = try parse(
            #"{"words": [{"text": "A", "start": 1.005, "end": 1.326}, {"text": "round", "start": 1.4, "end": 1.75}]}"#,
            "t.json")
        #expect(words == [
            WordTiming(index: 0, text: "A", startFrame: 48240, endFrame: 63648),
            WordTiming(index: 1, text: "round", startFrame: 67200, endFrame: 84000),
        ])
    }

    @Test func errorsNameTheWord() {
        expectError(#"{"words": [{"text": "A", "start": 1.0, "end": 0.5}]}"#, "t.json", place: "words[0] 'A'", containing: "before it starts")
        expectError(#"{"words": [{"text": "A", "start": 1.0}]}"#, "t.json", place: "words[0].end", containing: "missing")
        expectError(#"{"words": [{"text": "A", "start": "x", "end": 2}]}"#, "t.json", place: "words[0].start", containing: "number")
        expectError("{\"words\": [\n{\"text\": \"A\" \"start\": 1}]}", "t.json", place: "line 2, column 14", containing: "not valid JSON")
        expectError("", "t.json", place: nil, containing: "empty")
        expectError(
            #"{"words": [{"text": "a", "start": 1, "end": 2}, {"text": "b", "start": 0.5, "end": 0.7}]}"#, "t.json",
            place: "words[1] 'b'", containing: "out of order")
        expectError(
            #"{"words": [{"text": "a", "start": 1, "end": 2}, {"text": "b", "start": 1.5, "end": 2.5}]}"#, "t.json",
            place: "words[1] 'b'", containing: "overlaps word 0 'a'")
    }

    @Test func adjacentWordsMayTouch() throws {
        let words = try parse(
            #"{"words": [{"text": "a", "start": 1, "end": 2}, {"text": "b", "start": 2, "end": 2}]}"#, "t.json")
        #expect(words.map(\.startFrame) == [48000, 96000])
    }
}

@Suite struct AudacityLabelTests {
    @Test func readsLabelTrackAsAudacityExportsIt() throws {
        // Audacity writes six decimals; spectral-selection lines start with a backslash.
        let text = "1.005000\t1.326000\tA\n\\\t100.000000\t8000.000000\n1.400000\t1.750000\tround fruit\r\n\n"
        let words = try parse(text, "t.txt")
        #expect(words == [
            WordTiming(index: 0, text: "A", startFrame: 48240, endFrame: 63648),
            WordTiming(index: 1, text: "round fruit", startFrame: 67200, endFrame: 84000),
        ])
    }

    @Test func pointLabelsAreZeroLengthWords() throws {
        let words = try parse("2.5\t2.5\tclick\n", "t.txt", rate: 44100)
        #expect(words == [WordTiming(index: 0, text: "click", startFrame: 110_250, endFrame: 110_250)])
    }

    @Test func errorsNameTheLine() {
        expectError("1.0\t2.0\ta\n1.5 2.0 b\n", "t.txt", place: "line 2", containing: "start<TAB>end<TAB>text")
        expectError("1.0\tx\ta\n", "t.txt", place: "line 1", containing: "numbers")
        expectError("1.0\t2.0\ta\n\n3.0\t2.5\tb\n", "t.txt", place: "line 3 'b'", containing: "before it starts")
        expectError("1.0\t2.0\ta\n0.5\t0.7\tb\n", "t.txt", place: "line 2 'b'", containing: "out of order")
        expectError("1.0\t2.0\ta\n1.9\t3.0\tb\n", "t.txt", place: "line 2 'b'", containing: "overlaps")
    }
}

@Suite struct WebVTTTests {
    @Test func karaokeTimestampsBecomeWords() throws {
        let text = """
            WEBVTT
            Kind: captions

            NOTE written by hand
            over two lines

            intro
            00:00:01.000 --> 00:00:02.500 align:start
            <v Narrator>A <00:00:01.250><c>round</c> <00:00:01.800>fruit &amp; more

            00:03.000 --> 00:03.400
            tree
            """
        let words = try parse(text, "t.vtt")
        #expect(words == [
            WordTiming(index: 0, text: "A", startFrame: 48000, endFrame: 60000),
            WordTiming(index: 1, text: "round", startFrame: 60000, endFrame: 86400),
            WordTiming(index: 2, text: "fruit & more", startFrame: 86400, endFrame: 120_000),
            WordTiming(index: 3, text: "tree", startFrame: 144_000, endFrame: 163_200),
        ])
    }

    @Test func textBeforeTheFirstTimestampMayBeEmpty() throws {
        let words = try parse("WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n<00:00:00.100>one <00:00:00.600>two\n", "t.vtt")
        #expect(words.map(\.text) == ["one", "two"])
        #expect(words.map(\.startFrame) == [4800, 28800])
        #expect(words.map(\.endFrame) == [28800, 48000])
    }

    @Test func errorsNameTheLine() {
        expectError("WEBVT\n", "t.vtt", place: "line 1", containing: "WEBVTT")
        expectError("WEBVTT\n\n00:00:01.000 -> 00:00:02.000\nx\n", "t.vtt", place: "line 3", containing: "cue timing")
        expectError("WEBVTT\n\n00:00:01.000 --> 00:00:0x.000\nx\n", "t.vtt", place: "line 3", containing: "bad cue timing")
        expectError("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\na <00:00:01.5>b\n", "t.vtt", place: "line 4", containing: "bad timestamp")
        expectError("WEBVTT\n\n00:00:02.000 --> 00:00:01.000\nx\n", "t.vtt", place: "line 4 'x'", containing: "before it starts")
    }

    @Test func lenientWhereRealFilesDiffer() throws {
        // No blank line after the header, a cue id starting with NOTE, settings after a tab.
        let words = try parse("WEBVTT\n00:00:01.000 --> 00:00:02.000\none\n\nNOTEBOOK-1\n00:00:03.000 --> 00:00:04.000\talign:start\ntwo\n", "t.vtt")
        #expect(words.map(\.text) == ["one", "two"])
        #expect(words.map(\.startFrame) == [48000, 144_000])
    }

    @Test func badTimestampOnALaterTextLineNamesThatLine() {
        expectError("WEBVTT\n\n00:00:01.000 --> 00:00:02.000\na <00:00:01.100>b\nc <00:00:01.5>d\n", "t.vtt", place: "line 5", containing: "bad timestamp")
    }

    @Test func emptyTimingFilesAreErrorsInEveryFormat() {
        expectError("", "t.txt", place: nil, containing: "holds no words")
        expectError("WEBVTT\n", "t.vtt", place: nil, containing: "holds no words")
        expectError(#"{"words": []}"#, "t.json", place: nil, containing: "holds no words")
    }

    @Test func unknownExtensionIsNamed() {
        expectError("x", "t.srtx", place: nil, containing: "unknown timing format '.srtx'")
    }
}
