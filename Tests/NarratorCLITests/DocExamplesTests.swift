import Foundation
import NarratorTestSupport
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

    @Test func theReadmesFirstLessonIsRunnable() throws {
        let readme = try #require(try Self.pages().first { $0.page == "README.md" })
        #expect(readme.blocks.count >= 3, "the sample, synth, the lesson")
        #expect(readme.blocks.joined().contains("narrator synth") && readme.blocks.joined().contains("--activity"))
    }

    @Test(.timeLimit(.minutes(5)), .enabled(if: PulseTestServer.isAvailable, "play needs the PulseAudio test server"))
    func everyRunnableExampleRuns() throws {
        let server = try PulseTestServer()
        defer { server.stop() }
        for (page, blocks) in try Self.pages() {
            let dir = HelpTests.repoLookalike()
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
