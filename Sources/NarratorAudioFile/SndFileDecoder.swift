import NarratorCore

/// Decodes any file libsndfile reads (WAV 16/24/32-bit integer and float, FLAC, Ogg Vorbis,
/// AIFF, …) and converts it to the requested rate with libsoxr.
public struct SndFileDecoder: AudioDecoder {
    /// Longest file held in memory, in seconds of its own rate.
    public var maxSeconds: Int

    /// One hour: a clip, not a music bed (those stream in live playback).
    public static let defaultMaxSeconds = 3600

    /// Files longer than this, in seconds, are streamed while they play instead of decoded
    /// into memory; nil decodes every file.
    public var streamAboveSeconds: Int?

    /// Half a minute: longer than any narration clip, shorter than a music bed.
    public static let defaultStreamAboveSeconds = 30

    public init(maxSeconds: Int = defaultMaxSeconds, streamAboveSeconds: Int? = defaultStreamAboveSeconds) {
        self.maxSeconds = maxSeconds
        self.streamAboveSeconds = streamAboveSeconds
    }

    /// The same limits, streaming nothing.
    public var wholeFiles: SndFileDecoder { SndFileDecoder(maxSeconds: maxSeconds, streamAboveSeconds: nil) }

    public func streamedFile(path: String, sampleRate: Int) throws(NarratorError) -> StreamedFile? {
        guard let streamAboveSeconds else { return nil }
        let file = try SoundFileReader(path: path)
        let announced = file.announcedFrames
        guard announced > streamAboveSeconds * file.sampleRate, announced < Int(Int32.max) * 16 else { return nil }
        // An estimate (an MP3 without a Xing header) is replaced by the decoded count.
        let frames = file.realFrameCount()
        return StreamedFile(
            path: path, channels: file.channels, frames: Frames.convert(frames, from: file.sampleRate, to: sampleRate))
    }

    public func markers(path: String, sampleRate: Int) throws(NarratorError) -> [AudioMarker] {
        let file = try SoundFileReader(path: path)
        return try file.cuePoints().map { $0.converted(from: file.sampleRate, to: sampleRate) }
    }

    /// The words an audio file's labelled cue markers give, at `sampleRate`: what
    /// `"markers": "words"` makes of a clip, and `narrator timings convert clip.wav …` writes.
    public func markerWords(path: String, sampleRate: Int) throws(NarratorError) -> [WordTiming] {
        let info = try AudioFileInfo(path: path)
        return try WordTimings.fromMarkers(
            markers(path: path, sampleRate: sampleRate),
            audioFrames: Frames.convert(info.frames, from: info.sampleRate, to: sampleRate), path: path)
    }

    /// Audio in memory is measured as it plays (at the lesson rate); a streamed file is read
    /// through its region at its own rate, as libsndfile decodes it.
    public func integratedLoudness(of audio: ClipAudio, sampleRate: Int, outputChannels: Int) throws(NarratorError) -> Double? {
        switch audio.source {
        case .memory(let buffer):
            let range = (audio.offset * buffer.channels)..<((audio.offset + audio.frames) * buffer.channels)
            return try Loudness.measure(
                UnsafeBufferPointer(rebasing: buffer.storage[range]), channels: buffer.channels, sampleRate: sampleRate,
                outputChannels: outputChannels, file: "(decoded audio)"
            ).integrated
        case .stream(let file):
            let rate = try SoundFileReader(path: file.path).sampleRate
            let first = Frames.convert(audio.offset, from: sampleRate, to: rate)
            let last = Frames.convert(audio.offset + audio.frames, from: sampleRate, to: rate)
            return try Loudness.measure(path: file.path, region: first..<max(first, last), outputChannels: outputChannels).integrated
        }
    }

    public func decode(path: String, sampleRate: Int) throws(NarratorError) -> AudioBuffer {
        let file = try SoundFileReader(path: path)
        // The cap holds at both rates, so a converted clip is never larger than maxSeconds.
        var samples = try file.readAll(maxFrames: maxSeconds * min(file.sampleRate, sampleRate))
        if file.sampleRate != sampleRate {
            samples = try Resampler.convert(
                samples, channels: file.channels, from: file.sampleRate, to: sampleRate, file: path)
        }
        return AudioBuffer(channels: file.channels, samples: samples)
    }
}

/// What `narrator inspect` reports of a file.
public struct AudioFileInfo: Sendable {
    public let format: String
    public let sampleRate: Int
    public let channels: Int
    public let frames: Int
    /// Its EBU R 128 figures (integrated, range, true peak), when asked for.
    public let loudness: Loudness?

    /// Reads the header and decodes the whole file, so that `frames` is what it really holds;
    /// with `loudness`, measures it too.
    public init(path: String, loudness measure: Bool = false) throws(NarratorError) {
        let file = try SoundFileReader(path: path)
        let samples = try file.readAll(maxFrames: SndFileDecoder.defaultMaxSeconds * file.sampleRate)
        format = file.formatDescription
        sampleRate = file.sampleRate
        channels = file.channels
        frames = samples.count / file.channels
        loudness = measure
            ? try samples.withUnsafeBufferPointer { samples throws(NarratorError) in
                try Loudness.measure(samples, channels: file.channels, sampleRate: file.sampleRate, measures: .all, file: path)
            }
            : nil
    }
}

extension SndFileDecoder {
    /// Decodes `path` once, a chunk at a time, at each of `sampleRates`: `opened` learns its channels and announced length, then `body(k, samples)`
    /// gets interleaved frames at `sampleRates[k]`, in order, the same samples `decode` gives
    /// at that rate (libsoxr fed chunk by chunk converts as in one pass). Memory stays that of
    /// a chunk whatever the length; at most `maxSeconds` of the file. Returns the channels and
    /// the frames at each rate.
    public func stream(
        path: String, sampleRates: [Int], opened: (_ channels: Int, _ announcedFrames: Int) -> Void,
        _ body: (Int, UnsafeBufferPointer<Float>) throws(NarratorError) -> Void
    ) throws(NarratorError) -> (channels: Int, frames: [Int]) {
        let file = try SoundFileReader(path: path)
        let channels = file.channels
        // What its header announces, at the first rate asked (an estimate for an MP3 without
        // a Xing header; capped at `maxSeconds`).
        opened(
            channels,
            Frames.convert(min(max(0, file.announcedFrames), maxSeconds * file.sampleRate), from: file.sampleRate, to: sampleRates.first ?? file.sampleRate))
        var streams: [Resampler.Stream?] = []
        for rate in sampleRates {
            streams.append(rate == file.sampleRate ? nil : try Resampler.Stream(from: file.sampleRate, to: rate, channels: channels, file: path))
        }
        var frames = [Int](repeating: 0, count: sampleRates.count)
        try file.readChunks(maxFrames: maxSeconds * file.sampleRate) { chunk throws(NarratorError) in
            for (index, stream) in streams.enumerated() {
                if let stream {
                    try stream.process(chunk) { samples throws(NarratorError) in
                        frames[index] += samples.count / channels
                        try body(index, samples)
                    }
                } else {
                    frames[index] += chunk.count / channels
                    try body(index, chunk)
                }
            }
        }
        for (index, stream) in streams.enumerated() {
            try stream?.process(nil) { samples throws(NarratorError) in
                frames[index] += samples.count / channels
                try body(index, samples)
            }
        }
        return (channels, frames)
    }
}
