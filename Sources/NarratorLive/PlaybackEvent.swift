import NarratorCore

/// What live playback reports, in order, on the engine's cue thread (`PlaybackEngine`).
public enum PlaybackEvent: Sendable {
    /// Playback began: what the device agreed to and its measured output delay.
    case start(StartInfo)
    /// A cue of the schedule, delivered once its frame is heard. `at` is when its frame is heard
    /// (the audio clock's time of `cue.frame`, on the anchor it was delivered by); `delivered`
    /// is when it was handed over, a little later. For `chainEnd`, the chain's last frame.
    case cue(Cue, at: Int64, delivered: Int64)
    /// The device ran dry (or was suspended) and recovered; the timeline goes on where it was.
    case underrun(count: Int, at: Int64)
    /// A new plan took over later than it should have (the device could not take back enough
    /// of what it had been given): the old plan sounded from `wanted` to `switched`.
    case lateSwitch(wanted: Int, switched: Int, at: Int64)
    /// A streamed file could not be read; its voice plays silence.
    case streamProblem(NarratorError, at: Int64)
    /// The pause asked for is heard from `at`: silence after a short fade-out; the timeline
    /// waits at `frame` (no cue after it comes until playback resumes).
    case paused(frame: Int, at: Int64)
    /// Playback goes on from `frame`, heard from `at` (after a short fade-in).
    case resumed(frame: Int, at: Int64)
    /// The timeline jumped from frame `from` to `to`, heard at `at`; cues go on from `to`.
    case seeked(from: Int, to: Int, at: Int64)
    /// From `frame` on, heard from `at` (a speed change's fade-out done, or a resume), the
    /// timeline plays at `speed`.
    case speedChanged(speed: Double, frame: Int, at: Int64)
    /// Terminal: `cancel()` was called. `frame` is the frame being heard then.
    case canceled(frame: Int, at: Int64)
    /// Terminal: the device failed.
    case error(PlaybackError, frame: Int, at: Int64)
}

public struct StartInfo: Sendable {
    public var output: NegotiatedOutput
    /// Frames between writing a frame and hearing it, as the device reported at the start.
    public var measuredDelayFrames: Int
    /// Whether the audio thread runs with real-time priority (SCHED_FIFO).
    public var realtime: Bool
    /// When playback began (the origin of event times `t`), and when its first frame was
    /// handed to the device, in monotonic nanoseconds.
    public var startTime: Int64
    public var firstWriteTime: Int64
    /// When the schedule's frame 0 is heard: `start` is reported once that moment has passed
    /// and a fresh reading of the device confirmed the clock, and this is frame 0's time on
    /// that anchor (not on the first one the clock settled on, which can be tens of ms off).
    public var firstFrameHeardTime: Int64
}

/// How a `run` ended.
public enum PlaybackOutcome: Sendable, Equatable {
    case finished
    case canceled
    case failed(PlaybackError)
}
