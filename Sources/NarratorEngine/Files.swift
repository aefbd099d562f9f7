/// What the engine asks of the place its lessons live: the bytes of a file, and whether one is
/// there. Natively that is the disk (`DiskFiles`, in NarratorCore); in the WebAssembly build,
/// the files the page handed over. The engine itself never opens a file, so the same parser
/// runs in both and names the same file and key when one is wrong.
public protocol LessonFiles {
    /// The bytes of `path`, at most `limit` of them (more is an error naming the file).
    func read(path: String, limit: Int) throws(NarratorError) -> [UInt8]
    /// Whether `path` names a file that `read` can open.
    func exists(path: String) -> Bool
}

/// Paths as the engine joins them: plain strings with `/` between names, never resolved
/// against a working directory (the caller gives absolute folders where it needs them).
public enum Paths {
    /// `relative` inside `folder`; an absolute `relative` as it is. A trailing slash is dropped,
    /// as a file URL's path drops it.
    public static func join(_ folder: String, _ relative: String) -> String {
        if relative.hasPrefix("/") { return relative }
        var joined = folder.isEmpty ? relative : folder.hasSuffix("/") ? folder + relative : folder + "/" + relative
        while joined.count > 1, joined.hasSuffix("/") { joined.removeLast() }
        return joined
    }

    /// The folder holding `path`: everything before its last `/` ("/" for a file at the root,
    /// "" for a bare name).
    public static func folder(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// The extension of the last name of `path`, its ASCII letters lowercased (what names an
    /// audio format is ASCII): "" when it has none (a name
    /// that starts with its only dot, such as ".wav", has none).
    public static func fileExtension(_ path: String) -> String {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return name[name.index(after: dot)...].asciiLowercased()
    }
}
