import Foundation
import NarratorCore

/// `align --manifest`: one recording to align a line, as JSON Lines (a line a shell loop or a
/// spreadsheet export can write, and a worker can count without reading the whole catalog):
///
///     {"audio": "apple.wav", "text": "an apple", "timings": "apple.json"}
///     {"audio": "pear.wav", "transcript": "pear.txt", "timings": "pear.vtt", "language": "spa"}
///
/// Paths are relative to the manifest's folder (the timings' to `--to` when it is given), and
/// each item's timings must land inside that folder, whatever `..`, an absolute path or a
/// symbolic link in it says (`RealPath`). Blank lines are skipped; every other line is
/// an item, numbered from 1 in order (the `item` of the report and of `--shard`). The whole
/// manifest is checked before anything is aligned: a bad line is one error naming it.
struct AlignManifest {
    struct Item {
        /// 1-based, in the manifest's order.
        var ordinal: Int
        var line: Int
        var audio: String
        var text: String?
        var transcript: String?
        var timings: String
        var language: String
        /// The paths as the manifest spells them (the report's, the same on every host).
        var written: (audio: String, timings: String)
    }

    var items: [Item]
    /// `BatchReport.digest` of the manifest's bytes.
    var digest: String
    /// The folders paths are relative to (standardized): the manifest's, and the timings'.
    var folders: [String] = []

    /// `path` as the manifest spells it (relative to its folder, or the timings' folder) when
    /// it is under one: what a report says, the same for every worker wherever it runs.
    func written(_ path: String) -> String {
        for folder in folders where path.hasPrefix(folder + "/") { return String(path.dropFirst(folder.count + 1)) }
        return path
    }

    /// `outputFolder`: where the items' timings go (default: the manifest's folder).
    static func read(path: String, defaultLanguage: String, outputFolder: String? = nil) throws(NarratorError) -> AlignManifest {
        let data = try InputFile.read(path: path, limit: InputFile.documentLimit)
        guard let text = String(data: data, encoding: .utf8) else { throw NarratorError(file: path, "not UTF-8 text") }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        let outputs = outputFolder.map { URL(fileURLWithPath: $0) } ?? folder
        func resolve(_ relative: String, in base: URL? = nil) -> String {
            relative.hasPrefix("/") ? relative : (base ?? folder).appendingPathComponent(relative).standardizedFileURL.path
        }
        // Where the timings' folder really is: every item's timings must land inside it.
        guard let outputsReal = RealPath.resolve(outputs.path) else {
            throw NarratorError(file: outputs.path, "a loop of symbolic links")
        }
        var items: [Item] = []
        var writers: [String: Int] = [:]
        // Lines end in LF or CRLF (a Character each).
        for (offset, row) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            let line = offset + 1
            guard !row.allSatisfy(\.isWhitespace) else { continue }
            let place = "line \(line)"
            let root = JSONCursor(try JSONValue.parse(Data(row.utf8), file: "\(path): \(place)"), file: path, path: place)
            let members = try root.object(allowing: ["audio", "text", "transcript", "timings", "language"])
            func filePath(_ key: String) throws(NarratorError) -> String? {
                guard let cursor = members[key] else { return nil }
                let value = try cursor.string()
                guard !value.isEmpty, value.utf8.count <= 4096, !value.contains("\0") else { throw cursor.fail("expected a file path") }
                return value
            }
            guard let audio = try filePath("audio") else { throw NarratorError(file: path, place: "\(place).audio", "missing key") }
            guard let timings = try filePath("timings") else { throw NarratorError(file: path, place: "\(place).timings", "missing key") }
            let spoken = try members["text"].map { cursor throws(NarratorError) in try cursor.string() }
            let transcript = try filePath("transcript")
            guard (spoken == nil) != (transcript == nil) else {
                throw NarratorError(file: path, place: place, "give the words with \"text\" or \"transcript\" (one of them)")
            }
            var language = defaultLanguage
            if let cursor = members["language"] {
                language = try cursor.string()
                guard Align.isLanguage(language) else { throw cursor.fail("expected a language code such as eng") }
            }
            let output = resolve(timings, in: outputs)
            // Inside the folder wherever `..`, an absolute path or a symbolic link inside it
            // (a folder or the file itself, dangling or not) leads.
            // (SMIL's page is written beside it: checked as well.)
            let url = URL(fileURLWithPath: output)
            let page = url.pathExtension.lowercased() == "smil"
                ? url.deletingLastPathComponent().appendingPathComponent(url.deletingPathExtension().lastPathComponent + ".xhtml").path : nil
            let pageInside = page.map { page in RealPath.resolve(page).map { RealPath.isInside($0, outputsReal) } ?? false } ?? true
            guard let landing = RealPath.resolve(output), RealPath.isInside(landing, outputsReal), landing != outputsReal, pageInside else {
                let folder = outputFolder == nil ? "the manifest's folder" : "--to \(outputFolder!)"
                throw NarratorError(
                    file: path, place: "\(place).timings", "'\(timings)' leads outside \(folder), where the timings are written")
            }
            let key = landing
            if let other = writers[key] {
                throw NarratorError(file: path, place: "\(place).timings", "'\(timings)' is written by line \(other) too")
            }
            writers[key] = line
            guard items.count < BatchReport.maxItems else { throw NarratorError(file: path, place: place, "more than \(BatchReport.maxItems) items") }
            items.append(
                Item(
                    ordinal: items.count + 1, line: line, audio: resolve(audio), text: spoken, transcript: transcript.map { resolve($0) },
                    timings: output, language: language, written: (audio, timings)))
        }
        guard !items.isEmpty else { throw NarratorError(file: path, "lists no recordings (one JSON object a line)") }
        return AlignManifest(
            items: items, digest: BatchReport.digest(data),
            folders: [outputs.standardizedFileURL.path, folder.standardizedFileURL.path])
    }
}
