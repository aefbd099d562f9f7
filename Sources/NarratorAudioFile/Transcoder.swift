import NarratorCore

/// Converts one audio file into another of the type the target's extension names: decoded
/// whole by `SoundFileReader` (the codec's delay and padding trimmed, as for any clip),
/// optionally resampled with `Resampler` (frame k lands at round(k × to / from), as a lesson
/// load converts it), written by `SoundFileWriter`.
public enum Transcoder {
    /// What a conversion read and wrote.
    public struct Result: Sendable {
        public let sourceFrames: Int
        public let sourceRate: Int
        public let frames: Int
        public let rate: Int
        public let channels: Int
    }

    /// Longest file converted, in seconds (a clip or a music bed, held in memory once).
    public static let maxSeconds = 3600

    /// Converts `source` to `target` at `rate` (nil: the source's own), with `quality` for a
    /// lossy target, every sample times `gain` (a loudness target baked in: `pack --normalize`;
    /// a 16-bit target clamps at full scale, as a render does), in `format` (`.f32` keeps the
    /// floats as decoded: `pack --web`), a WAV with `markers` (frames at `rate`) in its cue
    /// chunk. The target appears only when complete.
    public static func convert(
        _ source: String, to target: String, quality: Double?, rate: Int? = nil, gain: Float = 1, format: OutputFormat = .s16,
        markers: [AudioMarker] = []
    ) throws(NarratorError) -> Result {
        let type = try AudioFileType(path: target)
        try type.check(format: format, quality: quality, path: target)
        let file = try SoundFileReader(path: source)
        let outputRate = rate ?? file.sampleRate
        try type.check(sampleRate: outputRate, channels: file.channels, path: target)
        var samples = try file.readAll(maxFrames: maxSeconds * file.sampleRate)
        let sourceFrames = samples.count / file.channels
        if outputRate != file.sampleRate {
            samples = try Resampler.convert(samples, channels: file.channels, from: file.sampleRate, to: outputRate, file: source)
        }
        if gain != 1 {
            for i in samples.indices { samples[i] *= gain }
        }
        let frames = samples.count / file.channels
        let block = 8192
        let writer = try SoundFileWriter(
            path: target, sampleRate: outputRate, channels: file.channels, format: format, quality: quality, maxFrames: block)
        writer.cueMarkers = markers
        do throws(NarratorError) {
            try samples.withUnsafeBufferPointer { all throws(NarratorError) in
                var offset = 0
                while offset < frames {
                    let count = min(block, frames - offset)
                    try writer.write(
                        UnsafeBufferPointer(rebasing: all[(offset * file.channels)..<((offset + count) * file.channels)]), frames: count)
                    offset += count
                }
            }
            try writer.finish()
        } catch {
            writer.abandon()
            throw error
        }
        return Result(sourceFrames: sourceFrames, sourceRate: file.sampleRate, frames: frames, rate: outputRate, channels: file.channels)
    }
}
