import Foundation
import NarratorCore
import Testing

/// `AlignConfidence` on recordings built to the millisecond (`PhoneStageRefinementTests.signal`:
/// noise bursts as words at known places, white noise as the floor at a known level), so the
/// right boundaries, the recording's range and each word's slack are known before the code runs.
@Suite("Align confidence")
struct AlignConfidenceTests {
    static let ms = PhoneStageRefinementTests.ms
    static let rate = PhoneStageRefinementTests.rate
    /// Five words' sounds (ms), pauses of 150–200 ms between them (room for a boundary 100 ms
    /// into each); their level is RMS 0.23 (uniform ±0.4).
    static let spans = [(200, 450), (620, 800), (980, 1250), (1400, 1560), (1760, 2000)]
    static let length = 2300

    static func samples(floor: Float) -> [Float] {
        PhoneStageRefinementTests.signal(spans.map { ($0.0, $0.1, 1) }, milliseconds: length, floor: floor)
    }

    static func timings(_ spans: [(Int, Int)]) -> [WordTiming] {
        spans.enumerated().map { WordTiming(index: $0.offset, text: "w\($0.offset)", startFrame: $0.element.0 * ms, endFrame: $0.element.1 * ms) }
    }

    static func judge(_ spans: [(Int, Int)], _ samples: [Float]) -> (range: Double, words: [(slack: Double, confidence: Double)]) {
        samples.withUnsafeBufferPointer { AlignConfidence.confidences(timings(spans), samples: $0, channels: 1, rate: rate) }
    }

    /// Digital silence, and a floor 58 dB under the words (uniform ±0.0005: RMS 0.00029).
    @Test(arguments: [Float(0), 0.0005])
    func exactTimingsOfACleanRecordingReportNothing(floor: Float) {
        let result = Self.judge(Self.spans, Self.samples(floor: floor))
        #expect(result.range > 50, "range \(result.range)")
        for (index, word) in result.words.enumerated() {
            #expect(word.slack <= 2 && word.confidence >= 0.95, "word \(index): \(word)")
        }
    }

    /// Word 1's end 100 ms into the pause after it, word 3's start 100 ms into the pause before
    /// it: those two are reported, with the 100 ms as their slack; word 4's end 30 ms on is not
    /// (30 ms is not off), and the exact words are untouched. Slack is read on the 10 ms
    /// levels, which spread a sound's edge by up to 5 ms: hence 6 ms of tolerance.
    @Test func aBoundaryAHundredMillisecondsIntoAPauseIsReported() {
        var spans = Self.spans
        spans[1].1 += 100
        spans[3].0 -= 100
        spans[4].1 += 30
        let result = Self.judge(spans, Self.samples(floor: 0.0005))
        for index in [1, 3] {
            #expect(abs(result.words[index].slack - 100) <= 6, "word \(index): \(result.words[index])")
            #expect(result.words[index].confidence < AlignConfidence.threshold, "word \(index): \(result.words[index])")
        }
        #expect(abs(result.words[4].slack - 30) <= 6 && result.words[4].confidence >= AlignConfidence.threshold, "\(result.words[4])")
        for index in [0, 2] { #expect(result.words[index].confidence >= 0.95, "word \(index): \(result.words[index])") }
    }

    /// The same shifted boundaries as a first stage's words, fed through the refinement: in a
    /// clean recording it moves them onto the pauses, so the words are right and none is
    /// reported; the stage's own words, judged as they came, are.
    @Test func whatTheRefinementPutsRightIsNotReported() {
        let samples = Self.samples(floor: 0.0005)
        var shifted = Self.spans
        shifted[1].1 += 100
        shifted[3].0 -= 100
        let stage = PhoneStageRefinementTests.stage(shifted).map { word -> BoundaryRefinement.StageWord in
            var vowel = word
            vowel.phones[0].name = "AA"
            return vowel
        }
        let refined = samples.withUnsafeBufferPointer { BoundaryRefinement.refinePhoneStage(stage, samples: $0, channels: 1, rate: Self.rate) }
        for (word, truth) in zip(refined, Self.spans) {
            #expect(abs(word.timing.startFrame - truth.0 * Self.ms) <= 2 * Self.ms && abs(word.timing.endFrame - truth.1 * Self.ms) <= 2 * Self.ms, "\(word.timing) vs \(truth)")
            #expect(word.confidence >= AlignConfidence.threshold, "\(word.timing.text): \(word.confidence), slack \(word.slack)")
        }
        let asTheyCame = Self.judge(shifted, samples)
        #expect(asTheyCame.words.map { $0.confidence < AlignConfidence.threshold } == [false, true, false, true, false], "\(asTheyCame)")
    }

    /// A floor 20 dB under the words (uniform ±0.04: RMS 0.023 against 0.23): their pauses are
    /// not quiet and every word is reported, even exactly timed; 40 dB under (±0.004), none.
    @Test(arguments: [(Float(0.04), 20.0, true), (0.004, 40.0, false)])
    func aFloorCloseUnderTheWordsReportsEveryWord(floor: Float, range: Double, reported: Bool) {
        let result = Self.judge(Self.spans, Self.samples(floor: floor))
        #expect(abs(result.range - range) <= 3, "range \(result.range), made \(range)")
        #expect(result.words.allSatisfy { ($0.confidence < AlignConfidence.threshold) == reported }, "\(result)")
    }
}
