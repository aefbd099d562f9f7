/// The time stretcher between the mixer and the output while playback runs at a speed other
/// than 1 (pitch kept: a `TimeStretcher`, Sonic), with the block the mixer renders into for it.
/// Made by the engine, off the rendering thread, the first time a speed is asked for; then the
/// rendering thread's alone. The live engine (`OutputFeed`) and narrator.wasm's playback
/// (`Web/NarratorWasm/Exports.swift`) both play speeds through it.
///
/// The map: after each `restart`, the first frame fed is timeline frame `origin.timeline`,
/// heard at output frame `origin.output`, and timeline frame `t` is heard at output frame
/// `origin.output + round((t − origin.timeline) / speed)` (the stretcher's own account, see
/// `TimeStretcher`). The rendering thread never changes a running stretcher's speed: a new
/// speed restarts it (behind a fade), so each restart is one line of the map.
public final class SpeedStage {
    public let stretcher: TimeStretcher
    /// The most frames fed at once (and taken at once).
    public let feedFrames: Int
    /// Timeline frames the stretcher may hold back before it has made their output: what the
    /// heard frame can lag behind the frames fed.
    public let lagFrames: Int
    public let input: UnsafeMutableBufferPointer<Float>
    /// Where this stretch began (nil until the first frame is fed after a restart).
    public var origin: (output: Int, timeline: Int)?

    public init(rate: Int, channels: Int) throws(NarratorError) {
        feedFrames = 1024
        stretcher = try TimeStretcher(rate: rate, channels: channels, speed: 1, maxFeedFrames: feedFrames)
        lagFrames = stretcher.maxRequired
        input = .allocate(capacity: feedFrames * channels)
    }

    deinit { input.deallocate() }

    public var speed: Double { stretcher.speed }

    /// Drops what the stretcher holds; the next frame fed starts a new line at `speed`.
    public func restart(speed: Double) {
        // The speed was checked when it was asked for.
        try? stretcher.restart(speed: speed)
        origin = nil
    }

    /// The output frame where timeline frame `frame` is heard, by the current line (if none has
    /// begun yet, by the one that would begin at `output`, `timeline`).
    public func outputFrame(ofTimeline frame: Int, orStartingAt output: Int, _ timeline: Int) -> Int {
        let (o, t) = origin ?? (output, timeline)
        return o + TimeStretcher.outputFrame(forInput: frame - t, speed: speed)
    }

    /// The timeline frame heard at output frame `output`, by the current line (`timeline` when
    /// none has begun): where the timeline goes back to when what
    /// the stretcher holds is dropped (a restart behind a fade).
    public func timeline(atOutput output: Int, orStartingAt timeline: Int) -> Int {
        guard let (o, t) = origin else { return timeline }
        return t + stretcher.inputFrame(forOutput: output - o)
    }
}
