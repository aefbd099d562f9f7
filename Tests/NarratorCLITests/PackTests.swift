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
                if format == "vorbis", try CompressedRenderTests.oggAudioPages(clip.file) == 1 {
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
}
