import Foundation

/// Reading an input file whole, bounded. Only a regular file is read (a FIFO would block for
/// ever, `/dev/zero` never ends), and at most `limit` bytes: a larger file is refused before
/// it fills memory.
public enum InputFile {
    /// Timing files, and the pages a SMIL file names: a long-format TextGrid of a ten-hour
    /// audiobook with its phones tier is about 100 MB.
    public static let timingLimit = 256 << 20

    public static func read(path: String, limit: Int) throws(NarratorError) -> Data {
        var status = stat()
        guard stat(path, &status) == 0 else { throw NarratorError(file: path, FileProblem.describe(path: path)) }
        switch status.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw NarratorError(file: path, "is a folder, not a file")
        default: throw NarratorError(file: path, "not a regular file (a device, pipe or socket)")
        }
        guard Int(status.st_size) <= limit else { throw NarratorError(file: path, "larger than \(limit >> 20) MiB: \(tooLarge)") }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw NarratorError(file: path, FileProblem.describe(path: path)) }
        defer { try? handle.close() }
        let data: Data
        do { data = try handle.read(upToCount: limit + 1) ?? Data() } catch {
            throw NarratorError(file: path, "cannot be read (\(error.localizedDescription))")
        }
        // The file grew after stat.
        guard data.count <= limit else { throw NarratorError(file: path, "larger than \(limit >> 20) MiB: \(tooLarge)") }
        return data
    }

    private static let tooLarge = "too large for a file Narrator reads whole"
}
