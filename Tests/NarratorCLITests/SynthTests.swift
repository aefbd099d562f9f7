import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// `narrator synth`: scratch narration through libespeak-ng, checked against espeak-ng's own
/// command-line program and against the sound of the words.
@Suite("synth", .requires(PulseTestServer.findExecutable("espeak-ng") != nil, "needs espeak-ng"))
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
        #expect(try Self.words(dir.file("ours.json")).map(\.text) == ["one,", "eleven,", "nine,", "and", "many,", "onions"])
    }

    /// Every onset class, each word after a pause (a sentence or a clause each): vowels,
    /// nasals, liquids and glides, fricatives voiced and voiceless, plosives voiced and
    /// voiceless, affricates.
    static let onsets = [
        "Ants. Eels. Owls. Men. Nuts. Lions. Rain. Wolves. Yaks.",
        "Vans. Zoos. Then. Fish. Seals. Sheep. Hens. Thin.",
        "Bats, dogs, geese, pigs, tigers, kites, jam, cheap chips.",
    ]

    /// Where sound begins, read from a WAV by this test alone: the first sample above ±`floor`
    /// after at least 5 ms at or below it (or the file's start).
    static func onsets(_ samples: [Int16], rate: Int, floor: Int) -> [Int] {
        let gap = rate / 200
        var onsets: [Int] = []
        var quiet = gap
        for (index, sample) in samples.enumerated() {
            if abs(Int(sample)) <= floor {
                quiet += 1
            } else {
                if quiet >= gap { onsets.append(index) }
                quiet = 0
            }
        }
        return onsets
    }

    /// Each word after a pause starts where its sound begins, within 0.5 ms: for a stop after
    /// its closure's silence (the burst), for a fricative after the silence espeak-ng puts
    /// before it.
    ///
    /// Where sound begins is read from the WAV written, above ±16 (−66 dBFS) at espeak-ng's own
    /// rate: its quietest word onsets pass ±16 within 0.1 ms of their first non-zero sample.
    /// At 48 kHz it is read twice: from the WAV written, above ±32 (−60 dBFS), because the
    /// resampler's band-limited filter rings before a burst as well as after it (its pre-echo
    /// reaches ±28 up to 0.8 ms before a /g/'s burst, while the burst itself is hundreds); and
    /// from what `espeak-ng -w` writes for the same text at its own rate, above ±16, at the
    /// same time in 48 kHz frames.
    @Test(arguments: [22050, 48000])
    func wordsStartWhereTheirSoundDoes(rate: Int) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let tolerance = rate / 2000
        for text in Self.onsets {
            let made = try run(Repo.narrator, ["synth", text, "--output", dir.file("s.wav"), "--timings", dir.file("s.json"), "--rate", String(rate)])
            try #require(made.status == 0, "\(made.stderr)")
            let wav = try WAVFile(path: dir.file("s.wav"))
            try #require(wav.sampleRate == rate)
            var truths = [("WAV", Self.onsets(wav.int16Samples, rate: rate, floor: rate == 22050 ? 16 : 32))]
            if rate != 22050 {
                let peer = try runTool("espeak-ng", ["-v", "en", "-w", dir.file("peer.wav"), text])
                try #require(peer.status == 0, "\(peer.stderr)")
                let native = try WAVFile(path: dir.file("peer.wav"))
                try #require(native.sampleRate == 22050)
                truths.append(("espeak-ng -w", Self.onsets(native.int16Samples, rate: 22050, floor: 16).map { ($0 * rate + 11025) / 22050 }))
            }
            let words = try Self.words(dir.file("s.json"))
            #expect(words.count == text.split(separator: " ").count, "\(words.map(\.text))")
            for word in words {
                let start = Int((word.start * Double(rate)).rounded())
                for (name, onsets) in truths {
                    let nearest = onsets.min { abs($0 - start) < abs($1 - start) } ?? -1
                    #expect(abs(nearest - start) <= tolerance, "\(rate) Hz, \(word.text): starts at \(start), its sound at \(nearest) (\(name))")
                }
                #expect(word.end > word.start)
            }
        }
    }

    /// No word starts before its sound, in running speech too (the issue's sentence: "then"
    /// and "so" after a pause, "kite" and "calling" after a stop's closure): the first sample
    /// above ±16 at or after each word's start comes within 0.5 ms.
    @Test(arguments: [22050, 48000])
    func noWordStartsBeforeItsSound(rate: Int) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let text = "Grab the blue kite, then wait. Now the wind is calling, so run fast!"
        let made = try run(Repo.narrator, ["synth", text, "--output", dir.file("s.wav"), "--timings", dir.file("s.json"), "--rate", String(rate)])
        try #require(made.status == 0, "\(made.stderr)")
        let samples = try WAVFile(path: dir.file("s.wav")).int16Samples
        let words = try Self.words(dir.file("s.json"))
        try #require(words.count == 14)
        for word in words {
            let start = Int((word.start * Double(rate)).rounded())
            var sound = start
            while sound < samples.count, abs(Int(samples[sound])) <= 16 { sound += 1 }
            #expect(sound - start <= rate / 2000, "\(rate) Hz, \(word.text): starts at \(start), its sound at \(sound)")
        }
    }

    /// One timed word per word of the text, whatever espeak-ng's word events say: a number or
    /// symbol read as several words ("123", "3.14", "7:30", "$5") stays one word; an emoji read
    /// as a phrase is one word; a zero-length event pointing back at a clause's start (the end
    /// of "…, so run fast!", "Dr.", "10%,") adds none; each word keeps its text as written,
    /// punctuation included (a sentence ends at a word that ends with its punctuation).
    @Test func oneTimedWordPerWordOfTheText() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let cases: [(String, [String])] = [
            ("Grab the blue kite, then wait. Now the wind is calling, so run fast!",
             ["Grab", "the", "blue", "kite,", "then", "wait.", "Now", "the", "wind", "is", "calling,", "so", "run", "fast!"]),
            ("the end, so", ["the", "end,", "so"]),
            ("It costs $5, or 10%, at 7:30.", ["It", "costs", "$5,", "or", "10%,", "at", "7:30."]),
            ("Dr. Smith's trip (really) \"went\" well — yes?", ["Dr.", "Smith's", "trip", "(really)", "\"went\"", "well —", "yes?"]),
            ("I have 123 apples... and 3.14 pies; wait—no. 🙂 yes!", ["I", "have", "123", "apples...", "and", "3.14", "pies;", "wait—no.", "🙂", "yes!"]),
            ("Hello. Hello? Hello!", ["Hello.", "Hello?", "Hello!"]),
            ("🙂", ["🙂"]),
            ("Mr. & Mrs. O'Neil's 1st—2nd—3rd!!! ¿Qué? «oui»", ["Mr.", "&", "Mrs.", "O'Neil's", "1st—2nd—3rd!!!", "¿Qué?", "«oui»"]),
            ("café, naïve & you: 'so' what?", ["café,", "naïve", "&", "you:", "'so'", "what?"]),
        ]
        for (text, expected) in cases {
            let made = try run(Repo.narrator, ["synth", text, "--output", dir.file("s.wav"), "--timings", dir.file("s.json"), "--rate", "22050"])
            try #require(made.status == 0, "\(made.stderr)")
            let words = try Self.words(dir.file("s.json"))
            #expect(words.map(\.text) == expected, "\(text)")
            #expect(made.stdout.contains(expected.count == 1 ? ", 1 word →" : ", \(expected.count) words →"), "\(made.stdout)")
            for (word, next) in zip(words, words.dropFirst()) { #expect(word.start < next.start && word.end <= next.start, "\(text): \(word.text)") }
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
        #expect(words.map(\.text) == ["Look", "on the", "mat,", "it", "jumps", "in the", "park."])
        for (word, next) in zip(words, words.dropFirst()) { #expect(word.end <= next.start) }
    }

    /// A clip that `synth` makes of three sentences is three sentences to everything that reads
    /// its timings: the cue list has one sentence cue each, with its words as written.
    @Test func synthesizedSentencesStaySentences() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let text = "The first coin is a penny. It is worth one cent! Is a dime worth ten?"
        let made = try run(Repo.narrator, ["synth", text, "--output", dir.file("coin.wav"), "--timings", dir.file("coin.json")])
        try #require(made.status == 0, "\(made.stderr)")
        try #"{"sampleRate": 48000, "clips": {"coin": {"file": "coin.wav", "timings": "coin.json"}}, "chains": {"c": [{"clip": "coin"}]}}"#
            .write(toFile: dir.file("l.json"), atomically: true, encoding: .utf8)
        let cues = try run(Repo.narrator, ["cues", dir.file("l.json"), "--chain", "c"])
        try #require(cues.status == 0, "\(cues.stderr)")
        let sentences = cues.stdout.split(separator: "\n").filter { $0.contains(#""type":"sentence""#) }
        #expect(sentences.count == 3, "\(cues.stdout)")
        for expected in ["The first coin is a penny.", "It is worth one cent!", "Is a dime worth ten?"] {
            #expect(sentences.contains { $0.contains(#""text":"\#(expected)""#) }, "\(expected): \(sentences)")
        }
    }

    /// A text with nothing espeak-ng says as a word, or nothing at all: one line, no files.
    @Test(arguments: ["...", "—", " \t\n"])
    func nothingToTimeGivesOneLineAndNoFiles(text: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let made = try run(Repo.narrator, ["synth", text, "--output", dir.file("s.wav"), "--timings", dir.file("s.json")])
        #expect(made.status == 1 && made.stderr.hasPrefix("narrator: ") && made.stderr.filter { $0 == "\n" }.count == 1, "\(made.stderr)")
        #expect(dir.contents().isEmpty, "\(dir.contents())")
    }

    @Test func unknownVoiceGivesOneLineAndNoFiles() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let made = try run(Repo.narrator, ["synth", "hello", "--voice", "no-such-voice", "--output", dir.file("s.wav"), "--timings", dir.file("s.json")])
        #expect(made.status == 1 && made.stderr == "narrator: libespeak-ng: no voice 'no-such-voice' (espeak-ng --voices lists them)\n", "\(made.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("s.wav")) && !FileManager.default.fileExists(atPath: dir.file("s.json")))
    }

    /// A rate the output's format lacks: the line names the option that set it (synth has no
    /// lesson to change), before anything is spoken or written.
    @Test func aRateTheFormatLacksNamesTheOption() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for (name, rate) in [("s.opus", "44100"), ("s.mp3", "96000")] {
            let made = try run(Repo.narrator, ["synth", "hello", "--rate", rate, "--output", dir.file(name), "--timings", dir.file("s.json")])
            #expect(made.status == 1 && made.stderr.filter { $0 == "\n" }.count == 1, "\(made.stderr)")
            #expect(made.stderr.contains("\(rate) Hz") && made.stderr.contains("--rate") && !made.stderr.contains("lesson"), "\(made.stderr)")
            #expect(dir.contents().isEmpty, "\(dir.contents())")
        }
    }
}
