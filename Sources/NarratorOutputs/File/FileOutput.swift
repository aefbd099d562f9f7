import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorLive
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A device that plays into an audio file, in real time: for a machine with no sound card (a
/// server, a container, CI) where `play` should still run as it would on a speaker, its cues
/// delivered as their frames are heard, and leave a recording of what was heard.
///
/// The "device" plays `sampleRate` frames per second of the monotonic clock from the moment its
/// buffer (`latencyMs`) first fills, like a sound card's DAC: the engine's audio thread renders
/// into it when it has room (a push output) and it reports its delay from the clock, so every
/// cue is delivered when its frame is "heard". Frame k of the file is the frame heard at the
/// start time + k / rate; when the engine falls behind, the device plays silence as a card would,
/// and that silence is in the file.
///
/// The audio thread writes no file: it copies what it renders into a ring allocated at open,
/// and a writer thread appends what has been heard to the file (`SoundFileWriter`, complete or
/// absent: it appears under its name when playback stops). What is written is what was heard:
/// frames rendered but not yet heard when playback stops are not in it.
public final class FileOutput: AudioOutput, @unchecked Sendable {
    // @unchecked: the ring's counters are atomics; the ring's bytes are written by the audio
    // thread ahead of `given` and read by the writer behind `heard`, never the same frames.
    public let negotiated: NegotiatedOutput
    public var drive: OutputDrive { .push }
    public let path: String

    private let writer: SoundFileWriter
    /// The ring: `capacity` interleaved float frames.
    private let ring: UnsafeMutableBufferPointer<Float>
    private let capacity: Int
    /// Frames the device was given (rendered, and silence played while dry), in all.
    private let given = Atomic<Int>(0)
    /// Frames heard (the clock's position), in all: what the writer may take.
    private let heard = Atomic<Int>(0)
    /// Frames the writer has put in the file.
    private let written = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// The writer's failure (an errno), 0 while none.
    private let writeFailure = Atomic<Int32>(0)
    private var writerThread: Thread?
    private let writerDone = DispatchSemaphore(value: 0)
    private let block: UnsafeMutableRawPointer

    /// Opens `path` (its extension chooses the format, as `render`'s does) for audio at `rate`
    /// and `channels`, with a buffer of about `latencyMs`.
    public init(path: String, rate: Int, channels: Int, latencyMs: Int) throws(PlaybackError) {
        let period = max(1, rate * latencyMs / 4000)
        negotiated = NegotiatedOutput(
            device: path, sampleRate: rate, channels: channels, format: .float, periodFrames: period, bufferFrames: 4 * period)
        self.path = path
        // Two seconds beyond the buffer: the writer, woken every 10 ms, has all that to keep up.
        capacity = 4 * period + 2 * rate
        do {
            writer = try SoundFileWriter(path: path, sampleRate: rate, channels: channels, format: .f32, maxFrames: capacity)
        } catch {
            throw .noDevice(device: path, code: "EIO", reason: error.message, listedBy: "--output file writes the file --device names")
        }
        ring = .allocate(capacity: capacity * channels)
        ring.initialize(repeating: 0)
        block = .allocate(byteCount: period * channels * 4, alignment: 16)
    }

    deinit {
        ring.deallocate()
        block.deallocate()
    }

    private static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }

    private static func sleep(nanoseconds: Int) {
        var spec = timespec(tv_sec: 0, tv_nsec: nanoseconds)
        nanosleep(&spec, nil)
    }

    public func play(_ feed: OutputFeed) {
        // The writer starts with playback, before the real-time loop below (not at open: an
        // output opened and never played would keep it, and itself, alive).
        let thread = Thread { [self] in writeHeard() }
        thread.name = "narrator-file-writer"
        writerThread = thread
        thread.start()

        let rate = negotiated.sampleRate
        let channels = negotiated.channels
        let period = negotiated.periodFrames
        let buffer = negotiated.bufferFrames
        /// When device frame `frame` was heard; nil until the buffer first fills.
        var start: (time: Int64, frame: Int)?
        var device = 0  // frames given, as the audio thread counts them
        var dry = false
        while !feed.shouldStop {
            let failure = writeFailure.load(ordering: .acquiring)
            if failure != 0 {
                feed.failed(DeviceFailure(errno: failure))
                break
            }
            feed.takeTransportRequests()
            var played = 0
            if let start {
                played = start.frame + Int((Self.now() - start.time) * Int64(rate) / 1_000_000_000)
                heard.store(min(played, device), ordering: .releasing)
                if played >= device {
                    // Dry: the device plays silence (it goes into the file with the next
                    // frames given), and the engine's clock settles again.
                    if !dry { feed.interrupted() }
                    dry = true
                }
            }
            let room = buffer - max(0, device - played)
            // The writer's backlog bounds the ring: with no room there, wait for it.
            let free = capacity - (max(device, played) - written.load(ordering: .acquiring))
            var rendered = 0
            if room >= period && free >= period {
                rendered = feed.render(into: block, frames: period)
            }
            if rendered > 0 {
                if start != nil && played > device {
                    for frame in device..<played { zero(frame: frame, channels: channels) }
                    device = played
                }
                dry = false
                let samples = block.assumingMemoryBound(to: Float.self)
                for k in 0..<rendered {
                    let slot = (device + k) % capacity
                    for c in 0..<channels { ring[slot * channels + c] = samples[k * channels + c] }
                }
                device += rendered
                given.store(device, ordering: .releasing)
            }
            // The device starts once its buffer is full, or with what it has when nothing more
            // comes for now (a chain shorter than the buffer, a hold before a tap's frame).
            if start == nil && device > 0 && (device >= buffer || (rendered == 0 && room >= period)) {
                start = (Self.now(), 0)
            }
            if let start, !dry {
                let time = Self.now()
                let position = start.frame + Int((time - start.time) * Int64(rate) / 1_000_000_000)
                feed.report(delay: max(0, device - position), at: time)
            }
            if rendered == 0 { Self.sleep(nanoseconds: 1_000_000) }
        }
        heard.store(min(device, start.map { $0.frame + Int((Self.now() - $0.time) * Int64(rate) / 1_000_000_000) } ?? 0), ordering: .releasing)
    }

    private func zero(frame: Int, channels: Int) {
        let slot = frame % capacity
        for c in 0..<channels { ring[slot * channels + c] = 0 }
    }

    /// The writer thread: appends what has been heard, every 10 ms, until `stop`.
    private func writeHeard() {
        let channels = negotiated.channels
        var done = 0
        func drain() -> Bool {
            let upTo = min(heard.load(ordering: .acquiring), given.load(ordering: .acquiring))
            while done < upTo {
                let slot = done % capacity
                let count = min(upTo - done, capacity - slot)
                do {
                    try writer.write(UnsafeBufferPointer(rebasing: ring[(slot * channels)..<((slot + count) * channels)]), frames: count)
                } catch {
                    writeFailure.store(EIO, ordering: .releasing)
                    return false
                }
                done += count
                written.store(done, ordering: .releasing)
            }
            return true
        }
        while !stopping.load(ordering: .acquiring) {
            guard drain() else { break }
            Self.sleep(nanoseconds: 10_000_000)
        }
        if writeFailure.load(ordering: .acquiring) == 0 && drain() {
            do { try writer.finish() } catch { writer.abandon() }
        } else {
            writer.abandon()
        }
        writerDone.signal()
    }

    /// Stops: what was heard until now is the file's last frame; it is complete when this
    /// returns.
    public func stop() {
        stopping.store(true, ordering: .releasing)
        if writerThread != nil { writerDone.wait() }
    }
}
