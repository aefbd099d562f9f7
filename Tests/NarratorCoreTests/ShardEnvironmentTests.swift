import Foundation
import NarratorCore
import Testing

/// `--shard auto`: K and N from a Slurm array task's or a Kubernetes Indexed Job pod's
/// environment, as the schedulers set it (the Slurm variables as slurm-wlm 22.05 sets them for
/// `sbatch --array`, seen in `make test-slurm`).
@Suite struct ShardEnvironmentTests {
    /// A Slurm array task's variables, as sbatch sets them for `--array=MIN-MAX:STEP`.
    static func slurm(id: Int, min: Int, max: Int, step: Int = 1) -> [String: String] {
        [
            "SLURM_JOB_ID": "77", "SLURM_ARRAY_JOB_ID": "70", "SLURM_ARRAY_TASK_ID": "\(id)", "SLURM_ARRAY_TASK_MIN": "\(min)",
            "SLURM_ARRAY_TASK_MAX": "\(max)", "SLURM_ARRAY_TASK_STEP": "\(step)", "SLURM_ARRAY_TASK_COUNT": "\((max - min) / step + 1)",
        ]
    }

    static func shard(_ environment: [String: String]) throws -> String { try Shard(environment: environment).description }

    /// Arrays from 0 and from 1, with steps: every task gets its own K of the same N.
    @Test(arguments: [(0, 9, 1), (1, 10, 1), (0, 15, 4), (3, 21, 3), (5, 5, 1), (0, 99_999, 1)])
    func slurmArrays(min: Int, max: Int, step: Int) throws {
        let n = (max - min) / step + 1
        var seen: Set<String> = []
        for id in stride(from: min, through: max, by: step).prefix(50) {
            let shard = try Self.shard(Self.slurm(id: id, min: min, max: max, step: step))
            #expect(shard == "\((id - min) / step + 1)/\(n)")
            seen.insert(shard)
        }
        #expect(seen.count == Swift.min(n, 50))
        // The last task is N/N.
        #expect(try Self.shard(Self.slurm(id: min + (n - 1) * step, min: min, max: max, step: step)) == "\(n)/\(n)")
    }

    /// Only the count (no MAX, no STEP): from MIN.
    @Test func slurmCountWithoutMax() throws {
        #expect(try Self.shard(["SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "4"]) == "1/4")
        #expect(try Self.shard(["SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"]) == "4/4")
    }

    /// A Kubernetes Indexed Job: the index from 0, the count its manifest passes.
    @Test func kubernetesIndexedJob() throws {
        #expect(try Self.shard(["JOB_COMPLETION_INDEX": "0", "NARRATOR_SHARD_COUNT": "3"]) == "1/3")
        #expect(try Self.shard(["JOB_COMPLETION_INDEX": "2", "NARRATOR_SHARD_COUNT": "3"]) == "3/3")
        // Both, agreeing (a Slurm job run from a pod, say): fine.
        var both = Self.slurm(id: 2, min: 1, max: 3)
        both["JOB_COMPLETION_INDEX"] = "1"
        both["NARRATOR_SHARD_COUNT"] = "3"
        #expect(try Self.shard(both) == "2/3")
    }

    /// `--shard` as given: none, K/N, auto.
    @Test func resolve() throws {
        #expect(try Shard.resolve(nil, environment: Self.slurm(id: 1, min: 1, max: 2)) == .whole)
        #expect(try Shard.resolve("2/5", environment: [:]).description == "2/5")
        #expect(try Shard.resolve("auto", environment: Self.slurm(id: 2, min: 1, max: 2)).description == "2/2")
        #expect(throws: NarratorError.self) { try Shard.resolve("Auto", environment: Self.slurm(id: 2, min: 1, max: 2)) }
    }

    /// Each refusal is one line naming `--shard auto` and the variable at fault.
    @Test(arguments: [
        ([:], "neither SLURM_ARRAY_TASK_ID"),
        (["SLURM_JOB_ID": "5"], "not an array task"),
        (["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MAX": "9"], "SLURM_ARRAY_TASK_MIN is not set"),
        (["SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "0"], "neither SLURM_ARRAY_TASK_MAX nor SLURM_ARRAY_TASK_COUNT"),
        (["SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"], "SLURM_ARRAY_TASK_ID is 'x'"),
        (["SLURM_ARRAY_TASK_ID": "-1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"], "not a whole number"),
        (["SLURM_ARRAY_TASK_ID": "", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"], "not a whole number"),
        (["SLURM_ARRAY_TASK_ID": "9999999999", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"], "not a whole number"),
        (["SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"], "not a task of the array"),
        (["SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "3"], "not a task of the array"),
        (["SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_STEP": "4"], "not a task of the array"),
        (["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "8", "SLURM_ARRAY_TASK_STEP": "0"], "STEP must be 1 or more"),
        (["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "4", "SLURM_ARRAY_TASK_MAX": "2"], "below SLURM_ARRAY_TASK_MIN"),
        // --array=1,4,9: three tasks, but not one range with one step.
        (["SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "9", "SLURM_ARRAY_TASK_COUNT": "3"], "not one range with one step"),
        (["SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "100000"], "N must be between 1 and 100000"),
        (["JOB_COMPLETION_INDEX": "0"], "NARRATOR_SHARD_COUNT is not set"),
        (["NARRATOR_SHARD_COUNT": "4"], "JOB_COMPLETION_INDEX is not set"),
        (["JOB_COMPLETION_INDEX": "4", "NARRATOR_SHARD_COUNT": "4"], "not below NARRATOR_SHARD_COUNT"),
        (["JOB_COMPLETION_INDEX": "0", "NARRATOR_SHARD_COUNT": "0"], "not below"),
        (["JOB_COMPLETION_INDEX": "1", "NARRATOR_SHARD_COUNT": "three"], "NARRATOR_SHARD_COUNT is 'three'"),
        (
            ["JOB_COMPLETION_INDEX": "0", "NARRATOR_SHARD_COUNT": "3", "SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "3"],
            "Slurm says shard 2/3"
        ),
    ] as [([String: String], String)])
    func refusals(environment: [String: String], message: String) {
        do {
            let shard = try Shard(environment: environment)
            Issue.record("\(environment): took shard \(shard)")
        } catch {
            #expect(error.file == "--shard auto")
            #expect(error.description.contains(message), "\(error.description)")
            #expect(!error.description.contains("\n"))
        }
    }
}
