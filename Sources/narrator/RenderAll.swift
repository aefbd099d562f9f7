import ArgumentParser
import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorKit
import Synchronization

struct RenderAll: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render-all",
        abstract: "Render every chain of every lesson of a library, with its cue sheet, on every core.",
        discussion: """
            Finds the lessons under LIBRARY (JSON with "sampleRate" and "chains") and renders \
            each chain, as `narrator render` does, to DIR/LESSON/CHAIN.EXT beside \
            DIR/LESSON/CHAIN.cues.json (LESSON is the lesson's path in the library without \
            .json). Chains render in parallel, at most one a core (NARRATOR_JOBS sets it); each \
            file is the same, byte for byte, as one `render` with the same --seed writes. A \
            chain that cannot be rendered is one line naming its lesson and chain; the others \
            are still written, and the exit status is 1.
            A batch over many machines: --shard K/N renders only this worker's items (every \
            chain of every lesson, in order, round robin; a lesson that does not load is one \
            item), each to its own files; --report writes their results as JSON Lines, and \
            `narrator merge` joins the N reports into the report of one unsharded run, \
            refusing a shard that is missing or did not finish. --shard auto takes K and N \
            from the job array it runs in (Slurm, a Kubernetes Indexed Job; docs/cluster.md).

            Examples:
              narrator render-all Timings/lessons --to rendered --ext flac --seed 7
              narrator render-all Timings/lessons --to rendered --seed 7 --shard 1/2 \\
                --report part1.jsonl
            """)

    @Argument(help: "The library: a folder searched for lessons.")
    var library: String

    @Option(help: "The folder to write into (made if missing).")
    var to: String

    @Option(help: "The audio files' format, by extension: wav, flac, ogg, opus or mp3.")
    var ext = "wav"

    @Option(help: "For ogg, opus and mp3: from 0 (smallest file) to 1 (best sound).")
    var quality: Double?

    @Option(help: "Seed for pool draws (the same for every chain, as `render --seed`).")
    var seed: UInt64 = 0

    @Option(help: "The narration's locale (a BCP 47 tag); each lesson falls back clip by clip to its default.")
    var locale: String?

    @Flag(inversion: .prefixedNo, help: "Draw a progress bar on stderr (default: when stderr is a terminal).")
    var progress: Bool?

    @Option(help: "Render only this worker's chains, K of N workers (e.g. 2/8), or auto: K and N from the Slurm array or Kubernetes Indexed Job it runs in.")
    var shard: String?

    @Option(help: "Write each chain's result (its frames, or its error) as JSON Lines, for `narrator merge`.")
    var report: String?

    /// One item of the batch: a chain to render, or a lesson or chain refused before rendering
    /// (reported by the worker whose item it is).
    enum Item {
        case render(lesson: String, name: String, chain: String)
        case refused(name: String, chain: String?, error: String)

        /// What the item is, for the batch's digest.
        var key: String {
            switch self {
            case .render(_, let name, let chain): "\(name)\t\(chain)"
            case .refused(let name, let chain, _): "\(name)\t\(chain ?? "")\t!"
            }
        }
    }

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            let part = try Shard.resolve(shard, environment: ProcessInfo.processInfo.environment)
            let type = try AudioFileType(path: "chain." + ext)
            try type.check(format: .s16, quality: quality, path: "--ext " + ext)
            if let locale, let problem = Lesson.localeTagProblem(locale) { throw NarratorError(file: "--locale", problem) }
            let (root, paths) = try Packer.lessons(inLibrary: library)

            // Every chain of every lesson, in the lessons' order then the chains'; a lesson that
            // does not load, or a chain that cannot be a file, is an item of its own. Every
            // worker lists them all (the same list), and renders its own.
            var items: [Item] = []
            var outputs: [String: String] = [:]
            for path in paths {
                let name = String(path.dropFirst(root.count + 1).dropLast(".json".count))
                do throws(NarratorError) {
                    let lesson = try Lesson.load(path: path)
                    for chain in lesson.chains.keys.sorted() {
                        // A chain id becomes a file name: nothing that leaves the lesson's folder.
                        guard !chain.isEmpty, chain != ".", chain != "..", !chain.contains("/"), !chain.contains("\0") else {
                            items.append(.refused(name: name, chain: chain, error: "\(path): chains.\(chain): cannot be a file name (empty, '.', '..' or with a '/')"))
                            continue
                        }
                        let key = (name + "/" + chain).lowercased()
                        if let other = outputs[key] {
                            items.append(.refused(name: name, chain: chain, error: "\(path): chains.\(chain): would be written where \(other) is"))
                            continue
                        }
                        outputs[key] = "\(path): chains.\(chain)"
                        items.append(.render(lesson: path, name: name, chain: chain))
                    }
                } catch {
                    items.append(.refused(name: name, chain: nil, error: error.description))
                }
            }
            let mine = items.indices.filter { part.contains($0 + 1) }
            let work = mine.compactMap { index -> (lesson: String, name: String, chain: String)? in
                if case .render(let lesson, let name, let chain) = items[index] { return (lesson, name, chain) }
                return nil
            }
            let bar = ProgressBar(enabled: progress ?? (isatty(STDERR_FILENO) == 1), label: "rendering")
            let done = Atomic<Int>(0)
            let (to, ext, quality, seed, locale) = (self.to, self.ext, self.quality, self.seed, self.locale)
            let started = ContinuousClock.now
            let total = work.count
            let results = parallelMap(work) { item -> Result<(frames: Int, rate: Int), NarratorError> in
                defer { bar.draw(done.add(1, ordering: .relaxed).newValue, total) }
                return Result { () throws(NarratorError) in
                    let prepared = try NarratorLesson(path: item.lesson, locale: locale).prepare(.chain(item.chain, repeats: 1), seed: seed)
                    let base = to + "/" + item.name + "/" + item.chain
                    let folder = URL(fileURLWithPath: base).deletingLastPathComponent().path
                    do {
                        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                    } catch {
                        throw NarratorError(file: folder, "cannot make the folder: \(error.localizedDescription)")
                    }
                    try Render.write(prepared, to: base + "." + ext, cues: base + ".cues.json", quality: quality)
                    return (prepared.schedule.frames, prepared.schedule.sampleRate)
                }
            }
            bar.finish()
            var failures: [String] = []
            var lines: [String] = []
            var milliseconds = 0
            var rendered = 0
            var next = results.makeIterator()
            for index in mine {
                switch items[index] {
                case .refused(let name, let chain, let error):
                    failures.append(error)
                    lines.append(Self.itemLine(index + 1, name: name, chain: chain, fields: "\"error\": \(EventEncoder.quoted(error))"))
                case .render(let lesson, let name, let chain):
                    switch next.next()! {
                    case .success(let length):
                        rendered += 1
                        milliseconds += length.frames * 1000 / max(1, length.rate)
                        lines.append(Self.itemLine(index + 1, name: name, chain: chain, fields: "\"frames\": \(length.frames), \"sampleRate\": \(length.rate)"))
                    case .failure(let error):
                        let line = "\(lesson): chains.\(chain): \(error.description)"
                        failures.append(line)
                        lines.append(Self.itemLine(index + 1, name: name, chain: chain, fields: "\"error\": \(EventEncoder.quoted(line))"))
                    }
                }
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let of = part == .whole ? "" : " (shard \(part): \(mine.count) of \(items.count) items)"
            print(
                "\(Wording.count(rendered, "chain")) of \(Wording.count(paths.count, "lesson")) rendered\(of) → \(to) "
                    + "(\(String(format: "%.1f", Double(milliseconds) / 1000)) s of audio in \(String(format: "%.2f", seconds)) s, \(Wording.count(min(ParallelWork.workers, max(1, work.count)), "worker")))")
            if let report {
                let header = BatchReport.Header(report: "render-all", manifestDigest: digest(items), items: items.count, shard: part)
                try AtomicFile.write(BatchReport.text(header: header, items: lines), to: report)
            }
            guard failures.isEmpty else {
                for failure in failures { printError(failure) }
                throw NarratorError(file: library, "\(Wording.count(failures.count, "chain or lesson", plural: "chains or lessons")) could not be rendered (above)")
            }
        }
    }

    /// The batch's identity: its items and what they are rendered with (the parts of one
    /// batch must come from the same library, rendered the same way).
    func digest(_ items: [Item]) -> String {
        let options = "render-all\t\(ext)\t\(quality.map { String($0) } ?? "-")\t\(seed)\t\(locale ?? "-")\n"
        return BatchReport.digest(Data((options + items.map { $0.key + "\n" }.joined()).utf8))
    }

    /// A chain's line of `--report`: `{"item", "lesson", "chain", "frames", "sampleRate"}` or its `"error"`.
    static func itemLine(_ ordinal: Int, name: String, chain: String?, fields: String) -> String {
        let chainField = chain.map { ", \"chain\": \(EventEncoder.quoted($0))" } ?? ""
        return BatchReport.itemLine(ordinal: ordinal, fields: "\"lesson\": \(EventEncoder.quoted(name))\(chainField), \(fields)")
    }
}
