import Foundation
import NarratorTestSupport
import Testing

/// The four batch commands split over workers: `--shard auto` from a job array's environment,
/// `render-all` and `pack` sharded, and what `merge` and `pack --finish` make of the parts:
/// byte for byte what one unsharded run writes, and a refusal when a shard is missing.
/// (The same on a real Slurm cluster: `make test-slurm`, scripts/test-slurm.sh.)
@Suite("sharded batches")
struct ShardedBatchTests {
    /// The variables a scheduler may have set in the test's own environment, unset for each run.
    static let schedulerVariables = [
        "SLURM_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP",
        "SLURM_ARRAY_TASK_COUNT", "JOB_COMPLETION_INDEX", "NARRATOR_SHARD_COUNT",
    ]

    /// narrator with exactly these scheduler variables.
    static func narrator(_ arguments: [String], scheduler: [String: String] = [:], cwd: String? = nil) throws -> ProcessResult {
        let unset = schedulerVariables.flatMap { ["-u", $0] }
        let set = scheduler.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return try run("/usr/bin/env", unset + set + [Repo.narrator] + arguments, cwd: cwd)
    }

    /// Slurm's variables for task `id` of `sbatch --array=min-max`.
    static func slurm(_ id: Int, _ min: Int, _ max: Int) -> [String: String] {
        [
            "SLURM_JOB_ID": "\(100 + id)", "SLURM_ARRAY_TASK_ID": "\(id)", "SLURM_ARRAY_TASK_MIN": "\(min)", "SLURM_ARRAY_TASK_MAX": "\(max)",
            "SLURM_ARRAY_TASK_STEP": "1", "SLURM_ARRAY_TASK_COUNT": "\(max - min + 1)",
        ]
    }

    /// A Kubernetes Indexed Job pod's: its index, and the count the manifest passes.
    static func kubernetes(_ index: Int, _ count: Int) -> [String: String] {
        ["JOB_COMPLETION_INDEX": "\(index)", "NARRATOR_SHARD_COUNT": "\(count)"]
    }

    static func read(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }
    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// Without a job array around it, `--shard auto` is one line naming it, exit 1, and nothing
    /// is written; so is an array Narrator cannot number.
    @Test func autoWithoutAJobArrayIsOneLine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("batch/m.jsonl", #"{"audio": "a.wav", "text": "hi", "timings": "a.json"}"# + "\n")
        let library = Repo.path("Timings/lessons")
        let commands: [[String]] = [
            ["align", "--manifest", dir.file("batch/m.jsonl"), "--to", dir.file("out"), "--report", dir.file("out.jsonl")],
            ["validate", library, "--report", dir.file("out.jsonl")],
            ["render-all", library, "--to", dir.file("out"), "--report", dir.file("out.jsonl")],
            ["pack", library, "--to", dir.file("out"), "--format", "flac"],
        ]
        for command in commands {
            for (scheduler, message) in [
                ([:], "--shard auto: no job array here"),
                (["SLURM_JOB_ID": "3"], "--shard auto: a Slurm job but not an array task"),
                (Self.slurm(1, 1, 3).merging(Self.kubernetes(2, 3)) { a, _ in a }, "--shard auto: Slurm says shard 1/3"),
            ] as [([String: String], String)] {
                let result = try Self.narrator(command + ["--shard", "auto"], scheduler: scheduler)
                #expect(result.status == 1, "\(command[0]): \(result.stdout)")
                let lines = result.stderr.split(separator: "\n")
                #expect(lines.count == 1 && lines[0].contains(message), "\(command[0]): \(result.stderr)")
                #expect(!Self.exists(dir.file("out")) && !Self.exists(dir.file("out.jsonl")), "\(command[0]) wrote something")
            }
        }
        let finishing = try Self.narrator(["pack", library, "--to", dir.file("out"), "--format", "flac", "--finish", "--shard", "1/2"])
        #expect(finishing.status != 0 && finishing.stderr.contains("--finish runs once after the shards"), "\(finishing.stderr)")
    }

    /// validate and align: `--shard auto` is the K/N the array gives, in the report's header too.
    @Test func autoIsTheShardTheArrayGives() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = Repo.path("Timings/lessons")
        let byHand = try Self.narrator(["validate", library, "--shard", "2/3", "--report", dir.file("hand.jsonl")])
        let auto = try Self.narrator(["validate", library, "--shard", "auto", "--report", dir.file("auto.jsonl")], scheduler: Self.slurm(1, 0, 2))
        #expect(byHand.status == auto.status, "\(auto.stderr)")
        #expect(try Self.read(dir.file("auto.jsonl")) == (try Self.read(dir.file("hand.jsonl"))))
        #expect(String(decoding: try Self.read(dir.file("auto.jsonl")), as: UTF8.self).hasPrefix(#"{"report": "validate""#))
        // align: items whose recordings are missing fail fast, but the report says whose they were.
        dir.write("batch/m.jsonl", (1...4).map { #"{"audio": "none\#($0).wav", "text": "hi", "timings": "t\#($0).json"}"# }.joined(separator: "\n") + "\n")
        let alignByHand = try Self.narrator(["align", "--manifest", dir.file("batch/m.jsonl"), "--to", dir.file("a"), "--shard", "3/4", "--report", dir.file("a-hand.jsonl")])
        let alignAuto = try Self.narrator(
            ["align", "--manifest", dir.file("batch/m.jsonl"), "--to", dir.file("a"), "--shard", "auto", "--report", dir.file("a-auto.jsonl")],
            scheduler: Self.kubernetes(2, 4))
        #expect(alignByHand.status == 1 && alignAuto.status == 1)
        let report = String(decoding: try Self.read(dir.file("a-auto.jsonl")), as: UTF8.self)
        #expect(report.contains(#""shard": "3/4"}"#) && report.contains(#"{"item": 3, "audio": "none3.wav""#), "\(report)")
        #expect(try Self.read(dir.file("a-auto.jsonl")) == (try Self.read(dir.file("a-hand.jsonl"))))
    }

    /// render-all by three Slurm tasks (an array from 0): each writes its own chains, and the
    /// merged report and the files are the unsharded run's, byte for byte. Without one shard's
    /// report, merge refuses and writes nothing.
    @Test func renderAllShardedIsOneRun() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // Lessons of the repository's sounds, and a lesson that does not load and a chain that
        // cannot be a file: items of their own, reported by the worker whose items they are.
        let sounds = ["sfx/correct.wav", "sfx/whoosh.wav", "congrats/great-job.wav", "sight-words/part1.wav"].map { Repo.path("Audio/lessons/" + $0) }
        for lesson in 1...7 {
            let clips = sounds.enumerated().map { #""c\#($0.offset)": {"file": "\#($0.element)"}"# }.joined(separator: ", ")
            let chains = (0..<3).map { #""chain\#($0)": [{"clip": "c\#(($0 + lesson) % 4)"}, {"silence": 0.1}, {"clip": "c\#(($0 + 2 * lesson) % 4)"}]"# }
            dir.write("lib/set\(lesson % 2)/lesson\(lesson).json", #"{"sampleRate": 48000, "clips": {\#(clips)}, "chains": {\#(chains.joined(separator: ", "))}}"#)
        }
        let good = sounds[0]
        dir.write("lib/broken.json", #"{"sampleRate": 48000, "chains": {}, "clips": 3}"#)
        dir.write("lib/odd.json", #"{"sampleRate": 48000, "clips": {"x": {"file": "\#(good)"}}, "chains": {"..": [{"clip": "x"}], "ok": [{"clip": "x"}]}}"#)
        let whole = try Self.narrator(["render-all", dir.file("lib"), "--to", dir.file("whole"), "--seed", "7", "--ext", "flac", "--report", dir.file("whole.jsonl")])
        #expect(whole.status == 1 && whole.stderr.contains("2 chains or lessons could not be rendered"), "\(whole.stderr)")
        var parts: [String] = []
        var failed = 0
        for id in 0...2 {
            let part = dir.file("part\(id).jsonl")
            let result = try Self.narrator(
                ["render-all", dir.file("lib"), "--to", dir.file("sharded"), "--seed", "7", "--ext", "flac", "--shard", "auto", "--report", part],
                scheduler: Self.slurm(id, 0, 2))
            #expect(result.stdout.contains("(shard \(id + 1)/3: "), "\(result.stdout)")
            failed += result.status == 0 ? 0 : 1
            parts.append(part)
        }
        // The two refused items are the workers' whose items they are (not every worker's).
        #expect((1...2).contains(failed))
        let wholeTree = try RenderAllTests.tree(dir.file("whole"))
        #expect(wholeTree.count == 2 * (7 * 3 + 1))
        #expect(try RenderAllTests.tree(dir.file("sharded")) == wholeTree)
        let merged = try Self.narrator(["merge"] + parts.reversed() + ["--to", dir.file("merged.jsonl")])
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(try Self.read(dir.file("merged.jsonl")) == (try Self.read(dir.file("whole.jsonl"))))
        let text = String(decoding: try Self.read(dir.file("whole.jsonl")), as: UTF8.self)
        #expect(text.hasPrefix(#"{"report": "render-all", "manifest": {"items": "#) && text.contains(#""chain": "..", "error": "#), "\(text)")
        // A shard missing: one line, nothing written.
        let missing = try Self.narrator(["merge", parts[0], parts[2], "--to", dir.file("incomplete.jsonl")])
        #expect(missing.status == 1 && missing.stderr.contains("missing the report of shard 2/3"), "\(missing.stderr)")
        #expect(missing.stderr.split(separator: "\n").count == 1 && !Self.exists(dir.file("incomplete.jsonl")))
        // Parts rendered with other options are another batch.
        _ = try Self.narrator(["render-all", dir.file("lib"), "--to", dir.file("other"), "--seed", "8", "--ext", "flac", "--shard", "2/3", "--report", dir.file("other.jsonl")])
        let mixed = try Self.narrator(["merge", parts[0], dir.file("other.jsonl"), parts[2], "--to", dir.file("mixed.jsonl")])
        #expect(mixed.status == 1 && mixed.stderr.contains("another manifest"), "\(mixed.stderr)")
    }

    /// pack by two Kubernetes pods, then `pack --finish`: the folder is the unsharded pack's,
    /// byte for byte, markers gone. With a shard's marker missing, --finish refuses and writes
    /// no lesson; after that shard runs, it completes.
    @Test func packShardedThenFinishedIsOneRun() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = Repo.path("Timings/lessons")
        let whole = try Self.narrator(["pack", library, "--to", dir.file("whole"), "--format", "flac"])
        try #require(whole.status == 0, "\(whole.stderr)")
        let sharded = dir.file("sharded")
        let second = try Self.narrator(["pack", library, "--to", sharded, "--format", "flac", "--shard", "auto"], scheduler: Self.kubernetes(1, 2))
        #expect(second.status == 0 && second.stdout.contains("shard 2/2: "), "\(second.stdout) \(second.stderr)")
        #expect(Self.exists(sharded + "/.narrator-pack/shard-2-of-2.jsonl"))
        // Shard 1 has not run: refused, and no lesson written.
        let early = try Self.narrator(["pack", library, "--to", sharded, "--format", "flac", "--finish"])
        #expect(early.status == 1 && early.stderr.contains(".narrator-pack: missing the marker of shard 1/2: that worker has not finished"), "\(early.stderr)")
        #expect(early.stderr.split(separator: "\n").count == 1)
        #expect(try RenderAllTests.tree(sharded).keys.allSatisfy { !$0.hasSuffix(".json") || $0.hasPrefix(".narrator-pack/") })
        let first = try Self.narrator(["pack", library, "--to", sharded, "--format", "flac", "--shard", "auto"], scheduler: Self.kubernetes(0, 2))
        #expect(first.status == 0, "\(first.stderr)")
        // Finished with other options than the shards': refused.
        let other = try Self.narrator(["pack", library, "--to", sharded, "--format", "flac", "--seed", "9", "--finish"])
        #expect(other.status == 1 && other.stderr.contains("their plans differ"), "\(other.stderr)")
        let finished = try Self.narrator(["pack", library, "--to", sharded, "--format", "flac", "--finish"])
        #expect(finished.status == 0, "\(finished.stderr)")
        #expect(finished.stdout == whole.stdout.replacingOccurrences(of: dir.file("whole"), with: sharded))
        #expect(!Self.exists(sharded + "/.narrator-pack"))
        let wholeTree = try RenderAllTests.tree(dir.file("whole"))
        #expect(wholeTree.count > 20)
        #expect(try RenderAllTests.tree(sharded) == wholeTree)
    }
}
