extension Lesson {
    /// A picture the lesson gives for a tile or a pulse target (`"pictures": {"hat": {"file":
    /// "pictures/hat.svg", "alt": "a red hat"}}`): shown on the tile, `alt` read out to a child
    /// who cannot see it. Parsing checks only its shape; the file is read by `PictureFile`.
    public struct Picture: Sendable, Equatable {
        /// What it is a picture of: a choice, an answer, a tap sound's name or a pulse target.
        public let name: String
        /// The file, resolved against the lesson's folder.
        public let file: String
        /// The file as the lesson writes it (relative to the lesson's folder).
        public let written: String
        public let alt: String

        /// Its key path in the lesson: `pictures.NAME`.
        public var key: String { "pictures.\(name)" }

        /// The most pictures a lesson may name, the longest name and alternative text (in
        /// characters), and the longest path written.
        public static let maxPictures = 10_000
        public static let maxNameLength = 200
        public static let maxAltLength = 200
        public static let maxPathLength = 1024

        static func parse(_ cursor: JSONCursor, resolve: (String) -> String) throws(NarratorError) -> [String: Picture] {
            let entries = try cursor.object()
            guard entries.count <= maxPictures else {
                throw cursor.fail("\(entries.count) pictures, over the \(maxPictures) a lesson may name")
            }
            var pictures: [String: Picture] = [:]
            for (name, entry) in entries {
                guard !name.isEmpty, name.count <= maxNameLength, name != ".", name != ".." else {
                    throw entry.fail(
                        "a picture is named by its choice, answer, sound or pulse target: 1 to \(maxNameLength) characters, not . or .. (a URL step)")
                }
                let fields = try entry.object(allowing: Keys.picture)
                let fileCursor = try fields.required("file", in: entry)
                let file = try fileCursor.string()
                guard !file.isEmpty, file.utf8.count <= maxPathLength, !file.contains("\0") else {
                    throw fileCursor.fail("expected the picture's path, relative to the lesson's folder")
                }
                guard !file.hasPrefix("/") else {
                    throw fileCursor.fail("'\(file)' is an absolute path: a picture's path is relative to the lesson's folder, inside it")
                }
                let altCursor = try fields.required("alt", in: entry)
                let alt = try altCursor.string()
                guard !alt.allSatisfy(UnicodeSpaces.isWhiteSpace) else {
                    throw altCursor.fail("the alternative text says what the picture shows, for a child who cannot see it: it cannot be empty")
                }
                guard alt.count <= maxAltLength else {
                    throw altCursor.fail("\(alt.count) characters, over the \(maxAltLength) an alternative text may have")
                }
                pictures[name] = Picture(name: name, file: resolve(file), written: file, alt: alt)
            }
            return pictures
        }
    }

    /// The names a picture of `activity` may be for: its choices, answers, tap sounds' names,
    /// `replay` and `close`, the targets its feedback pulses and those pulsed by the chains it
    /// plays. A chain that plays a clip whose pulses are its audio file's cue markers
    /// (`"markers": "pulses"`) may pulse any target (the lesson does not name them): then every
    /// picture of the lesson is the activity's.
    public func pictureNames(of activity: Activity) -> Set<String> {
        var names = activity.tileNames
        for chain in activity.chainIDs where pulseTargets(of: chain, into: &names) {
            names.formUnion(pictures.keys)
        }
        return names
    }

    /// Every name a picture of this lesson may be for: those of its activities
    /// (`pictureNames(of:)`) and every target its chains pulse (every picture's name when a
    /// chain plays a clip with pulse markers).
    public var pictureNames: Set<String> {
        var names: Set<String> = []
        for activity in activities.values { names.formUnion(activity.tileNames) }
        for chain in chains.keys where pulseTargets(of: chain, into: &names) {
            names.formUnion(pictures.keys)
        }
        return names
    }

    /// Adds the targets chain `id`'s pulse items name to `names`; true when it plays a clip
    /// whose pulses are cue markers (targets only its audio file names).
    private func pulseTargets(of id: String, into names: inout Set<String>) -> Bool {
        var markers = false
        for item in chains[id] ?? [] {
            switch item {
            case .pulse(let targets): names.formUnion(targets)
            case .clip(let clip): markers = markers || clips[clip]?.markers == .pulses
            case .pool(let pool): markers = markers || (pools[pool]?.clips ?? []).contains { clips[$0]?.markers == .pulses }
            case .silence, .music: break
            }
        }
        return markers
    }
}
