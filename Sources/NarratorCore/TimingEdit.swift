import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A clip's timing file opened for `narrator edit`: its words in the clip's frames, and the
/// one way they go back to the file, in the file's own format.
///
/// Only formats `WordTimings.write` writes as they were read can be edited (Narrator JSON,
/// Audacity labels, WebVTT, SubRip); any other is refused when the editor opens, not at Save.
/// Words the clip's region does not hold whole are kept as they are and not shown.
public struct TimingEditor: Sendable {
    /// The formats that are saved in their own format, by the extension the file has.
    public static let editable: [String: TimingFormat] = ["json": .json, "txt": .audacity, "vtt": .webvtt, "srt": .srt]

    /// What errors about a Save request's body name as their file.
    public static let request = "the request"

    public let path: String
    public let format: TimingFormat
    public let rate: Int
    /// The clip's first frame in the file's time (its region's start), and its length.
    public let regionStart: Int
    public let clipFrames: Int
    /// Every word of the file, in the file's time, as last read or saved.
    public private(set) var fileWords: [WordTiming]
    /// Positions in `fileWords` of the words shown (those the region holds whole).
    public let shown: [Int]
    let sentences: [SentenceTiming]
    /// The file's modification time and size when it was read or last saved.
    private var stamp: FileStamp?

    /// What says the file changed: the file the path leads to (through a symbolic link, which
    /// Save writes through), its identity (a file renamed over it is another), time and size.
    struct FileStamp: Equatable {
        let device: UInt64
        let inode: UInt64
        let seconds: Int
        let nanoseconds: Int
        let size: Int
        init?(_ path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            seconds = Int(info.st_mtim.tv_sec)
            nanoseconds = Int(info.st_mtim.tv_nsec)
            size = Int(info.st_size)
        }
    }

    /// Whether something else has changed the file since it was read or last saved (a Save
    /// would overwrite that change).
    public var changedOnDisk: Bool { FileStamp(path) != stamp }

    /// The words shown, in the clip's frames.
    public var words: [WordTiming] {
        shown.map { position in
            var word = fileWords[position]
            word.startFrame -= regionStart
            word.endFrame -= regionStart
            return word
        }
    }

    /// The frames a boundary can be saved at exactly: 1, or a millisecond's worth for the
    /// formats that write milliseconds (a boundary between is rounded to the nearest).
    public var resolution: Double {
        format == .webvtt || format == .srt ? Double(rate) / 1000 : 1
    }

    /// Opens `path` for clip `clip` (`regionStart ..< regionStart + clipFrames` of its audio
    /// file at `rate`). `lesson`/`key` name where the clip's timings are set, for errors.
    public init(path: String, rate: Int, regionStart: Int, clipFrames: Int) throws(NarratorError) {
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        stamp = FileStamp(path)
        let imported = try WordTimings.read(path: path, rate: rate)
        guard let format = Self.editable[ext], format == imported.format else {
            let name = imported.format == .json ? "Narrator JSON" : imported.format.rawValue
            throw NarratorError(
                file: path,
                "\(name) cannot be saved in its own format; edit works on Narrator JSON (.json), Audacity labels (.txt), "
                    + "WebVTT (.vtt) and SubRip (.srt): convert it first with `narrator timings convert`")
        }
        // Saving replaces the file by a rename in its folder: both must be writable now.
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard access(path, W_OK) == 0, access(folder.isEmpty ? "." : folder, W_OK) == 0 else {
            throw NarratorError(file: path, "cannot be saved: \(String(cString: strerror(errno)))")
        }
        self.path = path
        self.format = format
        self.rate = rate
        self.regionStart = regionStart
        self.clipFrames = clipFrames
        fileWords = imported.words
        sentences = imported.sentences
        let end = regionStart + clipFrames
        shown = imported.words.indices.filter { imported.words[$0].startFrame >= regionStart && imported.words[$0].endFrame <= end }
        if shown.isEmpty {
            throw NarratorError(file: path, "none of its \(Wording.count(imported.words.count, "word")) lies wholly inside the clip's region")
        }
    }

    /// The words of a Save request, `{"words": [{"text", "start", "end"}, …]}` with frames of
    /// the clip, checked: the same words in the same order, whole frames within the clip, each
    /// ending at or after its start and starting at or after the previous word's end, and
    /// overlapping no word outside the region. Returns every word of the file, in its time.
    public func check(_ body: Data) throws(NarratorError) -> [WordTiming] {
        let root = JSONCursor(try JSONValue.parse(body, file: Self.request), file: Self.request)
        let items = try root.object(allowing: ["words"]).required("words", in: root).array()
        let current = words
        guard items.count == current.count else {
            throw root.fail("holds \(Wording.count(items.count, "word")); the clip has \(current.count) (the same words, in order)")
        }
        var merged = fileWords
        var previousEnd = 0
        for (position, item) in items.enumerated() {
            let fields = try item.object(allowing: ["text", "start", "end"])
            let text = try fields.required("text", in: item).string()
            guard text == current[position].text else {
                throw item.fail("is \(WordTimings.shown(text)); word \(position) of the clip is \(WordTimings.shown(current[position].text))")
            }
            let start = try fields.required("start", in: item).integer(in: 0...clipFrames)
            let end = try fields.required("end", in: item).integer(in: 0...clipFrames)
            guard start <= end else { throw item.fail("ends (frame \(end)) before it starts (frame \(start))") }
            guard start >= previousEnd else {
                throw item.fail("starts at frame \(start), before the word before it ends (frame \(previousEnd))")
            }
            previousEnd = end
            merged[shown[position]].startFrame = start + regionStart
            merged[shown[position]].endFrame = end + regionStart
        }
        // Words outside the region stay where they are; none may be overlapped.
        for (before, after) in zip(merged, merged.dropFirst()) where after.startFrame < before.endFrame {
            throw root.fail(
                "word \(WordTimings.shown(before.text)) (to frame \(before.endFrame - regionStart)) overlaps \(WordTimings.shown(after.text)), "
                    + "which starts at frame \(after.startFrame - regionStart) (a word outside the clip's region is kept where it is)")
        }
        return merged
    }

    /// Checks `body` (`check`), writes the file in its format at the lesson's rate (complete
    /// or not at all), reads it back, and returns the words shown as the file now holds them.
    /// A request that fails its checks leaves the file untouched.
    public mutating func save(_ body: Data) throws(NarratorError) -> [WordTiming] {
        let merged = try check(body)
        try WordTimings.write(merged, rate: rate, to: path, sentences: sentences)
        let written = try WordTimings.read(path: path, rate: rate).words
        guard written.count == fileWords.count else {
            throw NarratorError(file: path, "read back \(Wording.count(written.count, "word")) after saving \(fileWords.count)")
        }
        fileWords = written
        stamp = FileStamp(path)
        return words
    }

    /// The words as JSON: `[{"text", "start", "end"}, …]`, frames of the clip.
    public static func json(_ words: [WordTiming]) -> String {
        "[" + words.map { #"{"text":\#(EventEncoder.quoted($0.text)),"start":\#($0.startFrame),"end":\#($0.endFrame)}"# }.joined(separator: ",") + "]"
    }
}
