#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where live playback's audio goes: a sound card through ALSA, a sound server, or a virtual
/// device whose clock a test advances. The engine (`PlaybackEngine`) owns everything that is the
/// same on every output (the plan, the mixer, the audio clock, cue delivery); an output only
/// moves samples and says when they are heard.
///
/// Two kinds of backend fit:
/// - **push** (ALSA): the engine calls `play(_:)` on an audio thread it created, with its
///   scheduling policy set; the output loops there, asking the feed for frames when the
///   device has room, until `feed.shouldStop`, then drops what it holds and returns.
/// - **pull** (PulseAudio's write callback, PipeWire's `pw_stream`, CoreAudio's render
///   callback): `play(_:)` starts the stream and returns at once; the stream's own callback
///   calls `feed.render` for the frames it wants. No thread of the engine's is involved, and
///   the feed allocates nothing, so the callback needs no extra thread and no allocation.
///
/// What the engine promises an output:
/// - `render` fills exactly the frames it returns, interleaved in `negotiated.format` at
///   `negotiated.sampleRate`, allocating nothing, taking no lock and reading no file; it may
///   return fewer frames than asked, down to none, while the plan holds before a frame that a
///   tap may still change (then ask again within a millisecond or two: a push output sleeps
///   a millisecond, a pull output asks on its next callback).
/// - `render` and `takeTransportRequests` call `rewind` only from inside themselves, so a
///   backend never sees one concurrently with its own writes.
/// - `stop()` is called once, after `play`, from another thread (a push output's loop has seen
///   `shouldStop` by then or will on its next turn).
///
/// What an output must report, from the thread that renders:
/// - `feed.report(delay:at:)` whenever it learns the device's position (after each write and
///   each wait of a push loop; from the stream's timing information in a callback), at least
///   every few milliseconds while running: of all the frames rendered so far, `delay` are not
///   heard yet at monotonic time `at`. Only while the device is actually playing.
/// - `feed.interrupted()` when the device ran dry or was suspended, before recovering (what was
///   heard is forgotten; the clock settles again).
/// - `feed.failed(_:)` when the device is gone or recovery failed, mapping its library's error
///   to a `DeviceFailure` (an errno) once, at its own boundary. The output then stops.
///
/// What an output must do so that a pause, a seek or a gain change is heard within a period:
/// - call `feed.takeTransportRequests()` at least every millisecond or two while it waits
///   for room (a push loop's wait, a pull output's timer), so that the feed can take back
///   what the output holds (`rewind`) as soon as the caller asks, not a period later;
/// - after that, render what was taken back at once (a pull output counts it as room);
/// - say in `rewindMarginFrames` how close to what is heard it can still take audio back.
public protocol AudioOutput: AnyObject, Sendable {
    /// What the device agreed to; the engine renders in exactly this format.
    var negotiated: NegotiatedOutput { get }
    /// Who calls `feed.render`: the engine's audio thread (push) or the output's own callback
    /// (pull).
    var drive: OutputDrive { get }
    /// Push: plays on the calling thread until `feed.shouldStop`, then drops what the device
    /// holds and returns. Pull: starts the stream and returns; a failure to start is reported
    /// through `feed.failed`.
    func play(_ feed: OutputFeed)
    /// Takes back up to `frames` frames rendered but not yet heard, so that a new plan can
    /// replace them: the count taken back (0 when the output cannot). Called from inside
    /// `feed.render`.
    func rewind(_ frames: Int) -> Int
    /// Stops at once, dropping what is buffered; a pull output returns once no callback runs.
    func stop()
    /// A pull output: whether the thread its library renders on runs at real-time priority
    /// (the engine reports it in `start`). A push output renders on the engine's own thread.
    var rendersInRealtime: Bool { get }
    /// How close to the frame heard now a `rewind` may still reach without taking back what
    /// the device is already fetching: the feed asks to take back only what lies beyond it.
    /// By default a period (a device whose position is known to a period); an output whose
    /// `rewind` bounds itself by what its device cannot have read yet says less.
    var rewindMarginFrames: Int { get }
    /// How far the device's readings may wander around the truth, in nanoseconds (0: they do
    /// not; a delay that is a plugin's estimate, not a card's pointer, does): the engine then
    /// stamps a frame no earlier than the latest any reading of the last 1.5 s put it, and
    /// this much later than the readings say until it has 1.5 s of them (`AudioClockFilter`'s
    /// envelope), so that a cue is late by up to the wander rather than early.
    var readingWander: Int64 { get }
    /// While streamed voices refill after a move (their feeder reads the file from the new
    /// place), how much audio past what is heard the device must still hold to play on without
    /// running dry: the feed writes silence to keep that much queued, and the move's audio
    /// follows it. By default the rewind margin and 2 ms; an output whose server reads ahead
    /// in blocks adds its block (too little, and a slow refill is an underrun). Called from
    /// inside `feed.render`.
    var refillLeadFrames: Int { get }
    /// Whether `rewind` really takes audio back (what it returns is not heard). An output that
    /// cannot makes every change wait for what it holds: a response (a tap's answer) is then
    /// planned past its buffer rather than taken back into it.
    var takesBack: Bool { get }
}

extension AudioOutput {
    public func rewind(_ frames: Int) -> Int { 0 }
    public var rendersInRealtime: Bool { false }
    public var rewindMarginFrames: Int { negotiated.periodFrames }
    public var readingWander: Int64 { 0 }
    public var refillLeadFrames: Int { rewindMarginFrames + negotiated.sampleRate / 500 }
    public var takesBack: Bool { false }
}

/// Who drives an output's rendering.
public enum OutputDrive: Sendable {
    /// The engine's audio thread calls `play`, which loops.
    case push
    /// The output's callback calls `render`; `play` only starts it.
    case pull
}

/// The sample formats Narrator renders for a device, in order of preference.
public enum DeviceSampleFormat: String, Sendable {
    case s16, s32, float

    public var bytesPerSample: Int { self == .s16 ? 2 : 4 }
}

/// What the device agreed to.
public struct NegotiatedOutput: Sendable, Equatable {
    /// The device as opened (for ALSA, `plug:` is prefixed when its converter had to step in).
    public var device: String
    public var sampleRate: Int
    public var channels: Int
    public var format: DeviceSampleFormat
    /// How many frames the device takes at a time, and holds at most.
    public var periodFrames: Int
    public var bufferFrames: Int

    public init(device: String, sampleRate: Int, channels: Int, format: DeviceSampleFormat, periodFrames: Int, bufferFrames: Int) {
        self.device = device
        self.sampleRate = sampleRate
        self.channels = channels
        self.format = format
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
    }
}

/// Why a device call did not do what was asked, as an errno: each backend maps its library's
/// codes to one of these once, where the library answers, so that nothing past it reads raw
/// codes. A plain enum: building, comparing and storing one allocates nothing (audio-thread
/// safe).
public enum DeviceFailure: Error, Equatable, Sendable {
    /// EPIPE: the device ran dry.
    case underrun
    /// ESTRPIPE: the system suspended the device.
    case suspended
    /// EAGAIN: no room now.
    case wouldBlock
    /// The device went away: EIO (a sound server died), ENODEV/ENXIO (unplugged), ENOTTY,
    /// EBADFD, ESHUTDOWN, ECONNRESET. The errno is positive.
    case deviceLost(Int32)
    /// Any other errno (positive).
    case other(Int32)

    /// From a positive errno.
    public init(errno: Int32) {
        switch errno {
        case EPIPE: self = .underrun
        case ESTRPIPE: self = .suspended
        case EAGAIN: self = .wouldBlock
        case EIO, ENODEV, ENXIO, ENOTTY, EBADFD, ESHUTDOWN, ECONNRESET: self = .deviceLost(errno)
        default: self = .other(errno)
        }
    }

    /// The positive errno it stands for.
    public var errno: Int32 {
        switch self {
        case .underrun: EPIPE
        case .suspended: ESTRPIPE
        case .wouldBlock: EAGAIN
        case .deviceLost(let code), .other(let code): code
        }
    }

    /// Whether the device can be brought back (underrun or suspend).
    public var recoverable: Bool { self == .underrun || self == .suspended }

    /// The errno's name, as the `error` event's `code` gives it.
    public var name: String {
        switch errno {
        case EIO: "EIO"
        case ENODEV: "ENODEV"
        case ENXIO: "ENXIO"
        case ENOTTY: "ENOTTY"
        case EBADFD: "EBADFD"
        case ESHUTDOWN: "ESHUTDOWN"
        case ECONNRESET: "ECONNRESET"
        case ENOENT: "ENOENT"
        case EBUSY: "EBUSY"
        case EPIPE: "EPIPE"
        case ESTRPIPE: "ESTRPIPE"
        case EAGAIN: "EAGAIN"
        case ECONNREFUSED: "ECONNREFUSED"
        case ETIMEDOUT: "ETIMEDOUT"
        case EINVAL: "EINVAL"
        case EACCES: "EACCES"
        default: "E\(errno)"
        }
    }

    /// The system's words for it.
    public var reason: String { String(cString: strerror(errno)) }
}
