import Foundation
import NarratorTestSupport
import Testing

/// `narrator synth`: scratch narration through libespeak-ng, checked against espeak-ng's own
/// command-line program and against the sound of the words.
@Suite("synth", .enabled(if: PulseTestServer.findExecutable("espeak-ng") != nil, "needs espeak-ng"))
struct SynthTests {
    static let text = "one, eleven, nine, and many, onions"

    static func words(_ path: String) throws -> [(text: String, start: Double, end: Double)] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        return try #require(object["words"] as? [[String: Any]]).map { ($0["text"] as? String ?? "", $0["start"] as? Double ?? -1, $0["end"] as? Double ?? -1) }
    }

    /// At espeak-ng's own rate the audio is what `espeak-ng -w` writes (which adds silence at
    /// the end), sample for sample.
    @Test func speechIsEspeakNGsOwn() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let made = try run(Repo.narrator, ["synth", Self.text, "--output", dir.file("ours.wav"), "--timings", dir.file("ours.json"), "--rate", "22050"])
        try #require(made.status == 0, "\(made.stderr)")
        let peer = try runTool("espeak-ng", ["-v", "en", "-w", dir.file("peer.wav"), Self.text])
        try #require(peer.status == 0, "\(peer.stderr)")
        let ours = try WAVFile(path: dir.file("ours.wav")).int16Samples
        let theirs = try WAVFile(path: dir.file("peer.wav")).int16Samples
        #expect(ours.count > 22050 && ours.count <= theirs.count)
        #expect(Array(theirs.prefix(ours.count)) == ours)
        #expect(theirs.dropFirst(ours.count).allSatisfy { $0 == 0 })
        #expect(try Self.words(dir.file("ours.json")).map(\.text) == ["one", "eleven", "nine", "and", "many", "onions"])
    }

    /// Each word after a pause starts where its sound starts: the first sample above the noise
    /// floor comes at most 0.5 ms after the word's start, and not before it (but for the
    /// resampler's own ±2 frames: a 22.05 kHz sample lands between 48 kHz frames, and the
    /// band-limited filter spreads it).
    @Test func wordsStartWhereTheirSoundDoes() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let made = try run(Repo.narrator, ["synth", Self.text, "--output", dir.file("s.wav"), "--timings", dir.file("s.json")])
        try #require(made.status == 0, "\(made.stderr)")
        let samples = try WAVFile(path: dir.file("s.wav")).int16Samples
        let words = try Self.words(dir.file("s.json"))
        for word in words where ["one", "eleven", "nine", "and", "onions"].contains(word.text) {
            let start = Int((word.start * 48000).rounded())
            var onset = max(0, start - 2400)
            while onset < samples.count, abs(Int(samples[onset])) <= 64 { onset += 1 }
            #expect(onset - start >= -2 && onset - start <= 24, "\(word.text): starts at \(start), sound at \(onset)")
            #expect(word.end > word.start)
        }
    }

    /// espeak-ng speaks "in the" and "on the" as one word with one word event: the pair stays
    /// one timed word, so every word of the text is covered, in order, none lost.
    @Test func wordsEspeakJoinsStayTogether() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let text = "Look on the mat, it jumps in the park."
        let made = try run(Repo.narrator, ["synth", text, "--output", dir.file("s.wav"), "--timings", dir.file("s.json")])
        try #require(made.status == 0, "\(made.stderr)")
        let words = try Self.words(dir.file("s.json"))
        #expect(words.map(\.text) == ["Look", "on the", "mat", "it", "jumps", "in the", "park"])
        for (word, next) in zip(words, words.dropFirst()) { #expect(word.end <= next.start) }
    }

    @Test func unknownVoiceGivesOneLineAndNoFiles() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let made = try run(Repo.narrator, ["synth", "hello", "--voice", "no-such-voice", "--output", dir.file("s.wav"), "--timings", dir.file("s.json")])
        #expect(made.status == 1 && made.stderr == "narrator: libespeak-ng: no voice 'no-such-voice' (espeak-ng --voices lists them)\n", "\(made.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("s.wav")) && !FileManager.default.fileExists(atPath: dir.file("s.json")))
    }
}
