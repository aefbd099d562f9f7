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

            Example:
              narrator render-all Timings/lessons --to rendered --ext flac --seed 7
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

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            let type = try AudioFileType(path: "chain." + ext)
            try type.check(format: .s16, quality: quality, path: "--ext " + ext)
            if let locale, let problem = Lesson.localeTagProblem(locale) { throw NarratorError(file: "--locale", problem) }
            let (root, paths) = try Packer.lessons(inLibrary: library)

            // Every chain of every lesson that loads; a lesson that does not is one line.
            var failures: [String] = []
            var work: [(lesson: String, name: String, chain: String)] = []
            var outputs: [String: String] = [:]
            for path in paths {
                do throws(NarratorError) {
                    let lesson = try Lesson.load(path: path)
                    let name = String(path.dropFirst(root.count + 1).dropLast(".json".count))
                    for chain in lesson.chains.keys.sorted() {
                        // A chain id becomes a file name: nothing that leaves the lesson's folder.
                        guard !chain.isEmpty, chain != ".", chain != "..", !chain.contains("/"), !chain.contains("\0") else {
                            failures.append("\(path): chains.\(chain): cannot be a file name (empty, '.', '..' or with a '/')")
                            continue
                        }
                        let key = (name + "/" + chain).lowercased()
                        if let other = outputs[key] {
                            failures.append("\(path): chains.\(chain): would be written where \(other) is")
                            continue
                        }
                        outputs[key] = "\(path): chains.\(chain)"
                        work.append((path, name, chain))
                    }
                } catch {
                    failures.append(error.description)
                }
            }
            let bar = ProgressBar(enabled: progress ?? (isatty(STDERR_FILENO) == 1), label: "rendering")
            let done = Atomic<Int>(0)
            let (to, ext, quality, seed, locale) = (self.to, self.ext, self.quality, self.seed, self.locale)
            let started = ContinuousClock.now
            let total = work.count
            let results = parallelMap(work) { item -> Result<Int, NarratorError> in
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
                    return prepared.schedule.frames * 1000 / max(1, prepared.schedule.sampleRate)
                }
            }
            bar.finish()
            var milliseconds = 0
            for (item, result) in zip(work, results) {
                switch result {
                case .success(let length): milliseconds += length
                case .failure(let error): failures.append("\(item.lesson): chains.\(item.chain): \(error.description)")
                }
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let rendered = results.filter { if case .success = $0 { true } else { false } }.count
            print(
                "\(Wording.count(rendered, "chain")) of \(Wording.count(paths.count, "lesson")) rendered → \(to) "
                    + "(\(String(format: "%.1f", Double(milliseconds) / 1000)) s of audio in \(String(format: "%.2f", seconds)) s, \(Wording.count(min(ParallelWork.workers, max(1, work.count)), "worker")))")
            guard failures.isEmpty else {
                for failure in failures { printError(failure) }
                throw NarratorError(file: library, "\(Wording.count(failures.count, "chain or lesson", plural: "chains or lessons")) could not be rendered (above)")
            }
        }
    }
}
