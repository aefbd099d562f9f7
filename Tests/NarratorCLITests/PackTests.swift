import Foundation
import NarratorAudioFile
import NarratorKit
import NarratorTestSupport
import Testing

/// `narrator pack` on the sample library (Timings/lessons, whose clips live in Audio/lessons):
/// checked here against truths pack does not compute: ffmpeg's decoded length of every new
/// file against soxi's of its source, the original lessons' cue sheets, the files' own bytes.
@Suite struct PackTests {
    static let library = Repo.path("Timings/lessons")

    /// Every lesson of the sample library, with the file names its clips use.
    static func lessons() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: library).filter { $0.hasSuffix(".json") }.sorted()
    }

    static func frames(ffmpeg path: String) throws -> Int {
        let result = try runTool("bash", ["-c", "ffmpeg -v error -nostdin -i '\(path)' -f s16le -ac 1 - | wc -c"])
        try #require(result.status == 0, "\(result.stderr)")
        return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))! / 2
    }

    static func soxi(_ flag: String, _ path: String) throws -> Int {
        let result = try runTool("soxi", [flag, path])
        try #require(result.status == 0, "\(result.stderr)")
        return Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))!
    }

    /// The granule position of an Ogg file's last page, read by hand.
    static func lastGranule(_ path: String) throws -> Int64 {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var offset = 0
        var granule: Int64 = -1
        while offset + 27 <= bytes.count {
            granule = bytes[(offset + 6)..<(offset + 14)].reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
            let segments = Int(bytes[offset + 26])
            offset += 27 + segments + bytes[(offset + 27)..<(offset + 27 + segments)].reduce(0) { $0 + Int($1) }
        }
        return granule
    }

    @Test(arguments: ["opus", "vorbis", "mp3", "flac"])
    func packedLibraryKeepsEveryFrameAndCue(format: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let out = dir.file("packed")
        let result = try run(Repo.narrator, ["pack", Self.library, "--to", out, "--format", format, "--no-progress"])
        try #require(result.status == 0, "\(result.stderr)")
        let ext = AudioFileType(rawValue: format == "vorbis" ? "ogg" : format)!.rawValue
        // Files a clip reads cue markers from (in any lesson) are kept as they are.
        let markerFiles = Set(try Self.lessons().flatMap { lesson in
            try NarratorLesson(path: Self.library + "/" + lesson).lesson.clips.values.filter { $0.markers != nil }.map(\.file)
        })
        #expect(!markerFiles.isEmpty)
        // The layout is the library's, relative to the repository (the folder holding it all).
        for lesson in try Self.lessons() {
            let before = try NarratorLesson(path: Self.library + "/" + lesson)
            let packedPath = out + "/Timings/lessons/" + lesson
            let after = try NarratorLesson(path: packedPath)
            #expect(result.stdout.contains(lesson), "sizes of \(lesson) printed")
            for chain in before.lesson.chains.keys.sorted() {
                for seed: UInt64 in [1, 9] {
                    let old = try before.prepare(.chain(chain, repeats: 1), seed: seed).cueSheet()
                    let new = try after.prepare(.chain(chain, repeats: 1), seed: seed).cueSheet()
                    #expect(old == new, "\(lesson) chain \(chain) seed \(seed)")
                }
            }
            for (id, clip) in after.lesson.clips {
                let source = before.lesson.clips[id]!.file
                #expect(clip.start == before.lesson.clips[id]!.start && clip.end == before.lesson.clips[id]!.end)
                if markerFiles.contains(source) {
                    // Compressed formats carry no cue markers: the file is kept as it is.
                    #expect(URL(fileURLWithPath: clip.file).pathExtension == "wav")
                    #expect(try Data(contentsOf: URL(fileURLWithPath: clip.file)) == Data(contentsOf: URL(fileURLWithPath: source)), "\(id)")
                    continue
                }
                #expect(URL(fileURLWithPath: clip.file).pathExtension == ext, "\(lesson) \(id): \(clip.file)")
                #expect(clip.file.hasPrefix(out + "/"))
                // Decoded by ffmpeg: the source's frames (Opus at ffmpeg's 48 kHz, scaled;
                // a source at a rate Opus lacks was converted to its lesson's rate).
                let sourceFrames = try Self.soxi("-s", source)
                let sourceRate = try Self.soxi("-r", source)
                let decoded = try Self.frames(ffmpeg: clip.file)
                let rate = format == "opus" ? 48000 : sourceRate
                let expected = Int((Double(sourceFrames) * Double(rate) / Double(sourceRate)).rounded())
                if format == "vorbis", try OggFile.audioPages(clip.file) == 1 {
                    // ffmpeg does not trim a one-page Vorbis stream at its end (docs/formats.md):
                    // the final granule position, read by hand, is the truth it skips.
                    #expect(try Self.lastGranule(clip.file) == expected, "\(id): \(clip.file)")
                    #expect(abs(decoded - expected) < 2048, "\(id): ffmpeg decodes \(decoded) frames of \(clip.file), the source \(expected)")
                } else {
                    #expect(decoded == expected, "\(id): ffmpeg decodes \(decoded) frames of \(clip.file), the source \(sourceFrames) at \(sourceRate) Hz")
                }
            }
        }
        let total = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("total") })
        let numbers = total.split(separator: " ").compactMap { Int($0) }
        try #require(numbers.count == 2, "\(total)")
        #expect(numbers[1] < numbers[0], "\(total)")
        print("pack \(format): \(total)")
    }

    @Test func refusesWhatItCannotDoAndLeavesNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // Two sources that would become one file.
        let tone = dir.file("lib/a.wav")
        try FileManager.default.createDirectory(atPath: dir.file("lib"), withIntermediateDirectories: true)
        #expect(try runTool("sox", ["-n", "-r", "48000", "-b", "16", tone, "synth", "0.5", "sine", "300"]).status == 0)
        #expect(try runTool("sox", [tone, dir.file("lib/a.flac")]).status == 0)
        dir.write("lib/l.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "a.wav"}, "b": {"file": "a.flac"}}, "chains": {"x": [{"clip": "a"}, {"clip": "b"}]}}"#)
        let cases: [([String], String)] = [
            (["--to", dir.file("out"), "--format", "opus"], "would both become"),
            (["--to", dir.file("lib/packed"), "--format", "opus"], "holds the library or its files"),
            (["--to", dir.file("out"), "--format", "flac", "--quality", "0.5"], "--quality: FLAC is lossless"),
            (["--to", dir.file("out"), "--format", "mp3", "--quality", "2"], "--quality: quality 2.0 is out of range"),
        ]
        for (arguments, message) in cases {
            let result = try run(Repo.narrator, ["pack", dir.file("lib"), "--no-progress"] + arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
            #expect(dir.contents() == ["lib"], "\(arguments) left \(dir.contents())")
        }
        let empty = dir.file("empty")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let none = try run(Repo.narrator, ["pack", empty, "--to", dir.file("out"), "--format", "opus"])
        #expect(none.status == 1 && none.stderr.contains("holds no lesson"), "\(none.stderr)")
    }

    /// What pack ships it has read as what the lesson says it is: a clip's "timings" as
    /// timings (a clip no chain plays included, in the default and in a locale), a clip that
    /// reads its markers as audio. Anything else is one line naming the lesson and the key, and
    /// nothing is written.
    @Test func shipsOnlyWhatItReadAsWhatTheLessonSays() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("lib"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: dir.file("private"), withIntermediateDirectories: true)
        #expect(try runTool("sox", ["-n", "-r", "48000", "-b", "16", dir.file("lib/a.wav"), "synth", "0.5", "sine", "300"]).status == 0)
        dir.write("private/credentials.txt", "password=hunter2\n")
        dir.write("lib/t.json", #"{"words": [{"text": "a", "start": 0.1, "end": 0.2}]}"#)
        let played = #""a": {"file": "a.wav", "timings": "t.json"}"#
        let cases: [(clips: String, locales: String, says: String)] = [
            (played + #", "secret": {"file": "a.wav", "timings": "../private/credentials.txt"}"#, "", "l.json: clips.secret.timings: "),
            (played + #", "secret": {"file": "a.wav", "timings": "t.json"}"#,
             #", "locales": {"fr": {"clips": {"secret": {"file": "a.wav", "timings": "../private/credentials.txt"}}}}"#,
             "l.json: locales.fr.clips.secret.timings: "),
            (played + #", "m": {"file": "../private/credentials.txt", "markers": "words"}"#, "", "l.json: clips.m.file: "),
        ]
        for (clips, locales, says) in cases {
            dir.write("lib/l.json", #"{"sampleRate": 48000, "clips": {\#(clips)}, "chains": {"x": [{"clip": "a"}]}\#(locales)}"#)
            let result = try run(Repo.narrator, ["pack", dir.file("lib"), "--to", dir.file("out"), "--format", "flac", "--no-progress"])
            #expect(result.status == 1, "\(clips): \(result.stdout)")
            #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains(says), "\(clips): \(result.stderr)")
            #expect(result.stderr.contains("credentials.txt"), "\(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.file("out")), "\(clips): wrote \(dir.contents())")
            try? FileManager.default.removeItem(atPath: dir.file("out"))
        }
        // The same lesson with a real timing file for the unplayed clip packs it.
        dir.write("lib/l.json", #"{"sampleRate": 48000, "clips": {\#(played), "spare": {"file": "a.wav", "timings": "t.json"}}, "chains": {"x": [{"clip": "a"}]}}"#)
        let good = try run(Repo.narrator, ["pack", dir.file("lib"), "--to", dir.file("out"), "--format", "flac", "--no-progress"])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(FileManager.default.contents(atPath: dir.file("out/t.json")) == FileManager.default.contents(atPath: dir.file("lib/t.json")))
    }

    /// The output folder is compared with the library by where the paths lead: `--to` through
    /// a link to the library, or through a link to a folder that holds it, is refused before
    /// anything is written.
    @Test func refusesAnOutputThatLeadsIntoTheLibrary() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("top/lib"), withIntermediateDirectories: true)
        #expect(try runTool("sox", ["-n", "-r", "48000", "-b", "16", dir.file("top/lib/a.wav"), "synth", "0.5", "sine", "300"]).status == 0)
        dir.write("top/lib/l.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "a.wav"}}, "chains": {"x": [{"clip": "a"}]}}"#)
        try FileManager.default.createSymbolicLink(atPath: dir.file("link"), withDestinationPath: dir.file("top/lib"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("up"), withDestinationPath: "top")
        let before = try FileManager.default.subpathsOfDirectory(atPath: dir.file("top")).sorted()
        for (library, to) in [
            (dir.file("top/lib"), dir.file("link/packed")), (dir.file("top/lib"), dir.file("link")),
            (dir.file("top/lib"), dir.file("up")), (dir.file("link"), dir.file("top/lib/packed")),
            (dir.file("top/lib"), dir.file("up/lib/../packed/..")),
        ] {
            let result = try run(Repo.narrator, ["pack", library, "--to", to, "--format", "flac", "--no-progress"])
            #expect(result.status == 1 && result.stderr.contains("holds the library or its files"), "\(library) \(to): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
            #expect(try FileManager.default.subpathsOfDirectory(atPath: dir.file("top")).sorted() == before, "\(to)")
        }
    }

    /// `pack --normalize` on clips made at three levels: each packed file measures within
    /// 0.5 LU of its bus's target by ffmpeg's meter (its own implementation, not libebur128),
    /// the packed lesson has no "loudness" key and gives the original's cue sheets, a clip too
    /// short to measure and a lesson without a target keep their samples as recorded, every
    /// locale's recordings are levelled like the default's, and a file two buses would level
    /// apart is refused in one line.
    @Test func normalizeBakesTheLoudnessTargetIn() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("lib"), withIntermediateDirectories: true)
        try LoudnessTools.speechAtLevels([10, 20, 30], in: dir)
        for name in ["c10", "c20", "c30", "speech"] {
            try FileManager.default.moveItem(atPath: dir.file("\(name).wav"), toPath: dir.file("lib/\(name).wav"))
        }
        try LoudnessTools.sox(["-n", "-r", "48000", "-c", "1", "-b", "16", dir.file("lib/blip.wav"), "synth", "0.2", "sine", "880", "gain", "-30"])
        // A translation recorded 8 dB under the default's c20, and one 6 dB over c10.
        try LoudnessTools.sox([dir.file("lib/c20.wav"), dir.file("lib/es-a.wav"), "gain", "-8"])
        try LoudnessTools.sox([dir.file("lib/c10.wav"), dir.file("lib/fr-b.wav"), "gain", "6"])
        let leveled = dir.write("lib/leveled.json", """
            {"sampleRate": 48000, "loudness": {"voice": -23, "sfx": -30}, "locale": "en",
             "clips": {"a": {"file": "c10.wav"}, "b": {"file": "c20.wav"}, "fx": {"file": "c30.wav", "bus": "sfx"},
                       "blip": {"file": "blip.wav"}},
             "locales": {"es": {"clips": {"a": {"file": "es-a.wav"}}}, "fr": {"clips": {"b": {"file": "fr-b.wav"}}}},
             "chains": {"all": [{"clip": "a"}, {"clip": "b"}, {"silence": 0.1}, {"clip": "fx"}, {"clip": "blip"}]}}
            """)
        let plain = dir.write("lib/plain.json", #"{"sampleRate": 48000, "clips": {"s": {"file": "speech.wav"}}, "chains": {"x": [{"clip": "s"}]}}"#)
        let out = dir.file("out")
        let result = try run(Repo.narrator, ["pack", dir.file("lib"), "--to", out, "--format", "flac", "--normalize", "--no-progress"])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("--normalize: the loudness targets of 1 lesson baked into 5 files"), "\(result.stdout)")

        let packed = try NarratorLesson(path: out + "/leveled.json")
        #expect(packed.lesson.loudness.isEmpty)
        let json = try String(contentsOfFile: out + "/leveled.json", encoding: .utf8)
        #expect(!json.contains("loudness"), "\(json)")
        let original = try NarratorLesson(path: leveled)
        #expect(try packed.prepare(.chain("all", repeats: 1), seed: 1).cueSheet() == original.prepare(.chain("all", repeats: 1), seed: 1).cueSheet())
        for (id, target) in [("a", -23.0), ("b", -23.0), ("fx", -30.0)] {
            let file = packed.lesson.clips[id]!.file
            #expect(file.hasSuffix(".flac"))
            let measured = try LoudnessTools.ffmpeg(file).integrated
            #expect(abs(measured - target) <= 0.5, "\(id): \(file) measures \(measured) LUFS, target \(target)")
        }
        // Every locale's recordings too (they used to stay 6–8 LU off the target).
        for (tag, id) in [("es", "a"), ("fr", "b")] {
            let file = try packed.lesson.localized(to: tag).clips[id]!.file
            #expect(file.contains(tag), "\(tag): \(file)")
            let measured = try LoudnessTools.ffmpeg(file).integrated
            #expect(abs(measured + 23) <= 0.5, "\(tag) \(id): \(file) measures \(measured) LUFS, target -23")
        }
        // As recorded: the 0.2 s blip (no loudness to measure) and the lesson without a target.
        func samples(_ path: String) throws -> String {
            let decoded = try runTool("bash", ["-c", "ffmpeg -v error -nostdin -i '\(path)' -f s16le - | sha256sum"])
            try #require(decoded.status == 0, "\(decoded.stderr)")
            return decoded.stdout
        }
        #expect(try samples(packed.lesson.clips["blip"]!.file) == samples(dir.file("lib/blip.wav")))
        let packedPlain = try NarratorLesson(path: out + "/plain.json")
        #expect(try samples(packedPlain.lesson.clips["s"]!.file) == samples(dir.file("lib/speech.wav")))
        _ = plain

        // One file on two buses with different targets: no single gain bakes both in.
        let conflict = dir.file("conflict")
        try FileManager.default.createDirectory(atPath: conflict, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: dir.file("lib/c20.wav"), toPath: conflict + "/c20.wav")
        _ = dir.write("conflict/l.json", """
            {"sampleRate": 48000, "loudness": {"voice": -23, "sfx": -30},
             "clips": {"v": {"file": "c20.wav"}, "x": {"file": "c20.wav", "bus": "sfx"}}, "chains": {"c": [{"clip": "v"}, {"clip": "x"}]}}
            """)
        let refused = try run(Repo.narrator, ["pack", conflict, "--to", dir.file("out2"), "--format", "flac", "--normalize", "--no-progress"])
        #expect(refused.status == 1)
        #expect(refused.stderr.split(separator: "\n").count == 1 && refused.stderr.contains("different loudness gains"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("out2")))
    }
}
