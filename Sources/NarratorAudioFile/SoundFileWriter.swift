import CSndFile
import Foundation
import NarratorCore

/// Sample formats for rendered files.
public enum OutputFormat: String, Sendable, CaseIterable {
    /// 16-bit integer PCM WAV: float x becomes clamp(round(x × 32768)), the exact inverse of
    /// libsndfile's read normalisation, so 16-bit clips come back bit for bit.
    case s16
    /// 32-bit float WAV.
    case f32
}

/// The kinds of file Narrator writes, named by the output's extension (letter case ignored:
/// `.MP3` is `.mp3`). Anything else is refused before a file is opened, so a name never gets
/// audio of a kind its extension does not say.
public enum AudioFileType: String, Sendable, CaseIterable {
    /// RIFF WAVE (RF64 past 4 GiB), 16-bit integer or 32-bit float.
    case wav
    /// FLAC, 16-bit: lossless, the samples of the 16-bit WAV.
    case flac
    /// Ogg Vorbis (`.ogg`).
    case vorbis = "ogg"
    /// Ogg Opus (`.opus`), at 8, 12, 16, 24 or 48 kHz only.
    case opus
    /// MPEG-1/2 Layer III (`.mp3`), with a Xing/LAME header giving its exact length.
    case mp3

    /// The rates an Opus stream can be encoded at (RFC 6716).
    public static let opusRates = [8000, 12000, 16000, 24000, 48000]
    /// The rates MPEG audio has (MPEG-1, 2 and 2.5).
    public static let mp3Rates = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000]

    /// The type `path`'s extension names.
    public init(path: String) throws(NarratorError) {
        let ext = URL(fileURLWithPath: path).pathExtension
        guard let type = AudioFileType(rawValue: ext.lowercased()) else {
            let what = ext.isEmpty ? "has no extension" : "has the extension '.\(ext)'"
            throw NarratorError(
                file: path, "\(what): the extension chooses what is written: .wav, .flac, .ogg (Vorbis), .opus or .mp3")
        }
        self = type
    }

    /// "Ogg Vorbis".
    public var name: String {
        switch self {
        case .wav: "WAV"
        case .flac: "FLAC"
        case .vorbis: "Ogg Vorbis"
        case .opus: "Ogg Opus"
        case .mp3: "MP3"
        }
    }

    /// Lossy codecs take the mixer's floats as they are, and a quality.
    public var isLossy: Bool { self == .vorbis || self == .opus || self == .mp3 }

    /// Checks what can be checked before anything is rendered: `format` (FLAC holds integers;
    /// a lossy codec is given the mixer's floats, whatever `format` says) and `quality`
    /// (0…1, lossy codecs only).
    public func check(format: OutputFormat, quality: Double?, path: String) throws(NarratorError) {
        if self == .flac && format == .f32 {
            throw NarratorError(file: path, "FLAC holds integer samples: it is written 16-bit (s16), not f32")
        }
        guard let quality else { return }
        guard isLossy else {
            throw NarratorError(
                file: path, "\(name) is lossless and takes no quality setting (only .ogg, .opus and .mp3 do)")
        }
        guard quality.isFinite, (0...1).contains(quality) else {
            throw NarratorError(file: path, "quality \(quality) is out of range: from 0 (smallest file) to 1 (best sound)")
        }
    }

    /// Checks that the type can hold audio at `sampleRate` with `channels`. `rateSetBy` names
    /// what set the rate, for the message to say what to change (`the lesson's "sampleRate"`,
    /// `--rate`); nil says only which formats take it.
    public func check(sampleRate: Int, channels: Int, path: String, rateSetBy: String? = nil) throws(NarratorError) {
        let change = rateSetBy.map { ", or make \($0) one of those rates" } ?? ""
        switch self {
        case .opus where !Self.opusRates.contains(sampleRate):
            throw NarratorError(
                file: path,
                "Opus is encoded at 8000, 12000, 16000, 24000 or 48000 Hz, and this audio is \(sampleRate) Hz: write .ogg, .mp3 or .flac\(change)")
        case .mp3 where !Self.mp3Rates.contains(sampleRate):
            throw NarratorError(
                file: path,
                "MP3 has no \(sampleRate) Hz (it has 8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100 and 48000 Hz): write .wav, .flac or .ogg\(change)")
        case .mp3 where channels > 2:
            throw NarratorError(file: path, "MP3 holds one or two channels, this audio has \(channels)")
        case .flac where channels > 8:
            throw NarratorError(file: path, "FLAC holds at most 8 channels, this audio has \(channels)")
        default: return
        }
    }

    /// libsndfile's format code.
    func libsndfileFormat(_ format: OutputFormat) -> Int32 {
        switch self {
        // RF64 that libsndfile turns back into a plain WAV header when the file stays under
        // 4 GiB: every usual render is an ordinary WAV, and a longer one is still correct.
        case .wav: Int32(SF_FORMAT_RF64) | Int32(format == .s16 ? SF_FORMAT_PCM_16 : SF_FORMAT_FLOAT)
        case .flac: Int32(SF_FORMAT_FLAC) | Int32(SF_FORMAT_PCM_16)
        case .vorbis: Int32(SF_FORMAT_OGG) | Int32(SF_FORMAT_VORBIS)
        case .opus: Int32(SF_FORMAT_OGG) | Int32(SF_FORMAT_OPUS)
        case .mp3: Int32(SF_FORMAT_MPEG) | Int32(SF_FORMAT_MPEG_LAYER_III)
        }
    }
}

/// Writes an audio file of the type its extension names (`AudioFileType`) that appears under
/// its name only when complete (through `AtomicFile`): samples go to a hidden file beside it,
/// which is renamed over the target at `finish()` and removed on failure. It installs no
/// signal handler: the executable removes what `PartialFiles` lists when a signal ends it.
///
/// What is written decodes to exactly the frames given, at their places: libsndfile writes
/// the codec's delay and the end's padding into each container (Opus pre-skip and the final
/// granule position, Vorbis's final granule position, the LAME header's delay and padding in
/// MP3's Xing frame), which libsndfile and ffmpeg both trim (docs/formats.md has the figures).
public final class SoundFileWriter {
    public let path: String
    public let type: AudioFileType
    private let output: AtomicFile
    private var handle: OpaquePointer?
    /// Where libsndfile writes an Ogg stream (Vorbis, Opus) before `OggSerial` copies it to
    /// `output` with a serial derived from its content; -1 for the other types.
    private var oggScratch: UnsafeMutablePointer<FILE>?
    private let channels: Int
    /// Whether samples go to libsndfile as 16-bit integers (WAV and FLAC s16) or as floats.
    private let writesInt16: Bool
    /// Converted 16-bit frames waiting to go to libsndfile: writes are gathered into blocks of
    /// at least `gatherFrames`, so that a render makes a few large write(2) calls rather than
    /// one per mixer block (libsndfile hands a 16-bit block straight to write(2)).
    private var scratch: [Int16]
    private var pending = 0
    /// Frames gathered before they are written (64 KiB of mono 16-bit samples).
    static let gatherFrames = 32768
    /// WAV only: cue markers (frames of this file, and labels) written at `finish()` after the
    /// samples as a `cue ` chunk and a `LIST`/`adtl` chunk of `labl`s, which libsndfile reads
    /// back as it reads any WAV's (it writes no labels itself).
    public var cueMarkers: [AudioMarker] = []

    /// Opens `path` for audio at `sampleRate` with `channels`, of the type its extension
    /// names. `format` is the sample format of WAV (FLAC is always 16-bit; lossy codecs are
    /// given floats); `quality`, 0 (smallest) to 1 (best), is for Vorbis, Opus and MP3 only
    /// (nil: libsndfile's default); `rateSetBy`, what set `sampleRate`, for a type that lacks
    /// it (`AudioFileType.check(sampleRate:channels:path:rateSetBy:)`). Every check is made
    /// before the file is created.
    public init(
        path: String, sampleRate: Int, channels: Int, format: OutputFormat, quality: Double? = nil, maxFrames: Int = 8192,
        rateSetBy: String? = nil
    ) throws(NarratorError) {
        let type = try AudioFileType(path: path)
        try type.check(format: format, quality: quality, path: path)
        try type.check(sampleRate: sampleRate, channels: channels, path: path, rateSetBy: rateSetBy)
        self.path = path
        self.type = type
        self.channels = channels
        writesInt16 = !type.isLossy && format == .s16
        scratch = writesInt16 ? [Int16](repeating: 0, count: max(maxFrames, Self.gatherFrames) * channels) : []
        // Not synced to disk: complete or absent holds without it (`AtomicFile`), and the
        // sync of a long render was most of its wall time.
        output = try AtomicFile(path: path, durable: false)
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = Int32(channels)
        info.format = type.libsndfileFormat(format)
        if type == .vorbis || type == .opus {
            // An unnamed file (tmpfile(3): removed from its folder as it is made), so nothing
            // is left behind whatever ends the process.
            oggScratch = tmpfile()
            guard oggScratch != nil else {
                let failure = NarratorError(file: path, "cannot write: \(String(cString: strerror(errno)))")
                output.discard()
                throw failure
            }
        }
        // libsndfile writes to the hidden file's descriptor (or the Ogg scratch), which stays
        // AtomicFile's (or this writer's) to close.
        guard let handle = sf_open_fd(oggScratch.map { fileno($0) } ?? output.descriptor, Int32(SFM_WRITE), &info, 0) else {
            let failure = Self.failure(path, "cannot write", nil)
            abandon()
            throw failure
        }
        self.handle = handle
        switch type {
        case .wav:
            sf_command(handle, Int32(SFC_RF64_AUTO_DOWNGRADE), nil, Int32(SF_TRUE))
        case .flac:
            break
        case .vorbis, .opus, .mp3:
            if var quality {
                // libsndfile maps it to each codec's own scale (Vorbis quality, Opus bitrate,
                // LAME's VBR quality). Its result is no success flag for MP3 (SF_FALSE at
                // quality 0, which still takes effect); the tests check that it does.
                sf_command(handle, Int32(SFC_SET_VBR_ENCODING_QUALITY), &quality, Int32(MemoryLayout<Double>.size))
            }
        }
    }

    /// The one place libsndfile's errors become Narrator's: `what` failed, and why.
    private static func failure(_ path: String, _ what: String, _ handle: OpaquePointer?) -> NarratorError {
        NarratorError(file: path, "\(what) (libsndfile: \(String(cString: sf_strerror(handle))))")
    }

    deinit { abandon() }

    /// Appends `frames` frames of interleaved samples.
    public func write(_ samples: UnsafeBufferPointer<Float>, frames: Int) throws(NarratorError) {
        guard let handle else { throw NarratorError(file: path, "writer already closed") }
        if writesInt16 {
            precondition(frames * channels <= scratch.count)
            if (pending + frames) * channels > scratch.count { try flush() }
            let offset = pending * channels
            scratch.withUnsafeMutableBufferPointer { out in
                SampleConversion.toInt16(samples.baseAddress!, out.baseAddress! + offset, count: frames * channels)
            }
            pending += frames
        } else if Int(sf_writef_float(handle, samples.baseAddress, sf_count_t(frames))) != frames {
            let failure = Self.failure(path, "write failed", handle)
            abandon()
            throw failure
        }
    }

    /// Hands the gathered 16-bit frames to libsndfile.
    private func flush() throws(NarratorError) {
        guard let handle, pending > 0 else { return }
        let frames = pending
        pending = 0
        let written = scratch.withUnsafeBufferPointer { Int(sf_writef_short(handle, $0.baseAddress, sf_count_t(frames))) }
        if written != frames {
            let failure = Self.failure(path, "write failed", handle)
            abandon()
            throw failure
        }
    }

    /// Closes the file (the encoder writes its last packets and the length headers) and
    /// moves it into place.
    public func finish() throws(NarratorError) {
        guard handle != nil else { throw NarratorError(file: path, "writer already closed") }
        try flush()
        guard let handle else { throw NarratorError(file: path, "writer already closed") }
        self.handle = nil
        if sf_close(handle) != 0 {
            abandon()
            throw NarratorError(file: path, "closing failed")
        }
        if type == .wav, !cueMarkers.isEmpty {
            do throws(NarratorError) {
                try appendCueChunks()
            } catch {
                abandon()
                throw error
            }
        }
        if let scratch = oggScratch {
            do {
                try OggSerial.copy(from: fileno(scratch), to: output, path: path)
            } catch {
                abandon()
                throw error
            }
            fclose(scratch)
            oggScratch = nil
        }
        try output.commit()
    }

    /// Appends `cueMarkers` to the closed WAV as a `cue ` chunk and a `LIST` `adtl` chunk
    /// (one `labl` per labelled marker), and makes the RIFF size count them.
    private func appendCueChunks() throws(NarratorError) {
        func u32(_ value: Int, _ bytes: inout [UInt8]) {
            for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8((value >> shift) & 0xFF)) }
        }
        guard cueMarkers.count <= 2500, cueMarkers.allSatisfy({ (0...Int(UInt32.max)).contains($0.frame) }) else {
            throw NarratorError(file: path, "\(cueMarkers.count) cue markers do not fit a WAV's cue chunk (at most 2500, each within 2^32 frames)")
        }
        var cue = Array("cue ".utf8)
        u32(4 + 24 * cueMarkers.count, &cue)
        u32(cueMarkers.count, &cue)
        var labels = Array("adtl".utf8)
        for (index, marker) in cueMarkers.enumerated() {
            u32(index + 1, &cue)
            u32(marker.frame, &cue)
            cue += Array("data".utf8)
            u32(0, &cue)
            u32(0, &cue)
            u32(marker.frame, &cue)
            guard !marker.label.isEmpty else { continue }
            let text = Array(marker.label.utf8) + [0]
            labels += Array("labl".utf8)
            u32(4 + text.count, &labels)
            u32(index + 1, &labels)
            labels += text
            if text.count % 2 == 1 { labels.append(0) }
        }
        var chunks = cue
        if labels.count > 4 {
            chunks += Array("LIST".utf8)
            u32(labels.count, &chunks)
            chunks += labels
        }
        // (A RIFF WAV: libsndfile writes RF64 only past 4 GiB, refused below. The descriptor is
        // write-only, so the header is not read back.)
        let descriptor = output.descriptor
        let end = lseek(descriptor, 0, SEEK_END)
        guard end > 12 else { throw NarratorError(file: path, "cannot add cue markers: \(String(cString: strerror(errno)))") }
        // Chunks start at even offsets.
        if end % 2 == 1 { chunks.insert(0, at: 0) }
        let size = Int(end) + chunks.count - 8
        guard size <= Int(UInt32.max) else { throw NarratorError(file: path, "cannot add cue markers: the file would pass 4 GiB") }
        var riffSize: [UInt8] = []
        u32(size, &riffSize)
        guard pwrite(descriptor, chunks, chunks.count, end) == chunks.count, pwrite(descriptor, riffSize, 4, 4) == 4 else {
            throw NarratorError(file: path, "cannot add cue markers: \(String(cString: strerror(errno)))")
        }
    }

    /// Drops the partial file.
    public func abandon() {
        pending = 0
        if let handle {
            sf_close(handle)
            self.handle = nil
        }
        if let scratch = oggScratch {
            fclose(scratch)
            oggScratch = nil
        }
        output.discard()
    }
}

/// Offline rendering: the mixer, block after block, into a file. Memory is the mixer's block,
/// the clips and the stream rings, whatever the schedule's or a streamed file's length.
public enum OfflineRenderer {
    public static let blockFrames = 4096

    /// The rate of a schedule: its lesson's, which a type that lacks it asks to change.
    static let scheduleRate = "the lesson's \"sampleRate\""

    /// Renders `schedule` to `path`, of the type its extension names (`SoundFileWriter`).
    public static func render(_ schedule: Schedule, to path: String, format: OutputFormat, quality: Double? = nil) throws(NarratorError) {
        let writer = try SoundFileWriter(
            path: path, sampleRate: schedule.sampleRate, channels: schedule.channels, format: format, quality: quality,
            maxFrames: blockFrames, rateSetBy: scheduleRate)
        do throws(NarratorError) {
            try render(schedule) { samples, frames throws(NarratorError) in try writer.write(samples, frames: frames) }
        } catch {
            writer.abandon()
            throw error
        }
        try writer.finish()
    }

    /// Renders `schedule` at `speed` (0.5…2.0), pitch kept (`TimeStretcher`): the file has
    /// exactly `TimeStretcher.outputFrame(forInput: schedule.frames, speed: speed)` frames
    /// (Sonic's last few frames past that are cut, or silence added to it), and timeline frame
    /// `f` is heard at its frame `TimeStretcher.outputFrame(forInput: f, speed: speed)`. At
    /// speed 1 this is `render(_:to:format:)`, sample for sample.
    public static func render(
        _ schedule: Schedule, to path: String, format: OutputFormat, quality: Double? = nil, speed: Double
    ) throws(NarratorError) {
        try TimeStretcher.check(speed)
        if speed == 1 { return try render(schedule, to: path, format: format, quality: quality) }
        let stream = try StretchedStream(
            frames: schedule.frames, rate: schedule.sampleRate, channels: schedule.channels, speed: speed, blockFrames: blockFrames)
        let writer = try SoundFileWriter(
            path: path, sampleRate: schedule.sampleRate, channels: schedule.channels, format: format, quality: quality,
            maxFrames: blockFrames, rateSetBy: scheduleRate)
        func write(_ samples: UnsafeBufferPointer<Float>, _ frames: Int) throws(NarratorError) {
            try writer.write(samples, frames: frames)
        }
        do throws(NarratorError) {
            try render(schedule) { samples, _ throws(NarratorError) in try stream.feed(samples, write: write) }
            try stream.finish(write: write)
        } catch {
            writer.abandon()
            throw error
        }
        try writer.finish()
    }

    /// Renders `schedule` in memory, block after block: `body` gets each block's interleaved
    /// samples (valid only during the call) and its frame count, in order, up to
    /// `schedule.frames`. The same mixing as a file render, for readers of the samples (the plot).
    public static func render(
        _ schedule: Schedule, blocks body: (UnsafeBufferPointer<Float>, Int) throws(NarratorError) -> Void
    ) throws(NarratorError) {
        let feeder = StreamFeeder(schedule: schedule)
        let mixer = Mixer(schedule: schedule, lanes: feeder.lanes)
        let block = UnsafeMutableBufferPointer<Float>.allocate(capacity: blockFrames * schedule.channels)
        defer { block.deallocate() }
        while !mixer.finished {
            let frames = min(blockFrames, schedule.frames - mixer.position)
            let slice = UnsafeMutableBufferPointer(rebasing: block[0..<(frames * schedule.channels)])
            if let problem = feeder.fill().first { throw problem }
            mixer.render(into: slice, frameCount: frames)
            try body(UnsafeBufferPointer(slice), frames)
        }
    }
}
