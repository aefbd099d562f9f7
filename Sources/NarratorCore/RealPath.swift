import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where a path really leads, for the commands that must not write outside a folder (`align
/// --manifest … --to`, `pack --to`) and for `AtomicFile`, which writes through symbolic links:
/// the one owner of resolving a path that may not exist yet.
public enum RealPath {
    /// The most symbolic links followed in one path (Linux's own limit, MAXSYMLINKS).
    static let maxLinks = 40

    /// `path` (relative to the working folder when not absolute) with every symbolic link
    /// followed, `.` and `..` applied after the link they follow is resolved (as the kernel
    /// does), whether or not the path or its last steps exist: where a file written at `path`
    /// would land. A link that leads nowhere (dangling) resolves to where it points. nil for a
    /// loop of links or more than `maxLinks`.
    public static func resolve(_ path: String) -> String? {
        var pending: [Substring] = path.split(separator: "/", omittingEmptySubsequences: true).reversed()
        var resolved: [String] = []
        if !path.hasPrefix("/") {
            let folder = FileManager.default.currentDirectoryPath
            guard let base = resolve(folder), folder.hasPrefix("/") else { return nil }
            resolved = base.split(separator: "/").map(String.init)
        }
        var links = 0
        while let step = pending.popLast() {
            if step == "." { continue }
            if step == ".." {
                _ = resolved.popLast()
                continue
            }
            let candidate = "/" + (resolved + [String(step)]).joined(separator: "/")
            var info = stat()
            if lstat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
                links += 1
                guard links <= maxLinks, let target = readLink(candidate) else { return nil }
                if target.hasPrefix("/") { resolved = [] }
                pending.append(contentsOf: target.split(separator: "/", omittingEmptySubsequences: true).reversed())
                continue
            }
            resolved.append(String(step))
        }
        return "/" + resolved.joined(separator: "/")
    }

    /// Whether `path` is `folder` or inside it, both already resolved (`resolve`): compared
    /// step by step, so `/srv/lib-x` is not inside `/srv/lib`.
    public static func isInside(_ path: String, _ folder: String) -> Bool {
        if folder == "/" || path == folder { return true }
        return path.hasPrefix(folder + "/")
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let count = readlink(path, &buffer, 4096)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
