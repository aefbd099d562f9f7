import Foundation

/// An Ogg file's pages read by hand (not through the code under test).
public enum OggFile {
    /// The Ogg pages of `path` that carry audio (a granule position above 0), read by hand;
    /// nil for a file that is not Ogg.
    public static func audioPages(_ path: String) throws -> Int? {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        guard bytes.starts(with: Array("OggS".utf8)) else { return nil }
        var offset = 0
        var pages = 0
        while offset + 27 <= bytes.count {
            let granule = bytes[(offset + 6)..<(offset + 14)].reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
            let segments = Int(bytes[offset + 26])
            let body = bytes[(offset + 27)..<(offset + 27 + segments)].reduce(0) { $0 + Int($1) }
            if granule > 0 { pages += 1 }
            offset += 27 + segments + body
        }
        return pages
    }

    /// The serial numbers of the Ogg pages of `path`, read by hand.
    public static func serials(_ path: String) throws -> Set<UInt32> {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var offset = 0
        var serials: Set<UInt32> = []
        while offset + 27 <= bytes.count {
            serials.insert(bytes[(offset + 14)..<(offset + 18)].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            let segments = Int(bytes[offset + 26])
            offset += 27 + segments + bytes[(offset + 27)..<(offset + 27 + segments)].reduce(0) { $0 + Int($1) }
        }
        return serials
    }
}
