import Foundation

/// Praat TextGrid, in the long ("ooTextFile" with `xmin = …` labels) or the short text format:
/// the interval tier named `words`, as the Montreal Forced Aligner writes it (with a `phones`
/// tier beside it). Empty intervals are pauses and are skipped. Without a `words` tier, a
/// file's only interval tier (besides a phrase tier) is used.
///
/// An interval tier named `phrases`, `sentences` or `utterances` (or the singular; any case)
/// groups the words: each of its non-empty intervals holds the words of one sentence.
enum TextGrid {
    /// The names of a tier whose intervals hold the words' sentences.
    static let phraseTierNames: Set<String> = ["phrases", "phrase", "sentences", "sentence", "utterances", "utterance"]

    /// A value of the file: both formats are the same sequence of values, the long one with
    /// labels (`xmin =`, `item [1]:`) around them.
    private enum Token {
        case number(Double)
        case text(String)
        case flag(String)  // <exists>, <absent>
    }

    /// The fewest values a tier takes (class, name, xmin, xmax, size), an interval (xmin,
    /// xmax, text) and a point (time, mark): a count the rest of the file cannot hold is an
    /// error before anything is allocated or looped over.
    private static let valuesPerTier = 5
    private static let valuesPerInterval = 3
    private static let valuesPerPoint = 2

    static func parse(_ source: String, path: String) throws(NarratorError) -> (
        words: [WordTimings.Entry], phrases: (tier: String, intervals: [WordTimings.Entry])?
    ) {
        let tokens = try tokenize(Array(source.utf8), path: path)
        var position = 0
        func next(_ what: String) throws(NarratorError) -> (Token, Int) {
            guard position < tokens.count else { throw NarratorError(file: path, "ends early: expected \(what)") }
            defer { position += 1 }
            return tokens[position]
        }
        func number(_ what: String) throws(NarratorError) -> Double {
            let (token, line) = try next(what)
            guard case .number(let value) = token else { throw NarratorError(file: path, place: "line \(line)", "expected \(what), a number") }
            return value
        }
        func string(_ what: String) throws(NarratorError) -> String {
            let (token, line) = try next(what)
            guard case .text(let value) = token else { throw NarratorError(file: path, place: "line \(line)", "expected \(what), a quoted text") }
            return value
        }
        /// A count of things that follow, each at least `size` values: checked against what
        /// is left of the file before it becomes an integer.
        func count(_ thing: String, eachTaking size: Int) throws(NarratorError) -> Int {
            let line = position < tokens.count ? tokens[position].1 : 0
            let value = try number("the number of \(thing)s")
            guard value >= 0, value.rounded() == value else {
                throw NarratorError(file: path, place: "line \(line)", "the number of \(thing)s must be a whole number, 0 or more, not \(value.formatted)")
            }
            let room = (tokens.count - position) / size
            guard value <= Double(room) else {
                let announced = value == 1 ? "1 \(thing)" : "\(value.formatted) \(thing)s"
                throw NarratorError(
                    file: path, place: "line \(line)", "announces \(announced), but the rest of the file holds at most \(room)")
            }
            return Int(value)
        }
        guard try string("the file type") == "ooTextFile", try string("the object class") == "TextGrid" else {
            throw NarratorError(file: path, place: "line 1", "not a Praat TextGrid (expected File type = \"ooTextFile\", Object class = \"TextGrid\")")
        }
        _ = try number("the grid's xmin")
        _ = try number("the grid's xmax")
        let (flag, flagLine) = try next("<exists>")
        guard case .flag(let value) = flag else { throw NarratorError(file: path, place: "line \(flagLine)", "expected <exists> or <absent>") }
        if value == "absent" { throw NarratorError(file: path, "has no tiers") }
        let tierCount = try count("tier", eachTaking: valuesPerTier)
        var tiers: [(name: String, interval: Bool, entries: [WordTimings.Entry])] = []
        for _ in 0..<tierCount {
            let kindLine = position < tokens.count ? tokens[position].1 : 0
            let kind = try string("a tier class")
            guard kind == "IntervalTier" || kind == "TextTier" else {
                throw NarratorError(file: path, place: "line \(kindLine)", "unknown tier class \(WordTimings.shown(kind)) (expected IntervalTier or TextTier)")
            }
            let name = try string("the tier's name")
            _ = try number("the tier's xmin")
            _ = try number("the tier's xmax")
            var entries: [WordTimings.Entry] = []
            if kind == "IntervalTier" {
                let intervals = try count("interval", eachTaking: valuesPerInterval)
                for item in 0..<intervals {
                    let lineOfStart = position < tokens.count ? tokens[position].1 : 0
                    let start = try number("an interval's xmin")
                    let end = try number("an interval's xmax")
                    let label = try string("an interval's text").split(whereSeparator: \.isWhitespace).joined(separator: " ")
                    if !label.isEmpty {
                        entries.append(WordTimings.Entry(text: label, start: start, end: end, place: "line \(lineOfStart) tier \(WordTimings.shown(name)) interval \(item + 1) \(WordTimings.shown(label))"))
                    }
                }
            } else {
                let points = try count("point", eachTaking: valuesPerPoint)
                for _ in 0..<points {
                    _ = try number("a point's time")
                    _ = try string("a point's mark")
                }
            }
            tiers.append((name, kind == "IntervalTier", entries))
        }
        let phrases = tiers.first { $0.interval && phraseTierNames.contains($0.name.lowercased()) }.map { ($0.name, $0.entries) }
        if let words = tiers.first(where: { $0.interval && $0.name.lowercased() == "words" }) { return (words.entries, phrases) }
        let intervalTiers = tiers.filter { $0.interval && !phraseTierNames.contains($0.name.lowercased()) }
        if intervalTiers.count == 1 { return (intervalTiers[0].entries, phrases) }
        // A file whose one tier is named like a phrase tier: its intervals are the words.
        if intervalTiers.isEmpty, let only = tiers.filter(\.interval).first, tiers.filter(\.interval).count == 1 { return (only.entries, nil) }
        throw NarratorError(
            file: path, "no interval tier named 'words' (tiers: \(tiers.map { WordTimings.shown($0.name) }.joined(separator: ", ")))")
    }

    /// Quoted texts ("" inside is a quote), numbers, <flags>; labels and brackets skipped.
    /// Works on the UTF-8 bytes (one byte each, not a Character of 16): a line ends at LF,
    /// CRLF or a lone CR.
    private static func tokenize(_ bytes: [UInt8], path: String) throws(NarratorError) -> [(Token, Int)] {
        let quote = UInt8(ascii: "\""), lf = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r")
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "_") }
        var tokens: [(Token, Int)] = []
        var line = 1
        var index = bytes.startIndex
        // A UTF-8 byte-order mark.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index += 3 }
        /// Counts the line break at `index` (LF, CR, or CR LF as one).
        func lineBreak(at index: Int) -> Bool {
            bytes[index] == lf || (bytes[index] == cr && (index + 1 == bytes.count || bytes[index + 1] != lf))
        }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case quote:
                var value: [UInt8] = []
                let startLine = line
                index += 1
                while true {
                    guard index < bytes.count else { throw NarratorError(file: path, place: "line \(startLine)", "unclosed quoted text") }
                    if bytes[index] == quote {
                        if index + 1 < bytes.count, bytes[index + 1] == quote { value.append(quote); index += 2; continue }
                        index += 1
                        break
                    }
                    if lineBreak(at: index) { line += 1 }
                    value.append(bytes[index])
                    index += 1
                }
                tokens.append((.text(String(decoding: value, as: UTF8.self)), startLine))
            case UInt8(ascii: "["):
                while index < bytes.count, bytes[index] != UInt8(ascii: "]"), bytes[index] != lf, bytes[index] != cr { index += 1 }
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1 }
            case UInt8(ascii: "<"):
                let start = index + 1
                index += 1
                while index < bytes.count, bytes[index] != UInt8(ascii: ">"), bytes[index] != lf, bytes[index] != cr { index += 1 }
                tokens.append((.flag(String(decoding: bytes[start..<index], as: UTF8.self)), line))
                if index < bytes.count, bytes[index] == UInt8(ascii: ">") { index += 1 }
            case UInt8(ascii: "!"):
                // A comment, to the end of the line.
                while index < bytes.count, bytes[index] != lf, bytes[index] != cr { index += 1 }
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "+"):
                let start = index
                while index < bytes.count, !isSpace(bytes[index]) { index += 1 }
                let word = String(decoding: bytes[start..<index], as: UTF8.self)
                guard let value = Double(word), value.isFinite else {
                    throw NarratorError(file: path, place: "line \(line)", "bad number '\(word.prefix(40))'")
                }
                tokens.append((.number(value), line))
            case _ where isLetter(byte):
                // A label (xmin, intervals, size, class…), up to '=' or ':' or the end of the word.
                while index < bytes.count, isLetter(bytes[index]) { index += 1 }
            default:
                if lineBreak(at: index) { line += 1 }
                index += 1
            }
        }
        return tokens
    }
}

extension Double {
    /// A parsed count for a message: "3", "1e+30", "1.8446744073709552e+19".
    fileprivate var formatted: String {
        abs(self) < 9e18 && rounded() == self ? String(Int(self)) : "\(self)"
    }
}
