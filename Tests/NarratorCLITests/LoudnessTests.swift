import Foundation
import NarratorTestSupport
import Testing

/// Loudness (EBU R 128): `inspect`'s figures, `validate`'s warnings, and a lesson's
/// `"loudness"` target, against ffmpeg's own meter (af_ebur128, an implementation of its own,
/// not libebur128) as ground truth.
@Suite("loudness")
struct LoudnessTests {
    /// `narrator inspect`'s loudness lines: the number in each, nil for "n/a"/"-inf".
    static func inspect(_ path: String) throws -> (integrated: String, range: String, truePeak: String) {
        let result = try run(Repo.narrator, ["inspect", path])
        try #require(result.status == 0, "\(result.stderr)")
        func line(_ key: String) throws -> String {
            let found = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix(key) }, "\(result.stdout)")
            return found.dropFirst(key.count).trimmingCharacters(in: .whitespaces)
        }
        return (try line("loudness:"), try line("range:"), try line("true peak:"))
    }

    static func number(_ text: String) -> Double? { text.split(separator: " ").first.flatMap { Double($0) } }

    // MARK: - inspect

    /// Integrated loudness within 0.1 LU of ffmpeg's, true peak within 0.3 dB, on files of
    /// several rates, channel counts and sample formats.
    @Test func inspectAgreesWithFFmpeg() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try LoudnessTools.speechAtLevels([10, 30], in: dir)
        try LoudnessTools.sox(["-n", "-r", "44100", "-c", "2", "-b", "16", dir.file("stereo.wav"), "synth", "3", "pinknoise", "synth", "3", "sine", "amod", "3", "0", "gain", "-12"])
        try LoudnessTools.sox(["-n", "-r", "22050", "-c", "1", "-b", "24", dir.file("tone.wav"), "synth", "2", "sine", "1000", "gain", "-20"])
        let files = ["c10.wav", "c30.wav", "stereo.wav", "tone.wav"].map(dir.file) + [
            Repo.path("Audio/fixtures/sentence.wav"), Repo.path("Audio/lessons/sight-words/part1.wav"),
        ]
        for file in files {
            let ours = try Self.inspect(file)
            let truth = try LoudnessTools.ffmpeg(file)
            let integrated = try #require(Self.number(ours.integrated), "\(file): \(ours.integrated)")
            let peak = try #require(Self.number(ours.truePeak), "\(file): \(ours.truePeak)")
            #expect(ours.integrated.hasSuffix("LUFS integrated (EBU R 128)"))
            #expect(abs(integrated - truth.integrated) <= 0.1, "\(file): \(integrated) LUFS, ffmpeg \(truth.integrated)")
            #expect(abs(peak - truth.truePeak) <= 0.3, "\(file): \(peak) dBTP, ffmpeg \(truth.truePeak)")
        }
        // The -10 and -30 dBFS copies of one signal: 20 LU apart.
        let loud = try #require(Self.number(try Self.inspect(dir.file("c10.wav")).integrated))
        let quiet = try #require(Self.number(try Self.inspect(dir.file("c30.wav")).integrated))
        #expect(abs(loud - quiet - 20) <= 0.05)
    }

    /// Loudness range over 20 s of speech at three levels: libebur128 steps its 3 s
    /// short-term window by 1 s where ffmpeg steps by 0.1 s, so they agree to about 1 LU, not 0.1.
    @Test func loudnessRangeAgreesWithFFmpegOnLongAudio() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try LoudnessTools.speechAtLevels([10, 20, 30], in: dir)
        let long = dir.file("long.wav")
        try LoudnessTools.sox(["c10.wav", "c30.wav", "c20.wav", "c10.wav", "c30.wav", "c20.wav", "c10.wav", "c20.wav"].map(dir.file) + [long])
        let range = try #require(Self.number(try Self.inspect(long).range))
        let truth = try LoudnessTools.ffmpeg(long)
        #expect(range > 8, "levels 10 and 20 dB apart make a wide range: \(range)")
        #expect(abs(range - truth.range) <= 1, "\(range) LU, ffmpeg \(truth.range)")
    }

    /// Silence, audio too short to gate, and a single frame: said in words, exit 0.
    @Test func silenceAndShortAudioAreSaidNotCrashed() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try LoudnessTools.sox(["-n", "-r", "48000", "-c", "1", "-b", "16", dir.file("silence.wav"), "trim", "0", "1"])
        try LoudnessTools.sox(["-n", "-r", "48000", "-c", "1", "-b", "16", dir.file("short.wav"), "synth", "0.2", "sine", "440"])
        try LoudnessTools.sox(["-n", "-r", "48000", "-c", "2", "-b", "16", dir.file("one.wav"), "synth", "1s", "sine", "440"])
        let silence = try Self.inspect(dir.file("silence.wav"))
        #expect(silence.integrated.hasPrefix("-inf LUFS (silent"), "\(silence)")
        #expect(silence.range.hasPrefix("n/a"), "\(silence)")
        #expect(silence.truePeak.hasPrefix("-inf dBTP"), "\(silence)")
        for name in ["short.wav", "one.wav"] {
            let short = try Self.inspect(dir.file(name))
            #expect(short.integrated == "n/a (shorter than one 400 ms block)", "\(name): \(short)")
            #expect(short.range == "n/a (shorter than one 3 s block)", "\(name): \(short)")
            #expect(Self.number(short.truePeak) != nil, "\(name): \(short)")
        }
    }

    // MARK: - A lesson's target

    /// Clips recorded at -10, -20 and -30 dBFS (and a region of one), leveled to a target:
    /// each segment of the rendered chain measures within 0.5 LU of it with ffmpeg, where
    /// without the target they are 20 LU apart; an sfx clip reaches its own bus's target; a
    /// clip too short to measure and a silent one are left exactly as they were; the cue sheet
    /// is the same frame for frame with and without the target.
    @Test func renderedChainSegmentsMeasureAtTheTarget() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try LoudnessTools.speechAtLevels([10, 20, 30], in: dir)
        try LoudnessTools.sox(["-n", "-r", "48000", "-c", "1", "-b", "16", dir.file("blip.wav"), "synth", "0.2", "sine", "880", "gain", "-30"])
        try LoudnessTools.sox(["-n", "-r", "48000", "-c", "1", "-b", "16", dir.file("silence.wav"), "trim", "0", "0.5"])
        let clips = """
            "clips": {"a": {"file": "c10.wav"}, "b": {"file": "c20.wav"}, "c": {"file": "c30.wav"},
                      "r": {"file": "c30.wav", "start": 0.5, "end": 2.0},
                      "fx": {"file": "c20.wav", "bus": "sfx"}, "blip": {"file": "blip.wav"}, "hush": {"file": "silence.wav"}},
            "chains": {"all": [{"clip": "a"}, {"clip": "b"}, {"clip": "blip"}, {"clip": "c"}, {"silence": 0.25}, {"clip": "r"},
                               {"clip": "fx"}, {"clip": "hush"}, {"clip": "a"}]}
            """
        let target = dir.write("target.json", #"{"sampleRate": 48000, "loudness": {"voice": -23, "sfx": -30}, "# + clips + "}")
        let plain = dir.write("plain.json", #"{"sampleRate": 48000, "# + clips + "}")
        let one = dir.write("one.json", #"{"sampleRate": 48000, "loudness": -23, "# + clips + "}")

        for lesson in [target, plain, one] {
            let result = try run(Repo.narrator, [
                "render", lesson, "--chain", "all", "--format", "f32", "--output", lesson + ".wav", "--cues", lesson + ".cues.json",
            ])
            try #require(result.status == 0, "\(result.stderr)")
        }
        // Cues: the same, byte for byte.
        let sheets = try [target, plain, one].map { try String(contentsOfFile: $0 + ".cues.json", encoding: .utf8) }
        #expect(sheets[0] == sheets[1] && sheets[2] == sheets[1])
        let sheet = try Sheet(path: target + ".cues.json")
        let starts = sheet.cues.filter { $0.type == "clipStart" }
        let ends = sheet.cues.filter { $0.type == "clipEnd" }
        try #require(starts.count == 8 && ends.count == 8)

        /// The segment of clip number `index` in the chain, measured by ffmpeg.
        func segment(_ rendered: String, _ index: Int) throws -> String {
            let path = "\(rendered).\(index).wav"
            try LoudnessTools.sox([rendered, path, "trim", "\(starts[index].frame)s", "\(ends[index].frame - starts[index].frame)s"])
            return path
        }
        let voiceSegments = [0, 1, 3, 4, 7]
        for index in voiceSegments {
            let leveled = try LoudnessTools.ffmpeg(try segment(target + ".wav", index)).integrated
            #expect(abs(leveled - -23) <= 0.5, "\(starts[index].clip ?? ""): \(leveled) LUFS, target -23")
            let single = try LoudnessTools.ffmpeg(try segment(one + ".wav", index)).integrated
            #expect(abs(single - -23) <= 0.5, "one number for every bus: \(starts[index].clip ?? ""): \(single) LUFS")
        }
        let fx = try LoudnessTools.ffmpeg(try segment(target + ".wav", 5)).integrated
        #expect(abs(fx - -30) <= 0.5, "the sfx bus's own target: \(fx) LUFS")
        // Without a target the same segments are as recorded: 20 LU apart.
        let loud = try LoudnessTools.ffmpeg(try segment(plain + ".wav", 0)).integrated
        let quiet = try LoudnessTools.ffmpeg(try segment(plain + ".wav", 3)).integrated
        #expect(abs(loud - quiet - 20) <= 0.5, "\(loud) vs \(quiet)")

        // The blip (0.2 s, too short to gate) and the silence get no gain: their samples are
        // those of the render without a target.
        let leveled = try WAVFile(path: target + ".wav").floatSamples
        let asRecorded = try WAVFile(path: plain + ".wav").floatSamples
        #expect(leveled.count == asRecorded.count, "the same length")
        for index in [2, 6] {
            let range = starts[index].frame..<ends[index].frame
            #expect(Array(leveled[range]) == Array(asRecorded[range]), "\(starts[index].clip ?? "") untouched")
        }
        // A leveled clip is its recording times one constant factor (the gain, exactly).
        let range = starts[0].frame..<ends[0].frame
        let factors = range.compactMap { frame -> Double? in
            abs(asRecorded[frame]) > 0.01 ? Double(leveled[frame]) / Double(asRecorded[frame]) : nil
        }
        let factor = try #require(factors.first)
        #expect(factors.allSatisfy { abs($0 - factor) <= 1e-5 * factor }, "a constant gain")
        #expect(abs(20 * log10(factor) - (-23 - loud)) <= 0.1, "the gain is target minus loudness: \(20 * log10(factor)) dB, ffmpeg \(loud) LUFS")
    }

    /// A stereo lesson: its mono clips play on both channels (3 LU louder than the file alone),
    /// a stereo clip channel by channel; the target holds for the rendered output, as ffmpeg
    /// measures it.
    @Test func stereoOutputMeasuresAtTheTarget() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try LoudnessTools.speechAtLevels([10, 30], in: dir)
        try LoudnessTools.sox(["-n", "-r", "48000", "-c", "2", "-b", "16", dir.file("wide.wav"), "synth", "2", "pinknoise", "synth", "2", "sine", "amod", "3", "0", "gain", "-15"])
        let lesson = dir.write(
            "lesson.json",
            #"{"sampleRate": 48000, "channels": 2, "loudness": -20, "clips": {"a": {"file": "c10.wav"}, "b": {"file": "c30.wav"}, "w": {"file": "wide.wav"}}, "chains": {"x": [{"clip": "a"}, {"clip": "w"}, {"clip": "b"}]}}"#)
        let out = dir.file("x.wav")
        let result = try run(Repo.narrator, ["render", lesson, "--chain", "x", "--format", "f32", "--output", out, "--cues", out + ".json"])
        try #require(result.status == 0, "\(result.stderr)")
        let sheet = try Sheet(path: out + ".json")
        let starts = sheet.cues.filter { $0.type == "clipStart" }, ends = sheet.cues.filter { $0.type == "clipEnd" }
        try #require(starts.count == 3 && ends.count == 3)
        for index in 0..<3 {
            let path = dir.file("segment\(index).wav")
            try LoudnessTools.sox([out, path, "trim", "\(starts[index].frame)s", "\(ends[index].frame - starts[index].frame)s"])
            let measured = try LoudnessTools.ffmpeg(path).integrated
            #expect(abs(measured - -20) <= 0.5, "\(starts[index].clip ?? ""): \(measured) LUFS in stereo, target -20")
        }
    }

    /// A file long enough to stream while it plays (over 30 s: a music bed), and a region of
    /// it: leveled on the read, they measure at the music bus's target.
    @Test func streamedClipsAreLeveledToo() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try LoudnessTools.speechAtLevels([30], in: dir, seconds: "32")
        let lesson = dir.write(
            "lesson.json",
            #"{"sampleRate": 48000, "loudness": {"music": -24}, "clips": {"bed": {"file": "c30.wav", "bus": "music"}, "part": {"file": "c30.wav", "bus": "music", "start": 10, "end": 15}}, "chains": {"x": [{"clip": "bed"}, {"clip": "part"}]}}"#)
        let out = dir.file("x.wav")
        let result = try run(Repo.narrator, ["render", lesson, "--chain", "x", "--format", "f32", "--output", out])
        try #require(result.status == 0, "\(result.stderr)")
        let bed = dir.file("bed.wav"), part = dir.file("part.wav")
        try LoudnessTools.sox([out, bed, "trim", "0s", "\(32 * 48000)s"])
        try LoudnessTools.sox([out, part, "trim", "\(32 * 48000)s", "\(5 * 48000)s"])
        let before = try LoudnessTools.ffmpeg(dir.file("c30.wav")).integrated
        #expect(before < -35, "recorded far below the target: \(before)")
        for path in [bed, part] {
            let measured = try LoudnessTools.ffmpeg(path).integrated
            #expect(abs(measured - -24) <= 0.5, "\(path): \(measured) LUFS, target -24")
        }
    }

    /// A clip a chain plays as a `music` item plays on the music bus, whatever its own: it is
    /// leveled to the music target, not the voice one.
    @Test func aMusicItemTakesTheMusicTarget() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try LoudnessTools.speechAtLevels([20], in: dir)
        let lesson = dir.write(
            "lesson.json",
            #"{"sampleRate": 48000, "loudness": {"voice": -18, "music": -33}, "clips": {"bed": {"file": "c20.wav"}}, "chains": {"x": [{"music": "bed"}, {"silence": 2.5}]}}"#)
        let out = dir.file("x.wav")
        let result = try run(Repo.narrator, ["render", lesson, "--chain", "x", "--format", "f32", "--output", out])
        try #require(result.status == 0, "\(result.stderr)")
        let measured = try LoudnessTools.ffmpeg(out).integrated
        #expect(abs(measured - -33) <= 0.5, "\(measured) LUFS, music target -33")
    }

    /// The key's values are range-checked and its buses named; one line each, exit 1.
    @Test func badTargetsAreRefusedInOneLine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try LoudnessTools.speechAtLevels([20], in: dir)
        let cases: [(String, String)] = [
            (#"{"voice": -18, "drums": -20}"#, "lesson.json: loudness.drums: unknown key (expected one of: music, sfx, voice)"),
            ("5", "lesson.json: loudness: a loudness target is between -70 and 0 LUFS, got 5"),
            (#"{"sfx": -71}"#, "lesson.json: loudness.sfx: a loudness target is between -70 and 0 LUFS, got -71"),
            (#""loud""#, "lesson.json: loudness: expected a target in LUFS, or an object of targets by bus (voice, sfx, music)"),
            (#"{"voice": "-18"}"#, "lesson.json: loudness.voice: expected a number"),
            ("1e400", "lesson.json: line 1"),
        ]
        for (value, expected) in cases {
            let lesson = dir.write(
                "lesson.json", #"{"sampleRate": 48000, "loudness": \#(value), "clips": {"a": {"file": "c20.wav"}}, "chains": {"c": [{"clip": "a"}]}}"#)
            let result = try run(Repo.narrator, ["cues", lesson, "--chain", "c"])
            #expect(result.status == 1, "\(value)")
            #expect(result.stderr.hasPrefix("narrator: \(dir.path)/\(expected)") || result.stderr.hasPrefix("narrator: \(expected)"), "\(value): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        }
    }

    // MARK: - validate

    /// An even lesson: no loudness or true-peak warning. One clip 10 LU off the others, and
    /// one that peaks over -1 dBTP: each warned of, naming the clip key and the file.
    @Test func validateWarnsOfOutliersAndPeaks() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try LoudnessTools.speechAtLevels([10, 18, 20, 30], in: dir)
        try LoudnessTools.sox([dir.file("speech.wav"), dir.file("hot.wav"), "norm", "-0.1"])
        try LoudnessTools.sox([dir.file("c20.wav"), dir.file("c20b.wav"), "reverse"])
        dir.write(
            "even.json",
            #"{"sampleRate": 48000, "clips": {"a": {"file": "c20.wav"}, "b": {"file": "c20b.wav"}, "c": {"file": "c20.wav", "start": 0.5}, "fx": {"file": "c10.wav", "bus": "sfx"}}, "chains": {"x": [{"clip": "a"}, {"clip": "b"}, {"clip": "c"}, {"clip": "fx"}]}}"#)
        let even = try run(Repo.narrator, ["validate", "even.json"], cwd: dir.path)
        #expect(even.status == 0 && !even.stdout.contains("warning:"), "\(even.stdout)")

        dir.write(
            "uneven.json",
            #"{"sampleRate": 48000, "clips": {"a": {"file": "c20.wav"}, "b": {"file": "c20b.wav"}, "quiet": {"file": "c30.wav"}, "hot": {"file": "c18.wav"}, "peak": {"file": "hot.wav", "bus": "sfx"}}, "chains": {"x": [{"clip": "a"}, {"clip": "b"}, {"clip": "quiet"}, {"clip": "hot"}, {"clip": "peak"}]}}"#)
        let uneven = try run(Repo.narrator, ["validate", "uneven.json"], cwd: dir.path)
        #expect(uneven.status == 0, "warnings, not errors: \(uneven.stdout)")
        let warnings = uneven.stdout.split(separator: "\n").filter { $0.hasPrefix("warning:") }.map(String.init)
        #expect(warnings.count == 2, "\(uneven.stdout)")
        #expect(warnings.contains {
            $0.hasPrefix("warning: c30.wav: clips.quiet: integrated loudness ") && $0.contains("LU below the median of the lesson's 4 voice clips")
        }, "\(warnings)")
        #expect(warnings.contains { $0.hasPrefix("warning: hot.wav: clips.peak: true peak ") && $0.contains("over -1 dBTP") }, "\(warnings)")
        #expect(uneven.stdout.split(separator: "\n").contains { $0.split(separator: " ") == ["loudness", "0", "1"] })
        #expect(uneven.stdout.split(separator: "\n").contains { $0.split(separator: " ") == ["true-peak", "0", "1"] })

        // A tolerance wider than the distance: the outlier passes. A narrower one: the clip
        // 2 LU above the median too.
        let wide = try run(Repo.narrator, ["validate", "--loudness-tolerance", "12", "uneven.json"], cwd: dir.path)
        #expect(wide.stdout.split(separator: "\n").filter { $0.hasPrefix("warning:") }.count == 1, "\(wide.stdout)")
        let narrow = try run(Repo.narrator, ["validate", "--loudness-tolerance", "1", "uneven.json"], cwd: dir.path)
        #expect(narrow.stdout.contains("warning: c18.wav: clips.hot: integrated loudness"), "\(narrow.stdout)")
        for bad in ["0", "41", "nan", "-3", "inf"] {
            let refused = try run(Repo.narrator, ["validate", "--loudness-tolerance=\(bad)", "uneven.json"], cwd: dir.path)
            #expect(refused.status == 1 && refused.stderr.contains("--loudness-tolerance must be between 0.1 and 40 LU"), "\(bad): \(refused.stderr)")
        }

        // With a target the outlier is leveled at load, so not warned of; a gain that lifts a
        // clip's peak over -1 dBTP is.
        dir.write(
            "target.json",
            #"{"sampleRate": 48000, "loudness": {"voice": -8}, "clips": {"a": {"file": "c20.wav"}, "quiet": {"file": "c30.wav"}}, "chains": {"x": [{"clip": "a"}, {"clip": "quiet"}]}}"#)
        let leveled = try run(Repo.narrator, ["validate", "target.json"], cwd: dir.path)
        let lines = leveled.stdout.split(separator: "\n").filter { $0.hasPrefix("warning:") }
        #expect(!leveled.stdout.contains("median"), "\(leveled.stdout)")
        #expect(lines.count == 2 && lines.allSatisfy { $0.contains("with the lesson's loudness gain of +") }, "\(leveled.stdout)")
    }
}
