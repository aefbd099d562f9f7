import Foundation
import NarratorTestSupport
import Testing

/// Lessons with a hundred thousand of something load and schedule in linear time: the cue
/// sheet is complete and correct, well within a bound a quadratic step could not meet (10^10
/// operations). The full-size figures (10^6, release build) come from
/// scripts/bench-lesson-scale.sh.
@Suite struct LessonScaleTests {
    static let n = 100_000

    /// A 10 ms click at 48 kHz (480 frames), written by hand.
    static func tick() -> Data {
        WAVFile.pcm16((0..<480).map { $0 < 48 ? 8000 : 0 }, rate: 48000)
    }

    func cues(_ lesson: String, _ arguments: [String], in dir: TempDir) throws -> (ProcessResult, Double) {
        let path = dir.write("lesson.json", lesson)
        let start = Date()
        let result = try run(Repo.narrator, ["cues", path] + arguments)
        return (result, Date().timeIntervalSince(start))
    }

    @Test func chainOfAHundredThousandClips() throws {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("tick.wav", data: Self.tick())
        let items = Array(repeating: #"{"clip": "t"}"#, count: Self.n).joined(separator: ",\n")
        let (result, seconds) = try cues(
            #"{"sampleRate": 48000, "clips": {"t": {"file": "tick.wav"}}, "chains": {"c": [\#(items)], "big": [\#(items)]}}"#,
            ["--chain", "c", "--seed", "1"], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2 * Self.n + 1 + 2, "clipStart and clipEnd per item, chainEnd, the sheet's first and last lines")
        #expect(lines.last == "]}" && lines[lines.count - 2] == #"  {"chain":"c","frame":\#(480 * Self.n),"type":"chainEnd"}"#)
        #expect(lines[1] == #"  {"clip":"t","frame":0,"type":"clipStart"},"#)
        #expect(seconds < 60, "\(seconds) s")
    }

    @Test func poolOfAHundredThousandClipsNeverRepeating() throws {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("tick.wav", data: Self.tick())
        let clips = (0..<Self.n).map { #""t\#($0)": {"file": "tick.wav"}"# }.joined(separator: ",")
        let members = (0..<Self.n).map { #""t\#($0)""# }.joined(separator: ",")
        let draws = Array(repeating: #"{"pool": "p"}"#, count: Self.n).joined(separator: ",")
        let (result, seconds) = try cues(
            #"{"sampleRate": 48000, "clips": {\#(clips)}, "pools": {"p": {"clips": [\#(members)], "noRepeat": \#(Self.n - 1)}}, "chains": {"c": [\#(draws)]}}"#,
            ["--chain", "c", "--seed", "3"], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        // noRepeat n-1 over n draws: every clip exactly once.
        let picked = result.stdout.split(separator: "\n").filter { $0.contains("\"clipStart\"") }
            .map { $0.split(separator: "\"")[3] }
        #expect(picked.count == Self.n)
        #expect(Set(picked).count == Self.n)
        #expect(seconds < 60, "\(seconds) s")
    }

    @Test func pulseOfAHundredThousandTargets() throws {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("tick.wav", data: Self.tick())
        let targets = (0..<Self.n).map { #""g\#($0)""# }.joined(separator: ",")
        let (result, seconds) = try cues(
            #"{"sampleRate": 48000, "clips": {"t": {"file": "tick.wav"}}, "chains": {"c": [{"pulse": [\#(targets)]}, {"clip": "t"}]}}"#,
            ["--chain", "c"], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        let pulses = result.stdout.split(separator: "\n").filter { $0.contains("\"pulse\"") }
        #expect(pulses.count == Self.n)
        #expect(pulses.first == #"  {"frame":0,"target":"g0","type":"pulse"},"#)
        #expect(seconds < 60, "\(seconds) s")
    }

    @Test func activityOfAHundredThousandSteps() throws {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("tick.wav", data: Self.tick())
        let steps = (0..<Self.n).map { #"{"answer": "a\#($0)", "correct": "c", "wrong": ["c"]}"# }.joined(separator: ",")
        let (result, seconds) = try cues(
            #"{"sampleRate": 48000, "clips": {"t": {"file": "tick.wav"}}, "chains": {"c": [{"clip": "t"}]}, "activities": {"a": {"intro": "c", "steps": [\#(steps)]}}}"#,
            ["--activity", "a", "--taps", "0.5:a0,1:a1,1.5:wrong"], in: dir)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains(#""answer":"a2""#), "the third step starts after two right answers")
        #expect(seconds < 60, "\(seconds) s")
    }

    @Test func aMillionOpenBracketsAreRefusedAtOnce() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (result, seconds) = try cues(String(repeating: "[", count: 1_000_000), ["--chain", "c"], in: dir)
        #expect(result.status == 1)
        #expect(result.stderr.hasSuffix("lesson.json: line 1, column 513: not valid JSON: nested deeper than 512 levels\n"), "\(result.stderr)")
        #expect(seconds < 30)
    }

    /// Past the documented caps (100,000 clips in a lesson, 100,000 steps in an activity): one
    /// line naming the key, at once.
    @Test func overTheCapsIsOneLineNamingTheKey() throws {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("tick.wav", data: Self.tick())
        let over = Self.n + 1
        let clips = (0..<over).map { #""c\#($0)": {"file": "tick.wav"}"# }.joined(separator: ",")
        let (tooManyClips, _) = try cues(
            #"{"sampleRate": 48000, "clips": {\#(clips)}, "chains": {"c": [{"clip": "c0"}]}}"#, ["--chain", "c"], in: dir)
        #expect(tooManyClips.status == 1)
        #expect(tooManyClips.stderr.hasSuffix("lesson.json: clips: 100001 clips, over the 100000 a lesson may define\n"), "\(tooManyClips.stderr)")
        let steps = Array(repeating: #"{"answer": "a", "correct": "c", "wrong": ["c"]}"#, count: over).joined(separator: ",")
        let (tooManySteps, _) = try cues(
            #"{"sampleRate": 48000, "clips": {"t": {"file": "tick.wav"}}, "chains": {"c": [{"clip": "t"}]}, "activities": {"a": {"steps": [\#(steps)]}}}"#,
            ["--activity", "a"], in: dir)
        #expect(tooManySteps.status == 1)
        #expect(tooManySteps.stderr.hasSuffix("lesson.json: activities.a.steps: 100001 steps, over the 100000 an activity may have\n"), "\(tooManySteps.stderr)")
        #expect(tooManySteps.stderr.split(separator: "\n").count == 1)
    }
}
