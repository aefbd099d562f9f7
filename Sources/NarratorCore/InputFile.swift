import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one way Narrator opens a file it reads: by descriptor, checked on that descriptor.
///
/// A path is opened once, without blocking (`O_NONBLOCK`: a FIFO with no writer would block the
/// open itself for ever), then `fstat` of the descriptor must say it is a regular file — a
/// pipe, a device (`/dev/zero` never ends) or a folder is refused — and only then is the
/// descriptor made blocking again and read. What is checked is what is read: a file replaced
/// between a `stat` of its name and an `open` of it cannot slip a FIFO in.
public enum InputFile {
    /// Timing files, and the pages a SMIL file names: a long-format TextGrid of a ten-hour
    /// audiobook with its phones tier is about 100 MB.
    public static let timingLimit = 256 << 20
    /// Lesson files and sprite maps (`JSONValue.documentLimit`).
    public static let documentLimit = JSONValue.documentLimit

    /// An open regular file: its descriptor (close-on-exec, blocking) and size. The caller owns
    /// the descriptor.
    public struct Opened: Sendable {
        public let descriptor: Int32
        public let size: Int
    }

    /// Opens `path` for reading if it is a regular file; otherwise one error in words.
    public static func open(path: String) throws(NarratorError) -> Opened {
        var descriptor: Int32
        repeat {
            descriptor = systemOpen(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        } while descriptor < 0 && errno == EINTR
        guard descriptor >= 0 else {
            let code = errno
            throw NarratorError(file: path, FileProblem.check(path: path) ?? FileProblem.describe(errno: code))
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            _ = systemClose(descriptor)
            throw NarratorError(file: path, FileProblem.describe(errno: code))
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR:
            _ = systemClose(descriptor)
            throw NarratorError(file: path, "is a folder, not a file")
        default:
            _ = systemClose(descriptor)
            throw NarratorError(file: path, "not a regular file (a device, pipe or socket)")
        }
        let flags = fcntl(descriptor, F_GETFL)
        if flags >= 0 { _ = fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) }
        return Opened(descriptor: descriptor, size: Int(max(0, status.st_size)))
    }

    /// Reads the regular file at `path` whole: at most `limit` bytes, a larger file is refused
    /// before it fills memory.
    public static func read(path: String, limit: Int) throws(NarratorError) -> Data {
        let file = try open(path: path)
        defer { _ = systemClose(file.descriptor) }
        guard file.size <= limit else { throw NarratorError(file: path, "larger than \(limit >> 20) MiB: \(tooLarge)") }
        var data = Data(count: file.size)
        var got = 0
        var failure: Int32 = 0
        // Read to the end, one byte past the limit at most: the file may have grown after fstat.
        while true {
            if got == data.count {
                guard data.count <= limit else { break }
                data.count = min(limit + 1, max(data.count * 2, 65536))
            }
            let count = data.withUnsafeMutableBytes { raw in
                systemRead(file.descriptor, raw.baseAddress! + got, raw.count - got)
            }
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            if count == 0 { break }
            got += count
        }
        if failure != 0 { throw NarratorError(file: path, "cannot be read (\(FileProblem.describe(errno: failure)))") }
        guard got <= limit else { throw NarratorError(file: path, "larger than \(limit >> 20) MiB: \(tooLarge)") }
        data.count = got
        return data
    }

    private static let tooLarge = "too large for a file Narrator reads whole"

    // The C library's calls, by names that the static methods above do not shadow.
    private static func systemOpen(_ path: String, _ flags: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.open(path, flags)
        #elseif canImport(Musl)
            Musl.open(path, flags)
        #else
            Glibc.open(path, flags)
        #endif
    }
    private static func systemClose(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
            Darwin.close(descriptor)
        #elseif canImport(Musl)
            Musl.close(descriptor)
        #else
            Glibc.close(descriptor)
        #endif
    }
    private static func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        #if canImport(Darwin)
            Darwin.read(descriptor, buffer, count)
        #elseif canImport(Musl)
            Musl.read(descriptor, buffer, count)
        #else
            Glibc.read(descriptor, buffer, count)
        #endif
    }
}
