import Foundation
import NarratorAudioFile
@testable import NarratorCore
@testable import NarratorEngine
@_spi(Testing) import NarratorLive
import NarratorTestSupport
import Synchronization
import Testing

/// Pause, resume, seek and gains on the virtual output. The ground truth is the offline render
/// (sox-exact) and the definitions of the fades and ramps: 5 ms linear fades, gains that move
/// by at most 1/480 a frame at 48 kHz. Where a fade or a ramp scales a sample, the output may
/// differ from the scaled reference by the last bit's rounding.
@Suite("Transport on the virtual output")
struct TransportTests {
    static let fade = 240

    /// Compares `count` frames of the output from device frame `at` with the reference from
    /// timeline frame `from`, each reference frame scaled by `gain(k)`; exact when the gain is
    /// 1, else within one step of rounding. Returns the first mismatch.
    static func compare(
        _ output: [Int16], at: Int, _ reference: [Int16], from: Int, count: Int, gain: (Int) -> Double = { _ in 1 }
    ) -> String? {
        for k in 0..<count {
            let g = gain(k)
            for c in 0..<2 {
                let got = Int(output[(at + k) * 2 + c])
                let want = Double(reference[(from + k) * 2 + c]) * g
                if g == 1 ? got != Int(want) : abs(Double(got) - want) > 1.01 {
                    return "frame \(k) (device \(at + k), timeline \(from + k)) channel \(c): \(got), expected \(want)"
                }
            }
        }
        return nil
    }

    static func cueOf(_ schedule: Schedule, clip: String, word: Int, after frame: Int = -1) -> Cue? {
        schedule.cues.first { cue in
            if case .word(clip, word, _, _) = cue.kind { cue.frame > frame } else { false }
        }
    }

    /// Pause on a word, a second of silence, resume: the output is the render up to the pause
    /// (its last 5 ms faded out), silence, then the rest of the render from the paused frame
    /// (its first 5 ms faded in), with nothing lost or repeated; the pause is heard within a
    /// period of the request; every cue comes once, when heard.
    @Test func pauseThenResumeLosesNothing() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let playback = VirtualPlayback(fixture.schedule)
        let trigger = try #require(Self.cueOf(fixture.schedule, clip: "p1", word: 1))
        let requested = Mutex<Int64?>(nil)
        let engine = playback.engine
        let clock = playback.clock
        playback.start(onEvent: { event in
            if case .cue(let cue, _, _) = event, cue == trigger {
                requested.withLock { $0 = clock.now() }
                engine.pause()
            }
        })
        try VirtualPlayback.run(playback) { log in log.events.contains { if case .paused = $0 { true } else { false } } }
        // Paused for a second: nothing is delivered meanwhile.
        let cuesWhenPaused = playback.log.cues.count
        playback.output.run(for: 1_000_000_000)
        #expect(playback.log.cues.count == cuesWhenPaused, "a cue came while paused")
        let resumeRequested = playback.clock.now()
        engine.resume()
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)

        let events = playback.log.events
        let pausedAt = try #require(events.firstIndex { if case .paused = $0 { true } else { false } })
        let resumedAt = try #require(events.firstIndex { if case .resumed = $0 { true } else { false } })
        guard case .paused(let frame, let pauseHeard) = events[pausedAt], case .resumed(let resumeFrame, let resumeHeard) = events[resumedAt] else {
            Issue.record("no pause and resume")
            return
        }
        #expect(pausedAt < resumedAt && resumeFrame == frame)
        #expect(events.filter { if case .paused = $0 { true } else { false } }.count == 1)
        // Every cue once, in order; none past the paused frame before the resume.
        #expect(playback.log.cues.map(\.cue) == fixture.schedule.cues)
        for event in events[pausedAt..<resumedAt] {
            if case .cue(let cue, _, _) = event { #expect(cue.frame < frame, "cue at \(cue.frame) during the pause at \(frame)") }
        }
        // The pause is over (its fade-out heard) within one period (10 ms) of the request: the
        // device's next tick (1 ms) takes back what it holds beyond its margin (1 ms), where
        // the 5 ms fade-out is rendered at once. The resume starts being heard within the
        // same tick and margin.
        let request = try #require(requested.withLock { $0 })
        #expect(pauseHeard - request <= 10_000_000, "pause heard \(ms(pauseHeard - request)) after it was asked for")
        #expect(resumeHeard - resumeRequested <= 3_000_000, "resume heard \(ms(resumeHeard - resumeRequested)) after it was asked for")
        print("pause: heard \(ms(pauseHeard - request)) after the request; resume: \(ms(resumeHeard - resumeRequested))")

        // The audio.
        let output = playback.output.samples
        let reference = fixture.reference
        let total = reference.count / 2
        let d0 = try #require(output.indices.first { output[$0] != 0 }) / 2  // the tone starts at its peak
        let pauseDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: pauseHeard))
        let resumeDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: resumeHeard))
        #expect(pauseDevice == d0 + frame, "the pause is heard at the paused frame")
        let f = Self.fade
        #expect(Self.compare(output, at: d0, reference, from: 0, count: frame - f) == nil)
        let fadeOut = Self.compare(output, at: d0 + frame - f, reference, from: frame - f, count: f) { Double(f - 1 - $0) / Double(f) }
        #expect(fadeOut == nil, "fade-out: \(fadeOut ?? "")")
        #expect(output[(pauseDevice * 2)..<(resumeDevice * 2)].allSatisfy { $0 == 0 }, "silence while paused")
        #expect(resumeDevice - pauseDevice >= 48_000, "paused for a second at least")
        let fadeIn = Self.compare(output, at: resumeDevice, reference, from: frame, count: f) { Double($0 + 1) / Double(f) }
        #expect(fadeIn == nil, "fade-in: \(fadeIn ?? "")")
        #expect(Self.compare(output, at: resumeDevice + f, reference, from: frame + f, count: total - frame - f) == nil)

        // Each cue when its frame is heard, stamped with that moment.
        for (cue, heard, delivered) in playback.log.cues {
            let device = cue.frame < frame ? d0 + cue.frame : resumeDevice + (cue.frame - frame)
            let when = try #require(playback.output.heardTime(ofFrame: device))
            #expect(abs(heard - when) <= 1_000, "\(cue.type) at \(cue.frame) stamped \(ms(heard - when)) from when it was heard")
            #expect(delivered >= when && delivered <= when + 1_000_000, "\(cue.type) at \(cue.frame) delivered \(ms(delivered - when)) after it was heard")
        }
    }

    /// A gain set right after a resume makes the output take back what it holds, into the
    /// resume's fade-in: the frames rendered again go on with the fade from where it was there
    /// (not at full level: a click), and the resume stays where it was (`resumed` once).
    @Test func aRewindDuringTheFadeInKeepsItWhole() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        // A 2 ms period: the take-back keeps only the 1 ms margin past what is heard, which
        // 3 ms after the resume lies inside its fade-in.
        let playback = VirtualPlayback(fixture.schedule, periodFrames: 96, bufferFrames: 960)
        let trigger = try #require(Self.cueOf(fixture.schedule, clip: "p1", word: 1))
        let engine = playback.engine
        playback.start(onEvent: { event in
            if case .cue(let cue, _, _) = event, cue == trigger { engine.pause() }
        })
        try VirtualPlayback.run(playback) { log in log.events.contains { if case .paused = $0 { true } else { false } } }
        playback.output.run(for: 200_000_000)
        engine.resume()
        playback.output.run(for: 3_000_000)
        // The same level: only the take-back is tested (the mixer stays on its exact path).
        engine.gains.set(.sfx, gain: 1)
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)
        #expect(playback.log.cues.map(\.cue) == fixture.schedule.cues)
        let resumes = playback.log.events.compactMap { if case .resumed(let frame, let at) = $0 { (frame, at) } else { nil } }
        try #require(resumes.count == 1)
        let (frame, heard) = resumes[0]
        let output = playback.output.samples
        let reference = fixture.reference
        let resumeDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: heard))
        let f = Self.fade
        let fadeIn = Self.compare(output, at: resumeDevice, reference, from: frame, count: f) { Double($0 + 1) / Double(f) }
        #expect(fadeIn == nil, "fade-in: \(fadeIn ?? "")")
        #expect(Self.compare(output, at: resumeDevice + f, reference, from: frame + f, count: reference.count / 2 - frame - f) == nil)
    }

    /// A gain taken back in the middle of its ramp: a second request 4 ms after a master gain
    /// change (the same sfx level: nothing to hear) makes the output take back what it holds,
    /// into the 10 ms ramp. The frames rendered again go on from the ramp's level at the frame
    /// rewound to, towards the targets of then: the output is sample for sample the one
    /// without the second request. (Before, the ramp went on from where the taken-back frames
    /// had left it: a step.) The ducking's envelope is put back the same way.
    @Test func aRewindDuringAGainRampTakesTheRampBackToo() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        func play(first: Bool, second: Bool) throws -> [Int16] {
            let playback = VirtualPlayback(fixture.schedule, periodFrames: 96, bufferFrames: 960)
            playback.start()
            playback.output.run(for: 700_000_000)
            if first { playback.engine.gains.set(.master, gain: 0.25) }
            playback.output.run(for: 4_000_000)
            if second { playback.engine.gains.set(.sfx, gain: 1) }
            try #require(playback.output.runToEnd(limit: 60_000_000_000))
            #expect(playback.log.outcome == .finished)
            return playback.output.samples
        }
        let plain = try play(first: false, second: false)
        let once = try play(first: true, second: false)
        let twice = try play(first: true, second: true)
        try #require(plain != once, "the gain change is not heard: the test proves nothing")
        #expect(once.count == twice.count)
        let first = zip(once, twice).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(first == nil, "the outputs part at frame \((first?.offset ?? 0) / 2): \(first.map { "\($0.element.0) vs \($0.element.1)" } ?? "")")
    }

    /// A pause longer than `releaseDeviceAfterPause` (2 s here): the output lets the device go
    /// (no render, no reports) until the resume, which takes it back; the clock settles again,
    /// and the rest of the render plays from the paused frame, faded in, with every cue once.
    @Test func aLongPauseLetsTheDeviceGo() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let playback = VirtualPlayback(fixture.schedule)
        let trigger = try #require(Self.cueOf(fixture.schedule, clip: "p1", word: 1))
        let engine = playback.engine
        engine.releaseDeviceAfterPause = .seconds(2)
        playback.start(onEvent: { event in
            if case .cue(let cue, _, _) = event, cue == trigger { engine.pause() }
        })
        try VirtualPlayback.run(playback) { log in log.events.contains { if case .paused = $0 { true } else { false } } }
        playback.output.run(for: 1_500_000_000)
        #expect(playback.output.standbys.isEmpty, "let go after 1.5 s of a 2 s setting")
        playback.output.run(for: 3_000_000_000)
        let cues = playback.log.cues.count
        try #require(playback.output.standbys.count == 1 && playback.output.standbys[0].to == nil, "\(playback.output.standbys)")
        let rendersBefore = playback.output.renders.count
        playback.output.run(for: 5_000_000_000)
        #expect(playback.output.renders.count == rendersBefore, "nothing rendered in standby")
        #expect(playback.log.cues.count == cues && playback.log.outcome == nil, "nothing delivered, nothing ended")
        engine.resume()
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)
        #expect(playback.output.standbys.count == 1 && playback.output.standbys[0].to != nil)
        #expect(playback.log.cues.map(\.cue) == fixture.schedule.cues, "every cue once, in order")
        let events = playback.log.events
        guard case .paused(let frame, let pauseHeard)? = events.first(where: { if case .paused = $0 { true } else { false } }),
            case .resumed(let resumeFrame, let resumeHeard)? = events.first(where: { if case .resumed = $0 { true } else { false } })
        else {
            Issue.record("no pause and resume")
            return
        }
        #expect(resumeFrame == frame)
        let standby = playback.output.standbys[0]
        let released = Double(standby.from - pauseHeard) / 1e9
        #expect(released >= 2 && released <= 2.05, "let go \(released) s after the pause was heard")
        let output = playback.output.samples
        let reference = fixture.reference
        let total = reference.count / 2
        // Taking the device back is an interruption: for a second the clock is read 2 ms late
        // (never early; see OutputFeed.recoveryMargin), so are the stamps.
        let margin: Int64 = 2_000_000
        let resumeDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: resumeHeard - margin))
        let f = Self.fade
        let fadeIn = Self.compare(output, at: resumeDevice, reference, from: frame, count: f) { Double($0 + 1) / Double(f) }
        #expect(fadeIn == nil, "fade-in: \(fadeIn ?? "")")
        #expect(Self.compare(output, at: resumeDevice + f, reference, from: frame + f, count: total - frame - f) == nil)
        for (cue, heard, delivered) in playback.log.cues where cue.frame >= frame {
            let when = try #require(playback.output.heardTime(ofFrame: resumeDevice + cue.frame - frame))
            let late = heard < resumeHeard + 1_000_000_000 ? margin : 0
            #expect(abs(heard - when - late) <= 1_000 && delivered >= when && delivered <= when + late + 1_000_000, "\(cue.type) at \(cue.frame)")
        }
    }

    /// Seek back to the first word of the sentence while the third is heard: the audio goes on
    /// from exactly that frame (5 ms out, 5 ms in), and so do the cues, which come again from
    /// there.
    @Test func seekBackReplaysFromTheFrame() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let playback = VirtualPlayback(fixture.schedule)
        let trigger = try #require(Self.cueOf(fixture.schedule, clip: "p1", word: 2))
        let target = try #require(Self.cueOf(fixture.schedule, clip: "p1", word: 0)).frame
        let engine = playback.engine
        let seeks = Atomic<Int>(0)
        playback.start(onEvent: { event in
            if case .cue(let cue, _, _) = event, cue == trigger, seeks.add(1, ordering: .relaxed).newValue == 1 {
                #expect(engine.seek(to: target))
            }
        })
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)
        let seeked = playback.log.events.compactMap { if case .seeked(let from, let to, let at) = $0 { (from, to, at) } else { nil } }
        try #require(seeked.count == 1)
        let (from, to, heard) = seeked[0]
        #expect(to == target && from > trigger.frame)
        // The cues: up to the frame left, then from the target again to the end.
        let expected = fixture.schedule.cues.filter { $0.frame < from } + fixture.schedule.cues.filter { $0.frame >= target }
        #expect(playback.log.cues.map(\.cue) == expected)

        let output = playback.output.samples
        let reference = fixture.reference
        let total = reference.count / 2
        let d0 = try #require(output.indices.first { output[$0] != 0 }) / 2
        let seekDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: heard))
        #expect(seekDevice == d0 + from)
        let f = Self.fade
        #expect(Self.compare(output, at: d0, reference, from: 0, count: from - f) == nil)
        let fadeOut = Self.compare(output, at: d0 + from - f, reference, from: from - f, count: f) { Double(f - 1 - $0) / Double(f) }
        #expect(fadeOut == nil, "fade-out: \(fadeOut ?? "")")
        let fadeIn = Self.compare(output, at: seekDevice, reference, from: target, count: f) { Double($0 + 1) / Double(f) }
        #expect(fadeIn == nil, "fade-in: \(fadeIn ?? "")")
        #expect(Self.compare(output, at: seekDevice + f, reference, from: target + f, count: total - target - f) == nil)
        for (cue, heard, delivered) in playback.log.cues.suffix(fixture.schedule.cues.count { $0.frame >= target }) {
            let when = try #require(playback.output.heardTime(ofFrame: seekDevice + cue.frame - target))
            #expect(abs(heard - when) <= 1_000 && delivered >= when && delivered <= when + 1_000_000, "\(cue.type) at \(cue.frame)")
        }
    }

    /// A seek past a held cue (an activity's idle prompt 50 ms ahead, the renderer waiting
    /// before it) does not wait for it: the frame jumped to follows the fade-out at once, with
    /// no underrun. The renderer used to keep holding until the held frame came close to
    /// being heard by the timeline of before the jump, which never came: what it had taken
    /// back was not written again, the device ran dry, and the seek was heard a clock settling
    /// later.
    @Test func aSeekPastAHeldCueDoesNotWaitForIt() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let trigger = try #require(Self.cueOf(fixture.schedule, clip: "p1", word: 0))
        let target = try #require(Self.cueOf(fixture.schedule, clip: "p1", word: 2)).frame
        let held = trigger.frame + 2400
        try #require(held < target)
        let base = fixture.schedule
        let schedule = Schedule(
            sampleRate: base.sampleRate, channels: base.channels, frames: base.frames, voices: base.voices,
            cues: Cue.ordered(base.cues + [Cue(frame: held, kind: .activity(type: .idlePrompt, fields: [:]))]))
        let playback = VirtualPlayback(schedule)
        playback.engine.holdBefore = [.idlePrompt]
        let engine = playback.engine
        let seeks = Atomic<Int>(0)
        playback.start(onEvent: { event in
            if case .cue(let cue, _, _) = event, cue == trigger, seeks.add(1, ordering: .relaxed).newValue == 1 {
                #expect(engine.seek(to: target))
            }
        })
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)
        #expect(playback.output.underruns == 0)
        #expect(!playback.log.events.contains { if case .underrun = $0 { true } else { false } })
        let seeked = playback.log.events.compactMap { if case .seeked(let from, let to, let at) = $0 { (from, to, at) } else { nil } }
        try #require(seeked.count == 1)
        let (from, to, heard) = seeked[0]
        #expect(to == target && from > trigger.frame && from < held)
        #expect(playback.log.cues.map(\.cue) == schedule.cues.filter { $0.frame < from } + schedule.cues.filter { $0.frame >= target })

        let output = playback.output.samples
        let reference = fixture.reference
        let total = reference.count / 2
        let d0 = try #require(output.indices.first { output[$0] != 0 }) / 2
        let seekDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: heard))
        #expect(seekDevice == d0 + from, "the seek is heard where the fade-out ends")
        let f = Self.fade
        #expect(Self.compare(output, at: d0, reference, from: 0, count: from - f) == nil)
        let fadeIn = Self.compare(output, at: seekDevice, reference, from: target, count: f) { Double($0 + 1) / Double(f) }
        #expect(fadeIn == nil, "fade-in: \(fadeIn ?? "")")
        #expect(Self.compare(output, at: seekDevice + f, reference, from: target + f, count: total - target - f) == nil)
    }

    /// Paused on a word, the child taps a later word: just that word's frames play (5 ms
    /// fades at both ends) with its cue, then playback waits again where it was paused, and
    /// resuming goes on from there with nothing lost.
    @Test func sayOneWordWhilePausedThenResume() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let playback = VirtualPlayback(fixture.schedule)
        let trigger = try #require(Self.cueOf(fixture.schedule, clip: "p1", word: 0))
        let said = try #require(Self.cueOf(fixture.schedule, clip: "p1", word: 2))
        let saidEnd = try #require({ if case .word(_, _, _, let end) = said.kind { end } else { nil } }() as Int?, "\(said) is not a word")
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
        // The jump to the word, which plays (a resume) with its cue, the jump back, and the
        // pause where it was.
        let summary = during.map { event -> String in
            switch event {
            case .seeked(let from, let to, _): "seeked \(from)->\(to)"
            case .cue(let cue, _, _): "\(cue.type)@\(cue.frame)"
            case .paused(let frame, _): "paused@\(frame)"
            case .resumed(let frame, _): "resumed@\(frame)"
            default: "other"
            }
        }
        #expect(summary == ["seeked \(pausedFrame)->\(said.frame)", "resumed@\(said.frame)", "word@\(said.frame)", "seeked \(saidEnd)->\(pausedFrame)", "paused@\(pausedFrame)"])
        let sayStart = try #require(during.compactMap { if case .seeked(_, _, let at) = $0 { at } else { nil } }.first)
        engine.resume()
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        #expect(playback.log.outcome == .finished)
        // The audio of the word on its own.
        let output = playback.output.samples
        let f = Self.fade
        let wordDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: sayStart))
        let length = saidEnd - said.frame
        #expect(Self.compare(output, at: wordDevice, fixture.reference, from: said.frame, count: f) { Double($0 + 1) / Double(f) } == nil)
        #expect(Self.compare(output, at: wordDevice + f, fixture.reference, from: said.frame + f, count: length - 2 * f) == nil)
        #expect(Self.compare(output, at: wordDevice + length - f, fixture.reference, from: saidEnd - f, count: f) { Double(f - 1 - $0) / Double(f) } == nil)
        #expect(output[((wordDevice + length) * 2)..<((wordDevice + length + 4800) * 2)].allSatisfy { $0 == 0 }, "silence after the word")
        // Every cue of the schedule once, plus the word said again.
        var expected = fixture.schedule.cues
        let resumeIndex = try #require(expected.firstIndex { $0.frame >= pausedFrame })
        expected.insert(said, at: resumeIndex)
        #expect(playback.log.cues.map(\.cue) == expected)
    }

    /// A control that comes before frame 0 is heard (a rewind then reaches back to where the
    /// timeline started) loses nothing: at every moment of the first 80 ms, a seek forward
    /// still gives one `start`, the `seeked`, the cues from the target, and a normal end.
    @Test func aSeekRightAfterTheStartKeepsTheStart() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let target = try #require(Self.cueOf(fixture.schedule, clip: "p1", word: 0)).frame
        for delay in stride(from: Int64(0), through: 80_000_000, by: 5_000_000) {
            let playback = VirtualPlayback(fixture.schedule)
            playback.start()
            playback.output.run(for: delay)
            #expect(playback.engine.seek(to: target))
            #expect(playback.output.runToEnd(limit: 60_000_000_000))
            #expect(playback.log.outcome == .finished, "seek after \(ms(delay))")
            let starts = playback.log.events.filter { if case .start = $0 { true } else { false } }
            #expect(starts.count == 1, "seek after \(ms(delay)): \(starts.count) starts")
            let seeks = playback.log.events.compactMap { if case .seeked(_, let to, _) = $0 { to } else { nil } }
            #expect(seeks == [target], "seek after \(ms(delay)): \(seeks)")
            #expect(playback.log.cues.map(\.cue).suffix(fixture.schedule.cues.count { $0.frame >= target }) == fixture.schedule.cues.filter { $0.frame >= target })
        }
    }

    /// A lesson with music under two sentences, and the same without the music: the ground
    /// truth of a muted music bus.
    struct MusicFixture {
        let dir = TempDir()
        let withMusic: Schedule
        let voiceOnly: Schedule
        let withMusicReference: [Int16]
        let voiceOnlyReference: [Int16]

        init() throws {
            let bed = dir.file("bed.wav")
            let made = try runTool("sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", bed, "synth", "8", "sine", "220", "vol", "0.3"])
            try #require(made.status == 0, "sox: \(made.stderr)")
            let clips = Repo.path("Audio/lessons")
            let path = dir.write(
                "music.json",
                """
                {"sampleRate": 48000, "channels": 2, "ducking": {"gain": -6},
                 "clips": {"p1": {"file": "\(clips)/sight-words/part1.wav", "timings": "\(Repo.path("Timings/lessons/sight-words/part1.json"))"},
                           "bed": {"file": "\(bed)", "bus": "music"}},
                 "chains": {"music": [{"music": "bed"}, {"clip": "p1"}, {"clip": "p1"}], "voice": [{"clip": "p1"}, {"clip": "p1"}]}}
                """)
            let lesson = try Lesson.load(path: path)
            let bank = try ClipBank.prepare(lesson: lesson, clipIDs: ["p1", "bed"], decoder: SndFileDecoder(streamAboveSeconds: nil))
            withMusic = try LiveFixture.schedule("music", bank: bank)
            voiceOnly = try LiveFixture.schedule("voice", bank: bank)
            withMusicReference = try LiveFixture.render(withMusic, in: dir, name: "music.wav")
            voiceOnlyReference = try LiveFixture.render(voiceOnly, in: dir, name: "voice.wav")
        }
    }

    /// Music that leads in alone for a second, then two sentences with 0.6 s between them, and
    /// a tail of music alone: every ducking state (full, going down, ducked, coming back up).
    struct DuckFixture {
        let dir = TempDir()
        let schedule: Schedule
        let reference: [Int16]

        init() throws {
            let bed = dir.file("bed.wav")
            let made = try runTool("sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", bed, "synth", "6", "sine", "220", "vol", "0.3"])
            try #require(made.status == 0, "sox: \(made.stderr)")
            let clips = Repo.path("Audio/lessons")
            let path = dir.write(
                "duck.json",
                """
                {"sampleRate": 48000, "channels": 2, "ducking": {"gain": -12},
                 "clips": {"p1": {"file": "\(clips)/sight-words/part1.wav", "timings": "\(Repo.path("Timings/lessons/sight-words/part1.json"))"},
                           "bed": {"file": "\(bed)", "bus": "music"}},
                 "chains": {"c": [{"music": "bed"}, {"silence": 1}, {"clip": "p1"}, {"silence": 0.6}, {"clip": "p1"}, {"silence": 1.5}]}}
                """)
            let lesson = try Lesson.load(path: path)
            let bank = try ClipBank.prepare(lesson: lesson, clipIDs: ["p1", "bed"], decoder: SndFileDecoder(streamAboveSeconds: nil))
            schedule = try LiveFixture.schedule("c", bank: bank)
            reference = try LiveFixture.render(schedule, in: dir, name: "duck.wav")
        }
    }

    /// After a jump the mixer stands where the render does, its music's ducking included: a
    /// mixer that played elsewhere first (ducked, or not), then seeks to a frame, renders
    /// exactly the floats of a mixer that rendered from frame 0, at frames in the lead-in,
    /// under the voice, in the duck's attack and in its release. (It used to keep the level it
    /// had before the jump.)
    @Test func aSeekLandsOnTheRendersDucking() throws {
        let fixture = try DuckFixture()
        defer { fixture.dir.remove() }
        let schedule = fixture.schedule
        let block = 4800
        func render(_ mixer: Mixer, frames: Int) -> [Float] {
            var out = [Float](repeating: 0, count: frames * 2)
            var done = 0
            while done < frames {
                let count = min(block, frames - done)
                out.withUnsafeMutableBufferPointer { buffer in
                    mixer.render(into: UnsafeMutableBufferPointer(rebasing: buffer[(done * 2)...]), frameCount: count)
                }
                done += count
            }
            return out
        }
        let whole = render(Mixer(schedule: schedule, maxBlockFrames: block), frames: schedule.frames)
        let voices = schedule.voices.filter { $0.bus == .voice }
        try #require(voices.count == 2 && voices[0].startFrame >= 48000)
        let targets = [
            0, 24000, voices[0].startFrame - 1, voices[0].startFrame + 1200, voices[0].startFrame + 30000, voices[0].endFrame - 10,
            voices[0].endFrame + 2400, voices[1].startFrame + 100, voices[1].endFrame + 9000, schedule.frames - 9600,
        ]
        let length = 9600
        for target in targets {
            for before in [voices[0].startFrame + 20000, 1000, voices[1].endFrame + 30000] where before != target {
                let mixer = Mixer(schedule: schedule, maxBlockFrames: block)
                mixer.seek(to: before)
                _ = render(mixer, frames: 14400)
                mixer.seek(to: target)
                let got = render(mixer, frames: min(length, schedule.frames - target))
                let want = Array(whole[(target * 2)..<((target + got.count / 2) * 2)])
                let first = zip(got, want).enumerated().first { $0.element.0 != $0.element.1 }
                #expect(first == nil, "seek \(before) → \(target): sample \(first?.offset ?? -1) is \(first?.element.0 ?? 0), the render's \(first?.element.1 ?? 0)")
            }
        }
    }

    /// The same through the engine: seeking back to a word of the first sentence while the
    /// second plays, and to the music-only lead-in, the output after the fade-in is the
    /// render from the frame sought, the music at the render's ducked (or full) level.
    @Test(arguments: [0, 1])
    func aSeekWhileTheVoicePlaysLandsOnTheRendersDucking(targetWord: Int) throws {
        let fixture = try DuckFixture()
        defer { fixture.dir.remove() }
        let schedule = fixture.schedule
        let first = try #require(Self.cueOf(schedule, clip: "p1", word: 1))
        let trigger = try #require(Self.cueOf(schedule, clip: "p1", word: 2, after: first.frame + 48000))
        // Word 1 of the first sentence (ducked), or half a second into the lead-in (full level).
        let target = targetWord == 1 ? first.frame : 24000
        let playback = VirtualPlayback(schedule)
        let engine = playback.engine
        let seeks = Atomic<Int>(0)
        playback.start(onEvent: { event in
            if case .cue(let cue, _, _) = event, cue == trigger, seeks.add(1, ordering: .relaxed).newValue == 1 {
                #expect(engine.seek(to: target))
            }
        })
        #expect(playback.output.runToEnd(limit: 60_000_000_000))
        let seeked = playback.log.events.compactMap { if case .seeked(_, let to, let at) = $0 { (to, at) } else { nil } }
        try #require(seeked.count == 1 && seeked[0].0 == target)
        let seekDevice = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: seeked[0].1))
        let f = Self.fade
        let count = min(48000, schedule.frames - target - f)
        let mismatch = Self.compare(playback.output.samples, at: seekDevice + f, fixture.reference, from: target + f, count: count)
        #expect(mismatch == nil, "after the seek to \(target): \(mismatch ?? "")")
    }

    /// Music muted before the start: the output is the render without the music, exactly.
    @Test func mutedMusicFromTheStart() throws {
        let fixture = try MusicFixture()
        defer { fixture.dir.remove() }
        try #require(fixture.withMusic.frames == fixture.voiceOnly.frames)
        let playback = VirtualPlayback(fixture.withMusic)
        playback.engine.gains.set(.music, muted: true)
        #expect(try playback.play() == .finished)
        #expect(playback.log.cues.map(\.cue) == fixture.withMusic.cues)
        // From frame 0's device frame (the voice starts in silence: located by the clock).
        guard case .start(let info) = try #require(playback.log.events.first) else { Issue.record("no start"); return }
        let d0 = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: info.firstFrameHeardTime))
        let output = playback.output.samples
        #expect(output[..<(d0 * 2)].allSatisfy { $0 == 0 })
        let frames = fixture.voiceOnlyReference.count / 2
        try #require(output.count >= (d0 + frames) * 2)
        #expect(Self.compare(output, at: d0, fixture.voiceOnlyReference, from: 0, count: frames) == nil)
        #expect(Self.compare(output, at: d0, fixture.withMusicReference, from: 0, count: frames) != nil, "the music is heard in the render")
    }

    /// Music muted on a word: heard within a period and the rewind margin (a period) of the request,
    /// ramped down over 10 ms (never a step larger than the ramp's), then exactly the render
    /// without music to the end; the cues are unchanged.
    @Test func mutingMusicLandsWithinAPeriodRamped() throws {
        let fixture = try MusicFixture()
        defer { fixture.dir.remove() }
        let playback = VirtualPlayback(fixture.withMusic)
        let trigger = try #require(Self.cueOf(fixture.withMusic, clip: "p1", word: 1))
        let requested = Mutex<Int64?>(nil)
        let gains = playback.engine.gains
        let clock = playback.clock
        #expect(
            try playback.play(onEvent: { event in
                if case .cue(let cue, _, _) = event, cue == trigger {
                    requested.withLock { $0 = clock.now() }
                    gains.set(.music, muted: true)
                }
            }) == .finished)
        #expect(playback.log.cues.map(\.cue) == fixture.withMusic.cues)
        let output = playback.output.samples
        let a = fixture.withMusicReference
        let b = fixture.voiceOnlyReference
        let total = a.count / 2
        guard case .start(let info) = try #require(playback.log.events.first) else { Issue.record("no start"); return }
        let d0 = try #require(VirtualPlayback.deviceFrame(playback.output, heardAt: info.firstFrameHeardTime))
        // Where the output leaves the render with music.
        let change = try #require((0..<total).first { k in output[(d0 + k) * 2] != a[k * 2] || output[(d0 + k) * 2 + 1] != a[k * 2 + 1] })
        let request = try #require(requested.withLock { $0 })
        let changeHeard = try #require(playback.output.heardTime(ofFrame: d0 + change))
        #expect(changeHeard - request <= 21_000_000, "heard \(ms(changeHeard - request)) after the request")
        print("music mute: heard \(ms(changeHeard - request)) after the request")
        let ramp = 480
        #expect(Self.compare(output, at: d0 + change + ramp, b, from: change + ramp, count: total - change - ramp) == nil)
        // During the ramp the music's share shrinks steadily: the output's distance from the
        // voice-only render falls by 1/480 of the music a frame.
        for k in 0..<ramp {
            for c in 0..<2 {
                let i = (change + k) * 2 + c
                let music = Double(a[i]) - Double(b[i])
                let left = Double(output[(d0 + change + k) * 2 + c]) - Double(b[i])
                let share = Double(ramp - 1 - k) / Double(ramp)
                // Three roundings to 16 bits (the output, and both renders that estimate the
                // voice and the music): up to 2 steps, plus a frame's step of the ramp.
                #expect(abs(left - music * share) <= abs(music) / Double(ramp) + 2.01, "ramp frame \(k): \(left) of \(music)")
            }
        }
    }
}
