import CSoxr
import Foundation
import NarratorCore

/// Reads a schedule's streamed voices (music beds, any length) into their lanes' rings, ahead
/// of the mixer. Memory is the rings plus one read chunk per lane, whatever the files' length.
///
/// Offline, call `fill()` before each block: the rings then always hold what the block needs.
/// Live, `start()` runs the same filling on its own thread, so the real-time loop never reads
/// a file; `stop()` ends it.
public final class StreamFeeder: @unchecked Sendable {
    // Sendable: after `start()`, the lane readers are touched only by the feeder thread;
    // `stopping` is atomic-free but only ever set from false to true (a benign race: the thread
    // sees it at its next wake-up).
    public let lanes: StreamLanes
    private let schedule: Schedule
    private var readers: [LaneReader]
    private var thread: Thread?
    private let stopRequest = StopFlag()
    private let finishedSignal = DispatchSemaphore(value: 0)

    public init(schedule: Schedule, ringSeconds: Double = 2) {
        self.schedule = schedule
        let lanes = StreamLanes(schedule: schedule, ringSeconds: ringSeconds)
        self.lanes = lanes
        readers = lanes.voicesOfLane.enumerated().map { lane, voices in
            LaneReader(ring: lanes.rings[lane], voices: voices.map { schedule.voices[$0] }, rate: schedule.sampleRate)
        }
    }

    /// True when the schedule streams nothing.
    public var isIdle: Bool { readers.isEmpty }

    /// Tops every ring up. Errors (a file that vanished or cannot be read) are reported once;
    /// the voice then plays silence for the rest of its length, keeping the timeline.
    public func fill() -> [NarratorError] {
        var problems: [NarratorError] = []
        for reader in readers {
            if let problem = reader.fill() { problems.append(problem) }
        }
        return problems
    }

    /// Starts filling on a thread of its own, every `interval` seconds. `onProblem` is called
    /// from that thread.
    public func start(interval: Double = 0.01, onProblem: @escaping @Sendable (NarratorError) -> Void = { _ in }) {
        guard !readers.isEmpty, thread == nil else { return }
        for problem in fill() { onProblem(problem) }
        let thread = Thread { [self] in
            while !stopRequest.isSet && !readers.allSatisfy(\.done) {
                for problem in fill() { onProblem(problem) }
                Thread.sleep(forTimeInterval: interval)
            }
            finishedSignal.signal()
        }
        thread.name = "narrator-stream"
        self.thread = thread
        thread.start()
    }

    /// Stops the thread and waits for it.
    public func stop() {
        guard thread != nil else { return }
        stopRequest.set()
        finishedSignal.wait()
        thread = nil
    }
}

/// A flag set once, read from another thread.
final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// Reads one lane's voices, one after the other, into its ring.
private final class LaneReader {
    let ring: SampleRing
    let voices: [Voice]
    let rate: Int
    private var voiceIndex = 0
    /// Frames of the current voice still to put in the ring.
    private var remaining = 0
    private var file: SoundFileReader?
    private var resampler: StreamResampler?
    private var problem: NarratorError?
    private let chunkFrames = 4096
    private var chunk: [Float]
    private var converted: [Float]
    /// Converted frames not yet in the ring (the ring was full).
    private var pending: ArraySlice<Float> = []

    init(ring: SampleRing, voices: [Voice], rate: Int) {
        self.ring = ring
        self.voices = voices
        self.rate = rate
        let widest = voices.map(\.audio.channels).max() ?? 1
        chunk = [Float](repeating: 0, count: 4096 * widest)
        converted = []
    }

    var done: Bool { voiceIndex >= voices.count }

    /// Puts as much as fits into the ring; returns a new problem, if one arose.
    func fill() -> NarratorError? {
        var reported: NarratorError?
        while !done {
            if remaining == 0 && pending.isEmpty && file == nil && problem == nil {
                reported = open(voices[voiceIndex]) ?? reported
            }
            let channels = voices[voiceIndex].audio.channels
            if pending.isEmpty && remaining > 0 {
                pending = produce(channels: channels, frames: min(remaining, chunkFrames))
                remaining -= pending.count / channels
            }
            if !pending.isEmpty {
                let put = pending.withUnsafeBufferPointer { ring.write($0.baseAddress!, count: $0.count) }
                pending = pending.dropFirst(put)
                if !pending.isEmpty { return reported }  // the ring is full
            }
            if remaining == 0 && pending.isEmpty {
                file = nil
                resampler = nil
                problem = nil
                voiceIndex += 1
            }
        }
        return reported
    }

    private func open(_ voice: Voice) -> NarratorError? {
        guard case .stream(let streamed) = voice.audio.source else { return nil }
        remaining = voice.audio.frames
        do throws(NarratorError) {
            let file = try SoundFileReader(path: streamed.path)
            if file.sampleRate == rate {
                guard file.seek(toFrame: voice.audio.offset) else {
                    throw NarratorError(file: streamed.path, "cannot seek to frame \(voice.audio.offset)")
                }
            } else {
                resampler = try StreamResampler(
                    from: file.sampleRate, to: rate, channels: file.channels, skipOutputFrames: voice.audio.offset,
                    file: streamed.path)
            }
            self.file = file
            return nil
        } catch {
            problem = error
            return error
        }
    }

    /// The next `frames` frames of the current voice; silence where the file fails or ends early.
    private func produce(channels: Int, frames: Int) -> ArraySlice<Float> {
        converted.removeAll(keepingCapacity: true)
        if let file {
            if let resampler {
                while converted.count < frames * channels {
                    let got = chunk.withUnsafeMutableBufferPointer { file.read(into: $0.baseAddress!, frames: chunkFrames) }
                    let more = resampler.process(chunk, frames: got, flush: got == 0)
                    converted.append(contentsOf: more)
                    if got == 0 && more.isEmpty { break }
                }
                if converted.count > frames * channels {
                    resampler.keep(Array(converted[(frames * channels)...]))
                    converted.removeLast(converted.count - frames * channels)
                }
            } else {
                var total = 0
                while total < frames {
                    let got = chunk.withUnsafeMutableBufferPointer {
                        file.read(into: $0.baseAddress!, frames: frames - total)
                    }
                    if got == 0 { break }
                    converted.append(contentsOf: chunk[0..<(got * channels)])
                    total += got
                }
            }
        }
        if converted.count < frames * channels {
            converted.append(contentsOf: repeatElement(0, count: frames * channels - converted.count))
        }
        return converted[...]
    }
}

/// libsoxr in streaming mode: the same very-high-quality filter as the one-shot `Resampler`,
/// fed chunk by chunk.
private final class StreamResampler {
    private let soxr: soxr_t
    private let channels: Int
    private let ratio: Double
    private var skip: Int
    private var carry: [Float] = []

    init(from inputRate: Int, to outputRate: Int, channels: Int, skipOutputFrames: Int, file: String) throws(NarratorError) {
        var error: soxr_error_t?
        var ioSpec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var quality = soxr_quality_spec(UInt(SOXR_VHQ), 0)
        guard let soxr = soxr_create(Double(inputRate), Double(outputRate), UInt32(channels), &error, &ioSpec, &quality, nil),
            error == nil
        else {
            throw NarratorError(file: file, "cannot resample \(inputRate) Hz to \(outputRate) Hz (soxr: \(error.map { String(cString: $0) } ?? "?"))")
        }
        self.soxr = soxr
        self.channels = channels
        ratio = Double(outputRate) / Double(inputRate)
        skip = skipOutputFrames
    }

    deinit { soxr_delete(soxr) }

    /// Output for `frames` input frames (or the filter's tail when `flush`), after the skip.
    func process(_ input: [Float], frames: Int, flush: Bool) -> [Float] {
        var output = carry
        carry = []
        let room = Int(Double(max(frames, 1)) * ratio) + 64
        var buffer = [Float](repeating: 0, count: room * channels)
        var inputDone = 0
        var consumed = 0
        repeat {
            var outputDone = 0
            buffer.withUnsafeMutableBufferPointer { out in
                input.withUnsafeBufferPointer { inp in
                    if flush {
                        _ = soxr_process(soxr, nil, 0, nil, out.baseAddress, room, &outputDone)
                    } else {
                        _ = soxr_process(
                            soxr, inp.baseAddress! + consumed * channels, frames - consumed, &inputDone,
                            out.baseAddress, room, &outputDone)
                    }
                }
            }
            consumed += inputDone
            output.append(contentsOf: buffer[0..<(outputDone * channels)])
            if outputDone < room && (flush || consumed >= frames) { break }
        } while true
        if skip > 0 {
            let dropped = min(skip, output.count / channels)
            output.removeFirst(dropped * channels)
            skip -= dropped
        }
        return output
    }

    /// Output produced beyond what was wanted, handed back first next time.
    func keep(_ samples: [Float]) { carry = samples + carry }
}
