import Foundation

/// SubRip (.srt): numbered cues, `hh:mm:ss,mmm --> hh:mm:ss,mmm`, text lines, a blank line.
/// Each cue is one word (or phrase); tags such as `<i>` and `{\an8}` are dropped.
enum SubRip {
    static func parse(_ source: String, path: String) throws(NarratorError) -> [WordTimings.Entry] {
        let text = source.hasPrefix("\u{FEFF}") ? String(source.dropFirst()) : source
        let lines = WordTimings.lines(of: text).map(String.init)
        var entries: [WordTimings.Entry] = []
        var index = 0
        while index < lines.count {
            if lines[index].trimmingCharacters(in: .whitespaces).isEmpty { index += 1; continue }
            let blockStart = index
            var block: [String] = []
            while index < lines.count, !lines[index].trimmingCharacters(in: .whitespaces).isEmpty {
                block.append(lines[index])
                index += 1
            }
            // The counter line is optional in practice; the timing line is not.
            let timingOffset = block[0].contains("-->") ? 0 : 1
            let place = "line \(blockStart + timingOffset + 1)"
            guard timingOffset < block.count, block[timingOffset].contains("-->") else {
                throw NarratorError(file: path, place: "line \(blockStart + 1)", "expected a cue: a number, then 'hh:mm:ss,mmm --> hh:mm:ss,mmm'")
            }
            if timingOffset == 1, Int(block[0].trimmingCharacters(in: .whitespaces)) == nil {
                throw NarratorError(file: path, place: "line \(blockStart + 1)", "expected the cue's number, found '\(block[0])'")
            }
            let parts = block[timingOffset].components(separatedBy: "-->")
            guard parts.count == 2, let start = timestamp(parts[0].trimmingCharacters(in: .whitespaces)),
                let end = timestamp(parts[1].trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) ?? "")
            else { throw NarratorError(file: path, place: place, "bad cue timing line '\(block[timingOffset])'") }
            let words = block[(timingOffset + 1)...].map(stripTags).joined(separator: " ")
                .split(whereSeparator: \.isWhitespace).joined(separator: " ")
            if words.isEmpty { continue }
            entries.append(WordTimings.Entry(text: words, start: start, end: end, place: "\(place) '\(words)'"))
        }
        return entries
    }

    /// `hh:mm:ss,mmm` (a period is accepted for the comma), in seconds.
    static func timestamp(_ text: String) -> Double? {
        let normalized = text.replacingOccurrences(of: ",", with: ".")
        let fields = normalized.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 3, let hours = Int(fields[0]), let minutes = Int(fields[1]), minutes < 60 else { return nil }
        let secondsParts = fields[2].split(separator: ".", omittingEmptySubsequences: false)
        guard secondsParts.count == 2, let seconds = Int(secondsParts[0]), seconds < 60, secondsParts[1].count == 3,
            let millis = Int(secondsParts[1]), hours >= 0
        else { return nil }
        return Double(((hours * 60 + minutes) * 60 + seconds) * 1000 + millis) / 1000
    }

    private static func stripTags(_ line: String) -> String {
        var out = ""
        var depth: Character?
        for character in line {
            if let open = depth {
                if (open == "<" && character == ">") || (open == "{" && character == "}") { depth = nil }
                continue
            }
            if character == "<" || character == "{" { depth = character; continue }
            out.append(character)
        }
        return out
    }

    /// One cue per word, numbered from 1, times rounded to the millisecond.
    static func write(_ words: [WordTiming], rate: Int) -> String {
        var out = ""
        for (number, word) in words.enumerated() {
            out += "\(number + 1)\n\(stamp(word.startFrame, rate: rate)) --> \(stamp(word.endFrame, rate: rate))\n\(word.text)\n\n"
        }
        return out
    }

    private static func stamp(_ frame: Int, rate: Int) -> String {
        let millis = Int((Double(frame) * 1000 / Double(rate)).rounded())
        return String(format: "%02d:%02d:%02d,%03d", millis / 3_600_000, millis / 60000 % 60, millis / 1000 % 60, millis % 1000)
    }
}
