import Foundation

// The engine (NarratorEngine) is the Foundation-free core that also builds for WebAssembly;
// everything that imports NarratorCore sees it as part of this module.
@_exported import NarratorEngine

/// The disk as the engine reads it: `InputFile`'s reads (bounded, one clear error naming the
/// file) and the file system's answer to "is it there".
public struct DiskFiles: LessonFiles {
    public init() {}

    public func read(path: String, limit: Int) throws(NarratorError) -> [UInt8] {
        [UInt8](try InputFile.read(path: path, limit: limit))
    }

    public func exists(path: String) -> Bool { FileManager.default.fileExists(atPath: path) }
}

extension JSONValue {
    /// `parse` of the bytes of `data`.
    public static func parse(_ data: Data, file: String, maxDepth: Int = JSONValue.maxDepth) throws(NarratorError) -> JSONValue {
        let outcome: Result<JSONValue, NarratorError> = data.withUnsafeBytes { raw in
            do throws(NarratorError) {
                return .success(try parse(raw.bindMemory(to: UInt8.self), file: file, maxDepth: maxDepth))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }
}

extension Lesson {
    /// The folder that clip and timing paths are relative to, as a file URL.
    public var directory: URL { URL(fileURLWithPath: folder, isDirectory: true) }

    /// Reads and validates the lesson file at `path`; with `locale`, its clips are that
    /// locale's (`localized(to:)`).
    public static func load(path: String, locale: String? = nil) throws(NarratorError) -> Lesson {
        let data = try InputFile.read(path: path, limit: InputFile.documentLimit)
        let lesson = try parse(data, path: path, directory: URL(fileURLWithPath: path).deletingLastPathComponent())
        guard let locale else { return lesson }
        return try lesson.localized(to: locale)
    }

    /// Parses lesson JSON read from disk; `directory` is where relative paths start.
    public static func parse(_ data: Data, path: String, directory: URL) throws(NarratorError) -> Lesson {
        try parse([UInt8](data), path: path, folder: directory.path, files: DiskFiles())
    }
}

extension SpriteMap {
    public static func load(path: String) throws(NarratorError) -> SpriteMap { try load(path: path, files: DiskFiles()) }

    public static func parse(_ data: Data, path: String) throws(NarratorError) -> SpriteMap { try parse([UInt8](data), path: path) }

    /// The first source that exists and that Narrator can decode: a web sprite usually lists a
    /// WebM or M4A first, for browsers.
    public func audioFile() throws(NarratorError) -> String { try audioFile(files: DiskFiles()) }
}

extension AudioDecoder {
    /// Every timing format Narrator reads, from disk.
    public func wordTimings(path: String, sampleRate: Int) throws(NarratorError) -> TimingImport {
        try WordTimings.read(path: path, rate: sampleRate)
    }
}
