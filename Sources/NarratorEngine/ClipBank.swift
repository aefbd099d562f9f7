/// Decoded audio at the lesson's rate: interleaved samples, shared by every clip cut from the
/// same file so that a file is decoded once however many regions and repeats play it.
///
/// The samples live in memory allocated once and never moved, so that the mixer can read them
/// through a plain pointer from the real-time thread.
public final class AudioBuffer: @unchecked Sendable {
    // Sendable: the storage is written only in `init` and read-only afterwards.
    public let channels: Int
    public let frames: Int
    /// `frames × channels` interleaved samples, full scale ±1.
    public let storage: UnsafeBufferPointer<Float>

    public init(channels: Int, samples: [Float]) {
        precondition(channels > 0 && samples.count % channels == 0)
        self.channels = channels
        self.frames = samples.count / channels
        let memory = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(samples.count, 1))
        _ = memory.initialize(from: samples)
        storage = UnsafeBufferPointer(rebasing: UnsafeBufferPointer(memory)[0..<samples.count])
    }

    deinit { storage.baseAddress.map { UnsafeMutablePointer(mutating: $0).deallocate() } }

    /// A copy of the samples.
    public var samples: [Float] { Array(storage) }
}

/// A file too long to hold in memory (a music bed): it is read while it plays, through a
/// fixed-size ring, by `NarratorAudioFile.StreamFeeder`.
public struct StreamedFile: Sendable, Hashable {
    public let path: String
    public let channels: Int
    /// Its length at the lesson rate.
    public let frames: Int
    /// A constant factor on every sample read (a lesson's loudness target); 1 leaves them be.
    public var gain: Float = 1

    public init(path: String, channels: Int, frames: Int, gain: Float = 1) {
        self.path = path
        self.channels = channels
        self.frames = frames
        self.gain = gain
    }
}

/// Where a clip's samples come from.
public enum ClipSource: Sendable {
    case memory(AudioBuffer)
    /// Boxed, so that a source (and every voice placed on a timeline) is one pointer wide: a
    /// schedule of a million voices takes 40 MB less.
    indirect case stream(StreamedFile)

    public var channels: Int {
        switch self {
        case .memory(let buffer): buffer.channels
        case .stream(let file): file.channels
        }
    }

    /// Length of the whole file at the lesson rate.
    public var frames: Int {
        switch self {
        case .memory(let buffer): buffer.frames
        case .stream(let file): file.frames
        }
    }
}

/// A clip's audio: a frame range of a shared buffer or of a streamed file.
public struct ClipAudio: Sendable {
    public let source: ClipSource
    public let offset: Int
    public let frames: Int
    public var channels: Int { source.channels }

    public init(source: ClipSource, offset: Int, frames: Int) {
        self.source = source
        self.offset = offset
        self.frames = frames
    }

    /// The same frames with every sample times `factor`: a buffer of its own for audio in
    /// memory, a gain on the read for a streamed file. Lengths, and so every frame of a
    /// schedule, stay as they were.
    public func scaled(by factor: Float) -> ClipAudio {
        switch source {
        case .memory(let buffer):
            let range = (offset * buffer.channels)..<((offset + frames) * buffer.channels)
            let samples = buffer.storage[range].map { $0 * factor }
            return ClipAudio(source: .memory(AudioBuffer(channels: buffer.channels, samples: samples)), offset: 0, frames: frames)
        case .stream(var file):
            file.gain *= factor
            return ClipAudio(source: .stream(file), offset: offset, frames: frames)
        }
    }
}

/// Turns an audio file into samples at a given rate. Implemented with libsndfile and a real
/// resampler in NarratorAudioFile; tests may supply their own.
public protocol AudioDecoder: Sendable {
    func decode(path: String, sampleRate: Int) throws(NarratorError) -> AudioBuffer
    /// The file's description if it is long enough to be streamed instead of decoded into
    /// memory; nil to decode it. Reads the header only.
    func streamedFile(path: String, sampleRate: Int) throws(NarratorError) -> StreamedFile?
    /// The file's cue markers, in frames at `sampleRate`, in the order the file lists them.
    func markers(path: String, sampleRate: Int) throws(NarratorError) -> [AudioMarker]
    /// This decoder, decoding every file whole (never as a `StreamedFile`): for what must loop
    /// and seek from memory, such as a music bed. A decoder that never streams is itself.
    var wholeFiles: Self { get }
    /// The words of the timing file at `path` (any format the build reads), in frames at
    /// `sampleRate`. Natively, every format `WordTimings.read` knows.
    func wordTimings(path: String, sampleRate: Int) throws(NarratorError) -> TimingImport
    /// The integrated loudness (LUFS, EBU R 128) of a clip's audio as it plays, at
    /// `sampleRate` in an output of `outputChannels`; nil when it has none (silent, or shorter
    /// than one 400 ms block). Asked only of clips whose bus has a loudness target.
    func integratedLoudness(of audio: ClipAudio, sampleRate: Int, outputChannels: Int) throws(NarratorError) -> Double?
}

extension AudioDecoder {
    public var wholeFiles: Self { self }
    public func streamedFile(path: String, sampleRate: Int) throws(NarratorError) -> StreamedFile? { nil }
    public func markers(path: String, sampleRate: Int) throws(NarratorError) -> [AudioMarker] { [] }
    public func integratedLoudness(of audio: ClipAudio, sampleRate: Int, outputChannels: Int) throws(NarratorError) -> Double? {
        let path: String
        switch audio.source {
        case .memory: path = "(audio in memory)"
        case .stream(let file): path = file.path
        }
        throw NarratorError(file: path, "this decoder cannot measure loudness (a lesson's \"loudness\" target needs it)")
    }
}

/// A clip ready to schedule: its audio and its words, in frames from the clip's first frame.
public struct PreparedClip: Sendable {
    public let id: String
    public let audio: ClipAudio
    public let words: [WordTiming]
    /// The sentences of `words` (from the timing file's grouping or the words' punctuation),
    /// cut by the region as its words are.
    public var sentences: [SentenceTiming] = []
    /// Pulses from the file's cue markers (`"markers": "pulses"`), in frames from the clip's
    /// first frame.
    public var pulses: [AudioMarker] = []
    /// The gain in dB its audio got at load to reach its bus's loudness target (0 without one,
    /// or when the clip is silent or too short to measure), and its loudness before (LUFS).
    public var loudnessGain: Double = 0
    public var measuredLoudness: Double? = nil
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
        var sources = NameTable<ClipSource>()
        var timings = NameTable<(words: [WordTiming], sentences: [SentenceTiming])>()
        var markers = NameTable<[AudioMarker]>()
        var clips: [String: PreparedClip] = [:]
        for id in clipIDs {
            guard let spec = lesson.clips[id] else {
                throw NarratorError(file: lesson.path, place: "clips.\(id)", "unknown clip")
            }
            let source: ClipSource
            if let cached = sources[spec.file] {
                source = cached
            } else {
                do throws(NarratorError) {
                    if let streamed = try decoder.streamedFile(path: spec.file, sampleRate: rate) {
                        source = .stream(streamed)
                    } else {
                        source = .memory(try decoder.decode(path: spec.file, sampleRate: rate))
                    }
                } catch {
                    throw naming(error, spec: spec, file: spec.file, key: "")
                }
                sources[spec.file] = source
            }

            // The region, in frames of the decoded file at the lesson rate.
            var first = 0
            var last = source.frames
            if let start = spec.start {
                first = Frames.from(seconds: start, rate: rate) ?? Int.max
            }
            if let end = spec.end {
                last = Frames.from(seconds: end, rate: rate) ?? Int.max
                if last > source.frames {
                    let (file, place) = spec.regionPlace(lesson: lesson.path, key: "end")
                    throw NarratorError(
                        file: file, place: place,
                        "region ends at \(Frames.describe(seconds: end)), past the end of \(spec.file) (\(Frames.describe(source.frames, rate: rate)))")
                }
            }
            if first >= last {
                let (file, place) = spec.regionPlace(lesson: lesson.path, key: "start")
                throw NarratorError(
                    file: file, place: place,
                    "region starts at or after the end of its audio (\(Frames.describe(source.frames, rate: rate)))")
            }

            var fileMarkers: [AudioMarker] = []
            if spec.markers != nil {
                if let cached = markers[spec.file] {
                    fileMarkers = cached
                } else {
                    fileMarkers = try decoder.markers(path: spec.file, sampleRate: rate)
                    markers[spec.file] = fileMarkers
                }
                if let late = fileMarkers.first(where: { $0.frame > source.frames }) {
                    throw NarratorError(
                        file: spec.file, place: "marker '\(late.label)'",
                        "at \(Frames.describe(late.frame, rate: rate)), past the end of the audio (\(Frames.describe(source.frames, rate: rate)))")
                }
            }

            var fileWords: [WordTiming] = []
            var fileSentences: [SentenceTiming] = []
            if let timingPath = spec.timings {
                if let cached = timings[timingPath] {
                    (fileWords, fileSentences) = cached
                } else {
                    let imported: TimingImport
                    do throws(NarratorError) {
                        imported = try decoder.wordTimings(path: timingPath, sampleRate: rate)
                    } catch {
                        throw naming(error, spec: spec, file: timingPath, key: ".timings")
                    }
                    (fileWords, fileSentences) = (imported.words, imported.sentences)
                    timings[timingPath] = (fileWords, fileSentences)
                }
                if let late = fileWords.first(where: { $0.endFrame > source.frames }) {
                    throw NarratorError(
                        file: timingPath, place: "word \(late.index) '\(late.text)'",
                        "ends at \(Frames.describe(late.endFrame, rate: rate)), past the end of its audio \(spec.file) (\(Frames.describe(source.frames, rate: rate)))"
                            + WordTimings.millisecondsHint(fileWords, audioFrames: source.frames, rate: rate))
                }
            } else if spec.markers == .words {
                fileWords = try WordTimings.fromMarkers(fileMarkers, audioFrames: source.frames, path: spec.file)
                fileSentences = Sentences.group(fileWords)
            }
            // Timings stay in the file's time: shift by the region start. Words outside the
            // region are dropped; a word the region cuts keeps its part inside.
            let words = fileWords.compactMap { word -> WordTiming? in
                let inside = word.startFrame == word.endFrame
                    ? word.startFrame >= first && word.startFrame < last
                    : word.startFrame < last && word.endFrame > first
                guard inside else { return nil }
                var shifted = word
                shifted.startFrame = max(word.startFrame, first) - first
                shifted.endFrame = min(word.endFrame, last) - first
                return shifted
            }
            let pulses = spec.markers == .pulses
                ? stablySorted(
                    fileMarkers.filter { !$0.label.isEmpty && $0.frame >= first && $0.frame < last }
                        .map { AudioMarker(label: $0.label, frame: $0.frame - first) }
                ) { $0.frame < $1.frame }
                : []
            clips[id] = PreparedClip(
                id: id, audio: ClipAudio(source: source, offset: first, frames: last - first), words: words,
                sentences: Sentences.clip(fileSentences, to: words), pulses: pulses)
        }
        if !lesson.loudness.isEmpty {
            try level(&clips, lesson: lesson, clipIDs: clipIDs, decoder: decoder)
        }
        return ClipBank(lesson: lesson, clips: clips)
    }

    /// An error about a whole file of clip `spec` (its audio, or its timings: `key`) with the
    /// clip's key added, as `narrator validate` says it: "a.wav: no such file (clips.a)". An
    /// error with a place in the file already says where.
    private static func naming(_ error: NarratorError, spec: Lesson.ClipSpec, file: String, key: String) -> NarratorError {
        guard error.file == file, error.place == nil else { return error }
        var named = error
        named.message += spec.spriteMap == nil ? " (\(spec.key)\(key))" : " (clip \(spec.id), from its sprite map)"
        return named
    }

    /// Brings each clip on a bus with a loudness target to it: measured once as it plays (in
    /// the output's channels: the lesson's, or the widest of its clips, as a schedule lays
    /// them out), then every sample times one constant factor. A clip with no loudness
    /// (silent, or under 400 ms) is left as it is. Lengths do not change, so neither do cues.
    private static func level(
        _ clips: inout [String: PreparedClip], lesson: Lesson, clipIDs: [String], decoder: some AudioDecoder
    ) throws(NarratorError) {
        let outputChannels = lesson.channels ?? clips.values.map { $0.audio.channels }.max() ?? 1
        // By file, region and target: a clip many chains share is measured and copied once.
        var leveled = NameTable<(audio: ClipAudio, measured: Double?, gain: Double)>()
        for id in clipIDs {
            guard var clip = clips[id], let spec = lesson.clips[id], let target = lesson.loudness[lesson.loudnessBus(of: id)] else { continue }
            let key = "\(target) \(clip.audio.offset) \(clip.audio.frames) \(spec.file)"
            let done: (audio: ClipAudio, measured: Double?, gain: Double)
            if let cached = leveled[key] {
                done = cached
            } else {
                let measured = try decoder.integratedLoudness(of: clip.audio, sampleRate: lesson.sampleRate, outputChannels: outputChannels)
                if let measured {
                    let gain = target - measured
                    done = (clip.audio.scaled(by: Float(Decibels.factor(gain))), measured, gain)
                } else {
                    done = (clip.audio, nil, 0)
                }
                leveled[key] = done
            }
            clip = PreparedClip(
                id: clip.id, audio: done.audio, words: clip.words, sentences: clip.sentences, pulses: clip.pulses,
                loudnessGain: done.gain, measuredLoudness: done.measured)
            clips[id] = clip
        }
    }
}
