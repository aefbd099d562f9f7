import Foundation

extension BoundaryRefinement {
    /// One phone of a phone-level first stage (PocketSphinx), in frames at the clip's rate.
    public struct StagePhone: Sendable, Equatable {
        public var name: String
        public var startFrame: Int
        /// Exclusive.
        public var endFrame: Int
        /// The stage's acoustic score of the phone (a log likelihood).
        public var score: Int

        public init(name: String, startFrame: Int, endFrame: Int, score: Int) {
            self.name = name
            self.startFrame = startFrame
            self.endFrame = endFrame
            self.score = score
        }
    }

    /// One word as a phone-level first stage placed it: its interval (frames at the clip's
    /// rate; words in order, not overlapping; a gap between two words is a silence the stage
    /// put there), its phones and its acoustic score.
    public struct StageWord: Sendable, Equatable {
        public var timing: WordTiming
        public var phones: [StagePhone]
        public var score: Int

        public init(timing: WordTiming, phones: [StagePhone], score: Int) {
            self.timing = timing
            self.phones = phones
            self.score = score
        }
    }

    /// The rules of the phone-stage refinement, in milliseconds (docs/align.md, measured in
    /// docs/align-research.md).
    public enum PhoneRules {
        /// A quiet run at least this long may be a pause when the first stage put a silence
        /// of at least `stageSilence` between the two words.
        public static let shortPause = 20
        public static let stageSilence = 30
        /// A quiet run this long is a pause whatever the first stage said: longer than any
        /// stop closure (closures of 70–80 ms were measured inside joins).
        public static let longPause = 150
        /// In a clean recording (floor more than `cleanRange` dB under the speech level), a
        /// run of at least `deepPause` within `deepRise` dB of the floor is a pause.
        public static let deepPause = 25
        public static let deepRise = 6.0
        public static let cleanRange = 50.0
        /// How far beyond the first stage's boundary a pause is looked for.
        public static let reach = 40
        /// A word keeps at least this much of its interval when a pause is taken.
        public static let keep = 20
        /// Joins move by this (PocketSphinx's boundaries are the start of a 10 ms frame: early
        /// by 5 ms at the median on real speech).
        public static let joinBias = 5
        /// Two stage words closer than this are a join.
        public static let joinGap = 15
        /// Clip edges: sound segments closer than `mergeGap` are one; a segment is speech when it
        /// lasts `minSpeech` or more and peaks within `speechPeak` dB of the clip's speech
        /// level (a click is shorter, a breath or a lip smack quieter). An edge moves inward at
        /// most `inward`, outward at most `outward`.
        public static let mergeGap = 20
        public static let minSpeech = 30
        public static let speechPeak = 20.0
        public static let inward = 60
        public static let outward = 150
        /// What the sharpened edge of a run may grow on the unsmoothed blocks.
        public static let sharpen = 10
    }

    /// Stop consonants in PocketSphinx's (CMUdict's) phone set: a word starting with one starts
    /// at its closure, which the first stage includes.
    public static let stopPhones: Set<String> = ["P", "T", "K", "B", "D", "G", "CH", "JH"]

    /// Refines a phone-level first stage's words against `samples` (interleaved, `channels`,
    /// at `rate`). It moves a boundary only on strong evidence:
    ///
    /// - a word-to-word boundary moves onto a real pause only: a quiet run of at least
    ///   `shortPause` that overlaps a silence of at least `stageSilence` the stage put between
    ///   the two words, or any quiet run of at least `longPause`, or (in a clean recording) a
    ///   run of at least `deepPause` at the floor, within `reach` of the stage's boundary. The
    ///   earlier word ends where the run begins, the later starts where it ends.
    /// - a join (no pause) never moves by energy: it moves by `joinBias` only. A quiet run of
    ///   70–150 ms inside speech is a stop closure, not a pause.
    /// - the first start and the last end move to the first / last speech-like sound segment
    ///   near them, at most `inward` in and `outward` out.
    ///
    /// Each word gets the measures a confidence could be built from (`stageShift`,
    /// `acousticScore`, `squeezedPhones`, `voiced`); its `confidence` is agreement × voiced, as
    /// for aeneas. None of them predicts a wrong word well (docs/align.md).
    public static func refinePhoneStage(
        _ words: [StageWord], samples: UnsafeBufferPointer<Float>, channels: Int, rate: Int, settings: Settings = Settings()
    ) -> [Word] {
        guard !words.isEmpty else { return [] }
        let envelope = Envelope(samples: samples, channels: channels, rate: rate, settings: settings)
        let block = envelope.block
        let count = envelope.energy.count
        let totalFrames = samples.count / channels
        func decibels(_ value: Double) -> Double { 10 * log10(value + 1e-12) }
        let speechLevel = decibels(envelope.speech)
        let floorLevel = decibels(envelope.floor)
        typealias Run = (start: Int, end: Int)

        // Runs of quiet (or of sound) blocks, on the smoothed level.
        func runs(quiet: Bool, minimum: Int) -> [Run] {
            var found: [Run] = []
            var index = 0
            while index < count {
                guard envelope.sound(index) != quiet else {
                    index += 1
                    continue
                }
                var end = index
                while end < count, envelope.sound(end) != quiet { end += 1 }
                if end - index >= minimum { found.append((index, end)) }
                index = end
            }
            return found
        }
        func peak(_ run: Run) -> Double {
            var loudest = 0.0
            for index in run.start..<run.end { loudest = max(loudest, envelope.smoothed[index]) }
            return decibels(loudest)
        }
        // A quiet run's edges to the millisecond: grown while the unsmoothed level stays quiet.
        func sharpened(_ run: Run) -> Run {
            var (start, end) = run
            for _ in 0..<PhoneRules.sharpen where start > 0 && !envelope.rawSound(start - 1) { start -= 1 }
            for _ in 0..<PhoneRules.sharpen where end < count && !envelope.rawSound(end) { end += 1 }
            return (start, end)
        }

        // Times in milliseconds (blocks), as the stage gave them.
        let stageStarts = words.map { Double($0.timing.startFrame) / Double(block) }
        let stageEnds = words.map { Double($0.timing.endFrame) / Double(block) }
        var starts = stageStarts
        var ends = stageEnds
        var afterPause = [Bool](repeating: false, count: words.count)

        // Pauses.
        let quietRuns = runs(quiet: true, minimum: PhoneRules.shortPause)
        let clean = speechLevel - floorLevel > PhoneRules.cleanRange
        var used = Set<Int>()
        for index in 0..<(words.count - 1) {
            let a = ends[index]
            let b = starts[index + 1]
            let stageSilence = b - a >= Double(PhoneRules.stageSilence)
            let low = a - Double(PhoneRules.reach)
            let high = b + Double(PhoneRules.reach)
            let centre = (a + b) / 2
            var best: (distance: Double, run: Int)? = nil
            for (position, run) in quietRuns.enumerated() where !used.contains(position) {
                guard Double(run.end) > low, Double(run.start) < high else { continue }
                let length = run.end - run.start
                let deep = clean && length >= PhoneRules.deepPause && peak(run) < floorLevel + PhoneRules.deepRise
                let overlapsSilence = stageSilence && min(Double(run.end), b) - max(Double(run.start), a) > 0
                guard length >= PhoneRules.longPause || deep || overlapsSilence else { continue }
                let distance =
                    (Double(run.start) <= centre && centre <= Double(run.end))
                    ? 0 : min(abs(Double(run.start) - centre), abs(Double(run.end) - centre))
                if distance < (best?.distance ?? .infinity) { best = (distance, position) }
            }
            guard let best else { continue }
            used.insert(best.run)
            let run = sharpened(quietRuns[best.run])
            let end = max(Double(run.start), starts[index] + Double(PhoneRules.keep))
            let start = min(Double(run.end), ends[index + 1] - Double(PhoneRules.keep))
            if end < start {
                ends[index] = end
                starts[index + 1] = start
                afterPause[index + 1] = true
            }
        }

        // Joins: the stage's boundary, half a frame later.
        for index in 0..<(words.count - 1) where !afterPause[index + 1] && starts[index + 1] - ends[index] < Double(PhoneRules.joinGap) {
            let moved = starts[index + 1] + Double(PhoneRules.joinBias)
            ends[index] = ends[index] >= starts[index + 1] ? moved : ends[index] + Double(PhoneRules.joinBias)
            starts[index + 1] = moved
        }

        // Clip edges: the first and last speech-like sound.
        var segments: [Run] = []
        for run in runs(quiet: false, minimum: 1) {
            if let last = segments.last, run.start - last.end < PhoneRules.mergeGap {
                segments[segments.count - 1].end = run.end
            } else {
                segments.append(run)
            }
        }
        let speech = segments.filter { $0.end - $0.start >= PhoneRules.minSpeech && peak($0) >= speechLevel - PhoneRules.speechPeak }
        let first = stageStarts[0]
        if let onset = speech.first(where: { Double($0.end) > first - Double(PhoneRules.mergeGap) }) {
            var start = onset.start
            // The smoothed level rises up to half a window before the sound: on to where the
            // unsmoothed level crosses.
            for _ in 0..<PhoneRules.sharpen where start < count && !envelope.rawSound(start) { start += 1 }
            let moved = min(max(Double(start), first - Double(PhoneRules.outward)), first + Double(PhoneRules.inward), ends[0] - Double(PhoneRules.keep))
            starts[0] = max(0, moved)
        }
        let last = stageEnds[words.count - 1]
        if let offset = speech.last(where: { Double($0.start) < last + Double(PhoneRules.mergeGap) }) {
            // Mirrored: back to where the unsmoothed level falls under the threshold.
            var end = offset.end
            for _ in 0..<PhoneRules.sharpen where end > 0 && !envelope.rawSound(end - 1) { end -= 1 }
            let moved = max(
                min(Double(end), last + Double(PhoneRules.outward)), last - Double(PhoneRules.inward),
                starts[words.count - 1] + Double(PhoneRules.keep))
            ends[words.count - 1] = moved
        }

        var refined: [Word] = []
        refined.reserveCapacity(words.count)
        var previousEnd = 0
        let framesPerStageFrame = Double(rate) / 100
        for (position, word) in words.enumerated() {
            func frame(_ ms: Double) -> Int { min(totalFrames, max(0, Int((ms * Double(block)).rounded()))) }
            var start = max(frame(starts[position]), previousEnd)
            var end = frame(ends[position])
            if end <= start {
                start = max(word.timing.startFrame, previousEnd)
                end = max(start, word.timing.endFrame)
            }
            previousEnd = end
            var sounding = 0
            let firstBlock = min(count, start / block)
            let lastBlock = max(firstBlock, min(count, end / block))
            for index in firstBlock..<lastBlock where envelope.sound(index) { sounding += 1 }
            let voiced = lastBlock > firstBlock ? Double(sounding) / Double(lastBlock - firstBlock) : 0
            let shift = Double(max(abs(start - word.timing.startFrame), abs(end - word.timing.endFrame))) * 1000 / Double(rate)
            let stageFrames = max(1, (Double(word.timing.endFrame - word.timing.startFrame) / framesPerStageFrame).rounded())
            let squeezed = word.phones.filter { Double($0.endFrame - $0.startFrame) / framesPerStageFrame <= 3.5 }.count
            var result = Word(
                timing: WordTiming(index: word.timing.index, text: word.timing.text, startFrame: start, endFrame: end), aligned: word.timing,
                agreement: max(0, 1 - shift / (settings.window * 1000)), voiced: voiced)
            result.stage = "pocketsphinx"
            result.stageShift = shift
            result.acousticScore = Double(word.score) / stageFrames
            result.squeezedPhones = word.phones.isEmpty ? nil : Double(squeezed) / Double(word.phones.count)
            refined.append(result)
        }
        return refined
    }
}
