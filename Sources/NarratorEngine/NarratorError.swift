/// Every error Narrator reports names the file it is about and, where there is one, the place
/// inside it (a line, a word, a lesson key). The CLI prints `description` as its one line.
public struct NarratorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file the error is about, as the user named it (or as resolved from a lesson).
    public var file: String
    /// Where in the file: "line 3", "word 2 'apple'", "chains.correct[1].pool"; nil when the
    /// whole file is at fault.
    public var place: String?
    public var message: String

    public init(file: String, place: String? = nil, _ message: String) {
        self.file = file
        self.place = place
        self.message = message
    }

    public var description: String {
        if let place { return "\(file): \(place): \(message)" }
        return "\(file): \(message)"
    }
}
