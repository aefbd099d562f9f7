import Foundation
import NarratorAudioFile
import NarratorCore

/// The recording `align` works on, read from its file a chunk at a time so that memory stays
/// flat with its length (issue 29, point 4; docs/align.md § Long recordings).
///
/// For PocketSphinx one pass decodes the file at `rate` and at 16 kHz together: the 16 kHz
/// samples go to a raw 16-bit file PocketSphinx reads, the `rate` samples into the
/// refinement's 1 ms energies (all the sentence anchors need of the whole recording), and are
/// held only while the recording is short enough to be one piece. A longer recording is read
/// again, a piece at a time, when its pieces are refined (`pieces`): only the piece being
/// refined is in memory. The samples are those `SndFileDecoder.decode` gives, so the
/// boundaries are the same as with the whole recording in memory. Every other path (aeneas:
/// other languages, and where PocketSphinx fails) takes the whole recording (`whole`).
final class AlignRecording {
    let path: String
    let rate: Int
    private(set) var channels = 1
    /// Its length at `rate`.
    private(set) var frames = 0
    /// Its length at 16 kHz, in `pocketSphinxAudio`.
    private(set) var frames16k = 0
    /// The raw 16-bit little-endian mono file at 16 kHz for PocketSphinx (nil: not made).
    private(set) var pocketSphinxAudio: String?
    /// The refinement's envelope over the whole recording at `rate` (nil: not made, or taken).
    private var envelope: BoundaryRefinement.Envelope?
    /// The whole recording at `rate`, when held.
    private var held: AudioBuffer?
    private var scratch: URL?

    /// Reads `path` at `rate`: whole (for aeneas) or, `forPocketSphinx`, in one streaming pass
    /// that writes the 16 kHz file into a scratch folder, builds the envelope and holds the
    /// samples only when the recording lasts at most `holdSeconds`.
    init(path: String, rate: Int, forPocketSphinx: Bool, holdSeconds: Int, timing: inout PocketSphinx.Timing) throws(NarratorError) {
        self.path = path
        self.rate = rate
        let began = Date()
        defer { timing.decode += Date().timeIntervalSince(began) }
        guard forPocketSphinx else {
            let buffer = try SndFileDecoder().decode(path: path, sampleRate: rate)
            held = buffer
            channels = buffer.channels
            frames = buffer.frames
            return
        }
        let scratch = try Scratch.make("narrator-pocketsphinx")
        self.scratch = scratch
        let raw = scratch.appendingPathComponent("audio16k.raw").path
        guard FileManager.default.createFile(atPath: raw, contents: nil), let file = FileHandle(forWritingAtPath: raw) else {
            throw NarratorError(file: raw, "cannot write the audio for PocketSphinx")
        }
        defer { try? file.close() }
        var blocks: BoundaryRefinement.Envelope.Blocks? = nil
        var holding: [Float]? = []
        var bytes = Data()
        var expected = 0
        let (channels, frames) = try SndFileDecoder().stream(path: path, sampleRates: [rate, 16000]) { channels, announced in
            self.channels = channels
            expected = announced
        } _: { index, samples throws(NarratorError) in
            let channels = self.channels
            if index == 0 {
                if blocks == nil { blocks = .init(channels: channels, rate: rate, expectedFrames: expected) }
                blocks?.add(samples)
                if holding != nil {
                    if (holding?.count ?? 0) + samples.count <= holdSeconds * rate * channels {
                        holding?.append(contentsOf: samples)
                    } else {
                        holding = nil
                    }
                }
                return
            }
            // Channels averaged, as 16-bit samples: what PocketSphinx decodes.
            let count = samples.count / channels
            bytes.count = count * 2
            bytes.withUnsafeMutableBytes { (pointer: UnsafeMutableRawBufferPointer) in
                for frame in 0..<count {
                    var sum: Float = 0
                    for channel in 0..<channels { sum += samples[frame * channels + channel] }
                    let value = Int16(max(-32768, min(32767, (sum / Float(channels) * 32768).rounded())))
                    pointer.storeBytes(of: value.littleEndian, toByteOffset: frame * 2, as: Int16.self)
                }
            }
            do {
                try file.write(contentsOf: bytes)
            } catch {
                throw NarratorError(file: raw, "cannot write the audio for PocketSphinx: \(error.localizedDescription)")
            }
        }
        do {
            try file.close()
        } catch {
            throw NarratorError(file: raw, "cannot write the audio for PocketSphinx: \(error.localizedDescription)")
        }
        self.channels = channels
        self.frames = frames[0]
        frames16k = frames[1]
        pocketSphinxAudio = raw
        if let samples = holding { held = AudioBuffer(channels: channels, samples: samples) }
        // Only a recording longer than one piece is anchored.
        if frames[0] > PocketSphinx.wholeSeconds * rate, let whole = blocks {
            blocks = nil
            envelope = BoundaryRefinement.Envelope(whole)
        }
    }

    /// The envelope over the whole recording (for the anchors), let go of here: the pieces'
    /// refinement does not need it.
    func takeEnvelope() -> BoundaryRefinement.Envelope? {
        defer { envelope = nil }
        return envelope
    }

    deinit {
        if let scratch { try? FileManager.default.removeItem(at: scratch) }
    }

    /// The whole recording at `rate` (decoded again unless held: the paths that need it are
    /// aeneas's, which holds its own copy too).
    func whole(timing: inout PocketSphinx.Timing) throws(NarratorError) -> AudioBuffer {
        if let held { return held }
        let began = Date()
        defer { timing.decode += Date().timeIntervalSince(began) }
        return try SndFileDecoder().decode(path: path, sampleRate: rate)
    }

    /// Hands `body` the samples at `rate` of each of `ranges` (frames, in order, not
    /// overlapping), one at a time: from the held recording, or decoded again, only the piece
    /// at hand in memory. The time spent decoding (not in `body`) is added to `timing.decode`.
    func pieces(
        _ ranges: [Range<Int>], timing: inout PocketSphinx.Timing, _ body: (Int, UnsafeBufferPointer<Float>) throws(NarratorError) -> Void
    ) throws(NarratorError) {
        if let held {
            for (index, range) in ranges.enumerated() {
                let clipped = min(range.lowerBound, held.frames)..<min(range.upperBound, held.frames)
                try body(index, UnsafeBufferPointer(rebasing: held.storage[(clipped.lowerBound * channels)..<(clipped.upperBound * channels)]))
            }
            return
        }
        let began = Date()
        var inBody = 0.0
        var next = 0
        var position = 0
        var piece: [Float] = []
        let channels = self.channels
        func deliver() throws(NarratorError) {
            // Read again, the file must hold what it held the first time.
            guard piece.count == ranges[next].count * channels else {
                throw NarratorError(
                    file: path, "changed while it was being aligned: read again, it ends before frame \(ranges[next].upperBound) at \(rate) Hz")
            }
            let start = Date()
            defer { inBody += Date().timeIntervalSince(start) }
            try piece.withUnsafeBufferPointer { samples throws(NarratorError) in try body(next, samples) }
            piece.removeAll(keepingCapacity: true)
            next += 1
        }
        _ = try SndFileDecoder().stream(path: path, sampleRates: [rate]) { _, _ in
        } _: { _, samples throws(NarratorError) in
            let count = samples.count / channels
            while next < ranges.count {
                let range = ranges[next]
                let from = max(range.lowerBound, position), to = min(range.upperBound, position + count)
                if from < to { piece.append(contentsOf: samples[((from - position) * channels)..<((to - position) * channels)]) }
                guard range.upperBound <= position + count else { break }
                try deliver()
            }
            position += count
        }
        // A piece reaching past the end: the file changed since the first pass (an error).
        while next < ranges.count { try deliver() }
        timing.decode += Date().timeIntervalSince(began) - inBody
    }
}
