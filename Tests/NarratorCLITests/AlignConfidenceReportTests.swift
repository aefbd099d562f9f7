import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// What `narrator align` reports as low confidence (`AlignConfidence`), on the espeak-ng
/// fixture laid to the frame (`SpokenWords`): clean, nothing (every word is right); under white
/// noise made by sox about 22 dB under the voice (sox stats: RMS −42.4 dBFS against the spoken
/// sentence's −20.2; the pauses are no longer quiet and 11 of the 15 words come out more than
/// 50 ms off), every word, in the summary line and in `--report`'s `lowConfidence`; and every
/// word more than 50 ms off, by the fixture's truth, is among those reported.
@Suite(
    "align: confidence", .serialized,
    .requires(PulseTestServer.findExecutable("espeak-ng") != nil && PulseTestServer.findExecutable("sox") != nil, "needs espeak-ng and sox"))
struct AlignConfidenceReportTests {
    static let words = SpokenWords.words
    static let rate = SpokenWords.rate

    /// The summary line's reported word indices, the report's, and each word's refined frames.
    static func align(_ audio: String, in dir: TempDir) throws -> (summary: [Int], report: [Int], refined: [(start: Int, end: Int)]) {
        let text = words.joined(separator: " ")
        let manifest = dir.write("m.jsonl", "{\"audio\": \"\(audio)\", \"text\": \"\(text)\", \"timings\": \"out.json\"}\n")
        let batch = try run(Repo.narrator, ["align", "--manifest", manifest, "--report", dir.file("r.jsonl"), "--first-stage", "aeneas", "--rate", "\(rate)"])
        try #require(batch.status == 0, "\(batch.stderr)")
        let line = try #require(batch.stdout.split(separator: "\n").first { $0.contains("words aligned") }, "\(batch.stdout)")
        let summary = line.components(separatedBy: "; low confidence: ").dropFirst().first.map {
            $0.components(separatedBy: ", ").compactMap { Int($0.split(separator: " ").first ?? "") }
        } ?? []
        let report = try String(contentsOfFile: dir.file("r.jsonl"), encoding: .utf8).split(separator: "\n")
        let item = try #require(try JSONSerialization.jsonObject(with: Data(report[1].utf8)) as? [String: Any])
        let low = try #require(item["lowConfidence"] as? [String]).compactMap { Int($0.split(separator: " ").first ?? "") }
        let json = try run(Repo.narrator, ["align", audio, "--text", text, "--timings", dir.file("t.json"), "--first-stage", "aeneas", "--rate", "\(rate)", "--json"])
        try #require(json.status == 0, "\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let list = try #require(object["words"] as? [[String: Any]])
        return (summary, low, list.map { (($0["startFrame"] as? Int) ?? -1, ($0["endFrame"] as? Int) ?? -1) })
    }

    static func off(_ refined: [(start: Int, end: Int)], _ truth: [(start: Int, end: Int)]) -> [Int] {
        zip(refined, truth).enumerated().filter { max(abs($0.element.0.start - $0.element.1.start), abs($0.element.0.end - $0.element.1.end)) * 1000 > 50 * rate }.map(\.offset)
    }

    @Test func aCleanRecordingReportsNoWord() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fixture = try SpokenWords.assemble(speed: 175, in: dir)
        let result = try Self.align(fixture.path, in: dir)
        #expect(Self.off(result.refined, fixture.truth).isEmpty, "\(result.refined)")
        #expect(result.summary.isEmpty && result.report.isEmpty, "\(result)")
    }

    @Test func noiseTwentyDecibelsUnderTheVoiceReportsEveryWord() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fixture = try SpokenWords.assemble(speed: 175, in: dir)
        let seconds = String(format: "%.6f", Double(fixture.frames) / Double(Self.rate))
        let noise = dir.file("noise.wav")
        let made = try runTool("sox", ["-n", "-r", "\(Self.rate)", "-c", "1", "-b", "16", noise, "synth", seconds, "whitenoise", "vol", "0.02"])
        try #require(made.status == 0, "\(made.stderr)")
        let mixed = dir.file("mixed.wav")
        let mixing = try runTool("sox", ["-m", "-v", "1", fixture.path, "-v", "1", noise, mixed])
        try #require(mixing.status == 0, "\(mixing.stderr)")
        let result = try Self.align(mixed, in: dir)
        print("align: confidence under noise: off \(Self.off(result.refined, fixture.truth)), reported \(result.summary)")
        #expect(result.summary == Array(Self.words.indices) && result.report == result.summary, "\(result)")
        #expect(Set(Self.off(result.refined, fixture.truth)).isSubset(of: Set(result.summary)))
    }
}
