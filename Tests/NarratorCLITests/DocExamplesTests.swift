import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// The examples of README.md and docs/*.md marked `<!-- runnable -->` (the fenced `sh` block
/// right after the mark) run as written: a page's blocks in order, in one `bash -e`, from a
/// folder that looks like the repository's root (its entries linked, so what they write lands
/// there), with the built `narrator` on PATH and `play` on a private sound server. An example
/// that drifts from the code fails here.
@Suite(.serialized) struct DocExamplesTests {
    /// Every page with runnable blocks, and the blocks.
    static func pages() throws -> [(page: String, blocks: [String])] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: Repo.path("docs")).filter { $0.hasSuffix(".md") }.sorted()
        return try (["README.md"] + docs.map { "docs/" + $0 }).compactMap { page in
            let text = try String(contentsOfFile: Repo.path(page), encoding: .utf8)
            var blocks: [String] = []
            var lines = text.split(separator: "\n", omittingEmptySubsequences: false)[...]
            while let mark = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "<!-- runnable -->" }) {
                lines = lines[(mark + 1)...]
                guard lines.first == "```sh" else {
                    Issue.record("\(page): a runnable mark not followed by a ```sh block")
                    break
                }
                lines = lines.dropFirst()
                guard let end = lines.firstIndex(of: "```") else { break }
                blocks.append(lines[..<end].joined(separator: "\n"))
                lines = lines[(end + 1)...]
            }
            return blocks.isEmpty ? nil : (page, blocks)
        }
    }

    /// The README's picture is what `narrator plot` draws of the sample chain today.
    @Test func theReadmesPictureIsTheSampleChainsPlot() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let readme = try String(contentsOfFile: Repo.path("README.md"), encoding: .utf8)
        #expect(readme.contains("](docs/images/sample-chain.svg)"))
        let drawn = try run(
            Repo.narrator, ["plot", "Timings/lessons/sample.json", "--chain", "correct", "--seed", "7", "--output", dir.file("chain.svg")],
            cwd: Repo.root.path)
        try #require(drawn.status == 0, "\(drawn.stderr)")
        let committed = try Data(contentsOf: URL(fileURLWithPath: Repo.path("docs/images/sample-chain.svg")))
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("chain.svg"))) == committed,
                "docs/images/sample-chain.svg is not today's plot: make it again with narrator plot Timings/lessons/sample.json --chain correct --seed 7 --output docs/images/sample-chain.svg")
    }

    /// The lesson examples of docs/*.md marked `<!-- runnable: lesson FOLDER -->` (the fenced
    /// `json` block right after the mark): each, written as a lesson file into FOLDER of the
    /// repository (a copy of the path whose other entries are linked, so nothing lands in the
    /// checkout), validates with no error and lays out every one of its chains.
    static func lessonExamples() throws -> [(page: String, folder: String, json: String)] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: Repo.path("docs")).filter { $0.hasSuffix(".md") }.sorted()
        var examples: [(String, String, String)] = []
        for page in docs.map({ "docs/" + $0 }) {
            let lines = try String(contentsOfFile: Repo.path(page), encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() {
                let text = line.trimmingCharacters(in: .whitespaces)
                guard text.hasPrefix("<!-- runnable: lesson "), text.hasSuffix(" -->") else { continue }
                let folder = String(text.dropFirst("<!-- runnable: lesson ".count).dropLast(" -->".count))
                guard index + 1 < lines.count, lines[index + 1] == "```json", let end = lines[(index + 2)...].firstIndex(of: "```") else {
                    Issue.record("\(page): a lesson mark not followed by a ```json block")
                    continue
                }
                examples.append((page, folder, lines[(index + 2)..<end].joined(separator: "\n")))
            }
        }
        return examples
    }

    @Test func everyLessonExampleValidatesAndPlays() throws {
        let examples = try Self.lessonExamples()
        #expect(examples.contains { $0.page == "docs/lessons.md" }, "the lesson format's example is marked")
        for (page, folder, json) in examples {
            let dir = try TempDir.repoLookalike()
            defer { dir.remove() }
            // FOLDER made real, level by level, its other entries linked.
            var real = dir.path
            var repo = Repo.root.path
            for component in folder.split(separator: "/").map(String.init) {
                try FileManager.default.removeItem(atPath: real + "/" + component)
                try FileManager.default.createDirectory(atPath: real + "/" + component, withIntermediateDirectories: false)
                repo += "/" + component
                real += "/" + component
                for entry in try FileManager.default.contentsOfDirectory(atPath: repo) {
                    try FileManager.default.createSymbolicLink(atPath: real + "/" + entry, withDestinationPath: repo + "/" + entry)
                }
            }
            let lesson = real + "/docs-example.json"
            try json.write(toFile: lesson, atomically: true, encoding: .utf8)
            let checked = try run(Repo.narrator, ["validate", "--json", lesson], cwd: dir.path)
            let report = (try? JSONSerialization.jsonObject(with: Data(checked.stdout.utf8))) as? [String: Any]
            #expect(checked.status == 0 && report?["errors"] as? Int == 0, "\(page): \(checked.stdout.suffix(1500)) \(checked.stderr)")
            let chains = try #require((try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])?["chains"] as? [String: Any])
            #expect(!chains.isEmpty)
            for chain in chains.keys.sorted() {
                let cues = try run(Repo.narrator, ["cues", lesson, "--chain", chain], cwd: dir.path)
                #expect(cues.status == 0 && cues.stdout.contains("\"chainEnd\""), "\(page): chain \(chain): \(cues.stderr)")
            }
        }
    }

    @Test func theReadmesFirstLessonIsRunnable() throws {
        let readme = try #require(try Self.pages().first { $0.page == "README.md" })
        #expect(readme.blocks.count >= 3, "the sample, synth, the lesson")
        #expect(readme.blocks.joined().contains("narrator synth") && readme.blocks.joined().contains("--activity"))
    }

    @Test(.timeLimit(.minutes(5)), .requires(PulseTestServer.isAvailable, "play needs the PulseAudio test server"))
    func everyRunnableExampleRuns() throws {
        let server = try PulseTestServer()
        defer { server.stop() }
        for (page, blocks) in try Self.pages() {
            let dir = try TempDir.repoLookalike()
            defer { dir.remove() }
            let script = dir.write("examples.sh", "set -euo pipefail\n" + blocks.joined(separator: "\n"))
            var variables = server.clientVariables
            variables["PATH"] = URL(fileURLWithPath: Repo.narrator).deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            variables["XDG_RUNTIME_DIR"] = dir.path
            let result = try run("/usr/bin/env", variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + ["bash", script], cwd: dir.path)
            #expect(result.status == 0, "\(page): exit \(result.status): \(result.stderr.suffix(2000))")
            if page == "README.md" {
                // What the first lesson made.
                for file in ["correct.wav", "correct.json", "my-lesson/lesson.json", "my-lesson/right.wav", "my-lesson/right.svg"] {
                    #expect(FileManager.default.fileExists(atPath: dir.file(file)), "README made \(file)")
                }
                #expect(result.stdout.contains("\"type\":\"idlePrompt\""), "the simulated activity's hint")
                #expect(result.stdout.contains("\"result\":\"correct\""), "the right answer")
            }
        }
    }
}
