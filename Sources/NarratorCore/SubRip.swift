import Foundation

/// SubRip (.srt): numbered cues, `hh:mm:ss,mmm --> hh:mm:ss,mmm`, text lines, a blank line.
/// Each cue is one word (or phrase).
///
/// SubRip has no specification; its markup is what players read: the formatting tags `<i>`,
/// `<b>`, `<u>`, `<s>`, `<font …>` (and their closing forms), `<br>`, and ASS override blocks
/// such as `{\an8}`. The reader drops exactly those and keeps any other `<` as text
/// (`<Jerry>` is a word, not a tag), then decodes character references (`&lt;`, `&amp;`,
/// `&#60;`…). The writer escapes `&`, `<` and `>` as `&amp;`, `&lt;`, `&gt;` and a `{` that
/// would open an override block as `&#123;`, so that every word reads back as written.
/// (ffmpeg 5.1 and VLC 3 drop `<Jerry>` as an unknown tag and show references literally;
/// web players, which read SRT by turning it into WebVTT, decode them. A reference shows the
/// word in both; a raw `<Jerry>` loses it in both.)
enum SubRip {
    static func parse(_ source: String, path: String) throws(NarratorError) -> [WordTimings.Entry] {
        let text = source.hasPrefix("\u{FEFF}") ? String(source.dropFirst()) : source
        let lines = WordTimings.lines(of: text)
        var entries: [WordTimings.Entry] = []
        var index = 0
        while index < lines.count {
            if lines[index].allSatisfy(\.isWhitespace) { index += 1; continue }
            let blockStart = index
            var block: [Substring] = []
            while index < lines.count, !lines[index].allSatisfy(\.isWhitespace) {
                block.append(lines[index])
                index += 1
            }
            // The counter line is optional in practice; the timing line is not.
            let timingOffset = block[0].contains("-->") ? 0 : 1
            let place = "line \(blockStart + timingOffset + 1)"
            guard timingOffset < block.count, block[timingOffset].contains("-->") else {
                throw NarratorError(file: path, place: "line \(blockStart + 1)", "expected a cue: a number, then 'hh:mm:ss,mmm --> hh:mm:ss,mmm'")
            }
            if timingOffset == 1, WordTimings.digits(block[0].trimmingCharacters(in: .whitespaces)[...], count: 1...19) == nil {
                throw NarratorError(file: path, place: "line \(blockStart + 1)", "expected the cue's number, found \(WordTimings.shown(block[0]))")
            }
            let parts = block[timingOffset].components(separatedBy: "-->")
            guard parts.count == 2, let start = timestamp(parts[0].trimmingCharacters(in: .whitespaces)),
                let end = timestamp(parts[1].split(whereSeparator: \.isWhitespace).first.map(String.init) ?? "")
            else { throw NarratorError(file: path, place: place, "bad cue timing line \(WordTimings.shown(block[timingOffset]))") }
            let words = block[(timingOffset + 1)...].map { plainText(String($0)) }.joined(separator: " ")
                .split(whereSeparator: \.isWhitespace).joined(separator: " ")
            if words.isEmpty { continue }
            entries.append(WordTimings.Entry(text: words, start: start, end: end, place: "\(place) \(WordTimings.shown(words))"))
        }
        return entries
    }

    /// `hh:mm:ss,mmm` (a period is accepted for the comma), in seconds. Every field is ASCII
    /// digits (no sign); hours have at most 9 digits, so the sum below cannot overflow.
    static func timestamp(_ text: String) -> Double? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 3 else { return nil }
        let secondsParts = fields[2].split(omittingEmptySubsequences: false, whereSeparator: { $0 == "," || $0 == "." })
        guard secondsParts.count == 2,
            let hours = WordTimings.digits(fields[0], count: 1...9),
            let minutes = WordTimings.digits(fields[1], count: 1...2), minutes < 60,
            let seconds = WordTimings.digits(secondsParts[0], count: 1...2), seconds < 60,
            let millis = WordTimings.digits(secondsParts[1], count: 3...3)
        else { return nil }
        return Double(((hours * 60 + minutes) * 60 + seconds) * 1000 + millis) / 1000
    }

    /// A cue line's text: SubRip's formatting tags and override blocks dropped, character
    /// references decoded.
    static func plainText(_ line: String) -> String {
        var out = ""
        var index = line.startIndex
        while index < line.endIndex {
            let character = line[index]
            if character == "<", let (end, isBreak) = formattingTag(in: line, at: index) {
                if isBreak { out.append(" ") }
                index = end
                continue
            }
            if character == "{", line[line.index(after: index)...].first == "\\", let close = line[index...].firstIndex(of: "}") {
                index = line.index(after: close)
                continue
            }
            out.append(character)
            index = line.index(after: index)
        }
        return CueText.decodeReferences(out)
    }

    /// The tags SubRip players read as formatting.
    private static let formattingTags: Set<String> = ["i", "b", "u", "s", "font", "br"]

    /// When a formatting tag (`<i>`, `</I>`, `<font color="red">`, `<br/>`) starts at `start`:
    /// the index after its `>`, and whether it is a line break.
    private static func formattingTag(in line: String, at start: String.Index) -> (String.Index, Bool)? {
        var index = line.index(after: start)
        if index < line.endIndex, line[index] == "/" { index = line.index(after: index) }
        let nameStart = index
        while index < line.endIndex, line[index].isASCII, line[index].isLetter { index = line.index(after: index) }
        let name = line[nameStart..<index].lowercased()
        guard formattingTags.contains(name), index < line.endIndex else { return nil }
        // The name ends the tag, or attributes follow (`<font color=…>`), or `/>`.
        guard line[index] == ">" || line[index] == "/" || line[index].isWhitespace,
            let close = line[index...].firstIndex(of: ">")
        else { return nil }
        return (line.index(after: close), name == "br")
    }

    /// One cue per word, numbered from 1, times rounded to the millisecond; the text escaped
    /// (see above) and on one line.
    static func write(_ words: [WordTiming], rate: Int) -> String {
        var out = ""
        for (number, word) in words.enumerated() {
            out += "\(number + 1)\n\(stamp(word.startFrame, rate: rate)) --> \(stamp(word.endFrame, rate: rate))\n\(escape(word.text))\n\n"
        }
        return out
    }

    static func escape(_ text: String) -> String {
        let characters = Array(CueText.oneLine(text))
        var out = ""
        for (position, character) in characters.enumerated() {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "{" where position + 1 < characters.count
                && (characters[position + 1] == "\\" || (position + 2 < characters.count && characters[position + 2] == ":")):
                // `{\an8}` (ASS) and `{y:i}` (MicroDVD) are markup to players.
                out += "&#123;"
            default: out.append(character)
            }
        }
        return out
    }

    private static func stamp(_ frame: Int, rate: Int) -> String {
        let millis = Frames.convert(frame, from: rate, to: 1000)
        return String(format: "%02d:%02d:%02d,%03d", millis / 3_600_000, millis / 60000 % 60, millis / 1000 % 60, millis % 1000)
    }
}

/// What SubRip and WebVTT cue text share: character references, and one line per cue text.
enum CueText {
    /// `&amp;` `&lt;` `&gt;` `&quot;` `&apos;` `&nbsp;` (a space: words are split at it)
    /// `&lrm;` `&rlm;` (dropped) and numeric references (`&#60;`, `&#x3C;`) decoded in one pass,
    /// so that `&amp;lt;` is `&lt;`; anything else, a lone `&` included, stays as it is.
    static func decodeReferences(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var out = ""
        var rest = Substring(text)
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            let after = rest[rest.index(after: amp)...]
            if let semicolon = after.prefix(10).firstIndex(of: ";"), let decoded = reference(after[..<semicolon]) {
                out += decoded
                rest = after[after.index(after: semicolon)...]
            } else {
                out.append("&")
                rest = after
            }
        }
        out += rest
        return out
    }

    private static func reference(_ name: Substring) -> String? {
        switch name {
        case "amp": return "&"
        case "lt": return "<"
        case "gt": return ">"
        case "quot": return "\""
        case "apos": return "'"
        case "nbsp": return " "
        case "lrm", "rlm": return ""
        default: break
        }
        guard name.first == "#" else { return nil }
        let number = name.dropFirst()
        let value: UInt32?
        if number.first == "x" || number.first == "X" {
            value = number.count > 1 && number.count <= 7 ? UInt32(number.dropFirst(), radix: 16) : nil
        } else {
            value = WordTimings.digits(number, count: 1...7).flatMap { UInt32(exactly: $0) }
        }
        guard let value, value != 0, let scalar = Unicode.Scalar(value) else { return nil }
        return String(Character(scalar))
    }

    /// `text` with every run of whitespace (line breaks included) as one space: a cue's text
    /// cannot hold a blank line, and a word has no line breaks.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }
}
