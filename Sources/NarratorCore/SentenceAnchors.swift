import Foundation

/// Sentence anchors for a long recording from its own pauses (issue 29, point 4): the sentences
/// of the text are laid on the recording's long pauses so that each sentence's stretch of
/// audio lasts what its length in letters predicts at the recording's own pace, preferring the
/// longest pauses (a reader pauses longer between sentences than inside them). Where no pause
/// fits (a stretch of noise, a sentence read on without a breath) several sentences share one
/// stretch: a bad stretch moves only the anchors next to it, not every sentence after it, as
/// an aligner's global path does.
public enum SentenceAnchors {
    /// The fit's weights: a stretch whose length is off by the ratio `r` costs `ln(r)²`, each
    /// sentence boundary left without a pause `skip`, and a pause taken earns
    /// `pauseWeight × ln(its length / shortest)`.
    public struct Weights: Sendable {
        public var skip = 0.3
        public var pauseWeight = 0.3
        /// At most this many sentences in one stretch.
        public var maxSpan = 8
        public init() {}
    }

    /// The shortest pause that may part two sentences, in ms.
    public static let shortestPause = 250

    /// The pause each of the `lengths.count − 1` sentence boundaries falls in (an index into
    /// `pauses`), or nil where the boundary falls in no pause. `pauses` are (start, end) in
    /// any unit, in order, inside `speech` (where the first sentence starts and the last ends);
    /// `lengths` are the sentences' lengths (letters), each at least 1.
    public static func fit(
        pauses: [(start: Int, end: Int)], speech: Range<Int>, lengths: [Int], weights: Weights = Weights()
    ) -> [Int?] {
        let sentences = lengths.count
        // (Its tables hold (sentences + 1) × (pauses + 1) cells: at most 4 M, 100 MB; a longer
        // reading is anchored by aeneas, in chunks.)
        let cells = (sentences + 1) * (pauses.count + 1)
        guard sentences > 1, !pauses.isEmpty, speech.count > 0, cells <= 1 << 22 else {
            return [Int?](repeating: nil, count: max(0, sentences - 1))
        }
        let letters = Double(lengths.reduce(0) { $0 + max(1, $1) })
        // The pace: the speech less the pauses between its sentences, which no sentence's
        // stretch holds. Counted in, the pace made every stretch look short by the pauses'
        // share (a third on real read speech), and leaving boundaries without their pause was
        // then cheaper. Which pauses those are is what is sought: the longest, as many as there
        // are boundaries, stand for them first (a reader pauses longer between sentences); then
        // the fit is made again with the pace of the pauses it took (where noise hides some,
        // the longest stood in for them with pauses inside sentences).
        func pace(between: Int) -> Double { Double(max(speech.count / 2, speech.count - between)) / letters }
        let longest = pauses.map { $0.end - $0.start }.sorted(by: >).prefix(sentences - 1).reduce(0, +)
        let first = layout(pauses: pauses, speech: speech, lengths: lengths, perLetter: pace(between: longest), weights: weights)
        let taken = first.compactMap { $0 }.reduce(0) { $0 + pauses[$1].end - pauses[$1].start }
        return layout(pauses: pauses, speech: speech, lengths: lengths, perLetter: pace(between: taken), weights: weights)
    }

    /// `fit` at a given pace (frames a letter).
    private static func layout(
        pauses: [(start: Int, end: Int)], speech: Range<Int>, lengths: [Int], perLetter: Double, weights: Weights
    ) -> [Int?] {
        let sentences = lengths.count
        var prefix = [0.0]
        for length in lengths { prefix.append(prefix[prefix.count - 1] + Double(max(1, length))) }
        let shortest = Double(max(1, pauses.map { $0.end - $0.start }.min() ?? 1))
        func spanCost(from first: Int, count: Int, start: Int, end: Int) -> Double {
            let predicted = (prefix[first + count] - prefix[first]) * perLetter
            let actual = Double(max(1, end - start))
            let ratio = log(actual / predicted)
            return ratio * ratio + Double(count - 1) * weights.skip
        }
        // best[i][j]: the least cost with sentences 0..<i placed and sentence i − 1 ending at
        // pause j (j == pauses.count: nothing placed yet, the speech's start).
        let none = pauses.count
        let width = pauses.count + 1
        var best = [Double](repeating: .infinity, count: (sentences + 1) * width)
        var from = [(Int, Int)](repeating: (-1, -1), count: (sentences + 1) * width)
        best[0 * width + none] = 0
        func startOf(_ j: Int) -> Int { j == none ? speech.lowerBound : pauses[j].end }
        for i in 0..<sentences {
            for j in 0..<width where best[i * width + j].isFinite {
                let here = best[i * width + j]
                let first = j == none ? 0 : j + 1
                for count in 1...min(weights.maxSpan, sentences - i) {
                    let predicted = (prefix[i + count] - prefix[i]) * perLetter
                    if i + count == sentences {
                        let cost = here + spanCost(from: i, count: count, start: startOf(j), end: speech.upperBound)
                        if cost < best[sentences * width + none] {
                            best[sentences * width + none] = cost
                            from[sentences * width + none] = (i, j)
                        }
                        continue
                    }
                    for next in first..<pauses.count {
                        let length = pauses[next].start - startOf(j)
                        if length <= 0 { continue }
                        if Double(length) > 3 * predicted { break }
                        let bonus = weights.pauseWeight * log(Double(max(1, pauses[next].end - pauses[next].start)) / shortest)
                        let cost = here + spanCost(from: i, count: count, start: startOf(j), end: pauses[next].start) - bonus
                        if cost < best[(i + count) * width + next] {
                            best[(i + count) * width + next] = cost
                            from[(i + count) * width + next] = (i, j)
                        }
                    }
                }
            }
        }
        var taken = [Int?](repeating: nil, count: sentences - 1)
        guard best[sentences * width + none].isFinite else { return taken }
        var (i, j) = from[sentences * width + none]
        while i > 0 {
            taken[i - 1] = j
            (i, j) = from[i * width + j]
        }
        return taken
    }

    /// The recording's pauses of at least `shortestPause` ms, in frames, with where its sound
    /// begins and ends (nil: no sound), from the refinement's envelope.
    public static func pauses(
        samples: UnsafeBufferPointer<Float>, channels: Int, rate: Int
    ) -> (pauses: [(start: Int, end: Int)], speech: Range<Int>)? {
        pauses(BoundaryRefinement.Envelope(samples: samples, channels: channels, rate: rate), frames: samples.count / channels)
    }

    /// The same from the recording's envelope (built a piece at a time) and its length in frames.
    public static func pauses(
        _ envelope: BoundaryRefinement.Envelope, frames: Int
    ) -> (pauses: [(start: Int, end: Int)], speech: Range<Int>)? {
        let found = BoundaryRefinement.pauses(envelope, minBlocks: shortestPause)
        let count = envelope.energy.count
        let inner = found.filter { $0.start > 0 && $0.end < count }
        let first = found.first.map { $0.start == 0 ? $0.end : 0 } ?? 0
        let last = found.last.map { $0.end == count ? $0.start : count } ?? count
        guard last > first else { return nil }
        return (inner.map { ($0.start * envelope.block, min(frames, $0.end * envelope.block)) }, (first * envelope.block)..<min(frames, last * envelope.block))
    }
}
