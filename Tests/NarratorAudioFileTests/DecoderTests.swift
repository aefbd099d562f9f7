import Foundation
import NarratorCore
import NarratorTestSupport
import Testing

@testable import NarratorAudioFile

@Suite struct DecoderTests {
    let decoder = SndFileDecoder()

    /// The first second of sentence.wav, read by hand.
    var reference: [Float] {
        get throws { Array(try WAVFile(path: Repo.path("Audio/fixtures/sentence.wav")).floatSamples.prefix(48000)) }
    }

    @Test(arguments: ["sentence-s24.wav", "sentence-s32.wav", "sentence-f32.wav", "sentence.flac"])
    func losslessFormatsDecodeToTheSameSamples(name: String) throws {
        let buffer = try decoder.decode(path: Repo.path("Audio/fixtures/formats/\(name)"), sampleRate: 48000)
        #expect(buffer.channels == 1)
        #expect(buffer.frames == 48000)
        #expect(buffer.samples == (try reference))
    }

    @Test func stereoKeepsBothChannels() throws {
        let buffer = try decoder.decode(path: Repo.path("Audio/fixtures/formats/sentence-stereo.wav"), sampleRate: 48000)
        let ref = try reference
        #expect(buffer.channels == 2 && buffer.frames == 48000)
        let left = stride(from: 0, to: buffer.samples.count, by: 2).map { buffer.samples[$0] }
        let right = stride(from: 1, to: buffer.samples.count, by: 2).map { buffer.samples[$0] }
        #expect(left == ref)
        #expect(right == ref)
    }

    @Test func oggVorbisDecodesCloseToTheOriginal() throws {
        let buffer = try decoder.decode(path: Repo.path("Audio/fixtures/formats/sentence.ogg"), sampleRate: 48000)
        let ref = try reference
        #expect(buffer.frames == 48000)
        var signal: Double = 0
        var noise: Double = 0
        for i in 0..<48000 {
            signal += Double(ref[i] * ref[i])
            noise += Double((buffer.samples[i] - ref[i]) * (buffer.samples[i] - ref[i]))
        }
        let snr = 10 * log10(signal / noise)
        #expect(snr > 15, "Vorbis SNR \(snr) dB")
    }

    struct ImpulseTruth: Decodable { let frames: Int; let impulses: [Int] }

    /// An impulse at frame k of a clip at rate r lands within ±1 frame of round(k × 48000 / r),
    /// and the clip lasts round(N × 48000 / r) frames.
    @Test(arguments: [22050, 44100, 96000, 48000])
    func resampledImpulsesLandWhereTheyShould(rate: Int) throws {
        let truth = try JSONDecoder().decode(
            [String: ImpulseTruth].self,
            from: Data(contentsOf: URL(fileURLWithPath: Repo.path("Timings/fixtures/impulses.truth.json"))))[String(rate)]!
        let buffer = try decoder.decode(path: Repo.path("Audio/fixtures/impulses-\(rate).wav"), sampleRate: 48000)
        // Expected values computed here with plain integer arithmetic, not with Frames.
        #expect(buffer.frames == (truth.frames * 48000 * 2 + rate) / (2 * rate))
        for k in truth.impulses {
            let expected = (k * 48000 * 2 + rate) / (2 * rate)
            let window = max(0, expected - 50)..<min(buffer.frames, expected + 51)
            let peak = window.max { abs(buffer.samples[$0]) < abs(buffer.samples[$1]) }!
            #expect(abs(peak - expected) <= 1, "impulse \(k) at \(rate) Hz: peak at \(peak), expected \(expected)")
            #expect(abs(buffer.samples[peak]) > 0.1)  // well above the resampler's ringing
        }
    }

    /// `align` reads a long recording a chunk at a time (at the lesson rate and at 16 kHz in
    /// one pass): the samples must be the one-shot decode's, bit for bit, or its boundaries
    /// would move. Files of several of the reader's 65536-frame chunks made by sox (mono
    /// 22.05 kHz, stereo 44.1 kHz, 96 kHz, 48 kHz: no conversion to 48 kHz), and Ogg Vorbis.
    /// (sox is in the Makefile's APT_PACKAGES.)
    @Test(arguments: [(22050, 1, "wav"), (44100, 2, "wav"), (96000, 1, "wav"), (48000, 1, "wav"), (44100, 1, "ogg")])
    func streamedDecodeIsTheOneShotDecode(rate: Int, channels: Int, format: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("long.\(format)")
        // 7.3 s: a chord under pink noise gated on and off, so the ends of chunks fall on sound.
        let made = try runTool(
            "sox", ["-R", "-n", "-r", "\(rate)", "-c", "\(channels)", path, "synth", "7.3", "pinknoise", "sine", "220", "sine", "1375",
                    "tremolo", "3", "90", "gain", "-6"])
        try #require(made.status == 0, "\(made.stderr)")
        let rates = [48000, 16000, 22050]
        var streamed = [[Float]](repeating: [], count: rates.count)
        var opened = 0
        let result = try decoder.stream(path: path, sampleRates: rates) { opened = $0; _ = $1 } _: { index, samples in
            #expect(samples.count % opened == 0)
            streamed[index] += samples
        }
        for (index, rate) in rates.enumerated() {
            let whole = try decoder.decode(path: path, sampleRate: rate)
            #expect(result.channels == whole.channels && opened == channels)
            #expect(result.frames[index] == whole.frames && whole.frames > 7 * rate, "at \(rate) Hz")
            #expect(streamed[index] == whole.samples, "at \(rate) Hz: \(zip(streamed[index], whole.samples).filter { $0 != $1 }.count) samples differ")
        }
    }

    @Test func resampledSpeechHasTheRoundedLength() throws {
        for rate in [44100, 22050] {
            let buffer = try decoder.decode(path: Repo.path("Audio/fixtures/formats/sentence-\(rate).wav"), sampleRate: 48000)
            #expect(buffer.frames == 48000)  // one second at any rate
        }
    }
}

@Suite struct BadAudioTests {
    let decoder = SndFileDecoder()

    func failure(_ path: String) -> NarratorError? {
        do {
            _ = try decoder.decode(path: path, sampleRate: 48000)
            return nil
        } catch { return error }
    }

    @Test func eachBadFileGivesItsOwnError() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let good = try Data(contentsOf: URL(fileURLWithPath: Repo.path("Audio/fixtures/sentence.wav")))
        let flac = try Data(contentsOf: URL(fileURLWithPath: Repo.path("Audio/fixtures/formats/sentence.flac")))
        let ogg = try Data(contentsOf: URL(fileURLWithPath: Repo.path("Audio/fixtures/formats/sentence.ogg")))

        // A header that claims 4 GiB of data over 2000 bytes.
        var liar = good.prefix(44 + 2000)
        liar.replaceSubrange(4..<8, with: [0xF0, 0xFF, 0xFF, 0xFF])
        liar.replaceSubrange(40..<44, with: [0xF0, 0xFF, 0xFF, 0xFF])

        let cases: [(String, Data?, String)] = [
            ("missing.wav", nil, "no such file"),
            ("empty.wav", Data(), "empty"),
            ("text.wav", Data("just some words\n".utf8), "not a readable audio file"),
            ("header-only.wav", good.prefix(30), "not a readable audio file"),
            ("truncated.wav", good.prefix(good.count / 3), "truncated"),
            ("liar.wav", liar, "truncated or lying header"),
            ("truncated.flac", flac.prefix(flac.count / 2), "truncated"),
            ("truncated.ogg", ogg.prefix(ogg.count / 2), "truncated"),
        ]
        for (name, data, message) in cases {
            let path = data.map { dir.write(name, data: $0) } ?? dir.file(name)
            let error = failure(path)
            #expect(error?.file == path, "\(name)")
            #expect(error?.message.contains(message) == true, "\(name): \(String(describing: error))")
        }
    }
}

@Suite struct WriterTests {
    @Test func sixteenBitRoundTripIsBitExact() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let source = Repo.path("Audio/fixtures/sentence.wav")
        let buffer = try SndFileDecoder().decode(path: source, sampleRate: 48000)
        let out = dir.file("copy.wav")
        let writer = try SoundFileWriter(path: out, sampleRate: 48000, channels: 1, format: .s16, maxFrames: buffer.frames)
        try buffer.samples.withUnsafeBufferPointer { try writer.write($0, frames: buffer.frames) }
        try writer.finish()
        let original = try WAVFile(path: source).int16Samples
        let copy = try WAVFile(path: out)
        #expect(copy.bitsPerSample == 16 && copy.sampleRate == 48000)
        #expect(copy.int16Samples == original)
        #expect(original.contains(Int16.min) || original.contains { $0 < -1000 })  // a real signal
    }

    @Test func fullScaleValuesAreClampedNotWrapped() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let out = dir.file("clamp.wav")
        let writer = try SoundFileWriter(path: out, sampleRate: 48000, channels: 1, format: .s16)
        let samples: [Float] = [-1, -1.5, 1, 1.5, 32767.0 / 32768, -0.5, 0.5 / 32768, 1.5 / 32768, -2.5 / 32768]
        try samples.withUnsafeBufferPointer { try writer.write($0, frames: samples.count) }
        try writer.finish()
        #expect(try WAVFile(path: out).int16Samples == [-32768, -32768, 32767, 32767, 32767, -16384, 0, 2, -2])
    }

    @Test func fileAppearsOnlyWhenFinished() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let out = dir.file("out.wav")
        let writer = try SoundFileWriter(path: out, sampleRate: 48000, channels: 2, format: .f32)
        let samples = [Float](repeating: 0.25, count: 2000)
        try samples.withUnsafeBufferPointer { try writer.write($0, frames: 1000) }
        #expect(!FileManager.default.fileExists(atPath: out))
        try writer.finish()
        #expect(dir.contents() == ["out.wav"])
        let file = try WAVFile(path: out)
        #expect(file.floatSamples == samples)

        let abandoned = try SoundFileWriter(path: dir.file("gone.wav"), sampleRate: 48000, channels: 1, format: .s16)
        try samples.withUnsafeBufferPointer { try abandoned.write($0, frames: 1000) }
        abandoned.abandon()
        #expect(dir.contents() == ["out.wav"])
    }
}
