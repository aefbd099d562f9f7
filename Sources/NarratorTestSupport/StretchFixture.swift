import Foundation

/// A lesson for testing speed: sox bursts, each after a stretch of digital silence, labelled to
/// the frame where its sound starts, and a 1 s 440 Hz tone (its word "la"), in one chain `x`.
/// Its first clip (`start`) begins at a sine's peak, so the first frame heard is found to the
/// frame. An onset threshold finds the words in any render of it without knowing how it was
/// made (`onsets`).
public enum StretchFixture {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Writes the clips and `lesson.json` into `dir`; returns the lesson's path.
    public static func write(in dir: TempDir) throws -> String {
        func sox(_ name: String, _ effects: [String]) throws -> String {
            let path = dir.file(name)
            let made = try runTool("sox", ["-D", "-n", "-r", "48000", "-c", "1", "-b", "16", path, "synth"] + effects)
            guard made.status == 0 else { throw Failure(description: "sox: \(made.stderr)") }
            return path
        }
        let start = try sox("start.wav", ["0.1", "sine", "440", "0", "25", "vol", "0.5"])
        let b1 = try sox("b1.wav", ["0.25", "sawtooth", "160", "vol", "0.4", "pad", "0.1", "0.1"])
        let b2 = try sox("b2.wav", ["0.25", "square", "220", "vol", "0.3", "pad", "0.05", "0.1"])
        let a440 = try sox("a440.wav", ["1", "sine", "440", "0", "25", "vol", "0.5", "pad", "0.1", "0.1"])
        _ = dir.write("b1.txt", "0.1\t0.35\tone\n")
        _ = dir.write("b2.txt", "0.05\t0.3\ttwo\n")
        _ = dir.write("a440.txt", "0.1\t1.1\tla\n")
        return dir.write(
            "lesson.json",
            """
            {"sampleRate": 48000, "channels": 2,
             "clips": {"start": {"file": "\(start)"}, "b1": {"file": "\(b1)", "timings": "b1.txt"},
                       "b2": {"file": "\(b2)", "timings": "b2.txt"}, "a440": {"file": "\(a440)", "timings": "a440.txt"}},
             "chains": {"x": [{"clip": "start"}, {"silence": 0.1}, {"clip": "b1"}, {"silence": 0.2}, {"clip": "b2"},
                              {"clip": "a440"}, {"clip": "b1"}, {"clip": "b2"}, {"silence": 0.3}, {"clip": "b1"},
                              {"clip": "b2"}, {"clip": "b1"}, {"clip": "b2"}]}}
            """)
    }

    /// Onsets in 16-bit stereo `samples` from frame `from` (counted from there): the first
    /// frame whose larger channel is at least 0.05 of full scale after at least 50 ms below it.
    public static func onsets(_ samples: [Int16], from: Int = 0, rate: Int = 48_000) -> [Int] {
        var found: [Int] = []
        var below = rate / 20
        let threshold = Int(0.05 * 32768)
        for f in from..<(samples.count / 2) {
            if max(abs(Int(samples[2 * f])), abs(Int(samples[2 * f + 1]))) >= threshold {
                if below >= rate / 20 { found.append(f - from) }
                below = 0
            } else {
                below += 1
            }
        }
        return found
    }

    /// The frequency of a tone in `frames` of the left channel of 16-bit stereo `samples`, from
    /// its upward zero crossings, interpolated between samples.
    public static func frequency(_ samples: [Int16], _ frames: Range<Int>, rate: Int = 48_000) -> Double {
        var crossings: [Double] = []
        for f in frames.dropFirst() {
            let a = Double(samples[2 * (f - 1)]), b = Double(samples[2 * f])
            if a < 0 && b >= 0 { crossings.append(Double(f - 1) + a / (a - b)) }
        }
        guard let first = crossings.first, let last = crossings.last, crossings.count > 2 else { return 0 }
        return Double(crossings.count - 1) / (last - first) * Double(rate)
    }
}
