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
            guard let handle = sf_open(path, Int32(SFM_READ), &info) else {
                let reason = String(cString: sf_strerror(nil))
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
        let knownLength = announcedFrames > 0 && announcedFrames < Int(Int64.max)
        if knownLength, total < announcedFrames {
            throw NarratorError(
                file: path, "truncated: the header announces \(announcedFrames) frames, the file holds \(total)")
        }
        if let lie = headerProblem {
            throw NarratorError(file: path, lie)
        }
        if total == 0 {
            throw NarratorError(file: path, "holds no audio frames")
        }
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

    /// libsndfile clamps a data chunk that claims more bytes than the file holds, and reads
    /// an Ogg stream that ends without its end-of-stream page; both are noted only in its log,
    /// which is how a truncated file or a header that lies is recognised.
    private var headerProblem: String? {
        for line in logText.split(separator: "\n") {
            // "data : 303326 (should be 99956)": the data chunk claims more than the file holds.
            let words = line.split(whereSeparator: { $0 == " " || $0 == ":" || $0 == "(" || $0 == ")" })
            if words.count == 4 || words.count == 5, words[0] == "data" || words[0] == "SSND",
                let claimed = Int(words[1]), words[2] == "should", let actual = Int(words.last!),
                claimed > actual
            {
                return "truncated or lying header: its data chunk claims \(claimed) bytes, the file holds \(actual)"
            }
            if line.contains("File ended unexpectedly") {
                return "truncated: the stream ends without its end-of-stream mark"
            }
        }
        return nil
    }
}
