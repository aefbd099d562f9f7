import CAllocationCounter
import Foundation
import NarratorAudioFile
@testable import NarratorCore
@testable import NarratorEngine
@_spi(Testing) import NarratorLive
import NarratorTestSupport
import Synchronization
import Testing

/// An activity's music bed played live on the virtual output (issue 30.1): across its loops,
/// a pause and resume, a seek, and a `close` that replans the activity while it plays, the
/// output is the offline render sample for sample (fades within a step of rounding).
@Suite("Music bed on the virtual output")
struct MusicBedLiveTests {
    struct Fixture {
        let bed = MusicBedFixture(channels: 2)
        let bank: ClipBank
        let activity: Activity

        init() throws {
            let lesson = try Lesson.load(path: bed.path)
            activity = try lesson.activity("a")
            bank = try ClipBank.prepare(lesson: lesson, clipIDs: ["noise", "voice"], decoder: SndFileDecoder(streamAboveSeconds: nil))
        }

        /// The activity's plan from `taps` until `until` (frames), as NarratorKit plans it.
        func plan(taps: [Tap] = [], until: Int) throws -> Schedule {
            var draws = PoolDraws(seed: 1)
            let bank = bank
            var runner = ActivityRunner(activity: activity, sampleRate: 48000) { chain throws(NarratorError) in
                try Scheduler.schedule(chain: chain, bank: bank, draws: &draws)
            }
            runner.bed = try MusicBed.resolve(activity, bank: bank)
            return try runner.run(taps: taps, until: until).schedule
        }
    }

    /// The lesson's bed (the same noise bed as `a`'s) under chain `pause` played on its own,
    /// as NarratorKit prepares it: 5 s, the voice at 1 s, then 0.25 s of fade-out.
    static func chainPlan(_ bed: MusicBedFixture) throws -> Schedule {
        let lesson = try Lesson.load(path: bed.path)
        let bank = try ClipBank.prepare(lesson: lesson, chain: "pause", decoder: SndFileDecoder())
        var draws = PoolDraws(seed: 1)
        let chain = try Scheduler.schedule(chain: "pause", bank: bank, draws: &draws)
        return try #require(try MusicBed.resolve(nil, bank: try ClipBank.prepare(lesson: lesson, clipIDs: ["noise"], decoder: SndFileDecoder(streamAboveSeconds: nil)))).under(chain, file: bed.path)
    }

    static let fade = TransportTests.fade

    /// Paused on the bed's first loop point, resumed a second later, then (after the second)
    /// sought back into the first pass: the output is the render up to each move (its 5 ms
    /// fade-out), then the render from the frame it went to (after a 5 ms fade-in), across the
    /// loop points; every cue comes once, in order.
    @Test func pauseResumeAndSeekPlayTheRender() throws {
        let fixture = try Fixture()
        defer { fixture.bed.dir.remove() }
        let schedule = try fixture.plan(until: 6 * 48000)
        try #require(schedule.frames == 6 * 48000 + 12_000)
        try Self.playsTheRender(schedule, fixture.bed, bedAt: [1000, 90_000, 119_999, 120_000, 200_000, 216_000, 280_000])
    }

    /// The same for the lesson's bed under a chain played on its own (`pause`, 5 s): paused
    /// on the first loop point, resumed, sought back from the second; the output is the
    /// offline render sample for sample, and the render is the fixture's noise tiled over the
    /// loop where the voice does not play.
    @Test func theLessonsBedUnderAChainPlaysTheRender() throws {
        let bed = MusicBedFixture(channels: 2, lessonMusic: MusicBedFixture.noiseBed)
        defer { bed.dir.remove() }
        let schedule = try Self.chainPlan(bed)
        try #require(schedule.frames == 5 * 48000 + 12_000 && schedule.cues.first?.traceKind == .musicStart)
        try Self.playsTheRender(schedule, bed, bedAt: [1000, 90_000, 119_999, 120_000, 200_000, 216_000, 239_999])
    }

    /// Plays `schedule` (the noise bed from frame 0, its voice at 1 s) on the virtual output:
    /// paused at its first `musicLoop`, resumed a second later, sought back to frame 100 000
    /// at its second; checks the output against the offline render, and the render against
    /// the fixture's noise tiled over the loop at the frames `bedAt`.
    static func playsTheRender(_ schedule: Schedule, _ bed: MusicBedFixture, bedAt: [Int]) throws {
        let reference = try LiveFixture.render(schedule, in: bed.dir, name: "reference.wav")
        // The render is the bed, tiled, where nothing else plays (left channel; mono on both).
        for frame in bedAt {
            #expect(reference[frame * 2] == MusicBedFixture.looped(bed.noise, at: frame) && reference[frame * 2 + 1] == reference[frame * 2])
        }
        try #require(bed.noise[0] != 0, "the output's first frame that is not silence is the timeline's first")
        let loops = schedule.cues.filter { $0.traceKind == .musicLoop }
        try #require(loops.map(\.frame) == [120_000, 216_000])

        let playback = VirtualPlayback(schedule)
        let engine = playback.engine
        let moved = Atomic<Int>(0)
        playback.start(onEvent: { event in
            // Once each: the seek back plays both loop points again.
            guard case .cue(let cue, _, _) = event else { return }
            if cue == loops[0], moved.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged { engine.pause() }
            if cue == loops[1], moved.compareExchange(expected: 1, desired: 2, ordering: .relaxed).exchanged { #expect(engine.seek(to: 100_000)) }
        })
        try VirtualPlayback.run(playback) { log in log.events.contains { if case .paused = $0 { true } else { false } } }
        playback.output.run(for: 1_000_000_000)
        engine.resume()
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)

        let events = playback.log.events
        let paused = events.compactMap { if case .paused(let frame, let at) = $0 { (frame, at) } else { nil } }
        let resumed = events.compactMap { if case .resumed(let frame, let at) = $0 { (frame, at) } else { nil } }
        let seeked = events.compactMap { if case .seeked(let from, let to, let at) = $0 { (from, to, at) } else { nil } }
        try #require(paused.count == 1 && resumed.count == 1 && seeked.count == 1, "\(events)")
        let (pauseFrame, pauseHeard) = paused[0]
        let (from, to, seekHeard) = seeked[0]
        #expect(resumed[0].0 == pauseFrame && to == 100_000 && from > 216_000)
        let expectedCues = schedule.cues.filter { $0.frame < from } + schedule.cues.filter { $0.frame >= to }
        #expect(playback.log.cues.map(\.cue) == expectedCues, "every cue once, in order (again from the seek)")

        let output = playback.output.samples
        let f = Self.fade
        let d0 = try #require(output.indices.first { output[$0] != 0 }) / 2
        let pauseDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: pauseHeard))
        let resumeDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: resumed[0].1))
        let seekDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: seekHeard))
        #expect(pauseDevice == d0 + pauseFrame)
        #expect(TransportTests.compare(output, at: d0, reference, from: 0, count: pauseFrame - f) == nil, "up to the pause")
        let fadeOut = TransportTests.compare(output, at: d0 + pauseFrame - f, reference, from: pauseFrame - f, count: f) { Double(f - 1 - $0) / Double(f) }
        #expect(fadeOut == nil, "pause fade-out: \(fadeOut ?? "")")
        #expect(output[(pauseDevice * 2)..<(resumeDevice * 2)].allSatisfy { $0 == 0 }, "silence while paused")
        let fadeIn = TransportTests.compare(output, at: resumeDevice, reference, from: pauseFrame, count: f) { Double($0 + 1) / Double(f) }
        #expect(fadeIn == nil, "resume fade-in: \(fadeIn ?? "")")
        let resumedSpan = TransportTests.compare(output, at: resumeDevice + f, reference, from: pauseFrame + f, count: from - pauseFrame - 2 * f)
        #expect(resumedSpan == nil, "from the resume, over the second loop point, to the seek: \(resumedSpan ?? "")")
        #expect(seekDevice == resumeDevice + from - pauseFrame)
        let seekFadeIn = TransportTests.compare(output, at: seekDevice, reference, from: to, count: f) { Double($0 + 1) / Double(f) }
        #expect(seekFadeIn == nil, "seek fade-in: \(seekFadeIn ?? "")")
        let afterSeek = TransportTests.compare(output, at: seekDevice + f, reference, from: to + f, count: schedule.frames - to - f)
        #expect(afterSeek == nil, "from the seek to the end, over both loop points and the fade-out: \(afterSeek ?? "")")
    }

    /// The bed's loops, fades and ducking allocate nothing on the real-time thread, through a
    /// pause, a resume and a seek across a loop point.
    @Test func theBedAllocatesNothingWhileRendering() throws {
        let fixture = try Fixture()
        defer { fixture.bed.dir.remove() }
        let schedule = try fixture.plan(until: 6 * 48000)
        let loops = schedule.cues.filter { $0.traceKind == .musicLoop }
        let playback = VirtualPlayback(schedule)
        let engine = playback.engine
        narrator_reset_allocation_count()
        playback.output.renderProbe = { narrator_count_allocations($0) }
        let moved = Atomic<Int>(0)
        playback.start(onEvent: { event in
            guard case .cue(let cue, _, _) = event else { return }
            if cue == loops[0], moved.compareExchange(expected: 0, desired: 1, ordering: .relaxed).exchanged { engine.pause() }
            if cue == loops[1], moved.compareExchange(expected: 1, desired: 2, ordering: .relaxed).exchanged { _ = engine.seek(to: 100_000) }
        })
        try VirtualPlayback.run(playback) { log in log.events.contains { if case .paused = $0 { true } else { false } } }
        engine.resume()
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(moved.load(ordering: .relaxed) == 2)
        #expect(narrator_allocation_count() == 0, "allocations while rendering")
    }

    /// Answered live: the plan runs for 30 s until the child closes the activity after the
    /// first loop point; the new plan fades the bed out from the close. The output plays the
    /// closing plan's render from its first frame to its last: the switch takes over where
    /// the fade-out begins (`Schedule.firstDifference`), not where the bed ends.
    @Test func aCloseLiveFadesTheBedOutAsTheRenderDoes() throws {
        let fixture = try Fixture()
        defer { fixture.bed.dir.remove() }
        let until = 30 * 48000
        let initial = try fixture.plan(until: until)
        let closing = Mutex<Schedule?>(nil)
        let playback = VirtualPlayback(initial)
        let outcome = try playback.play(replanner: { heard, response in
            guard heard >= 150_000, closing.withLock({ $0 == nil }) else { return nil }
            guard let next = try? fixture.plan(taps: [Tap(frame: response, answer: Tap.close, heardFrame: heard)], until: until) else { return nil }
            closing.withLock { $0 = next }
            return (next, Schedule.firstDifference(initial, next))
        })
        #expect(outcome == .finished)
        let next = try #require(closing.withLock { $0 })
        let close = try #require(next.cues.first { $0.traceKind == .activityEnd }).frame
        #expect(Schedule.firstDifference(initial, next) == close, "the plans part where the fade-out begins")
        #expect(next.frames == close + 12_000 && next.cues.last?.traceKind == .musicStop)
        #expect(!playback.log.events.contains { if case .lateSwitch = $0 { true } else { false } })
        let reference = try LiveFixture.render(next, in: fixture.bed.dir, name: "closing.wav")
        let before = try LiveFixture.render(initial, in: fixture.bed.dir, name: "initial.wav")
        #expect(Array(before[..<(close * 2)]) == Array(reference[..<(close * 2)]), "the plans agree up to the close")
        let output = playback.output.samples
        let d0 = try #require(output.indices.first { output[$0] != 0 }) / 2
        let played = Array(output.dropFirst(d0 * 2).prefix(reference.count))
        let first = zip(played, reference).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(played.count == reference.count && first == nil, "sample \(first?.offset ?? -1): \(first?.element.0 ?? 0), the render's \(first?.element.1 ?? 0)")
        #expect(playback.log.cues.map(\.cue).last?.traceKind == .musicStop)
    }
}
