/// The scripts of taps and requests (`--taps`, `--requests`, and the WebAssembly build's
/// scripted runs): seconds as heard, converted to frames once, here.

/// The latest a scripted tap or request may come, in seconds: a day, as for --until.
public let maxScriptSeconds: Double = 86400

/// `seconds` (not negative) in frames at `rate`; later than a day is an error naming the item.
public func scriptFrame(_ seconds: Double, rate: Int, option: String, item index: Int, text: Substring) throws(NarratorError) -> Int? {
    guard seconds <= maxScriptSeconds, let frame = Frames.from(seconds: seconds, rate: rate) else {
        throw NarratorError(file: option, place: "item \(index + 1) '\(text)'", "seconds must be between 0 and 86400 (a day)")
    }
    return frame
}

/// `--requests 0:text:letter-a,0.4:text:letter-b`: announcements in seconds as heard.
public enum RequestScript {
    public static func parse(_ script: String, rate: Int) throws(NarratorError) -> [AnnouncementRequest] {
        var requests: [AnnouncementRequest] = []
        for (index, item) in script.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let parts = item.split(separator: ":", omittingEmptySubsequences: false).map { $0.trimmingSpaces() }
            guard parts.count == 3, let seconds = Double(parts[0]), seconds >= 0,
                let frame = try scriptFrame(seconds, rate: rate, option: "--requests", item: index, text: item),
                let priority = Priority(rawValue: String(parts[1])), !parts[2].isEmpty
            else {
                throw NarratorError(
                    file: "--requests", place: "item \(index + 1) '\(item)'",
                    "expected SECONDS:PRIORITY:CHAIN, e.g. 0.5:text:letter-b (priorities: important, message, text, notification, progress)")
            }
            requests.append(AnnouncementRequest(frame: frame, id: "r\(index + 1)", chain: String(parts[2]), priority: priority))
        }
        return requests
    }
}

/// `--taps 3.2:the,9.0:wig`: taps in seconds as heard, converted to frames once, here.
public enum TapScript {
    public static func parse(_ script: String, rate: Int) throws(NarratorError) -> [Tap] {
        var taps: [Tap] = []
        for (index, item) in script.split(separator: ",", omittingEmptySubsequences: false).enumerated() where !script.isEmpty {
            let parts = item.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let seconds = Double(parts[0].trimmingSpaces()), seconds >= 0,
                let frame = try scriptFrame(seconds, rate: rate, option: "--taps", item: index, text: item), !parts[1].isEmpty
            else {
                throw NarratorError(file: "--taps", place: "item \(index + 1) '\(item)'", "expected SECONDS:ANSWER, e.g. 3.2:the")
            }
            taps.append(Tap(frame: frame, answer: parts[1].trimmingSpaces()))
        }
        return taps
    }
}

extension StringProtocol {
    /// The text without the spaces and tabs around it (Unicode space separators and tab, as
    /// Foundation's `.whitespaces`; line breaks stay).
    func trimmingSpaces() -> String {
        func isSpace(_ character: Character) -> Bool {
            guard character.unicodeScalars.count == 1, let scalar = character.unicodeScalars.first else { return false }
            return scalar == "\t" || UnicodeSpaces.isSpaceSeparator(scalar)
        }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
