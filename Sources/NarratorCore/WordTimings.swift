import Foundation

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
    struct Entry {
        var text: String
        var start: Double
        var end: Double
        var place: String
    }

    /// Reads `path` (any format `read` knows) and returns its words in frames at `rate`,
    /// checked for order and overlap.
    public static func load(path: String, rate: Int) throws(NarratorError) -> [WordTiming] {
        try read(path: path, rate: rate).words
    }

    public static func parse(_ data: Data, path: String, rate: Int) throws(NarratorError) -> [WordTiming] {
        try read(data, path: path, rate: rate).words
    }

    /// Converts to frames and checks: each word ends at or after its start, starts at or after
    /// the previous word's start, and does not overlap it.
    static func frames(_ entries: [Entry], path: String, rate: Int) throws(NarratorError) -> [WordTiming] {
        if entries.isEmpty { throw NarratorError(file: path, "holds no words") }
        var words: [WordTiming] = []
        words.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            guard entry.start >= 0, let start = Frames.from(seconds: entry.start, rate: rate),
                let end = Frames.from(seconds: entry.end, rate: rate)
            else { throw NarratorError(file: path, place: entry.place, "time out of range") }
            if end < start {
                throw NarratorError(file: path, place: entry.place, "ends (\(entry.end) s) before it starts (\(entry.start) s)")
            }
            if let previous = words.last {
                if start < previous.startFrame {
                    throw NarratorError(
                        file: path, place: entry.place,
                        "out of order: starts before word \(previous.index) '\(previous.text)'")
                }
                if start < previous.endFrame {
                    throw NarratorError(
                        file: path, place: entry.place,
                        "overlaps word \(previous.index) '\(previous.text)', which ends at \(Frames.seconds(previous.endFrame, rate: rate)) s")
                }
            }
            words.append(WordTiming(index: index, text: entry.text, startFrame: start, endFrame: end))
        }
        return words
    }

    /// `{"words": [{"text": "A", "start": 1.005, "end": 1.326}, ...]}`
    static func parseJSON(_ data: Data, path: String) throws(NarratorError) -> [Entry] {
        let root = JSONCursor(try JSONValue.parse(data, file: path), file: path)
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
                    place: "\(word.path) '\(text)'"))
        }
        return entries
    }

    /// An Audacity label track: `start<TAB>end<TAB>text` per line. Lines that start with a
    /// backslash carry a label's frequency range (spectral selection) and are skipped.
    static func parseAudacity(_ text: String, path: String) throws(NarratorError) -> [Entry] {
        var entries: [Entry] = []
        for (number, line) in lines(of: text).enumerated() {
            if line.allSatisfy(\.isWhitespace) || line.hasPrefix("\\") { continue }
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            let place = "line \(number + 1)"
            guard fields.count >= 2 else {
                throw NarratorError(file: path, place: place, "expected start<TAB>end<TAB>text")
            }
            guard let start = Double(fields[0].trimmingCharacters(in: .whitespaces)),
                let end = Double(fields[1].trimmingCharacters(in: .whitespaces))
            else {
                throw NarratorError(file: path, place: place, "start and end must be numbers of seconds")
            }
            let word = fields.count == 3 ? String(fields[2]).trimmingCharacters(in: .whitespaces) : ""
            entries.append(Entry(text: word, start: start, end: end, place: "\(place) '\(word)'"))
        }
        return entries
    }

    /// Lines split at LF, CRLF or CR ("\r\n" is one Character in Swift).
    static func lines(of text: String) -> [Substring] {
        text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
    }
}
