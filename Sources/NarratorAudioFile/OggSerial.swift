import Foundation
import NarratorCore

#if canImport(Glibc)
    import Glibc
#endif

/// The serial number of an Ogg stream, made a function of the stream's content.
///
/// An Ogg page names the logical stream it belongs to by a 32-bit serial number, and libsndfile
/// draws it at random for every file it writes (from the time of day), so two renders of the same
/// chain to `.ogg` or `.opus` differed in those four bytes of every page and in every page's CRC.
/// A render is a pure function of its inputs: the stream is written to a scratch descriptor,
/// then copied to its target with every page's serial replaced by a hash of the stream's bytes
/// (its serial and CRC fields left out) and its CRC computed again. Equal audio gives equal
/// files; different audio gives different serials, so two renders chained into one file
/// (`cat a.opus b.opus`) still name two streams.
enum OggSerial {
    /// Largest page the format allows: 27 header bytes, 255 lacing values, 255 × 255 body bytes.
    static let maxPage = 27 + 255 + 255 * 255

    /// Copies the Ogg stream of `scratch` (read from its start) to `output`, every page with the
    /// content-derived serial. `path` names the target in errors.
    static func copy(from scratch: Int32, to output: AtomicFile, path: String) throws(NarratorError) {
        var page = [UInt8](repeating: 0, count: maxPage)
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a, 64-bit
        try forEachPage(in: scratch, buffer: &page, path: path) { bytes in
            for (index, byte) in bytes.enumerated() {
                let counted = (14..<18).contains(index) || (22..<26).contains(index) ? 0 : byte
                hash = (hash ^ UInt64(counted)) &* 0x0000_0100_0000_01b3
            }
        }
        let serial = UInt32(truncatingIfNeeded: hash ^ (hash >> 32))
        var pending = [UInt8]()
        pending.reserveCapacity(1 << 18)
        try forEachPage(in: scratch, buffer: &page, path: path) { (bytes: ArraySlice<UInt8>) throws(NarratorError) in
            var bytes = bytes
            for k in 0..<4 {
                bytes[14 + k] = UInt8(truncatingIfNeeded: serial >> (8 * UInt32(k)))
                bytes[22 + k] = 0
            }
            let crc = crc32(bytes)
            for k in 0..<4 { bytes[22 + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
            pending.append(contentsOf: bytes)
            if pending.count >= 1 << 18 {
                try output.write(pending)
                pending.removeAll(keepingCapacity: true)
            }
        }
        try output.write(pending)
    }

    /// Calls `body` with each page of the stream in `descriptor`, in order, from its start.
    private static func forEachPage(
        in descriptor: Int32, buffer: inout [UInt8], path: String, _ body: (ArraySlice<UInt8>) throws(NarratorError) -> Void
    ) throws(NarratorError) {
        var offset = 0
        while true {
            let header = try read(descriptor, into: &buffer, at: offset, from: 0, count: 27, path: path)
            if header == 0 { return }
            guard header == 27, buffer[0] == 0x4f, buffer[1] == 0x67, buffer[2] == 0x67, buffer[3] == 0x53 else {
                throw NarratorError(file: path, "the encoder wrote no Ogg page at byte \(offset)")
            }
            let segments = Int(buffer[26])
            guard try read(descriptor, into: &buffer, at: offset + 27, from: 27, count: segments, path: path) == segments else {
                throw NarratorError(file: path, "the encoder's Ogg page at byte \(offset) is cut short")
            }
            let bodyLength = buffer[27..<(27 + segments)].reduce(0) { $0 + Int($1) }
            let length = 27 + segments + bodyLength
            guard try read(descriptor, into: &buffer, at: offset + 27 + segments, from: 27 + segments, count: bodyLength, path: path) == bodyLength
            else { throw NarratorError(file: path, "the encoder's Ogg page at byte \(offset) is cut short") }
            try body(buffer[0..<length])
            offset += length
        }
    }

    /// Reads up to `count` bytes at file offset `at` into `buffer[from...]`; returns how many.
    private static func read(
        _ descriptor: Int32, into buffer: inout [UInt8], at: Int, from: Int, count: Int, path: String
    ) throws(NarratorError) -> Int {
        var done = 0
        while done < count {
            let got = buffer.withUnsafeMutableBytes { raw in
                pread(descriptor, raw.baseAddress! + from + done, count - done, off_t(at + done))
            }
            if got < 0 {
                if errno == EINTR { continue }
                throw NarratorError(file: path, "cannot read the encoded stream back: \(String(cString: strerror(errno)))")
            }
            if got == 0 { break }
            done += got
        }
        return done
    }

    /// The CRC-32 of an Ogg page (polynomial 0x04c11db7, not reflected, starting at 0), its CRC
    /// field zero.
    static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0
        for byte in bytes { crc = (crc << 8) ^ crcTable[Int(((crc >> 24) ^ UInt32(byte)) & 0xff)] }
        return crc
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var r = UInt32(index) << 24
        for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04c1_1db7 : r << 1 }
        return r
    }
}
