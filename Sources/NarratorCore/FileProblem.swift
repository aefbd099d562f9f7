import Foundation

/// Why a file cannot be read, in words for the one-line error: what stat(2) and access(2)
/// say, each errno in its own words (a link loop is not "no such file").
public enum FileProblem {
    /// What is wrong with `path` as an input file, or nil when it looks readable.
    public static func check(path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            var link = stat()
            if code == ENOENT, lstat(path, &link) == 0, link.st_mode & S_IFMT == S_IFLNK {
                return "a symbolic link to nothing (its target does not exist)"
            }
            return describe(errno: code)
        }
        if info.st_mode & S_IFMT == S_IFDIR { return "is a folder, not a file" }
        if info.st_mode & S_IFMT != S_IFREG { return "not a regular file (a device, pipe or socket)" }
        if access(path, R_OK) != 0 { return describe(errno: errno) }
        if info.st_mode & S_IFMT == S_IFREG, info.st_size == 0 { return "empty file" }
        return nil
    }

    /// Why reading `path` failed.
    public static func describe(path: String) -> String { check(path: path) ?? "cannot be read" }

    /// An errno of opening or reading a file, in words.
    public static func describe(errno code: Int32) -> String {
        switch code {
        case ENOENT: "no such file"
        case ELOOP: "a loop of symbolic links (too many levels to follow)"
        case EACCES, EPERM: "permission denied"
        case EISDIR: "is a folder, not a file"
        case ENOTDIR: "a part of its path is not a folder"
        case ENAMETOOLONG: "the path or one of its names is too long"
        default: String(cString: strerror(code))
        }
    }
}
