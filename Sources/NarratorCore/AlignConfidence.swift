import Foundation

/// How sure `narrator align` is of each word's boundaries, from evidence an error leaves in the
/// audio (docs/align.md, "Confidence"). The product of two measures, each 0…1:
///
/// - **separation**, of the recording: how far its speech level stands over its floor (the
///   90th and 10th percentiles of its 10 ms levels, as the refinement measures them), its
///   `range`. Where the floor is a bed or a room close under the voice, the pauses between
///   words are not quiet, the energy cannot place a boundary, and the first stage's model hears
///   the bed too: on the bench's synthetic voices with a piano bed 20 dB under the voice
///   (ranges of 24–34 dB) 60 % of the words are more than 50 ms off, against none of the clean
///   ones (over 75 dB). 0 at `noRange` (20 dB: the sound threshold sits 10 dB over the floor
///   and a word's sound is what rises 10 dB over the threshold, so under 20 dB no sound can be
///   told for a word), 1 at `fullRange` (50 dB: a clean recording, whose floor's runs the
///   refinement trusts, `PhoneRules.cleanRange`), linear between.
/// - **slack**, of the word: how far its boundaries lie past its own sound (to the first and
///   the last of its 10 ms levels over the sound threshold; in a clean recording, over the
///   floor by `floorRise` dB, the level the refinement's floor runs are cut at). A boundary
///   that far into quiet is that far from where anyone would put it: 1 at 0 ms, 0.5 at 50 ms
///   (the bench's definition of a word off), 0 at `noSlack` (100 ms).
///
/// A word under `threshold` (0.5) is reported: in a clean recording, one with 50 ms of
/// slack; with no slack, every word of a recording whose range is under 35 dB.
///
/// Left out, measured on the bench (docs/align.md): how far the refinement moved a boundary
/// (it moves the first stage's wrong boundaries onto the right pauses), PocketSphinx's acoustic
/// score per frame, the share of its phones squeezed to 30 ms, a word's length against its
/// phones' count: none told the words off from the words right.
public enum AlignConfidence {
    /// A word under this is reported (`align`'s summary line, `--report`'s `lowConfidence`).
    public static let threshold = 0.5
    /// The recording's range (speech over floor, dB) at which separation is 0 and 1.
    public static let noRange = 20.0
    public static let fullRange = BoundaryRefinement.PhoneRules.cleanRange
    /// Slack (ms) at which a word's boundaries count for 0.
    public static let noSlack = 100.0
    /// In a clean recording, a level within this many dB of the floor is quiet.
    public static let floorRise = 6.0

    /// The recording's range: its speech level over its floor, in dB, each level in dB as the
    /// phone-stage refinement takes them (`10 log10(level + 1e-12)`: a floor of digital
    /// silence is −120 dB).
    public static func range(_ envelope: BoundaryRefinement.Envelope) -> Double {
        10 * log10(envelope.speech + 1e-12) - 10 * log10(envelope.floor + 1e-12)
    }

    /// Separation (0…1) of a recording with that range.
    public static func separation(range: Double) -> Double {
        min(1, max(0, (range - noRange) / (fullRange - noRange)))
    }

    /// How far (ms) the word `first..<last` (frames) reaches past its own sound at either end;
    /// its whole length when none of it sounds.
    public static func slack(startFrame: Int, endFrame: Int, envelope: BoundaryRefinement.Envelope, rate: Int) -> Double {
        let count = envelope.smoothed.count
        let first = min(count, max(0, startFrame / envelope.block))
        let last = min(count, max(first, (endFrame + envelope.block - 1) / envelope.block))
        let clean = range(envelope) > BoundaryRefinement.PhoneRules.cleanRange
        let quiet = clean ? max(envelope.floor * pow(10, floorRise / 10), Double.leastNonzeroMagnitude) : envelope.threshold
        var onset = first
        while onset < last && envelope.smoothed[onset] <= quiet { onset += 1 }
        var offset = last
        while offset > onset && envelope.smoothed[offset - 1] <= quiet { offset -= 1 }
        let blocks = onset == last ? last - first : max(onset - first, last - offset)
        return Double(blocks * envelope.block) * 1000 / Double(rate)
    }

    /// The confidence (0…1) of a word with that slack in a recording with that range.
    public static func confidence(range: Double, slack: Double) -> Double {
        separation(range: range) * max(0, 1 - slack / noSlack)
    }

    /// Sets each word's `range`, `slack` and `confidence` from its refined interval. A word
    /// whose both boundaries lie on runs of a background's spectrum (`onBackgroundRuns`,
    /// `BoundaryRefinement.BackgroundPauses`: a bed's pauses told from the words by their
    /// spectra, not their level) has its separation at 1 whatever the recording's range, and no
    /// slack: its boundaries are where the background alone begins and ends, its own sound's
    /// edges by that evidence (the level's, under a bed, are the bed's).
    public static func assess(
        _ words: inout [BoundaryRefinement.Word], envelope: BoundaryRefinement.Envelope, rate: Int, onBackgroundRuns: [Bool] = []
    ) {
        let range = range(envelope)
        for index in words.indices {
            let anchored = index < onBackgroundRuns.count && onBackgroundRuns[index]
            let slack = anchored ? 0 : slack(startFrame: words[index].timing.startFrame, endFrame: words[index].timing.endFrame, envelope: envelope, rate: rate)
            words[index].range = range
            words[index].slack = slack
            words[index].confidence = confidence(range: anchored ? fullRange : range, slack: slack)
        }
    }

    /// The confidence of timed words over mono or interleaved samples, as `assess` judges
    /// them (what `validate` checks a timing file with).
    public static func confidences(
        _ timings: [WordTiming], samples: UnsafeBufferPointer<Float>, channels: Int, rate: Int
    ) -> (range: Double, words: [(slack: Double, confidence: Double)]) {
        let envelope = BoundaryRefinement.Envelope(samples: samples, channels: channels, rate: rate)
        let range = range(envelope)
        return (range, timings.map {
            let slack = slack(startFrame: $0.startFrame, endFrame: $0.endFrame, envelope: envelope, rate: rate)
            return (slack, confidence(range: range, slack: slack))
        })
    }
}
