import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What the pipe sink played, and when each frame was heard.
///
/// Made by ``PulseTestServer/recording(settle:)`` from `rec.raw` and `rec.times.tsv`, or from
/// memory (for tests of the analysis itself). The clock is fitted at construction: see
/// ``AudibleClock`` for the model.
public struct Recording: Sendable {
    /// One read of the FIFO by the recorder: all bytes read so far, and the CLOCK_MONOTONIC time
    /// just after that read returned.
    public struct Read: Sendable, Equatable {
        /// Bytes read so far, this read included.
        public var bytes: Int
        /// CLOCK_MONOTONIC nanoseconds just after the read returned.
        public var nanoseconds: UInt64
        /// Memberwise.
        public init(bytes: Int, nanoseconds: UInt64) {
            self.bytes = bytes
            self.nanoseconds = nanoseconds
        }
    }

    /// Sample rate.
    public let rate: Int
    /// Channel count.
    public let channels: Int
    /// Interleaved s16 samples, whole frames only.
    public let samples: [Int16]
    /// The recorder's reads, in order.
    public let reads: [Read]
    /// The fitted audible clock.
    public let clock: AudibleClock

    /// Frames recorded.
    public var frames: Int { samples.count / channels }
    /// Bytes per frame in the FIFO (s16).
    public var bytesPerFrame: Int { channels * 2 }

    /// A recording from memory.
    ///
    /// - Parameters:
    ///   - samples: interleaved; a trailing partial frame is dropped.
    ///   - reads: `bytes` strictly increasing, `nanoseconds` never decreasing. At least a few
    ///     reads are needed to fit the clock.
    /// - Throws: ``PulseTestServerError`` when the reads are out of order or too few to fit.
    public init(rate: Int, channels: Int, samples: [Int16], reads: [Read]) throws {
        precondition(rate > 0 && channels > 0, "rate and channels must be positive")
        self.rate = rate
        self.channels = channels
        self.samples = samples.count % channels == 0 ? samples : Array(samples.prefix(samples.count - samples.count % channels))
        for i in reads.indices.dropFirst()
        where reads[i].bytes <= reads[i - 1].bytes || reads[i].nanoseconds < reads[i - 1].nanoseconds {
            throw PulseTestServerError(
                "read \(i) (\(reads[i].bytes) bytes at \(reads[i].nanoseconds) ns) does not follow read \(i - 1) "
                    + "(\(reads[i - 1].bytes) bytes at \(reads[i - 1].nanoseconds) ns)")
        }
        self.reads = reads
        clock = try AudibleClock(reads: reads, bytesPerFrame: channels * 2, rate: rate)
    }

    /// A recording from the recorder's files. Bytes past the last complete line of the times
    /// file are kept as samples (the recorder writes them before their line); a partial last
    /// line is ignored.
    public init(rawFile: String, timesFile: String, rate: Int, channels: Int) throws {
        guard let raw = FileManager.default.contents(atPath: rawFile) else {
            throw PulseTestServerError("cannot read \(rawFile)")
        }
        guard let timesData = FileManager.default.contents(atPath: timesFile) else {
            throw PulseTestServerError("cannot read \(timesFile)")
        }
        let sampleCount = raw.count / 2
        // One copy (minutes of audio are tens of millions of samples), then from little-endian.
        var samples = [Int16](unsafeUninitializedCapacity: sampleCount) { buffer, initialized in
            _ = raw.copyBytes(to: UnsafeMutableRawBufferPointer(buffer), count: sampleCount * 2)
            initialized = sampleCount
        }
        if 1.littleEndian != 1 {
            for i in samples.indices { samples[i] = Int16(littleEndian: samples[i]) }
        }
        var reads: [Read] = []
        let text = String(decoding: timesData, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()  // after the last "\n": empty, or a line still being written
        for (number, line) in lines.enumerated() {
            let fields = line.split(separator: "\t")
            guard fields.count == 2, let bytes = Int(fields[0]), let ns = UInt64(fields[1]) else {
                throw PulseTestServerError("\(timesFile): line \(number + 1): expected bytes<TAB>nanoseconds, got '\(line)'")
            }
            guard bytes <= raw.count else { break }
            reads.append(Read(bytes: bytes, nanoseconds: ns))
        }
        try self.init(rate: rate, channels: channels, samples: samples, reads: reads)
    }

    /// The CLOCK_MONOTONIC time, in nanoseconds, at which recording frame `k` was heard (see
    /// ``AudibleClock``). `k` may lie outside the recording: the clock is a line.
    public func audibleTime(ofFrame k: Int) -> UInt64 {
        UInt64(max(0, clock.nanoseconds(atFrame: Double(k)).rounded()))
    }

    /// The recording frame (fractional) heard at CLOCK_MONOTONIC time `nanoseconds`: the
    /// inverse of ``audibleTime(ofFrame:)``.
    public func frame(audibleAt nanoseconds: UInt64) -> Double {
        clock.frame(atNanoseconds: Double(nanoseconds))
    }

    /// Finds `reference` (the offline render of what was played, interleaved s16 with
    /// `channels` channels, which must be the recording's) in the recording. See ``Alignment``.
    ///
    /// - Returns: nil when the reference is empty or all digital silence, or when its first
    ///   sound (64 frames from its first non-zero frame) does not occur in the recording.
    public func locate(_ reference: [Int16], channels: Int) -> Alignment? {
        precondition(channels == self.channels, "the reference has \(channels) channels, the recording \(self.channels)")
        let whole = reference.count - reference.count % channels
        return reference.withUnsafeBufferPointer { ref in
            samples.withUnsafeBufferPointer { rec in
                Aligner(ref: UnsafeBufferPointer(rebasing: ref[0..<whole]), rec: rec, channels: channels).align()
            }
        }
    }
}
