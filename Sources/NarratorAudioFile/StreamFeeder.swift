import CSoxr
import Foundation
import NarratorCore
import Synchronization

/// Reads a schedule's streamed voices (music beds, any length) into their lanes' rings, ahead
/// of the mixer. Memory is the rings plus one read chunk per lane, whatever the files' length.
///
/// Offline, call `fill()` before each block: the rings then always hold what the block needs.
/// Live, `start()` runs the same filling on its own thread, so the real-time loop never reads
/// a file; `stop()` ends it.
///
/// When the mixer moves (a seek, a word said on its own, a take-back its ring's history does
/// not cover) it asks a lane's ring for a refill from a timeline frame; `fill()` sees the
/// request, repositions the lane's decoder there (libsndfile's seek, at the file's own rate;
/// a resampled file starts the resampler a little earlier, as when a voice starts), tells
/// the ring where the new samples begin, and fills from there.
public final class StreamFeeder: @unchecked Sendable {
    // Sendable: after `start()`, the lane readers are touched only by the feeder thread;
    // `stopRequest` is atomic.
    public let lanes: StreamLanes
    private let schedule: Schedule
    private var readers: [LaneReader]
    private var thread: Thread?
    private let stopRequest = Atomic<Bool>(false)
    private let finishedSignal = DispatchSemaphore(value: 0)
    /// Ends the default pause early: `wake()`.
    private let wakeSignal = DispatchSemaphore(value: 0)

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

    /// Starts filling on a thread of its own, every `interval` seconds. `threadSetup` runs
    /// first on that thread (the engine sets its scheduling policy there); `onProblem` is
    /// called from it.
    ///
    /// `pause` waits between two fills (by default `interval` seconds, or until `wake()`); it may return early
    /// once its argument says the feeder is stopping (a virtual clock's sleep, which `stop`'s
    /// `wake` interrupts). `onExit` runs last on the thread. The thread runs until `stop`: a
    /// lane that has played to its end may be asked to refill from earlier.
    public func start(
        interval: Double = 0.005, threadSetup: @escaping @Sendable () -> Void = {},
        pause: (@Sendable (_ stopping: () -> Bool) -> Void)? = nil, onExit: @escaping @Sendable () -> Void = {},
        onProblem: @escaping @Sendable (NarratorError) -> Void = { _ in }
    ) {
        guard !readers.isEmpty, thread == nil else { return }
        for problem in fill() { onProblem(problem) }
        let pause = pause ?? { [wakeSignal] _ in _ = wakeSignal.wait(timeout: .now() + interval) }
        let thread = Thread { [self] in
            threadSetup()
            while !stopRequest.load(ordering: .acquiring) {
                for problem in fill() { onProblem(problem) }
                pause { stopRequest.load(ordering: .acquiring) }
            }
            onExit()
            finishedSignal.signal()
        }
        thread.name = "narrator-stream"
        self.thread = thread
        thread.start()
    }

    /// Ends the default pause now, so that a refill the mixer just asked for is carried out
    /// at once rather than at the next look (up to `interval` later). Real time: no
    /// allocation or lock (a semaphore's signal), so the audio thread may call it.
    public func wake() { wakeSignal.signal() }

    /// Stops the thread and waits for it; `wake` interrupts its `pause`.
    public func stop(wake: () -> Void = {}) {
        guard thread != nil else { return }
        stopRequest.store(true, ordering: .releasing)
        wake()
        finishedSignal.wait()
        thread = nil
    }
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
    private var resamplerProblemReported = false
    /// A problem found while producing, reported by the next `fill`.
    private var laterProblem: NarratorError?
    /// The ring's latest refill request carried out.
    private var handledGeneration = 0
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

    /// Carries out a refill the mixer asked for since the last look: the lane's decoder moves
    /// to the timeline frame asked for, and the ring is told that what comes next is from there.
    private func takeRequest() {
        let (generation, frame) = ring.refillRequest
        guard generation != handledGeneration else { return }
        handledGeneration = generation
        pending = []
        file = nil
        resampler = nil
        resamplerProblemReported = false
        problem = nil
        remaining = 0
        voiceIndex = voices.firstIndex { $0.endFrame > frame } ?? voices.count
        if !done {
            let voice = voices[voiceIndex]
            if let failure = open(voice, skipping: max(0, frame - voice.startFrame)) { laterProblem = failure }
        }
        ring.acknowledge(generation)
    }

    /// Puts as much as fits into the ring; returns a new problem, if one arose.
    func fill() -> NarratorError? {
        takeRequest()
        var reported: NarratorError? = laterProblem
        laterProblem = nil
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
                resamplerProblemReported = false
                problem = nil
                voiceIndex += 1
            }
            // A move asked for meanwhile is taken before more of the old place is read.
            if ring.refillRequest.generation != handledGeneration {
                takeRequest()
                if let failure = laterProblem {
                    reported = reported ?? failure
                    laterProblem = nil
                }
            }
        }
        return reported
    }

    /// Opens `voice`'s file at `skip` frames into the voice (0: its start).
    private func open(_ voice: Voice, skipping skip: Int = 0) -> NarratorError? {
        guard case .stream(let streamed) = voice.audio.source else { return nil }
        remaining = voice.audio.frames - skip
        let first = voice.audio.offset + skip
        do throws(NarratorError) {
            let file = try SoundFileReader(path: streamed.path)
            if file.sampleRate == rate {
                guard file.seek(toFrame: first) else {
                    throw NarratorError(file: streamed.path, "cannot seek to frame \(first)")
                }
            } else {
                // Start near the region rather than resampling the whole file before it: at an
                // input frame whose output position is an exact integer, a few thousand output
                // frames early so the filter is settled by the region's first frame.
                let divisor = gcd(file.sampleRate, rate)
                let (inputStep, outputStep) = (file.sampleRate / divisor, rate / divisor)
                let steps = max(0, first - 8192) / outputStep
                guard file.seek(toFrame: steps * inputStep) else {
                    throw NarratorError(file: streamed.path, "cannot seek to frame \(steps * inputStep)")
                }
                resampler = try StreamResampler(
                    from: file.sampleRate, to: rate, channels: file.channels,
                    skipOutputFrames: first - steps * outputStep, file: streamed.path)
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
                converted.append(contentsOf: repeatElement(0, count: frames * channels))
                let got = converted.withUnsafeMutableBufferPointer {
                    resampler.read(into: $0.baseAddress!, frames: frames, from: file, chunk: &chunk)
                }
                converted.removeLast((frames - got) * channels)
                if let failure = resampler.problem, !resamplerProblemReported {
                    resamplerProblemReported = true
                    laterProblem = failure
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
        // A lesson's loudness target: a constant factor (this thread feeds the ring, ahead of
        // the real-time mixer).
        if case .stream(let streamed) = voices[voiceIndex].audio.source, streamed.gain != 1 {
            let gain = streamed.gain
            converted.withUnsafeMutableBufferPointer { samples in
                for index in samples.indices { samples[index] *= gain }
            }
        }
        if converted.count < frames * channels {
            converted.append(contentsOf: repeatElement(0, count: frames * channels - converted.count))
        }
        return converted[...]
    }
}

private func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

/// libsoxr in streaming mode: the same very-high-quality filter as the one-shot `Resampler`,
/// fed chunk by chunk. Output not yet asked for waits in a small FIFO.
private final class StreamResampler {
    private let soxr: soxr_t
    private let channels: Int
    private var skip: Int
    /// Converted samples; `fifo[fifoStart...]` are waiting.
    private var fifo: [Float] = []
    private var fifoStart = 0
    private var output: [Float]
    private let outputFrames: Int
    private var flushed = false
    private let file: String
    private(set) var problem: NarratorError?

    init(from inputRate: Int, to outputRate: Int, channels: Int, skipOutputFrames: Int, file: String) throws(NarratorError) {
        soxr = try Resampler.make(from: inputRate, to: outputRate, channels: channels, file: file)
        self.channels = channels
        self.file = file
        skip = skipOutputFrames
        outputFrames = Int(Double(4096) * Double(outputRate) / Double(inputRate)) + 256
        output = [Float](repeating: 0, count: outputFrames * channels)
    }

    deinit { soxr_delete(soxr) }

    /// Fills `target` with up to `frames` frames, reading `file` through `chunk` (4096 frames)
    /// as needed; fewer only at the end of the file (or on a soxr error, kept in `problem`).
    func read(into target: UnsafeMutablePointer<Float>, frames: Int, from reader: SoundFileReader, chunk: inout [Float]) -> Int {
        while (fifo.count - fifoStart) / channels < frames && !flushed {
            let got = chunk.withUnsafeMutableBufferPointer { reader.read(into: $0.baseAddress!, frames: 4096) }
            var consumed = 0
            repeat {
                var inputDone = 0
                var outputDone = 0
                let failure = output.withUnsafeMutableBufferPointer { out in
                    chunk.withUnsafeBufferPointer { input in
                        got == 0
                            ? soxr_process(soxr, nil, 0, nil, out.baseAddress, outputFrames, &outputDone)
                            : soxr_process(
                                soxr, input.baseAddress! + consumed * channels, got - consumed, &inputDone, out.baseAddress,
                                outputFrames, &outputDone)
                    }
                }
                if let failure {
                    problem = NarratorError(file: file, "resampling failed (soxr: \(String(cString: failure)))")
                    flushed = true
                    break
                }
                consumed += inputDone
                let dropped = min(skip, outputDone)
                skip -= dropped
                fifo.append(contentsOf: output[(dropped * channels)..<(outputDone * channels)])
                if got == 0 {
                    if outputDone == 0 { flushed = true }
                    break
                }
                if consumed >= got && outputDone < outputFrames { break }
            } while true
        }
        let available = min(frames, (fifo.count - fifoStart) / channels)
        fifo.withUnsafeBufferPointer { source in
            target.update(from: source.baseAddress! + fifoStart, count: available * channels)
        }
        fifoStart += available * channels
        if fifoStart > 65536 {
            fifo.removeFirst(fifoStart)
            fifoStart = 0
        }
        return available
    }
}
