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

    func load(_ name: String) throws(NarratorError) -> NarratorLesson {
        try NarratorLesson(path: try resolve(name))
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
