/// `--shard auto`: this worker's K of N read from the job array it runs in, so that a job script
/// or a manifest names no number. Two schedulers are read:
///
/// - a Slurm array task (`sbatch --array=0-9`, `1-10`, `0-15:4`): `SLURM_ARRAY_TASK_ID`, with the
///   array's `SLURM_ARRAY_TASK_MIN` and `SLURM_ARRAY_TASK_MAX` (and `SLURM_ARRAY_TASK_STEP`) or
///   its `SLURM_ARRAY_TASK_COUNT`: K = (ID − MIN) / STEP + 1, N = (MAX − MIN) / STEP + 1. An array
///   that is not one range with one step (`--array=1,4,9`) has no K of N and is refused;
/// - a Kubernetes Indexed Job: `JOB_COMPLETION_INDEX` (0-based), and the count the manifest
///   passes in `NARRATOR_SHARD_COUNT` (the Job's `completions`; Kubernetes does not pass it):
///   K = index + 1, N = count.
///
/// Neither, a half of one, or both giving different shards is one error naming the variable.
extension Shard {
    /// The variable a Kubernetes Indexed Job's manifest sets to its `completions`.
    public static let countVariable = "NARRATOR_SHARD_COUNT"

    /// `--shard` as given: nil (the whole batch), `auto` (from `environment`), or `K/N`.
    public static func resolve(_ option: String?, environment: [String: String]) throws(NarratorError) -> Shard {
        guard let option else { return .whole }
        return option == "auto" ? try Shard(environment: environment) : try Shard(parsing: option)
    }

    /// This worker's shard, from its job array's environment.
    public init(environment: [String: String]) throws(NarratorError) {
        let slurm = try Self.slurm(environment)
        let kubernetes = try Self.kubernetes(environment)
        switch (slurm, kubernetes) {
        case (let slurm?, let kubernetes?):
            guard slurm == kubernetes else {
                throw NarratorError(
                    file: "--shard auto",
                    "Slurm says shard \(slurm) (SLURM_ARRAY_TASK_*) and Kubernetes shard \(kubernetes) (JOB_COMPLETION_INDEX, \(Self.countVariable)): unset one, or give --shard K/N")
            }
            self = slurm
        case (let one?, nil), (nil, let one?):
            self = one
        case (nil, nil):
            let plainSlurmJob = environment["SLURM_JOB_ID"] != nil
            throw NarratorError(
                file: "--shard auto",
                plainSlurmJob
                    ? "a Slurm job but not an array task (no SLURM_ARRAY_TASK_ID): submit it with sbatch --array, or give --shard K/N"
                    : "no job array here: neither SLURM_ARRAY_TASK_ID (a Slurm array) nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set; give --shard K/N")
        }
    }

    /// A variable's value as a whole number ≥ 0 (at most 9 digits), or nil when unset.
    private static func number(_ name: String, _ environment: [String: String]) throws(NarratorError) -> Int? {
        guard let text = environment[name] else { return nil }
        guard (1...9).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(text) else {
            throw NarratorError(file: "--shard auto", "\(name) is '\(text)', not a whole number")
        }
        return value
    }

    private static func slurm(_ environment: [String: String]) throws(NarratorError) -> Shard? {
        guard let id = try number("SLURM_ARRAY_TASK_ID", environment) else { return nil }
        let max = try number("SLURM_ARRAY_TASK_MAX", environment)
        let count = try number("SLURM_ARRAY_TASK_COUNT", environment)
        let step = try number("SLURM_ARRAY_TASK_STEP", environment) ?? 1
        guard let min = try number("SLURM_ARRAY_TASK_MIN", environment) else {
            throw NarratorError(
                file: "--shard auto",
                "SLURM_ARRAY_TASK_ID is \(id) but SLURM_ARRAY_TASK_MIN is not set: the array's first index is needed to number its tasks (an array from 0 or from 1)")
        }
        guard step >= 1 else { throw NarratorError(file: "--shard auto", "SLURM_ARRAY_TASK_STEP must be 1 or more, got \(step)") }
        let n: Int
        switch (max, count) {
        case (let max?, let count):
            guard max >= min else { throw NarratorError(file: "--shard auto", "SLURM_ARRAY_TASK_MAX (\(max)) is below SLURM_ARRAY_TASK_MIN (\(min))") }
            n = (max - min) / step + 1
            if let count, count != n {
                throw NarratorError(
                    file: "--shard auto",
                    "SLURM_ARRAY_TASK_COUNT is \(count) but the array \(min)-\(max):\(step) has \(n) tasks: an array that is not one range with one step has no K of N; give --shard K/N")
            }
        case (nil, let count?):
            n = count
        case (nil, nil):
            throw NarratorError(
                file: "--shard auto", "SLURM_ARRAY_TASK_ID is \(id) but neither SLURM_ARRAY_TASK_MAX nor SLURM_ARRAY_TASK_COUNT is set: the array's size is needed")
        }
        guard id >= min, (id - min) % step == 0, (id - min) / step < n else {
            throw NarratorError(
                file: "--shard auto", "SLURM_ARRAY_TASK_ID \(id) is not a task of the array from \(min), \(n) tasks, step \(step)")
        }
        return try Self.checked(index: (id - min) / step + 1, count: n, from: "the Slurm array")
    }

    private static func kubernetes(_ environment: [String: String]) throws(NarratorError) -> Shard? {
        let index = try number("JOB_COMPLETION_INDEX", environment)
        let count = try number(countVariable, environment)
        switch (index, count) {
        case (nil, nil):
            return nil
        case (let index?, nil):
            throw NarratorError(
                file: "--shard auto",
                "JOB_COMPLETION_INDEX is \(index) but \(countVariable) is not set: set it in the Job's manifest to its completions")
        case (nil, let count?):
            throw NarratorError(
                file: "--shard auto", "\(countVariable) is \(count) but JOB_COMPLETION_INDEX is not set: not a pod of an Indexed Job (completionMode: Indexed)")
        case (let index?, let count?):
            guard index < count else {
                throw NarratorError(file: "--shard auto", "JOB_COMPLETION_INDEX \(index) is not below \(countVariable) \(count): the count must be the Job's completions")
            }
            return try Self.checked(index: index + 1, count: count, from: "the Indexed Job")
        }
    }

    private static func checked(index: Int, count: Int, from source: String) throws(NarratorError) -> Shard {
        do throws(NarratorError) {
            return try Shard(parsing: "\(index)/\(count)", source: "--shard auto")
        } catch {
            throw NarratorError(file: "--shard auto", "\(source) gives shard \(index)/\(count): \(error.message)")
        }
    }
}
