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
        /// A clean recording: its floor more than `cleanRange` dB under the speech level. Its
        /// floor's runs (at least `deepPause` long, reaching within `deepRise` dB of the floor)
        /// are its pauses.
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
        /// In a clean recording, the word-to-word boundaries and the floor's runs (at least
        /// `deepPause` of unsmoothed blocks under the threshold, `deepCore` of them within
        /// `deepRise` dB of the floor) are matched in order (`assignInOrder`): a boundary may
        /// move this far onto its run; a boundary left alone (a join) costs `joinCost`, a
        /// floor's run left alone (silence inside a word, rare where the floor is digital
        /// silence) `runCost`, in ms of movement. A run inside a stop the stage heard is its
        /// closure, never matched.
        public static let assignReach = 350
        public static let joinCost = 150.0
        public static let runCost = 350.0
        /// The weight of the tie-break between runs equally near a boundary (per ms).
        public static let tieBreak = 0.01
        /// A floor's run has at least this much of it within `deepRise` dB of the floor (the rest
        /// under the threshold: a resampler's ringing, a tail fading out).
        public static let deepCore = 10
        /// In a clean recording an edge moves over the quiet stretch to the floor only when
        /// that stretch holds a sound this many dB over the threshold (a stop's burst or
        /// release), not only noise flickering about the threshold.
        public static let tailRise = 10.0
        /// ... and when its sound lasts at most this long (a burst or a release: a breath lasts
        /// longer).
        public static let releaseLength = 40
        /// ... and, at a stop, over a quiet run this long (its closure) to a stretch of this much
        /// sound (its burst or release).
        public static let closure = 20...150
        public static let burst = 10...120
        /// A recording with a background (not clean) is matched with its background's runs
        /// when at least this share of its boundaries has a run of the background alone.
        public static let backgroundGaps = 0.4
        /// ... and at least this many (one or two such runs may be a stop's closure in a
        /// recording as clean spectrally as a synthetic one).
        public static let backgroundRuns = 3
        /// ... in a recording whose speech level stands less than this many dB over its floor
        /// (a bed 20 dB under the voice: 24–34 dB; real read speech in a quiet room: 35–45 dB,
        /// where the stops' closures hold the background alone as a pause does).
        public static let backgroundRange = 35.0
    }

    /// Matches word-to-word boundaries with pauses in order, each at most once (a dynamic
    /// programme, as an edit distance): boundary `k` may take pause `j` when `distance(k, j)` is
    /// at most `reach`, at that cost; a boundary left alone costs `unmatched`, a pause left
    /// alone `unmatchedPause`. Returns
    /// the pause each boundary takes (nil: none). The first stage can misplace a stretch of words
    /// by a few hundred ms (espeak-ng and flite voices, docs/align.md); taken one boundary at a
    /// time, the nearest pause is then a neighbour's, while in order each keeps its own.
    public static func assignInOrder(
        boundaries: Int, pauses: Int, reach: Double, unmatched: Double, unmatchedPause: Double,
        distance: (Int, Int) -> Double
    ) -> [Int?] {
        // (A table of at most 4 M cells, 36 MB: a piece holds a few hundred words; more is left
        // to the rules one boundary at a time.)
        guard boundaries > 0, pauses > 0, (boundaries + 1) * (pauses + 1) <= 1 << 22 else { return [Int?](repeating: nil, count: boundaries) }
        let width = pauses + 1
        var cost = [Double](repeating: 0, count: (boundaries + 1) * width)
        // 0: boundary k left alone, 1: pause j left alone, 2: k takes j.
        var step = [UInt8](repeating: 0, count: (boundaries + 1) * width)
        for j in 1...pauses { cost[j] = Double(j) * unmatchedPause; step[j] = 1 }
        for k in 1...boundaries {
            cost[k * width] = Double(k) * unmatched
            step[k * width] = 0
            for j in 1...pauses {
                var best = cost[(k - 1) * width + j] + unmatched
                var how: UInt8 = 0
                let skipPause = cost[k * width + j - 1] + unmatchedPause
                if skipPause < best { best = skipPause; how = 1 }
                let d = distance(k - 1, j - 1)
                if d <= reach {
                    let take = cost[(k - 1) * width + j - 1] + d
                    if take < best { best = take; how = 2 }
                }
                cost[k * width + j] = best
                step[k * width + j] = how
            }
        }
        var taken = [Int?](repeating: nil, count: boundaries)
        var k = boundaries
        var j = pauses
        while k > 0 {
            if j == 0 { k -= 1; continue }
            switch step[k * width + j] {
            case 2: taken[k - 1] = j - 1; k -= 1; j -= 1
            case 1: j -= 1
            default: k -= 1
            }
        }
        return taken
    }

    /// Stop consonants in PocketSphinx's (CMUdict's) phone set: a word starting with one starts
    /// at its closure, which the first stage includes.
    public static let stopPhones: Set<String> = ["P", "T", "K", "B", "D", "G", "CH", "JH"]

    /// Refines a phone-level first stage's words against `samples` (interleaved, `channels`,
    /// at `rate`). It moves a boundary only on strong evidence:
    ///
    /// - a word-to-word boundary moves onto a real pause only: a quiet run of at least
    ///   `shortPause` that overlaps a silence of at least `stageSilence` the stage put between
    ///   the two words, or any quiet run of at least `longPause`, within `reach` of the stage's
    ///   boundary; in a clean recording, the floor's runs matched with the boundaries in order
    ///   (`assignInOrder`). The earlier word ends where the run begins, the later starts where
    ///   it ends.
    /// - a join (no pause) never moves by energy: it moves by `joinBias` only. A quiet run of
    ///   70–150 ms inside speech is a stop closure, not a pause.
    /// - the first start and the last end move to the first / last speech-like sound segment
    ///   near them, at most `inward` in and `outward` out.
    ///
    /// Each word gets the stage's measures (`stageShift`, `acousticScore`, `squeezedPhones`,
    /// `voiced`) and a confidence (`AlignConfidence`, as for aeneas).
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
        // Word starts (index) and ends (index + 1) placed on a background's run: spectral
        // evidence, which the recording's range does not weaken (`AlignConfidence`).
        var onRun = [Bool](repeating: false, count: words.count + 1)

        // Pauses.
        let quietRuns = runs(quiet: true, minimum: PhoneRules.shortPause)
        let clean = speechLevel - floorLevel > PhoneRules.cleanRange
        var used = Set<Int>()
        // A run at least half inside a stop the stage heard inside a word is its closure (a
        // noise gate shuts on closures too), not a pause. (A word's first or last stop takes in
        // a pause beside it: the stage cannot tell the two apart.)
        let stops = words.flatMap { $0.phones.dropFirst().dropLast().filter { stopPhones.contains($0.name) } }
            .map { (start: $0.startFrame / block, end: $0.endFrame / block) }
        func insideStop(_ run: Run) -> Bool {
            stops.contains { 2 * (min($0.end, run.end) - max($0.start, run.start)) >= run.end - run.start }
        }
        // Sound `tailRise` dB over the threshold: a word's, not noise flickering about it.
        let strongLevel = envelope.threshold * pow(10, PhoneRules.tailRise / 10)
        func strong(_ index: Int) -> Bool { envelope.energy[index] >= strongLevel }
        // A clean recording: its floor's runs are pauses, matched with the boundaries in order.
        var deepRuns: [Run] = []
        if clean {
            // Runs of unsmoothed blocks under the threshold (their edges to the millisecond, as
            // every pause's) at least `deepPause` long, with a core of `deepCore` at the floor.
            let deep = max(envelope.floor * pow(10, PhoneRules.deepRise / 10), envelope.speech * 1e-7)
            var index = 0
            while index < count {
                guard !envelope.rawSound(index) else {
                    index += 1
                    continue
                }
                var end = index
                var core = 0
                var longestCore = 0
                while end < count, !envelope.rawSound(end) {
                    core = envelope.energy[end] <= deep ? core + 1 : 0
                    longestCore = max(longestCore, core)
                    end += 1
                }
                if end - index >= PhoneRules.deepPause && longestCore >= PhoneRules.deepCore { deepRuns.append((index, end)) }
                index = end
            }
        }
        // Under a steady background (a music bed) the level cannot tell a pause from a word's
        // soft tail: its spectrum can (`BackgroundPauses`). Its runs are matched as a clean
        // recording's floor runs when the recording pauses between its words: when runs of
        // the background alone (no voice bar, no reverberation: a closure's) lie within the
        // words for at least `backgroundGaps` of the boundaries, and `backgroundRuns` at least,
        // and the background is close under the voice (`backgroundRange`). Continuous speech
        // has next to none; a quiet studio's closures can be as pure as a pause, but its floor
        // lies further under the voice (docs/align.md § 3).
        var pauseRuns = deepRuns
        var background = false
        if speechLevel - floorLevel < PhoneRules.backgroundRange && words.count > 1 {
            let found = BackgroundPauses.runs(samples: samples, channels: channels, rate: rate, block: block)
            let first = Int(stageStarts[0]), last = Int(stageEnds[words.count - 1])
            let pure = found.filter { $0.start > first && $0.end < last && $0.share < BackgroundPauses.pureShare }
            if pure.count >= PhoneRules.backgroundRuns && Double(pure.count) >= PhoneRules.backgroundGaps * Double(words.count - 1) {
                pauseRuns = found.map { (start: $0.start, end: $0.end) }
                background = true
            }
        }
        if !pauseRuns.isEmpty {
            // Runs with a word's sound before and after them inside the stage's first start and
            // last end (the silence before the first word or after the last, a pause before a
            // breath, are the edges', below).
            let first = max(0, Int(stageStarts[0])), last = min(count, Int(stageEnds[words.count - 1]))
            let inner = pauseRuns.filter { run in
                run.start > first && run.end < last
                    && (first..<run.start).contains(where: strong) && (run.end..<last).contains(where: strong)
                    && !insideStop(run)
            }
            let taken = assignInOrder(
                boundaries: words.count - 1, pauses: inner.count, reach: Double(PhoneRules.assignReach),
                unmatched: PhoneRules.joinCost, unmatchedPause: PhoneRules.runCost
            ) { k, j in
                let (a, b) = (min(ends[k], starts[k + 1]), max(ends[k], starts[k + 1]))
                let run = inner[j]
                let distance = max(0, Double(run.start) - b, a - Double(run.end))
                // Between runs equally near (a long silence from the stage over two): after a
                // word ending in a stop, the later (the earlier is its closure, before its
                // release); otherwise the longer (the other most often a quiet onset).
                let stopBefore = words[k].phones.last.map { stopPhones.contains($0.name) } ?? false
                return distance + PhoneRules.tieBreak * (stopBefore ? b - Double(run.end) : -Double(run.end - run.start))
            }
            for (index, pause) in taken.enumerated() {
                guard let pause else { continue }
                ends[index] = Double(inner[pause].start)
                starts[index + 1] = Double(inner[pause].end)
                afterPause[index + 1] = true
                onRun[index + 1] = background
            }
            // The smoothed runs over a taken pause are not taken again.
            for (position, run) in quietRuns.enumerated()
            where taken.contains(where: { $0.map { inner[$0].start < run.end && run.start < inner[$0].end } ?? false }) {
                used.insert(position)
            }
        }
        for index in 0..<(words.count - 1) where !afterPause[index + 1] {
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
                let overlapsSilence = stageSilence && min(Double(run.end), b) - max(Double(run.start), a) > 0
                guard length >= PhoneRules.longPause || overlapsSilence else { continue }
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
        // Noise flickering about the threshold (a floor 10 dB under it) is no sound of its own:
        // merged, its blips would carry an edge on past the word.
        for run in runs(quiet: false, minimum: 1) where (run.start..<run.end).contains(where: { envelope.smoothed[$0] >= strongLevel }) {
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
            // In a clean recording, the sound the stage's start lies in is the word's however far
            // it reaches back (a breath or a click would be parted from it by the floor).
            let reach = clean && onset.start < Int(first) && Double(onset.end) > first ? Double(start) : first - Double(PhoneRules.outward)
            let moved = min(max(Double(start), reach), first + Double(PhoneRules.inward), ends[0] - Double(PhoneRules.keep))
            starts[0] = max(0, moved)
        }
        // In a clean recording an edge goes on to where the floor begins, within `outward`, over
        // a stretch that holds a sound `tailRise` dB over the threshold and at most
        // `releaseLength` of sound (a soft onset or tail), not over noise flickering about the
        // threshold or a breath. When the stage heard a stop at that edge of the word, it goes
        // on over a quiet run of `closure` (the stop's closure, under the threshold) to a
        // stretch of `burst` sound before the floor (its release or burst: a click is shorter,
        // a breath longer).
        func releasedEdge(from edge: Int, forward: Bool, stop: Bool) -> Int {
            // Positions counted outward from the edge: block `at(p)` is `p` blocks out.
            func at(_ position: Int) -> Int { forward ? position : count - 1 - position }
            let floorRuns = forward ? deepRuns : deepRuns.reversed().map { (start: count - $0.end, end: count - $0.start) }
            let origin = forward ? edge : count - edge
            // The sound up to the next floor's run beginning after `from`, if it qualifies.
            func stretch(from: Int, sound allowed: ClosedRange<Int>) -> Int? {
                guard let run = floorRuns.first(where: { $0.end > from }), run.start > from, run.start - origin <= PhoneRules.outward else { return nil }
                let blocks = from..<run.start
                guard allowed.contains(blocks.filter { envelope.rawSound(at($0)) }.count), blocks.contains(where: { strong(at($0)) }) else { return nil }
                return blocks.last(where: { envelope.rawSound(at($0)) }).map { $0 + 1 }
            }
            var reached = stretch(from: origin, sound: 0...PhoneRules.releaseLength) ?? origin
            if stop {
                var quiet = reached
                while quiet < count, !envelope.rawSound(at(quiet)) { quiet += 1 }
                if PhoneRules.closure.contains(quiet - reached), let released = stretch(from: quiet, sound: PhoneRules.burst) { reached = released }
            }
            return forward ? reached : count - reached
        }
        if clean {
            let stop = words[0].phones.first.map { stopPhones.contains($0.name) } ?? false
            starts[0] = Double(releasedEdge(from: Int(starts[0].rounded(.up)), forward: false, stop: stop))
        }
        let last = stageEnds[words.count - 1]
        if let offset = speech.last(where: { Double($0.start) < last + Double(PhoneRules.mergeGap) }) {
            // Mirrored: back to where the unsmoothed level falls under the threshold.
            var end = offset.end
            for _ in 0..<PhoneRules.sharpen where end > 0 && !envelope.rawSound(end - 1) { end -= 1 }
            let reach = clean && Double(offset.start) < last && offset.end > Int(last) ? Double(end) : last + Double(PhoneRules.outward)
            let moved = max(
                min(Double(end), reach), last - Double(PhoneRules.inward),
                starts[words.count - 1] + Double(PhoneRules.keep))
            ends[words.count - 1] = moved
        }
        // In a clean recording a speech-like sound (`speech`: long and loud, not a breath or a
        // click) within a closure's length of the word is still the word's: a stop inside it
        // ("tur|tle", which synthetic voices can render as digital silence) parts them.
        if clean {
            var start = Int(starts[0])
            for segment in speech.reversed() where segment.end <= start {
                guard start - segment.end <= PhoneRules.closure.upperBound else { break }
                start = segment.start
                while start < count && !envelope.rawSound(start) { start += 1 }
            }
            starts[0] = min(starts[0], Double(start))
            var end = Int(ends[words.count - 1])
            for segment in speech where segment.start >= end {
                guard segment.start - end <= PhoneRules.closure.upperBound else { break }
                end = segment.end
                while end > 0 && !envelope.rawSound(end - 1) { end -= 1 }
            }
            ends[words.count - 1] = max(ends[words.count - 1], Double(end))
        }
        // Mirrored: the last word's end, over a final stop's closure to its release.
        if clean {
            let stop = words[words.count - 1].phones.last.map { stopPhones.contains($0.name) } ?? false
            ends[words.count - 1] = Double(releasedEdge(from: Int(ends[words.count - 1]), forward: true, stop: stop))
        }
        // Under a background, the clip's edges are where its runs before the first word and
        // after the last end and begin: the run ending nearest the stage's first start (within
        // `assignReach`, the first word keeping `keep`), mirrored for the last end.
        if background {
            let reach = Double(PhoneRules.assignReach), keep = Double(PhoneRules.keep)
            let first = stageStarts[0], last = stageEnds[words.count - 1]
            let leading = pauseRuns.filter { Double($0.end) >= first - reach && Double($0.end) <= min(first + reach, ends[0] - keep) && !insideStop($0) }
            if let run = leading.min(by: { abs(Double($0.end) - first) < abs(Double($1.end) - first) }) {
                starts[0] = Double(run.end)
                onRun[0] = true
            }
            let trailing = pauseRuns.filter {
                Double($0.start) <= last + reach && Double($0.start) >= max(last - reach, starts[words.count - 1] + keep) && !insideStop($0)
            }
            if let run = trailing.min(by: { abs(Double($0.start) - last) < abs(Double($1.start) - last) }) {
                ends[words.count - 1] = Double(run.start)
                onRun[words.count] = true
            }
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
        AlignConfidence.assess(&refined, envelope: envelope, rate: rate, onBackgroundRuns: refined.indices.map { onRun[$0] && onRun[$0 + 1] })
        return refined
    }
}
