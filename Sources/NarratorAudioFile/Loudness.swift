import CEbur128
import Foundation
import NarratorCore

/// The EBU R 128 figures of some audio (ITU-R BS.1770-4, measured by libebur128): integrated
/// loudness, loudness range and true peak. docs/loudness.md says what they mean for a clip.
public struct Loudness: Sendable, Equatable {
    /// Integrated loudness in LUFS; nil when no 400 ms block passes the gates: digital
    /// silence, audio under −70 LUFS throughout, or audio shorter than one block.
    public let integrated: Double?
    /// Loudness range in LU; nil when it was not asked for, when the audio is shorter than
    /// one 3 s short-term block, or when it has no integrated loudness.
    public let range: Double?
    /// True peak in dBTP (libebur128 oversamples 4× at 48 kHz and below); nil when it was not
    /// asked for, −infinity for digital silence.
    public let truePeak: Double?
    /// How much audio was measured, in frames at `sampleRate`.
    public let frames: Int
    public let sampleRate: Int

    /// What to measure: integrated loudness always; the range and the true peak cost more.
    public struct Measures: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let range = Measures(rawValue: 1)
        public static let truePeak = Measures(rawValue: 2)
        public static let all: Measures = [.range, .truePeak]
    }

    /// Shortest audio with an integrated loudness: one gating block, 400 ms.
    public static let blockSeconds = 0.4
    /// Shortest audio with a loudness range: one short-term block, 3 s.
    public static let shortTermSeconds = 3.0

    /// Measures interleaved samples (full scale ±1). With `outputChannels`, as they play in an
    /// output of that many channels (the mixer's rule: mono on every channel, many channels
    /// into one as their average, otherwise channel by channel, extra ones dropped). `file`
    /// names them in errors.
    public static func measure(
        _ samples: UnsafeBufferPointer<Float>, channels: Int, sampleRate: Int, measures: Measures = [],
        outputChannels: Int? = nil, file: String
    ) throws(NarratorError) -> Loudness {
        let meter = try Meter(
            channels: channels, outputChannels: outputChannels ?? channels, sampleRate: sampleRate, measures: measures, file: file)
        try meter.add(samples)
        return try meter.result()
    }

    /// Measures the audio file at `path`, or the frames `region` of it (in the file's own
    /// frames), as libsndfile decodes it, at the file's own rate; with `outputChannels`, as it
    /// plays in an output of that many channels.
    public static func measure(
        path: String, region: Range<Int>? = nil, measures: Measures = [], outputChannels: Int? = nil
    ) throws(NarratorError) -> Loudness {
        let file = try SoundFileReader(path: path)
        let meter = try Meter(
            channels: file.channels, outputChannels: outputChannels ?? file.channels, sampleRate: file.sampleRate,
            measures: measures, file: path)
        if let region {
            guard region.lowerBound >= 0, file.seek(toFrame: region.lowerBound) else {
                throw NarratorError(file: path, "cannot seek to frame \(region.lowerBound)")
            }
            let chunkFrames = 65536
            var chunk = [Float](repeating: 0, count: chunkFrames * file.channels)
            var remaining = region.count
            while remaining > 0 {
                let got = chunk.withUnsafeMutableBufferPointer { file.read(into: $0.baseAddress!, frames: min(remaining, chunkFrames)) }
                if got == 0 { break }
                try chunk.withUnsafeBufferPointer { buffer throws(NarratorError) in
                    try meter.add(UnsafeBufferPointer(rebasing: buffer[0..<(got * file.channels)]))
                }
                remaining -= got
            }
        } else {
            var failure: NarratorError?
            try file.readChunks(maxFrames: 86400 * file.sampleRate) { chunk in
                guard failure == nil else { return }
                do throws(NarratorError) { try meter.add(chunk) } catch { failure = error }
            }
            if let failure { throw failure }
        }
        return try meter.result()
    }

    /// The gain, in dB, that brings this audio to `target` LUFS; 0 when it has no loudness
    /// (silent, or too short to measure): such a clip is left as it is.
    public func gain(toReach target: Double) -> Double {
        guard let integrated else { return 0 }
        return target - integrated
    }

    // MARK: - Words

    /// "-23.41 LUFS", or why there is none.
    public var integratedText: String {
        if let integrated { return String(format: "%.2f LUFS", integrated) }
        if Double(frames) < Self.blockSeconds * Double(sampleRate) {
            return "n/a (shorter than one 400 ms block)"
        }
        return "-inf LUFS (silent: no block above the -70 LUFS gate)"
    }

    /// "5.20 LU", or why there is none.
    public var rangeText: String {
        if Double(frames) < Self.shortTermSeconds * Double(sampleRate) { return "n/a (shorter than one 3 s block)" }
        guard let range else { return "n/a (silent)" }
        return String(format: "%.2f LU", range)
    }

    /// "-1.02 dBTP", "-inf dBTP" for digital silence.
    public var truePeakText: String {
        guard let truePeak else { return "n/a" }
        return truePeak.isFinite ? String(format: "%.2f dBTP", truePeak) : "-inf dBTP (digital silence)"
    }

    /// A level in dB as a person reads it: "-3.2", "+6.0".
    public static func decibels(_ value: Double) -> String { String(format: "%+.1f", value) }
}

/// One libebur128 state: audio in, figures out. The one place libebur128's errors become
/// `NarratorError`s.
private final class Meter {
    private var state: UnsafeMutablePointer<ebur128_state>?
    /// The audio's channels, and the output's (what is measured).
    private let sourceChannels: Int
    private let channels: Int
    /// The audio laid out on the output's channels, when they differ.
    private var scratch: [Float] = []
    private let sampleRate: Int
    private let measures: Loudness.Measures
    private let file: String
    private var frames = 0

    init(channels sourceChannels: Int, outputChannels channels: Int, sampleRate: Int, measures: Loudness.Measures, file: String) throws(NarratorError) {
        self.sourceChannels = sourceChannels
        self.channels = channels
        self.sampleRate = sampleRate
        self.measures = measures
        self.file = file
        var mode = EBUR128_MODE_I.rawValue
        if measures.contains(.range) { mode |= EBUR128_MODE_LRA.rawValue }
        if measures.contains(.truePeak) { mode |= EBUR128_MODE_TRUE_PEAK.rawValue }
        // libebur128 takes 1…64 channels at 16 Hz…2.8224 MHz; it returns nil outside, or when
        // memory runs out.
        guard (1...64).contains(channels), (1...64).contains(sourceChannels), (16...2_822_400).contains(sampleRate),
            let state = ebur128_init(UInt32(channels), UInt(sampleRate), Int32(bitPattern: mode))
        else {
            throw NarratorError(
                file: file, "cannot measure loudness of \(channels) channels at \(sampleRate) Hz (libebur128: out of memory or unsupported)")
        }
        self.state = state
    }

    deinit {
        // A refused init leaves no state, and libebur128 does not take a null one.
        if state != nil { ebur128_destroy(&state) }
    }

    func add(_ samples: UnsafeBufferPointer<Float>) throws(NarratorError) {
        guard let base = samples.baseAddress, samples.count >= sourceChannels else { return }
        let count = samples.count / sourceChannels
        if sourceChannels == channels {
            try check(ebur128_add_frames_float(state, base, count), "adding audio")
        } else {
            // The mixer's layout (Mixer.mix): mono on every channel; into one, the average;
            // otherwise channel c on output c, extra source channels dropped, outputs past the
            // source's silent.
            scratch.removeAll(keepingCapacity: true)
            scratch.reserveCapacity(count * channels)
            for frame in 0..<count {
                let first = frame * sourceChannels
                if sourceChannels == 1 {
                    for _ in 0..<channels { scratch.append(samples[first]) }
                } else if channels == 1 {
                    var sum: Float = 0
                    for c in 0..<sourceChannels { sum += samples[first + c] }
                    scratch.append(sum / Float(sourceChannels))
                } else {
                    for c in 0..<channels { scratch.append(c < sourceChannels ? samples[first + c] : 0) }
                }
            }
            try scratch.withUnsafeBufferPointer { laid throws(NarratorError) in
                try check(ebur128_add_frames_float(state, laid.baseAddress!, count), "adding audio")
            }
        }
        frames += count
    }

    func result() throws(NarratorError) -> Loudness {
        var integrated = 0.0
        try check(ebur128_loudness_global(state, &integrated), "integrated loudness")
        var range: Double?
        if measures.contains(.range) {
            var value = 0.0
            try check(ebur128_loudness_range(state, &value), "loudness range")
            let long = Double(frames) >= Loudness.shortTermSeconds * Double(sampleRate)
            range = long && integrated.isFinite ? value : nil
        }
        var truePeak: Double?
        if measures.contains(.truePeak) {
            var peak = 0.0
            for channel in 0..<channels {
                var value = 0.0
                try check(ebur128_true_peak(state, UInt32(channel), &value), "true peak")
                peak = max(peak, value)
            }
            truePeak = peak > 0 ? 20 * log10(peak) : -.infinity
        }
        return Loudness(
            integrated: integrated.isFinite ? integrated : nil, range: range, truePeak: truePeak, frames: frames,
            sampleRate: sampleRate)
    }

    /// libebur128's return codes, in words.
    private func check(_ code: Int32, _ what: String) throws(NarratorError) {
        guard code != Int32(EBUR128_SUCCESS.rawValue) else { return }
        let reason: String
        switch UInt32(bitPattern: code) {
        case EBUR128_ERROR_NOMEM.rawValue: reason = "out of memory"
        case EBUR128_ERROR_INVALID_MODE.rawValue: reason = "not measured in this mode"
        case EBUR128_ERROR_INVALID_CHANNEL_INDEX.rawValue: reason = "no such channel"
        case EBUR128_ERROR_NO_CHANGE.rawValue: reason = "no change"
        default: reason = "error \(code)"
        }
        throw NarratorError(file: file, "cannot measure loudness: \(what) failed (libebur128: \(reason))")
    }
}
