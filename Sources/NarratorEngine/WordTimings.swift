/// One word of a timing file, in frames from the start of its audio file.
public struct WordTiming: Sendable, Equatable {
    /// 0-based position in the timing file.
    public var index: Int
    public var text: String
    public var startFrame: Int
    /// Exclusive: the first frame after the word.
    public var endFrame: Int

    public init(index: Int, text: String, startFrame: Int, endFrame: Int) {
        self.index = index
        self.text = text
        self.startFrame = startFrame
        self.endFrame = endFrame
    }
}

/// Word-timing files: the formats authors bring, read into frames at one rate.
public enum WordTimings {
    /// A word as a parser found it: still in seconds, with the place it came from.
    package struct Entry {
        package var text: String
        package var start: Double
        package var end: Double
        package var place: String
        /// The file's group of the word (its WebVTT cue, SMIL sentence), when it has one.
        package var group: Int? = nil

        package init(text: String, start: Double, end: Double, place: String, group: Int? = nil) {
            self.text = text
            self.start = start
            self.end = end
            self.place = place
            self.group = group
        }
    }

    /// For words that run past the end of their audio (`audioFrames` long): a hint when the
    /// file's times look like milliseconds, "" otherwise. They do when the last word ends over
    /// ten times the audio's length as written, and within it once divided by 1000 (a word a
    /// little past the end is a timing slip, not a unit).
    public static func millisecondsHint(_ words: [WordTiming], audioFrames: Int, rate: Int) -> String {
        guard audioFrames > 0, let last = words.map({ $0.endFrame }).max(), last / 10 > audioFrames, last / 1000 <= audioFrames else {
            return ""
        }
        return "; the times look like milliseconds (\(Frames.describe(last, rate: rate)) would be \(Frames.describe(last / 1000, rate: rate))): timing files give seconds"
    }

    /// Converts to frames and checks: each word ends at or after its start, starts at or after
    /// the previous word's start, and does not overlap it.
    package static func frames(_ entries: [Entry], path: String, rate: Int) throws(NarratorError) -> [WordTiming] {
        if entries.isEmpty { throw NarratorError(file: path, "holds no words") }
        var words: [WordTiming] = []
        words.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            let start = try frame(entry.start, "starts", entry, path: path, rate: rate)
            let end = try frame(entry.end, "ends", entry, path: path, rate: rate)
            if end < start {
                let (said, other) = (Frames.describe(seconds: entry.end), Frames.describe(seconds: entry.start))
                // Two times a millisecond apart or less read the same: the frames tell them apart.
                let detail = said == other ? " (frame \(end) before frame \(start) at \(rate) Hz)" : ""
                throw NarratorError(file: path, place: entry.place, "ends (\(said)) before it starts (\(other))\(detail)")
            }
            if let previous = words.last {
                if start < previous.startFrame {
                    throw NarratorError(
                        file: path, place: entry.place,
                        "out of order: starts before word \(previous.index) \(shown(previous.text))")
                }
                if start < previous.endFrame {
                    throw NarratorError(
                        file: path, place: entry.place,
                        "overlaps word \(previous.index) \(shown(previous.text)), which ends at \(Frames.describe(previous.endFrame, rate: rate))")
                }
            }
            words.append(WordTiming(index: index, text: entry.text, startFrame: start, endFrame: end))
        }
        return words
    }

    /// A time of `entry` in frames: finite, not before 0, and within what a frame count holds;
    /// else an error naming the word and the value as the file gave it.
    package static func frame(_ seconds: Double, _ verb: String, _ entry: Entry, path: String, rate: Int) throws(NarratorError) -> Int {
        guard seconds.isFinite else {
            throw NarratorError(file: path, place: entry.place, "\(verb) at \(seconds), not a time")
        }
        guard seconds >= 0 else {
            throw NarratorError(file: path, place: entry.place, "\(verb) at \(Frames.describe(seconds: seconds)), before the audio starts (0 s)")
        }
        guard let frame = Frames.from(seconds: seconds, rate: rate) else {
            throw NarratorError(file: path, place: entry.place, "\(verb) at \(Frames.describe(seconds: seconds)), beyond any audio")
        }
        return frame
    }

    /// A plain decimal number as subtitle and SMIL clocks write their fields: ASCII digits
    /// with at most one decimal point, no sign, exponent, "nan" or hex (which `Double(_:)`
    /// would take). Nil for anything else.
    package static func plainNumber(_ text: Substring) -> Double? {
        var digits = 0
        var points = 0
        for byte in text.utf8 {
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                digits += 1
            } else if byte == UInt8(ascii: ".") {
                points += 1
            } else {
                return nil
            }
        }
        guard digits > 0, points <= 1 else { return nil }
        return Double(text)
    }

    /// A field of ASCII digits only (at most `maxDigits`, so that it cannot overflow what it
    /// is multiplied by), as an integer.
    package static func digits(_ text: Substring, count allowed: ClosedRange<Int>) -> Int? {
        guard allowed.contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return Int(text)
    }

    /// `{"words": [{"text": "A", "start": 1.005, "end": 1.326}, ...]}`
    package static func parseJSON(_ bytes: [UInt8], path: String) throws(NarratorError) -> [Entry] {
        let root = JSONCursor(try JSONValue.parse(bytes, file: path), file: path)
        let words = try root.object().required("words", in: root).array()
        var entries: [Entry] = []
        for word in words {
            let fields = try word.object(allowing: ["text", "start", "end"])
            let text = try fields.required("text", in: word).string()
            entries.append(
                Entry(
                    text: text,
                    start: try fields.required("start", in: word).number(),
                    end: try fields.required("end", in: word).number(),
                    place: "\(word.path) \(shown(text))"))
        }
        return entries
    }

    /// Narrator's own timing file (`parseJSON`), in frames at `rate`, checked for order and
    /// overlap: what the WebAssembly build reads (`narrator pack --web` converts the others).
    public static func readJSON(_ bytes: [UInt8], path: String, rate: Int) throws(NarratorError) -> TimingImport {
        let entries = try parseJSON(bytes, path: path)
        let words = try frames(entries, path: path, rate: rate)
        return TimingImport(format: .json, words: words, sentences: Sentences.group(words, groups: entries.map({ $0.group })))
    }

    /// A word's text as a message quotes it: at most 60 characters, the rest elided.
    package static func shown(_ text: some StringProtocol) -> String {
        text.count <= 60 ? "'\(text)'" : "'\(text.prefix(59))…'"
    }

    /// Lines split at LF, CRLF or CR ("\r\n" is one Character in Swift).
    package static func lines(of text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
    }
}
