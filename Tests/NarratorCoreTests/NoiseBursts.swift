import Foundation
import NarratorCore

/// Signals built to the frame for the boundary refinement's and the alignment check's suites:
/// bursts of noise (the "words") at known frames, with known silences between them, under a
/// quiet floor.
enum NoiseBursts {
    static let rate = 16000
    static let ms = rate / 1000

    /// Word sounds (first frame, one past the last), and the samples: noise at about −12 dBFS
    /// RMS inside them, `floor` (a 4 Hz-modulated 150 Hz tone) everywhere.
    static func signal(_ spans: [(Int, Int)], frames: Int, floor: Float = 0, seed: UInt64 = 7) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        var samples = (0..<frames).map { frame -> Float in
            let t = Float(frame) / Float(rate)
            return floor * (0.7 + 0.3 * sin(2 * .pi * 4 * t)) * sin(2 * .pi * 150 * t)
        }
        for (start, end) in spans {
            for frame in start..<end { samples[frame] += Float.random(in: -0.45...0.45, using: &generator) }
        }
        return samples
    }

    /// Five words' sounds at 16 kHz, with pauses of 40 to 300 ms between them.
    static let spans = [(200, 450), (510, 700), (950, 1180), (1220, 1500), (1800, 1900)].map { ($0.0 * ms, $0.1 * ms) }
}
