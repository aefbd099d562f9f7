import CALSA
import Foundation
import NarratorCore

/// The sample formats Narrator writes to a device, in order of preference.
public enum DeviceSampleFormat: String, Sendable {
    case s16, s32, float

    var alsa: snd_pcm_format_t {
        switch self {
        case .s16: SND_PCM_FORMAT_S16_LE
        case .s32: SND_PCM_FORMAT_S32_LE
        case .float: SND_PCM_FORMAT_FLOAT_LE
        }
    }

    var bytesPerSample: Int { self == .s16 ? 2 : 4 }
}

/// What the device agreed to.
public struct NegotiatedOutput: Sendable, Equatable {
    /// The device as opened (`plug:` is prefixed when ALSA's converter had to step in).
    public var device: String
    public var sampleRate: Int
    public var channels: Int
    public var format: DeviceSampleFormat
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

/// Why a device call did not do what was asked: ALSA's negative errno, mapped once where the
/// device answers (`AlsaPCM`, or a test's double) so that nothing past it reads raw codes.
/// A plain enum: building, comparing and storing one allocates nothing (audio-thread safe).
@_spi(Testing) public enum DeviceFailure: Error, Equatable, Sendable {
    /// EPIPE: the device ran dry.
    case underrun
    /// ESTRPIPE: the system suspended the device.
    case suspended
    /// EAGAIN: no room now (the device is opened non-blocking).
    case wouldBlock
    /// The device went away: EIO (a sound server died), ENODEV/ENXIO (unplugged), ENOTTY,
    /// EBADFD, ESHUTDOWN. The errno is positive.
    case deviceLost(Int32)
    /// Any other errno (positive).
    case other(Int32)

    /// From an ALSA result: a negative errno.
    public init(alsa code: Int32) {
        self.init(errno: code == Int32.min ? Int32.max : abs(code))
    }

    /// From an ALSA frame-count result (snd_pcm_sframes_t): a negative errno.
    public init(alsa code: Int) {
        self.init(alsa: Int32(clamping: code))
    }

    /// From a positive errno.
    public init(errno: Int32) {
        switch errno {
        case EPIPE: self = .underrun
        case ESTRPIPE: self = .suspended
        case EAGAIN: self = .wouldBlock
        case EIO, ENODEV, ENXIO, ENOTTY, EBADFD, ESHUTDOWN: self = .deviceLost(errno)
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

    /// Whether `recover` can bring the device back (underrun or suspend).
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
        case ENOENT: "ENOENT"
        case EBUSY: "EBUSY"
        case EPIPE: "EPIPE"
        case ESTRPIPE: "ESTRPIPE"
        case EAGAIN: "EAGAIN"
        case ECONNREFUSED: "ECONNREFUSED"
        case ETIMEDOUT: "ETIMEDOUT"
        default: "E\(errno)"
        }
    }

    /// The system's words for it.
    public var reason: String { String(cString: strerror(errno)) }
}

/// What the audio thread needs of a playback device. `AlsaPCM` is the real one; tests may
/// supply a double. Every call is made from the audio thread and must not allocate or block
/// beyond `wait`. Failures come back as `DeviceFailure`, mapped where the device answers.
@_spi(Testing) public protocol PCMDevice: AnyObject {
    var output: NegotiatedOutput { get }
    /// Writes up to `frames` interleaved frames: the count written (0 or `.wouldBlock` when
    /// full), or why not.
    func write(_ samples: UnsafeRawPointer, frames: Int) -> Result<Int, DeviceFailure>
    /// Waits up to `timeoutMs` for room: true when there is room, false on timeout.
    func wait(timeoutMs: Int32) -> Result<Bool, DeviceFailure>
    /// Whether the device is playing, its delay (frames written but not yet heard) and the
    /// monotonic time (ns) that was true; nil if it cannot say.
    func read() -> PCMReading?
    /// Recovers from `.underrun` or `.suspended`: nil on success, else why it could not.
    func recover(_ failure: DeviceFailure) -> DeviceFailure?
    /// Takes back up to `frames` written but not yet played: the count taken back (0 when the
    /// device cannot, or fails to).
    func rewind(_ frames: Int) -> Int
    /// Stops at once, dropping what is buffered.
    func drop()
}

@_spi(Testing) public struct PCMReading: Sendable {
    public var running: Bool
    public var delay: Int
    public var time: Int64

    public init(running: Bool, delay: Int, time: Int64) {
        self.running = running
        self.delay = delay
        self.time = time
    }
}

/// A playback PCM of libasound, opened non-blocking, with monotonic timestamps.
final class AlsaPCM: PCMDevice {
    let handle: OpaquePointer
    let output: NegotiatedOutput
    private let status: OpaquePointer

    /// Opens `device` for `rate` Hz and `channels` channels, with about `latencyMs` of buffer.
    /// When the device itself will not take that rate, channel count or any of Narrator's
    /// formats, it is opened again through ALSA's `plug` converter.
    init(device: String, rate: Int, channels: Int, latencyMs: Int) throws(PlaybackError) {
        narrator_alsa_silence_errors()
        do {
            (handle, output) = try Self.open(name: device, shownAs: device, rate: rate, channels: channels, latencyMs: latencyMs)
        } catch .unsupported(_, let reason) where !device.hasPrefix("plug:") {
            do {
                (handle, output) = try Self.open(
                    name: "plug:\"\(device)\"", shownAs: device, rate: rate, channels: channels, latencyMs: latencyMs)
            } catch .noDevice {
                throw .unsupported(device: device, reason: reason)
            }
        }
        var status: OpaquePointer?
        snd_pcm_status_malloc(&status)
        self.status = status!
    }

    deinit {
        snd_pcm_close(handle)
        snd_pcm_status_free(status)
    }

    private static func open(
        name: String, shownAs device: String, rate: Int, channels: Int, latencyMs: Int
    ) throws(PlaybackError) -> (OpaquePointer, NegotiatedOutput) {
        var pcm: OpaquePointer?
        let opened = snd_pcm_open(&pcm, name, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK)
        guard opened == 0, let pcm else { throw .opening(DeviceFailure(alsa: opened), device: device) }
        do {
            var output = try configure(pcm, name: name, device: device, rate: rate, channels: channels, latencyMs: latencyMs)
            if name != device { output.device = "plug:\(device)" }
            return (pcm, output)
        } catch {
            snd_pcm_close(pcm)
            throw error
        }
    }

    private static func configure(
        _ pcm: OpaquePointer, name: String, device: String, rate: Int, channels: Int, latencyMs: Int
    ) throws(PlaybackError) -> NegotiatedOutput {
        func check(_ result: Int32, _ what: String) throws(PlaybackError) {
            if result < 0 {
                throw .unsupported(device: device, reason: "\(what): \(String(cString: snd_strerror(result)))")
            }
        }
        var hw: OpaquePointer?
        snd_pcm_hw_params_malloc(&hw)
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(pcm, hw), "no configuration")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "interleaved access")
        guard let format = [DeviceSampleFormat.s16, .s32, .float].first(where: { snd_pcm_hw_params_test_format(pcm, hw, $0.alsa) == 0 })
        else { throw .unsupported(device: device, reason: "takes none of 16-bit, 32-bit or float samples") }
        try check(snd_pcm_hw_params_set_format(pcm, hw, format.alsa), "sample format")
        try check(snd_pcm_hw_params_set_channels(pcm, hw, UInt32(channels)), "\(channels) channels")
        try check(snd_pcm_hw_params_set_rate_resample(pcm, hw, 1), "rate conversion")
        try check(snd_pcm_hw_params_set_rate(pcm, hw, UInt32(rate), 0), "\(rate) Hz")
        // The buffer holds the latency; four periods of it keep the device fed with room to spare.
        var bufferTime = UInt32(max(latencyMs, 1) * 1000)
        var dir: Int32 = 0
        try check(snd_pcm_hw_params_set_buffer_time_near(pcm, hw, &bufferTime, &dir), "\(latencyMs) ms buffer")
        var periodTime = bufferTime / 4
        try check(snd_pcm_hw_params_set_period_time_near(pcm, hw, &periodTime, &dir), "period")
        try check(snd_pcm_hw_params(pcm, hw), "hardware parameters")
        var period: snd_pcm_uframes_t = 0
        var buffer: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_period_size(hw, &period, &dir)
        snd_pcm_hw_params_get_buffer_size(hw, &buffer)

        var sw: OpaquePointer?
        snd_pcm_sw_params_malloc(&sw)
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(pcm, sw), "software parameters")
        // Start once the buffer is full: the first frame is then heard one buffer after it
        // was written, and the device never starts on a trickle.
        try check(snd_pcm_sw_params_set_start_threshold(pcm, sw, buffer), "start threshold")
        try check(snd_pcm_sw_params_set_avail_min(pcm, sw, period), "wake-up threshold")
        try check(snd_pcm_sw_params_set_tstamp_mode(pcm, sw, SND_PCM_TSTAMP_ENABLE), "timestamps")
        try check(snd_pcm_sw_params_set_tstamp_type(pcm, sw, SND_PCM_TSTAMP_TYPE_MONOTONIC), "monotonic timestamps")
        try check(snd_pcm_sw_params(pcm, sw), "software parameters")
        return NegotiatedOutput(
            device: name, sampleRate: rate, channels: channels, format: format, periodFrames: Int(period),
            bufferFrames: Int(buffer))
    }

    // MARK: Real-time calls: no allocation, no lock of ours.

    /// Waits up to `timeoutMs` for room: true when there is room, false on timeout.
    @inline(__always)
    func wait(timeoutMs: Int32) -> Result<Bool, DeviceFailure> {
        let result = snd_pcm_wait(handle, timeoutMs)
        return result < 0 ? .failure(DeviceFailure(alsa: result)) : .success(result > 0)
    }

    /// Writes up to `frames` interleaved frames: the count written, or why not.
    @inline(__always)
    func write(_ samples: UnsafeRawPointer, frames: Int) -> Result<Int, DeviceFailure> {
        let result = Int(snd_pcm_writei(handle, samples, snd_pcm_uframes_t(frames)))
        return result < 0 ? .failure(DeviceFailure(alsa: result)) : .success(result)
    }

    /// The device's state, its delay (frames written but not yet heard) and when that was true.
    @inline(__always)
    func read() -> PCMReading? {
        guard snd_pcm_status(handle, status) == 0 else { return nil }
        var stamp = timespec()
        snd_pcm_status_get_htstamp(status, &stamp)
        if stamp.tv_sec == 0 && stamp.tv_nsec == 0 {
            // alsa-lib before 1.2.5 leaves plugin (ioplug) timestamps empty: the report is
            // as of now.
            clock_gettime(CLOCK_MONOTONIC, &stamp)
        }
        let state = snd_pcm_status_get_state(status)
        return PCMReading(
            running: state == SND_PCM_STATE_RUNNING, delay: Int(snd_pcm_status_get_delay(status)),
            time: Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec))
    }

    /// Recovers from an underrun or a suspend; any other failure comes back. A suspended
    /// device is resumed for up to a second (not snd_pcm_recover's unbounded loop), then
    /// prepared afresh.
    func recover(_ failure: DeviceFailure) -> DeviceFailure? {
        let result: Int32
        switch failure {
        case .underrun:
            result = snd_pcm_recover(handle, -EPIPE, 1)
        case .suspended:
            result = resume()
        default:
            return failure
        }
        return result == 0 ? nil : result < 0 ? DeviceFailure(alsa: result) : failure
    }

    private func resume() -> Int32 {
        for _ in 0..<100 {
            let resumed = snd_pcm_resume(handle)
            if resumed == 0 { return 0 }
            if resumed != -EAGAIN { break }
            var pause = timespec(tv_sec: 0, tv_nsec: 10_000_000)
            nanosleep(&pause, nil)
        }
        return snd_pcm_prepare(handle)
    }

    func rewind(_ frames: Int) -> Int {
        let possible = Int(snd_pcm_rewindable(handle))
        guard possible > 0 else { return 0 }
        return max(0, Int(snd_pcm_rewind(handle, snd_pcm_uframes_t(min(frames, possible)))))
    }

    /// Stops at once, dropping what is buffered.
    func drop() { snd_pcm_drop(handle) }
}
