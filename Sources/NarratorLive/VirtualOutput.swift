import NarratorCore

/// An output made of arithmetic on a `VirtualClock`: the engine's timing logic runs on it
/// deterministically and faster than real time (tests, and simulating an app's timing).
///
/// It behaves like a pull device: every `tick` of virtual time its callback asks for periods
/// while it has room, it starts playing once its buffer is full, plays `sampleRate` frames per
/// second of the clock exactly, and reports its position. It keeps every frame it was given
/// and knows when each was heard. Troubles can be scripted: a callback that stops being called
/// (the device runs dry: an underrun), a device that stops consuming without a word, a device
/// that fails.
///
/// Drive it from one thread with `run(until:)` (or `run(for:)`): the rendering happens on
/// that thread, and the engine's cue thread runs in step with the clock.
public final class VirtualOutput: AudioOutput, @unchecked Sendable {
    // @unchecked: everything is used from the thread that calls `run`, and by the engine's
    // rendering calls made from that thread.
    public let negotiated: NegotiatedOutput
    public var drive: OutputDrive { .pull }
    public let clock: VirtualClock
    /// How often the callback comes and the device reports its position (1 ms).
    public var tick: Int64 = 1_000_000
    /// Whether `run` keeps virtual time from running ahead of real time (a paced device, for
    /// tests where another thread acts as things are heard, like an app answering a prompt).
    public var pacedToRealTime = false
    /// How close to the frame heard a rewind may reach: a tick (its position is exact at
    /// each tick, as a sound server's is at each timing report).
    public var rewindMarginFrames: Int { negotiated.sampleRate / 1000 }
    private var realStart: (real: Int64, virtual: Int64)?
    /// Called on the rendering thread just before (true) and after (false) each call of
    /// `feed.render`, e.g. to count allocations in between.
    public var renderProbe: (@Sendable (Bool) -> Void)?

    private var feed: OutputFeed?
    private var stopped = false
    private let scratch: UnsafeMutableRawPointer
    /// Every frame handed over and not taken back (interleaved, in the negotiated format's
    /// bytes), in order: what the device plays. Frames before `played` were heard.
    public private(set) var given: [UInt8] = []
    /// Whether it keeps what it is given (`given`, `samples`, `renders`); a long run that only
    /// wants the events (`simulate --controls`) counts the frames instead.
    public var keepsSamples = true
    /// Frames given so far (what is left after rewinds).
    private var givenFrames = 0
    /// Frames heard so far, as of the last tick.
    public private(set) var played = 0
    private var playing = false
    /// Continuous stretches of play: the first device frame of each and when it was heard.
    public private(set) var segments: [(frame: Int, time: Int64)] = []
    public private(set) var underruns = 0
    /// Long pauses during which the device was let go (`OutputFeed.wantsStandby`): when each
    /// began and ended (nil: still in standby).
    public private(set) var standbys: [(from: Int64, to: Int64?)] = []
    /// After each render: when, and how many frames had been given in all.
    public private(set) var renders: [(time: Int64, given: Int)] = []
    private var frameBytes: Int { negotiated.channels * negotiated.format.bytesPerSample }

    /// Scripted troubles, in virtual time.
    public struct Trouble: Sendable {
        public enum Kind: Sendable {
            /// The callback is not called (a descheduled client): the device runs dry.
            case noCallbacks
            /// The device stops consuming and reporting without a word (a hung sound server).
            case silentPause
            /// The device fails with this errno (from `start`; `duration` is ignored).
            case failure(DeviceFailure)
            /// The reported delay wanders as a sound server's interpolated latency does, seen
            /// through ALSA's pulse plugin: it drifts from `early` nanoseconds too short (frames
            /// said to be heard before they are) to as much too long over each `period`, then
            /// jumps back, with a wobble of a tenth of that from report to report.
            case wanderingReports(early: Int64, period: Int64)
        }
        public var kind: Kind
        public var start: Int64
        public var duration: Int64

        public init(_ kind: Kind, at start: Int64, for duration: Int64 = 0) {
            self.kind = kind
            self.start = start
            self.duration = duration
        }

        func covers(_ time: Int64) -> Bool { time >= start && time < start + duration }
    }
    public var troubles: [Trouble] = []
    /// What it says of its readings (`AudioOutput.readingWander`, nanoseconds), for tests of
    /// the engine's conservative clock.
    public var readingWander: Int64 = 0
    private var reports = 0
    /// When a scripted failure was reported to the engine.
    public private(set) var failedAt: Int64?
    private var pausedAt: Int64?

    public init(
        clock: VirtualClock, sampleRate: Int, channels: Int, format: DeviceSampleFormat = .s16, periodFrames: Int? = nil,
        bufferFrames: Int? = nil
    ) {
        let period = periodFrames ?? sampleRate / 100
        negotiated = NegotiatedOutput(
            device: "virtual", sampleRate: sampleRate, channels: channels, format: format, periodFrames: period,
            bufferFrames: bufferFrames ?? 4 * period)
        self.clock = clock
        scratch = .allocate(byteCount: period * channels * format.bytesPerSample, alignment: 16)
    }

    deinit { scratch.deallocate() }

    public func play(_ feed: OutputFeed) { self.feed = feed }

    public func stop() {
        // What was heard until now (the engine stops once it delivered the last cue).
        if playing && pausedAt == nil { played = min(givenFrames, position(at: clock.now())) }
        stopped = true
    }

    /// Whether it can take back what it was given (false: like ALSA's plugins that cannot).
    public var rewinds = true
    public var takesBack: Bool { rewinds }

    public func rewind(_ frames: Int) -> Int {
        guard rewinds else { return 0 }
        let back = max(0, min(frames, givenFrames - played))
        if keepsSamples {
            // The device's own record, not the engine's work: outside the render probe.
            renderProbe?(false)
            given.removeLast(back * frameBytes)
            renderProbe?(true)
        }
        givenFrames -= back
        return back
    }

    /// The frames given so far, as 16-bit samples (for an `.s16` output).
    public var samples: [Int16] {
        given.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// When device frame `frame` was (or began to be) heard, or nil if it was not (yet).
    public func heardTime(ofFrame frame: Int) -> Int64? {
        guard frame <= played, let segment = segments.last(where: { $0.frame <= frame }) else { return nil }
        return segment.time + Int64((Double(frame - segment.frame) * 1e9 / Double(negotiated.sampleRate)).rounded())
    }

    /// Runs the device and the clock until `target` (virtual nanoseconds), tick by tick.
    public func run(until target: Int64) {
        clock.advance(to: clock.now())
        while clock.now() < target {
            let now = clock.now()
            step(at: now)
            pace()
            clock.advance(to: min(target, now + tick))
        }
    }

    /// Runs for `nanoseconds` of virtual time.
    public func run(for nanoseconds: Int64) { run(until: clock.now() + nanoseconds) }

    /// Runs until the engine has stopped asking (playback ended) or `limit` nanoseconds passed;
    /// true when it ended.
    @discardableResult
    public func runToEnd(limit: Int64 = 600_000_000_000) -> Bool {
        let end = clock.now() + limit
        clock.advance(to: clock.now())
        while clock.now() < end {
            if stopped || (feed?.shouldStop ?? false) {
                // Let the cue thread finish what it has to say.
                pace()
                clock.advance(by: tick)
                if stopped { return true }
                continue
            }
            let now = clock.now()
            step(at: now)
            pace()
            clock.advance(to: now + tick)
        }
        return false
    }

    private func pace() {
        guard pacedToRealTime else { return }
        let origin = realStart ?? (MonotonicClock.now(), clock.now())
        realStart = origin
        let due = origin.real + (clock.now() - origin.virtual)
        SystemClock().sleep(until: due)
    }

    private func position(at time: Int64) -> Int {
        guard playing, let segment = segments.last else { return played }
        return segment.frame + Int(Double(time - segment.time) * Double(negotiated.sampleRate) / 1e9)
    }

    private func step(at now: Int64) {
        guard let feed, !stopped, !feed.shouldStop else { return }
        for trouble in troubles {
            if case .failure(let failure) = trouble.kind, now >= trouble.start, failedAt == nil {
                failedAt = now
                feed.failed(failure)
                return
            }
        }
        if feed.wantsStandby {
            if standbys.last.map({ $0.to != nil }) ?? true {
                // The device stops; what it held (the pause's silence) is dropped.
                if playing { played = min(givenFrames, position(at: now)) }
                playing = false
                if keepsSamples { given.removeLast((givenFrames - played) * frameBytes) }
                givenFrames = played
                standbys.append((now, nil))
                feed.released()
            }
            feed.standingBy()
            return
        }
        if let last = standbys.last, last.to == nil { standbys[standbys.count - 1].to = now }
        let total = givenFrames
        // A silent pause: nothing is consumed, reported or asked for.
        if troubles.contains(where: { if case .silentPause = $0.kind { $0.covers(now) } else { false } }) {
            if pausedAt == nil {
                played = min(total, position(at: now))
                pausedAt = now
            }
            return
        }
        if pausedAt != nil {
            pausedAt = nil
            if playing { segments.append((played, now)) }
        }
        if playing {
            let reached = position(at: now)
            if reached >= total {
                // Ran dry: everything given was heard; the device stops until refilled.
                played = total
                playing = false
                underruns += 1
                feed.interrupted()
            } else {
                played = reached
            }
        }
        let feeding = !troubles.contains { if case .noCallbacks = $0.kind { $0.covers(now) } else { false } }
        if feeding {
            // A pause or a seek asked since the last tick is taken now (what the device holds
            // beyond the margin comes back, and is rendered again below).
            renderProbe?(true)
            feed.takeTransportRequests()
            renderProbe?(false)
            let period = negotiated.periodFrames
            while givenFrames - played <= negotiated.bufferFrames - period {
                renderProbe?(true)
                let count = feed.render(into: scratch, frames: period)
                renderProbe?(false)
                if count == 0 { break }
                givenFrames += count
                if keepsSamples {
                    given.append(contentsOf: UnsafeRawBufferPointer(start: scratch, count: count * frameBytes))
                    renders.append((now, givenFrames))
                }
            }
        }
        let buffered = givenFrames - played
        if !playing && buffered >= negotiated.bufferFrames {
            playing = true
            segments.append((played, now))
        }
        if playing { feed.report(delay: buffered - wander(at: now), at: now) }
    }

    /// How many frames a wandering report says too few (negative: too many) at `now`.
    private func wander(at now: Int64) -> Int {
        for trouble in troubles where trouble.covers(now) {
            guard case .wanderingReports(let early, let period) = trouble.kind, period > 0 else { continue }
            reports += 1
            let phase = Double((now - trouble.start) % period) / Double(period)
            let wobble = reports % 2 == 0 ? 0.1 : -0.1
            let error = Double(early) * (1 - 2 * phase + wobble)
            return Int((error * Double(negotiated.sampleRate) / 1e9).rounded())
        }
        return 0
    }
}
