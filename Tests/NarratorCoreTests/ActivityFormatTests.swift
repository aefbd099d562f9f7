import Foundation
import NarratorCore
import Testing

/// The activity format: defaults from the product documents, and one clear error per mistake,
/// naming the key.
@Suite("Activity format")
struct ActivityFormatTests {
    func parse(_ activities: String) throws(NarratorError) -> Lesson {
        let json = """
            {"sampleRate": 48000, "clips": {"a": {"file": "a.wav"}},
             "chains": {"p": [{"clip": "a"}], "c": [{"clip": "a"}], "w": [{"clip": "a"}]},
             "activities": \(activities)}
            """
        return try Lesson.parse(Data(json.utf8), path: "/l/lesson.json", directory: URL(fileURLWithPath: "/l"))
    }

    @Test func defaults() throws {
        let lesson = try parse(#"{"x": {"steps": [{"prompt": "p", "answer": "the", "idle": "p", "correct": "c", "wrong": ["w"]}]}}"#)
        let activity = try lesson.activity("x")
        #expect(activity.taps == .ignore)
        #expect(activity.steps[0].idleFrames == 192_000, "4.0 s at 48 kHz")
        #expect(activity.steps[0].idle?.chain == "p" && activity.steps[0].idle?.pulse == [])
        #expect(activity.chainIDs == ["p", "c", "w"])
        #expect(activity.polyphony == 2 && activity.intro.isEmpty && activity.sounds.isEmpty)
    }

    @Test func errorsNameTheKey() {
        let cases: [(String, String)] = [
            (#"{"x": {"steps": []}}"#, "activities.x: an activity plays something: give it an intro, steps or a final"),
            (#"{"x": {"intro": {}}}"#, "activities.x.intro: name a chain, or a chain per state"),
            (#"{"x": {"intro": 5}}"#, "activities.x.intro: expected a chain id, or an object of chains by state"),
            (#"{"x": {"steps": [{"answer": "a", "correct": "c", "wrong": ["w"], "idleSeconds": 0.000001}]}}"#, "activities.x.steps[0].idleSeconds: idle wait must be more than 0 (at least one frame, 1/48000 s) and at most 3600 seconds, got 1e-06 s"),
            (#"{"x": {"steps": [{"answer": "a", "correct": "c", "wrong": ["w"]}], "sounds": {"a": "p"}}}"#, "activities.x.sounds: 'a' is an answer: a sound needs another name"),
            (#"{"x": {"intro": "p", "sounds": {"close": "p"}}}"#, "activities.x.sounds: 'close' is an app request: a sound needs another name"),
            (#"{"x": {"intro": "p", "polyphony": 0}}"#, "activities.x.polyphony: expected a whole number in 1...16"),
            (#"{"x": {"steps": [{"answer": "a", "correct": "c", "wrong": []}]}}"#, "activities.x.steps[0].wrong: needs at least one feedback for a wrong answer"),
            (#"{"x": {"taps": "maybe", "steps": []}}"#, "activities.x.taps: expected \"ignore\" or \"interrupt\""),
            (#"{"x": {"steps": [{"answer": "a", "correct": "c", "wrong": ["w"], "idleSeconds": -1}]}}"#, "activities.x.steps[0].idleSeconds: idle wait must be more than 0 (at least one frame, 1/48000 s) and at most 3600 seconds, got -1 s"),
            (#"{"x": {"steps": [{"answer": "a", "corect": "c", "wrong": ["w"]}]}}"#, "activities.x.steps[0].corect: unknown key"),
            (#"{"x": {"steps": [{"answer": "a", "wrong": ["w"]}]}}"#, "activities.x.steps[0].correct: missing key"),
        ]
        for (json, expected) in cases {
            #expect(throws: NarratorError.self, "\(json)") { try parse(json) }
            do { _ = try parse(json) } catch { #expect(error.description.hasPrefix("/l/lesson.json: \(expected)"), "\(error.description)") }
        }
    }

    @Test func unknownChainIsNamedWhenTheActivityIsUsed() throws {
        let lesson = try parse(#"{"x": {"steps": [{"answer": "a", "correct": "nope", "wrong": ["w"]}]}}"#)
        #expect(throws: NarratorError.self) { try lesson.activity("x") }
        do { _ = try lesson.activity("x") } catch { #expect(error.description == "/l/lesson.json: activities.x.steps[0].correct: unknown chain 'nope' (the lesson has: c, p, w)") }
    }

    /// A lesson's top-level `"music"` parses with an activity's spec (frames at the lesson's
    /// rate) and makes its clip a music clip (its loudness bus); `bed(for:)` gives an
    /// activity's own bed first, else the lesson's, with its key; `beds` lists every bed by
    /// key; an unknown clip is named at `music.clip` only when the bed is asked for.
    @Test func aLessonsMusicIsABedForChainsAndActivitiesWithoutOne() throws {
        let json = """
            {"sampleRate": 48000, "music": {"clip": "b", "loop": {"start": 0.5, "end": 2}, "fadeIn": 0.25},
             "clips": {"a": {"file": "a.wav"}, "b": {"file": "b.wav"}},
             "chains": {"p": [{"clip": "a"}]},
             "activities": {"own": {"intro": "p", "music": "a"}, "none": {"intro": "p"}}}
            """
        let lesson = try Lesson.parse(Data(json.utf8), path: "/l/lesson.json", directory: URL(fileURLWithPath: "/l"))
        let music = try #require(lesson.music)
        #expect(music == Activity.Music(clip: "b", loop: .region(start: 24_000, end: 96_000), fadeInFrames: 12_000, fadeOutFrames: 24_000))
        #expect(lesson.loudnessBus(of: "b") == .music && lesson.loudnessBus(of: "a") == .music)
        #expect(try lesson.bed(for: nil)?.place == "music" && lesson.bed(for: nil)?.music.clip == "b")
        #expect(try lesson.bed(for: lesson.activity("none"))?.place == "music")
        #expect(try lesson.bed(for: lesson.activity("own"))?.place == "activities.own.music" && lesson.bed(for: lesson.activity("own"))?.music.clip == "a")
        #expect(lesson.beds.map(\.place) == ["music", "activities.own.music"])

        let unknown = try Lesson.parse(
            Data(json.replacingOccurrences(of: #""clip": "b""#, with: #""clip": "zz""#).utf8), path: "/l/lesson.json", directory: URL(fileURLWithPath: "/l"))
        do {
            _ = try unknown.bed(for: nil)
            Issue.record("an unknown clip is an error")
        } catch {
            #expect(error.description == "/l/lesson.json: music.clip: unknown clip 'zz' (the lesson has: a, b)")
        }
        #expect(throws: NarratorError.self) { try unknown.activity("none") }
        #expect(try unknown.activity("own").music?.clip == "a", "an activity with its own bed does not need the lesson's")
    }
}
