import ArgumentParser
import Foundation
import NarratorCore

struct Merge: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Join the reports of the N workers of a sharded batch into the report of one run.",
        discussion: """
            Each worker of `narrator align --manifest M --shard K/N --report PART` (or of \
            validate or render-all with --shard and --report) writes the results of its own \
            items. merge checks that the parts are shards 1/N … N/N of one \
            manifest, once each and complete, and writes the report an unsharded run writes, \
            byte for byte (docs/align.md, docs/cluster.md).

            Example:
              narrator merge Timings/batch/sight-words.part2.jsonl \\
                Timings/batch/sight-words.part1.jsonl --to sight-words.jsonl
            """)

    @Argument(help: "The workers' reports, in any order.")
    var parts: [String]

    @Option(help: "The report to write.")
    var to: String

    func validate() throws {
        guard !parts.isEmpty else { throw ValidationError("give the workers' reports") }
    }

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            var read: [(path: String, data: Data)] = []
            for part in parts { read.append((part, try InputFile.read(path: part, limit: InputFile.documentLimit))) }
            let merged = try BatchReport.merge(read)
            try AtomicFile.write(merged, to: to)
            print("\(Wording.count(parts.count, "report")) merged → \(to)")
        }
    }
}
