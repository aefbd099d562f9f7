import Foundation
import NarratorCore
import NarratorKit
import NarratorTestSupport
import Synchronization
import Testing

/// The Swift API's controls, on a virtual output the test advances: pause and resume from the
/// word's start, seek to a word, say a word, gains; positions that are not in what plays are
/// refused. Frames come from the cue sheet of `narrator cues` (the CLI), not from the API.
@Suite("Swift API controls")
struct ControlsAPITests {
    static let lessonPath = Repo.path("Timings/lessons/sample.json")

    /// The sample chain's cues as the CLI writes them: (type, frame, clip, index).
    static func sheet() throws -> [(type: String, frame: Int, clip: String?, index: Int?)] {
        let result = try NarratorTestSupport.run(Repo.narrator, ["cues", lessonPath, "--chain", "correct", "--seed", "7"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        return try #require(object["cues"] as? [[String: Any]]).map {
            ($0["type"] as? String ?? "", $0["frame"] as? Int ?? -1, $0["clip"] as? String, $0["index"] as? Int)
        }
    }

    final class Log: @unchecked Sendable {
        // @unchecked: written on the cue thread while the test thread is parked in the clock.
        var events: [PlaybackEvent] = []
        func count(_ match: (PlaybackEvent) -> Bool) -> Int { events.filter(match).count }
    }

    static func start() throws -> (Playback, VirtualOutput, Log) {
        let prepared = try NarratorLesson(path: lessonPath).prepare(.chain("correct"), seed: 7)
        let output = VirtualOutput(clock: VirtualClock(), sampleRate: 48000, channels: 2, periodFrames: 480, bufferFrames: 1920)
        let log = Log()
        let playback = prepared.play(on: output, clock: output.clock, onEvents: { log.events += $0 })
        return (playback, output, log)
    }

    static func run(_ output: VirtualOutput, _ log: Log, until done: (Log) -> Bool) throws {
        let end = output.clock.now() + 30_000_000_000
        while !done(log) {
            try #require(output.clock.now() < end, "waited 30 s of virtual time")
            output.run(for: 5_000_000)
        }
    }

    @Test func pauseResumeFromTheWordsStartAndSeekToAWord() throws {
        let sheet = try Self.sheet()
        let can = try #require(sheet.first { $0.type == "word" && $0.clip == "p1" && $0.index == 1 })
        let red = try #require(sheet.first { $0.type == "word" && $0.clip == "p2" && $0.index == 2 })
        let (playback, output, log) = try Self.start()
        // Pause while "can" is heard (half-way through it), resume from its start.
        try Self.run(output, log) { log in log.events.contains { if case .cue(let cue, _, _) = $0 { cue.frame == can.frame } else { false } } }
        output.run(for: 150_000_000)
        playback.pause()
        #expect(playback.isPaused)
        try Self.run(output, log) { $0.count { if case .paused = $0 { true } else { false } } == 1 }
        playback.resume(from: .wordStart)
        try Self.run(output, log) { $0.count { if case .resumed = $0 { true } else { false } } == 1 }
        // Then jump to "red".
        try playback.seek(to: .word(clip: "p2", index: 2))
        #expect(output.runToEnd(limit: 60_000_000_000))
        #expect(playback.waitUntilFinished() == .finished)

        let seeks = log.events.compactMap { if case .seeked(let from, let to, _) = $0 { [from, to] } else { nil } }
        #expect(seeks.count == 2 && seeks.first?.last == can.frame && seeks.last?.last == red.frame, "\(seeks)")
        let resumed = log.events.compactMap { if case .resumed(let frame, _) = $0 { frame } else { nil } }
        #expect(resumed == [can.frame])
        // "can" heard twice (before the pause, and again from its start), "red" after the seek.
        let words = log.events.compactMap { event -> String? in
            if case .cue(let cue, _, _) = event, case .word(_, _, let text, _) = cue.kind { text } else { nil }
        }
        #expect(words.first == "I" && words.filter { $0 == "can" }.count == 2 && words.suffix(2) == ["red", "hat"], "\(words)")
    }

    /// An activity's idle wait is on the timeline: sought back into its prompt two seconds into
    /// the wait, the prompt plays again and the idle prompt comes a whole wait (4 s, 192000
    /// frames, the cue sheet's) after the replayed prompt ends, not early; then an answer is
    /// still taken as the step's.
    @Test func aSeekBackIntoAPromptRearmsTheIdleWaitFromItsEnd() throws {
        let lesson = try NarratorLesson(path: Repo.path("Timings/lessons/homer-sight-words.json"))
        let prepared = try lesson.prepare(.activity("sight-words"), seed: 7)
        let output = VirtualOutput(clock: VirtualClock(), sampleRate: 48000, channels: 2, periodFrames: 480, bufferFrames: 1920)
        let log = Log()
        let playback = prepared.play(on: output, clock: output.clock, onEvents: { log.events += $0 })
        func cues(_ type: String) -> [(frame: Int, heard: Int64)] {
            log.events.compactMap { if case .cue(let cue, let heard, _) = $0, cue.type == type { (cue.frame, heard) } else { nil } }
        }
        try Self.run(output, log) { _ in !cues("chainEnd").isEmpty }
        output.run(for: 2_000_000_000)
        #expect(cues("idlePrompt").isEmpty)
        try playback.seek(to: .clip("p1"))
        try Self.run(output, log) { _ in !cues("idlePrompt").isEmpty }
        let ends = cues("chainEnd")
        try #require(ends.count == 2, "the prompt's end heard twice: \(ends)")
        let idle = try #require(cues("idlePrompt").first)
        #expect(idle.frame == 313_255, "the idle prompt at its frame in the cue sheet")
        #expect(idle.heard - ends[1].heard == 4_000_000_000, "a whole wait after the replayed prompt: \(Double(idle.heard - ends[1].heard) / 1e9) s")
        let seeks = log.events.compactMap { if case .seeked(_, let to, _) = $0 { to } else { nil } }
        #expect(seeks == [61_256])
        playback.tap("see")
        try Self.run(output, log) { _ in !cues("tap").isEmpty }
        playback.close()
        #expect(output.runToEnd(limit: 60_000_000_000))
        #expect(playback.waitUntilFinished() == .finished)
        let taps = log.events.compactMap { event -> String? in
            if case .cue(let cue, _, _) = event, case .activity(.tap, let fields) = cue.kind, case .string(let result)? = fields["result"] {
                result
            } else {
                nil
            }
        }
        #expect(taps.first == "correct", "\(taps)")
    }

    /// A tap that changes no audio (an answer during the picture dictionary's intro, ignored)
    /// still has its `tap` event, when it is heard: the new plan differs from the old only by
    /// that cue, and it takes over there, not at the plan's end (where the event was never
    /// delivered, and the daemon's touch log never saw the tap).
    @Test func anIgnoredTapIsHeardLive() throws {
        let prepared = try NarratorLesson(path: Repo.path("Timings/lessons/picture-dictionary.json")).prepare(.activity("word-popup"), seed: 0)
        let output = VirtualOutput(clock: VirtualClock(), sampleRate: 48000, channels: 2, periodFrames: 480, bufferFrames: 1920)
        let log = Log()
        let playback = prepared.play(on: output, clock: output.clock, onEvents: { log.events += $0 })
        func taps() -> [(frame: Int, result: String?)] {
            log.events.compactMap { event in
                guard case .cue(let cue, _, _) = event, case .activity(.tap, let fields) = cue.kind else { return nil }
                return (cue.frame, { if case .string(let result)? = fields["result"] { result } else { nil } }())
            }
        }
        output.run(for: 1_000_000_000)
        let heard = playback.heardFrame
        #expect(playback.tap("banana") == .taken)
        try Self.run(output, log) { _ in !taps().isEmpty }
        let tap = try #require(taps().first)
        #expect(tap.result == "ignored")
        // Heard within a few periods of the tap, well before the intro's end (192330).
        #expect(tap.frame >= heard && tap.frame < heard + 9600, "\(tap.frame), tapped at \(heard)")
        playback.close()
        #expect(output.runToEnd(limit: 60_000_000_000))
        #expect(playback.waitUntilFinished() == .finished)
    }

    /// Taps are bounded: a chain takes none, and an activity keeps at most
    /// `Playback.maxWaitingTaps` not yet heard; once one is heard, another is taken.
    @Test func tapsAreTakenWithinBounds() throws {
        let (chain, chainOutput, _) = try Self.start()
        #expect(!chain.takesTaps)
        #expect(chain.tap("see") == .notAnActivity && chain.replay() == .notAnActivity)
        chain.stop()
        _ = chainOutput.runToEnd(limit: 10_000_000_000)

        let lesson = try NarratorLesson(path: Repo.path("Timings/lessons/homer-sight-words.json"))
        let prepared = try lesson.prepare(.activity("sight-words"), seed: 7)
        let output = VirtualOutput(clock: VirtualClock(), sampleRate: 48000, channels: 2, periodFrames: 480, bufferFrames: 1920)
        let log = Log()
        let playback = prepared.play(on: output, clock: output.clock, onEvents: { log.events += $0 })
        #expect(playback.takesTaps)
        // Nothing is heard yet (the virtual clock stands): every tap waits.
        let outcomes = (0...Playback.maxWaitingTaps).map { _ in playback.tap("zebra") }
        #expect(outcomes.prefix(Playback.maxWaitingTaps).allSatisfy { $0 == .taken }, "\(outcomes)")
        #expect(outcomes.last == .tooManyWaiting)
        // Once the first is heard (its cue), there is room for one more.
        try Self.run(output, log) { log in log.events.contains { if case .cue(let cue, _, _) = $0 { cue.type == "tap" } else { false } } }
        #expect(playback.tap("see") == .taken)
        playback.stop()
        _ = output.runToEnd(limit: 10_000_000_000)
    }

    /// A gain set on a playback is heard, not just stored: with the master at 0.5 every sample
    /// after the first ramp is half the one played without it (within 1 LSB of rounding), and a
    /// gain of 99 is heard as `MixGains.maximum`, clipped where that overflows.
    @Test func aGainSetIsHeard() throws {
        func played(_ target: MixGains.Target?, _ gain: Float) throws -> [Int16] {
            let (playback, output, _) = try Self.start()
            if let target { playback.gains.set(target, gain: gain) }
            #expect(output.runToEnd(limit: 60_000_000_000))
            #expect(playback.waitUntilFinished() == .finished)
            return output.samples
        }
        let plain = try played(nil, 1)
        let ramp = 2 * 4_800  // 50 ms of stereo samples: past the gain's ramp from 1
        #expect(plain.count > ramp && plain.dropFirst(ramp).contains { abs(Int($0)) > 4_000 }, "something loud to scale")
        for (gain, target) in [(Float(0.5), MixGains.Target.master), (99, .master)] {
            let scaled = try played(target, gain)
            #expect(scaled.count == plain.count)
            let heard = min(gain, MixGains.maximum)
            let off = zip(plain, scaled).dropFirst(ramp).filter { p, s in
                abs(Float(s) - max(-32768, min(32767, Float(p) * heard))) > 1.5
            }
            #expect(off.isEmpty, "gain \(gain): \(off.count) samples not at \(heard)×, first \(off.prefix(3))")
        }
    }

    @Test func sayAWordThenGoOnAndGains() throws {
        let sheet = try Self.sheet()
        let hat = try #require(sheet.first { $0.type == "word" && $0.clip == "p2" && $0.index == 3 })
        let (playback, output, log) = try Self.start()
        try Self.run(output, log) { $0.events.contains { if case .cue(let cue, _, _) = $0 { cue.type == "word" } else { false } } }
        try playback.say(clip: "p2", word: 3, then: .resumeWhereItWas)
        #expect(output.runToEnd(limit: 60_000_000_000))
        #expect(playback.waitUntilFinished() == .finished)
        let words = log.events.compactMap { event -> String? in
            if case .cue(let cue, _, _) = event, case .word(_, _, let text, _) = cue.kind { text } else { nil }
        }
        // "hat" said on its own after "I", then the chain goes on from where it was.
        #expect(words == ["I", "hat", "can", "see", "the", "big", "red", "hat"], "\(words)")
        let seeks = log.events.compactMap { if case .seeked(_, let to, _) = $0 { to } else { nil } }
        #expect(seeks.first == hat.frame && seeks.count == 2)
        #expect(!log.events.contains { if case .paused = $0 { true } else { false } }, "it goes on without pausing")

        #expect(throws: NarratorError.self) { try playback.say(clip: "p2", word: 9) }
        #expect(throws: NarratorError.self) { try playback.seek(to: .clip("nope")) }
        #expect(throws: NarratorError.self) { try playback.seek(to: .frame(-1)) }
        #expect(throws: NarratorError.self) { try playback.seek(to: .frame(10_000_000)) }
    }

    /// Paused on "red", resumed from the start of its sentence ("the big red hat"); then a seek
    /// to the first clip's sentence. Sentence frames from the CLI's cue sheet.
    @Test func resumeFromTheSentenceAndSeekToASentence() throws {
        let sheet = try Self.sheet()
        let red = try #require(sheet.first { $0.type == "word" && $0.clip == "p2" && $0.index == 2 })
        let secondSentence = try #require(sheet.first { $0.type == "sentence" && $0.clip == "p2" })
        let firstSentence = try #require(sheet.first { $0.type == "sentence" && $0.clip == "p1" })
        let (playback, output, log) = try Self.start()
        try Self.run(output, log) { log in log.events.contains { if case .cue(let cue, _, _) = $0 { cue.frame == red.frame } else { false } } }
        playback.pause()
        try Self.run(output, log) { $0.count { if case .paused = $0 { true } else { false } } == 1 }
        playback.resume(from: .sentenceStart)
        try Self.run(output, log) { $0.count { if case .resumed = $0 { true } else { false } } == 1 }
        try playback.seek(to: .sentence(clip: "p1", index: 0))
        try Self.run(output, log) { $0.count { if case .seeked = $0 { true } else { false } } == 2 }
        playback.stop()
        #expect(output.runToEnd(limit: 10_000_000_000))
        let seeks = log.events.compactMap { if case .seeked(_, let to, _) = $0 { to } else { nil } }
        let resumed = log.events.compactMap { if case .resumed(let frame, _) = $0 { frame } else { nil } }
        #expect(resumed == [secondSentence.frame] && seeks == [secondSentence.frame, firstSentence.frame], "\(resumed) \(seeks)")
        #expect(throws: NarratorError.self) { try playback.seek(to: .sentence(clip: "p1", index: 1)) }
    }

    /// Paused, the reader taps one word and then another while the first is said: the second
    /// replaces the first (docs/controls.md, `PlaybackEngine.play(_:then:)`): the first is cut
    /// short where the second was asked, the second is said, and playback goes back once, to
    /// where it was paused, and waits there again.
    @Test func aSecondWordTappedWhileTheFirstIsSaidReplacesIt() throws {
        let result = try NarratorTestSupport.run(Repo.narrator, ["cues", Self.lessonPath, "--chain", "correct", "--seed", "7"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let words = try #require(object["cues"] as? [[String: Any]]).filter { $0["type"] as? String == "word" && $0["clip"] as? String == "p2" }
        let first = try #require(words.first { $0["index"] as? Int == 1 })
        let second = try #require(words.first { $0["index"] as? Int == 3 })
        let (firstFrame, firstEnd) = (try #require(first["frame"] as? Int), try #require(first["endFrame"] as? Int))
        let secondFrame = try #require(second["frame"] as? Int)
        let (playback, output, log) = try Self.start()
        try Self.run(output, log) { $0.events.contains { if case .cue(let cue, _, _) = $0 { cue.type == "word" } else { false } } }
        playback.pause()
        try Self.run(output, log) { $0.count { if case .paused = $0 { true } else { false } } == 1 }
        let pausedFrame = try #require(log.events.compactMap { if case .paused(let frame, _) = $0 { frame } else { nil } }.first)
        let before = log.events.count
        try playback.say(clip: "p2", word: 1)
        // The first word's cue: it is being said.
        try Self.run(output, log) { log in
            log.events[before...].contains { if case .cue(let cue, _, _) = $0 { cue.type == "word" && cue.frame == firstFrame } else { false } }
        }
        try playback.say(clip: "p2", word: 3)
        try Self.run(output, log) { $0.count { if case .paused = $0 { true } else { false } } == 2 }
        let after = Array(log.events[before...])
        let said = after.compactMap { if case .cue(let cue, _, _) = $0, cue.type == "word" { cue.frame } else { nil } }
        let seeks = after.compactMap { if case .seeked(let from, let to, _) = $0 { (from, to) } else { nil } }
        #expect(said == [firstFrame, secondFrame], "words said: \(said)")
        // To the first word, from it (cut short) to the second, and back to the pause: once.
        #expect(seeks.map(\.1) == [firstFrame, secondFrame, pausedFrame], "seeks: \(seeks)")
        if seeks.count == 3 {
            #expect(seeks[1].0 >= firstFrame && seeks[1].0 < firstEnd, "the first word was not cut short: left at \(seeks[1].0), it ends at \(firstEnd)")
        }
        let pauses = log.events.compactMap { if case .paused(let frame, _) = $0 { frame } else { nil } }
        #expect(pauses == [pausedFrame, pausedFrame], "\(pauses)")
        playback.stop()
        #expect(output.runToEnd(limit: 10_000_000_000))
    }
}
