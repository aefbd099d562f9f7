import Foundation

/// The timing files Narrator reads natively (the formats live in TimingFormats and beside it).
extension WordTimings {
    /// Reads `path` (any format `read` knows) and returns its words in frames at `rate`,
    /// checked for order and overlap.
    public static func load(path: String, rate: Int) throws(NarratorError) -> [WordTiming] {
        try read(path: path, rate: rate).words
    }

    public static func parse(_ data: Data, path: String, rate: Int) throws(NarratorError) -> [WordTiming] {
        try read(data, path: path, rate: rate).words
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
            entries.append(Entry(text: word, start: start, end: end, place: "\(place) \(shown(word))"))
        }
        return entries
    }

}
