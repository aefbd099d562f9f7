import Foundation

/// docs/events.schema.json, checked by `scripts/validate-events.py` (python3-jsonschema): the
/// ground truth of what every cue and event line may hold, written apart from the encoder.
public enum EventSchema {
    public static let validator = Repo.path("scripts/validate-events.py")

    /// Whether python3 has the jsonschema module.
    public static var available: Bool {
        (try? runTool("python3", ["-c", "import jsonschema"]).status) == 0
    }

    /// Validates `text` (JSON lines, or one document) against the schema's definition
    /// `definition` (cueLine, cueSheet, event, playLine, daemonLine): nil when every value is
    /// valid, else the validator's report (a line per invalid value).
    public static func problems(_ text: String, as definition: String, document: Bool = false) throws -> String? {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("events-\(UUID().uuidString).jsonl").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        defer { try? FileManager.default.removeItem(atPath: file) }
        let result = try runTool("python3", [validator, definition, file] + (document ? ["--document"] : []))
        return result.status == 0 ? nil : result.stdout + result.stderr
    }
}
