import Foundation
import NarratorTestSupport
import Testing

/// docs/cluster.md's recipes: the Slurm job script is the one `make test-slurm` submits, and the
/// Kubernetes manifest has the shape of Indexed Jobs running the same commands.
@Suite("cluster recipes")
struct ClusterRecipeTests {
    static let steps = ["align", "validate", "render-all", "pack"]

    /// The fenced blocks of `language` in the page.
    static func blocks(_ language: String) throws -> [String] {
        let page = try String(contentsOfFile: Repo.path("docs/cluster.md"), encoding: .utf8)
        var found: [String] = []
        var current: [String]?
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```" + language {
                current = []
            } else if current != nil, line == "```" {
                found.append(current!.map { $0 + "\n" }.joined())
                current = nil
            } else {
                current?.append(String(line))
            }
        }
        return found
    }

    /// The options (`--x`, with `--shard`'s value) of the `narrator STEP …` command in `text`.
    static func options(of step: String, in text: String) -> [String] {
        // Commands, not comments.
        let commands = text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("#") }.joined(separator: "\n")
        let words = commands.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard let start = words.indices.first(where: { words[$0] == "narrator" && $0 + 1 < words.count && words[$0 + 1] == step }) else { return [] }
        let end = words[start...].firstIndex(where: { $0 == ";;" || $0 == "&&" || $0.hasPrefix(">") }) ?? words.count
        var options: [String] = []
        for index in start..<end where words[index].hasPrefix("--") {
            options.append(words[index])
            if ["--shard", "--format", "--ext", "--seed"].contains(words[index]) { options.append(words[index + 1]) }
        }
        return options
    }

    @Test func theSlurmScriptIsTheOneTheTestSubmits() throws {
        let script = try String(contentsOfFile: Repo.path("scripts/slurm/narrator-task.sbatch"), encoding: .utf8)
        #expect(try Self.blocks("bash") == [script])
        let test = try String(contentsOfFile: Repo.path("scripts/test-slurm.sh"), encoding: .utf8)
        #expect(test.contains("job=$repo/scripts/slurm/narrator-task.sbatch"))
        for step in Self.steps {
            #expect(Self.options(of: step, in: script).contains("auto"), "\(step)")
        }
    }

    @Test func theKubernetesManifestIsIndexedJobsWithTheSameCommands() throws {
        let manifest = try #require(try Self.blocks("yaml").first)
        let script = try String(contentsOfFile: Repo.path("scripts/slurm/narrator-task.sbatch"), encoding: .utf8)
        let dir = TempDir()
        defer { dir.remove() }
        let file = dir.write("jobs.yaml", manifest)
        let hasYAML = try runTool("python3", ["-c", "import yaml"]).status == 0
        if hasYAML {
            let parsed = try runTool(
                "python3", ["-c", "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))", file])
            try #require(parsed.status == 0, "\(parsed.stderr)")
            let documents = try #require(try JSONSerialization.jsonObject(with: Data(parsed.stdout.utf8)) as? [[String: Any]])
            #expect(documents.count == 5)
            var jobs: [String: [String: Any]] = [:]
            for document in documents {
                #expect(document["apiVersion"] as? String == "batch/v1" && document["kind"] as? String == "Job")
                let name = try #require((document["metadata"] as? [String: Any])?["name"] as? String)
                jobs[name] = document
            }
            func container(_ job: [String: Any]) throws -> [String: Any] {
                let spec = try #require(job["spec"] as? [String: Any])
                let pod = try #require((spec["template"] as? [String: Any])?["spec"] as? [String: Any])
                return try #require((pod["containers"] as? [[String: Any]])?.first)
            }
            func commandLine(_ container: [String: Any]) -> String {
                ((container["command"] as? [String] ?? []) + (container["args"] as? [String] ?? [])).joined(separator: " ")
            }
            for step in Self.steps {
                let job = try #require(jobs["narrator-\(step)"], "no Job for \(step)")
                let spec = try #require(job["spec"] as? [String: Any])
                #expect(spec["completionMode"] as? String == "Indexed", "\(step)")
                let completions = try #require(spec["completions"] as? Int)
                #expect(completions >= 1 && (spec["parallelism"] as? Int ?? completions) <= completions)
                let main = try container(job)
                let env = (main["env"] as? [[String: Any]] ?? []).reduce(into: [String: String]()) { $0[$1["name"] as? String ?? ""] = $1["value"] as? String }
                // The count --shard auto reads is the Job's completions.
                #expect(env["NARRATOR_SHARD_COUNT"] == String(completions), "\(step): \(env)")
                let line = commandLine(main)
                #expect(Self.options(of: step, in: line) == Self.options(of: step, in: script), "\(step): \(line)")
                if step != "pack" { #expect(line.contains("parts/\(step)-${JOB_COMPLETION_INDEX}.jsonl"), "\(step)") }
            }
            let finish = commandLine(try container(try #require(jobs["narrator-finish"])))
            for step in Self.steps.dropLast() { #expect(finish.contains("narrator merge /data/out/parts/\(step)-*.jsonl --to"), "\(step)") }
            #expect(finish.contains("narrator pack") && finish.contains("--finish"))
        } else {
            // Without PyYAML: its shape line by line.
            let lines = manifest.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            #expect(lines.filter { $0 == "kind: Job" }.count == 5)
            #expect(lines.filter { $0 == "completionMode: Indexed" }.count == 4)
            #expect(lines.filter { $0 == "- name: NARRATOR_SHARD_COUNT" }.count == 4)
            #expect(!manifest.contains("\t"), "YAML is indented with spaces")
            for step in Self.steps {
                #expect(Self.options(of: step, in: manifest) == Self.options(of: step, in: script), "\(step)")
            }
        }
    }
}
