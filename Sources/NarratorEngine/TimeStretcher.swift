import CSonic

/// Changes the speed of speech with its pitch kept, through Sonic (libsonic, Apache-2.0: the
/// speech stretcher Android's ExoPlayer uses; the choice and its figures are in
/// docs/time-stretch.md). Streaming: interleaved `Float` frames go in with `feed`, come out
/// with `take`, `flush` ends the stream.
///
/// ## Real-time use
/// Everything is allocated in `init`: the input scratch, the map's segments, and Sonic's own
/// buffers, which `init` grows to their working size by running silence through them. After
/// that, `feed`, `take`, `setSpeed`, `flush` and the map allocate nothing, take no lock and do
/// no I/O, as long as the caller keeps the two rules `feed` states (at most `maxFeedFrames` a
/// call; feed only while at most `maxPendingFrames` output frames wait to be taken). One
/// owner: the type is not `Sendable`.
///
/// ## Which input frame each output frame is (the latency account)
/// The output starts at input frame 0 and runs at `1 / speed` output frames per input frame,
/// with no content delay: Sonic holds back up to `2 × rate / 65` input frames (two of its
/// longest pitch periods) until it can find a period, but what it has produced is the input up
/// to there, stretched, and nothing later. So, at a constant speed, output frame `n` is input
/// frame `n × speed`, and input frame `f` is heard at output frame `round(f / speed)`. Sonic
/// cuts and repeats whole pitch periods, so a sound lands within a pitch period of that line;
/// measured on the fixtures' speech, every word onset lands within 5 ms of `round(f / speed)`
/// at 0.5× and within 2.5 ms at 0.75×, 1.5× and 2× (scripts/compare-stretchers.py), and the
/// error does not grow with the length of the stream.
///
/// A speed change falls on an exact input frame `X` (every frame fed before the change) and
/// an exact output frame `C = round(P + (X − I) / oldSpeed)`, where `(I, P)` is where the
/// segment before began: input frame `f ≥ X` is heard at output frame
/// `round(C + (f − X) / newSpeed)`. The map is this chain of lines, whatever the speeds and
/// however many changes, with no estimate in it. To hold it, the new speed never reaches the
/// input Sonic still holds: the input from `X` on goes to a second, fresh Sonic stream at the
/// new speed, while the old stream gets `2 × rate / 65` frames more (so that what it holds
/// before `X` comes out) and is then flushed. The output is the old stream's up to frame `C`
/// (what it made past `C` is dropped, a shortfall is silence), then the new stream's from `C`
/// on, the first 2.5 ms cross-faded with the old stream's frames past `C`. A further change
/// waits until that hand-over is complete (`speed` is the new one at once; the map changes when
/// it applies, at the input frame reached then).
///
/// `outputFrame(forInput:)` and `inputFrame(forOutput:)` read the map; it keeps the last
/// `segmentCapacity` segments (older frames map by the oldest segment kept). `flush` ends the
/// stream; its output then runs to `round(frames / speed)` at one speed, give or take a pitch
/// period (Sonic's flush counts its own way).
public final class TimeStretcher {
    /// The speeds a stretcher takes: half to double.
    public static let speeds: ClosedRange<Double> = 0.5...2.0
    /// Segments of the map kept (one per speed change).
    public static let segmentCapacity = 64

    public let rate: Int
    public let channels: Int
    /// The most frames one `feed` takes.
    public let maxFeedFrames: Int
    /// `feed` is allowed only while at most this many output frames wait to be taken.
    public var maxPendingFrames: Int { 2 * (maxFeedFrames + maxRequired) }
    /// What Sonic holds back at most (input frames fed whose output it has not made yet): two
    /// of its longest pitch periods (`rate / 65`).
    public var maxRequired: Int { 2 * (rate / Int(SONIC_MIN_PITCH)) }
    /// The speed last asked for (as Sonic holds it: the nearest `Float`); see the type's note
    /// on when it applies.
    public private(set) var speed: Double
    /// Input frames fed so far (the timeline position of the next frame fed).
    public private(set) var inputFrames = 0
    /// Output frames taken so far.
    public private(set) var outputFrames = 0

    /// Two Sonic streams: `current` takes the input; during a hand-over the other is the old.
    private let streams: (OpaquePointer, OpaquePointer)
    private var current = 0
    /// The speed the current stream runs at (`speed` once a waiting change has applied).
    private var applied: Double
    private let scratch: UnsafeMutableBufferPointer<Float>
    private let segments: UnsafeMutablePointer<Segment>
    /// Segments ever started; the newest is at `(segmentCount - 1) % segmentCapacity`.
    private var segmentCount = 0

    /// A hand-over in progress: output frames before `cut` come from the old stream.
    private var handOver: HandOver?
    private struct HandOver {
        var cut: Int
        /// Input frames the old stream still gets before its flush.
        var oldToFeed: Int
        var oldFlushed = false
        /// Output frame of the old stream's next unread frame.
        var oldNext: Int
    }
    /// The old stream's frames from the cut on, faded out under the new stream's first ones.
    private let fade: UnsafeMutableBufferPointer<Float>
    private let fadeCapacity: Int
    private var fadeCount = 0
    private var fadePosition = 0
    /// Frames of the new stream to drop (the old one had already made them before the change).
    private var skip = 0
    /// Set by `flush`: the next input frame fed starts a segment where the flushed output ends.
    private var ended = false

    private struct Segment {
        var input: Double
        var output: Double
        var speed: Double
    }

    /// - Parameter maxFeedFrames: the most frames a `feed` call hands over (the live engine's
    ///   block); Sonic's buffers are sized for it.
    public init(rate: Int, channels: Int, speed: Double, maxFeedFrames: Int = 4096) throws(NarratorError) {
        guard (1_000...768_000).contains(rate) else {
            throw NarratorError(file: "TimeStretcher", "sample rate \(rate) Hz is outside 1000…768000")
        }
        guard (1...64).contains(channels) else {
            throw NarratorError(file: "TimeStretcher", "\(channels) channels is outside 1…64")
        }
        guard (1...1 << 20).contains(maxFeedFrames) else {
            throw NarratorError(file: "TimeStretcher", "maxFeedFrames \(maxFeedFrames) is outside 1…1048576")
        }
        try Self.check(speed)
        guard let first = sonicCreateStream(Int32(rate), Int32(channels)) else {
            throw NarratorError(file: "TimeStretcher", "libsonic could not allocate a stream")
        }
        guard let second = sonicCreateStream(Int32(rate), Int32(channels)) else {
            sonicDestroyStream(first)
            throw NarratorError(file: "TimeStretcher", "libsonic could not allocate a stream")
        }
        self.rate = rate
        self.channels = channels
        self.maxFeedFrames = maxFeedFrames
        streams = (first, second)
        self.speed = Double(Float(speed))
        applied = self.speed
        fadeCapacity = max(1, rate / 400)
        fade = .allocate(capacity: fadeCapacity * channels)
        scratch = .allocate(capacity: max(maxFeedFrames, 2 * rate / Int(SONIC_MIN_PITCH)) * channels)
        segments = .allocate(capacity: Self.segmentCapacity)
        warmUp(first)
        warmUp(second)
        sonicSetSpeed(first, Float(speed))
        segments[0] = Segment(input: 0, output: 0, speed: self.speed)
        segmentCount = 1
    }

    deinit {
        sonicDestroyStream(streams.0)
        sonicDestroyStream(streams.1)
        scratch.deallocate()
        fade.deallocate()
        segments.deallocate()
    }

    /// Throws unless `speed` is a finite number in `speeds`.
    public static func check(_ speed: Double) throws(NarratorError) {
        guard speed.isFinite, speeds.contains(speed) else {
            throw NarratorError(file: "TimeStretcher", "speed \(speed) is outside 0.5…2.0")
        }
    }

    /// Grows a Sonic stream's buffers to the most the rules of `feed` let them hold: silence
    /// at the slowest speed (the most output per input) until as much output waits as can ever
    /// wait, then a flush (which adds its own padding), then everything read back and dropped.
    private func warmUp(_ stream: OpaquePointer) {
        let most = 2 * maxPendingFrames + 2 * (maxFeedFrames + maxRequired) + 4 * maxRequired
        sonicSetSpeed(stream, Float(Self.speeds.lowerBound))
        scratch.initialize(repeating: 0)
        while Int(sonicSamplesAvailable(stream)) < most {
            guard sonicWriteFloatToStream(stream, scratch.baseAddress, Int32(maxFeedFrames)) != 0 else {
                preconditionFailure("libsonic: out of memory")
            }
        }
        sonicFlushStream(stream)
        while sonicReadFloatFromStream(stream, scratch.baseAddress, Int32(maxFeedFrames)) > 0 {}
    }

    private var stream: OpaquePointer { current == 0 ? streams.0 : streams.1 }
    private var old: OpaquePointer { current == 0 ? streams.1 : streams.0 }

    /// Output frames that `take` can hand over now.
    public var availableFrames: Int {
        let new = max(0, Int(sonicSamplesAvailable(stream)) - skip)
        guard let handOver else { return new }
        let before = max(0, handOver.cut - outputFrames)
        if !handOver.oldFlushed { return min(before, Int(sonicSamplesAvailable(old))) }
        return before + max(0, new - max(0, outputFrames - handOver.cut))
    }

    /// Output frames produced so far: taken and waiting.
    public var producedFrames: Int { outputFrames + availableFrames }

    /// Hands over `input.count / channels` interleaved frames (the next ones of the timeline).
    /// Rules (checked): at most `maxFeedFrames` frames, whole frames, and at most
    /// `maxPendingFrames` output frames waiting (take them first). Samples beyond ±1 are
    /// clipped to ±1 (Sonic works on 16-bit samples inside).
    public func feed(_ input: UnsafeBufferPointer<Float>) {
        let frames = input.count / channels
        precondition(input.count == frames * channels, "TimeStretcher.feed: not whole frames")
        precondition(frames <= maxFeedFrames, "TimeStretcher.feed: more than maxFeedFrames")
        precondition(availableFrames <= maxPendingFrames, "TimeStretcher.feed: take the output first")
        guard frames > 0 else { return }
        if ended { startAfterFlush() }
        if applied != speed { apply() }
        for k in 0..<input.count { scratch[k] = min(1, max(-1, input[k])) }
        write(stream, frames)
        if var handOver, !handOver.oldFlushed {
            let extra = min(frames, handOver.oldToFeed)
            if extra > 0 { write(old, extra) }
            handOver.oldToFeed -= extra
            if handOver.oldToFeed == 0 {
                sonicFlushStream(old)
                handOver.oldFlushed = true
            }
            self.handOver = handOver
        }
        inputFrames += frames
    }

    private func write(_ stream: OpaquePointer, _ frames: Int) {
        guard sonicWriteFloatToStream(stream, scratch.baseAddress, Int32(frames)) != 0 else {
            preconditionFailure("libsonic: out of memory")
        }
    }

    /// Copies up to `output.count / channels` waiting frames into `output`; returns how many.
    public func take(into output: UnsafeMutableBufferPointer<Float>) -> Int {
        let room = min(output.count / channels, Int(Int32.max) / channels)
        guard room > 0, let base = output.baseAddress else { return 0 }
        var taken = 0
        while taken < room {
            let at = base + taken * channels
            if var handOver {
                if outputFrames < handOver.cut {
                    // The old stream's frames up to the cut (silence for what it did not make).
                    let want = min(room - taken, handOver.cut - outputFrames)
                    var n = Int(sonicReadFloatFromStream(old, at, Int32(want)))
                    if n <= 0 {
                        guard handOver.oldFlushed else { break }
                        n = want
                        at.initialize(repeating: 0, count: n * channels)
                    }
                    handOver.oldNext += max(0, n)
                    self.handOver = handOver
                    outputFrames += n
                    taken += n
                    continue
                }
                guard handOver.oldFlushed else { break }
                // From the cut on: the old stream's next frames (up to 2.5 ms) fade out under
                // the new one's; the rest of the old stream is dropped.
                fadeCount = 0
                fadePosition = 0
                if handOver.oldNext == outputFrames {
                    fadeCount = max(0, Int(sonicReadFloatFromStream(old, fade.baseAddress, Int32(fadeCapacity))))
                }
                while sonicReadFloatFromStream(old, scratch.baseAddress, Int32(scratch.count / channels)) > 0 {}
                skip = outputFrames - handOver.cut
                self.handOver = nil
                continue
            }
            if skip > 0 {
                let n = Int(sonicReadFloatFromStream(stream, scratch.baseAddress, Int32(min(skip, scratch.count / channels))))
                if n <= 0 { break }
                skip -= n
                continue
            }
            let n = Int(sonicReadFloatFromStream(stream, at, Int32(room - taken)))
            if n <= 0 { break }
            var k = 0
            while fadePosition < fadeCount && k < n {
                let w = Float(fadePosition + 1) / Float(fadeCount + 1)
                for c in 0..<channels {
                    at[k * channels + c] = fade[fadePosition * channels + c] * (1 - w) + at[k * channels + c] * w
                }
                fadePosition += 1
                k += 1
            }
            outputFrames += n
            taken += n
        }
        return taken
    }

    /// Ends the stream: what Sonic still holds is stretched and waits to be taken. Feeding
    /// again afterwards continues the timeline (a new passage, with no fade into it): its
    /// first frame is heard right after the last frame of the flushed output, and the map gets
    /// a segment there (input `inputFrames`, output every frame produced by then).
    public func flush() {
        ended = true
        if var handOver, !handOver.oldFlushed {
            sonicFlushStream(old)
            handOver.oldFlushed = true
            self.handOver = handOver
        }
        sonicFlushStream(stream)
    }

    private func startAfterFlush() {
        ended = false
        let produced = Double(producedFrames)
        let last = segments[(segmentCount - 1) % Self.segmentCapacity]
        if Double(inputFrames) == last.input {
            segments[(segmentCount - 1) % Self.segmentCapacity].output = produced
        } else {
            segments[segmentCount % Self.segmentCapacity] = Segment(input: Double(inputFrames), output: produced, speed: applied)
            segmentCount += 1
        }
    }

    /// Drops everything fed and not yet taken, in both streams, and starts over at `newSpeed`:
    /// the next frame fed is input frame 0 again, heard at output frame 0 (the map has one
    /// segment). What a live player does when the timeline moves under it (a pause, a seek,
    /// audio taken back from the device). Real time: nothing allocates (the flush and the
    /// drain stay within the sizes `init` grew).
    public func restart(speed newSpeed: Double) throws(NarratorError) {
        try Self.check(newSpeed)
        drain(streams.0)
        drain(streams.1)
        current = 0
        handOver = nil
        skip = 0
        fadeCount = 0
        fadePosition = 0
        ended = false
        inputFrames = 0
        outputFrames = 0
        speed = Double(Float(newSpeed))
        applied = speed
        sonicSetSpeed(streams.0, Float(speed))
        segments[0] = Segment(input: 0, output: 0, speed: speed)
        segmentCount = 1
    }

    private func drain(_ stream: OpaquePointer) {
        sonicFlushStream(stream)
        while sonicReadFloatFromStream(stream, scratch.baseAddress, Int32(scratch.count / channels)) > 0 {}
    }

    /// Changes the speed from the next input frame fed on (see the type's note on the map:
    /// during the hand-over of an earlier change, this one waits for it).
    public func setSpeed(_ newSpeed: Double) throws(NarratorError) {
        try Self.check(newSpeed)
        speed = Double(Float(newSpeed))
        if speed != applied { apply() }
    }

    /// Puts `speed` into effect at input frame `inputFrames`, unless a hand-over is under
    /// way: with nothing fed since the last segment began, the current stream just changes
    /// speed; otherwise the other stream takes over from here.
    private func apply() {
        guard handOver == nil, skip == 0, fadePosition >= fadeCount else { return }
        let last = segments[(segmentCount - 1) % Self.segmentCapacity]
        if Double(inputFrames) == last.input {
            sonicSetSpeed(stream, Float(speed))
            segments[(segmentCount - 1) % Self.segmentCapacity].speed = speed
        } else {
            let cut = Self.frame(last.output + (Double(inputFrames) - last.input) / last.speed)
            handOver = HandOver(cut: cut, oldToFeed: maxRequired, oldNext: outputFrames)
            current = 1 - current
            sonicSetSpeed(stream, Float(speed))
            segments[segmentCount % Self.segmentCapacity] = Segment(
                input: Double(inputFrames), output: Double(cut), speed: speed)
            segmentCount += 1
        }
        applied = speed
    }

    /// The output frame where input (timeline) frame `frame` is heard.
    public func outputFrame(forInput frame: Int) -> Int {
        let f = Double(frame)
        var segment = segments[(segmentCount - 1) % Self.segmentCapacity]
        for back in 0..<min(segmentCount, Self.segmentCapacity) {
            segment = segments[(segmentCount - 1 - back) % Self.segmentCapacity]
            if f >= segment.input { break }
        }
        return Self.frame(segment.output + (f - segment.input) / segment.speed)
    }

    /// The input (timeline) frame that output frame `frame` plays.
    public func inputFrame(forOutput frame: Int) -> Int {
        let n = Double(frame)
        var segment = segments[(segmentCount - 1) % Self.segmentCapacity]
        for back in 0..<min(segmentCount, Self.segmentCapacity) {
            segment = segments[(segmentCount - 1 - back) % Self.segmentCapacity]
            if n >= segment.output { break }
        }
        return Self.frame(segment.input + (n - segment.output) * segment.speed)
    }

    /// Where input frame `frame` is heard in a stream stretched at one `speed` from its start:
    /// `round(frame / speed)`, the map of a stretcher whose speed never changed.
    public static func outputFrame(forInput frame: Int, speed: Double) -> Int {
        Self.frame(Double(frame) / Double(Float(speed)))
    }

    private static func frame(_ value: Double) -> Int {
        // 2^62 natively; 2^30 − 1 where Int has 32 bits (wasm32), whose 1 << 62 is 0.
        let limit = Double(Int.max >> 1)
        return Int(min(limit, max(-limit, value.rounded())))
    }
}

/// A whole stream stretched at one speed (an offline render: `narrator render --speed`,
/// narrator.wasm's `render({speed})`): each block of the stream goes to `feed` in order, then
/// `finish`; `write` gets the stretched output block by block, exactly
/// `TimeStretcher.outputFrame(forInput: frames, speed: speed)` frames in all (Sonic's last few
/// frames past that are cut, or silence added), so timeline frame `f` is heard at output frame
/// `TimeStretcher.outputFrame(forInput: f, speed: speed)`.
public final class StretchedStream {
    public let total: Int
    public private(set) var written = 0
    private let stretcher: TimeStretcher
    private let block: UnsafeMutableBufferPointer<Float>
    private let channels: Int
    private let blockFrames: Int

    /// Blocks fed are at most `blockFrames`, and so are those written.
    public init(frames: Int, rate: Int, channels: Int, speed: Double, blockFrames: Int) throws(NarratorError) {
        total = TimeStretcher.outputFrame(forInput: frames, speed: speed)
        stretcher = try TimeStretcher(rate: rate, channels: channels, speed: speed, maxFeedFrames: blockFrames)
        block = .allocate(capacity: blockFrames * channels)
        self.channels = channels
        self.blockFrames = blockFrames
    }

    deinit { block.deallocate() }

    public func feed(
        _ samples: UnsafeBufferPointer<Float>, write: (UnsafeBufferPointer<Float>, Int) throws(NarratorError) -> Void
    ) throws(NarratorError) {
        stretcher.feed(samples)
        try drain(write)
    }

    public func finish(write: (UnsafeBufferPointer<Float>, Int) throws(NarratorError) -> Void) throws(NarratorError) {
        stretcher.flush()
        try drain(write)
        block.initialize(repeating: 0)
        while written < total {
            let count = min(blockFrames, total - written)
            try write(UnsafeBufferPointer(rebasing: block[0..<(count * channels)]), count)
            written += count
        }
    }

    private func drain(_ write: (UnsafeBufferPointer<Float>, Int) throws(NarratorError) -> Void) throws(NarratorError) {
        while true {
            let taken = stretcher.take(into: block)
            if taken == 0 { return }
            let keep = min(taken, total - written)
            if keep > 0 {
                try write(UnsafeBufferPointer(rebasing: block[0..<(keep * channels)]), keep)
                written += keep
            }
        }
    }
}
