import CSndFile
import Foundation
import NarratorCore
import Synchronization

/// An audio file open for reading through libsndfile: its format, and its samples as floats
/// at full scale ±1 (libsndfile's normalisation: integers divided by 2^(bits−1)).
final class SoundFileReader {
    let path: String
    private let handle: OpaquePointer
    let sampleRate: Int
    let channels: Int
    /// Frames the header announces. Not trusted for allocation: files lie.
    let announcedFrames: Int
    let format: Int32

    init(path: String) throws(NarratorError) {
        self.path = path
        // Opened once, as a regular file (a FIFO or a device is refused without blocking), and
        // handed to libsndfile by descriptor: what was checked is what is decoded.
        let file = try InputFile.open(path: path)
        if file.size == 0 {
            close(file.descriptor)
            throw NarratorError(file: path, "empty file")
        }
        guard Self.libsndfileMayRead(file.descriptor) else {
            close(file.descriptor)
            throw NarratorError(file: path, "not a readable audio file (not a sound format libsndfile can read)")
        }
        var info = SF_INFO()
        // libsndfile keeps the error of a failed open in process-wide state: one open at a time,
        // so that the reason read is this file's (validate opens files in parallel).
        let opened = Self.opening.withLock { _ -> Result<OpaquePointer, NarratorError> in
            guard let handle = sf_open_fd(file.descriptor, Int32(SFM_READ), &info, 0) else {
                let code = sf_error(nil)
                let reason =
                    code == Int32(SF_ERR_UNRECOGNISED_FORMAT) || code == Self.libsndfileBadFile
                    ? "not a sound format libsndfile can read" : String(cString: sf_strerror(nil))
                return .failure(NarratorError(file: path, "not a readable audio file (libsndfile: \(reason))"))
            }
            return .success(handle)
        }
        let handle: OpaquePointer
        switch opened {
        case .success(let opened): handle = opened
        case .failure(let error):
            close(file.descriptor)
            throw error
        }
        self.handle = handle
        self.descriptor = file.descriptor
        sampleRate = Int(info.samplerate)
        channels = Int(info.channels)
        announcedFrames = Int(info.frames)
        format = info.format
        guard (1000...768_000).contains(sampleRate), channels > 0, channels <= 64 else {
            throw NarratorError(file: path, "unusable header: \(sampleRate) Hz, \(channels) channels")
        }
    }

    /// The file's descriptor, which libsndfile reads and this reader closes (after sf_close).
    private let descriptor: Int32

    private static let opening = Mutex<Void>(())

    /// SFE_BAD_FILE, an error number of libsndfile's own (common.h, not its public header):
    /// "File does not exist or is not a regular file", what it says of a file it probed as
    /// MPEG and refused.
    private static let libsndfileBadFile: Int32 = 7

    /// Whether the file may be handed to libsndfile: it begins with the mark of a format
    /// libsndfile reads, or with MPEG audio frames (after an ID3 tag, if any).
    ///
    /// libsndfile hands anything it does not recognise to libmpg123, which prints notes
    /// ("Illegal Audio-MPEG-Header", "Trying to resync") on stderr while it searches the file
    /// for frames, and libsndfile gives no way to quiet it; nor may a library redirect the
    /// process's stderr (other threads write there), or interpose on libmpg123 for a whole app
    /// (the `narrator` executable does: CQuietMPG123). So a file that is none of these is refused
    /// here, in one line, and libmpg123 never sees it. The marks are those libsndfile's own
    /// format guess checks (sndfile.c); the formats it knows without a mark (raw, MAT4, HTK,
    /// SD2's resource fork) are not read by Narrator, nor an MP3 with bytes of another kind
    /// before its first frame.
    static func libsndfileMayRead(_ descriptor: Int32) -> Bool {
        func bytes(at offset: Int, _ count: Int) -> [UInt8] {
            var buffer = [UInt8](repeating: 0, count: count)
            let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress!, count, off_t(offset)) }
            return Array(buffer.prefix(max(0, got)))
        }
        let head = bytes(at: 0, 12)
        guard head.count >= 4 else { return false }
        let mark = String(decoding: head[0..<4], as: UTF8.self)
        let marks: Set<String> = [
            "RIFF", "RIFX", "RF64", "FORM", "OggS", "fLaC", "caff", ".snd", "dns.", "riff", "NIST", "Crea", "fap ", " paf",
            "2BIT", "PVF1", "Exte", "MATL", "ALaw",
        ]
        if marks.contains(mark) { return true }
        let word = UInt32(head[0]) << 24 | UInt32(head[1]) << 16 | UInt32(head[2]) << 8 | UInt32(head[3])
        // IRCAM (both byte orders), MIDI sample dump, MPC2000.
        if [0x64A3_0100, 0x64A3_0200, 0x64A3_0300, 0x64A3_0400, 0x0001_A364, 0x0002_A364, 0x0003_A364, 0x0004_A364].contains(word) {
            return true
        }
        if head[0] == 0xF0 && head[1] == 0x7E && head[3] == 0x01 { return true }
        if head[0] == 0x01 && head[1] == 0x04 { return true }
        // MPEG audio: an ID3v2 tag skipped (and zero padding after it), then frames that
        // follow each other — three, or to the end of the file or a closing tag.
        var offset = 0
        if head.count >= 10, mark.hasPrefix("ID3") {
            let size = head[6...9].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
            offset = 10 + size + (head[5] & 0x10 != 0 ? 10 : 0)
            let padding = bytes(at: offset, 65536)
            offset += padding.prefix { $0 == 0 }.count
        }
        var size = stat()
        guard fstat(descriptor, &size) == 0 else { return false }
        var first: MPEGFrameHeader?
        for frame in 0..<3 {
            if frame > 0, offset == Int(size.st_size) { return true }
            let header = bytes(at: offset, 4)
            if frame > 0, header.count >= 3, ["TAG", "APE", "LYR"].contains(String(decoding: header[0..<3], as: UTF8.self)) {
                return true
            }
            guard let parsed = MPEGFrameHeader(header) else { return false }
            if let first, first.version != parsed.version || first.layer != parsed.layer || first.sampleRate != parsed.sampleRate {
                return false
            }
            first = first ?? parsed
            // A free-format frame gives no length to check the next one by.
            guard let length = parsed.length else { return true }
            offset += length
        }
        return true
    }

    deinit {
        sf_close(handle)
        close(descriptor)
    }

    /// "WAV (Microsoft), Signed 16 bit PCM".
    var formatDescription: String {
        func name(_ code: Int32) -> String {
            var info = SF_FORMAT_INFO()
            info.format = code
            guard sf_command(nil, Int32(SFC_GET_FORMAT_INFO), &info, Int32(MemoryLayout<SF_FORMAT_INFO>.size)) == 0,
                let name = info.name
            else { return String(format: "0x%x", code) }
            return String(cString: name)
        }
        let major = name(format & Int32(SF_FORMAT_TYPEMASK))
        let sub = name(format & Int32(SF_FORMAT_SUBMASK))
        return "\(major), \(sub)"
    }

    /// Reads every frame. Memory grows with what the file really holds, never with what its
    /// header claims; a file that ends before its header says it should is an error.
    func readAll(maxFrames: Int) throws(NarratorError) -> [Float] {
        var samples: [Float] = []
        try readChunks(maxFrames: maxFrames) { chunk in samples.append(contentsOf: chunk) }
        return samples
    }

    /// Reads every frame, handing `body` one chunk of interleaved samples at a time (at most
    /// 65536 frames), with the same checks as `readAll`.
    func readChunks(maxFrames: Int, _ body: (UnsafeBufferPointer<Float>) throws(NarratorError) -> Void) throws(NarratorError) {
        let chunkFrames = 65536
        var chunk = [Float](repeating: 0, count: chunkFrames * channels)
        var total = 0
        while true {
            let got = chunk.withUnsafeMutableBufferPointer { buffer in
                Int(sf_readf_float(handle, buffer.baseAddress, sf_count_t(chunkFrames)))
            }
            if got <= 0 { break }
            total += got
            if total > maxFrames {
                throw NarratorError(
                    file: path,
                    "longer than \(maxFrames) frames, too long to hold in memory (header says \(announcedFrames) frames)")
            }
            try chunk.withUnsafeBufferPointer { buffer throws(NarratorError) in try body(UnsafeBufferPointer(rebasing: buffer[0..<(got * channels)])) }
        }
        let error = sf_error(handle)
        if error != 0 {
            throw NarratorError(file: path, "read error after \(total) frames (libsndfile: \(String(cString: sf_strerror(handle))))")
        }
        // Complete or not is decided by what the container says against what was decoded.
        if let problem = container.problem {
            throw NarratorError(file: path, problem)
        }
        let knownLength = container.lengthKnown && announcedFrames > 0 && announcedFrames < Int(Int64.max)
        if knownLength, total < announcedFrames {
            throw NarratorError(
                file: path, "truncated: the header announces \(announcedFrames) frames, the file holds \(total)")
        }
        if total == 0 {
            throw NarratorError(file: path, "holds no audio frames")
        }
    }

    /// The file's container read for its own length truth (once).
    private(set) lazy var container: ContainerCheck.Findings = ContainerCheck.inspect(path: path, kind: containerKind)

    private var containerKind: ContainerCheck.Kind {
        switch format & Int32(SF_FORMAT_TYPEMASK) {
        case Int32(SF_FORMAT_WAV), Int32(SF_FORMAT_WAVEX), Int32(SF_FORMAT_RF64): .riff
        case Int32(SF_FORMAT_AIFF): .aiff
        case Int32(SF_FORMAT_OGG): .ogg
        case Int32(SF_FORMAT_MPEG): .mp3
        default: .other
        }
    }

    /// The frames the file holds: libsndfile's count when the container states it, else
    /// counted by decoding (an MP3 without a Xing header: libsndfile estimates from its size).
    func realFrameCount() -> Int {
        if container.lengthKnown { return announcedFrames }
        let chunkFrames = 16384
        var chunk = [Float](repeating: 0, count: chunkFrames * channels)
        var total = 0
        while true {
            let got = chunk.withUnsafeMutableBufferPointer { Int(sf_readf_float(handle, $0.baseAddress, sf_count_t(chunkFrames))) }
            if got <= 0 { break }
            total += got
        }
        _ = seek(toFrame: 0)
        return total
    }

    /// Moves to `frame`; false if the file cannot seek there.
    func seek(toFrame frame: Int) -> Bool {
        sf_seek(handle, sf_count_t(frame), SEEK_SET) == sf_count_t(frame)
    }

    /// Reads up to `frames` frames into `buffer`; returns the frames read (0 at the end).
    func read(into buffer: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        max(0, Int(sf_readf_float(handle, buffer, sf_count_t(frames))))
    }

    /// The file's cue points (WAV `cue ` with the `labl` labels of its `LIST`/`adtl` chunk, or
    /// AIFF markers), in the file's own frames, in the order the file lists them. A point's
    /// place is its sample offset in the data (its play-order position when the offset is 0,
    /// as some editors write it).
    func cuePoints() throws(NarratorError) -> [AudioMarker] {
        var count: UInt32 = 0
        guard sf_command(handle, Int32(SFC_GET_CUE_COUNT), &count, Int32(MemoryLayout<UInt32>.size)) == SF_TRUE,
            count > 0
        else {
            // libsndfile skips a cue chunk of more than 2500 points, saying so only in its log.
            if let line = logText.split(separator: "\n").first(where: { $0.contains("Count") && $0.contains("skipping") }) {
                throw NarratorError(
                    file: path, "its cue chunk is too large for libsndfile (\(line.trimmingCharacters(in: .whitespaces)); at most 2500 points)")
            }
            return []
        }
        let points = Int(min(count, 65536))
        let headerBytes = MemoryLayout<SF_CUES>.offset(of: \SF_CUES.cue_points)!
        let stride = MemoryLayout<SF_CUE_POINT>.stride
        let bytes = UnsafeMutableRawPointer.allocate(
            byteCount: headerBytes + points * stride, alignment: MemoryLayout<SF_CUES>.alignment)
        bytes.initializeMemory(as: UInt8.self, repeating: 0, count: headerBytes + points * stride)
        defer { bytes.deallocate() }
        guard sf_command(handle, Int32(SFC_GET_CUE), bytes, Int32(headerBytes + points * stride)) == SF_TRUE else { return [] }
        let got = min(points, Int(bytes.load(as: UInt32.self)))
        return (0..<got).map { index in
            var point = bytes.load(fromByteOffset: headerBytes + index * stride, as: SF_CUE_POINT.self)
            let label = withUnsafeBytes(of: &point.name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            let frame = point.sample_offset != 0 ? Int(point.sample_offset) : Int(point.position)
            return AudioMarker(label: label, frame: frame)
        }
    }

    /// What libsndfile noted while reading the header.
    private var logText: String {
        var log = [CChar](repeating: 0, count: 16384)
        let length = log.withUnsafeMutableBufferPointer { buffer in
            sf_command(handle, Int32(SFC_GET_LOG_INFO), buffer.baseAddress, Int32(buffer.count))
        }
        guard length > 0 else { return "" }
        return String(decoding: log.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The four bytes that begin an MPEG audio frame (ISO/IEC 11172-3, 13818-3, and MPEG 2.5).
struct MPEGFrameHeader: Equatable {
    /// 1, 2 or 25 (for 2.5).
    let version: Int
    /// 1, 2 or 3.
    let layer: Int
    let sampleRate: Int
    /// The frame's length in bytes, nil for the free format.
    let length: Int?

    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0 else { return nil }
        let versionBits = (bytes[1] >> 3) & 0x3
        let layerBits = (bytes[1] >> 1) & 0x3
        let bitrateIndex = Int(bytes[2] >> 4)
        let rateIndex = Int((bytes[2] >> 2) & 0x3)
        let padding = Int((bytes[2] >> 1) & 0x1)
        guard versionBits != 1, layerBits != 0, bitrateIndex != 15, rateIndex != 3 else { return nil }
        version = versionBits == 3 ? 1 : versionBits == 2 ? 2 : 25
        layer = 4 - Int(layerBits)
        let rates = version == 1 ? [44100, 48000, 32000] : version == 2 ? [22050, 24000, 16000] : [11025, 12000, 8000]
        sampleRate = rates[rateIndex]
        let kbps: [Int]
        switch (version, layer) {
        case (1, 1): kbps = [0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
        case (1, 2): kbps = [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
        case (1, 3): kbps = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        case (_, 1): kbps = [0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
        default: kbps = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
        }
        let bitrate = kbps[bitrateIndex] * 1000
        if bitrate == 0 {
            length = nil
        } else if layer == 1 {
            length = (12 * bitrate / sampleRate + padding) * 4
        } else if layer == 3 && version != 1 {
            length = 72 * bitrate / sampleRate + padding
        } else {
            length = 144 * bitrate / sampleRate + padding
        }
    }
}
