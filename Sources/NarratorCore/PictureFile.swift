import Foundation

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
