import NarratorCore

/// An audio file read through once, for checking rather than playing: its format, its real
/// length, and its level per block of frames (peak, and samples at full scale), so that any
/// region of it can be judged silent or clipped without holding its samples.
public struct AudioScan: Sendable {
    public let path: String
    public let format: String
    public let sampleRate: Int
    public let channels: Int
    /// What the file really holds, not what its header says.
    public let frames: Int
    /// The labelled and unlabelled cue markers, in the file's frames, or why they cannot be
    /// read (the audio still can).
    public let markers: Result<[AudioMarker], NarratorError>
    /// An MP3 without a Xing/Info or VBRI header: no gapless information, so its length
    /// includes its encoder's delay and padding (silence before and after the sound).
    public let lacksGaplessInfo: Bool
    /// Frames per level block.
    public static let blockFrames = 1024
    /// Per block: the largest magnitude of any sample in it.
    public let blockPeaks: [Float]
    /// Per block: runs of `clipRun` or more consecutive samples of a channel at full scale
    /// (|x| ≥ `fullScale`) that end in it: the flat tops of a clipped waveform.
    public let blockClips: [Int]

    /// A sample this close to ±1 counts as full scale (16-bit: 32735 of 32767).
    public static let fullScale: Float = 0.999
    /// Consecutive full-scale samples that make a clip: three, as Audacity's "Find Clipping"
    /// starts from.
    public static let clipRun = 3

    /// Reads the whole file (up to a day at its rate: the scan holds no samples, and the player
    /// streams long files).
    public init(path: String) throws(NarratorError) {
        let file = try SoundFileReader(path: path)
        let channels = file.channels
        var peaks: [Float] = []
        var clips: [Int] = []
        var run = [Int](repeating: 0, count: channels)
        var blockPeak: Float = 0
        var blockClip = 0
        var inBlock = 0
        var frames = 0
        try file.readChunks(maxFrames: 86400 * file.sampleRate) { chunk in
            var index = 0
            while index < chunk.count {
                for c in 0..<channels {
                    let magnitude = abs(chunk[index + c])
                    blockPeak = max(blockPeak, magnitude)
                    if magnitude >= Self.fullScale {
                        run[c] += 1
                        if run[c] == Self.clipRun { blockClip += 1 }
                    } else {
                        run[c] = 0
                    }
                }
                index += channels
                frames += 1
                inBlock += 1
                if inBlock == Self.blockFrames {
                    peaks.append(blockPeak)
                    clips.append(blockClip)
                    blockPeak = 0
                    blockClip = 0
                    inBlock = 0
                }
            }
        }
        if inBlock > 0 {
            peaks.append(blockPeak)
            clips.append(blockClip)
        }
        self.path = path
        format = file.formatDescription
        sampleRate = file.sampleRate
        self.channels = channels
        self.frames = frames
        lacksGaplessInfo = file.container.mp3GaplessInfo == false
        markers = Result { () throws(NarratorError) in try file.cuePoints() }
        blockPeaks = peaks
        blockClips = clips
    }

    /// The peak and the clipped runs of the frames `range` (in the file's frames), to the block.
    public func level(of range: Range<Int>) -> (peak: Float, clips: Int) {
        guard !blockPeaks.isEmpty, !range.isEmpty else { return (0, 0) }
        let first = max(0, range.lowerBound / Self.blockFrames)
        let last = min(blockPeaks.count - 1, (range.upperBound - 1) / Self.blockFrames)
        guard first <= last else { return (0, 0) }
        return (blockPeaks[first...last].max() ?? 0, blockClips[first...last].reduce(0, +))
    }
}

extension AudioScan {
    /// The frames `region` (in the file's own frames) of the audio file at `path`, interleaved,
    /// at the file's own rate, for the checks that look at the samples themselves (a clip's
    /// word timings against its sound). At most `maxFrames` are read.
    public static func samples(path: String, region: Range<Int>, maxFrames: Int) throws(NarratorError) -> (samples: [Float], channels: Int) {
        let file = try SoundFileReader(path: path)
        guard region.lowerBound >= 0, file.seek(toFrame: region.lowerBound) else {
            throw NarratorError(file: path, "cannot seek to frame \(region.lowerBound)")
        }
        let wanted = min(region.count, maxFrames)
        var samples = [Float](repeating: 0, count: wanted * file.channels)
        var done = 0
        while done < wanted {
            let got = samples.withUnsafeMutableBufferPointer { buffer in
                file.read(into: buffer.baseAddress! + done * file.channels, frames: wanted - done)
            }
            if got == 0 { break }
            done += got
        }
        samples.removeLast((wanted - done) * file.channels)
        return (samples, file.channels)
    }
}
