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
