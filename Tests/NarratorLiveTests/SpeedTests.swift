import CAllocationCounter
import Foundation
import NarratorAudioFile
@testable import NarratorCore
@testable import NarratorEngine
@_spi(Testing) import NarratorLive
import NarratorTestSupport
import Synchronization
import Testing

/// Speed on the virtual output. The ground truth: a chain of sox bursts, each after a stretch of
/// digital silence, whose onsets a threshold finds in the 1× render (it knows nothing of the
/// stretcher); at speed `s` each word's sound must be heard where its cue says, within 5 ms,
/// and a 440 Hz tone must still measure 440 Hz.
@Suite("Speed on the virtual output")
struct SpeedTests {
    static let rate = 48_000
    static let fiveMs = 240

    struct Fixture {
        let dir = TempDir()
        let schedule: Schedule
        /// Timeline frames where each word's sound starts (found in the 1× render).
        let onsets: [Int]
        /// The 440 Hz tone's frames on the timeline.
        let tone: Range<Int>

        init() throws {
            let path = try StretchFixture.write(in: dir)
            let lesson = try Lesson.load(path: path)
            let bank = try ClipBank.prepare(lesson: lesson, clipIDs: ["start", "b1", "b2", "a440"], decoder: SndFileDecoder())
            var draws = PoolDraws(seed: 1)
            schedule = try Scheduler.schedule(chain: "x", repeats: 1, bank: bank, draws: &draws)
            try OfflineRenderer.render(schedule, to: dir.file("1x.wav"), format: .s16)
            let plain = try WAVFile(path: dir.file("1x.wav")).int16Samples
            // The first onset is `start` itself, at frame 0.
            onsets = Array(SpeedTests.onsets(plain).dropFirst())
            let words = schedule.cues.filter { $0.type == "word" }
            try #require(onsets.count == words.count, "onsets \(onsets), words \(words.map(\.frame))")
            for (onset, word) in zip(onsets, words) { try #require(onset == word.frame, "the fixture's timings") }
            let la = try #require(words.first { if case .word(_, _, "la", _) = $0.kind { true } else { false } })
            tone = la.frame..<(la.frame + 48_000)
        }
    }

    static func onsets(_ samples: [Int16], from: Int = 0) -> [Int] { StretchFixture.onsets(samples, from: from) }

    static func deviceFrame(_ output: VirtualOutput, heardAt time: Int64) throws -> Int {
        try #require(VirtualPlayback.deviceFrame(output, heardAt: time))
    }

    /// Every word's cue comes once, in order, and is heard (its stamp, and its delivery at most
    /// 1 ms later) within 5 ms of where a word's sound starts in what the output played.
    /// (A resume after a pause starts a sound too: it is not a word's onset.)
    static func checkWords(_ playback: VirtualPlayback, _ fixture: Fixture, d0: Int) throws {
        let output = playback.output.samples
        let resumes = try playback.log.events.compactMap { event -> Int? in
            if case .resumed(_, let at) = event { try deviceFrame(playback.output, heardAt: at) - d0 } else { nil }
        }
        let heardOnsets = onsets(output, from: d0).dropFirst().filter { onset in !resumes.contains { abs($0 - onset) <= fiveMs } }
        let words = playback.log.cues.filter { $0.cue.type == "word" }
        #expect(words.map(\.cue) == fixture.schedule.cues.filter { $0.type == "word" }, "every word once, in order")
        #expect(heardOnsets.count == words.count, "onsets heard \(Array(heardOnsets)), words \(words.count)")
        for ((cue, heard, delivered), onset) in zip(words, heardOnsets) {
            let device = try deviceFrame(playback.output, heardAt: heard) - d0
            #expect(abs(device - onset) <= fiveMs, "word at \(cue.frame): cue heard at output frame \(device), its sound starts at \(onset)")
            #expect(delivered >= heard && delivered <= heard + 1_000_000)
        }
    }

    /// At a fixed speed set before the start, the output is the offline render at that speed
    /// (the same stretcher, fed in other blocks), every cue is heard where its word sounds,
    /// and the tone keeps its pitch.
    @Test(arguments: [0.75, 1.5])
    func aFixedSpeedIsTheStretchedRender(speed: Double) throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let playback = VirtualPlayback(fixture.schedule)
        #expect(try playback.engine.setSpeed(speed))
        #expect(try playback.play() == .finished)
        #expect(playback.log.cues.map(\.cue) == fixture.schedule.cues, "every cue once, in order")
        let output = playback.output.samples
        let d0 = try #require(output.indices.first { output[$0] != 0 }) / 2
        try Self.checkWords(playback, fixture, d0: d0)

        try OfflineRenderer.render(fixture.schedule, to: fixture.dir.file("s.wav"), format: .s16, speed: speed)
        let stretched = try WAVFile(path: fixture.dir.file("s.wav")).int16Samples
        let length = stretched.count / 2
        #expect(length == TimeStretcher.outputFrame(forInput: fixture.schedule.frames, speed: speed))
        #expect(output.count >= (d0 + length) * 2)
        let differing = (0..<min(length, output.count / 2 - d0)).filter { output[2 * (d0 + $0)] != stretched[2 * $0] }
        #expect(differing.isEmpty, "\(differing.count) frames differ from the offline render, the first at \(differing.first ?? -1)")

        let toneStart = TimeStretcher.outputFrame(forInput: fixture.tone.lowerBound, speed: speed) + 2_400
        let toneEnd = TimeStretcher.outputFrame(forInput: fixture.tone.upperBound, speed: speed) - 2_400
        let measured = StretchFixture.frequency(output, (d0 + toneStart)..<(d0 + toneEnd))
        #expect(abs(measured - 440) <= 4.4, "the tone measures \(measured) Hz at \(speed)×")
        print("speed \(speed): tone \(String(format: "%.2f", measured)) Hz")
    }

    /// Speed changed mid-word (1.5×, then 0.75×, then back to 1×) and a pause at 0.75×: every
    /// cue once and in order, each word heard where its cue says, the words spaced as each
    /// speed says, and nothing delivered during the pause.
    @Test func speedChangesMidWordAndAPause() throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let playback = VirtualPlayback(fixture.schedule)
        let words = fixture.schedule.cues.filter { $0.type == "word" }
        let engine = playback.engine
        let clock = playback.clock
        // Each change 50 ms into a word (its sound is playing).
        let changes: [(after: Int, speed: Double)] = [(words[1].frame, 1.5), (words[3].frame, 0.75), (words[6].frame, 1)]
        let pauseAt = words[5].frame
        playback.start()
        var next = 0
        var paused = false
        let end = clock.now() + 60_000_000_000
        while playback.log.outcome == nil && clock.now() < end {
            playback.output.run(for: 1_000_000)
            let heard = engine.heardFrame
            if next < changes.count && heard >= changes[next].after + 2_400 {
                #expect(try engine.setSpeed(changes[next].speed))
                next += 1
            }
            if !paused && heard >= pauseAt + 2_400 {
                paused = true
                engine.pause()
                try VirtualPlayback.run(playback) { log in log.events.contains { if case .paused = $0 { true } else { false } } }
                let delivered = playback.log.cues.count
                playback.output.run(for: 500_000_000)
                #expect(playback.log.cues.count == delivered, "a cue came while paused")
                engine.resume()
            }
        }
        #expect(playback.log.outcome == .finished)
        #expect(next == changes.count && paused)
        #expect(playback.log.cues.map(\.cue) == fixture.schedule.cues, "every cue once, in order")
        let output = playback.output.samples
        let d0 = try #require(output.indices.first { output[$0] != 0 }) / 2
        try Self.checkWords(playback, fixture, d0: d0)
        // One `speedChanged` a change, heard where its fade-out ends (the output silent there,
        // between the fade-out and the fade-in), at a timeline frame just past the request's.
        let changed = playback.log.events.compactMap { event -> (speed: Double, frame: Int, at: Int64)? in
            if case .speedChanged(let speed, let frame, let at) = event { (speed, frame, at) } else { nil }
        }
        #expect(changed.map(\.speed) == changes.map(\.speed), "\(changed)")
        for (change, asked) in zip(changed, changes) {
            #expect((asked.after + 2_400...asked.after + 2_400 + 4_800).contains(change.frame), "\(change.speed)× from \(change.frame), asked at \(asked.after + 2_400)")
            let at = try Self.deviceFrame(playback.output, heardAt: change.at)
            let around = ((at - 2)...(at + 2)).map { abs(Int(output[$0 * 2])) }
            #expect(around.allSatisfy { $0 <= 500 }, "\(change.speed)× heard at device frame \(at): \(around)")
        }
        // The words' spacing at each speed: word 2 to 3 at 1.5×, 4 to 5 at 0.75×, 7 to 8 at 1×.
        let heard = try playback.log.cues.filter { $0.cue.type == "word" }.map { try Self.deviceFrame(playback.output, heardAt: $0.heard) }
        for (range, speed) in [(2..<3, 1.5), (4..<5, 0.75), (7..<8, 1.0)] {
            for k in range {
                let expected = Double(words[k + 1].frame - words[k].frame) / speed
                #expect(abs(Double(heard[k + 1] - heard[k]) - expected) <= 2, "words \(k)→\(k + 1) at \(speed)×")
            }
        }
    }

    /// The stretched path allocates nothing while rendering: at 0.75×, through a change to
    /// 1.5× (the stretcher restarted), a pause, a resume and a seek, with the allocation
    /// counter on around every render call.
    @Test func stretchingDoesNotAllocate() throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let playback = VirtualPlayback(fixture.schedule)
        let engine = playback.engine
        #expect(try engine.setSpeed(0.75))
        narrator_reset_allocation_count()
        playback.output.renderProbe = { narrator_count_allocations($0) }
        playback.start()
        playback.output.run(for: 700_000_000)
        #expect(try engine.setSpeed(1.5))
        playback.output.run(for: 300_000_000)
        engine.pause()
        playback.output.run(for: 200_000_000)
        engine.resume()
        playback.output.run(for: 200_000_000)
        #expect(engine.seek(to: 9_600))
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)
        #expect(narrator_allocation_count() == 0, "allocations while rendering")
    }

    /// A take-back in the middle of a gain ramp while stretching (0.75×, in the 440 Hz tone at
    /// half scale): a second request 4 ms after a master gain change to 0.25 (the same sfx
    /// level: nothing to hear) makes the output take back what it holds and the stretcher start
    /// again from the frame heard. The ramp (10 ms, linear: from a peak of 16384 to 4096) goes
    /// on from its level at that frame: from one period of the tone to the next the peak falls
    /// by at most twice what the ramp falls in a period at 1× (the stretcher at 0.75× repeats
    /// periods, it never skips them). Before, the levels were where the mixer had fed the
    /// stretcher ahead, the ramp's end: the peak fell by 7845 in one period.
    @Test func aRewindWhileStretchingTakesTheGainRampBackToo() throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let la = try #require(fixture.schedule.cues.first { if case .word(_, _, "la", _) = $0.kind { true } else { false } })
        func play(second: Bool) throws -> (samples: [Int16], at: Int) {
            let playback = VirtualPlayback(fixture.schedule, periodFrames: 96, bufferFrames: 960)
            #expect(try playback.engine.setSpeed(0.75))
            playback.start()
            try VirtualPlayback.run(playback) { log in log.cues.contains { $0.cue == la } }
            playback.output.run(for: 200_000_000)
            let at = playback.output.played
            playback.engine.gains.set(.master, gain: 0.25)
            playback.output.run(for: 4_000_000)
            if second { playback.engine.gains.set(.sfx, gain: 1) }
            try #require(playback.output.runToEnd(limit: 60_000_000_000))
            #expect(playback.log.outcome == .finished)
            #expect(playback.log.cues.map(\.cue) == fixture.schedule.cues, "every cue once, in order")
            return (playback.output.samples, at)
        }
        // One period of the tone (109.1 frames at 48 kHz): the peak of the left channel.
        let period = 109
        let periods = 4_800 / period
        let steepest = 2 * (16_384 - 4_096) * period / 480
        for second in [false, true] {
            let (samples, at) = try play(second: second)
            let peaks = (0..<periods).map { k in
                Double((at + k * period..<at + (k + 1) * period).map { abs(Int(samples[2 * $0])) }.max() ?? 0)
            }
            let run = second ? "with the take-back" : "without"
            try #require(peaks[0] > 16_000 && abs(peaks[periods - 1] - 4_096) < 100, "\(run): the ramp is heard: \(peaks)")
            let drops = zip(peaks, peaks.dropFirst()).map { $0 - $1 }
            let worst = drops.indices.max { drops[$0] < drops[$1] }!
            #expect(drops[worst] <= Double(steepest), "\(run): the peak falls by \(drops[worst]) from period \(worst) to the next (at most \(steepest)): \(peaks)")
        }
    }
}
