import Foundation

/// Telling a timing file's format from its name and contents.
extension TimingFormat {
    /// The format of `path`: by its extension, and for `.json` by what the document holds.
    public static func detect(path: String, data: Data) throws(NarratorError) -> TimingFormat {
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        switch ext {
        case "txt": return .audacity
        case "vtt": return .webvtt
        case "srt": return .srt
        case "textgrid": return .textgrid
        case "csv": return .aeneasCSV
        case "tsv": return .aeneasTSV
        case "smil": return .smil
        case "json":
            guard case .object(let members) = try JSONValue.parse(data, file: path) else {
                throw NarratorError(file: path, "expected a JSON object")
            }
            if members["fragments"] != nil { return .aeneasJSON }
            if members["transcript"] != nil { return .gentle }
            if case .array(let words)? = members["words"], case .object(let first)? = words.first,
                first["case"] != nil || first["alignedWord"] != nil
            {
                return .gentle
            }
            return .json
        default:
            throw NarratorError(
                file: path,
                "unknown timing format '.\(ext)' (expected .json, .txt, .vtt, .srt, .TextGrid, .csv, .tsv or .smil)")
        }
    }
}

extension WordTimings {
    /// Reads a timing file in any format Narrator imports, in frames at `rate`, checked for
    /// order and overlap.
    public static func read(path: String, rate: Int) throws(NarratorError) -> TimingImport {
        try read(try InputFile.read(path: path, limit: InputFile.timingLimit), path: path, rate: rate)
    }

    public static func read(_ data: Data, path: String, rate: Int) throws(NarratorError) -> TimingImport {
        let format = try TimingFormat.detect(path: path, data: data)
        var notes: [String] = []
        var entries: [Entry]
        // Intervals that hold the words' sentences (a TextGrid's phrase tier).
        var phrases: (tier: String, intervals: [Entry])? = nil
        switch format {
        case .json: entries = try parseJSON([UInt8](data), path: path)
        case .aeneasJSON: entries = try parseAeneasJSON(data, path: path)
        case .gentle: (entries, notes) = try parseGentle(data, path: path)
        case .smil: (entries, notes) = try SMIL.parse(data, path: path)
        case .audacity, .aeneasTSV: entries = try parseAudacity(try text(data, path: path), path: path)
        case .webvtt: entries = try WebVTT.parse(try text(data, path: path), path: path)
        case .srt: entries = try SubRip.parse(try text(data, path: path), path: path)
        case .textgrid: (entries, phrases) = try TextGrid.parse(try text(data, path: path), path: path)
        case .aeneasCSV: entries = try parseAeneasCSV(try text(data, path: path), path: path)
        case .markers: throw NarratorError(file: path, "an audio file: its cue markers are read through libsndfile")
        }
        let words = try frames(entries, path: path, rate: rate)
        if let phrases {
            try group(&entries, words, by: phrases.intervals, tier: phrases.tier, path: path, rate: rate)
        }
        let sentences = Sentences.group(words, groups: entries.map(\.group))
        return TimingImport(format: format, words: words, sentences: sentences, notes: notes)
    }

    /// Groups `words` by the intervals that hold them (a TextGrid's phrase tier, in the file's
    /// order): each word's group is the interval whose frames hold it. Intervals out of order
    /// or overlapping, and a word no interval holds, are errors naming them. One pass over both.
    static func group(
        _ entries: inout [Entry], _ words: [WordTiming], by intervals: [Entry], tier: String, path: String, rate: Int
    ) throws(NarratorError) {
        var spans: [(start: Int, end: Int)] = []
        spans.reserveCapacity(intervals.count)
        for interval in intervals {
            let start = try frame(interval.start, "starts", interval, path: path, rate: rate)
            let end = try frame(interval.end, "ends", interval, path: path, rate: rate)
            guard start <= end else {
                throw NarratorError(file: path, place: interval.place, "ends (\(Frames.describe(seconds: interval.end))) before it starts (\(Frames.describe(seconds: interval.start)))")
            }
            if let previous = spans.last, start < previous.end {
                throw NarratorError(file: path, place: interval.place, "overlaps the interval before it in tier \(shown(tier)), which ends at \(Frames.describe(previous.end, rate: rate))")
            }
            spans.append((start, end))
        }
        var next = 0
        for (position, word) in words.enumerated() {
            // An interval ending before the word's end holds neither it nor any later word
            // (words are in order and do not overlap).
            while next < spans.count, spans[next].end < word.endFrame { next += 1 }
            guard next < spans.count, spans[next].start <= word.startFrame, word.endFrame <= spans[next].end else {
                throw NarratorError(
                    file: path, place: entries[position].place,
                    "(\(Frames.describe(word.startFrame, rate: rate)) to \(Frames.describe(word.endFrame, rate: rate))) is not inside an interval of tier \(shown(tier))")
            }
            entries[position].group = next
        }
    }

    /// UTF-8, or UTF-16 with its byte-order mark (Praat writes either).
    static func text(_ data: Data, path: String) throws(NarratorError) -> String {
        if data.starts(with: [0xFF, 0xFE]) || data.starts(with: [0xFE, 0xFF]), let text = String(data: data, encoding: .utf16) {
            return text
        }
        guard let text = String(data: data, encoding: .utf8) else {
            try XMLInput.validateUTF8([UInt8](data), path: path, xml: false)
            throw NarratorError(file: path, "not UTF-8 text")
        }
        return text
    }

    /// `{"fragments": [{"begin": "0.000", "end": "1.234", "id": "f000001", "lines": ["text"]}]}`
    /// (aeneas writes the times as strings; numbers are accepted too).
    static func parseAeneasJSON(_ data: Data, path: String) throws(NarratorError) -> [Entry] {
        let root = JSONCursor(try JSONValue.parse(data, file: path), file: path)
        var entries: [Entry] = []
        for fragment in try root.object().required("fragments", in: root).array() {
            let fields = try fragment.object()
            func time(_ key: String) throws(NarratorError) -> Double {
                let cursor = try fields.required(key, in: fragment)
                switch cursor.value {
                case .number(let number): return number
                case .string(let text):
                    guard let number = Double(text) else { throw cursor.fail("expected seconds, got \(shown(text))") }
                    return number
                default: throw cursor.fail("expected seconds")
                }
            }
            let lines = try fields["lines"]?.array().map { line throws(NarratorError) in try line.string() } ?? []
            let id = try fields["id"]?.string() ?? ""
            let text = lines.joined(separator: " ").split(whereSeparator: \.isWhitespace).joined(separator: " ")
            let word = text.isEmpty ? id : text
            entries.append(Entry(text: word, start: try time("begin"), end: try time("end"), place: "\(fragment.path) \(shown(word))"))
        }
        return entries
    }

    /// `id,begin,end,"text"` per line (RFC 4180 quoting).
    static func parseAeneasCSV(_ text: String, path: String) throws(NarratorError) -> [Entry] {
        var entries: [Entry] = []
        for (number, line) in lines(of: text).enumerated() where !line.allSatisfy(\.isWhitespace) {
            let place = "line \(number + 1)"
            guard let fields = csvFields(String(line)), fields.count >= 3 else {
                throw NarratorError(file: path, place: place, "expected id,begin,end,\"text\"")
            }
            guard let start = Double(fields[1].trimmingCharacters(in: .whitespaces)), let end = Double(fields[2].trimmingCharacters(in: .whitespaces)) else {
                throw NarratorError(file: path, place: place, "begin and end must be numbers of seconds")
            }
            let text = fields.count > 3 ? fields[3...].joined(separator: ",").split(whereSeparator: \.isWhitespace).joined(separator: " ") : ""
            let word = text.isEmpty ? fields[0] : text
            entries.append(Entry(text: word, start: start, end: end, place: "\(place) \(shown(word))"))
        }
        return entries
    }

    /// One CSV record's fields; nil for an unclosed quote.
    static func csvFields(_ line: String) -> [String]? {
        var fields: [String] = []
        var field = ""
        var quoted = false
        var characters = line.makeIterator()
        var pending: Character? = nil
        while let character = pending ?? characters.next() {
            pending = nil
            if quoted {
                if character == "\"" {
                    let following = characters.next()
                    if following == "\"" { field.append("\"") } else { quoted = false; pending = following }
                } else {
                    field.append(character)
                }
            } else if character == "\"" {
                quoted = true
            } else if character == "," {
                fields.append(field)
                field = ""
            } else {
                field.append(character)
            }
        }
        if quoted { return nil }
        fields.append(field)
        return fields
    }

    /// Gentle: `{"transcript": …, "words": [{"word", "case", "start", "end", …}]}`. Words whose
    /// case is not "success" (not-found-in-audio, not-found-in-transcript) have no times:
    /// skipped, and named in the notes.
    static func parseGentle(_ data: Data, path: String) throws(NarratorError) -> ([Entry], [String]) {
        let root = JSONCursor(try JSONValue.parse(data, file: path), file: path)
        var entries: [Entry] = []
        var skipped: [String] = []
        for word in try root.object().required("words", in: root).array() {
            let fields = try word.object()
            let text = try fields.required("word", in: word).string()
            let outcome = try fields["case"]?.string() ?? "success"
            guard outcome == "success" else {
                skipped.append("\(word.path) \(shown(text)) (\(outcome))")
                continue
            }
            entries.append(
                Entry(
                    text: text, start: try fields.required("start", in: word).number(),
                    end: try fields.required("end", in: word).number(), place: "\(word.path) \(shown(text))"))
        }
        let notes = skipped.isEmpty ? [] : ["\(path): skipped \(skipped.count) word\(skipped.count == 1 ? "" : "s") Gentle did not align: " + skipped.joined(separator: ", ")]
        return (entries, notes)
    }

    /// Narrator's canonical JSON, seconds to the microsecond (exact to the frame at any rate
    /// up to 500 kHz).
    public static func writeJSON(_ words: [WordTiming], rate: Int) -> String {
        let lines = words.map { word in
            String(format: "{\"text\": %@, \"start\": %.6f, \"end\": %.6f}", EventEncoder.quoted(word.text), Double(word.startFrame) / Double(rate), Double(word.endFrame) / Double(rate))
        }
        return "{\"words\": [\n  " + lines.joined(separator: ",\n  ") + "\n]}\n"
    }

    /// An Audacity label track, `start<TAB>end<TAB>text` per line, seconds to the microsecond
    /// (exact to the frame at any rate up to 500 kHz, as `writeJSON`). A text holding a tab or
    /// a line break has its whitespace runs turned into one space: the format cannot quote them.
    public static func writeAudacity(_ words: [WordTiming], rate: Int) -> String {
        words.map { word in
            let text = CueText.oneLine(word.text)
            return String(format: "%.6f\t%.6f\t", Double(word.startFrame) / Double(rate), Double(word.endFrame) / Double(rate)) + text + "\n"
        }.joined()
    }

    /// Writes `words` to `path` in the format its extension names (.json, .txt, .vtt, .srt, .smil;
    /// .smil also writes its XHTML page beside it). `audio` is the clip SMIL refers to.
    /// `sentences` of the words, when given, are kept where the format can hold them (SMIL's
    /// page: a `<span class="sentence">` around each sentence's words; WebVTT: no cue holds
    /// words of two sentences). `notes`, lines for the reader (not for players), go where the
    /// format has a place for them: WebVTT's NOTE block; the other formats drop them.
    /// Files appear complete or not at all.
    public static func write(
        _ words: [WordTiming], rate: Int, to path: String, audio: String? = nil, sentences: [SentenceTiming] = [], notes: [String] = []
    ) throws(NarratorError) {
        let url = URL(fileURLWithPath: path)
        let ext = url.pathExtension.lowercased()
        guard let format = TimingFormat.writable[ext] else {
            throw NarratorError(file: path, "cannot write '.\(ext)' (expected \(TimingFormat.writableList))")
        }
        var files: [(String, String)] = []
        switch format {
        case .json: files = [(path, writeJSON(words, rate: rate))]
        case .audacity: files = [(path, writeAudacity(words, rate: rate))]
        case .webvtt:
            var text = WebVTT.write(words, rate: rate, sentences: sentences)
            if !notes.isEmpty {
                // A NOTE block holds no blank line and no "-->".
                let lines = notes.map { CueText.oneLine($0).replacingOccurrences(of: "-->", with: "->") }.filter { !$0.allSatisfy(\.isWhitespace) }
                text = text.replacingOccurrences(of: "WEBVTT\n\n", with: "WEBVTT\n\nNOTE\n" + lines.joined(separator: "\n") + "\n\n", options: .anchored)
            }
            files = [(path, text)]
        case .srt: files = [(path, SubRip.write(words, rate: rate))]
        case .smil:
            let page = url.deletingPathExtension().lastPathComponent + ".xhtml"
            let (smil, xhtml) = SMIL.write(
                words, rate: rate, page: page, audio: audio ?? url.deletingPathExtension().lastPathComponent + ".wav", sentences: sentences)
            files = [(url.deletingLastPathComponent().appendingPathComponent(page).path, xhtml), (path, smil)]
        default: break
        }
        // Every file is written whole before any is moved into place; the moves themselves are
        // one rename each, the page first, so a SMIL file never names a page that is not there
        // (a failure between the two leaves the new page beside the old SMIL file).
        var outputs: [AtomicFile] = []
        for (file, text) in files {
            let output = try AtomicFile(path: file)
            outputs.append(output)
            try output.write(Data(text.utf8))
        }
        for output in outputs { try output.commit() }
    }
}
