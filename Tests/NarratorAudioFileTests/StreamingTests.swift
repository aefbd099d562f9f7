import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorTestSupport
import Testing

/// A file streamed through a ring while the mixer plays must sound exactly like the same file
/// decoded into memory, regions and resampling included.
@Suite("Streaming")
struct StreamingTests {
    func render(_ lessonPath: String, streamAbove: Int?, ringSeconds: Double = 2) throws -> [Float] {
        let lesson = try Lesson.load(path: lessonPath)
        let decoder = SndFileDecoder(streamAboveSeconds: streamAbove)
        let bank = try ClipBank.prepare(lesson: lesson, chain: "c", decoder: decoder)
        var draws = PoolDraws(seed: 1)
        let schedule = try Scheduler.schedule(chain: "c", bank: bank, draws: &draws)
        let streamed = schedule.voices.filter { if case .stream = $0.audio.source { true } else { false } }.count
        #expect(streamed == (streamAbove == nil ? 0 : 3))
        let feeder = StreamFeeder(schedule: schedule, ringSeconds: ringSeconds)
        let mixer = Mixer(schedule: schedule, lanes: feeder.lanes)
        var out = [Float](repeating: 0, count: schedule.frames * schedule.channels)
        var position = 0
        // Odd block sizes, so ring wrap-around and voice boundaries fall mid-block.
        let blocks = [1000, 4096, 333, 8191]
        var b = 0
        while position < schedule.frames {
            let n = min(blocks[b % blocks.count], schedule.frames - position)
            b += 1
            #expect(feeder.fill().isEmpty)
            out.withUnsafeMutableBufferPointer { all in
                mixer.render(into: UnsafeMutableBufferPointer(rebasing: all[(position * 2)..<((position + n) * 2)]), frameCount: n)
            }
            position += n
        }
        #expect(mixer.streamShortfall == 0)
        return out
    }

    @Test func streamedEqualsDecoded() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for (name, rate) in [("bed48.wav", 48000), ("bed44.wav", 44100)] {
            let made = try runTool(
                "sox", ["-n", "-r", "\(rate)", "-c", "2", "-b", "16", dir.file(name), "synth", "5", "sine", "300-900", "sine", "450", "vol", "0.3"])
            try #require(made.status == 0, "\(made.stderr)")
        }
        let sfx = Repo.path("Audio/lessons/sfx/correct.wav")
        let lessonPath = dir.write(
            "l.json",
            """
            {"sampleRate": 48000, "channels": 2,
             "clips": {"sfx": {"file": "\(sfx)"}, "a": {"file": "bed48.wav"}, "b": {"file": "bed48.wav", "start": 1.25, "end": 3.5},
                       "r": {"file": "bed44.wav", "start": 0.5}},
             "chains": {"c": [{"clip": "a"}, {"clip": "sfx"}, {"clip": "b"}, {"silence": 0.01}, {"clip": "r"}]}}
            """)
        let decoded = try render(lessonPath, streamAbove: nil)
        // Stream every file over a second, through rings smaller than a clip.
        let streamed = try render(lessonPath, streamAbove: 1, ringSeconds: 0.5)
        #expect(streamed.count == decoded.count)
        // 48 kHz parts: identical. The resampled part: soxr in streaming mode against soxr in
        // one pass, the same filter: equal to well below a 16-bit step.
        let resampledFrom = (5 * 48000 + 14400 + 108000 + 480) * 2
        #expect(Array(streamed[..<resampledFrom]) == Array(decoded[..<resampledFrom]))
        var worst: Float = 0
        for i in resampledFrom..<decoded.count { worst = max(worst, abs(streamed[i] - decoded[i])) }
        #expect(worst < 1.0 / 32768, "largest difference \(worst)")
    }
}

/// A streamed file refilled from another place (a seek) gives the render from that frame, in
/// every compressed format Narrator reads (issue 28.3b).
@Suite("Streaming seeks")
struct StreamingSeekTests {
    /// Renders `schedule` from frame 0 to the end (the reference), then, in a second mixer,
    /// 0.5 s, a seek to `target`, and 1 s from there (the feeder filling before each block,
    /// as offline): returns the largest difference from the reference and the offset where
    /// the seeked audio best matches it.
    static func seek(_ schedule: Schedule, to target: Int, refill: Bool) throws -> (worst: Float, reference: [Float], got: [Float]) {
        var reference: [Float] = []
        try OfflineRenderer.render(schedule) { block, _ in reference.append(contentsOf: block) }
        let feeder = StreamFeeder(schedule: schedule)
        let mixer = Mixer(schedule: schedule, lanes: feeder.lanes)
        var scratch = [Float](repeating: 0, count: 4096 * schedule.channels)
        func render(_ frames: Int) -> [Float] {
            var out: [Float] = []
            var left = frames
            while left > 0 {
                let n = min(4096, left)
                _ = feeder.fill()
                #expect(mixer.streamsReady())
                scratch.withUnsafeMutableBufferPointer { mixer.render(into: $0, frameCount: n) }
                out.append(contentsOf: scratch[0..<(n * schedule.channels)])
                left -= n
            }
            return out
        }
        _ = render(24000)
        mixer.seek(to: target)
        #expect(mixer.streamsReady() != refill, refill ? "a seek this far needs a refill" : "the ring holds (or keeps) the frame")
        var tries = 0
        while !mixer.streamsReady() && tries < 10 {
            _ = feeder.fill()
            tries += 1
        }
        let got = render(48000)
        let want = Array(reference[(target * schedule.channels)..<((target + 48000) * schedule.channels)])
        let worst = zip(got, want).map { abs($0 - $1) }.max() ?? 0
        return (worst, want, got)
    }

    @Test(arguments: ["wav", "flac", "ogg", "opus", "mp3", "mp3-no-header", "wav44"])
    func aSeekIntoAStreamedFileLandsOnTheRender(format: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let rate = format == "wav44" ? 44100 : 48000
        let source = dir.file("source.wav")
        let made = try runTool(
            "sox", ["-n", "-r", "\(rate)", "-c", "2", "-b", "16", source, "synth", "8", "sine", "200-3000", "sine", "457", "vol", "0.3"])
        try #require(made.status == 0, "\(made.stderr)")
        let file: String
        switch format {
        case "flac":
            file = dir.file("bed.flac")
            try #require(try runTool("sox", [source, file]).status == 0)
        case "ogg":
            file = dir.file("bed.ogg")
            try #require(try runTool("oggenc", ["-Q", "-q", "5", "-o", file, source]).status == 0)
        case "opus":
            file = dir.file("bed.opus")
            try #require(try runTool("opusenc", ["--quiet", "--bitrate", "128", source, file]).status == 0)
        case "mp3":
            file = dir.file("bed.mp3")
            try #require(try runTool("lame", ["--quiet", "-b", "192", source, file]).status == 0)
        case "mp3-no-header":
            // No Xing/LAME tag: no gapless information (the encoder's delay stays in).
            file = dir.file("bed.mp3")
            try #require(try runTool("lame", ["--quiet", "-t", "-b", "192", source, file]).status == 0)
        default:
            file = source
        }
        let lessonPath = dir.write(
            "l.json",
            """
            {"sampleRate": 48000, "channels": 2,
             "clips": {"bed": {"file": "\(file)", "start": 0.25}},
             "chains": {"c": [{"silence": 0.1}, {"clip": "bed"}]}}
            """)
        let lesson = try Lesson.load(path: lessonPath)
        let bank = try ClipBank.prepare(lesson: lesson, chain: "c", decoder: SndFileDecoder(streamAboveSeconds: 1))
        var draws = PoolDraws(seed: 1)
        let schedule = try Scheduler.schedule(chain: "c", bank: bank, draws: &draws)
        try #require(schedule.voices.contains { if case .stream = $0.audio.source { true } else { false } })
        // Forward past what the ring holds, and less far (within it); back before what it
        // keeps (the seek comes after 0.5 s), and less far (within its history).
        for (target, refill) in [(5 * 48000 + 1234, true), (100_001, false), (3 * 48000 + 77, true), (19_003, false)] {
            let (worst, want, got) = try Self.seek(schedule, to: target, refill: refill)
            #expect(want.contains { abs($0) > 0.1 }, "the render is not silent there")
            // Where the seeked audio best matches the render, within ±100 frames.
            func error(at shift: Int) -> Double {
                var sum = 0.0
                for i in 2000..<40000 { sum += Double(abs(got[(i + shift) * 2] - want[i * 2])) }
                return sum
            }
            let best = (-100...100).min { error(at: $0) < error(at: $1) }!
            print("\(format): seek to \(target): largest difference \(worst) (\(worst * 32768) of a 16-bit step), best match at \(best) frames")
            #expect(best == 0, "\(format): the seek lands \(best) frames off")
            // Measured (libsndfile 1.2.0, libmpg123 1.31.2, libopus 1.3.1, libvorbis 1.3.7,
            // libsoxr 0.1.3): the seeks land on the frame in every format, with the floats of
            // a decode from the start, an MP3 without a gapless header included (its position
            // counts the encoder's delay, on both paths alike), and a resampled file, which
            // restarts libsoxr on its own grid (an input frame whose output position is
            // whole). Opus alone is not bit-exact: its decoder's state after the seek's
            // pre-roll differs from a decode from the start by up to 6e-8 (2^-24, the last
            // bit of a float near full scale: 1/512 of a 16-bit step).
            if format == "opus" {
                #expect(worst <= 0x1p-22, "\(format): seek to \(target) differs by \(worst)")
            } else {
                #expect(worst == 0, "\(format): seek to \(target) differs by \(worst)")
            }
        }
    }
}
