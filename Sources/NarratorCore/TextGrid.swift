import Foundation

/// Praat TextGrid, in the long ("ooTextFile" with `xmin = …` labels) or the short text format:
/// the interval tier named `words`, as the Montreal Forced Aligner writes it (with a `phones`
/// tier beside it). Empty intervals are pauses and are skipped. Without a `words` tier, a
/// file's only interval tier is used.
enum TextGrid {
    /// A value of the file: both formats are the same sequence of values, the long one with
    /// labels (`xmin =`, `item [1]:`) around them.
    private enum Token {
        case number(Double)
        case text(String)
        case flag(String)  // <exists>, <absent>
    }

    static func parse(_ source: String, path: String) throws(NarratorError) -> [WordTimings.Entry] {
        let text = source.hasPrefix("\u{FEFF}") ? String(source.dropFirst()) : source
        let tokens = try tokenize(text, path: path)
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
        guard try string("the file type") == "ooTextFile", try string("the object class") == "TextGrid" else {
            throw NarratorError(file: path, place: "line 1", "not a Praat TextGrid (expected File type = \"ooTextFile\", Object class = \"TextGrid\")")
        }
        _ = try number("the grid's xmin")
        _ = try number("the grid's xmax")
        let (flag, flagLine) = try next("<exists>")
        guard case .flag(let value) = flag else { throw NarratorError(file: path, place: "line \(flagLine)", "expected <exists> or <absent>") }
        if value == "absent" { throw NarratorError(file: path, "has no tiers") }
        let tierCount = Int(try number("the number of tiers"))
        var tiers: [(name: String, interval: Bool, entries: [WordTimings.Entry])] = []
        for _ in 0..<max(0, tierCount) {
            let kind = try string("a tier class")
            let name = try string("the tier's name")
            _ = try number("the tier's xmin")
            _ = try number("the tier's xmax")
            let count = Int(try number("the tier's size"))
            var entries: [WordTimings.Entry] = []
            for item in 0..<max(0, count) {
                if kind == "IntervalTier" {
                    let lineOfStart = position < tokens.count ? tokens[position].1 : 0
                    let start = try number("an interval's xmin")
                    let end = try number("an interval's xmax")
                    let label = try string("an interval's text").split(whereSeparator: \.isWhitespace).joined(separator: " ")
                    if !label.isEmpty {
                        entries.append(WordTimings.Entry(text: label, start: start, end: end, place: "line \(lineOfStart) tier '\(name)' interval \(item + 1) '\(label)'"))
                    }
                } else if kind == "TextTier" {
                    _ = try number("a point's time")
                    _ = try string("a point's mark")
                } else {
                    throw NarratorError(file: path, "unknown tier class '\(kind)' (expected IntervalTier or TextTier)")
                }
            }
            tiers.append((name, kind == "IntervalTier", entries))
        }
        if let words = tiers.first(where: { $0.interval && $0.name.lowercased() == "words" }) { return words.entries }
        let intervalTiers = tiers.filter(\.interval)
        if intervalTiers.count == 1 { return intervalTiers[0].entries }
        throw NarratorError(
            file: path, "no interval tier named 'words' (tiers: \(tiers.map { "'\($0.name)'" }.joined(separator: ", ")))")
    }

    /// Quoted texts ("" inside is a quote), numbers, <flags>; labels and brackets skipped.
    private static func tokenize(_ text: String, path: String) throws(NarratorError) -> [(Token, Int)] {
        var tokens: [(Token, Int)] = []
        var line = 1
        var characters = Array(text)
        characters.append("\n")
        var index = 0
        while index < characters.count {
            let character = characters[index]
            switch character {
            case "\n":
                line += 1
                index += 1
            case "\"":
                var value = ""
                let startLine = line
                index += 1
                while true {
                    guard index < characters.count - 1 else { throw NarratorError(file: path, place: "line \(startLine)", "unclosed quoted text") }
                    if characters[index] == "\"" {
                        if characters[index + 1] == "\"" { value.append("\""); index += 2; continue }
                        index += 1
                        break
                    }
                    if characters[index] == "\n" { line += 1 }
                    value.append(characters[index])
                    index += 1
                }
                tokens.append((.text(value), startLine))
            case "[":
                while index < characters.count, characters[index] != "]", characters[index] != "\n" { index += 1 }
                index += 1
            case "<":
                var word = ""
                index += 1
                while index < characters.count, characters[index] != ">", characters[index] != "\n" { word.append(characters[index]); index += 1 }
                index += 1
                tokens.append((.flag(word), line))
            case "!":
                // A comment, to the end of the line.
                while index < characters.count, characters[index] != "\n" { index += 1 }
            case _ where character.isNumber || character == "-" || character == "." || character == "+":
                var word = ""
                while index < characters.count, !characters[index].isWhitespace { word.append(characters[index]); index += 1 }
                guard let value = Double(word), value.isFinite else { throw NarratorError(file: path, place: "line \(line)", "bad number '\(word)'") }
                tokens.append((.number(value), line))
            case _ where character.isLetter:
                // A label (xmin, intervals, size, class…), up to '=' or ':' or the end of the word.
                while index < characters.count, characters[index].isLetter || characters[index] == "_" { index += 1 }
            default:
                index += 1
            }
        }
        return tokens
    }
}
