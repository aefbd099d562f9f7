import Foundation

/// Word timings judged against the audio they time (`narrator validate`'s `alignment` check).
///
/// It reads the audio with `BoundaryRefinement`'s energy analysis (the same 1 ms envelope,
/// threshold and pauses that `narrator align` refines with), so both agree on where sound is:
/// a sound segment is what lies between two pauses of at least `minPause`. Then, per word:
///
/// - **durations** under `minWord` or over `maxWord`;
/// - **mostly silence**: under `minVoiced` of the word's interval is sound;
/// - **a boundary through the word's sound**: the sound at a word's end goes on for at least
///   `cut` past it, into a gap (sound in no word) or into the next word when that word is padded
///   with a pause of at least `padding` before its own sound; the same at a word's start;
/// - **drift**: each word's start is matched with the sound onset nearest to where the words
///   before it predict (within `match`); a least-squares line of (onset − start) against
///   time whose slope is over `maxSlope` and that grows by more than `maxDrift` over the words
///   is drift. It is reported once, at the first word where the line is `maxDrift` off, and
///   the word-by-word silence and boundary findings (its consequences) are left out.
public enum AlignmentCheck {
    public struct Settings: Sendable, Equatable {
        /// Shortest and longest plausible word, in seconds.
        public var minWord = 0.050
        public var maxWord = 2.0
        /// A word with less than this part of its interval sounding is mostly silence: a third
        /// (aligners' words hold the pause after them; the sample library's 'round' sounds 49 %).
        public var minVoiced = 1.0 / 3
        /// Sound running at least this far past a boundary cuts through a word, in seconds.
        public var cut = 0.025
        /// A neighbour counts as padded when it holds a pause this long before its own sound.
        public var padding = 0.030
        /// How far from the predicted place a word's onset is looked for, in seconds.
        public var match = 0.060
        /// Drift: the fit's slope (seconds of offset per second) and its growth over the words.
        public var maxSlope = 0.005
        public var maxDrift = 0.050
        /// Words matched with an onset needed before drift is judged.
        public var minDriftWords = 6
        /// The energy analysis (`BoundaryRefinement`'s defaults).
        public var energy = BoundaryRefinement.Settings()

        public init() {}
    }

    public struct Issue: Sendable, Equatable {
        public enum Kind: String, Sendable, Equatable {
            case short, long, silent, cutStart, cutEnd, drift
        }
        public let kind: Kind
        /// The word at fault (its index in the timing file and its text).
        public let word: WordTiming
        public let message: String
    }

    /// Checks `words` (in order, not overlapping, in frames at `rate` from the first frame of
    /// `samples`, interleaved with `channels` channels at the same rate).
    public static func check(
        _ words: [WordTiming], samples: UnsafeBufferPointer<Float>, channels: Int, rate: Int, settings: Settings = Settings()
    ) -> [Issue] {
        guard !words.isEmpty, channels > 0, rate > 0 else { return [] }
        var issues: [Issue] = []
        func ms(_ frames: Int) -> String { Frames.describe(frames, rate: rate) }
        func seconds(_ value: Double) -> Int { Int((value * Double(rate)).rounded()) }

        // Durations need no audio.
        for word in words {
            let length = word.endFrame - word.startFrame
            if length < seconds(settings.minWord) {
                issues.append(Issue(kind: .short, word: word, message: "lasts \(ms(length)), shorter than any spoken word (\(ms(seconds(settings.minWord))))"))
            } else if length > seconds(settings.maxWord) {
                issues.append(Issue(kind: .long, word: word, message: "lasts \(ms(length)), longer than one word is spoken (\(ms(seconds(settings.maxWord))))"))
            }
        }
        guard samples.count >= channels else { return issues }

        let envelope = BoundaryRefinement.Envelope(samples: samples, channels: channels, rate: rate, settings: settings.energy)
        let block = envelope.block
        let count = envelope.energy.count
        let minPause = max(1, Int((settings.energy.minPause * 1000).rounded()))
        let pauses = BoundaryRefinement.pauses(envelope, minBlocks: minPause)
        // Sound segments, in blocks: what lies between the pauses.
        var segments: [Range<Int>] = []
        var cursor = 0
        for pause in pauses {
            if pause.start > cursor { segments.append(cursor..<pause.start) }
            cursor = max(cursor, pause.end)
        }
        if cursor < count { segments.append(cursor..<count) }
        // Nothing stands out from the clip's floor (a steady tone, a constant noise): where its
        // words are cannot be told from its energy.
        guard !segments.isEmpty else { return issues }
        func blockOf(_ frame: Int) -> Int { min(count, max(0, frame / block)) }
        func frames(_ blocks: Int) -> Int { blocks * block }
        /// The segment holding block `index`, if it sounds.
        func segment(at index: Int) -> Range<Int>? {
            var low = 0, high = segments.count
            while low < high {
                let middle = (low + high) / 2
                if segments[middle].upperBound <= index { low = middle + 1 } else { high = middle }
            }
            return low < segments.count && segments[low].contains(index) ? segments[low] : nil
        }
        let cutBlocks = max(1, Int((settings.cut * 1000).rounded()))
        let padBlocks = max(1, Int((settings.padding * 1000).rounded()))

        // Drift first: when the timings drift, the words' own findings are its consequences.
        if let drift = drift(words, onsets: segments.map(\.lowerBound), block: block, rate: rate, settings: settings) {
            return issues + [drift]
        }

        for (position, word) in words.enumerated() {
            let first = blockOf(word.startFrame), last = blockOf(word.endFrame)
            guard last > first else { continue }
            // Mostly silence.
            var sounding = 0
            for segment in segments where segment.upperBound > first && segment.lowerBound < last {
                sounding += min(segment.upperBound, last) - max(segment.lowerBound, first)
            }
            let voiced = Double(sounding) / Double(last - first)
            if voiced < settings.minVoiced {
                issues.append(Issue(
                    kind: .silent, word: word,
                    message: String(format: "mostly silence: %.0f %% of its %@ sounds", voiced * 100, ms(word.endFrame - word.startFrame))))
                continue
            }
            // The end: sound at the word's last block that goes on past it.
            if let sound = segment(at: last - 1), sound.upperBound - last >= cutBlocks {
                let next = position + 1 < words.count ? words[position + 1] : nil
                let nextStart = next.map { blockOf($0.startFrame) } ?? count
                let inGap = min(sound.upperBound, nextStart) - last
                if inGap >= cutBlocks {
                    issues.append(Issue(
                        kind: .cutEnd, word: word,
                        message: "ends inside its sound: the sound goes on \(ms(frames(inGap))) past its end, into \(next == nil ? "the end of the clip" : "the gap before the next word")"))
                } else if let next, nextStart <= last, sound.upperBound < blockOf(next.endFrame),
                    padded(after: sound.upperBound, before: blockOf(next.endFrame), segments: segments, minimum: padBlocks)
                {
                    issues.append(Issue(
                        kind: .cutEnd, word: word,
                        message: "ends inside its sound: the sound goes on \(ms(frames(sound.upperBound - last))) into word \(next.index) '\(next.text)', which has a pause before its own sound"))
                }
            }
            // The start: sound at the word's first block that began before it.
            if let sound = segment(at: first), first - sound.lowerBound >= cutBlocks {
                let previous = position > 0 ? words[position - 1] : nil
                let previousEnd = previous.map { blockOf($0.endFrame) } ?? 0
                let inGap = first - max(sound.lowerBound, previousEnd)
                // Sound through the whole gap, from the previous word's end: found there.
                let fromPrevious = previous != nil && sound.lowerBound < previousEnd && previousEnd < first
                if inGap >= cutBlocks, !fromPrevious {
                    issues.append(Issue(
                        kind: .cutStart, word: word,
                        message: "starts inside its sound: the sound began \(ms(frames(inGap))) before its start, in \(previous == nil ? "the start of the clip" : "the gap after the previous word")"))
                } else if let previous, previousEnd >= first, sound.lowerBound > blockOf(previous.startFrame),
                    padded(before: sound.lowerBound, after: blockOf(previous.startFrame), segments: segments, minimum: padBlocks)
                {
                    issues.append(Issue(
                        kind: .cutStart, word: word,
                        message: "starts inside its sound: the sound began \(ms(frames(first - sound.lowerBound))) before it, in word \(previous.index) '\(previous.text)', which has a pause after its own sound"))
                }
            }
        }
        return issues
    }

    /// A pause of at least `minimum` blocks from `start` (the end of a sound) before more sound
    /// that begins before `limit`.
    static func padded(after start: Int, before limit: Int, segments: [Range<Int>], minimum: Int) -> Bool {
        guard let next = segments.first(where: { $0.lowerBound >= start }) else { return false }
        return next.lowerBound - start >= minimum && next.lowerBound < limit
    }

    /// A pause of at least `minimum` blocks before `end` (the start of a sound) after more
    /// sound that ends after `limit`.
    static func padded(before end: Int, after limit: Int, segments: [Range<Int>], minimum: Int) -> Bool {
        guard let previous = segments.last(where: { $0.upperBound <= end }) else { return false }
        return end - previous.upperBound >= minimum && previous.upperBound > limit
    }

    /// Drift of the words' starts against the audio's onsets (block indices), or nil.
    static func drift(_ words: [WordTiming], onsets: [Int], block: Int, rate: Int, settings: Settings) -> Issue? {
        guard words.count >= settings.minDriftWords, !onsets.isEmpty else { return nil }
        let window = Double(settings.match)
        var points: [(time: Double, offset: Double, word: WordTiming)] = []
        var predicted = 0.0
        var nextOnset = 0
        for word in words {
            let start = Double(word.startFrame) / Double(rate)
            let expected = start + predicted
            // The onset nearest to where the words before predict, each onset once.
            var best: (index: Int, distance: Double)? = nil
            var index = nextOnset
            while index < onsets.count {
                let time = Double(onsets[index] * block) / Double(rate)
                if time > expected + window { break }
                let distance = abs(time - expected)
                if distance <= window, distance < (best?.distance ?? .infinity) { best = (index, distance) }
                index += 1
            }
            guard let best else { continue }
            let onset = Double(onsets[best.index] * block) / Double(rate)
            points.append((start, onset - start, word))
            nextOnset = best.index + 1
            // The prediction follows the last few offsets (a drift grows a little a word).
            let recent = points.suffix(3).map(\.offset).sorted()
            predicted = recent[recent.count / 2]
        }
        guard points.count >= settings.minDriftWords else { return nil }
        let n = Double(points.count)
        let meanT = points.map(\.time).reduce(0, +) / n
        let meanO = points.map(\.offset).reduce(0, +) / n
        var sxx = 0.0, sxy = 0.0
        for point in points {
            sxx += (point.time - meanT) * (point.time - meanT)
            sxy += (point.time - meanT) * (point.offset - meanO)
        }
        guard sxx > 0 else { return nil }
        let slope = sxy / sxx
        func fit(_ time: Double) -> Double { meanO + slope * (time - meanT) }
        let firstT = points.first!.time, lastT = points.last!.time
        let growth = fit(lastT) - fit(firstT)
        guard abs(slope) > settings.maxSlope, abs(growth) > settings.maxDrift else { return nil }
        // Where the line first strays `maxDrift` from where it began.
        let base = fit(firstT)
        let at = points.first { abs(fit($0.time) - base) > settings.maxDrift }?.word ?? points.last!.word
        let word = words.first { $0.index == at.index } ?? at
        return Issue(
            kind: .drift, word: word,
            message: String(
                format: "the timings drift from the audio: its word onsets move %+.0f ms a second against them (%+.0f ms at word %d, %+.0f ms at word %d, over %d words matched); %.0f ms off from here",
                slope * 1000, fit(firstT) * 1000, points.first!.word.index, fit(lastT) * 1000, points.last!.word.index, points.count,
                settings.maxDrift * 1000))
    }
}
