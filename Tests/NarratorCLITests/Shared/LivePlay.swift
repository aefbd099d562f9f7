import Foundation
import NarratorOutputs
import NarratorTestSupport
import Testing

/// What the suites that run `narrator play` on the private sound server share: the live
/// lesson and its render, the tone activity, `play`'s event lines, and how late each cue came
/// against the recording.
enum LivePlay {
    /// The sample lesson.
    static let sampleLesson = Repo.path("Timings/lessons/sample.json")
    static let chainArguments = ["--chain", "live", "--seed", "7", "--repeat", "2"]

    /// The sample lesson's clips, led by a tone that starts at its peak: the chain's first
    /// frame is not silence, so when it was heard is known to the frame (a cue inside digital
    /// silence can only be placed within the silence).
    static func liveLesson(_ dir: TempDir) throws -> String {
        let tone = dir.file("tone.wav")
        let made = try runTool("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "0.2", "sine", "440", "0", "25", "vol", "0.5"])
        try #require(made.status == 0, "\(made.stderr)")
        let audio = Repo.path("Audio/lessons")
        let timings = Repo.path("Timings/lessons")
        return dir.write(
            "live.json",
            """
            {"sampleRate": 48000, "channels": 2,
             "clips": {"tone": {"file": "\(tone)"}, "sfx": {"file": "\(audio)/sfx/correct.wav"},
                       "ga": {"file": "\(audio)/congrats/great-job.wav"}, "gb": {"file": "\(audio)/congrats/well-done.wav"},
                       "gc": {"file": "\(audio)/congrats/awesome.wav"},
                       "p1": {"file": "\(audio)/sight-words/part1.wav", "timings": "\(timings)/sight-words/part1.json"},
                       "p2": {"file": "\(audio)/sight-words/part2.wav", "timings": "\(timings)/sight-words/part2.json"}},
             "pools": {"congrats": {"clips": ["ga", "gb", "gc"], "noRepeat": 2}},
             "chains": {"live": [{"clip": "tone"}, {"clip": "sfx"}, {"pool": "congrats"}, {"pulse": ["ticket-1"]},
                                 {"clip": "p1"}, {"silence": 0.25}, {"clip": "p2"}, {"pulse": ["checkbox"]}]}}
            """)
    }
    /// The outputs whose cue timing is measured. On PipeWire's pulse server (0.3.65) only
    /// `pulse`: ALSA's pulse plugin takes its delay from the same timing reports, which leave out
    /// the graph cycle a quantum spends before the sink plays it, so its cues come a quantum
    /// (10.7 ms) early (docs/testing.md, PipeWire); `PulseOutput` corrects that itself.
    /// How much later than 2 ms a stamp may come on `output`, in ms: ALSA through the pulse
    /// plugin says its readings wander by up to 2 ms (`AlsaOutput.readingWander`), and the engine
    /// then stamps late by up to that rather than early; the pulse output's readings do not.
    static func wander(_ output: OutputKind) -> Double { output == .alsa ? 2 : 0 }

    static var timedOutputs: [OutputKind] { TestSoundServer.selected == .pipewire ? [.pulse] : [.alsa, .pulse] }
    /// Delivery before the measured audible time within this is measurement resolution (the
    /// recorder's fitted clock), not an early cue.
    static let resolution: Int64 = 1_000_000

    struct Event {
        let fields: [String: Any]
        var type: String { fields["type"] as? String ?? "" }
        var frame: Int? { fields["frame"] as? Int }
        var heard: Int64 { (fields["heard"] as? NSNumber)?.int64Value ?? 0 }
    }

    static func events(_ path: String) throws -> [Event] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { line in
            Event(fields: try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)"))
        }
    }

    static func reference(_ dir: TempDir, lesson: String) throws -> [Int16] {
        let rendered = try run(Repo.narrator, ["render", lesson] + chainArguments + ["--output", dir.file("reference.wav")])
        try #require(rendered.status == 0, "\(rendered.stderr)")
        return try WAVFile(path: dir.file("reference.wav")).int16Samples
    }

    /// Delivered minus heard, per cue whose frame the recording pins down (not inside a
    /// stretch of silence that an inserted gap makes ambiguous), with the cue's heard time.
    static func deliveryErrors(_ events: [Event], recording: Recording, alignment: Alignment) throws -> [(error: Int64, heard: Int64, event: Event)] {
        var result: [(Int64, Int64, Event)] = []
        for event in events where !["start", "underrun", "error"].contains(event.type) && event.frame != nil {
            let frame = try #require(event.frame)
            let range = try #require(alignment.recordingFrames(ofReferenceFrame: frame), "frame \(frame) not found")
            let earliest = Int64(recording.audibleTime(ofFrame: range.lowerBound))
            #expect(event.heard >= earliest - resolution, "\(event.type) at frame \(frame) came \(Double(earliest - event.heard) / 1e6) ms before it was heard")
            if range.count == 1 { result.append((event.heard - earliest, earliest, event)) }
            if ProcessInfo.processInfo.environment["NARRATOR_TEST_VERBOSE"] != nil {
                print(event.type, frame, range, Double(event.heard - earliest) / 1e6, event.fields["t"] ?? "")
            }
        }
        return result
    }

    /// A live activity whose prompt, idle prompt and answers are tones that start at their peak,
    /// so that any frame of them is audible and findable in the recording.
    static func toneActivity(_ dir: TempDir) throws -> String {
        // Tones that start at their peak, so that any frame of them is audible and findable.
        for (name, frequency, seconds) in [("prompt", 440, 0.3), ("idle", 880, 0.5), ("yes", 660, 0.3), ("no", 300, 0.3)] {
            let made = try runTool(
                "sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", dir.file("\(name).wav"), "synth", "\(seconds)", "sine", "\(frequency)", "0", "25", "vol", "0.5"])
            try #require(made.status == 0, "\(made.stderr)")
        }
        let lesson = dir.write(
            "l.json",
            """
            {"sampleRate": 48000, "channels": 2,
             "clips": {"prompt": {"file": "prompt.wav"}, "idle": {"file": "idle.wav"}, "yes": {"file": "yes.wav"}, "no": {"file": "no.wav"}},
             "chains": {"prompt": [{"clip": "prompt"}], "idle": [{"clip": "idle"}], "yes": [{"clip": "yes"}], "no": [{"clip": "no"}]},
             "activities": {"a": {"idleSeconds": 1.0, "steps": [{"prompt": "prompt", "answer": "x", "idle": "idle", "correct": "yes", "wrong": ["no"]}]}}}
            """)
        return lesson
    }

    /// Clip `name` of the tone activity in `dir`, as the stereo frames `play` sends.
    static func stereo(_ dir: TempDir, _ name: String) throws -> [Int16] {
        try WAVFile(path: dir.file("\(name).wav")).int16Samples.flatMap { [$0, $0] }
    }
}
