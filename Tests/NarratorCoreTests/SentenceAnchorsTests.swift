import NarratorCore
import Testing

/// `SentenceAnchors.fit` on readings laid out to the millisecond: sentences read at a pace that
/// wanders ±15 % from sentence to sentence, 450–800 ms between sentences, pauses of 250–420 ms
/// inside them (commas, breaths), and a stretch whose pauses are lost (noise laid over it).
@Suite("Sentence anchors")
struct SentenceAnchorsTests {
    struct Reading {
        var pauses: [(start: Int, end: Int)] = []
        var speech: Range<Int> = 0..<0
        var lengths: [Int] = []
        /// The index in `pauses` of each sentence boundary's pause.
        var truth: [Int] = []
    }

    static func reading(
        sentences: Int, seed: UInt64, letters: ClosedRange<Int> = 25...110, between: ClosedRange<Int> = 450...800,
        pausesInside: ClosedRange<Int> = 0...2
    ) -> Reading {
        var generator = SeededGenerator(seed: seed)
        var reading = Reading()
        var time = 300
        let start = time
        for sentence in 0..<sentences {
            let length = Int.random(in: letters, using: &generator)
            reading.lengths.append(length)
            let duration = Int(Double(length) * 62 * Double.random(in: 0.85...1.15, using: &generator))
            // Pauses inside the sentence, none in its first or last 15 %.
            var inside: [(Int, Int)] = []
            for _ in 0..<Int.random(in: pausesInside, using: &generator) {
                let at = time + Int(Double(duration) * Double.random(in: 0.15...0.85, using: &generator))
                inside.append((at, at + Int.random(in: 250...420, using: &generator)))
            }
            inside.sort { $0.0 < $1.0 }
            var shift = 0
            for pause in inside where reading.pauses.last.map({ pause.0 + shift > $0.end + 200 }) ?? true {
                reading.pauses.append((pause.0 + shift, pause.1 + shift))
                shift += pause.1 - pause.0
            }
            time += duration + shift
            if sentence < sentences - 1 {
                reading.truth.append(reading.pauses.count)
                let pause = Int.random(in: between, using: &generator)
                reading.pauses.append((time, time + pause))
                time += pause
            }
        }
        reading.speech = start..<time
        return reading
    }

    @Test func everySentenceBoundaryTakesItsOwnPause() {
        for seed in 1...20 {
            let reading = Self.reading(sentences: 25, seed: UInt64(seed))
            let fit = SentenceAnchors.fit(pauses: reading.pauses, speech: reading.speech, lengths: reading.lengths)
            #expect(fit == reading.truth.map { Optional($0) }, "seed \(seed): \(fit) for \(reading.truth)")
        }
    }

    /// Short sentences read without a pause inside them, long pauses between (the real set's
    /// clips laid end to end: 2–4 s of speech, 1.0–1.4 s between): the pauses are a third of
    /// the reading, all about as long. With them counted in the pace, every stretch looked a
    /// third short, two sentences in one stretch fit better, and a boundary in three or four
    /// went without its pause (that real reading: p50 889 ms off).
    @Test func longPausesBetweenShortSentencesEachTakeTheirOwn() {
        for seed in 1...20 {
            let reading = Self.reading(sentences: 70, seed: UInt64(200 + seed), letters: 28...60, between: 1000...1400, pausesInside: 0...0)
            let fit = SentenceAnchors.fit(pauses: reading.pauses, speech: reading.speech, lengths: reading.lengths)
            let lost = zip(fit, reading.truth).filter { $0.0 != $0.1 }.count
            #expect(lost == 0, "seed \(seed): \(lost) of \(reading.truth.count) boundaries without their pause")
        }
    }

    /// 10 s of noise in the middle hides the pauses there: the boundaries inside it have none,
    /// every boundary away from it keeps its own (none moves by a sentence, as aeneas's did).
    @Test func aStretchWithNoPausesMovesNoAnchorAwayFromIt() {
        for seed in 1...20 {
            var reading = Self.reading(sentences: 25, seed: UInt64(100 + seed))
            let middle = (reading.speech.lowerBound + reading.speech.upperBound) / 2
            let noise = middle..<(middle + 10_000)
            let kept = reading.pauses.indices.filter { !noise.overlaps(reading.pauses[$0].start..<reading.pauses[$0].end) }
            let renumber = Dictionary(uniqueKeysWithValues: kept.enumerated().map { ($1, $0) })
            reading.pauses = kept.map { reading.pauses[$0] }
            let fit = SentenceAnchors.fit(pauses: reading.pauses, speech: reading.speech, lengths: reading.lengths)
            // The pauses of the boundaries on either side of those the noise hides: a hidden
            // boundary may take one of them from its neighbour (a near tie where the pace
            // wanders ±15 %: measured, seed 8 lays the hidden boundary on the next one's pause
            // and that one on a pause inside its sentence), but no pause further away.
            let hidden = reading.truth.indices.filter { renumber[reading.truth[$0]] == nil }
            let edges = [hidden.first.map { $0 - 1 }, hidden.last.map { $0 + 1 }].compactMap { $0 }
                .filter { reading.truth.indices.contains($0) }.compactMap { renumber[reading.truth[$0]] }
            var wrong = 0
            for (boundary, pause) in reading.truth.enumerated() {
                if let expected = renumber[pause] {
                    if fit[boundary] != expected { wrong += 1 }
                } else if let taken = fit[boundary], reading.truth.contains(kept[taken]) {
                    #expect(edges.contains(taken), "seed \(seed): boundary \(boundary) took the pause of a sentence away from the noise")
                    wrong += 1
                }
            }
            // A boundary next to the noise may go without its pause or lend it to a hidden one
            // and take one inside its sentence (the stretch beside it is of unknown length);
            // none further away.
            #expect(wrong <= 2, "seed \(seed): \(wrong) boundaries away from the noise lost their pause: \(fit)")
        }
    }

    @Test func nothingToFit() {
        #expect(SentenceAnchors.fit(pauses: [], speech: 0..<10_000, lengths: [40, 50]) == [nil])
        #expect(SentenceAnchors.fit(pauses: [(4000, 4500)], speech: 0..<10_000, lengths: [40]) == [])
        #expect(SentenceAnchors.fit(pauses: [(4000, 4500)], speech: 0..<0, lengths: [40, 40]) == [nil])
        // A reading too long for the tables (a day's worth of sentences and pauses) is left
        // to aeneas: no anchors, at once.
        let many = (0..<5000).map { (start: $0 * 10_000 + 5000, end: $0 * 10_000 + 5600) }
        #expect(SentenceAnchors.fit(pauses: many, speech: 0..<50_000_000, lengths: [Int](repeating: 60, count: 5000)).allSatisfy { $0 == nil })
    }
}
