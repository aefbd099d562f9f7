import ArgumentParser
import Foundation
import NarratorCore
import NarratorValidate
import Synchronization

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check a library's lessons, clips and timings before it ships.",
        discussion: """
            Reads every lesson (JSON with "sampleRate" and "chains") under the paths, every audio \
            file they use, and every audio file under the folders, in parallel. Errors: missing \
            files, unreadable audio or JSON, lesson keys and references, timings that overlap or \
            run past their audio, timing words that differ from a clip's "transcript". Warnings: \
            audio at another rate or channel count than its lesson, silent clips (peak under \
            -60 dBFS), clipped ones (runs of 3 samples at full scale), clips whose integrated \
            loudness (EBU R 128) is more than --loudness-tolerance LU from the median of their \
            lesson's clips on the same bus (unless the lesson sets a "loudness" target for it), \
            per locale the voice clips that fall back to the default's recording, timings or \
            transcript (every locale in "locales", or --locale), \
            clips whose true peak as they play is over -1 dBTP, word timings that disagree with \
            their audio (alignment: a word under 50 ms or over 2 s, mostly silence, a boundary \
            through a word's sound, timings that drift), clips no chain plays, audio files no \
            lesson uses.
            Exit status: 1 when there are errors, 0 with warnings only.
            A batch over many machines: --shard K/N checks only this worker's items (the \
            paths' own findings, then each lesson, then each audio file found, round robin), \
            --report writes them as JSON Lines, and `narrator merge` joins the N reports into \
            the report of one unsharded run, byte for byte. --shard auto takes K and N from \
            the job array it runs in (Slurm, a Kubernetes Indexed Job; docs/cluster.md).

            Examples:
              narrator validate Timings/lessons Audio/lessons
              narrator validate Timings/lessons Audio/lessons --shard 2/3 \\
                --report part2.jsonl
            """)

    @Argument(help: "Lesson files, or folders to search for lessons and audio files.")
    var paths: [String]

    @Flag(help: "Print the findings and the summary as JSON, for machines.")
    var json = false

    @Flag(inversion: .prefixedNo, help: "Draw a progress bar on stderr (default: when stderr is a terminal).")
    var progress: Bool?

    @Option(help: "Check this locale's clips (a BCP 47 tag: es, es-MX) besides the default's, and list what falls back; by default every locale a lesson has.")
    var locale: String?

    @Option(help: "Warn when a clip's integrated loudness is more than this many LU from the median of its lesson's clips on the same bus (0.1 to 40; default 3).")
    var loudnessTolerance: Double = LibraryValidator.defaultLoudnessTolerance

    @Option(help: "Check only this worker's items, K of N workers (e.g. 2/8), or auto: K and N from the Slurm array or Kubernetes Indexed Job it runs in.")
    var shard: String?

    @Option(help: "Write each item's findings as JSON Lines (for `narrator merge`).")
    var report: String?

    func validate() throws {
        guard !paths.isEmpty else { throw ValidationError("give at least one lesson file or folder") }
        guard loudnessTolerance.isFinite, LibraryValidator.loudnessTolerances.contains(loudnessTolerance) else {
            throw ValidationError("--loudness-tolerance must be between 0.1 and 40 LU, got \(loudnessTolerance)")
        }
        if let locale, let problem = Lesson.localeTagProblem(locale) { throw ValidationError("--locale: \(problem)") }
    }

    func run() throws {
        let started = ContinuousClock.now
        let bar = ProgressBar(enabled: progress ?? (isatty(STDERR_FILENO) == 1))
        var part = Shard.whole
        try reportingErrors { () throws(NarratorError) in part = try Shard.resolve(shard, environment: ProcessInfo.processInfo.environment) }
        let report = LibraryValidator(loudnessTolerance: loudnessTolerance, locale: locale).validate(paths: paths, shard: part) { done, total in
            bar.draw(done, total)
        }
        bar.finish()
        let elapsed = ContinuousClock.now - started

        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let data = (try? encoder.encode(report)) ?? Data("{}".utf8)
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(Self.text(report, seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        }
        if let path = self.report {
            try reportingErrors { () throws(NarratorError) in
                let header = BatchReport.Header(report: "validate", manifestDigest: report.itemDigest, items: report.itemCount, shard: part)
                try AtomicFile.write(BatchReport.text(header: header, items: report.items.map(Self.itemLine)), to: path)
            }
        }
        if report.errors > 0 { throw ExitCode(1) }
    }

    /// An item's line of `--report`: `{"item", "lesson" or "audio", ["clips", "files"], "findings"}`.
    static func itemLine(_ item: LibraryValidator.Report.Item) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let findings = (try? encoder.encode(item.findings)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
        var fields: [String] = []
        switch item.kind {
        case .paths: break
        case .lesson: fields.append("\"lesson\": \(EventEncoder.quoted(item.path))")
        case .audio: fields.append("\"audio\": \(EventEncoder.quoted(item.path))")
        }
        if let summary = item.summary { fields.append("\"clips\": \(summary.clips), \"files\": \(summary.files)") }
        fields.append("\"findings\": \(findings)")
        return BatchReport.itemLine(ordinal: item.ordinal, fields: fields.joined(separator: ", "))
    }

    /// The findings, one a line, then the tables by lesson and by check.
    static func text(_ report: LibraryValidator.Report, seconds: Double) -> String {
        var lines = report.findings.map(\.line)
        if !lines.isEmpty { lines.append("") }

        let width = max(6, report.lessons.map(\.path.count).max() ?? 0)
        func row(_ name: String, _ columns: [String]) -> String {
            name.padding(toLength: width, withPad: " ", startingAt: 0) + columns.map { $0.leftPadded(to: 9) }.joined()
        }
        lines.append(row("lesson", ["clips", "files", "errors", "warnings"]))
        for lesson in report.lessons {
            lines.append(row(lesson.path, [lesson.clips, lesson.files, lesson.errors, lesson.warnings].map(String.init)))
        }
        let outside = report.findings.filter { $0.lesson == nil }
        if !outside.isEmpty {
            let errors = outside.filter { $0.severity == .error }.count
            lines.append(row("(no lesson)", ["", "", String(errors), String(outside.count - errors)]))
        }
        lines.append(row("total", [
            String(report.lessons.map(\.clips).reduce(0, +)), String(report.audioFiles), String(report.errors), String(report.warnings),
        ]))
        lines.append("")
        lines.append("check".padding(toLength: 16, withPad: " ", startingAt: 0) + "errors".leftPadded(to: 9) + "warnings".leftPadded(to: 9))
        for check in Finding.Check.allCases {
            let mine = report.findings.filter { $0.check == check }
            let errors = mine.filter { $0.severity == .error }.count
            lines.append(check.rawValue.padding(toLength: 16, withPad: " ", startingAt: 0) + String(errors).leftPadded(to: 9) + String(mine.count - errors).leftPadded(to: 9))
        }
        lines.append("")
        lines.append(
            "\(Wording.count(report.errors, "error")), \(Wording.count(report.warnings, "warning")): "
                + "\(Wording.count(report.lessons.count, "lesson")), \(Wording.count(report.audioFiles, "audio file")) in \(String(format: "%.2f", seconds)) s")
        return lines.joined(separator: "\n")
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? " " + self : String(repeating: " ", count: width - count) + self
    }
}

/// `[#########...........]  12/40` on stderr, redrawn in place; at most 20 redraws a second.
final class ProgressBar: Sendable {
    private let enabled: Bool
    /// What the bar is doing ("validating", "packing").
    private let label: String
    private let lastDraw = Mutex<ContinuousClock.Instant?>(nil)
    private let lastTotal = Atomic<Int>(0)

    init(enabled: Bool, label: String = "validating") {
        self.enabled = enabled
        self.label = label
    }

    func draw(_ done: Int, _ total: Int) {
        guard enabled, total > 0 else { return }
        let now = ContinuousClock.now
        let due = lastDraw.withLock { last -> Bool in
            if done < total, let last, now - last < .milliseconds(50) { return false }
            last = now
            return true
        }
        lastTotal.store(total, ordering: .relaxed)
        guard due else { return }
        write(done, total)
    }

    private func write(_ done: Int, _ total: Int) {
        let width = 30
        let filled = width * min(done, total) / total
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        Output.write("\r\(label) [\(bar)] \(done)/\(total)", to: STDERR_FILENO)
    }

    /// Draws the bar full (a thread may have drawn an older count last) and ends its line.
    func finish() {
        guard enabled, lastDraw.withLock({ $0 != nil }) else { return }
        let total = lastTotal.load(ordering: .relaxed)
        write(total, total)
        Output.write("\n", to: STDERR_FILENO)
    }
}
