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

    static func reading(sentences: Int, seed: UInt64) -> Reading {
        var generator = SeededGenerator(seed: seed)
        var reading = Reading()
        var time = 300
        let start = time
        for sentence in 0..<sentences {
            let length = Int.random(in: 25...110, using: &generator)
            reading.lengths.append(length)
            let duration = Int(Double(length) * 62 * Double.random(in: 0.85...1.15, using: &generator))
            // Pauses inside the sentence, none in its first or last 15 %.
            var inside: [(Int, Int)] = []
            for _ in 0..<Int.random(in: 0...2, using: &generator) {
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
                let pause = Int.random(in: 450...800, using: &generator)
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
            var wrong = 0
            for (boundary, pause) in reading.truth.enumerated() {
                if let expected = renumber[pause] {
                    if fit[boundary] != expected { wrong += 1 }
                } else {
                    #expect(fit[boundary] == nil || !reading.truth.contains(kept[fit[boundary]!]), "seed \(seed): boundary \(boundary) took another sentence's pause")
                }
            }
            // A boundary next to the noise may go without its pause (the stretch beside it is
            // of unknown length); none further away.
            #expect(wrong <= 1, "seed \(seed): \(wrong) boundaries away from the noise lost their pause: \(fit)")
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
