import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Output that appears under its name only when complete: the one owner of writing beside the
/// target and renaming. The bytes go to a hidden file in the target's folder
/// (`.NAME.partial-PID-N`, so that the rename stays on one file system), which `commit()`
/// renames over the target (after syncing it to disk when `durable`); on any failure,
/// `discard()` or deinit, the hidden file is removed. While it exists it is listed in `PartialFiles`, which the
/// executable empties when a signal ends it.
///
/// A target that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a FIFO) is
/// written in place instead: renaming over it would replace a device with a file, and there is
/// nothing there to keep whole.
///
/// A target that is a symbolic link is written through: the hidden file goes beside the file
/// the link leads to (`RealPath.resolve`, through every link of a chain, to where a dangling
/// one points) and is renamed over that file, so the link stays a link and its target changes
/// whole or not at all, as an editor saving through a link does. Commands that must not write
/// outside a folder check where the path leads first (`RealPath`).
///
/// Complete or absent, and `durable`: the rename alone makes the file appear whole or not at
/// all to every reader and against a crash or kill of this process (the kernel keeps the
/// written pages; rename(2) is atomic). Syncing adds only survival of a power loss or kernel
/// crash right after the command ends, and it is most of the wall time of writing a large file
/// (a 48 MB render: fsync about 140 ms of 330 ms, docs/benchmarks.md). `durable` (the default)
/// syncs the file before the rename and the folder after it; rendered audio, which can be
/// rendered again from its lesson, is written with `durable: false`, as sox and ffmpeg write
/// theirs. Without the sync, ext4 (auto_da_alloc) would still start writing the file back at a
/// rename over an existing one, inside the rename: so without `durable` the old file is removed
/// first (complete, absent for a moment, or the new one whole: never partial).
///
/// Writers that produce the bytes themselves (libsndfile through `sf_open_fd`) write to
/// `descriptor`; the rest use `write(_:)`.
public final class AtomicFile {
    /// The target, as given.
    public let path: String
    /// The file renamed over: `path`, or the file it leads to when it is a symbolic link.
    public let target: String
    /// The hidden file beside it, while it is being written.
    public let temporaryPath: String
    /// Open for writing until `commit()` or `discard()`; -1 after.
    public private(set) var descriptor: Int32
    private var registration: Int?
    /// Written in place (the target is a device, a FIFO or a socket): no hidden file.
    private let inPlace: Bool
    /// Synced to disk at `commit()` (file, then folder).
    public let durable: Bool

    private static let counter = Atomic<Int>(0)

    /// Creates the hidden file beside `path` (never following or replacing anything there), or
    /// opens `path` itself when it is not a regular file (`isSpecial`).
    public init(path: String, durable: Bool = true) throws(NarratorError) {
        self.path = path
        self.durable = durable
        inPlace = Self.isSpecial(path)
        var link = stat()
        if !inPlace, lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK {
            guard let resolved = RealPath.resolve(path) else {
                throw NarratorError(file: path, "cannot write: a loop of symbolic links")
            }
            target = resolved
        } else {
            target = path
        }
        if inPlace {
            temporaryPath = path
            descriptor = open(path, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw NarratorError(file: path, "cannot write: \(String(cString: strerror(errno)))")
            }
            return
        }
        let url = URL(fileURLWithPath: target)
        let number = Self.counter.add(1, ordering: .relaxed).newValue
        temporaryPath = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).partial-\(getpid())-\(number)").path
        // Listed before it is created: a signal between the two would otherwise leave it behind
        // (the handler's unlink of a name not yet created does nothing).
        registration = PartialFiles.register(temporaryPath)
        descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o666)
        guard descriptor >= 0 else {
            let code = errno
            unregister()  // nothing to remove: the name was never created by us
            throw NarratorError(file: path, "cannot write: \(String(cString: strerror(code)))")
        }
    }

    deinit { discard() }

    /// Appends `bytes`.
    public func write(_ bytes: some DataProtocol) throws(NarratorError) {
        guard descriptor >= 0 else { throw NarratorError(file: path, "cannot write: already closed") }
        var failure: Int32 = 0
        for region in bytes.regions {
            region.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count, failure == 0 {
                    let written = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                    if written < 0 {
                        if errno != EINTR { failure = errno }
                    } else {
                        offset += written
                    }
                }
            }
            if failure != 0 { break }
        }
        if failure != 0 {
            discard()
            throw NarratorError(file: path, "cannot write: \(String(cString: strerror(failure)))")
        }
    }

    /// Syncs the hidden file to disk (when `durable`), closes it and renames it over the target; on failure
    /// the hidden file is removed and the target left as it was.
    public func commit() throws(NarratorError) {
        guard descriptor >= 0 else { throw NarratorError(file: path, "cannot write: already closed") }
        var failure: Int32 = 0
        while durable && fsync(descriptor) != 0 {
            if errno == EINTR { continue }
            // A file system that cannot sync (a pipe-like or special target) still renames.
            if errno != EINVAL && errno != EROFS { failure = errno }
            break
        }
        if close(descriptor) != 0 && failure == 0 && errno != EINTR { failure = errno }
        descriptor = -1
        if inPlace {
            if failure != 0 { throw NarratorError(file: path, "cannot write: \(String(cString: strerror(failure)))") }
            return
        }
        if failure == 0 && !durable {
            // Not over an existing file: ext4 (auto_da_alloc) starts writing a file back at a
            // rename that replaces another, inside the rename (74 ms for a 117 MB render here,
            // against 0.08 ms onto a free name). Without `durable` the old file goes first: a
            // reader then finds the old file, no file for a moment, or the new one whole.
            Self.removeWritten(target)
        }
        if failure == 0 && rename(temporaryPath, target) != 0 { failure = errno }
        guard failure == 0 else {
            discard()
            throw NarratorError(file: path, "cannot write: \(String(cString: strerror(failure)))")
        }
        unregister()
        guard durable else { return }
        // The rename itself is durable once the folder is synced.
        let folder = open(URL(fileURLWithPath: target).deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }

    /// Removes the hidden file (nothing once committed).
    public func discard() {
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
        if registration != nil {
            unlink(temporaryPath)
            unregister()
        }
    }

    private func unregister() {
        if let registration { PartialFiles.unregister(registration) }
        registration = nil
    }

    /// Whether `path` exists and is not a regular file or a folder (a device, a FIFO, a socket;
    /// symbolic links followed): what is written there cannot be taken back, and it must not be
    /// replaced or removed.
    public static func isSpecial(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        let type = info.st_mode & S_IFMT
        return type != S_IFREG && type != S_IFDIR
    }

    /// Removes `path` when it is a regular file (what a failed command wrote there); a device,
    /// a FIFO or anything else is left alone.
    public static func removeWritten(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return }
        unlink(path)
    }

    /// Writes `bytes` to `path` atomically.
    public static func write(_ bytes: some DataProtocol, to path: String) throws(NarratorError) {
        let file = try AtomicFile(path: path)
        try file.write(bytes)
        try file.commit()
    }

    /// Writes `text` as UTF-8 to `path` atomically.
    public static func write(_ text: String, to path: String) throws(NarratorError) {
        try write(Data(text.utf8), to: path)
    }
}

/// The hidden files `AtomicFile`s are writing, for the executable to remove when a signal ends
/// it (`removeAll()` is async-signal-safe). A library installs no signal handler: the process
/// that owns signal handling decides. At most `capacity` at once; one beyond is written as
/// usual but not listed.
public enum PartialFiles {
    public static let capacity = 32
    /// Longest path a slot holds, with its NUL (PATH_MAX).
    static let pathBytes = 4096

    /// Per slot: 0 free, 1 being filled or emptied, 2 holding a path to remove.
    private static let slots = Slots()

    private final class Slots: Sendable {
        let states: [AtomicSlot]
        nonisolated(unsafe) let paths: UnsafeMutablePointer<CChar>

        init() {
            states = (0..<PartialFiles.capacity).map { _ in AtomicSlot() }
            paths = .allocate(capacity: PartialFiles.capacity * PartialFiles.pathBytes)
            paths.initialize(repeating: 0, count: PartialFiles.capacity * PartialFiles.pathBytes)
        }
    }

    /// Makes the registry ready, so that a signal handler never runs its one-time setup.
    public static func prepare() { _ = slots }

    static func register(_ path: String) -> Int? {
        let bytes = Array(path.utf8CString)
        guard bytes.count <= pathBytes else { return nil }
        for index in 0..<capacity where slots.states[index].value.compareExchange(
            expected: 0, desired: 1, ordering: .acquiring).exchanged
        {
            let slot = slots.paths + index * pathBytes
            bytes.withUnsafeBufferPointer { slot.update(from: $0.baseAddress!, count: bytes.count) }
            slots.states[index].value.store(2, ordering: .releasing)
            return index
        }
        return nil
    }

    static func unregister(_ index: Int) {
        slots.states[index].value.store(0, ordering: .releasing)
    }

    /// The paths listed now (for tests and diagnostics).
    public static var listed: [String] {
        (0..<capacity).compactMap { index in
            slots.states[index].value.load(ordering: .acquiring) == 2
                ? String(cString: slots.paths + index * pathBytes) : nil
        }
    }

    /// Removes every listed file. Async-signal-safe: atomic loads and unlink(2) only.
    public static func removeAll() {
        for index in 0..<capacity where slots.states[index].value.load(ordering: .acquiring) == 2 {
            unlink(slots.paths + index * pathBytes)
        }
    }
}

/// An atomic that lives in an array (an Atomic itself cannot be moved).
private final class AtomicSlot: Sendable {
    let value = Atomic<Int>(0)
}
