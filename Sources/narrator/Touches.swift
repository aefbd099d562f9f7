import ArgumentParser
import Foundation
import NarratorCore
import NarratorTouches

struct Touches: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "touches",
        abstract: "Report a touch log: the most touched words and the answers most often wrong.",
        discussion: """
            Reads the SQLite file that `narrator serve --touches FILE` writes (read-only: a \
            daemon may be writing it meanwhile). A word is counted as it is heard, whatever its \
            timings spell it (lower case, without its punctuation); a wrong answer is counted per step of its activity, beside the answers that \
            step had in all. The schema, for an app's own queries, is in docs/touches.md.

            Examples:
              narrator touches Timings/touches/picture-dictionary.sqlite
              narrator touches Timings/touches/picture-dictionary.sqlite --limit 3
            """)

    @Argument(help: "The touch log (an SQLite file written by narrator serve --touches).")
    var file: String

    @Option(help: "Only the touches of this lesson (its path in the library, as requests name it).")
    var lesson: String?

    @Option(help: "Only touches heard at or after DATE: YYYY-MM-DD (midnight UTC) or an ISO 8601 time such as 2026-11-26T09:30:00Z.")
    var since: String?

    @Option(help: "Rows of each list, at most (1-10000).")
    var limit = 10

    @Flag(help: "One JSON object instead of text: touches, words [{text, touches}], wrongAnswers [{lesson, activity, step, answer, wrong, answers}].")
    var json = false

    func validate() throws {
        guard TouchReport.limits.contains(limit) else {
            throw ValidationError("--limit must be between \(TouchReport.limits.lowerBound) and \(TouchReport.limits.upperBound), got \(limit)")
        }
    }

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            let sinceMs = try since.map { text throws(NarratorError) in try Self.milliseconds(text) }
            let report = try TouchReport.read(path: file, lesson: lesson, sinceMs: sinceMs, limit: limit)
            if json {
                print(report.json)
            } else {
                var heading = "\(Wording.count(report.touches, "touch", plural: "touches")) in \(file)"
                var filters: [String] = []
                if let lesson { filters.append("lesson \(lesson)") }
                if let since { filters.append("since \(since)") }
                if !filters.isEmpty { heading += " (" + filters.joined(separator: ", ") + ")" }
                print(report.text(heading: heading), terminator: "")
            }
        }
    }

    /// `--since`: a day (from its midnight, UTC) or an ISO 8601 time with its zone, as
    /// milliseconds since 1970.
    static func milliseconds(_ text: String) throws(NarratorError) -> Int64 {
        let formats: [ISO8601DateFormatter.Options] = [[.withFullDate], [.withInternetDateTime], [.withInternetDateTime, .withFractionalSeconds]]
        for options in formats {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            formatter.timeZone = TimeZone(identifier: "UTC")
            // The formatter takes a date with trailing text as a day: the whole text must be one.
            if let date = formatter.date(from: text), formatter.string(from: date).count == text.count || options != [.withFullDate] {
                let seconds = date.timeIntervalSince1970
                guard seconds.isFinite, abs(seconds) < 1e12 else { break }
                return Int64((seconds * 1000).rounded())
            }
        }
        throw NarratorError(file: "--since", "'\(text)' is not a date: give YYYY-MM-DD or an ISO 8601 time such as 2026-11-26T09:30:00Z")
    }
}
