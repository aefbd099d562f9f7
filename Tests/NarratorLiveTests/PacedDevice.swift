import Foundation
import NarratorCore
@_spi(Testing) import NarratorLive

/// A playback device made of arithmetic: it plays `rate` frames per second of the monotonic
/// clock from the moment its buffer first fills, keeps every frame it was given, and knows
/// exactly when each was heard. It runs dry (−EPIPE) like a real device when not fed, and can
/// be told to stall the writer once or to fail. It allocates nothing after `init`.
final class PacedDevice: PCMDevice, @unchecked Sendable {
    // @unchecked: used by the audio thread during `run`, read by the test afterwards.
    let output: NegotiatedOutput
    private let rate: Int
    /// Frames written, and kept (s16 interleaved) up to `capacity`.
    private(set) var written = 0
    private let kept: UnsafeMutablePointer<Int16>
    private let capacity: Int
    /// Playing since `segmentTime`, from device frame `segmentFrame`.
    private var playing = false
    private var segmentTime: Int64 = 0
    private var segmentFrame = 0
    /// Where play stopped last (an underrun or a drop).
    private var stoppedAt = 0
    private var xrun = false
    /// Segments of continuous play: (first device frame, its heard time, frames).
    private let segments: UnsafeMutablePointer<(frame: Int, time: Int64)>
    private(set) var segmentCount = 0
    /// Once `written` passes `stallAfter`, the next write sleeps `stallNs` (a descheduled writer).
    var stallAfter = Int.max
    var stallNs: Int64 = 0
    /// Once `written` passes this, writes fail with `failCode`; `failedAt` is when they began to.
    var failAfter = Int.max
    var failure: DeviceFailure = .deviceLost(EIO)
    private(set) var failedAt: Int64?
    /// Each time play reaches a multiple of `pauseEvery` device frames, the device stops
    /// consuming for `pauseNs` without saying so (a sound server that was descheduled), then
    /// goes on.
    var pauseEvery = Int.max
    var pauseNs: Int64 = 0
    private var nextPause = Int.max
    private(set) var underruns = 0

    init(rate: Int, channels: Int, periodFrames: Int, bufferFrames: Int, seconds: Int) {
        self.rate = rate
        output = NegotiatedOutput(
            device: "paced", sampleRate: rate, channels: channels, format: .s16, periodFrames: periodFrames,
            bufferFrames: bufferFrames)
        capacity = rate * seconds
        kept = .allocate(capacity: capacity * channels)
        segments = .allocate(capacity: 256)
    }

    deinit {
        kept.deallocate()
        segments.deallocate()
    }

    private func now() -> Int64 { MonotonicClock.now() }

    /// The device frame being heard now (frames before it were heard).
    private func position(at time: Int64) -> Int {
        guard playing else { return stoppedAt }
        var played = segmentFrame + Int((time - segmentTime) * Int64(rate) / 1_000_000_000)
        if nextPause == Int.max && pauseEvery != Int.max { nextPause = pauseEvery }
        while played >= nextPause && segmentFrame <= nextPause {
            let pausedAt = segmentTime + Int64(nextPause - segmentFrame) * 1_000_000_000 / Int64(rate)
            if time < pausedAt + pauseNs {
                played = nextPause
                break
            }
            segmentTime = pausedAt + pauseNs
            segmentFrame = nextPause
            if segmentCount < 256 {
                segments[segmentCount] = (nextPause, segmentTime)
                segmentCount += 1
            }
            nextPause += pauseEvery
            played = segmentFrame + Int((time - segmentTime) * Int64(rate) / 1_000_000_000)
        }
        if played >= written {
            // Ran dry: an underrun at the moment the last frame was heard.
            playing = false
            xrun = true
            underruns += 1
            stoppedAt = written
            return written
        }
        return played
    }

    func write(_ samples: UnsafeRawPointer, frames: Int) -> Result<Int, DeviceFailure> {
        if written >= failAfter {
            if failedAt == nil { failedAt = now() }
            return .failure(failure)
        }
        if written >= stallAfter {
            stallAfter = .max
            var spec = timespec(tv_sec: Int(stallNs / 1_000_000_000), tv_nsec: Int(stallNs % 1_000_000_000))
            nanosleep(&spec, nil)
        }
        let time = now()
        let heard = position(at: time)
        if xrun { return .failure(.underrun) }
        let room = output.bufferFrames - (written - heard)
        let n = min(frames, room)
        guard n > 0 else { return .failure(.wouldBlock) }
        let channels = output.channels
        let copy = max(0, min(n, capacity - written))
        (kept + written * channels).update(from: samples.assumingMemoryBound(to: Int16.self), count: copy * channels)
        written += n
        if !playing && written - stoppedAt >= output.bufferFrames {
            playing = true
            segmentTime = time
            segmentFrame = stoppedAt
            if segmentCount < 256 {
                segments[segmentCount] = (stoppedAt, time)
                segmentCount += 1
            }
        }
        return .success(n)
    }

    func wait(timeoutMs: Int32) -> Result<Bool, DeviceFailure> {
        let time = now()
        let heard = position(at: time)
        if xrun { return .failure(.underrun) }
        let room = output.bufferFrames - (written - heard)
        if room >= output.periodFrames || !playing { return .success(true) }
        let needed = Int64(output.periodFrames - room) * 1_000_000_000 / Int64(rate)
        let sleep = min(needed, Int64(timeoutMs) * 1_000_000)
        var spec = timespec(tv_sec: Int(sleep / 1_000_000_000), tv_nsec: Int(sleep % 1_000_000_000))
        nanosleep(&spec, nil)
        return .success(true)
    }

    func read() -> PCMReading? {
        let time = now()
        let heard = position(at: time)
        return PCMReading(running: playing, delay: written - heard, time: time)
    }

    func recover(_ failure: DeviceFailure) -> DeviceFailure? {
        guard failure.recoverable else { return failure }
        xrun = false
        return nil
    }

    func rewind(_ frames: Int) -> Int { 0 }

    func drop() {
        if playing { stoppedAt = position(at: now()) }
        playing = false
    }

    // MARK: For the test, after `run`

    /// Every frame written, as s16 interleaved.
    var played: [Int16] { Array(UnsafeBufferPointer(start: kept, count: min(written, capacity) * output.channels)) }

    /// When device frame `frame` was heard.
    func heardTime(ofDeviceFrame frame: Int) -> Int64? {
        var found: (frame: Int, time: Int64)?
        for i in 0..<segmentCount where segments[i].frame <= frame { found = segments[i] }
        guard let found else { return nil }
        return found.time + Int64(frame - found.frame) * 1_000_000_000 / Int64(rate)
    }
}
