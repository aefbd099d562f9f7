import Foundation
import NarratorCore

/// `narrator touches FILE`: what a touch log says, read-only: the most touched words and the
/// answers most often wrong, for one lesson or all, since a moment or ever.
public struct TouchReport: Sendable, Equatable {
    /// A word (as heard: lower case, without the punctuation around it; its clip's timings may
    /// spell it "Trees.") and how often it was tapped to be said.
    public struct Word: Sendable, Equatable {
        public let text: String
        public let touches: Int
    }

    /// A wrong answer given at one step of an activity: how often, and how many answers
    /// (right or wrong) that step had in all.
    public struct WrongAnswer: Sendable, Equatable {
        public let lesson: String
        public let activity: String
        public let step: Int
        public let answer: String
        public let wrong: Int
        public let answers: Int
    }

    /// Rows that match the filters, of every kind.
    public let touches: Int
    public let words: [Word]
    public let wrongAnswers: [WrongAnswer]

    /// `limit`: rows of each list, at most.
    public static let limits = 1...10_000

    /// Reads the log at `path` (read-only; a daemon may be writing it meanwhile). Only touches
    /// of `lesson` (its path in the library, as requests name it) and at or after `sinceMs`
    /// (milliseconds since 1970, UTC) count, when given.
    public static func read(path: String, lesson: String? = nil, sinceMs: Int64? = nil, limit: Int = 10) throws(NarratorError) -> TouchReport {
        guard FileManager.default.fileExists(atPath: path) else { throw NarratorError(file: path, "no such file") }
        let connection = try SQLiteConnection(path: path, readOnly: true)
        defer { connection.close() }
        guard try TouchLog.kind(of: connection) == .touchLog else {
            throw NarratorError(file: path, "not a touch log (an empty database: no touches table)")
        }
        // ?1: the lesson or NULL; ?2: the first millisecond or NULL.
        let filter = "(?1 IS NULL OR lesson = ?1) AND (?2 IS NULL OR time_ms >= ?2)"
        func prepared(_ sql: String) throws(NarratorError) -> SQLiteConnection.Statement {
            let statement = try connection.prepare(sql)
            statement.bind(1, lesson)
            statement.bind(2, sinceMs.map { Int($0) })
            statement.bind(3, limit)
            return statement
        }
        let total = try prepared("SELECT count(*) FROM touches WHERE \(filter)")
        _ = try total.step()
        let touches = Int(total.int64(0))

        // A word counts as it is heard, not as its timings spell it: "Trees." and "trees" are
        // one word (Wording.spokenWords). SQLite groups the spellings (as many as the lessons'
        // distinct words at most), Swift merges them.
        var counts: [String: Int] = [:]
        let wordQuery = try prepared(
            "SELECT word_text, count(*) FROM touches WHERE kind = 'say' AND \(filter) AND word_text IS NOT NULL GROUP BY word_text")
        while try wordQuery.step() {
            let spoken = Wording.spokenWords(wordQuery.text(0) ?? "").joined(separator: " ")
            counts[spoken.isEmpty ? (wordQuery.text(0) ?? "") : spoken, default: 0] += Int(wordQuery.int64(1))
        }
        let words = counts.map { Word(text: $0.key, touches: $0.value) }
            .sorted { $0.touches != $1.touches ? $0.touches > $1.touches : $0.text.utf8.lexicographicallyPrecedes($1.text.utf8) }
            .prefix(limit).map { $0 }

        var wrong: [WrongAnswer] = []
        let wrongQuery = try prepared(
            """
            WITH answered AS (
              SELECT lesson, activity, step, answer, result FROM touches
              WHERE kind = 'answer' AND result IN ('correct', 'wrong') AND \(filter)
            ), steps AS (
              SELECT lesson, activity, step, count(*) AS answers FROM answered GROUP BY lesson, activity, step
            )
            SELECT a.lesson, a.activity, a.step, a.answer, count(*) AS wrong, s.answers
            FROM answered a JOIN steps s ON s.lesson = a.lesson AND s.activity IS a.activity AND s.step IS a.step
            WHERE a.result = 'wrong'
            GROUP BY a.lesson, a.activity, a.step, a.answer
            ORDER BY wrong DESC, s.answers DESC, a.lesson, a.activity, a.step, a.answer LIMIT ?3
            """)
        while try wrongQuery.step() {
            wrong.append(
                WrongAnswer(
                    lesson: wrongQuery.text(0) ?? "", activity: wrongQuery.text(1) ?? "", step: Int(wrongQuery.int64(2)),
                    answer: wrongQuery.text(3) ?? "", wrong: Int(wrongQuery.int64(4)), answers: Int(wrongQuery.int64(5))))
        }
        return TouchReport(touches: touches, words: words, wrongAnswers: wrong)
    }

    /// The report for a person: a heading, then the two lists as columns.
    public func text(heading: String) -> String {
        var out = heading + "\n\nmost touched words\n"
        if words.isEmpty {
            out += "  (no word was tapped to be said)\n"
        } else {
            out += "  touches  word\n"
            for word in words { out += "  " + Self.padded(word.touches, 7) + "  " + word.text + "\n" }
        }
        out += "\nanswers most often wrong\n"
        if wrongAnswers.isEmpty {
            out += "  (no wrong answer)\n"
        } else {
            out += "  wrong  of answers  step  answer  (lesson, activity)\n"
            for answer in wrongAnswers {
                out += "  " + Self.padded(answer.wrong, 5) + "  " + Self.padded(answer.answers, 10) + "  " + Self.padded(answer.step, 4)
                out += "  " + answer.answer + "  (" + answer.lesson + ", " + answer.activity + ")\n"
            }
        }
        return out
    }

    /// The report as one JSON object: `touches`, `words` [{`text`, `touches`}] and
    /// `wrongAnswers` [{`lesson`, `activity`, `step`, `answer`, `wrong`, `answers`}].
    public var json: String {
        let wordList = words.map { #"{"text":\#(EventEncoder.quoted($0.text)),"touches":\#($0.touches)}"# }
        let wrongList = wrongAnswers.map { answer in
            #"{"lesson":\#(EventEncoder.quoted(answer.lesson)),"activity":\#(EventEncoder.quoted(answer.activity)),"step":\#(answer.step),"#
                + #""answer":\#(EventEncoder.quoted(answer.answer)),"wrong":\#(answer.wrong),"answers":\#(answer.answers)}"#
        }
        return #"{"touches":\#(touches),"words":[\#(wordList.joined(separator: ","))],"wrongAnswers":[\#(wrongList.joined(separator: ","))]}"#
    }

    private static func padded(_ number: Int, _ width: Int) -> String {
        let text = String(number)
        return String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
