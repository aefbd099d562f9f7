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

/// Writes a WAV file that appears under its name only when complete (through `AtomicFile`):
/// samples go to a hidden file beside it, which is renamed over the target at `finish()` and
/// removed on failure. It installs no signal handler: the executable removes what
/// `PartialFiles` lists when a signal ends it.
public final class SoundFileWriter {
    public let path: String
    private let output: AtomicFile
    private var handle: OpaquePointer?
    private let channels: Int
    private let format: OutputFormat
    /// Scratch for float → int16 conversion, sized for `maxFrames` per write.
    private var scratch: [Int16]

    public init(path: String, sampleRate: Int, channels: Int, format: OutputFormat, maxFrames: Int = 8192) throws(NarratorError) {
        self.path = path
        self.channels = channels
        self.format = format
        scratch = format == .s16 ? [Int16](repeating: 0, count: maxFrames * channels) : []
        output = try AtomicFile(path: path)
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = Int32(channels)
        // RF64 that libsndfile turns back into a plain WAV header when the file stays under
        // 4 GiB: every usual render is an ordinary WAV, and a longer one is still correct.
        info.format = Int32(SF_FORMAT_RF64) | Int32(format == .s16 ? SF_FORMAT_PCM_16 : SF_FORMAT_FLOAT)
        // libsndfile writes to the hidden file's descriptor, which stays AtomicFile's to close.
        guard let handle = sf_open_fd(output.descriptor, Int32(SFM_WRITE), &info, 0) else {
            let reason = String(cString: sf_strerror(nil))
            output.discard()
            throw NarratorError(file: path, "cannot write (libsndfile: \(reason))")
        }
        sf_command(handle, Int32(SFC_RF64_AUTO_DOWNGRADE), nil, Int32(SF_TRUE))
        self.handle = handle
    }

    deinit { abandon() }

    /// Appends `frames` frames of interleaved samples.
    public func write(_ samples: UnsafeBufferPointer<Float>, frames: Int) throws(NarratorError) {
        guard let handle else { throw NarratorError(file: path, "writer already closed") }
        let written: Int
        switch format {
        case .f32:
            written = Int(sf_writef_float(handle, samples.baseAddress, sf_count_t(frames)))
        case .s16:
            precondition(frames * channels <= scratch.count)
            written = scratch.withUnsafeMutableBufferPointer { out in
                SampleConversion.toInt16(samples.baseAddress!, out.baseAddress!, count: frames * channels)
                return Int(sf_writef_short(handle, out.baseAddress, sf_count_t(frames)))
            }
        }
        if written != frames {
            let reason = String(cString: sf_strerror(handle))
            abandon()
            throw NarratorError(file: path, "write failed (libsndfile: \(reason))")
        }
    }

    /// Closes the file and moves it into place.
    public func finish() throws(NarratorError) {
        guard let handle else { throw NarratorError(file: path, "writer already closed") }
        self.handle = nil
        if sf_close(handle) != 0 {
            output.discard()
            throw NarratorError(file: path, "closing failed")
        }
        try output.commit()
    }

    /// Drops the partial file.
    public func abandon() {
        if let handle {
            sf_close(handle)
            self.handle = nil
        }
        output.discard()
    }
}

/// Offline rendering: the mixer, block after block, into a file. Memory is the mixer's block,
/// the clips and the stream rings, whatever the schedule's or a streamed file's length.
public enum OfflineRenderer {
    public static let blockFrames = 4096

    public static func render(_ schedule: Schedule, to path: String, format: OutputFormat) throws(NarratorError) {
        let writer = try SoundFileWriter(
            path: path, sampleRate: schedule.sampleRate, channels: schedule.channels, format: format,
            maxFrames: blockFrames)
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
    public static func render(_ schedule: Schedule, to path: String, format: OutputFormat, speed: Double) throws(NarratorError) {
        try TimeStretcher.check(speed)
        if speed == 1 { return try render(schedule, to: path, format: format) }
        let channels = schedule.channels
        let total = TimeStretcher.outputFrame(forInput: schedule.frames, speed: speed)
        let stretcher = try TimeStretcher(
            rate: schedule.sampleRate, channels: channels, speed: speed, maxFeedFrames: blockFrames)
        let writer = try SoundFileWriter(
            path: path, sampleRate: schedule.sampleRate, channels: channels, format: format, maxFrames: blockFrames)
        let block = UnsafeMutableBufferPointer<Float>.allocate(capacity: blockFrames * channels)
        defer { block.deallocate() }
        var written = 0
        func drain() throws(NarratorError) {
            while true {
                let frames = stretcher.take(into: block)
                if frames == 0 { return }
                let keep = min(frames, total - written)
                if keep > 0 {
                    try writer.write(UnsafeBufferPointer(rebasing: block[0..<(keep * channels)]), frames: keep)
                    written += keep
                }
            }
        }
        do throws(NarratorError) {
            try render(schedule) { samples, _ throws(NarratorError) in
                stretcher.feed(samples)
                try drain()
            }
            stretcher.flush()
            try drain()
            block.initialize(repeating: 0)
            while written < total {
                let frames = min(blockFrames, total - written)
                try writer.write(UnsafeBufferPointer(rebasing: block[0..<(frames * channels)]), frames: frames)
                written += frames
            }
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
