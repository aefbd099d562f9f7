/// A howler.js audio sprite map: one audio file and named regions of it, in milliseconds.
///
/// ```json
/// {"src": ["sfx.ogg", "sfx.mp3"], "sprite": {"ding": [0, 450], "whoosh": [1000, 820, false]}}
/// ```
///
/// `src` (or howler 1's `urls`) is a file or a list of alternatives; each region is
/// `[offset, duration]` with an optional loop flag, which Narrator reads and ignores (it plays
/// a clip once). A lesson's `"sprites"` turns every region into a clip.
public struct SpriteMap: Sendable, Equatable {
    public struct Sprite: Sendable, Equatable {
        public let name: String
        /// Seconds of the audio file's own time.
        public let start: Double
        public let end: Double
    }

    /// The map file, as read.
    public let path: String
    /// The audio alternatives, resolved against the map's folder, in the map's order.
    public let sources: [String]
    /// By name.
    public let sprites: [Sprite]

    public static func load(path: String, files: some LessonFiles) throws(NarratorError) -> SpriteMap {
        try parse(try files.read(path: path, limit: JSONValue.documentLimit), path: path)
    }

    public static func parse(_ bytes: [UInt8], path: String) throws(NarratorError) -> SpriteMap {
        let root = JSONCursor(try JSONValue.parse(bytes, file: path), file: path)
        let top = try root.object()
        guard let srcCursor = top["src"] ?? top["urls"] else {
            throw NarratorError(file: path, place: "src", "missing key (the sprite's audio file)")
        }
        let names: [String]
        if case .string(let one) = srcCursor.value {
            names = [one]
        } else {
            names = try srcCursor.array().map { c throws(NarratorError) in try c.string() }
        }
        if names.isEmpty { throw srcCursor.fail("names no audio file") }
        let folder = Paths.folder(of: path)
        let sources = names.map { Paths.join(folder, $0) }

        var sprites: [Sprite] = []
        let members = try top.required("sprite", in: root).object()
        for name in sortedNames(members.keys) {
            let entry = members[name]!
            let fields = try entry.array()
            guard fields.count == 2 || fields.count == 3 else {
                throw entry.fail("expected [offset, duration] in milliseconds, with an optional loop flag")
            }
            let offset = try fields[0].number()
            let duration = try fields[1].number()
            if fields.count == 3 {
                guard case .bool = fields[2].value else { throw fields[2].fail("expected true or false (loop)") }
            }
            // Milliseconds of a file at most a day long (Lesson.maxRegionSeconds).
            let longest = Lesson.maxRegionSeconds * 1000
            guard offset >= 0 else { throw fields[0].fail("offset must not be negative") }
            guard offset < longest else {
                throw fields[0].fail("offset must be under \(Int(longest)) ms (a day), got \(JSONCursor.describe(offset))")
            }
            guard duration > 0 else { throw fields[1].fail("duration must be positive") }
            guard offset + duration <= longest else {
                throw fields[1].fail("the sprite must end within \(Int(longest)) ms (a day), got \(JSONCursor.describe(offset + duration))")
            }
            sprites.append(Sprite(name: name, start: offset / 1000, end: (offset + duration) / 1000))
        }
        if sprites.isEmpty { throw NarratorError(file: path, place: "sprite", "holds no sprites") }
        return SpriteMap(path: path, sources: sources, sprites: sprites)
    }

    /// The first source that exists and that Narrator can decode: a web sprite usually lists a
    /// WebM or M4A first, for browsers.
    public func audioFile(files: some LessonFiles) throws(NarratorError) -> String {
        for source in sources where AudioMarker.isAudioFile(source) && files.exists(path: source) {
            return source
        }
        throw NarratorError(
            file: path, place: "src",
            "none of its audio files is here in a format Narrator decodes (\(sortedNames(AudioMarker.audioExtensions).joined(separator: ", ")))")
    }
}
