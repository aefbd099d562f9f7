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
        if let problem = FileProblem.check(path: path) { throw NarratorError(file: path, problem) }
        var info = SF_INFO()
        // libsndfile keeps the error of a failed open in process-wide state: one open at a time,
        // so that the reason read is this file's (validate opens files in parallel).
        let opened = Self.opening.withLock { _ -> Result<OpaquePointer, NarratorError> in
            let handle = Self.mayBeProbedAsMPEG(path) ? Self.withoutStderr { sf_open(path, Int32(SFM_READ), &info) } : sf_open(path, Int32(SFM_READ), &info)
            guard let handle else {
                let code = sf_error(nil)
                // Unrecognised, or taken for MPEG and then refused: libsndfile then says "File
                // does not exist or is not a regular file", untrue of a file checked above.
                let reason =
                    code == Int32(SF_ERR_UNRECOGNISED_FORMAT) || code == Self.libsndfileBadFile
                    ? "not a sound format libsndfile can read" : String(cString: sf_strerror(nil))
                return .failure(NarratorError(file: path, "not a readable audio file (libsndfile: \(reason))"))
            }
            return .success(handle)
        }
        let handle = try opened.get()
        self.handle = handle
        sampleRate = Int(info.samplerate)
        channels = Int(info.channels)
        announcedFrames = Int(info.frames)
        format = info.format
        guard (1000...768_000).contains(sampleRate), channels > 0, channels <= 64 else {
            sf_close(handle)
            throw NarratorError(file: path, "unusable header: \(sampleRate) Hz, \(channels) channels")
        }
    }

    private static let opening = Mutex<Void>(())

    /// SFE_BAD_FILE, an error number of libsndfile's own (common.h, not its public header):
    /// "File does not exist or is not a regular file", what it says of a file it probed as
    /// MPEG and refused.
    private static let libsndfileBadFile: Int32 = 7

    /// Whether libsndfile may hand the file to libmpg123 while probing it: it does not begin
    /// with the mark of a container libsndfile knows otherwise (so an MP3, or anything unknown).
    private static func mayBeProbedAsMPEG(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return true }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 4)) ?? Data()
        let known = ["RIFF", "RIFX", "RF64", "FORM", "OggS", "fLaC", "caff", ".snd", "wvpk", "riff", "MThd", "NIST", "Crea"]
        return !known.contains(String(decoding: head, as: UTF8.self))
    }

    /// Runs `body` with file descriptor 2 on /dev/null. libmpg123, which libsndfile uses for
    /// MPEG, prints notes ("Illegal Audio-MPEG-Header", "Trying to resync") on stderr while
    /// libsndfile probes a file that is not MPEG, and libsndfile gives no way to quiet its
    /// handle. This is process-wide: it is done only around such an open (milliseconds, under
    /// `opening`), never around decoding.
    private static func withoutStderr<T>(_ body: () -> T) -> T {
        let saved = dup(STDERR_FILENO)
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        guard saved >= 0, null >= 0 else {
            if saved >= 0 { close(saved) }
            if null >= 0 { close(null) }
            return body()
        }
        // stderr is unbuffered: nothing of ours is waiting to be written.
        dup2(null, STDERR_FILENO)
        close(null)
        defer {
            dup2(saved, STDERR_FILENO)
            close(saved)
        }
        return body()
    }

    deinit { sf_close(handle) }

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
    func readChunks(maxFrames: Int, _ body: (UnsafeBufferPointer<Float>) -> Void) throws(NarratorError) {
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
            chunk.withUnsafeBufferPointer { buffer in body(UnsafeBufferPointer(rebasing: buffer[0..<(got * channels)])) }
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
