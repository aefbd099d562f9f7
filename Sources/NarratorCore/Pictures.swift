import Foundation

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
                guard !alt.allSatisfy(\.isWhitespace) else {
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

/// The one reader of a lesson's picture files (`narrator validate`, `pack`, the daemon's
/// `/pictures/` route): a regular file inside the folder it must stay in (where its path
/// really leads, symbolic links followed), at most `maxBytes`, and an SVG, PNG or WebP image
/// by its first bytes, whatever its name says.
public enum PictureFile {
    /// The largest picture read: a tile's image, not a poster.
    public static let maxBytes = 2 << 20

    public enum Kind: String, Sendable, Equatable {
        case svg, png, webp

        /// Its media type, for HTTP's `Content-Type`.
        public var contentType: String {
            switch self {
            case .svg: "image/svg+xml"
            case .png: "image/png"
            case .webp: "image/webp"
            }
        }
    }

    /// What `bytes` are by their first bytes: PNG's signature, WebP's RIFF header, or SVG's
    /// markup (UTF-8 text, after an optional byte order mark and white space, starting with `<`
    /// and opening an `<svg` element in its first 4 KiB). nil for anything else.
    public static func kind(of bytes: some Collection<UInt8>) -> Kind? {
        let head = Array(bytes.prefix(4096))
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.count >= 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) { return .webp }
        var start = head.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while start < head.count, [0x20, 0x09, 0x0A, 0x0D].contains(head[start]) { start += 1 }
        guard start < head.count, head[start] == UInt8(ascii: "<") else { return nil }
        let svg = Array("<svg".utf8)
        guard head.count >= svg.count else { return nil }
        for index in start...(head.count - svg.count) where head[index..<(index + svg.count)].elementsEqual(svg) {
            // `<svg` followed by white space, `>` or `/`: not `<svgfoo`.
            let after = index + svg.count
            if after == head.count || [0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ">"), UInt8(ascii: "/")].contains(head[after]) { return .svg }
        }
        return nil
    }

    /// Why a picture was refused, for the HTTP status the daemon answers with.
    public enum Problem: Sendable, Equatable {
        /// It leads outside the folder it must stay in (403).
        case outside
        /// Over `maxBytes` (413).
        case tooLarge
        /// Missing, unreadable, empty, or not an image (404).
        case unusable
    }

    public struct Refusal: Error, Sendable {
        public let problem: Problem
        public let error: NarratorError
    }

    /// The picture at `path` and its kind, if it leads (symbolic links followed) inside
    /// `folder` (a real path, `RealPath.resolve`'s), is a regular file of at most `maxBytes`
    /// and an image `kind(of:)` knows; else one error naming `path` and why.
    public static func read(path: String, inside folder: String) throws(NarratorError) -> (bytes: Data, kind: Kind) {
        switch load(path: path, inside: folder) {
        case .success(let picture): return picture
        case .failure(let refusal): throw refusal.error
        }
    }

    /// `read(path:inside:)`, with why it refused.
    public static func load(path: String, inside folder: String) -> Result<(bytes: Data, kind: Kind), Refusal> {
        func refuse(_ problem: Problem, _ message: String) -> Result<(bytes: Data, kind: Kind), Refusal> {
            .failure(Refusal(problem: problem, error: NarratorError(file: path, message)))
        }
        guard let real = RealPath.resolve(path) else { return refuse(.unusable, "a loop of symbolic links") }
        guard RealPath.isInside(real, folder) else {
            return refuse(.outside, "leads outside \(folder), the folder a picture must stay in (to \(real))")
        }
        let data: Data
        do throws(NarratorError) {
            // Its size first, on its descriptor: a file over the cap is refused as such.
            let opened = try InputFile.open(path: real)
            _ = close(opened.descriptor)
            guard opened.size <= maxBytes else {
                return refuse(.tooLarge, "\(opened.size) bytes, over the \(maxBytes >> 20) MiB a picture may have")
            }
            // Read by descriptor, checked on it (a regular file), refused before it fills memory.
            data = try InputFile.read(path: real, limit: maxBytes)
        } catch {
            return refuse(.unusable, error.message)
        }
        guard !data.isEmpty else { return refuse(.unusable, "empty file: not a picture") }
        guard let kind = kind(of: data) else {
            return refuse(.unusable, "not an SVG, PNG or WebP image (by its first bytes, whatever its name says)")
        }
        return .success((data, kind))
    }
}
