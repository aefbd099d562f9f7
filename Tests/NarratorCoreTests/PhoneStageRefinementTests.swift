import Foundation
import NarratorCore
import Testing

/// `BoundaryRefinement.refinePhoneStage` (PocketSphinx's words refined) on signals built to the
/// millisecond: noise bursts as speech under a quiet floor, a stop closure, a pause, a breath
/// and a click. Each check compares with what the energy-only rule would have done, so a rule
/// that moved a join onto a closure or took a breath for a word fails it.
@Suite("Phone-stage refinement")
struct PhoneStageRefinementTests {
    static let rate = 16000
    static let ms = rate / 1000

    /// `floor` noise everywhere, and noise bursts at `level` (RMS about −13 dBFS × level) in `spans` (ms).
    static func signal(_ spans: [(Int, Int, Float)], milliseconds: Int, floor: Float = 0.0005) -> [Float] {
        var generator = SeededGenerator(seed: 11)
        var samples = (0..<(milliseconds * ms)).map { _ in Float.random(in: -floor...floor, using: &generator) }
        for (start, end, level) in spans {
            for frame in (start * ms)..<(end * ms) { samples[frame] += level * Float.random(in: -0.4...0.4, using: &generator) }
        }
        return samples
    }

    static func stage(_ spans: [(Int, Int)]) -> [BoundaryRefinement.StageWord] {
        spans.enumerated().map {
            .init(
                timing: WordTiming(index: $0.offset, text: "w\($0.offset)", startFrame: $0.element.0 * ms, endFrame: $0.element.1 * ms),
                phones: [.init(name: "T", startFrame: $0.element.0 * ms, endFrame: $0.element.1 * ms, score: -100)], score: -1000)
        }
    }

    static func refine(_ words: [BoundaryRefinement.StageWord], _ samples: [Float]) -> [(Int, Int)] {
        samples.withUnsafeBufferPointer { BoundaryRefinement.refinePhoneStage(words, samples: $0, channels: 1, rate: rate) }
            .map { ($0.timing.startFrame / ms, $0.timing.endFrame / ms) }
    }

    /// A word ending in a stop ("ripped") joined to the next ("the"): the 80 ms closure is quiet,
    /// but it is not a pause. The join stays where the phone stage put it (+5 ms), where
    /// the energy-only refinement moves it onto the closure.
    @Test func anEightyMillisecondClosureInsideSpeechStaysAJoin() {
        // A room's floor (about 38 dB under the speech): not a clean recording, where any
        // near-silent run of 25 ms is a pause.
        let samples = Self.signal([(300, 600, 1), (600, 680, 0), (680, 1000, 1)], milliseconds: 1300, floor: 0.005)
        let words = Self.stage([(300, 690), (690, 1000)])
        let refined = Self.refine(words, samples)
        #expect(refined[0].1 == 695 && refined[1].0 == 695, "\(refined)")
        // What the energy-only rule does with the same words: it takes the closure.
        let energy = samples.withUnsafeBufferPointer {
            BoundaryRefinement.refine(words.map(\.timing), samples: $0, channels: 1, rate: Self.rate)
        }
        #expect(abs(energy[0].timing.endFrame / Self.ms - 600) <= 12, "energy-only: \(energy.map(\.timing))")
    }

    /// Under a steady tonal bed (two sines) loud enough to hide a word's soft edges from a level
    /// threshold, noise-burst words 20 dB over it: each pause between them is one run of the
    /// background alone, its edges within 4 ms of the pause's, and none lies inside a word.
    @Test func pausesUnderABedAreTheBackgroundsRuns() {
        let words = [(200, 520), (570, 900), (940, 1300), (1370, 1600), (1660, 2000)]
        var samples = Self.signal(words.map { ($0.0, $0.1, Float(1)) }, milliseconds: 2300, floor: 0)
        for frame in samples.indices {
            let t = Double(frame) / Double(Self.rate)
            samples[frame] += Float(0.012 * sin(2 * .pi * 220 * t) + 0.008 * sin(2 * .pi * 330 * t))
        }
        let runs = samples.withUnsafeBufferPointer {
            BoundaryRefinement.BackgroundPauses.runs(samples: $0, channels: 1, rate: Self.rate, block: Self.ms)
        }
        let inner = runs.filter { $0.start > 200 && $0.end < 2000 }
        #expect(inner.count == words.count - 1, "\(runs)")
        for (run, (before, after)) in zip(inner, zip(words, words.dropFirst())) {
            #expect(abs(run.start - before.1) <= 4 && abs(run.end - after.0) <= 4 && run.share < BoundaryRefinement.BackgroundPauses.pureShare, "\(run) for \(before.1)–\(after.0)")
        }
    }

    /// A 200 ms pause the phone stage left out (it made the two words touch at 650 ms): taken,
    /// the earlier word ends where it begins, the later starts where it ends.
    @Test func aTwoHundredMillisecondPauseIsTaken() {
        let samples = Self.signal([(300, 600, 1), (800, 1100, 1)], milliseconds: 1400)
        let refined = Self.refine(Self.stage([(300, 770), (770, 1100)]), samples)
        #expect(abs(refined[0].1 - 600) <= 2 && abs(refined[1].0 - 800) <= 2, "\(refined)")
    }

    /// A 100 ms quiet run with no silence from the stage (70–150 ms: a closure's length) is not a
    /// pause; with 40 ms of silence from the stage over it, it is.
    @Test func aHundredMillisecondRunIsAPauseOnlyWhereTheStageHeardSilence() {
        let samples = Self.signal([(300, 600, 1), (700, 1000, 1)], milliseconds: 1300, floor: 0.005)
        let joined = Self.refine(Self.stage([(300, 650), (650, 1000)]), samples)
        #expect(joined[0].1 == 655 && joined[1].0 == 655, "\(joined)")
        let silence = Self.refine(Self.stage([(300, 630), (670, 1000)]), samples)
        #expect(abs(silence[0].1 - 600) <= 2 && abs(silence[1].0 - 700) <= 2, "\(silence)")
    }

    /// A breath (130 ms, 30 dB under the speech) or a click (4 ms, loud) just before the first
    /// word, the stage's first start 40 ms early: the word starts at its own sound (400 ms), not
    /// at the breath or the click, which lie within the 150 ms an edge may move outward. The
    /// same for a breath after the last word.
    @Test func aBreathOrAClickBeforeTheFirstWordIsNotTheFirstWord() {
        for (noise, level) in [((230, 360), Float(0.03)), ((340, 344), Float(2))] {
            let samples = Self.signal(
                [(noise.0, noise.1, level), (400, 700, 1), (720, 1000, 1), (1040, 1170, 0.03)], milliseconds: 1400)
            let refined = Self.refine(Self.stage([(360, 710), (710, 1030)]), samples)
            #expect(abs(refined[0].0 - 400) <= 3, "\(noise): first start \(refined[0].0) ms, its sound starts at 400 ms")
            #expect(abs(refined[1].1 - 1000) <= 3, "\(noise): last end \(refined[1].1) ms, its sound ends at 1000 ms")
        }
    }

    /// An edge moves inward at most 60 ms: a stage start 120 ms before a soft onset moves 60 ms.
    @Test func anEdgeMovesInwardAtMostSixtyMilliseconds() {
        let samples = Self.signal([(400, 700, 1)], milliseconds: 1000)
        let refined = Self.refine(Self.stage([(280, 700)]), samples)
        #expect(refined[0].0 == 340, "\(refined)")
    }

    /// The program's output read strictly: good output gives frames = round(seconds × rate) in
    /// the whole recording; a time out of its piece, out of order, not finite, the wrong number
    /// of words, or an unknown key is an error naming the file.
    /// Synthetic speech laid word by word with digital silence between (a clean recording): the
    /// stage misplaced a stretch of three boundaries by 180–260 ms (as PocketSphinx does on
    /// some espeak-ng and flite words), each nearer a neighbour's gap than its own. In order,
    /// every boundary takes its own gap: each word's edges within 1 ms of its sound.
    @Test func inACleanRecordingEachBoundaryTakesItsOwnGapInOrder() {
        // Words (ms): sound in each span, exact zeros elsewhere.
        let spans = [(200, 420), (470, 600), (660, 900), (940, 1080), (1150, 1400)]
        var generator = SeededGenerator(seed: 5)
        var samples = [Float](repeating: 0, count: 1600 * Self.ms)
        for (start, end) in spans {
            for frame in (start * Self.ms)..<(end * Self.ms) { samples[frame] = 0.3 * Float.random(in: -1...1, using: &generator) }
        }
        // The stage: boundary 1 a join 40 ms before its gap, boundaries 2 and 3 joins 220 and
        // 210 ms early. Taken one at a time, boundary 2's nearest gap (600–660, 20 ms away) is
        // boundary 1's and boundary 3's (900–940, 30 ms) is boundary 2's.
        var stage = Self.stage([(200, 420), (470, 560), (560, 680), (680, 870), (870, 1400)])
        for index in stage.indices { stage[index].phones[0].name = "AA" }
        let refined = Self.refine(stage, samples)
        for (found, truth) in zip(refined, spans) {
            #expect(abs(found.0 - truth.0) <= 1 && abs(found.1 - truth.1) <= 1, "found \(refined), truth \(spans)")
        }
    }

    /// A noise-gated recording (clean) with a 70 ms closure gated to the floor inside a word
    /// whose stop the stage heard there, and a join 100 ms from it: the join stays (+5 ms), the
    /// closure is left alone. Without the stop phone the closure would be taken as the pause.
    @Test func aGatedClosureInsideAStopIsNoPause() {
        var generator = SeededGenerator(seed: 13)
        var samples = [Float](repeating: 0, count: 1300 * Self.ms)
        for (start, end) in [(300, 600), (670, 1000)] {
            for frame in (start * Self.ms)..<(end * Self.ms) { samples[frame] = 0.3 * Float.random(in: -1...1, using: &generator) }
        }
        var words = Self.stage([(300, 770), (770, 1000)])
        words[0].phones = [
            .init(name: "AH", startFrame: 300 * Self.ms, endFrame: 590 * Self.ms, score: -100),
            .init(name: "T", startFrame: 590 * Self.ms, endFrame: 680 * Self.ms, score: -100),
            .init(name: "AH", startFrame: 680 * Self.ms, endFrame: 770 * Self.ms, score: -100),
        ]
        let refined = Self.refine(words, samples)
        #expect(refined[0].1 == 775 && refined[1].0 == 775, "\(refined)")
        words[0].phones[1].name = "AA"
        let vowel = Self.refine(words, samples)
        #expect(abs(vowel[0].1 - 600) <= 1 && abs(vowel[1].0 - 670) <= 1, "\(vowel)")
    }

    /// A word ending in a stop, in a clean recording: its vowel, a 70 ms closure (quiet, not
    /// silent) and a 15 ms release burst, then digital silence. The stage ends the word at the
    /// closure; the word ends with its release. Noise flickering just over the threshold after a
    /// word in a room (not clean) does not carry the word's end on.
    @Test func aFinalReleaseIsTheWordsButAFlickerIsNot() {
        var generator = SeededGenerator(seed: 9)
        var samples = [Float](repeating: 0, count: 1200 * Self.ms)
        for frame in (300 * Self.ms)..<(700 * Self.ms) { samples[frame] = 0.3 * Float.random(in: -1...1, using: &generator) }
        for frame in (700 * Self.ms)..<(770 * Self.ms) { samples[frame] = 0.0005 * Float.random(in: -1...1, using: &generator) }
        for frame in (770 * Self.ms)..<(785 * Self.ms) { samples[frame] = 0.1 * Float.random(in: -1...1, using: &generator) }
        let released = Self.refine(Self.stage([(300, 700)]), samples)
        #expect(abs(released[0].0 - 300) <= 1 && abs(released[0].1 - 785) <= 1, "\(released)")

        // A room's floor (−60 dBFS), the word, then three 8 ms blips 3 dB over the floor's
        // threshold 20–80 ms after it: the word ends at its sound.
        var room = Self.signal([(300, 700, 1)], milliseconds: 1200, floor: 0.002)
        for blip in [720, 750, 780] {
            for frame in (blip * Self.ms)..<((blip + 8) * Self.ms) { room[frame] += 0.009 * Float.random(in: -1...1, using: &generator) }
        }
        let flicker = Self.refine(Self.stage([(300, 700)]), room)
        #expect(abs(flicker[0].1 - 700) <= 3, "\(flicker)")
    }

    /// The in-order matching against every matching tried (small cases, random distances): the
    /// least cost, and the matching it returns costs that.
    @Test func assigningInOrderFindsTheLeastCost() {
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<300 {
            let boundaries = Int.random(in: 1...4, using: &generator)
            let pauses = Int.random(in: 1...4, using: &generator)
            let table = (0..<boundaries).map { _ in (0..<pauses).map { _ in Double(Int.random(in: 0...400, using: &generator)) } }
            let reach = 300.0, unmatched = 150.0
            let unmatchedPause = [0.0, 150.0, 350.0][Int.random(in: 0...2, using: &generator)]
            func cost(_ taken: [Int?]) -> Double {
                let matched = taken.compactMap { $0 }
                var moved = 0.0
                for (k, j) in taken.enumerated() { if let j { moved += table[k][j] } }
                return moved + Double(boundaries - matched.count) * unmatched + Double(pauses - matched.count) * unmatchedPause
            }
            // Every order-keeping matching, by brute force.
            var best = Double.infinity
            func search(_ k: Int, _ next: Int, _ taken: [Int?]) {
                if k == boundaries {
                    best = min(best, cost(taken))
                    return
                }
                search(k + 1, next, taken + [nil])
                for j in next..<pauses where table[k][j] <= reach { search(k + 1, j + 1, taken + [j]) }
            }
            search(0, 0, [])
            let found = BoundaryRefinement.assignInOrder(
                boundaries: boundaries, pauses: pauses, reach: reach, unmatched: unmatched, unmatchedPause: unmatchedPause
            ) { table[$0][$1] }
            let used = found.compactMap { $0 }
            #expect(used == used.sorted() && Set(used).count == used.count)
            #expect(found.enumerated().allSatisfy { k, j in j.map { table[k][$0] <= reach } ?? true })
            #expect(abs(cost(found) - best) < 1e-9, "\(table): \(found) costs \(cost(found)), least \(best)")
        }
    }

    @Test func thePocketSphinxOutputIsReadStrictly() throws {
        let pieces = [PocketSphinxStage.Piece(start: 16000, end: 48000, words: ["Hello,", "world."])]
        func read(_ text: String) throws(NarratorError) -> [PocketSphinxStage.Result] {
            try PocketSphinxStage.read(Data(text.utf8), pieces: pieces, words: [["Hello,", "world."]], rate: 48000, file: "ps")
        }
        let good = #"{"pieces": [{"beams": "default", "words": [{"word": "hello", "start": 0.1, "end": 0.5, "score": -900, "phones": [["HH", 0.1, 0.2, -100], ["AH", 0.2, 0.5, -800]]}, {"word": "world", "start": 0.5, "end": 0.95, "score": -700, "phones": []}], "silences": [[0.0, 0.1]]}]}"#
        let result = try read(good)
        guard case .aligned(let words, let silences, let beams) = result[0] else {
            Issue.record("\(result)")
            return
        }
        #expect(beams == "default" && silences == [48000...52800])
        #expect(words.map(\.timing.text) == ["Hello,", "world."])
        #expect(words.map { [$0.timing.startFrame, $0.timing.endFrame] } == [[52800, 72000], [72000, 93600]])
        #expect(words[0].phones.map(\.startFrame) == [52800, 57600])
        let failed = try read(#"{"pieces": [{"error": "not in PocketSphinx's dictionary: Zyx"}]}"#)
        #expect(failed == [.failed("not in PocketSphinx's dictionary: Zyx")])
        for bad in [
            good.replacingOccurrences(of: "\"end\": 0.95", with: "\"end\": 2.5"),  // past its piece
            good.replacingOccurrences(of: "\"start\": 0.5", with: "\"start\": 0.4"),  // overlaps the word before
            good.replacingOccurrences(of: "\"end\": 0.95", with: "\"end\": 1e400"),
            good.replacingOccurrences(of: "\"start\": 0.1", with: "\"start\": -0.1"),
            good.replacingOccurrences(of: "\"score\": -700", with: "\"score\": 7.5"),
            good.replacingOccurrences(of: "[\"AH\", 0.2, 0.5, -800]", with: "[\"AH\", 0.2, 0.6, -800]"),  // past its word
            good.replacingOccurrences(of: "\"beams\"", with: "\"beam\""),
            #"{"pieces": [{"beams": "default", "words": [], "silences": []}]}"#,
            #"{"pieces": []}"#,
            "not json",
        ] {
            #expect(throws: NarratorError.self, "\(bad)") { _ = try read(bad) }
        }
    }
}
