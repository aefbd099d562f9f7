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
