import Foundation
import NarratorTestSupport
import Testing

/// Sentence cues as the CLI writes them: `narrator cues` and `simulate`, from a WebVTT file
/// whose cues are sentences, on a clip whose region cuts one of them.
@Suite("Sentence cues")
struct SentenceCueTests {
    /// Sentences: "The cat sat." (0.25 to 1 s) and "It purred softly." (1.25 to 2.5 s). The
    /// region 0.5 s to 1.7 s keeps "cat sat." and "It purred" ("purred", 1.5 to 1.75 s, cut
    /// at 1.7 s).
    static let vtt = """
        WEBVTT

        00:00:00.250 --> 00:00:01.000
        The <00:00:00.500>cat <00:00:00.750>sat.

        00:00:01.250 --> 00:00:02.500
        It <00:00:01.500>purred <00:00:01.750>softly.

        """

    func lines(_ arguments: [String]) throws -> [String] {
        let result = try run(Repo.narrator, arguments)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .map { $0.hasSuffix(",") ? String($0.dropLast()) : $0 }
            .filter { $0.contains(#""type":"sentence""#) || $0.contains(#""type":"word""#) }
    }

    @Test func cuesAndSimulateWriteSentencesBeforeTheirWords() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let timings = dir.write("s.vtt", Self.vtt)
        let lesson = dir.write(
            "lesson.json",
            #"{"sampleRate": 48000, "clips": {"r": {"file": "\#(Repo.path("Audio/fixtures/sentence.wav"))", "timings": "\#(timings)", "start": 0.5, "end": 1.7}}, "chains": {"c": [{"clip": "r"}]}}"#)
        // Frames of the clip: the file's frame − 24000 (the region's start).
        let expected = [
            #"{"clip":"r","endFrame":24000,"frame":0,"index":0,"text":"cat sat.","type":"sentence"}"#,
            #"{"clip":"r","endFrame":12000,"frame":0,"index":1,"text":"cat","type":"word"}"#,
            #"{"clip":"r","endFrame":24000,"frame":12000,"index":2,"text":"sat.","type":"word"}"#,
            #"{"clip":"r","endFrame":57600,"frame":36000,"index":1,"text":"It purred","type":"sentence"}"#,
            #"{"clip":"r","endFrame":48000,"frame":36000,"index":3,"text":"It","type":"word"}"#,
            #"{"clip":"r","endFrame":57600,"frame":48000,"index":4,"text":"purred","type":"word"}"#,
        ]
        #expect(try lines(["cues", lesson, "--chain", "c"]) == expected)
        #expect(try lines(["simulate", lesson, "--chain", "c"]) == expected)
        let sheet = try run(Repo.narrator, ["cues", lesson, "--chain", "c"])
        #expect(try EventSchema.problems(sheet.stdout, as: "cueSheet", document: true) == nil)
    }
}
