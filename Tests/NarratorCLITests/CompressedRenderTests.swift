import Foundation
import NarratorAudioFile
import NarratorTestSupport
import Testing

/// `render` to FLAC, Ogg Vorbis, Ogg Opus and MP3, decoded back by Narrator's own decoder
/// (libsndfile) and by ffmpeg, against the WAV render of the same chain and the fixture's own
/// word frames (Timings/fixtures/sentence.truth.json, assembled to the frame by
/// scripts/make-fixtures.py). docs/formats.md states the figures these tests hold.
@Suite struct CompressedRenderTests {
    /// A chain of the fixture sentence (words separated by digital silence), a gap, a region
    /// cut from it and the sentence again: 8.8 s, 17 word cues.
    static func lesson(rate: Int, channels: Int) throws -> String {
        let audio = Repo.path("Audio/fixtures/sentence.wav")
        let timings = Repo.path("Timings/fixtures/sentence.json")
        let truth = try TruthWords(path: Repo.path("Timings/fixtures/sentence.truth.json"))
        let regionStart = Double(truth.words[2].startFrame - 100) / 48000
        let regionEnd = Double(truth.words[4].endFrame + 50) / 48000
        return """
            {"sampleRate": \(rate), "channels": \(channels),
             "clips": {"s": {"file": "\(audio)", "timings": "\(timings)"},
                       "r": {"file": "\(audio)", "timings": "\(timings)", "start": \(regionStart), "end": \(regionEnd)}},
             "chains": {"x": [{"clip": "s"}, {"silence": 0.1234}, {"clip": "r"}, {"clip": "s"}]}}
            """
    }

    /// Renders chain x of `lessonJSON` to `name` in `dir`; the cue sheet beside it.
    static func renderChain(_ lesson: String, to name: String, in dir: TempDir, extra: [String] = []) throws -> (String, Sheet) {
        let out = dir.file(name)
        let result = try run(Repo.narrator, ["render", lesson, "--chain", "x", "--output", out, "--cues", out + ".cues.json"] + extra)
        try #require(result.status == 0, "\(result.stderr)")
        return (out, try Sheet(path: out + ".cues.json"))
    }

    /// What ffmpeg decodes from `path`: interleaved floats at the file's rate (Opus: ffmpeg
    /// decodes at 48 kHz), or resampled by ffmpeg to `rate`, read from a raw file it writes.
    static func ffmpegDecode(_ path: String, in dir: TempDir, rate: Int? = nil) throws -> [Float] {
        let raw = dir.file(URL(fileURLWithPath: path).lastPathComponent + ".f32")
        let resample = rate.map { ["-ar", String($0)] } ?? []
        let result = try runTool("ffmpeg", ["-v", "error", "-nostdin", "-y", "-i", path] + resample + ["-f", "f32le", raw])
        try #require(result.status == 0, "\(result.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { bytes in
            (0..<(data.count / 4)).map { Float(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
        }
    }

    /// What the file's first bytes say it is, read here by hand: "flac", "vorbis", "opus",
    /// "mp3" (an MPEG frame sync after any ID3v2 tag), "wav", or nil.
    static func kind(_ path: String) throws -> String? {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(4096))
        func has(_ text: String, at offset: Int) -> Bool {
            offset + text.utf8.count <= bytes.count && bytes[offset..<(offset + text.utf8.count)].elementsEqual(text.utf8)
        }
        if has("fLaC", at: 0) { return "flac" }
        if has("RIFF", at: 0) || has("RF64", at: 0) { return "wav" }
        // An Ogg page of 27 bytes and a one-segment table, then the codec's identification.
        if has("OggS", at: 0) { return has("\u{01}vorbis", at: 28) ? "vorbis" : has("OpusHead", at: 28) ? "opus" : nil }
        var start = 0
        if has("ID3", at: 0) { start = 10 + bytes[6..<10].reduce(0) { $0 << 7 | Int($1 & 0x7F) } }
        if start + 1 < bytes.count, bytes[start] == 0xFF, bytes[start + 1] & 0xE0 == 0xE0 { return "mp3" }
        return nil
    }

    static let kinds = ["wav": "wav", "flac": "flac", "ogg": "vorbis", "opus": "opus", "mp3": "mp3"]

    /// Channel 0 of interleaved samples.
    static func first(_ samples: [Float], channels: Int) -> [Float] { stride(from: 0, to: samples.count, by: channels).map { samples[$0] } }

    /// The first frame at or after `from` (and before `to`) whose magnitude exceeds `threshold`.
    static func onset(_ x: [Float], from: Int, to: Int, threshold: Float) -> Int? {
        (max(0, from)..<min(x.count, to)).first { abs(x[$0]) > threshold }
    }

    /// The lag in -`maxLag`...`maxLag` at which `decoded` best matches `reference` over
    /// `window` (the peak of their cross-correlation): 0 when the decoded audio is where the
    /// render put it.
    static func bestLag(_ decoded: [Float], _ reference: [Float], window: Range<Int>, maxLag: Int) -> Int {
        var best = (lag: 0, score: -Double.infinity)
        for lag in -maxLag...maxLag {
            var score = 0.0
            for i in window where i + lag >= 0 && i + lag < decoded.count {
                score += Double(decoded[i + lag]) * Double(reference[i])
            }
            if score > best.score { best = (lag, score) }
        }
        return best.lag
    }

    /// How far a word's onset (first sample above −40 dBFS, the fixture words start at that
    /// level on their first frame) may move in each codec: the encoder spreads a block's
    /// quantisation noise before an attack (pre-echo). Measured on this chain: Vorbis ≤ 48
    /// frames (1 ms), Opus ≤ 28, MP3 ≤ 1, FLAC 0; the tolerance is 2 ms for Vorbis and Opus
    /// (docs/formats.md).
    static let onsetTolerance: [String: Int] = ["flac": 0, "ogg": 96, "opus": 96, "mp3": 8]

    @Test(arguments: ["flac", "ogg", "opus", "mp3"])
    func decodesToTheRenderedFramesWithEveryWordInPlace(ext: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = dir.write("lesson.json", try Self.lesson(rate: 48000, channels: 2))
        let (wavPath, wavSheet) = try Self.renderChain(lesson, to: "x.wav", in: dir, extra: ["--seed", "1"])
        let (path, sheet) = try Self.renderChain(lesson, to: "x.\(ext)", in: dir, extra: ["--seed", "1"])
        let wav = try WAVFile(path: wavPath)
        #expect(sheet.cues == wavSheet.cues && sheet.frames == wav.frames)
        let written = try Self.kind(path)
        #expect(written == Self.kinds[ext], "x.\(ext) holds \(written ?? "something else")")

        let narrator = try SndFileDecoder().decode(path: path, sampleRate: 48000)
        let ffmpeg = try Self.ffmpegDecode(path, in: dir)
        #expect(narrator.channels == 2)
        #expect(narrator.frames == wav.frames, "libsndfile decodes \(narrator.frames) frames, the render has \(wav.frames)")
        #expect(ffmpeg.count == wav.frames * 2, "ffmpeg decodes \(ffmpeg.count / 2) frames, the render has \(wav.frames)")
        if ext == "flac" {
            // Lossless: the 16-bit WAV's samples, through both decoders.
            #expect(narrator.samples == wav.floatSamples)
            #expect(ffmpeg == wav.floatSamples)
            return
        }
        let reference = Self.first(wav.floatSamples, channels: 2)
        let truth = try TruthWords(path: Repo.path("Timings/fixtures/sentence.truth.json"))
        let words = sheet.cues.filter { $0.type == "word" }
        #expect(words.count == 17)
        var worst = ["libsndfile": 0, "ffmpeg": 0]
        for (decoder, samples) in [("libsndfile", narrator.samples), ("ffmpeg", ffmpeg)] {
            let decoded = Self.first(samples, channels: 2)
            for word in words {
                // Ground truth first: in the WAV the onset is the cue's frame (clip start + the
                // fixture's own frame, which BitExact/TimingAccuracy tests tie to the truth file).
                #expect(Self.onset(reference, from: word.frame - 1500, to: word.frame + 3000, threshold: 0.01) == word.frame)
                let found = Self.onset(decoded, from: word.frame - 1500, to: word.frame + 3000, threshold: 0.01)
                let error = found.map { $0 - word.frame } ?? Int.max
                worst[decoder] = max(worst[decoder]!, abs(error))
                #expect(abs(error) <= Self.onsetTolerance[ext]!, "\(ext) via \(decoder): word \(word.index!) '\(word.text!)' found at \(found.map(String.init) ?? "none"), cue at \(word.frame)")
                // And the audio sits where the render put it: the word's cross-correlation
                // with the WAV peaks at lag 0.
                let lag = Self.bestLag(decoded, reference, window: word.frame..<(word.frame + 4096), maxLag: 8)
                #expect(lag == 0, "\(ext) via \(decoder): word at \(word.frame) is displaced by \(lag) frames")
            }
        }
        #expect(truth.words.count == 7)
        print("\(ext): \(try FileManager.default.attributesOfItem(atPath: path)[.size]!) bytes (WAV \(try FileManager.default.attributesOfItem(atPath: wavPath)[.size]!)), worst onset error libsndfile \(worst["libsndfile"]!) ffmpeg \(worst["ffmpeg"]!) frames")
    }

    /// At other lesson rates (the clips resampled by Narrator): every format each rate allows
    /// decodes to the render's frames through both decoders (ffmpeg decodes Opus at 48 kHz:
    /// the same length scaled), at the lesson's rate, with every word where the WAV render
    /// has it (cross-correlation peak at lag 0; ffmpeg's Opus compared after its own
    /// resampling to the lesson's rate).
    @Test(arguments: [8000, 16000, 22050, 24000, 44100])
    func otherRatesDecodeToTheRenderedFrames(rate: Int) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = dir.write("lesson.json", try Self.lesson(rate: rate, channels: 1))
        let (wavPath, wavSheet) = try Self.renderChain(lesson, to: "x.wav", in: dir)
        let reference = try WAVFile(path: wavPath).floatSamples
        let words = wavSheet.cues.filter { $0.type == "word" }
        let exts = ["flac", "ogg", "mp3"] + (AudioFileType.opusRates.contains(rate) ? ["opus"] : [])
        for ext in exts {
            let (path, sheet) = try Self.renderChain(lesson, to: "x.\(ext)", in: dir)
            #expect(sheet.frames == wavSheet.frames)
            let written = try Self.kind(path)
        #expect(written == Self.kinds[ext], "x.\(ext) holds \(written ?? "something else")")
            let narrator = try SndFileDecoder().decode(path: path, sampleRate: rate)
            let scan = try AudioScan(path: path)
            #expect(scan.sampleRate == rate, "\(ext) at \(rate)")
            #expect(narrator.frames == sheet.frames, "\(ext) at \(rate): libsndfile \(narrator.frames), render \(sheet.frames)")
            let ffmpeg = try Self.ffmpegDecode(path, in: dir)
            let expected = ext == "opus" ? sheet.frames * 48000 / rate : sheet.frames
            #expect(ffmpeg.count == expected, "\(ext) at \(rate): ffmpeg \(ffmpeg.count), expected \(expected)")
            let ffmpegAtRate = ext == "opus" && rate != 48000 ? try Self.ffmpegDecode(path, in: dir, rate: rate) : ffmpeg
            for (decoder, decoded) in [("libsndfile", narrator.samples), ("ffmpeg", ffmpegAtRate)] {
                let lags = words.map { Self.bestLag(decoded, reference, window: $0.frame..<($0.frame + 4096 * rate / 48000), maxLag: 8) }
                // libopus decoding at 24 kHz (what libsndfile does for a 24 kHz Opus) puts
                // the audio one frame early: measured -1.1 frames on every word.
                let allowed = ext == "opus" && rate == 24000 && decoder == "libsndfile" ? -1...0 : 0...0
                #expect(lags.allSatisfy { allowed.contains($0) }, "\(ext) at \(rate) via \(decoder): lags \(lags)")
            }
        }
    }

    /// Short renders (one frame's worth of a codec and less) keep their length too. One
    /// exception, ffmpeg's and not the file's: an Ogg Vorbis whose audio is a single Ogg page
    /// (here up to 0.1 s of speech; any short or quiet file, as oggenc's) is decoded by ffmpeg
    /// from its start, in place, but not trimmed at its end to the page's granule position:
    /// it then gives less than a block (2048 frames) more or fewer. Narrator's decoder is exact.
    @Test(arguments: [1, 48, 960, 4800, 14400, 48000])
    func shortRendersKeepTheirLength(frames: Int) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let audio = Repo.path("Audio/fixtures/sentence.wav")
        // From the middle of the word "a": sound from the first frame to the last.
        let lesson = dir.write("lesson.json", """
            {"sampleRate": 48000, "channels": 1,
             "clips": {"s": {"file": "\(audio)", "start": 0.1, "end": \(Double(4800 + frames) / 48000)}},
             "chains": {"x": [{"clip": "s"}]}}
            """)
        let (wavPath, wavSheet) = try Self.renderChain(lesson, to: "x.wav", in: dir)
        #expect(wavSheet.frames == frames)
        let reference = try WAVFile(path: wavPath).floatSamples
        for ext in ["flac", "ogg", "opus", "mp3"] {
            let (path, _) = try Self.renderChain(lesson, to: "x.\(ext)", in: dir)
            #expect(try SndFileDecoder().decode(path: path, sampleRate: 48000).frames == frames, "\(ext)")
            let ffmpeg = try Self.ffmpegDecode(path, in: dir)
            let audioPages = try OggFile.audioPages(path)
            if ext == "ogg" && audioPages == 1 {
                #expect(abs(ffmpeg.count - frames) < 2048, "ogg of \(frames) frames: ffmpeg \(ffmpeg.count)")
                if frames >= 960 {
                    let lag = Self.bestLag(ffmpeg, reference, window: 0..<min(frames, 4096), maxLag: 8)
                    #expect(lag == 0, "ogg of \(frames) frames via ffmpeg: displaced by \(lag)")
                }
            } else {
                #expect(ffmpeg.count == frames, "\(ext) of \(frames) frames: ffmpeg \(ffmpeg.count)")
            }
        }
    }

    /// A render is a pure function of its inputs, in Ogg too: two renders of a chain, and
    /// `render-all`'s, are the same bytes (libsndfile draws each stream's serial number at
    /// random; Narrator derives it from the stream). Every page still checks: ogginfo/opusinfo
    /// (libogg verifies each page's CRC) and ffmpeg read it with no complaint, and decode it to
    /// the rendered frames. Different audio gets a different serial.
    @Test(arguments: ["ogg", "opus"])
    func oggRendersAreTheSameBytesEveryTime(ext: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = dir.write("lib/lesson.json", try Self.lesson(rate: 48000, channels: 1))
        let (first, sheet) = try Self.renderChain(lesson, to: "a.\(ext)", in: dir)
        let (second, _) = try Self.renderChain(lesson, to: "b.\(ext)", in: dir)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: first))
        #expect(bytes == (try Data(contentsOf: URL(fileURLWithPath: second))))
        let all = try run(Repo.narrator, ["render-all", dir.file("lib"), "--to", dir.file("all"), "--ext", ext])
        try #require(all.status == 0, "\(all.stderr)")
        #expect(bytes == (try Data(contentsOf: URL(fileURLWithPath: dir.file("all/lesson/x.\(ext)")))))
        let serials = try OggFile.serials(first)
        #expect(serials.count == 1)
        let checker = try runTool(ext == "ogg" ? "ogginfo" : "opusinfo", [first])
        #expect(checker.status == 0 && !checker.stdout.lowercased().contains("warning") && !checker.stdout.lowercased().contains("error"), "\(checker.stdout)\(checker.stderr)")
        let ffmpeg = try runTool("ffmpeg", ["-v", "error", "-nostdin", "-i", first, "-f", "null", "-"])
        #expect(ffmpeg.status == 0 && ffmpeg.stderr.isEmpty, "\(ffmpeg.stderr)")
        #expect(try SndFileDecoder().decode(path: first, sampleRate: 48000).frames == sheet.frames)
        let (other, _) = try Self.renderChain(lesson, to: "c.\(ext)", in: dir, extra: ["--speed", "1.5"])
        #expect(try OggFile.serials(other).count == 1 && OggFile.serials(other) != serials)
    }

    /// --quality reaches the encoder (a smaller file at 0 than at 1) and changes no length.
    @Test(arguments: ["ogg", "opus", "mp3"])
    func qualityChangesTheSizeNotTheFrames(ext: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = dir.write("lesson.json", try Self.lesson(rate: 48000, channels: 1))
        var sizes: [Int] = []
        for quality in ["0", "1"] {
            let (path, sheet) = try Self.renderChain(lesson, to: "q\(quality).\(ext)", in: dir, extra: ["--quality", quality])
            #expect(try SndFileDecoder().decode(path: path, sampleRate: 48000).frames == sheet.frames)
            sizes.append(try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int)
        }
        #expect(sizes[0] * 2 < sizes[1], "\(ext): quality 0 gives \(sizes[0]) bytes, quality 1 \(sizes[1])")
    }

    /// The extension names the format whatever its case: .MP3 is an MP3, .Flac a FLAC.
    @Test func upperCaseExtensionsWriteTheirFormat() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = dir.write("lesson.json", try Self.lesson(rate: 48000, channels: 1))
        let (path, _) = try Self.renderChain(lesson, to: "x.MP3", in: dir)
        #expect(try Self.kind(path) == "mp3")
        let (flac, _) = try Self.renderChain(lesson, to: "x.Flac", in: dir)
        #expect(try Self.kind(flac) == "flac")
    }

    /// What cannot be written as asked is refused in one line, exit status 1, before the
    /// lesson is even read (the lesson named here does not exist) and with no file left.
    @Test func refusalsLeaveNoFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let missing = dir.file("no-such-lesson.json")
        let cases: [([String], String)] = [
            (["--output", dir.file("x.mp4")], "x.mp4: --output: has the extension '.mp4': the extension chooses what is written: .wav, .flac, .ogg (Vorbis), .opus or .mp3"),
            (["--output", dir.file("x.wave")], "x.wave: --output: has the extension '.wave'"),
            (["--output", dir.file("x")], "x: --output: has no extension"),
            (["--output", dir.file("x.mp3.part")], "has the extension '.part'"),
            (["--output", dir.file("x.wav"), "--quality", "0.5"], "x.wav: --quality: WAV is lossless and takes no quality setting"),
            (["--output", dir.file("x.flac"), "--quality", "0.5"], "x.flac: --quality: FLAC is lossless"),
            (["--output", dir.file("x.ogg"), "--quality", "1.01"], "x.ogg: --quality: quality 1.01 is out of range: from 0 (smallest file) to 1 (best sound)"),
            (["--output", dir.file("x.opus"), "--quality=-0.5"], "x.opus: --quality: quality -0.5 is out of range"),
            (["--output", dir.file("x.mp3"), "--quality", "nan"], "x.mp3: --quality: quality nan is out of range"),
            (["--output", dir.file("x.mp3"), "--quality", "inf"], "x.mp3: --quality: quality inf is out of range"),
            (["--output", dir.file("x.mp3"), "--format", "s16"], "x.mp3: --format: MP3 takes no sample format"),
            (["--output", dir.file("x.flac"), "--format", "f32"], "x.flac: --format: FLAC holds integer samples"),
        ]
        for (arguments, message) in cases {
            let result = try run(Repo.narrator, ["render", missing, "--chain", "x", "--cues", dir.file("c.json")] + arguments)
            #expect(result.status == 1, "\(arguments)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("narrator: ") && lines[0].contains(message), "\(arguments): \(result.stderr)")
            #expect(dir.contents().isEmpty, "\(arguments) left \(dir.contents())")
        }
    }

    /// Rates a codec lacks are refused once the lesson says its rate, before any audio is
    /// mixed, with the rates it has; the cue sheet is not left either.
    @Test func ratesACodecLacksAreRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let cases: [(Int, String, String)] = [
            (44100, "opus", "Opus is encoded at 8000, 12000, 16000, 24000 or 48000 Hz, and this audio is 44100 Hz"),
            (22050, "opus", "this audio is 22050 Hz"),
            (96000, "mp3", "MP3 has no 96000 Hz"),
        ]
        for (rate, ext, message) in cases {
            let lesson = dir.write("lesson.json", try Self.lesson(rate: rate, channels: 1))
            let out = dir.file("x.\(ext)")
            let result = try run(Repo.narrator, ["render", lesson, "--chain", "x", "--output", out, "--cues", dir.file("c.json")])
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("narrator: \(out): ") && result.stderr.contains(message), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
            #expect(dir.contents() == ["lesson.json"], "left \(dir.contents())")
        }
    }
}
