/// Decoded audio at the lesson's rate: interleaved samples, shared by every clip cut from the
/// same file so that a file is decoded once however many regions and repeats play it.
public final class AudioBuffer: Sendable {
    public let channels: Int
    public let frames: Int
    /// `frames × channels` interleaved samples, full scale ±1.
    public let samples: [Float]

    public init(channels: Int, samples: [Float]) {
        precondition(channels > 0 && samples.count % channels == 0)
        self.channels = channels
        self.frames = samples.count / channels
        self.samples = samples
    }
}

/// A clip's audio: a frame range of a shared buffer.
public struct ClipAudio: Sendable {
    public let buffer: AudioBuffer
    public let offset: Int
    public let frames: Int
    public var channels: Int { buffer.channels }
}

/// Turns an audio file into samples at a given rate. Implemented with libsndfile and a real
/// resampler in NarratorAudioFile; tests may supply their own.
public protocol AudioDecoder: Sendable {
    func decode(path: String, sampleRate: Int) throws(NarratorError) -> AudioBuffer
}

/// A clip ready to schedule: its audio and its words, in frames from the clip's first frame.
public struct PreparedClip: Sendable {
    public let id: String
    public let audio: ClipAudio
    public let words: [WordTiming]
}

/// The clips of a lesson that a chain can reach, decoded and with their timings checked
/// against their audio.
public struct ClipBank: Sendable {
    public let lesson: Lesson
    public let clips: [String: PreparedClip]

    /// Decodes every clip chain `chainID` can play (each file once) and reads its timings.
    public static func prepare(
        lesson: Lesson, chain chainID: String, decoder: some AudioDecoder
    ) throws(NarratorError) -> ClipBank {
        try prepare(lesson: lesson, clipIDs: lesson.clipIDs(reachableFrom: chainID), decoder: decoder)
    }

    public static func prepare(
        lesson: Lesson, clipIDs: [String], decoder: some AudioDecoder
    ) throws(NarratorError) -> ClipBank {
        let rate = lesson.sampleRate
        var buffers: [String: AudioBuffer] = [:]
        var timings: [String: [WordTiming]] = [:]
        var clips: [String: PreparedClip] = [:]
        for id in clipIDs {
            guard let spec = lesson.clips[id] else {
                throw NarratorError(file: lesson.path, place: "clips.\(id)", "unknown clip")
            }
            let buffer: AudioBuffer
            if let cached = buffers[spec.file] {
                buffer = cached
            } else {
                buffer = try decoder.decode(path: spec.file, sampleRate: rate)
                buffers[spec.file] = buffer
            }

            // The region, in frames of the decoded file at the lesson rate.
            var first = 0
            var last = buffer.frames
            if let start = spec.start {
                first = Frames.from(seconds: start, rate: rate) ?? Int.max
            }
            if let end = spec.end {
                last = Frames.from(seconds: end, rate: rate) ?? Int.max
                if last > buffer.frames {
                    throw NarratorError(
                        file: lesson.path, place: "clips.\(id).end",
                        "region ends at \(end) s, past the end of \(spec.file) (\(Frames.seconds(buffer.frames, rate: rate)) s)")
                }
            }
            if first >= last {
                throw NarratorError(
                    file: lesson.path, place: "clips.\(id).start",
                    "region starts at or after the end of its audio (\(Frames.seconds(buffer.frames, rate: rate)) s)")
            }

            var words: [WordTiming] = []
            if let timingPath = spec.timings {
                let fileWords: [WordTiming]
                if let cached = timings[timingPath] {
                    fileWords = cached
                } else {
                    fileWords = try WordTimings.load(path: timingPath, rate: rate)
                    timings[timingPath] = fileWords
                }
                if let late = fileWords.first(where: { $0.endFrame > buffer.frames }) {
                    throw NarratorError(
                        file: timingPath, place: "word \(late.index) '\(late.text)'",
                        "ends at \(Frames.seconds(late.endFrame, rate: rate)) s, past the end of its audio \(spec.file) (\(Frames.seconds(buffer.frames, rate: rate)) s)")
                }
                // Timings stay in the file's time: shift by the region start. Words outside the
                // region are dropped; a word the region cuts keeps its part inside.
                words = fileWords.compactMap { word in
                    let inside = word.startFrame == word.endFrame
                        ? word.startFrame >= first && word.startFrame < last
                        : word.startFrame < last && word.endFrame > first
                    guard inside else { return nil }
                    var shifted = word
                    shifted.startFrame = max(word.startFrame, first) - first
                    shifted.endFrame = min(word.endFrame, last) - first
                    return shifted
                }
            }
            clips[id] = PreparedClip(
                id: id, audio: ClipAudio(buffer: buffer, offset: first, frames: last - first), words: words)
        }
        return ClipBank(lesson: lesson, clips: clips)
    }
}
