import Foundation

/// WebVTT cues as word timings. A cue whose text carries inline karaoke timestamps
/// (`a <00:00:01.500>red <00:00:01.800>apple`) gives one word per timestamped span: the text
/// before the first timestamp starts at the cue's start, each later span at its timestamp, and
/// each ends at the next timestamp or the cue's end. A cue without timestamps is one word.
/// A cue's words are one sentence.
enum WebVTT {
    static func parse(_ source: String, path: String) throws(NarratorError) -> [WordTimings.Entry] {
        let text = source.hasPrefix("\u{FEFF}") ? String(source.dropFirst()) : source
        let lines = WordTimings.lines(of: text).map(String.init)
        guard let first = lines.first, first == "WEBVTT" || first.hasPrefix("WEBVTT ") || first.hasPrefix("WEBVTT\t")
        else { throw NarratorError(file: path, place: "line 1", "a WebVTT file starts with 'WEBVTT'") }

        var entries: [WordTimings.Entry] = []
        var cues = 0
        var index = 1
        // Skip the header block (up to a blank line; a cue timing line also ends it).
        while index < lines.count, !lines[index].isEmpty, !lines[index].contains("-->") { index += 1 }
        while index < lines.count {
            if lines[index].trimmingCharacters(in: .whitespaces).isEmpty { index += 1; continue }
            // A block: NOTE, STYLE, REGION, or a cue (optional identifier line, then timing line).
            let blockStart = index
            var block: [String] = []
            while index < lines.count, !lines[index].isEmpty { block.append(lines[index]); index += 1 }
            let head = block[0]
            let keyword = head.split(whereSeparator: \.isWhitespace).first ?? ""
            if keyword == "NOTE" || keyword == "STYLE" || keyword == "REGION" { continue }
            var timingOffset = 0
            if !head.contains("-->") {
                timingOffset = 1
                guard block.count > 1, block[1].contains("-->") else {
                    throw NarratorError(
                        file: path, place: "line \(blockStart + 1)", "expected a cue timing line 'start --> end'")
                }
            }
            let timingLineNumber = blockStart + timingOffset + 1
            let place = "line \(timingLineNumber)"
            let parts = block[timingOffset].components(separatedBy: "-->")
            guard parts.count == 2,
                let cueStart = timestamp(parts[0].trimmingCharacters(in: .whitespaces)),
                let cueEnd = timestamp(
                    parts[1].split(whereSeparator: \.isWhitespace).first.map(String.init) ?? "")
            else { throw NarratorError(file: path, place: place, "bad cue timing line \(WordTimings.shown(block[timingOffset]))") }
            let payload = block[(timingOffset + 1)...].joined(separator: "\n")
            // A cue's words are one sentence (`Sentences.group`).
            var cueWords = try words(
                in: payload, cueStart: cueStart, cueEnd: cueEnd, path: path, firstLine: timingLineNumber + 1)
            for k in cueWords.indices { cueWords[k].group = cues }
            cues += 1
            entries += cueWords
        }
        return entries
    }

    /// Splits cue text at its inline timestamps.
    private static func words(
        in payload: String, cueStart: Double, cueEnd: Double, path: String, firstLine: Int
    ) throws(NarratorError) -> [WordTimings.Entry] {
        var spans: [(start: Double, text: String)] = [(cueStart, "")]
        var rest = Substring(payload)
        var line = firstLine
        while let open = rest.firstIndex(of: "<") {
            spans[spans.count - 1].text += rest[..<open]
            line += rest[..<open].count { $0 == "\n" }
            guard let close = rest[open...].firstIndex(of: ">") else {
                throw NarratorError(file: path, place: "line \(line)", "unclosed '<' in cue text")
            }
            let tag = rest[rest.index(after: open)..<close]
            if let first = tag.first, first.isNumber {
                guard let time = timestamp(String(tag)) else {
                    throw NarratorError(file: path, place: "line \(line)", "bad timestamp <\(tag.prefix(40))>")
                }
                spans.append((time, ""))
            }
            // Other tags (<c>, <v Name>, <b>, </c> …) carry no timing: dropped.
            rest = rest[rest.index(after: close)...]
        }
        spans[spans.count - 1].text += rest

        var entries: [WordTimings.Entry] = []
        for (position, span) in spans.enumerated() {
            let word = unescape(span.text).split(whereSeparator: \.isWhitespace).joined(separator: " ")
            if word.isEmpty { continue }
            let end = position + 1 < spans.count ? spans[position + 1].start : cueEnd
            entries.append(
                WordTimings.Entry(text: word, start: span.start, end: end, place: "line \(firstLine) \(WordTimings.shown(word))"))
        }
        return entries
    }

    /// `hh:mm:ss.ttt` or `mm:ss.ttt`, in seconds. Every field is ASCII digits (no sign);
    /// hours have at most 9 digits, so the sum below cannot overflow.
    static func timestamp(_ text: String) -> Double? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 2 || fields.count == 3 else { return nil }
        let secondsParts = fields.last!.split(separator: ".", omittingEmptySubsequences: false)
        guard secondsParts.count == 2,
            let seconds = WordTimings.digits(secondsParts[0], count: 2...2), seconds < 60,
            let millis = WordTimings.digits(secondsParts[1], count: 3...3),
            let minutes = WordTimings.digits(fields[fields.count - 2], count: 2...2), minutes < 60,
            let hours = fields.count == 3 ? WordTimings.digits(fields[0], count: 1...9) : 0
        else { return nil }
        // Whole milliseconds, so the value is exact before it is turned into frames.
        return Double(((hours * 60 + minutes) * 60 + seconds) * 1000 + millis) / 1000
    }

    private static func unescape(_ text: String) -> String { CueText.decodeReferences(text) }

    /// WebVTT with karaoke timestamps: a cue per phrase (ended by . ! ? or a pause of 0.5 s or
    /// more, at most 12 words), each word after the first marked `<hh:mm:ss.mmm>` at its start;
    /// a pause inside a cue is marked at the word's end, so that readers (and `parse`) end each
    /// word where it ends. Times are rounded to the millisecond. Given the words' `sentences`,
    /// a cue ends where a sentence does instead of at . ! ? (so that a sentence of 12 words or
    /// fewer without a pause reads back as one cue, and "Mr." does not end one).
    static func write(_ words: [WordTiming], rate: Int, sentences: [SentenceTiming] = []) -> String {
        func stamp(_ frame: Int) -> String {
            let millis = Frames.convert(frame, from: rate, to: 1000)
            return String(format: "%02d:%02d:%02d.%03d", millis / 3_600_000, millis / 60000 % 60, millis / 1000 % 60, millis % 1000)
        }
        var cues: [[WordTiming]] = []
        var sentence = 0
        for word in words {
            // Whether `word` and the one before it are of one sentence.
            var sameSentence: Bool? = nil
            if !sentences.isEmpty, let last = cues.last?.last {
                while sentence < sentences.count, sentences[sentence].words.upperBound < last.index { sentence += 1 }
                sameSentence = sentence < sentences.count && sentences[sentence].words.contains(last.index) && sentences[sentence].words.contains(word.index)
            }
            if let last = cues.last?.last, let count = cues.last?.count, count < 12,
                sameSentence ?? !(last.text.last.map { ".!?".contains($0) } ?? false), word.startFrame - last.endFrame < rate / 2
            {
                cues[cues.count - 1].append(word)
            } else {
                cues.append([word])
            }
        }
        var out = "WEBVTT\n\n"
        for (number, cue) in cues.enumerated() {
            out += "\(number + 1)\n\(stamp(cue[0].startFrame)) --> \(stamp(cue.last!.endFrame))\n"
            for (position, word) in cue.enumerated() {
                if position > 0 {
                    if cue[position - 1].endFrame < word.startFrame { out += "<\(stamp(cue[position - 1].endFrame))> " }
                    out += "<\(stamp(word.startFrame))>"
                }
                out += escape(word.text) + (position + 1 < cue.count ? " " : "")
            }
            out += "\n\n"
        }
        return out
    }

    private static func escape(_ text: String) -> String {
        CueText.oneLine(text).replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
