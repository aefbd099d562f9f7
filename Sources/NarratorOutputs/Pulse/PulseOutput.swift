import CPulse
import CPulseLoader
import Foundation
import NarratorCore
import NarratorLive
import Synchronization

extension DeviceFailure {
    /// From a PulseAudio error code (`pa_context_errno`, PA_ERR_*): the one place libpulse's
    /// codes are read. A server that dies or closes the connection is EIO, as ALSA's pulse
    /// plugin reports it; a stream the server kills (its sink went away) is ENODEV.
    init(pulse code: Int32) {
        func is_(_ error: pa_error_code) -> Bool { code == Int32(error.rawValue) }
        let errno: Int32 =
            if is_(PA_ERR_ACCESS) || is_(PA_ERR_AUTHKEY) { EACCES }
            else if is_(PA_ERR_INVALID) || is_(PA_ERR_INVALIDSERVER) { EINVAL }
            else if is_(PA_ERR_EXIST) { EEXIST }
            else if is_(PA_ERR_NOENTITY) { ENOENT }
            else if is_(PA_ERR_CONNECTIONREFUSED) { ECONNREFUSED }
            else if is_(PA_ERR_COMMAND) || is_(PA_ERR_PROTOCOL) || is_(PA_ERR_VERSION) { EPROTO }
            else if is_(PA_ERR_TIMEOUT) { ETIMEDOUT }
            else if is_(PA_ERR_KILLED) { ENODEV }
            else if is_(PA_ERR_BADSTATE) || is_(PA_ERR_FORKED) { EBADFD }
            else if is_(PA_ERR_NODATA) { ENODATA }
            else if is_(PA_ERR_TOOLARGE) { E2BIG }
            else if is_(PA_ERR_NOTSUPPORTED) || is_(PA_ERR_NOEXTENSION) || is_(PA_ERR_OBSOLETE) { EOPNOTSUPP }
            else if is_(PA_ERR_NOTIMPLEMENTED) { ENOSYS }
            else if is_(PA_ERR_BUSY) { EBUSY }
            // CONNECTIONTERMINATED, IO, INTERNAL, MODINITFAILED, UNKNOWN, and anything newer.
            else { EIO }
        self.init(errno: errno)
    }
}

/// A playback stream of a PulseAudio server (or PipeWire's pulse server) through libpulse: a
/// pull output. libpulse's threaded mainloop runs the stream; its callbacks render straight
/// into the server's shared memory and report the server's own timing. No thread of ours.
///
/// - Format: 16-bit little-endian at the schedule's rate and channels, which a sink of the
///   same rate plays unchanged (the recording equals the render sample for sample).
/// - Buffer: `PA_STREAM_ADJUST_LATENCY` with `tlength` = `--latency`, so that the whole path
///   (our queue on the server and the sink's own buffer) holds about `--latency`, as ALSA's
///   buffer does, and `minreq` (the period: the server asks for audio in such steps) 3/10 of
///   it. The server then sizes the sink's block (its configured latency, what it reads of the
///   stream at a time and cannot give back) as `tlength`/2 − `minreq`: a fifth of the latency,
///   whatever the sink's default (up to 2 s on a timer-scheduled card). A pause or a seek is
///   heard after at most that block, the margin and the fade: within a period and the fade.
///   (With `minreq` a quarter, as ALSA's periods, the block was a whole period.)
/// - Clock: the server's timing snapshots (`pa_stream_update_timing_info`), requested every
///   `tick` (1 ms) from a timerfd in the mainloop: heard = read index − the sink's latency,
///   at the snapshot's own timestamp (taken by the server as it answered, on CLOCK_REALTIME,
///   converted to CLOCK_MONOTONIC). PipeWire's pulse server moves that frame once per graph
///   cycle only: `SteppedTimingReports` places its steps and reads the clock between them. Neither `AUTO_TIMING_UPDATE` (libpulse's own requests, at
///   10 ms to 1.5 s) nor `INTERPOLATE_TIMING` (a smoother answering "now" from a fitted line,
///   which would hide a stalled server from the engine's freshness check): every report is a
///   fresh reading, made only while the server says the stream plays. (Not after each write:
///   a write says nothing new about what was heard, and a repeated reading would weigh twice
///   in the engine's filter.) The timestamp is the server's when the two clocks agree (the
///   same machine), else libpulse's estimate (the request's time plus half the round trip).
/// - Holds: when the feed renders fewer frames than the server asked for, the same tick asks
///   again within 1 ms (the server itself would not before its buffer drains to `minreq`).
/// - Rewind: a relative seek back on the next write, bounded by what the sink cannot yet have
///   read: past the latest report's read index, or past each block the sink has read (or is
///   about to read) since (`firstUnread`). Data the sink has read is beyond recall (a seek before
///   the read index would lose frames: the sink plays what it read). A seek
///   does not truncate: the frames taken back stay on the server past its write index until
///   overwritten. None of them plays: the server reads no further than its write index (a
///   stream with `prebuf`, ours, underruns there; PulseAudio's memblockq, checked in its
///   source and on the recording). So a take-back the feed writes less after (it holds) leaves
///   at worst a gap, and one it writes nothing after is sent at once (`sendTakeBack`).
/// - Troubles: an underflow, a suspended sink or a stream moved to another sink is
///   `feed.interrupted()` (the server restarts the stream itself once it has `prebuf`); a
///   context or stream that fails (a server that died) is `feed.failed`, at once.
public final class PulseOutput: AudioOutput, @unchecked Sendable {
    // @unchecked: everything mutable lives in `connection`, used under the mainloop's lock.
    public let negotiated: NegotiatedOutput
    public var drive: OutputDrive { .pull }
    private let connection: PulseConnection

    /// The hint for choosing another sink, in error messages.
    static let lister = "pactl list short sinks"

    /// Connects to the server named by PULSE_SERVER (or the default one) and opens a stream on
    /// `device`, a sink's name (nil or "default": the server's default sink), for `rate` Hz and
    /// `channels` channels with about `latencyMs` of buffer. The mainloop thread runs with
    /// `policy` (set on it explicitly: it would otherwise inherit the caller's).
    public init(device: String?, rate: Int, channels: Int, latencyMs: Int, policy: ThreadPolicy = .normal) throws(PlaybackError) {
        let shown = device ?? "default"
        let sink = device == nil || device == "default" ? nil : device
        // libpulse is loaded here, by the first pulse output, not at process start.
        if let failure = narrator_pulse_open() { throw .pulseLibrary(String(cString: failure), device: shown) }
        let connection = PulseConnection(policy: policy)
        negotiated = try connection.open(sink: sink, shownAs: shown, rate: rate, channels: channels, latencyMs: latencyMs)
        self.connection = connection
    }

    /// Whether the mainloop thread took the policy it was given.
    public var policyApplied: Bool { connection.policyApplied.load(ordering: .acquiring) }

    /// The mainloop thread renders: real-time when it was asked to be and could.
    public var rendersInRealtime: Bool { policyApplied && connection.isRealtime }

    public func play(_ feed: OutputFeed) { connection.play(feed) }

    public func rewind(_ frames: Int) -> Int { connection.rewind(frames) }
    /// A rewind seeks the stream's write index back: the server drops what it had not read.
    public var takesBack: Bool { true }

    /// A millisecond: `rewind` bounds itself by what the sink can have read (see there).
    public var rewindMarginFrames: Int { negotiated.sampleRate / 1000 }

    /// The sink's block, the margin and at least a period: the server reads its block ahead,
    /// so less queued while a refill waits runs the stream dry (measured: an underrun on a
    /// streamed seek with 3 ms queued, at load 5).
    public var refillLeadFrames: Int { connection.refillLeadFrames }

    public func stop() { connection.shutdown() }

    /// The first frame the sink cannot have read by the time a seek sent now lands, `margin`
    /// frames from now (the seek's trip to the server's I/O thread): what a take-back may reach.
    ///
    /// The latest snapshot said the sink had read up to `read`; `heard` is the frame heard now
    /// (the snapshot's, plus the time since). The sink reads its next `block` when what it holds
    /// has been heard, and so on: while `heard + margin` is short of `read`, everything past
    /// `read` is unread. From there on it has read one more block, and one more each time
    /// `heard + margin` passes another block, however old the snapshot (a late answer from a
    /// busy server).
    public static func firstUnread(heard: Int, read: Int, block: Int, margin: Int) -> Int {
        let reached = heard + margin
        guard reached >= read else { return read }
        guard block > 0 else { return reached }
        return read + ((reached - read) / block + 1) * block
    }
}

/// libpulse's objects for one playback stream and the state its callbacks share. The mainloop
/// thread holds the mainloop's lock while it runs callbacks, and every other thread takes it
/// before touching anything here, so the state is the rendering thread's alone.
final class PulseConnection: @unchecked Sendable {
    private let mainloop: OpaquePointer
    private let api: UnsafeMutablePointer<pa_mainloop_api>
    private let context: OpaquePointer
    private var stream: OpaquePointer?
    private let policy: ThreadPolicy
    let policyApplied = Atomic<Bool>(false)
    var isRealtime: Bool { policy != .normal }
    private var threadRunning = false

    /// How often the timer fills what a hold left unwritten and asks for a timing snapshot.
    /// Each snapshot is a round trip to the server's main and I/O threads: at 1 ms the test
    /// server spent about 10% of a core on them (0.5 ms: 15%, same cue figures; 2 ms leaves
    /// cues waiting for the engine's 1 ms confirmation).
    static let tick = 1_000_000
    /// How long opening may wait for the server.
    static let openingLimit: Int64 = 5_000_000_000

    private var rate = 0
    private var frameBytes = 0
    private var feed: OutputFeed?
    private var stopped = false
    private var failed = false
    private var timer: Int32 = -1
    private var timerEvent: OpaquePointer?
    private var timingPending = false
    /// Frames written (less those taken back): where the next write lands. The feed's
    /// `rendered` count, and the server's write index in frames.
    private var written = 0
    /// Bytes to seek (back) before the next write, after a rewind.
    private var pendingSeek = 0
    /// Frames of silence on the server past `written` (0 or 1): what `sendTakeBack` wrote to
    /// carry a seek; the next write seeks back over them too.
    private var padFrames = 0
    /// The latest snapshot while playing: the frame heard at `time`, the frame the sink reads
    /// next (the server's read index), and the sink's configured latency in frames (about the
    /// block it reads ahead).
    private var reading: (heard: Int, time: Int64, read: Int, sinkFrames: Int)?
    /// Whether the stream has played since the last interruption (an underflow before is not
    /// news).
    private var playedSinceInterruption = false
    private var suspended = false
    /// Corked for a long pause (the feed's standby): the server may suspend the sink.
    private var corked = false
    /// Beyond the sink's block, what a rewind leaves alone: the time the seek takes to reach
    /// the server's I/O thread, and the reading's age.
    private var rewindMarginFrames = 0
    /// The server's `minreq`, in frames.
    private var periodFrames = 0
    /// Readings from a server whose reports move in steps (PipeWire's pulse server); others'
    /// pass through. Made for the stream's rate when it opens.
    private var steps = SteppedTimingReports(rate: 48000)
    /// Ticks while the reports step: the index of the next dithered period.
    private var ticks = 0
    /// Whether the named sink was found while opening: 0 not yet known, 1 found, −1 missing.
    private var sinkLookup = 0

    init(policy: ThreadPolicy) {
        self.policy = policy
        mainloop = pa_threaded_mainloop_new()
        api = pa_threaded_mainloop_get_api(mainloop)
        context = pa_context_new(api, "Narrator")
    }

    deinit {
        shutdown()
        if let stream { pa_stream_unref(stream) }
        pa_context_unref(context)
        pa_threaded_mainloop_free(mainloop)
        if timer >= 0 { close(timer) }
    }

    private var me: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    private static func from(_ pointer: UnsafeMutableRawPointer?) -> PulseConnection {
        Unmanaged<PulseConnection>.fromOpaque(pointer!).takeUnretainedValue()
    }

    // MARK: Opening (the caller's thread)

    func open(sink: String?, shownAs device: String, rate: Int, channels: Int, latencyMs: Int) throws(PlaybackError) -> NegotiatedOutput {
        guard (1...32).contains(channels), (1...768_000).contains(rate) else {
            throw .unsupported(device: device, reason: "\(rate) Hz, \(channels) channels", listedBy: PulseOutput.lister)
        }
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(rate), channels: UInt8(channels))
        guard pa_sample_spec_valid(&spec) != 0 else {
            throw .unsupported(device: device, reason: "\(rate) Hz, \(channels) channels", listedBy: PulseOutput.lister)
        }
        self.rate = rate
        steps = SteppedTimingReports(rate: rate)
        frameBytes = channels * 2
        rewindMarginFrames = rate * 2 / 1000

        pa_context_set_state_callback(context, { _, userdata in PulseConnection.from(userdata).contextChanged() }, me)
        guard pa_context_connect(context, nil, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else {
            throw .pulseOpening(DeviceFailure(pulse: pa_context_errno(context)), device: device)
        }
        pa_threaded_mainloop_set_name(mainloop, "narrator-pulse")
        // The first thing the mainloop thread does: take its policy, explicitly.
        pa_threaded_mainloop_once_unlocked(
            mainloop, { _, userdata in
                let connection = PulseConnection.from(userdata)
                connection.policyApplied.store(connection.policy.apply(), ordering: .releasing)
            }, me)
        guard pa_threaded_mainloop_start(mainloop) >= 0 else {
            throw .noDevice(device: device, code: "EAGAIN", reason: "cannot start libpulse's thread", listedBy: PulseOutput.lister)
        }
        threadRunning = true
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        try waitUntil(device: device) {
            let state = pa_context_get_state(context)
            return state == PA_CONTEXT_READY ? true : PA_CONTEXT_IS_GOOD(state) != 0 ? false : nil
        }

        if let sink {
            // Named sinks are looked up first: PulseAudio fails a stream to a sink it lacks,
            // but PipeWire's pulse server (0.3.65) accepts it and plays it to no sink at all.
            sinkLookup = 0
            guard let lookup = pa_context_get_sink_info_by_name(context, sink, { _, info, eol, userdata in
                let connection = PulseConnection.from(userdata)
                if info != nil {
                    connection.sinkLookup = 1
                } else if eol != 0, connection.sinkLookup == 0 {
                    connection.sinkLookup = -1
                }
            }, me) else {
                throw .pulseOpening(DeviceFailure(pulse: pa_context_errno(context)), device: device)
            }
            pa_operation_unref(lookup)
            try waitUntil(device: device) {
                sinkLookup != 0 ? true : PA_CONTEXT_IS_GOOD(pa_context_get_state(context)) != 0 ? false : nil
            }
            guard sinkLookup == 1 else { throw .pulseOpening(DeviceFailure(errno: ENOENT), device: device) }
        }

        var map = pa_channel_map()
        pa_channel_map_init_extend(&map, UInt32(channels), PA_CHANNEL_MAP_DEFAULT)
        guard let stream = pa_stream_new(context, "Narrator", &spec, &map) else {
            throw .pulseOpening(DeviceFailure(pulse: pa_context_errno(context)), device: device)
        }
        self.stream = stream
        pa_stream_set_state_callback(stream, { _, userdata in PulseConnection.from(userdata).streamChanged() }, me)
        pa_stream_set_write_callback(stream, { _, _, userdata in PulseConnection.from(userdata).fill() }, me)
        pa_stream_set_underflow_callback(stream, { _, userdata in PulseConnection.from(userdata).interrupted() }, me)
        pa_stream_set_moved_callback(stream, { _, userdata in PulseConnection.from(userdata).interrupted() }, me)
        pa_stream_set_suspended_callback(stream, { _, userdata in PulseConnection.from(userdata).suspendedChanged() }, me)

        let latencyFrames = max(1, rate * min(max(latencyMs, 1), 10_000) / 1000)
        let minreqFrames = max(1, latencyFrames * 3 / 10)
        var attr = pa_buffer_attr(
            maxlength: UInt32.max, tlength: UInt32(clamping: latencyFrames * frameBytes), prebuf: UInt32.max,
            minreq: UInt32(clamping: minreqFrames * frameBytes), fragsize: UInt32.max)
        let flags = pa_stream_flags_t(rawValue: PA_STREAM_ADJUST_LATENCY.rawValue)
        guard pa_stream_connect_playback(stream, sink, &attr, flags, nil, nil) >= 0 else {
            throw .pulseOpening(DeviceFailure(pulse: pa_context_errno(context)), device: device)
        }
        try waitUntil(device: device) {
            let state = pa_stream_get_state(stream)
            return state == PA_STREAM_READY ? true : PA_STREAM_IS_GOOD(state) != 0 ? false : nil
        }
        guard let granted = pa_stream_get_buffer_attr(stream)?.pointee else {
            throw .pulseOpening(DeviceFailure(pulse: pa_context_errno(context)), device: device)
        }

        periodFrames = max(1, Int(granted.minreq) / frameBytes)
        timer = narrator_pulse_timer_new()
        guard timer >= 0,
            let event = narrator_pulse_io_new(api, timer, { _, _, _, _, userdata in PulseConnection.from(userdata).tick() }, me)
        else {
            throw .noDevice(device: device, code: DeviceFailure(errno: errno).name, reason: "no timer", listedBy: PulseOutput.lister)
        }
        timerEvent = event
        return NegotiatedOutput(
            device: device, sampleRate: rate, channels: channels, format: .s16,
            periodFrames: periodFrames, bufferFrames: max(1, Int(granted.tlength) / frameBytes))
    }

    /// With the lock held: waits (letting the mainloop run) until `done` says true (ready) or
    /// nil (failed: the context's error), for at most `openingLimit`.
    private func waitUntil(device: String, _ done: () -> Bool?) throws(PlaybackError) {
        let deadline = MonotonicClock.now() + Self.openingLimit
        while true {
            switch done() {
            case true?: return
            case nil: throw .pulseOpening(DeviceFailure(pulse: pa_context_errno(context)), device: device)
            case false?: break
            }
            guard MonotonicClock.now() < deadline else { throw .pulseOpening(DeviceFailure(errno: ETIMEDOUT), device: device) }
            pa_threaded_mainloop_unlock(mainloop)
            usleep(1000)
            pa_threaded_mainloop_lock(mainloop)
        }
    }

    // MARK: Starting and stopping (the engine's threads)

    func play(_ feed: OutputFeed) {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        guard !stopped else { return }
        self.feed = feed
        guard let stream, PA_CONTEXT_IS_GOOD(pa_context_get_state(context)) != 0, pa_stream_get_state(stream) == PA_STREAM_READY else {
            fail(pa_context_errno(context))
            return
        }
        // The first tick fills the buffer the server asked for while nothing played.
        if narrator_pulse_timer_arm(timer, Self.tick) != 0 { fail(Int32(PA_ERR_INTERNAL.rawValue)) }
    }

    /// Stops the stream and the mainloop thread; returns once no callback runs. Never from a
    /// callback (there it only marks the stream stopped).
    func shutdown() {
        guard threadRunning else { return }
        if pa_threaded_mainloop_in_thread(mainloop) != 0 {
            stopped = true
            return
        }
        pa_threaded_mainloop_lock(mainloop)
        if !stopped {
            stopped = true
            if let timerEvent {
                narrator_pulse_io_free(api, timerEvent)
                self.timerEvent = nil
            }
            if let stream {
                pa_stream_set_state_callback(stream, nil, nil)
                pa_stream_set_write_callback(stream, nil, nil)
                pa_stream_set_underflow_callback(stream, nil, nil)
                pa_stream_set_moved_callback(stream, nil, nil)
                pa_stream_set_suspended_callback(stream, nil, nil)
                if pa_stream_get_state(stream) == PA_STREAM_READY {
                    // Drop what the server holds, then go (neither waits for an answer: a dead
                    // or hung server cannot hold us).
                    if let operation = pa_stream_flush(stream, nil, nil) { pa_operation_unref(operation) }
                    pa_stream_disconnect(stream)
                }
            }
            pa_context_set_state_callback(context, nil, nil)
            pa_context_disconnect(context)
        }
        pa_threaded_mainloop_unlock(mainloop)
        pa_threaded_mainloop_stop(mainloop)
        threadRunning = false
    }

    // MARK: Callbacks (the mainloop thread, lock held; real time: no allocation of ours)

    /// Writes what the server asked for, rendered straight into its memory, until it has all
    /// it asked for or the feed gives fewer frames (a hold: the next tick comes back). A take-back
    /// the feed wrote nothing after still goes to the server now (`sendTakeBack`).
    private func fill() {
        guard let feed, !stopped, let stream else { return }
        defer { sendTakeBack(stream) }
        var first = true
        while true {
            let free = pa_stream_writable_size(stream)
            guard free != Int(bitPattern: UInt.max) else { return }
            // What a rewind took back is room too (and the silent frame after it): the write
            // seeks back over them.
            let writable = free - pendingSeek + padFrames * frameBytes
            guard writable >= frameBytes else { return }
            if first {
                first = false
                if ranDry() { interrupted() }
            }
            var data: UnsafeMutableRawPointer?
            var bytes = writable
            guard pa_stream_begin_write(stream, &data, &bytes) == 0, let data else { return }
            let frames = min(bytes, writable) / frameBytes
            let count = frames > 0 ? feed.render(into: data, frames: frames) : 0
            guard count > 0 else {
                // Held.
                pa_stream_cancel_write(stream)
                return
            }
            // A failure here is the context's or the stream's: their state callback reports it.
            let seek = Int64(pendingSeek - padFrames * frameBytes)
            guard pa_stream_write(stream, data, count * frameBytes, nil, seek, PA_SEEK_RELATIVE) == 0 else { return }
            pendingSeek = 0
            padFrames = 0
            written += count
            if count < frames { return }
        }
    }

    /// After a rewind that nothing was written after (the feed held at once), seeks the
    /// server's write index back now, with one frame of silence (a seek travels with a write),
    /// which the next write seeks back over in turn. The server reads no further than its
    /// write index (prebuffering: an underrun, not the old frames past it), so nothing taken
    /// back plays, however long the hold. Left pending, the seek went with the next write,
    /// after the hold, while the server played on what had been taken back.
    private func sendTakeBack(_ stream: OpaquePointer) {
        guard pendingSeek != 0, !stopped, pa_stream_get_state(stream) == PA_STREAM_READY else { return }
        var data: UnsafeMutableRawPointer?
        var bytes = frameBytes
        guard pa_stream_begin_write(stream, &data, &bytes) == 0, let data, bytes >= frameBytes else { return }
        data.initializeMemory(as: UInt8.self, repeating: 0, count: frameBytes)
        guard pa_stream_write(stream, data, frameBytes, nil, Int64(pendingSeek - padFrames * frameBytes), PA_SEEK_RELATIVE) == 0 else { return }
        pendingSeek = 0
        padFrames = 1
    }

    /// Whether, by the latest reading, the sink has played all that was written: the stream
    /// ran dry. The server's underflow message says so too, but after the requests it sent
    /// while it drained (a client that was stopped reads them all at once): rendering for those
    /// as if nothing happened would play them after the gap, then a second gap while the clock
    /// settles again. Told first, the feed's settling silence joins the gap. (A period past
    /// the end: an estimate, not a guess that a late reading could make.)
    private func ranDry() -> Bool {
        guard playedSinceInterruption, let reading else { return false }
        return reading.heard + Int(Double(MonotonicClock.now() - reading.time) * Double(rate) / 1e9) >= written + periodFrames
    }

    /// See `PulseOutput.refillLeadFrames` (on the mainloop thread, inside `render`).
    var refillLeadFrames: Int { max(periodFrames, (reading?.sinkFrames ?? periodFrames) + rewindMarginFrames) }

    /// Takes back up to `frames` of what the sink cannot have read yet (from inside `render`,
    /// so inside `fill`): the next write seeks back over them.
    ///
    /// What the sink cannot have read yet: see `PulseOutput.firstUnread`. On a server whose
    /// reports step (PipeWire), what is heard is known to a step only: the sink's block, the
    /// margin and a period at least are kept (the feed's margin before this output said less).
    func rewind(_ frames: Int) -> Int {
        guard frames > 0, let reading else { return 0 }
        let since = max(0, Int(Double(MonotonicClock.now() - reading.time) * Double(rate) / 1e9))
        let keep =
            steps.stepping
            ? reading.heard + since + max(periodFrames, reading.sinkFrames + rewindMarginFrames)
            : PulseOutput.firstUnread(heard: reading.heard + since, read: reading.read, block: reading.sinkFrames, margin: rewindMarginFrames)
        let back = max(0, min(frames, written - keep))
        written -= back
        pendingSeek -= back * frameBytes
        return back
    }

    private func tick() {
        _ = narrator_pulse_timer_read(timer)
        guard let feed, !stopped, let stream else { return }
        if feed.wantsStandby != corked { cork(!corked, stream) }
        if corked {
            feed.standingBy()
            return
        }
        if steps.stepping {
            ticks &+= 1
            _ = narrator_pulse_timer_arm(timer, SteppedTimingReports.ditheredTick(ticks & 0xFFFF, tick: Self.tick, spread: Self.tick / 2))
        }
        // A pause or a seek asked since the last tick takes back now what the sink cannot
        // have read yet; `fill` renders into that room at once.
        feed.takeTransportRequests()
        fill()
        if !timingPending, pa_stream_get_state(stream) == PA_STREAM_READY,
            let operation = pa_stream_update_timing_info(
                stream, { _, success, userdata in PulseConnection.from(userdata).timingArrived(success != 0) }, me)
        {
            timingPending = true
            pa_operation_unref(operation)
        }
    }

    /// Corks the stream for a long pause, dropping the silence the server holds (the feed
    /// forgets its clock), or uncorks it: the next fill starts it again. Outside real time
    /// (playback is paused): the operations allocate.
    private func cork(_ cork: Bool, _ stream: OpaquePointer) {
        corked = cork
        if let operation = pa_stream_cork(stream, cork ? 1 : 0, nil, nil) { pa_operation_unref(operation) }
        guard cork else { return }
        if let operation = pa_stream_flush(stream, nil, nil) { pa_operation_unref(operation) }
        pendingSeek = 0
        padFrames = 0
        playedSinceInterruption = false
        reading = nil
        steps.reset()
        feed?.released()
    }

    /// A timing snapshot arrived: report it if the stream plays.
    private func timingArrived(_ success: Bool) {
        timingPending = false
        guard success, let feed, !stopped, !suspended, let stream, let info = pa_stream_get_timing_info(stream)?.pointee,
            info.read_index_corrupt == 0, info.playing != 0
        else { return }
        let read = Int(info.read_index) / frameBytes
        let reported = read - frames(microseconds: info.sink_usec)
        guard reported > 0, let (heard, time) = steps.reading(heard: reported, at: Self.monotonic(info.timestamp)) else { return }
        reading = (heard, time, read, frames(microseconds: info.configured_sink_usec))
        playedSinceInterruption = true
        feed.report(delay: written - heard, at: time)
    }

    private func interrupted() {
        guard let feed, !stopped, playedSinceInterruption else { return }
        playedSinceInterruption = false
        reading = nil
        steps.reset()
        feed.interrupted()
    }

    private func suspendedChanged() {
        guard let stream else { return }
        suspended = pa_stream_is_suspended(stream) == 1
        if suspended { interrupted() }
    }

    private func contextChanged() {
        if PA_CONTEXT_IS_GOOD(pa_context_get_state(context)) == 0 { fail(pa_context_errno(context)) }
    }

    private func streamChanged() {
        guard let stream else { return }
        if PA_STREAM_IS_GOOD(pa_stream_get_state(stream)) == 0 { fail(pa_context_errno(context)) }
    }

    /// The server is gone or the stream failed: the feed is told once (not before `play`:
    /// then `play` finds the state and tells it).
    private func fail(_ code: Int32) {
        guard let feed, !stopped, !failed else { return }
        failed = true
        feed.failed(DeviceFailure(pulse: code))
    }

    @inline(__always)
    private func frames(microseconds: pa_usec_t) -> Int {
        Int((Double(microseconds) * Double(rate) / 1e6).rounded())
    }

    /// A CLOCK_REALTIME time (the server's timestamp) on CLOCK_MONOTONIC, through both clocks
    /// read now (the monotonic one on either side of the other, halved).
    private static func monotonic(_ stamp: timeval) -> Int64 {
        var before = timespec(), wall = timespec(), after = timespec()
        clock_gettime(CLOCK_MONOTONIC, &before)
        clock_gettime(CLOCK_REALTIME, &wall)
        clock_gettime(CLOCK_MONOTONIC, &after)
        func ns(_ t: timespec) -> Int64 { Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec) }
        let offset = ns(wall) - (ns(before) + ns(after)) / 2
        return Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_usec) * 1000 - offset
    }
}

extension PlaybackError {
    /// libpulse could not be loaded (`message` names it and its package).
    static func pulseLibrary(_ message: String, device: String) -> PlaybackError {
        .noDevice(device: device, code: "ELIBACC", reason: message, listedBy: PulseOutput.lister)
    }

    /// Opening a PulseAudio stream failed with `failure`.
    static func pulseOpening(_ failure: DeviceFailure, device: String) -> PlaybackError {
        let lister = PulseOutput.lister
        return switch failure.errno {
        case EBUSY: .busy(device: device, listedBy: lister)
        case ENOENT: .noDevice(device: device, code: failure.name, reason: "no such PulseAudio sink", listedBy: lister)
        case ECONNREFUSED:
            .noDevice(
                device: device, code: failure.name,
                reason: "no PulseAudio server answers: start one (or PipeWire's pulse server), or name it with PULSE_SERVER",
                listedBy: lister)
        case EACCES: .noDevice(device: device, code: failure.name, reason: "the sound server refused the connection", listedBy: lister)
        case ETIMEDOUT:
            .noDevice(device: device, code: failure.name, reason: "the sound server did not answer within 5 s", listedBy: lister)
        case EIO: .noDevice(device: device, code: failure.name, reason: "the sound server closed the connection", listedBy: lister)
        case EINVAL: .noDevice(device: device, code: failure.name, reason: "not a sink name the server accepts", listedBy: lister)
        default: .noDevice(device: device, code: failure.name, reason: failure.reason, listedBy: lister)
        }
    }
}
