import CAllocationCounter
import Foundation
import NarratorAudioFile
@testable import NarratorCore
@testable import NarratorEngine
@_spi(Testing) import NarratorLive
import NarratorTestSupport
import Synchronization
import Testing

/// Long files streamed from disk move like voices in memory (issue 28.3b): seeks back and
/// forward, a word said on its own, a resume from a word's start, a speed change and a
/// take-back, on a plan whose voice and music bed are both streamed through their rings.
/// After the fade-in the output is the offline render from the frame moved to, sample for
/// sample; a take-back or a speed change the rings' history covers plays exactly what the
/// same plan held in memory plays.
@Suite("Streamed voices move")
struct StreamSeekTests {
    static let fade = TransportTests.fade

    /// Music (a 48 kHz sweep, so that a frame out of place shows) under two readings of a
    /// sentence, ducked, then a long tail of music alone: the music and the sentence are
    /// streamed (every clip over a second), or all of it held in memory.
    struct Fixture {
        let dir = TempDir()
        let streamed: Schedule
        let inMemory: Schedule
        let reference: [Int16]
        let lanes: StreamLanes

        init() throws {
            let bed = dir.file("bed.wav")
            let made = try runTool(
                "sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", bed, "synth", "20", "sine", "200-2000", "sine", "330", "vol", "0.3"])
            try #require(made.status == 0, "sox: \(made.stderr)")
            let clips = Repo.path("Audio/lessons")
            let path = dir.write(
                "stream.json",
                """
                {"sampleRate": 48000, "channels": 2, "ducking": {"gain": -12},
                 "clips": {"p1": {"file": "\(clips)/sight-words/part1.wav", "timings": "\(Repo.path("Timings/lessons/sight-words/part1.json"))"},
                           "bed": {"file": "\(bed)", "bus": "music"}},
                 "chains": {"c": [{"music": "bed"}, {"silence": 1}, {"clip": "p1"}, {"silence": 0.6}, {"clip": "p1"}, {"silence": 12}]}}
                """)
            let lesson = try Lesson.load(path: path)
            let streamedBank = try ClipBank.prepare(lesson: lesson, clipIDs: ["p1", "bed"], decoder: SndFileDecoder(streamAboveSeconds: 1))
            streamed = try LiveFixture.schedule("c", bank: streamedBank)
            let memoryBank = try ClipBank.prepare(lesson: lesson, clipIDs: ["p1", "bed"], decoder: SndFileDecoder(streamAboveSeconds: nil))
            inMemory = try LiveFixture.schedule("c", bank: memoryBank)
            reference = try LiveFixture.render(streamed, in: dir, name: "reference.wav")
            lanes = StreamLanes(schedule: streamed)
            let streamedVoices = streamed.voices.filter { if case .stream = $0.audio.source { true } else { false } }
            try #require(streamedVoices.count == 3 && lanes.rings.count == 2, "the bed and both readings stream, on two lanes")
            try #require(try LiveFixture.render(inMemory, in: dir, name: "memory.wav") == reference, "streamed and in memory render alike")
        }

        var words: [Cue] { streamed.cues.filter { if case .word = $0.kind { true } else { false } } }
    }

    /// Checks the output after each `seeked` (in order): from the end of its fade-in to the
    /// next one's fade-out (or the end), the render from the frame sought, sample for sample;
    /// the fade-in within a step of rounding of the faded render; and each cue from there on
    /// comes when its frame is heard. Returns the device frames of the seeks.
    @discardableResult
    static func checkSeeks(_ playback: VirtualPlayback, _ reference: [Int16], untilEnd: Bool = true) throws -> [Int] {
        let seeks = playback.log.events.compactMap { if case .seeked(let from, let to, let at) = $0 { (from, to, at) } else { nil } }
        let output = playback.output.samples
        let total = reference.count / 2
        let f = fade
        var devices: [Int] = []
        for (index, seek) in seeks.enumerated() {
            let device = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: seek.2))
            devices.append(device)
            let end = index + 1 < seeks.count ? seeks[index + 1].0 - f : (untilEnd ? total : min(total, seek.1 + 48000))
            let fadeIn = TransportTests.compare(output, at: device, reference, from: seek.1, count: f) { Double($0 + 1) / Double(f) }
            #expect(fadeIn == nil, "seek \(index) to \(seek.1): fade-in: \(fadeIn ?? "")")
            let count = end - seek.1 - f
            guard count > 0 else { continue }
            let after = TransportTests.compare(output, at: device + f, reference, from: seek.1 + f, count: count)
            #expect(after == nil, "seek \(index) from \(seek.0) to \(seek.1): \(after ?? "")")
            for (cue, heard, delivered) in playback.log.cues where cue.frame >= seek.1 && cue.frame < end && heard >= seek.2 {
                let when = try #require(playback.output.heardTime(ofFrame: device + cue.frame - seek.1))
                #expect(abs(heard - when) <= 1_000 && delivered >= when && delivered <= when + 1_000_000, "\(cue.type) at \(cue.frame)")
            }
        }
        return devices
    }

    /// Back from the second reading to the first (further back than the rings keep: they are
    /// refilled), forward into the music's tail (further than they hold: refilled), back by
    /// a word (within what they keep: no refill). Each lands on its frame.
    @Test func seeksBackAndForwardLandOnTheRender() throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let schedule = fixture.streamed
        let words = fixture.words
        let perReading = words.count / 2
        let secondReading = Array(words[perReading...])
        let controls: [(trigger: Cue, target: Int)] = [
            (secondReading[2], words[1].frame),
            (words[3], schedule.frames - 6 * 48000),
        ]
        let playback = VirtualPlayback(schedule)
        let engine = playback.engine
        let step = Atomic<Int>(0)
        playback.start(onEvent: { event in
            guard case .cue(let cue, _, _) = event else { return }
            let index = step.load(ordering: .relaxed)
            guard index < controls.count, cue == controls[index].trigger else { return }
            step.store(index + 1, ordering: .relaxed)
            #expect(engine.seek(to: controls[index].target))
        })
        // Then, in the tail, back by 0.3 s: within the rings' history.
        try VirtualPlayback.run(playback) { log in
            log.events.filter { if case .seeked = $0 { true } else { false } }.count == 2
        }
        playback.output.run(for: 500_000_000)
        #expect(engine.seek(to: engine.heardFrame - 14_400))
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)
        let seeks = playback.log.events.compactMap { if case .seeked(_, let to, _) = $0 { to } else { nil } }
        try #require(seeks.count == 3 && seeks[0] == controls[0].target && seeks[1] == controls[1].target, "\(seeks)")
        let devices = try Self.checkSeeks(playback, fixture.reference)
        print("seeks heard at device frames \(devices)")
        #expect(playback.log.terminals == 0)
        #expect(playback.output.underruns == 0)
        // The rings were never resized: memory stays what the lanes were made with.
        let lanes = StreamLanes(schedule: schedule)
        #expect(lanes.rings.map(\.capacity) == fixture.lanes.rings.map(\.capacity))
        // Two rings of 2 s (stereo), where the 20 s bed alone is 1,920,000 samples.
        #expect(fixture.lanes.rings.map(\.capacity) == [262_144, 262_144])
    }

    /// Paused on the second reading, the child taps a word of the first: that word alone
    /// (fades at both ends), exactly the render's, then back to the paused frame, and the
    /// resume goes on from there exactly.
    @Test func aWordSaidOnItsOwnIsTheRendersWord() throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let words = fixture.words
        let perReading = words.count / 2
        let trigger = words[perReading + 1]
        let said = words[2]
        guard case .word(_, _, _, let saidEnd) = said.kind else { Issue.record("not a word"); return }
        let playback = VirtualPlayback(fixture.streamed)
        let engine = playback.engine
        playback.start(onEvent: { event in
            if case .cue(let cue, _, _) = event, cue == trigger { engine.pause() }
        })
        try VirtualPlayback.run(playback) { log in log.events.contains { if case .paused = $0 { true } else { false } } }
        playback.output.run(for: 200_000_000)
        let pausedFrame = try #require(playback.log.events.compactMap { if case .paused(let frame, _) = $0 { frame } else { nil } }.first)
        let before = playback.log.events.count
        #expect(engine.play(said.frame..<saidEnd, then: .pauseWhereItWas))
        try VirtualPlayback.run(playback) { log in log.events.dropFirst(before).contains { if case .paused = $0 { true } else { false } } }
        playback.output.run(for: 200_000_000)
        let during = Array(playback.log.events.dropFirst(before))
        let sayStart = try #require(during.compactMap { if case .seeked(_, let to, let at) = $0, to == said.frame { at } else { nil } }.first)
        #expect(during.contains { if case .cue(let cue, _, _) = $0 { cue == said } else { false } })
        engine.resume()
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)
        let output = playback.output.samples
        let reference = fixture.reference
        let f = Self.fade
        let wordDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: sayStart))
        let length = saidEnd - said.frame
        #expect(TransportTests.compare(output, at: wordDevice, reference, from: said.frame, count: f) { Double($0 + 1) / Double(f) } == nil)
        let middle = TransportTests.compare(output, at: wordDevice + f, reference, from: said.frame + f, count: length - 2 * f)
        #expect(middle == nil, "the word: \(middle ?? "")")
        #expect(TransportTests.compare(output, at: wordDevice + length - f, reference, from: saidEnd - f, count: f) { Double(f - 1 - $0) / Double(f) } == nil)
        // The resume: from the paused frame, exactly.
        let resume = try #require(playback.log.events.compactMap { if case .resumed(let frame, let at) = $0 { (frame, at) } else { nil } }.last)
        #expect(resume.0 == pausedFrame)
        let resumeDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: resume.1))
        let rest = TransportTests.compare(output, at: resumeDevice + f, reference, from: pausedFrame + f, count: reference.count / 2 - pausedFrame - f)
        #expect(rest == nil, "after the resume: \(rest ?? "")")
        #expect(playback.output.underruns == 0)
    }

    /// Paused in the second reading, resumed from the start of a word of the first (a
    /// refill) and, paused again, from the start of the word heard (within the history).
    @Test func resumeFromAWordLandsOnTheRender() throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let words = fixture.words
        let perReading = words.count / 2
        let playback = VirtualPlayback(fixture.streamed)
        let engine = playback.engine
        let trigger = words[perReading + 2]
        let paused = Atomic<Bool>(false)
        playback.start(onEvent: { event in
            if case .cue(let cue, _, _) = event, cue == trigger, !paused.exchange(true, ordering: .relaxed) { engine.pause() }
        })
        try VirtualPlayback.run(playback) { log in log.events.contains { if case .paused = $0 { true } else { false } } }
        playback.output.run(for: 300_000_000)
        engine.resume(from: words[1].frame)
        // Heard again after the resume.
        try VirtualPlayback.run(playback) { log in log.cues.count { $0.cue == words[3] } == 2 }
        playback.output.run(for: 30_000_000)
        engine.pause()
        try VirtualPlayback.run(playback) { log in log.events.filter { if case .paused = $0 { true } else { false } }.count == 2 }
        playback.output.run(for: 300_000_000)
        engine.resume(from: words[3].frame)
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)
        let resumes = playback.log.events.compactMap { if case .resumed(let frame, let at) = $0 { (frame, at) } else { nil } }
        try #require(resumes.map(\.0) == [words[1].frame, words[3].frame], "\(resumes)")
        let pauses = playback.log.events.compactMap { if case .paused(let frame, _) = $0 { frame } else { nil } }
        try #require(pauses.count == 2)
        let output = playback.output.samples
        let reference = fixture.reference
        let f = Self.fade
        for (index, resume) in resumes.enumerated() {
            let device = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: resume.1))
            let fadeIn = TransportTests.compare(output, at: device, reference, from: resume.0, count: f) { Double($0 + 1) / Double(f) }
            #expect(fadeIn == nil, "resume \(index): fade-in: \(fadeIn ?? "")")

            let end = index == 0 ? pauses[1] - f : reference.count / 2
            try #require(end > resume.0 + f)
            let after = TransportTests.compare(output, at: device + f, reference, from: resume.0 + f, count: end - resume.0 - f)
            #expect(after == nil, "resume \(index) from \(resume.0): \(after ?? "")")
        }
        #expect(playback.output.underruns == 0)
    }

    /// A speed change (1.5×, then back to 1×) and a gain change mid-ramp take the timeline
    /// back by what the output and the stretcher hold: the rings step back over their
    /// history, and the output is, sample for sample, what the same plan held in memory gives.
    @Test func speedAndTakeBacksPlayAsInMemory() throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let words = fixture.words
        let perReading = words.count / 2
        func play(_ schedule: Schedule) throws -> (samples: [Int16], events: [String]) {
            let playback = VirtualPlayback(schedule)
            let engine = playback.engine
            playback.start(onEvent: { event in
                guard case .cue(let cue, _, _) = event else { return }
                if cue == words[1] { #expect((try? engine.setSpeed(1.5)) == true) }
                if cue == words[perReading] { engine.gains.set(.music, gain: 0.5) }
                if cue == words[perReading + 2] { #expect((try? engine.setSpeed(1)) == true) }
            })
            playback.output.run(for: 6_000_000_000)
            engine.gains.set(.master, gain: 0.8)
            playback.output.run(for: 4_000_000)
            engine.gains.set(.sfx, gain: 1)
            #expect(playback.output.runToEnd(limit: 60_000_000_000))
            #expect(playback.log.outcome == .finished)
            #expect(playback.output.underruns == 0)
            let events = playback.log.events.map { event -> String in
                switch event {
                case .speedChanged(let speed, let frame, _): "speed \(speed) at \(frame)"
                case .cue(let cue, _, _): "\(cue.type) \(cue.frame)"
                default: "other"
                }
            }
            return (playback.output.samples, events)
        }
        let streamed = try play(fixture.streamed)
        let inMemory = try play(fixture.inMemory)
        #expect(streamed.events == inMemory.events)
        #expect(streamed.events.filter { $0.hasPrefix("speed") }.count == 2)
        #expect(streamed.samples.count == inMemory.samples.count)
        let first = zip(streamed.samples, inMemory.samples).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(first == nil, "streamed and in memory part at frame \((first?.offset ?? 0) / 2): \(first.map { "\($0.element.0) vs \($0.element.1)" } ?? "")")
    }

    /// Rendering still allocates nothing on the real-time thread when streamed voices move.
    @Test func movingStreamsDoesNotAllocate() throws {
        let fixture = try Fixture()
        defer { fixture.dir.remove() }
        let words = fixture.words
        let playback = VirtualPlayback(fixture.streamed)
        let engine = playback.engine
        narrator_reset_allocation_count()
        playback.output.renderProbe = { narrator_count_allocations($0) }
        let done = Atomic<Bool>(false)
        playback.start(onEvent: { event in
            guard case .cue(let cue, _, _) = event, cue == words[words.count / 2 + 1], !done.exchange(true, ordering: .relaxed) else { return }
            engine.seek(to: words[0].frame)
        })
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)
        let seeked = done.load(ordering: .relaxed)
        #expect(seeked)
        #expect(narrator_allocation_count() == 0, "allocations while rendering")
    }
}
