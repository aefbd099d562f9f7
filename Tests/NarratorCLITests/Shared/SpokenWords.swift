import Foundation
import NarratorTestSupport
import Testing

/// Speech whose word boundaries are known exactly, for the aligner's suites: espeak-ng speaks
/// each word alone, the words are cut to their sound (first to last sample at or above
/// −50 dBFS) and laid end to end with digital silences of known lengths.
enum SpokenWords {
    static let words = "look at the big brown dog it runs and jumps over seven small red fish".split(separator: " ").map(String.init)
    /// Silence before each word (the first: lead-in), and after the last, in milliseconds.
    static let gaps = [180, 60, 140, 250, 45, 110, 320, 70, 90, 200, 55, 130, 80, 160, 100]
    static let tail = 300
    static let rate = 22050
    /// A sample at or above this (−50 dBFS) is the word's sound.
    static let soundLevel: Int16 = 104

    struct Fixture {
        let path: String
        /// The words' frames: first sound sample, one past the last.
        let truth: [(start: Int, end: Int)]
        let frames: Int
    }

    /// The words at espeak-ng speed `speed` (words a minute), assembled with `gaps`.
    static func assemble(speed: Int, gaps: [Int] = gaps, repeats: Int = 1, in dir: TempDir) throws -> Fixture {
        var samples: [Int16] = []
        var truth: [(start: Int, end: Int)] = []
        for (position, word) in Array(repeating: words, count: repeats).joined().enumerated() {
            let index = position % words.count
            let file = dir.file("w\(speed)-\(index).wav")
            if position < words.count {
                let spoken = try runTool("espeak-ng", ["-v", "en", "-s", "\(speed)", "-w", file, word])
                try #require(spoken.status == 0, "\(spoken.stderr)")
            }
            let wav = try WAVFile(path: file)
            try #require(wav.sampleRate == rate && wav.channels == 1)
            let voice = wav.int16Samples
            let first = try #require(voice.firstIndex { abs(Int($0)) >= Int(soundLevel) })
            let last = try #require(voice.lastIndex { abs(Int($0)) >= Int(soundLevel) })
            // Between repeats, a sentence's pause.
            samples += [Int16](repeating: 0, count: (index == 0 && position > 0 ? 600 : gaps[index]) * rate / 1000)
            truth.append((samples.count, samples.count + last + 1 - first))
            samples += voice[first...last]
        }
        samples += [Int16](repeating: 0, count: tail * rate / 1000)
        let path = dir.write("speech\(speed)-\(gaps[1]).wav", data: WAVFile.pcm16(samples, rate: rate))
        return Fixture(path: path, truth: truth, frames: samples.count)
    }

    /// p50, p95 and max of |error| in milliseconds over every start and end.
    static func errors(_ found: [(start: Int, end: Int)], _ truth: [(start: Int, end: Int)]) throws -> (p50: Double, p95: Double, max: Double) {
        let frames: [Int] = zip(found, truth).flatMap { [abs($0.start - $1.start), abs($0.end - $1.end)] }
        let all: [Double] = frames.map { Double($0) * 1000 / Double(rate) }
        return (try Percentile.of(50, all), try Percentile.of(95, all), all.max() ?? 0)
    }

    static func describe(_ e: (p50: Double, p95: Double, max: Double)) -> String {
        String(format: "p50 %.1f ms, p95 %.1f ms, max %.1f ms", e.p50, e.p95, e.max)
    }

}
