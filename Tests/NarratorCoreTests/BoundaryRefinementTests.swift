import Foundation
import NarratorCore
import Testing

/// `BoundaryRefinement` on signals built to the frame: bursts of noise (the "words") at known
/// frames, with known silences between them, under a quiet floor; the aligner's boundaries
/// are the truth moved by known amounts. What the refinement must find is where the bursts are.
@Suite("Boundary refinement")
struct BoundaryRefinementTests {
    static let rate = NoiseBursts.rate
    static let ms = NoiseBursts.ms

    /// Aligner words with no gaps: each boundary is the middle of the truth's gap moved by
    /// `shift[k]` ms; the first starts at 0 and the last ends at the clip's end.
    static func aligner(_ spans: [(Int, Int)], frames: Int, shift: [Int]) -> [WordTiming] {
        var cuts = [0]
        for k in 1..<spans.count { cuts.append((spans[k - 1].1 + spans[k].0) / 2 + shift[k] * ms) }
        cuts.append(frames)
        return spans.indices.map { WordTiming(index: $0, text: "w\($0)", startFrame: cuts[$0], endFrame: cuts[$0 + 1]) }
    }

    static func refine(_ words: [WordTiming], _ samples: [Float]) -> [BoundaryRefinement.Word] {
        samples.withUnsafeBufferPointer { BoundaryRefinement.refine(words, samples: $0, channels: 1, rate: rate) }
    }

    static let spans = NoiseBursts.spans
    static let frames = 2100 * ms

    @Test(arguments: [Float(0), 0.01])
    func boundariesLandOnTheSoundsEdgesAndPausesBecomeGaps(floor: Float) {
        let samples = NoiseBursts.signal(Self.spans, frames: Self.frames, floor: floor)
        // Boundaries off by up to 60 ms either way, inside or beyond the gap.
        let words = Self.aligner(Self.spans, frames: Self.frames, shift: [0, 40, -60, 25, 55])
        let refined = Self.refine(words, samples)
        #expect(refined.map(\.aligned) == words)
        for (word, truth) in zip(refined, Self.spans) {
            #expect(abs(word.timing.startFrame - truth.0) <= 2 * Self.ms, "floor \(floor): \(word.timing) vs \(truth)")
            #expect(abs(word.timing.endFrame - truth.1) <= 2 * Self.ms, "floor \(floor): \(word.timing) vs \(truth)")
            #expect(word.voiced > 0.9 && word.confidence > 0.3, "\(word)")
        }
    }

    @Test func aBoundaryDoesNotReachAPauseBeyondItsWindow() {
        // Two words run together at 1000 ms (no pause); the aligner put their boundary at
        // 860 ms, 140 ms into the first word's sound, and the nearest pause (before 600 ms)
        // is 260 ms away: beyond the 100 ms window, so the boundary may move only to the
        // quietest point within ±40 ms and both words still touch.
        let spans = [(100 * Self.ms, 600 * Self.ms), (700 * Self.ms, 1400 * Self.ms)]
        let samples = NoiseBursts.signal(spans, frames: 1600 * Self.ms)
        let words = [
            WordTiming(index: 0, text: "a", startFrame: 0, endFrame: 650 * Self.ms),
            WordTiming(index: 1, text: "b", startFrame: 650 * Self.ms, endFrame: 860 * Self.ms),
            WordTiming(index: 2, text: "c", startFrame: 860 * Self.ms, endFrame: 1600 * Self.ms),
        ]
        let refined = Self.refine(words, samples)
        #expect(abs(refined[1].timing.startFrame - 700 * Self.ms) <= 2 * Self.ms)
        #expect(refined[1].timing.endFrame == refined[2].timing.startFrame)
        #expect(abs(refined[1].timing.endFrame - 860 * Self.ms) <= 40 * Self.ms)
        #expect(refined[1].agreement < 1 && refined[2].agreement < 1)
        #expect(abs(refined[2].timing.endFrame - 1400 * Self.ms) <= 2 * Self.ms)
    }

    @Test func hostileInputsGiveOrderedWordsAndNeverTrap() {
        let samples = NoiseBursts.signal(Self.spans, frames: Self.frames)
        let cases: [[WordTiming]] = [
            // A word in silence, zero-length words, words past the audio's end.
            [
                WordTiming(index: 0, text: "a", startFrame: 0, endFrame: 0), WordTiming(index: 1, text: "b", startFrame: 0, endFrame: 100),
                WordTiming(index: 2, text: "c", startFrame: 750 * Self.ms, endFrame: 900 * Self.ms),
                WordTiming(index: 3, text: "d", startFrame: Self.frames, endFrame: Self.frames * 3),
            ],
            [WordTiming(index: 0, text: "only", startFrame: 0, endFrame: Self.frames)],
        ]
        for words in cases {
            let refined = Self.refine(words, samples)
            #expect(refined.count == words.count)
            for (index, word) in refined.enumerated() {
                #expect(word.timing.startFrame <= word.timing.endFrame, "\(word)")
                if index > 0 { #expect(refined[index - 1].timing.endFrame <= word.timing.startFrame, "\(refined)") }
                #expect((0...1).contains(word.confidence))
            }
        }
        #expect(Self.refine([], samples).isEmpty)
        let silent = Self.refine([WordTiming(index: 0, text: "x", startFrame: 0, endFrame: 10)], [])
        #expect(silent.count == 1 && silent[0].voiced == 0)
    }
}
