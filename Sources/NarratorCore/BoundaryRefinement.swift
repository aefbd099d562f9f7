import Foundation

/// Word boundaries from a forced aligner, moved onto the sound of the audio itself.
///
/// An aligner such as aeneas places its boundaries on a coarse grid (aeneas: 40 ms MFCC frames)
/// and leaves no gaps: each word runs to the next one's start, pauses included. This moves
/// each boundary to where the audio's short-time energy says a word's sound begins or stops:
///
/// - Energy: the mean square of 1 ms blocks of the pre-emphasised signal (x[n] − 0.97 x[n−1]:
///   it weighs the consonants' 1–4 kHz over a music bed's low notes), smoothed over 10 ms (a 10 ms RMS window, one value
///   a millisecond). A block is sound when its smoothed level is above a threshold set from the
///   clip itself: `speechDrop` dB under its speech level (the 90th percentile of its 10 ms
///   levels), but at least `floorRise` dB over its noise floor (the 10th percentile), so that a
///   music bed or room noise under the voice does not count as a word.
/// - Pauses: runs of at least `minPause` of no sound. Their edges are then found to the
///   millisecond on the unsmoothed blocks.
/// - Each boundary between two words takes the pause nearest to it (the one it falls in, or
///   one within `window`): the earlier word ends where the pause begins and the later starts
///   where it ends, so a pause becomes a gap that belongs to neither. With no pause that near
///   (connected speech), the boundary moves to the quietest 10 ms within ±40 ms (one aeneas
///   grid step) and the two words still touch. The first word's start and the last word's end
///   are boundaries with the clip's edges.
/// - The window: a boundary only looks for a pause within `window` (100 ms) of where the
///   aligner put it. That is two and a half of aeneas's grid steps (its errors were measured up
///   to 56 ms, AeneasTests) and less than a short word lasts (150–250 ms), so a boundary can
///   reach the pause it belongs to but cannot jump over a whole word to the next one; pauses
///   are taken in order, none twice. Inside its own interval a word may shrink to its sound
///   however long the pause it gives up.
///
/// Each word gets how far its boundaries had to go to reach a pause (`agreement`, 1 when the
/// aligner's boundary was inside it, 0 at `window`), the part of its refined interval that
/// holds sound (`voiced`), and a confidence (`AlignConfidence`).
public enum BoundaryRefinement {
    public struct Settings: Sendable, Equatable {
        /// How far from the aligner's boundary a pause is looked for, in seconds.
        public var window = 0.100
        /// The shortest run of no sound taken as a pause between words, in seconds.
        public var minPause = 0.010
        /// The sound threshold under the clip's speech level, in dB.
        public var speechDrop = 45.0
        /// The sound threshold over the clip's noise floor, in dB (the higher of the two holds).
        public var floorRise = 10.0

        public init() {}
    }

    /// One word: the aligner's interval and the refined one, in frames, and how sure.
    public struct Word: Sendable, Equatable {
        /// The refined word (same index and text as the aligner's).
        public var timing: WordTiming
        /// The aligner's word as it came.
        public var aligned: WordTiming
        /// 1 when the aligner's boundaries fell inside the pauses taken; 0 when they were a
        /// whole window away.
        public var agreement: Double
        /// The part of the refined interval that holds sound (0…1).
        public var voiced: Double
        /// How sure the word's boundaries are (0…1; `AlignConfidence`: the recording's
        /// separation × the word's slack); under `AlignConfidence.threshold` it is reported.
        public var confidence = 0.0
        /// The recording's speech level over its floor, in dB (`AlignConfidence.range`).
        public var range = 0.0
        /// How far the word's boundaries reach past its own sound, in ms (`AlignConfidence.slack`).
        public var slack = 0.0
        /// The first stage that placed the word: "aeneas" or "pocketsphinx".
        public var stage = "aeneas"
        /// How far the refinement moved the word's farther boundary from the first stage's, in
        /// milliseconds (agreement between the two stages).
        public var stageShift = 0.0
        /// PocketSphinx's acoustic score of the word per 10 ms frame (a log likelihood, ≤ 0):
        /// nil for aeneas.
        public var acousticScore: Double? = nil
        /// The part of the word's phones that PocketSphinx squeezed to its 3-frame (30 ms)
        /// minimum: nil for aeneas.
        public var squeezedPhones: Double? = nil
    }

    /// The energy of mono audio, one value per block of about 1 ms.
    public struct Envelope: Sendable {
        /// Frames per block: rate / 1000, at least 1.
        public let block: Int
        /// Mean square of each block's samples (all channels).
        public let energy: [Double]
        /// The mean of `energy` over a 10 ms window centred on each block.
        public let smoothed: [Double]
        /// The smoothed level above which a block is sound.
        public let threshold: Double
        /// The clip's speech level (the 90th percentile of its 10 ms levels) and its noise floor
        /// (the 10th), as mean squares.
        public let speech: Double
        public let floor: Double

        /// `samples` interleaved with `channels` channels at `rate` Hz.
        public init(samples: UnsafeBufferPointer<Float>, channels: Int, rate: Int, settings: Settings = Settings()) {
            precondition(channels > 0 && rate > 0)
            var blocks = Blocks(channels: channels, rate: rate)
            blocks.add(UnsafeBufferPointer(rebasing: samples[0..<(samples.count / channels * channels)]))
            self.init(blocks, settings: settings)
        }

        /// The envelope of everything `blocks` was fed (a recording read a piece at a time):
        /// the same values as from its samples at once.
        public init(_ blocks: consuming Blocks, settings: Settings = Settings()) {
            var blocks = blocks
            let energy = blocks.finish()
            let block = blocks.block
            self.block = block
            let count = energy.count
            self.energy = energy
            // Running sums: a 10-block window, 5 before the block and 5 from it on.
            let half = 5
            var prefix = [Double](repeating: 0, count: count + 1)
            for index in 0..<count { prefix[index + 1] = prefix[index] + energy[index] }
            var smoothed = [Double](repeating: 0, count: count)
            for index in 0..<count {
                let low = max(0, index - half)
                let high = min(count, index + half)
                smoothed[index] = high > low ? (prefix[high] - prefix[low]) / Double(high - low) : 0
            }
            self.smoothed = smoothed
            // The clip's levels on 10 ms frames that do not overlap.
            var levels = stride(from: 0, to: count, by: 2 * half).map { smoothed[min(count - 1, $0 + half)] }.sorted()
            if levels.isEmpty { levels = [0] }
            func percentile(_ p: Double) -> Double { levels[min(levels.count - 1, Int(Double(levels.count - 1) * p))] }
            let speech = percentile(0.90)
            let floor = percentile(0.10)
            self.speech = speech
            self.floor = floor
            let underSpeech = speech * pow(10, -settings.speechDrop / 10)
            let overFloor = floor * pow(10, settings.floorRise / 10)
            // Digital silence: anything that is not exactly zero is sound.
            threshold = max(underSpeech, overFloor, Double.leastNonzeroMagnitude)
        }

        func sound(_ index: Int) -> Bool { smoothed[index] > threshold }
        func rawSound(_ index: Int) -> Bool { energy[index] > threshold }

        /// The 1 ms blocks' energies of interleaved samples fed a chunk at a time (any chunk
        /// lengths, whole frames): the pre-emphasis carries each channel's last sample over.
        public struct Blocks: Sendable {
            /// Frames per block: rate / 1000, at least 1.
            public let block: Int
            let channels: Int
            var energy: [Double] = []
            /// The block being summed: its sum and how many samples it holds.
            var sum = 0.0
            var filled = 0
            /// Each channel's last sample (0 before the first).
            var previous: [Double]

            /// `expectedFrames`: how long the recording is said to be (room is made for its
            /// blocks at once instead of growing by doubling); 0 when not known.
            public init(channels: Int, rate: Int, expectedFrames: Int = 0) {
                precondition(channels > 0 && rate > 0)
                block = max(1, rate / 1000)
                self.channels = channels
                previous = [Double](repeating: 0, count: channels)
                energy.reserveCapacity(min(max(0, expectedFrames), 1 << 32) / block + 1)
            }

            /// Whole frames of interleaved samples.
            public mutating func add(_ samples: UnsafeBufferPointer<Float>) {
                let size = block * channels
                var position = 0
                var channel = 0
                while position < samples.count {
                    let sample = Double(samples[position])
                    // Pre-emphasis (x[n] − 0.97 x[n−1], per channel), as speech front ends do.
                    let emphasised = sample - 0.97 * previous[channel]
                    previous[channel] = sample
                    sum += emphasised * emphasised
                    filled += 1
                    if filled == size {
                        energy.append(sum / Double(size))
                        sum = 0
                        filled = 0
                    }
                    position += 1
                    channel += 1
                    if channel == channels { channel = 0 }
                }
            }

            /// The energies, the last block's however short.
            mutating func finish() -> [Double] {
                if filled > 0 {
                    energy.append(sum / Double(filled))
                    sum = 0
                    filled = 0
                }
                return energy
            }
        }
    }

    /// A pause, in blocks: the last block of sound before it ends at `start`, the first after
    /// it is `end`.
    struct Pause {
        var start: Int
        var end: Int
    }

    static func pauses(_ envelope: Envelope, minBlocks: Int) -> [Pause] {
        let count = envelope.energy.count
        var pauses: [Pause] = []
        var index = 0
        while index < count {
            guard !envelope.sound(index) else {
                index += 1
                continue
            }
            var end = index
            while end < count, !envelope.sound(end) { end += 1 }
            // The clip's edges bound a pause of any length.
            if end - index >= minBlocks || index == 0 || end == count {
                // The edges to the millisecond, on the unsmoothed blocks: the smoothed level
                // falls (and rises) up to half a window away from the sound's own edge.
                var start = index
                if index > 0 {
                    for block in stride(from: min(index + 5, end) - 1, through: max(0, index - 10), by: -1) where envelope.rawSound(block) {
                        start = block + 1
                        break
                    }
                }
                var stop = end
                if end < count {
                    for block in max(start, end - 5)..<min(count, end + 10) where envelope.rawSound(block) {
                        stop = block
                        break
                    }
                }
                pauses.append(Pause(start: start, end: max(start, stop)))
            }
            index = end
        }
        return pauses
    }

    /// Refines `words` (in order, not overlapping, in frames at `rate`) against `samples`,
    /// interleaved with `channels` channels at the same rate.
    public static func refine(
        _ words: [WordTiming], samples: UnsafeBufferPointer<Float>, channels: Int, rate: Int, settings: Settings = Settings()
    ) -> [Word] {
        guard !words.isEmpty else { return [] }
        let envelope = Envelope(samples: samples, channels: channels, rate: rate, settings: settings)
        let block = envelope.block
        let count = envelope.energy.count
        let totalFrames = samples.count / channels
        let window = max(1, Int((settings.window * 1000).rounded()))
        let pauses = pauses(envelope, minBlocks: max(1, Int((settings.minPause * 1000).rounded())))
        func blockOf(_ frame: Int) -> Int { min(count, max(0, frame / block)) }
        func frameOf(_ block: Int) -> Int { min(totalFrames, block * envelope.block) }

        // Boundary k lies before word k (k = 0: the clip's start side of the first word;
        // k = words.count: after the last word). Each gives the previous word's end and the
        // next word's start, in blocks, and how far it had to move to reach a pause.
        var ends = [Int](repeating: 0, count: words.count + 1)
        var starts = [Int](repeating: 0, count: words.count + 1)
        var distance = [Int](repeating: 0, count: words.count + 1)
        var nextPause = 0
        for boundary in 0...words.count {
            let aligned: Int
            if boundary == 0 {
                aligned = blockOf(words[0].startFrame)
            } else if boundary == words.count {
                aligned = blockOf(words[boundary - 1].endFrame)
            } else {
                aligned = blockOf(words[boundary].startFrame)
            }
            // The pause may not reach past the words on either side of the boundary.
            let low = boundary > 0 ? blockOf(words[boundary - 1].startFrame) : 0
            let high = boundary < words.count ? blockOf(words[boundary].endFrame) : count
            var chosen: (index: Int, distance: Int)? = nil
            var index = nextPause
            while index < pauses.count, pauses[index].start <= aligned + window {
                let pause = pauses[index]
                let away = aligned < pause.start ? pause.start - aligned : (aligned > pause.end ? aligned - pause.end : 0)
                if away <= window, pause.end >= low, pause.start <= high, away < (chosen?.distance ?? Int.max) {
                    chosen = (index, away)
                }
                index += 1
            }
            if let chosen {
                let pause = pauses[chosen.index]
                ends[boundary] = max(pause.start, low)
                starts[boundary] = min(pause.end, high)
                distance[boundary] = chosen.distance
                nextPause = chosen.index + 1
            } else if boundary == 0 || boundary == words.count {
                // No pause at the clip's edge: the sound starts (or runs) right there, where
                // an aligner puts the first start and the last end.
                ends[boundary] = aligned
                starts[boundary] = aligned
                distance[boundary] = (boundary == 0 ? aligned == 0 : aligned >= count) ? 0 : window
            } else {
                // Connected speech: the quietest 10 ms within ±40 ms.
                var quietest = aligned
                let first = max(0, low, aligned - 40)
                let last = min(high, aligned + 40, count - 1)
                if first <= last {
                    quietest = first
                    for candidate in first...last where envelope.smoothed[candidate] < envelope.smoothed[quietest] { quietest = candidate }
                }
                ends[boundary] = quietest
                starts[boundary] = quietest
                distance[boundary] = abs(quietest - aligned)
            }
        }

        var refined: [Word] = []
        refined.reserveCapacity(words.count)
        var previousEnd = 0
        for (position, word) in words.enumerated() {
            var start = max(frameOf(starts[position]), previousEnd)
            var end = frameOf(ends[position + 1])
            if end <= start {
                // The two boundaries crossed (a word with no sound of its own, or an aligner far
                // off): the aligner's interval, kept clear of the neighbours.
                start = max(word.startFrame, previousEnd)
                end = max(start, word.endFrame)
            }
            previousEnd = end
            var sounding = 0
            let first = blockOf(start)
            let last = max(first, blockOf(end))
            for index in first..<min(last, count) where envelope.sound(index) { sounding += 1 }
            let voiced = last > first ? Double(sounding) / Double(last - first) : 0
            let away = max(distance[position], distance[position + 1])
            let agreement = max(0, 1 - Double(away) / Double(window))
            refined.append(
                Word(
                    timing: WordTiming(index: word.index, text: word.text, startFrame: start, endFrame: end), aligned: word,
                    agreement: agreement, voiced: voiced))
        }
        AlignConfidence.assess(&refined, envelope: envelope, rate: rate)
        return refined
    }
}
