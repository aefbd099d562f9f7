import CALSA
import Foundation
import NarratorCore
import NarratorLive

extension DeviceSampleFormat {
    var alsa: snd_pcm_format_t {
        switch self {
        case .s16: SND_PCM_FORMAT_S16_LE
        case .s32: SND_PCM_FORMAT_S32_LE
        case .float: SND_PCM_FORMAT_FLOAT_LE
        }
    }
}

extension DeviceFailure {
    /// From an ALSA result: a negative errno. The one place ALSA's codes are read.
    init(alsa code: Int32) {
        self.init(errno: code == Int32.min ? Int32.max : abs(code))
    }

    /// From an ALSA frame-count result (snd_pcm_sframes_t): a negative errno.
    init(alsa code: Int) {
        self.init(alsa: Int32(clamping: code))
    }
}

/// A playback PCM of libasound, opened non-blocking, with monotonic timestamps.
/// A playback PCM of libasound (hw, plughw, dmix, the pulse plugin and any other plugin),
/// opened non-blocking with monotonic timestamps: a push output. Its loop runs on the engine's
/// audio thread, writes what the feed renders whenever the device has room, reads the
/// device's delay after each write and each wait of at most a millisecond, and recovers from
/// underruns (EPIPE) and suspends (ESTRPIPE) itself.
public final class AlsaOutput: AudioOutput, @unchecked Sendable {
    // @unchecked: the PCM is used by the audio thread during `play`, and by `stop` and
    // `deinit` only after it.
    let handle: OpaquePointer
    public let negotiated: NegotiatedOutput
    public var drive: OutputDrive { .push }
    /// Whether the PCM's chain of plugins ends at a sound card (`hw`, or `plug`/`route`/`rate`
    /// over one: `snd_pcm_info` names a card), rather than at a plugin of its own (the pulse
    /// plugin, `null`, `dmix`, a file). Two things hold only for a card:
    /// - its delay is the card's pointer. A plugin's is an estimate: the pulse plugin's is the
    ///   sound server's interpolated latency, measured early by 0.2–1.3 ms and wandering about
    ///   ±1.5 ms, jumping about once a second (its timing updates), so the engine then stamps
    ///   conservatively (`AudioOutput.readingWander`: 2 ms);
    /// - a rewind takes audio back. An I/O plugin's rewind (alsa-lib's ioplug) only moves the
    ///   application pointer: what the plugin already handed on (the pulse plugin sends each
    ///   write to the server at once) is heard anyway, the new audio after it. So only a card's
    ///   chain is rewound; elsewhere a seek or a tap waits for the audio the device holds
    ///   (about the latency), as on an output that cannot rewind at all.
    /// (`dmix` names no card and is treated as a plugin: conservative.)
    let endsAtCard: Bool
    public var readingWander: Int64 { endsAtCard ? 0 : 2_000_000 }
    public var takesBack: Bool { endsAtCard }
    private let status: OpaquePointer
    /// One period of device samples, and the part of it not yet written.
    private let block: UnsafeMutableRawPointer
    private let frameBytes: Int
    private var pendingFrom = 0
    private var pendingTo = 0

    /// Opens `device` for `rate` Hz and `channels` channels, with about `latencyMs` of buffer.
    /// When the device itself will not take that rate, channel count or any of Narrator's
    /// formats, it is opened again through ALSA's `plug` converter.
    public init(device: String, rate: Int, channels: Int, latencyMs: Int) throws(PlaybackError) {
        narrator_alsa_silence_errors()
        do {
            (handle, negotiated) = try Self.open(name: device, shownAs: device, rate: rate, channels: channels, latencyMs: latencyMs)
        } catch .unsupported(_, let reason, _) where !device.hasPrefix("plug:") {
            do {
                (handle, negotiated) = try Self.open(
                    name: "plug:\"\(device)\"", shownAs: device, rate: rate, channels: channels, latencyMs: latencyMs)
            } catch .noDevice {
                throw .unsupported(device: device, reason: reason)
            }
        }
        var info: OpaquePointer?
        snd_pcm_info_malloc(&info)
        endsAtCard = snd_pcm_info(handle, info) == 0 && snd_pcm_info_get_card(info) >= 0
        snd_pcm_info_free(info)
        var status: OpaquePointer?
        snd_pcm_status_malloc(&status)
        self.status = status!
        frameBytes = negotiated.channels * negotiated.format.bytesPerSample
        block = .allocate(byteCount: negotiated.periodFrames * frameBytes, alignment: 16)
    }

    deinit {
        snd_pcm_close(handle)
        snd_pcm_status_free(status)
        block.deallocate()
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

    // MARK: The audio thread's loop (real time: no allocation, no lock of ours)

    public func play(_ feed: OutputFeed) {
        let period = negotiated.periodFrames
        while !feed.shouldStop {
            if feed.wantsStandby {
                // A long pause: the device stops (what it holds is silence) until the pause
                // ends, then starts again from an empty buffer.
                snd_pcm_drop(handle)
                pendingFrom = 0
                pendingTo = 0
                feed.released()
                while feed.wantsStandby && !feed.shouldStop {
                    feed.standingBy()
                    pause(nanoseconds: 5_000_000)
                }
                let prepared = snd_pcm_prepare(handle)
                if prepared < 0 {
                    feed.failed(DeviceFailure(alsa: prepared))
                    break
                }
                continue
            }
            if pendingFrom == pendingTo {
                let room = snd_pcm_avail_update(handle)
                if room < 0 {
                    if !recovered(DeviceFailure(alsa: Int(room)), feed) { break }
                    continue
                }
                if room == 0 {
                    // Full: a pause or a seek asked meanwhile takes back what the device holds
                    // (then there is room at once); else wait for room (at most a millisecond,
                    // so that the clock is read every millisecond and a device that stops
                    // consuming is noticed).
                    feed.takeTransportRequests()
                    if snd_pcm_avail_update(handle) > 0 { continue }
                    if case .failure(let failure) = wait(timeoutMs: 1), !recovered(failure, feed) { break }
                    reportPosition(feed)
                    continue
                }
                let rendered = feed.render(into: block, frames: min(Int(room), period))
                if rendered == 0 {
                    // Held before a frame a tap may still change, or over: look again in a
                    // millisecond.
                    reportPosition(feed)
                    pause(nanoseconds: 1_000_000)
                    continue
                }
                pendingFrom = 0
                pendingTo = rendered
            }
            let result = Int(snd_pcm_writei(handle, block + pendingFrom * frameBytes, snd_pcm_uframes_t(pendingTo - pendingFrom)))
            if result >= 0 {
                pendingFrom += result
                if result == 0, case .failure(let failure) = wait(timeoutMs: 1), !recovered(failure, feed) { break }
            } else {
                let failure = DeviceFailure(alsa: result)
                if failure == .wouldBlock {
                    if case .failure(let failure) = wait(timeoutMs: 1), !recovered(failure, feed) { break }
                } else if !recovered(failure, feed) {
                    break
                }
            }
            reportPosition(feed)
        }
        snd_pcm_drop(handle)
    }

    public func stop() { snd_pcm_drop(handle) }

    public func rewind(_ frames: Int) -> Int {
        guard endsAtCard else { return 0 }
        let possible = Int(snd_pcm_rewindable(handle))
        guard possible > 0 else { return 0 }
        return max(0, Int(snd_pcm_rewind(handle, snd_pcm_uframes_t(min(frames, possible)))))
    }

    /// Waits up to `timeoutMs` for room.
    @inline(__always)
    private func wait(timeoutMs: Int32) -> Result<Bool, DeviceFailure> {
        let result = snd_pcm_wait(handle, timeoutMs)
        return result < 0 ? .failure(DeviceFailure(alsa: result)) : .success(result > 0)
    }

    private func pause(nanoseconds: Int) {
        var spec = timespec(tv_sec: 0, tv_nsec: nanoseconds)
        nanosleep(&spec, nil)
    }

    /// Tells the feed the device's delay, and when that was true, while it plays.
    @inline(__always)
    private func reportPosition(_ feed: OutputFeed) {
        guard snd_pcm_status(handle, status) == 0, snd_pcm_status_get_state(status) == SND_PCM_STATE_RUNNING else { return }
        var stamp = timespec()
        snd_pcm_status_get_htstamp(status, &stamp)
        if stamp.tv_sec == 0 && stamp.tv_nsec == 0 {
            // alsa-lib before 1.2.5 leaves plugin (ioplug) timestamps empty: the report is
            // as of now.
            clock_gettime(CLOCK_MONOTONIC, &stamp)
        }
        feed.report(delay: Int(snd_pcm_status_get_delay(status)), at: Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec))
    }

    /// An underrun or a suspend is recovered (true; the feed is told first, and what was not
    /// yet written is written after); any other failure, or one recovery could not undo, is
    /// the feed's error (false).
    private func recovered(_ failure: DeviceFailure, _ feed: OutputFeed) -> Bool {
        guard failure.recoverable else {
            feed.failed(failure)
            return false
        }
        feed.interrupted()
        let result: Int32 = failure == .underrun ? snd_pcm_recover(handle, -EPIPE, 1) : resume()
        if result < 0 {
            // A sound server that died says so here: the underrun was only how its death
            // first showed.
            feed.failed(DeviceFailure(alsa: result))
            return false
        }
        return true
    }

    /// Resumes a suspended device for up to a second (not snd_pcm_recover's unbounded loop),
    /// then prepares it afresh.
    private func resume() -> Int32 {
        for _ in 0..<100 {
            let resumed = snd_pcm_resume(handle)
            if resumed == 0 { return 0 }
            if resumed != -EAGAIN { break }
            pause(nanoseconds: 10_000_000)
        }
        return snd_pcm_prepare(handle)
    }
}

extension PlaybackError {
    /// Opening the device failed with `failure`.
    static func opening(_ failure: DeviceFailure, device: String) -> PlaybackError {
        switch failure.errno {
        case EBUSY: .busy(device: device)
        case ENOENT: .noDevice(device: device, code: failure.name, reason: "no such ALSA device")
        case ENODEV, ENXIO: .noDevice(device: device, code: failure.name, reason: "the device is not present")
        case ECONNREFUSED: .noDevice(device: device, code: failure.name, reason: "its sound server does not answer")
        default: .noDevice(device: device, code: failure.name, reason: failure.reason)
        }
    }
}
