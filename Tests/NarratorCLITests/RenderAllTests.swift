import Foundation
import NarratorTestSupport
import Testing

/// `narrator render-all`: every chain of every lesson of a library, in parallel, each file the
/// same as one `narrator render` writes.
@Suite("render-all")
struct RenderAllTests {
    /// Every file under `folder`, by its path there.
    static func tree(_ folder: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let walker = try #require(FileManager.default.enumerator(atPath: folder))
        while let name = walker.nextObject() as? String {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder + "/" + name, isDirectory: &isFolder), !isFolder.boolValue {
                files[name] = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + name))
            }
        }
        return files
    }

    @Test func theSampleLibraryRendersAsRenderDoesOnEveryCore() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = Repo.path("Timings/lessons")
        let all = try run(Repo.narrator, ["render-all", library, "--to", dir.file("all"), "--seed", "7"])
        #expect(all.status == 0, "\(all.stderr)")
        let rendered = try Self.tree(dir.file("all"))
        // One audio file and one cue sheet per chain of every lesson, named lesson/chain.
        var expected: Set<String> = []
        for name in try FileManager.default.contentsOfDirectory(atPath: library) where name.hasSuffix(".json") {
            let top = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: library + "/" + name))) as? [String: Any]
            for chain in (top?["chains"] as? [String: Any])?.keys ?? [String: Any]().keys {
                expected.insert("\(name.dropLast(5))/\(chain).wav")
                expected.insert("\(name.dropLast(5))/\(chain).cues.json")
            }
        }
        #expect(Set(rendered.keys) == expected)
        #expect(all.stdout.contains("\(expected.count / 2) chains of "), "\(all.stdout)")
        // Each as `render` writes it, byte for byte (three of them, one in another locale's lesson).
        for (lesson, chain) in [("sample", "correct"), ("homer-sight-words", "correct-1"), ("colors", "colors")] {
            let one = try run(
                Repo.narrator,
                ["render", library + "/\(lesson).json", "--chain", chain, "--seed", "7", "--output", dir.file("one.wav"), "--cues", dir.file("one.json")])
            try #require(one.status == 0, "\(one.stderr)")
            #expect(rendered["\(lesson)/\(chain).wav"] == (try Data(contentsOf: URL(fileURLWithPath: dir.file("one.wav")))), "\(lesson) \(chain)")
            #expect(rendered["\(lesson)/\(chain).cues.json"] == (try Data(contentsOf: URL(fileURLWithPath: dir.file("one.json")))), "\(lesson) \(chain)")
        }
        // One worker writes the same files as all of them.
        let single = try run("/usr/bin/env", ["NARRATOR_JOBS=1", Repo.narrator, "render-all", library, "--to", dir.file("single"), "--seed", "7"])
        #expect(single.status == 0 && single.stdout.contains("1 worker"), "\(single.stdout) \(single.stderr)")
        #expect(try Self.tree(dir.file("single")) == rendered)
    }

    @Test func aChainThatCannotRenderIsOneLineAndTheRestAreWritten() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let good = Repo.path("Audio/lessons/sfx/correct.wav")
        dir.write("lib/a.json", #"{"sampleRate": 48000, "clips": {"x": {"file": "\#(good)"}}, "chains": {"fine": [{"clip": "x"}], "typo": [{"clip": "y"}]}}"#)
        dir.write("lib/sub/b.json", #"{"sampleRate": 48000, "clips": {"x": {"file": "\#(good)"}}, "chains": {"also": [{"clip": "x"}, {"silence": 0.5}]}}"#)
        dir.write("lib/c.json", #"{"sampleRate": 48000, "chains": {}, "clips": 3}"#)
        // A chain id that would leave the output folder, and one that is no file name.
        dir.write("lib/d.json", #"{"sampleRate": 48000, "clips": {"x": {"file": "\#(good)"}}, "chains": {"../../escape": [{"clip": "x"}], "..": [{"clip": "x"}]}}"#)
        let result = try run(Repo.narrator, ["render-all", dir.file("lib"), "--to", dir.file("out"), "--ext", "flac"])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("a.json: chains.typo") && $0.contains("'y'") }, "\(result.stderr)")
        #expect(lines.contains { $0.contains("c.json") }, "\(result.stderr)")
        #expect(lines.contains { $0.contains("d.json: chains.../../escape: cannot be a file name") }, "\(result.stderr)")
        #expect(lines.last?.contains("4 chains or lessons could not be rendered") == true, "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("escape.flac")) && !FileManager.default.fileExists(atPath: dir.file("out/escape.flac")))
        #expect(Set(try Self.tree(dir.file("out")).keys) == ["a/fine.flac", "a/fine.cues.json", "sub/b/also.flac", "sub/b/also.cues.json"])
        for bad in [["--ext", "txt"], ["--ext", "opus", "--quality", "2"], ["--locale", "not a tag"]] {
            let refused = try run(Repo.narrator, ["render-all", dir.file("lib"), "--to", dir.file("no")] + bad)
            #expect(refused.status == 1 && refused.stderr.split(separator: "\n").count == 1, "\(bad): \(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.file("no")))
        }
    }
}
