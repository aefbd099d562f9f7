import Foundation
import NarratorKit

/// The folder of lesson files the daemon may open. A request names a lesson by its path
/// relative to the folder; anything that resolves outside it (an absolute path, `..`, a
/// symbolic link that leads out) is refused.
struct LessonLibrary: Sendable {
    /// The folder's real path, without a trailing slash.
    let root: String

    init(path: String) throws(NarratorError) {
        guard let real = Self.realPath(path) else {
            throw NarratorError(file: path, "the lesson library is not a readable folder")
        }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: real, isDirectory: &isFolder), isFolder.boolValue else {
            throw NarratorError(file: path, "the lesson library is not a folder")
        }
        root = real
    }

    /// The lesson's real path inside the library.
    func resolve(_ name: String) throws(NarratorError) -> String {
        // Refused by its name alone, whether or not such a file exists: an absolute path, a
        // `..` step, a NUL.
        let steps = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !name.isEmpty, !name.hasPrefix("/"), !name.contains("\0"), !steps.contains("..") else {
            throw NarratorError(file: "request", place: "lesson", "'\(name)' is outside the lesson library")
        }
        guard let real = Self.realPath(root + "/" + name) else {
            throw NarratorError(file: "request", place: "lesson", "no lesson '\(name)' in the library")
        }
        // A symbolic link inside that leads out. Compared byte for byte.
        guard real.utf8.starts(with: (root == "/" ? "/" : root + "/").utf8) else {
            throw NarratorError(file: "request", place: "lesson", "'\(name)' is outside the lesson library")
        }
        return real
    }

    /// The largest lesson file read: lessons are small (the audio is in files they name).
    static let maxLessonBytes = 16 << 20

    func load(_ name: String) throws(NarratorError) -> NarratorLesson {
        let path = try resolve(name)
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw NarratorError(file: name, "not a regular file")
        }
        guard info.st_size <= Self.maxLessonBytes else {
            throw NarratorError(file: name, "\(info.st_size) bytes, over the \(Self.maxLessonBytes >> 20) MiB a lesson file may have")
        }
        return try NarratorLesson(path: path)
    }

    /// The most lesson files `programs()` reads.
    static let maxListedLessons = 1000

    /// What the library holds, for a client's menu (the `library` request): for each `.json`
    /// file at the library's top level, in byte order of its name (at most `maxListedLessons`),
    /// the members of one `program` event per chain (`lesson`, `chain`) and per activity
    /// (`lesson`, `activity`, `answers` its steps' answers in step order, once each, `sounds`
    /// and `states` its tap sounds' and intro states' names, sorted), chains and activities
    /// sorted by name; or one event with `lesson` and `problem` (why it cannot be read) for a
    /// file that is not a lesson or leads out of the library. Run by a loader child: a lesson
    /// file is read here.
    func programs() -> [[EventEncoder.Member]] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            .prefix(Self.maxListedLessons)
        var events: [[EventEncoder.Member]] = []
        for name in names {
            let lessonMember = EventEncoder.Member("lesson", .string(name))
            let lesson: Lesson
            do throws(NarratorError) {
                lesson = try load(name).lesson
            } catch {
                events.append([lessonMember, EventEncoder.Member("problem", .string(publicDescription(of: error)))])
                continue
            }
            for chain in lesson.chains.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                events.append([lessonMember, EventEncoder.Member("chain", .string(chain))])
            }
            for id in lesson.activities.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                guard let activity = lesson.activities[id] else { continue }
                var answers: [String] = []
                for step in activity.steps where !answers.contains(step.answer) { answers.append(step.answer) }
                events.append([
                    lessonMember, EventEncoder.Member("activity", .string(id)),
                    EventEncoder.Member("answers", .strings(answers)),
                    EventEncoder.Member("sounds", .strings(activity.sounds.keys.sorted())),
                    EventEncoder.Member("states", .strings(activity.intro.keys.sorted())),
                ])
            }
        }
        return events
    }

    /// `error` as a client may read it: files inside the library by their path in it, any other
    /// absolute path by its last component only (`…/name`). Clients never learn where the
    /// library or anything else lives on the host.
    func publicDescription(of error: NarratorError) -> String {
        NarratorError(file: publicPath(error.file), place: error.place.map(scrub), scrub(error.message)).description
    }

    /// A path as a client may see it: the library itself is `.`, a path inside it is relative
    /// to it, any other absolute path is its last component only.
    func publicPath(_ path: String) -> String {
        if path == root { return "." }
        let prefix = root == "/" ? "/" : root + "/"
        if path.hasPrefix(prefix) { return String(path.dropFirst(prefix.count)) }
        if path.hasPrefix("/") { return "…/" + (path.split(separator: "/").last.map(String.init) ?? "") }
        return path
    }

    /// Characters that end a path in a message.
    private static let pathEnds: Set<Character> = ["'", "\"", "`", ")", "]", ",", ";"]

    /// `text` with every absolute path in it made public (`publicPath`, one path at a time, so
    /// that the library's prefix is removed only where a path starts with it: never from a
    /// sibling such as `/srv/narrator-audio` of `/srv/narrator`). A path starts at a `/` that
    /// begins the text or follows a space, a quote, a bracket, `=` or `:`, and runs to the next
    /// space, quote, bracket, comma or semicolon. The library's path met elsewhere (inside a
    /// word) becomes `.` when it ends there or is followed by `/` or an end of path.
    func scrub(_ text: String) -> String {
        var out = ""
        var path: String?
        var previous: Character = " "
        for character in text {
            if var current = path {
                if character.isWhitespace || Self.pathEnds.contains(character) {
                    out += publicPath(current) + String(character)
                    path = nil
                } else {
                    current.append(character)
                    path = current
                }
            } else if character == "/" && (previous.isWhitespace || "'\"`([=:".contains(previous)) {
                path = "/"
            } else {
                out.append(character)
            }
            previous = character
        }
        if let path { out += publicPath(path) }
        return root == "/" ? out : Self.replaceBounded(root, in: out)
    }

    /// `text` with `root` replaced by `.` wherever it is followed by `/`, an end of path or the
    /// end of the text.
    private static func replaceBounded(_ root: String, in text: String) -> String {
        var out = ""
        var rest = text[...]
        while let range = rest.range(of: root) {
            let after = rest[range.upperBound...].first
            out += rest[..<range.lowerBound]
            if after == nil || after == "/" || after!.isWhitespace || pathEnds.contains(after!) {
                out += "."
            } else {
                out += rest[range]
            }
            rest = rest[range.upperBound...]
        }
        return out + rest
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
