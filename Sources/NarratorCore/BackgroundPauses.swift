import CKissFFT
import Foundation

extension BoundaryRefinement {
    /// Pauses under a steady background (a music bed, a hum): where nothing sounds but what
    /// sounded in the same frequencies within `floorSpan`.
    ///
    /// A word's soft onset or tail can be as loud as a bed 20 dB under the voice, so the level
    /// alone cannot tell them apart (docs/align.md § 3); their spectra differ. Each 2 ms a 16 ms
    /// Hann window's power spectrum (60 Hz – 8 kHz, smoothed over 10 ms) is compared bin by bin
    /// with each bin's least power within 300 ms around it: the background's, since it sounds
    /// all the time. A frame is quiet when fewer than `quietShare` of its bins rise `binRise` dB
    /// over their background; a run of quiet frames, widened by `edgeWiden` on each side (the
    /// window's and the smoothing's half lengths), is a pause candidate.
    public enum BackgroundPauses {
        /// The rules, in ms and shares (measured in docs/align.md § 3).
        public static let window = 16.0
        public static let hop = 2.0
        public static let band = 60.0...8000.0
        public static let smoothing = 5
        public static let floorSpan = 300.0
        public static let binRise = 10.0
        public static let quietShare = 0.30
        public static let minimumRun = 10.0
        public static let edgeWiden = 11.0
        /// A run whose frames hold on average less than this share of risen bins is the
        /// background alone (a closure keeps a voice bar or a room's reverberation: 15–27 % of
        /// risen bins, 21 % at the median, in the real-speech set).
        public static let pureShare = 0.15

        /// A run of quiet frames: its first and end block (blocks of `block` frames) and the
        /// mean share of risen bins over it.
        public struct Run: Sendable, Equatable {
            public var start: Int
            public var end: Int
            public var share: Double
        }

        /// The runs in `samples` (interleaved, `channels`, at `rate`), in blocks of `block`
        /// frames. Empty when the clip is shorter than one window.
        public static func runs(samples: UnsafeBufferPointer<Float>, channels: Int, rate: Int, block: Int) -> [Run] {
            let frames = samples.count / max(1, channels)
            let length = max(8, Int((window * Double(rate) / 1000).rounded()))
            let step = max(1, Int((hop * Double(rate) / 1000).rounded()))
            guard frames >= length, channels > 0 else { return [] }
            var size = 8
            while size < length { size *= 2 }
            let low = max(1, Int((band.lowerBound * Double(size) / Double(rate)).rounded(.up)))
            let high = min(size / 2, Int((band.upperBound * Double(size) / Double(rate)).rounded(.down)))
            guard high > low, let plan = kiss_fftr_alloc(Int32(size), 0, nil, nil) else { return [] }
            defer { free(UnsafeMutableRawPointer(plan)) }
            let bins = high - low + 1
            let count = (frames - length) / step + 1

            // Power per bin, row by row: power[bin * count + frame].
            var power = [Float](repeating: 0, count: bins * count)
            var hann = [Float](repeating: 0, count: length)
            for index in 0..<length { hann[index] = Float(0.5 - 0.5 * cos(2 * Double.pi * Double(index) / Double(length))) }
            var input = [Float](repeating: 0, count: size)
            var output = [kiss_fft_cpx](repeating: kiss_fft_cpx(), count: size / 2 + 1)
            let scale = 1 / Float(channels)
            for frame in 0..<count {
                let first = frame * step
                for index in 0..<length {
                    var sum: Float = 0
                    let base = (first + index) * channels
                    for channel in 0..<channels { sum += samples[base + channel] }
                    input[index] = sum * scale * hann[index]
                }
                kiss_fftr(plan, input, &output)
                for bin in 0..<bins {
                    let value = output[low + bin]
                    power[bin * count + frame] = value.r * value.r + value.i * value.i + 1e-14
                }
            }

            // Smoothed over `smoothing` frames, then each bin's least within `floorSpan`.
            let half = smoothing / 2
            let floorHalf = max(1, Int((floorSpan / hop / 2).rounded()))
            let rise = Float(pow(10, binRise / 10))
            var risen = [Int](repeating: 0, count: count)
            var smoothed = [Float](repeating: 0, count: count)
            var least = [Float](repeating: 0, count: count)
            var queue = [Int](repeating: 0, count: count)
            for bin in 0..<bins {
                let row = bin * count
                for frame in 0..<count {
                    let from = max(0, frame - half), to = min(count - 1, frame + half)
                    var sum: Float = 0
                    for index in from...to { sum += power[row + index] }
                    smoothed[frame] = sum / Float(to - from + 1)
                }
                slidingMinimum(smoothed, half: floorHalf, into: &least, queue: &queue)
                for frame in 0..<count where smoothed[frame] > least[frame] * rise { risen[frame] += 1 }
            }

            // Runs of quiet frames, in blocks.
            func blockAt(_ milliseconds: Double) -> Int { Int((milliseconds * Double(rate) / 1000 / Double(block)).rounded()) }
            func centre(_ frame: Int) -> Double { (Double(frame * step) + Double(length) / 2) * 1000 / Double(rate) }
            let totalBlocks = (frames + block - 1) / block
            var found: [Run] = []
            var frame = 0
            while frame < count {
                guard Double(risen[frame]) < quietShare * Double(bins) else {
                    frame += 1
                    continue
                }
                var end = frame
                var shares = 0.0
                while end < count, Double(risen[end]) < quietShare * Double(bins) {
                    shares += Double(risen[end]) / Double(bins)
                    end += 1
                }
                let from = centre(frame) - hop / 2, to = centre(end - 1) + hop / 2
                if to - from >= minimumRun {
                    // A run at the clip's start or end reaches it (the first window's centre is
                    // half a window in).
                    let start = frame == 0 ? 0 : max(0, blockAt(from - edgeWiden))
                    let stop = end == count ? totalBlocks : min(totalBlocks, blockAt(to + edgeWiden))
                    let run = Run(start: start, end: stop, share: shares / Double(end - frame))
                    // Widened, runs parted by a blip overlap: one pause.
                    if let last = found.last, last.end >= run.start {
                        let (a, b) = (Double(last.end - last.start), Double(run.end - run.start))
                        found[found.count - 1] = Run(start: last.start, end: max(last.end, run.end), share: (last.share * a + run.share * b) / (a + b))
                    } else {
                        found.append(run)
                    }
                }
                frame = end
            }
            return found
        }

        /// `least[i]` = the least of `values[i - half ... i + half - 1]` (clipped to the array),
        /// in one pass with a queue of candidate indices.
        static func slidingMinimum(_ values: [Float], half: Int, into least: inout [Float], queue: inout [Int]) {
            let count = values.count
            var head = 0, tail = 0
            var next = 0
            for index in 0..<count {
                let upper = min(count - 1, index + half - 1)
                while next <= upper {
                    while tail > head, values[queue[tail - 1]] >= values[next] { tail -= 1 }
                    queue[tail] = next
                    tail += 1
                    next += 1
                }
                while queue[head] < index - half { head += 1 }
                least[index] = values[queue[head]]
            }
        }
    }
}
