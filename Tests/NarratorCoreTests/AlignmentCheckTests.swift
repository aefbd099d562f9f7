import Foundation
import NarratorCore
import Testing

/// `AlignmentCheck` on bursts of noise at known frames (NoiseBursts' signal), and on
/// inputs meant to break it: no samples, digital silence, zero-length words, a word on the last
/// frame, stereo.
@Suite("Alignment check")
struct AlignmentCheckTests {
    static let rate = NoiseBursts.rate
    static let ms = NoiseBursts.ms
    static let spans = NoiseBursts.spans
    static let frames = 2200 * ms

    static func words(_ spans: [(Int, Int)]) -> [WordTiming] {
        spans.enumerated().map { WordTiming(index: $0.offset, text: "w\($0.offset)", startFrame: $0.element.0, endFrame: $0.element.1) }
    }

    static func check(_ words: [WordTiming], _ samples: [Float], channels: Int = 1) -> [AlignmentCheck.Issue] {
        samples.withUnsafeBufferPointer { AlignmentCheck.check(words, samples: $0, channels: channels, rate: rate) }
    }

    @Test func exactWordsOverAFloorHaveNoIssue() {
        let samples = NoiseBursts.signal(Self.spans, frames: Self.frames, floor: 0.003)
        #expect(Self.check(Self.words(Self.spans), samples).isEmpty)
    }

    @Test func eachFaultAtItsWord() {
        let samples = NoiseBursts.signal(Self.spans, frames: Self.frames, floor: 0.003)
        func kinds(_ spans: [(Int, Int)]) -> [String] {
            Self.check(Self.words(spans), samples).map { "\($0.word.index) \($0.kind.rawValue)" }
        }
        var late = Self.spans
        late[2].0 += 40 * Self.ms  // starts 40 ms into its sound, after a 250 ms gap
        #expect(kinds(late) == ["2 cutStart"])
        var early = Self.spans
        early[0].1 -= 40 * Self.ms  // ends 40 ms before its sound does, a 60 ms gap after it
        #expect(kinds(early) == ["0 cutEnd"])
        var lonely = Self.spans
        lonely[4] = (1550 * Self.ms, 1750 * Self.ms)  // on the silence before its sound
        #expect(kinds(lonely) == ["4 silent"])
    }

    @Test func hostileInputsDoNotCrash() {
        let silence = [Float](repeating: 0, count: Self.frames)
        let zero = WordTiming(index: 0, text: "a", startFrame: 100, endFrame: 100)
        let long = WordTiming(index: 1, text: "b", startFrame: 200, endFrame: Self.frames)
        // Digital silence: nothing to judge sound by; durations still.
        #expect(Self.check([zero, long], silence).map(\.kind) == [.short, .long])
        // No samples at all.
        #expect(Self.check([zero], []).map(\.kind) == [.short])
        // No words.
        #expect(Self.check([], silence).isEmpty)
        // A word on the very last frame, and one past the samples (clamped, not trapped).
        let samples = NoiseBursts.signal(Self.spans, frames: Self.frames)
        let edge = WordTiming(index: 0, text: "x", startFrame: Self.frames - 1, endFrame: Self.frames + 5000)
        _ = Self.check([edge], samples)
        // Stereo: the same bursts on both channels, the same answer as mono.
        let stereo = samples.flatMap { [$0, $0] }
        #expect(Self.check(Self.words(Self.spans), stereo, channels: 2).isEmpty)
        // An odd sample count for the channels.
        _ = Self.check(Self.words(Self.spans), Array(stereo.dropLast()), channels: 2)
    }
}
