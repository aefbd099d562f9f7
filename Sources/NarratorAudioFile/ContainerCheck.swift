import Foundation
import NarratorCore

#if canImport(Glibc)
    import Glibc
#endif

/// What a file's own container says of its length, read from its bytes: the truth against
/// which a decode is judged complete. libsndfile's log is not that truth (it notes things
/// after a full read of a complete file), and its frame count is not either for every format
/// (an MP3 without a Xing header gets an estimate from its size).
///
/// Per format:
/// - WAV (RIFF, RIFX, RF64) and AIFF: the data chunk's declared size against the bytes after
///   it. libsndfile clamps its frame count to what is there, so only the header can tell.
///   A file written to a pipe cannot go back to its header, and leaves a placeholder that
///   declares no length: 0 or 0xFFFFFFFF (ffmpeg), or sox's 0x7FFFF000 rounded down to whole
///   frames (WAV) and 0x7F000008 (AIFF). Those are read to the end of the file.
/// - Ogg (Vorbis, Opus, FLAC in Ogg): the file is whole pages and every logical stream's last
///   page carries the end-of-stream flag; the frame count libsndfile takes from the final
///   granule position is then the decode's length.
/// - FLAC: STREAMINFO's total samples, which is libsndfile's frame count.
/// - MP3: a Xing/Info or VBRI header gives the frame count (and LAME's tag the encoder's delay
///   and padding, which mpg123 trims); without one the length is only known by decoding.
enum ContainerCheck {
    enum Kind { case riff, aiff, ogg, mp3, other }

    struct Findings {
        /// Why the file is incomplete, or nil.
        var problem: String?
        /// Whether libsndfile's frame count is the file's truth (false: an estimate).
        var lengthKnown: Bool
        /// For MP3: whether it carries a Xing/Info or VBRI header (gapless information).
        var mp3GaplessInfo: Bool?
    }

    static func inspect(path: String, kind: Kind) -> Findings {
        guard let file = ByteReader(path: path) else { return Findings(problem: nil, lengthKnown: true) }
        defer { file.close() }
        switch kind {
        case .riff: return Findings(problem: riffProblem(file), lengthKnown: true)
        case .aiff: return Findings(problem: aiffProblem(file), lengthKnown: true)
        case .ogg: return Findings(problem: oggProblem(file), lengthKnown: true)
        case .mp3:
            let gapless = mp3HasLengthHeader(file)
            return Findings(problem: nil, lengthKnown: gapless, mp3GaplessInfo: gapless)
        case .other: return Findings(problem: nil, lengthKnown: true)
        }
    }

    // MARK: WAV and AIFF

    private static func declaredBeyondFile(claimed: UInt64, dataStart: UInt64, size: UInt64) -> String? {
        let held = size > dataStart ? size - dataStart : 0
        guard claimed > held else { return nil }
        return "truncated or lying header: its data chunk claims \(claimed) bytes, the file holds \(held)"
    }

    private static func riffProblem(_ file: ByteReader) -> String? {
        guard let head = file.read(at: 0, count: 12), head.count == 12 else { return nil }
        let tag = String(decoding: head[0..<4], as: UTF8.self)
        guard ["RIFF", "RIFX", "RF64"].contains(tag), String(decoding: head[8..<12], as: UTF8.self) == "WAVE" else { return nil }
        let bigEndian = tag == "RIFX"
        var ds64Data: UInt64?
        var offset: UInt64 = 12
        // Chunks until "data"; a header is a few chunks, this bound only stops a crafted loop.
        for _ in 0..<4096 {
            guard let chunk = file.read(at: offset, count: 8), chunk.count == 8 else { return nil }
            let id = String(decoding: chunk[0..<4], as: UTF8.self)
            let size = UInt64(chunk.uint32(at: 4, bigEndian: bigEndian))
            if id == "ds64", let body = file.read(at: offset + 8, count: 16), body.count == 16 {
                ds64Data = body.uint64LE(at: 8)
            }
            if id == "data" {
                var claimed = size
                if tag == "RF64", size == 0xFFFF_FFFF {
                    guard let real = ds64Data else { return nil }
                    claimed = real
                } else if size == 0 || size == 0xFFFF_FFFF || (0x7FFF_E000...0x7FFF_F000).contains(size) {
                    return nil  // written to a pipe: no length declared
                }
                return declaredBeyondFile(claimed: claimed, dataStart: offset + 8, size: file.size)
            }
            offset += 8 + size + (size & 1)
            if offset >= file.size { return nil }
        }
        return nil
    }

    private static func aiffProblem(_ file: ByteReader) -> String? {
        guard let head = file.read(at: 0, count: 12), head.count == 12,
            String(decoding: head[0..<4], as: UTF8.self) == "FORM",
            ["AIFF", "AIFC"].contains(String(decoding: head[8..<12], as: UTF8.self))
        else { return nil }
        var offset: UInt64 = 12
        for _ in 0..<4096 {
            guard let chunk = file.read(at: offset, count: 8), chunk.count == 8 else { return nil }
            let id = String(decoding: chunk[0..<4], as: UTF8.self)
            let size = UInt64(chunk.uint32(at: 4, bigEndian: true))
            if id == "SSND" {
                guard size != 0, size != 0xFFFF_FFFF, size != 0x7F00_0008 else { return nil }  // written to a pipe
                return declaredBeyondFile(claimed: size, dataStart: offset + 8, size: file.size)
            }
            offset += 8 + size + (size & 1)
            if offset >= file.size { return nil }
        }
        return nil
    }

    // MARK: Ogg

    /// Walks the pages: each begins where the last ended, and the last page of each logical
    /// stream is flagged end-of-stream.
    private static func oggProblem(_ file: ByteReader) -> String? {
        var offset: UInt64 = 0
        var open: Set<UInt32> = []
        var pages = 0
        while offset < file.size {
            guard let header = file.read(at: offset, count: 27), header.count == 27 else {
                return "truncated: the file ends inside an Ogg page header (byte \(offset) of \(file.size))"
            }
            guard String(decoding: header[0..<4], as: UTF8.self) == "OggS" else {
                // Bytes after the last page that are not a page: not audio libsndfile read.
                if pages > 0 && open.isEmpty { return nil }
                return "damaged: no Ogg page where one should begin (byte \(offset) of \(file.size))"
            }
            let flags = header[5]
            let serial = header.uint32(at: 14, bigEndian: false)
            let segments = Int(header[26])
            guard let table = file.read(at: offset + 27, count: segments), table.count == segments else {
                return "truncated: the file ends inside an Ogg page header (byte \(offset) of \(file.size))"
            }
            let body = UInt64(table.reduce(0) { $0 + Int($1) })
            let end = offset + 27 + UInt64(segments) + body
            guard end <= file.size else {
                return "truncated: the file ends inside an Ogg page (it needs \(end) bytes, holds \(file.size))"
            }
            if flags & 0x02 != 0 { open.insert(serial) }
            if flags & 0x04 != 0 { open.remove(serial) }
            pages += 1
            offset = end
        }
        if pages == 0 { return nil }
        if !open.isEmpty { return "truncated: the stream ends without its end-of-stream mark" }
        return nil
    }

    // MARK: MP3

    /// Whether the first MPEG audio frame (after any ID3v2 tag) is a Xing/Info or VBRI header.
    private static func mp3HasLengthHeader(_ file: ByteReader) -> Bool {
        var start: UInt64 = 0
        if let id3 = file.read(at: 0, count: 10), id3.count == 10, id3[0] == 0x49, id3[1] == 0x44, id3[2] == 0x33 {
            let size = id3[6..<10].reduce(UInt64(0)) { ($0 << 7) | UInt64($1 & 0x7F) }
            start = 10 + size + (id3[5] & 0x10 != 0 ? 10 : 0)
        }
        // The first frame sync within 64 KiB of the tag's end.
        guard let window = file.read(at: start, count: 65536), window.count >= 4 else { return false }
        var index = 0
        while index + 4 <= window.count {
            let b1 = window[index + 1]
            let b2 = window[index + 2]
            // Sync, layer III, a known version, a bitrate and a sample rate that exist.
            if window[index] == 0xFF, b1 & 0xE0 == 0xE0, b1 & 0x06 == 0x02, b1 & 0x18 != 0x08, b2 & 0xF0 != 0xF0,
                b2 & 0x0C != 0x0C
            {
                let mpeg1 = b1 & 0x18 == 0x18
                let mono = window[index + 3] & 0xC0 == 0xC0
                let side = mpeg1 ? (mono ? 17 : 32) : (mono ? 9 : 17)
                let xing = index + 4 + side
                let vbri = index + 4 + 32
                func tag(at position: Int) -> String? {
                    guard position + 4 <= window.count else { return nil }
                    return String(decoding: window[position..<(position + 4)], as: UTF8.self)
                }
                return ["Xing", "Info"].contains(tag(at: xing) ?? "") || tag(at: vbri) == "VBRI"
            }
            index += 1
        }
        return false
    }
}

/// Reads byte ranges of a file with pread.
private final class ByteReader {
    private let fd: Int32
    let size: UInt64

    init?(path: String) {
        guard let file = try? InputFile.open(path: path) else { return nil }
        fd = file.descriptor
        size = UInt64(file.size)
    }

    func close() { Glibc.close(fd) }

    /// Up to `count` bytes at `offset` (fewer at the end of the file), nil on error.
    func read(at offset: UInt64, count: Int) -> [UInt8]? {
        guard offset <= UInt64(Int64.max), count >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = bytes.withUnsafeMutableBytes { raw in
                pread(fd, raw.baseAddress! + got, count - got, off_t(offset) + off_t(got))
            }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { break }
            got += n
        }
        return Array(bytes.prefix(got))
    }
}

extension [UInt8] {
    fileprivate func uint32(at index: Int, bigEndian: Bool) -> UInt32 {
        let bytes = self[index..<(index + 4)].map(UInt32.init)
        return bigEndian
            ? bytes[0] << 24 | bytes[1] << 16 | bytes[2] << 8 | bytes[3]
            : bytes[3] << 24 | bytes[2] << 16 | bytes[1] << 8 | bytes[0]
    }

    fileprivate func uint64LE(at index: Int) -> UInt64 {
        self[index..<(index + 8)].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}
