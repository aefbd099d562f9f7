import CAllocationCounter
import Foundation
import NarratorAudioFile
import NarratorCore
import Testing

/// What the time stretcher promises, measured on its output by methods that know nothing of it:
/// the pitch by zero crossings, the length by counting, where sounds land by their onsets.
@Suite("TimeStretcher")
struct TimeStretcherTests {
    static let rate = 48_000

    /// Streams `input` through a stretcher as the live engine would (blocks of `block`
    /// frames, the output taken after each), flushes, and returns all the output.
    /// `speedAt`: speed changes, keyed by the input frame before which they happen.
    static func stretch(
        _ input: [Float], channels: Int = 1, speed: Double, block: Int = 1024, speedAt: [Int: Double] = [:],
        stretcher made: TimeStretcher? = nil
    ) throws -> (output: [Float], stretcher: TimeStretcher) {
        let stretcher = try made ?? TimeStretcher(rate: rate, channels: channels, speed: speed, maxFeedFrames: block)
        var output: [Float] = []
        var room = [Float](repeating: 0, count: 4096 * channels)
        func drain() {
            while true {
                let n = room.withUnsafeMutableBufferPointer { stretcher.take(into: $0) }
                if n == 0 { return }
                output.append(contentsOf: room[0..<(n * channels)])
            }
        }
        let frames = input.count / channels
        var position = 0
        while position < frames {
            var end = min(frames, position + block)
            // A change falls on a block boundary: cut the block there.
            if let next = speedAt.keys.filter({ $0 > position && $0 < end }).min() { end = next }
            if let change = speedAt[position] { try stretcher.setSpeed(change) }
            input.withUnsafeBufferPointer { all in
                stretcher.feed(UnsafeBufferPointer(rebasing: all[(position * channels)..<(end * channels)]))
            }
            drain()
            position = end
        }
        stretcher.flush()
        drain()
        return (output, stretcher)
    }

    static func sine(_ frequency: Double, frames: Int, amplitude: Float = 0.5) -> [Float] {
        (0..<frames).map { amplitude * Float(sin(2 * Double.pi * frequency * Double($0) / Double(rate))) }
    }

    /// Frequency by upward zero crossings (interpolated between samples) over the middle 60%.
    static func zeroCrossingFrequency(_ samples: [Float]) -> Double {
        let a = samples.count / 5, b = samples.count * 4 / 5
        var crossings: [Double] = []
        for k in a..<(b - 1) where samples[k] < 0 && samples[k + 1] >= 0 {
            crossings.append(Double(k) + Double(samples[k] / (samples[k] - samples[k + 1])))
        }
        guard crossings.count > 1 else { return 0 }
        return Double(crossings.count - 1) / ((crossings.last! - crossings.first!) / Double(rate))
    }

    /// Onsets: the first frame at or above `threshold` (absolute) after at least `quiet` frames
    /// below it.
    static func onsets(_ samples: [Float], threshold: Float = 0.05, quiet: Int = 2400) -> [Int] {
        var found: [Int] = []
        var below = quiet
        for (k, x) in samples.enumerated() {
            if abs(x) >= threshold {
                if below >= quiet { found.append(k) }
                below = 0
            } else {
                below += 1
            }
        }
        return found
    }

    /// A speech-like burst: a 160 Hz sawtooth with a few harmonics, `frames` long.
    static func burst(frames: Int) -> [Float] {
        (0..<frames).map { k in
            let t = Double(k) / Double(rate)
            return Float(0.3 * sin(2 * .pi * 160 * t) + 0.15 * sin(2 * .pi * 320 * t) + 0.1 * sin(2 * .pi * 480 * t))
        }
    }

    @Test(arguments: [0.75, 1.5])
    func a440HzToneKeepsItsPitch(speed: Double) throws {
        let (out, _) = try Self.stretch(Self.sine(440, frames: 2 * Self.rate), speed: speed)
        let measured = Self.zeroCrossingFrequency(out)
        #expect(abs(measured / 440 - 1) < 0.01, "measured \(measured) Hz at \(speed)x")
    }

    /// Stereo too: each channel keeps its own tone.
    @Test func stereoChannelsKeepTheirPitch() throws {
        let left = Self.sine(440, frames: Self.rate), right = Self.sine(660, frames: Self.rate)
        var interleaved = [Float](repeating: 0, count: 2 * Self.rate)
        for k in 0..<Self.rate { interleaved[2 * k] = left[k]; interleaved[2 * k + 1] = right[k] }
        let (out, _) = try Self.stretch(interleaved, channels: 2, speed: 0.75)
        let l = stride(from: 0, to: out.count, by: 2).map { out[$0] }
        let r = stride(from: 1, to: out.count, by: 2).map { out[$0] }
        #expect(abs(Self.zeroCrossingFrequency(l) / 440 - 1) < 0.01)
        #expect(abs(Self.zeroCrossingFrequency(r) / 660 - 1) < 0.01)
    }

    /// The output of a whole stream is round(frames / speed) frames, exactly under 100 ms, else
    /// within one pitch period of the signal (300 frames for the 160 Hz burst, 6.25 ms): Sonic cuts and repeats whole
    /// periods, and its flush cuts to its own count. (`render --speed` then cuts or pads to the
    /// exact length; RenderSpeedTests.)
    @Test(arguments: [0.5, 0.75, 1.5, 2.0])
    func lengthIsFramesOverSpeed(speed: Double) throws {
        for frames in [1, 999, 48_000, 100_003] {
            let (out, stretcher) = try Self.stretch(Self.burst(frames: frames), speed: speed)
            let expected = Int((Double(frames) / speed).rounded())
            // A pitch period is 300 frames: on 1 or 999 frames that tolerance would pass an
            // output of nothing. Streams under 100 ms come out at exactly the count (measured at
            // every speed here: the flush cuts to it); only longer ones may be a period off.
            let tolerance = frames < Self.rate / 10 ? 0 : Self.rate / 160
            #expect(abs(out.count - expected) <= tolerance, "\(frames) frames at \(speed)x: \(out.count), expected \(expected)")
            #expect(stretcher.outputFrame(forInput: frames) == expected)
            #expect(stretcher.outputFrames == out.count && stretcher.inputFrames == frames)
        }
    }

    /// Bursts at known input frames land where the map says, within 5 ms, at one speed and
    /// across speed changes (the map's new segment starts where the output is).
    @Test(arguments: [
        (0.75, [Int: Double]()), (1.5, [:]), (0.5, [:]), (2.0, [:]),
        (0.75, [30_000: 1.5, 75_000: 0.5, 110_000: 2.0]),
        (1.5, [40_000: 0.75, 66_000: 1.25]),
    ])
    func burstsLandWhereTheMapSays(speed: Double, changes: [Int: Double]) throws {
        let truth = [4_800, 24_000, 52_000, 80_000, 100_000, 130_000]
        var input = [Float](repeating: 0, count: 150_000)
        for start in truth {
            let b = Self.burst(frames: 7_200)
            for k in b.indices { input[start + k] = b[k] }
        }
        let (out, stretcher) = try Self.stretch(input, speed: speed, speedAt: changes)
        let found = Self.onsets(out)
        #expect(found.count == truth.count, "onsets \(found)")
        for (t, f) in zip(truth, found) {
            let mapped = stretcher.outputFrame(forInput: t)
            #expect(abs(mapped - f) <= Self.rate / 200, "burst at input \(t): map \(mapped), heard at \(f)")
            #expect(abs(stretcher.inputFrame(forOutput: mapped) - t) <= 1)
        }
    }

    /// A speed change leaves no gap and no click: a steady two-harmonic tone through four
    /// changes keeps its level in every 5 ms window (no drop below half the median level), and
    /// no step between samples near a change is larger than the largest elsewhere.
    @Test func speedChangesLeaveNoGapAndNoClick() throws {
        let frames = 4 * Self.rate
        let input = (0..<frames).map { k in
            let t = Double(k) / Double(Self.rate)
            return Float(0.3 * sin(2 * .pi * 150 * t) + 0.15 * sin(2 * .pi * 300 * t))
        }
        let changes: [Int: Double] = [48_000: 1.5, 96_000: 0.5, 144_077: 2.0, 170_000: 0.75]
        let (out, stretcher) = try Self.stretch(input, speed: 0.75, speedAt: changes)
        let window = Self.rate / 200
        let levels = stride(from: window, to: out.count - 2 * window, by: window).map { a in
            (sqrt(out[a..<(a + window)].map { $0 * $0 }.reduce(0, +) / Float(window)), a)
        }
        let median = levels.map(\.0).sorted()[levels.count / 2]
        for (level, at) in levels where level < median / 2 {
            Issue.record("level \(level) at output frame \(at), median \(median)")
        }
        let junctions = changes.keys.map { stretcher.outputFrame(forInput: $0) }
        var near: Float = 0, elsewhere: Float = 0
        for k in 1..<out.count {
            let step = abs(out[k] - out[k - 1])
            if junctions.contains(where: { abs($0 - k) < 10 * window }) { near = max(near, step) } else { elsewhere = max(elsewhere, step) }
        }
        #expect(near <= elsewhere, "largest step near a change \(near), elsewhere \(elsewhere)")
    }

    /// Feeding after a flush goes on where the flushed output ended: passages, each flushed,
    /// still put their bursts where the map says. Each passage ends in about two seconds of
    /// steady tone, whose flushed length Sonic makes up to a period long or short.
    @Test(arguments: [0.5, 0.75, 1.5, 2.0])
    func passagesAfterAFlushLandWhereTheMapSays(speed: Double) throws {
        let stretcher = try TimeStretcher(rate: Self.rate, channels: 1, speed: speed, maxFeedFrames: 1024)
        var out: [Float] = []
        var truth: [Int] = []
        let b = Self.burst(frames: 7_200)
        for passage in 0..<4 {
            var input = Self.burst(frames: 100_003 + 3_001 * passage)
            for k in 0..<25_000 { input[k] = 0 }
            let start = 10_000 + 500 * passage
            for k in b.indices { input[start + k] = b[k] }
            truth.append(stretcher.inputFrames + start)
            let piece = try Self.stretch(input, speed: speed, stretcher: stretcher).output
            out += piece
        }
        // The onsets come in pairs: a passage's burst, then its tone.
        let found = Self.onsets(out)
        #expect(found.count == 2 * truth.count, "onsets \(found)")
        for k in truth.indices where 2 * k < found.count {
            let mapped = stretcher.outputFrame(forInput: truth[k])
            let heard = found[2 * k]
            #expect(abs(mapped - heard) <= Self.rate / 200, "burst at input \(truth[k]): map \(mapped), heard at \(heard)")
        }
        #expect(stretcher.outputFrames == out.count)
    }

    @Test func badSpeedsAreRejected() throws {
        for speed in [0.49, 2.01, 0, -1, .nan, .infinity, -.infinity] {
            #expect(throws: NarratorError.self) { _ = try TimeStretcher(rate: Self.rate, channels: 1, speed: speed) }
        }
        let stretcher = try TimeStretcher(rate: Self.rate, channels: 2, speed: 1)
        for speed in [0.4999, 2.0001, .nan] {
            #expect(throws: NarratorError.self) { try stretcher.setSpeed(speed) }
        }
        #expect(stretcher.speed == 1)
        #expect(throws: NarratorError.self) { _ = try TimeStretcher(rate: 0, channels: 1, speed: 1) }
        #expect(throws: NarratorError.self) { _ = try TimeStretcher(rate: Self.rate, channels: 0, speed: 1) }
        #expect(throws: NarratorError.self) { _ = try TimeStretcher(rate: Self.rate, channels: 1, speed: 1, maxFeedFrames: 0) }
    }

    /// After init, the calls of the real-time loop allocate nothing, at any speed, with the
    /// output taken a period at a time as a device would, through speed changes and a flush.
    @Test func theStreamingCallsDoNotAllocate() throws {
        let block = 512
        let stretcher = try TimeStretcher(rate: Self.rate, channels: 2, speed: 0.5, maxFeedFrames: block)
        let input = UnsafeMutableBufferPointer<Float>.allocate(capacity: block * 2)
        let output = UnsafeMutableBufferPointer<Float>.allocate(capacity: 256 * 2)
        defer { input.deallocate(); output.deallocate() }
        let speeds = [0.5, 2.0, 0.75, 1.5, 0.5]
        narrator_reset_allocation_count()
        narrator_count_allocations(true)
        var phase = 0.0
        for step in 0..<2_000 {
            if step % 400 == 0 { try stretcher.setSpeed(speeds[step / 400]) }
            for k in 0..<block {
                phase += 2 * .pi * 200 / 48_000
                input[2 * k] = Float(0.5 * sin(phase))
                input[2 * k + 1] = input[2 * k]
            }
            // A device period at a time, until little waits.
            while stretcher.availableFrames > stretcher.maxPendingFrames {
                _ = stretcher.take(into: output)
            }
            stretcher.feed(UnsafeBufferPointer(input))
            _ = stretcher.take(into: output)
            _ = stretcher.outputFrame(forInput: step * block)
        }
        stretcher.flush()
        while stretcher.take(into: output) > 0 {}
        narrator_count_allocations(false)
        #expect(narrator_allocation_count() == 0)
    }
}
