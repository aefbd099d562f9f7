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
        #expect(result.stderr == "narrator: \(input): line 2 'backwards': ends (0.5 s) before it starts (1.0 s)\n", "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("out.json")))
        let unknown = try run(Repo.narrator, ["timings", "convert", Self.folder + "/sentence.srt", dir.file("out.ass")])
        #expect(unknown.status == 1 && unknown.stderr.contains("cannot write '.ass'"))
    }
}
