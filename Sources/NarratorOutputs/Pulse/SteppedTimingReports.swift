/// Turns a pulse server's timing reports into readings of the audio clock when the server's
/// heard frame moves in steps.
///
/// PulseAudio's reports move smoothly: `read_index − sink_usec` is the frame heard at the
/// report's timestamp, to a few microseconds. PipeWire's pulse server (measured on 0.3.65)
/// advances `read_index` once per graph cycle, by the quantum (512 or 1024 frames: 10.7 or
/// 21.3 ms at 48 kHz), reports a `sink_usec` that changes only then too (0 for a sink that states
/// no latency), and stamps the report with the time it answered. Between two steps the report
/// names the same frame while its timestamp moves on: taken as they come, readings 1 ms apart
/// disagree by up to a quantum and the engine's clock never settles.
///
/// What such a server does say exactly is when a step happened: after the previous report
/// (which still named the old frame) and at or before the first report naming the new one. So
/// each step bounds its own moment from above: `time − heard/rate` of the first report after it
/// is never earlier than the true offset of the clock (the step itself can only be seen late:
/// the report after it comes up to a tick later, and the server's thread may update late). The
/// lowest of these bounds over the last `window` steps is the clock: the reports come every
/// tick at phases that wander over the cycle, so some land just after their step. A reading
/// then follows from any report, from that moment on at the rate, until the next step is due.
///
/// What is heard at a step's moment is one step (a quantum) before the frame the step names:
/// the stream's quantum is handed to the graph then and played in the next cycle, and the
/// server's `sink_usec` leaves that cycle out. Measured through a private PipeWire 0.3.65 with a
/// pipe-tunnel sink (scripts/pipewire-test-server.sh): readings taken at the step were 10.41 to
/// 10.54 ms early at a quantum of 512 frames (10.67 ms), to the recording.
///
/// The graph can lose a cycle (a node added or removed), which moves the steps a quantum later:
/// a step seen more than half a quantum after the estimate allows starts the estimate afresh.
///
/// Smooth reports pass through unchanged (but the first, which cannot tell); a server counts as
/// stepping once two reports at least `stepEvidence` apart name the same frame while it plays.
/// Reports at a fixed period land at few phases of the cycle (every 1 ms on a 10.67 ms
/// quantum: three), so the output varies its period while the reports step (`ditheredTick`).
/// Real time: no allocation after `init`, no lock.
public struct SteppedTimingReports: ~Copyable {
    /// The stream's sample rate.
    public let rate: Int
    /// How many steps the lowest bound is taken over: 32 steps are 0.34 s at a quantum of 512
    /// frames, 0.68 s at 1024 (a sound card's drift of 100 ppm moves the clock 34 or 68 µs in
    /// that time).
    public let window: Int
    /// Two playing reports this far apart naming the same frame: the server steps.
    public let stepEvidence: Int64 = 500_000
    /// How long past a step's expected end a reading may still be extrapolated from it: beyond,
    /// the server has stopped stepping (it stalled), and no reading is made.
    public let overdueMargin: Int64 = 2_000_000

    /// Whether the reports have been seen to move in steps.
    public private(set) var stepping = false
    private let bounds: UnsafeMutablePointer<Int64>
    /// The sizes of the steps whose bounds are kept: the smallest is the quantum.
    private let sizes: UnsafeMutablePointer<Int>
    private var count = 0
    private var next = 0
    /// The previous report, as the server gave it.
    private var previous: (heard: Int, time: Int64)?
    /// The size of the latest step, in frames (the quantum, or more if a report missed one).
    private var stepFrames = 0

    public init(rate: Int, window: Int = 32) {
        precondition(rate > 0 && window > 0)
        self.rate = rate
        self.window = window
        bounds = .allocate(capacity: window)
        sizes = .allocate(capacity: window)
    }

    deinit {
        bounds.deallocate()
        sizes.deallocate()
    }

    /// Forgets the steps (the stream was interrupted: its clock starts afresh). Whether the
    /// server steps is remembered.
    public mutating func reset() {
        count = 0
        next = 0
        previous = nil
        stepFrames = 0
    }

    /// The reading to report for the server's report "frame `heard` is heard at `time`" (time
    /// in nanoseconds, frames at `rate`), or nil when it gives none yet: no step seen, or the
    /// next step is overdue.
    public mutating func reading(heard: Int, at time: Int64) -> (heard: Int, time: Int64)? {
        defer { previous = (heard, time) }
        // The first report of a stream says nothing yet: which kind of server it is.
        guard let previous else { return nil }
        if previous.heard == heard, time - previous.time >= stepEvidence { stepping = true }
        guard stepping else { return (heard, time) }
        if heard != previous.heard {
            if heard < previous.heard {
                // Backwards: not a step of this clock (a flush, a new stream position).
                count = 0
                next = 0
                stepFrames = 0
            } else {
                let step = heard - previous.heard
                // The step had not happened at the previous report: if the estimate says it
                // should have, by more than half a step, the steps have moved (a lost cycle).
                if count > 0, previous.time - nanoseconds(heard) > lowestBound() + nanoseconds(step) / 2 {
                    count = 0
                    next = 0
                }
                stepFrames = step
                bounds[next] = time - nanoseconds(heard)
                sizes[next] = step
                next = (next + 1) % window
                count = min(count + 1, window)
            }
        }
        guard count > 0, stepFrames > 0 else { return nil }
        let since = max(0, time - (lowestBound() + nanoseconds(heard)))
        guard since <= nanoseconds(stepFrames) + overdueMargin else { return nil }
        var quantum = sizes[0]
        for i in 1..<count where sizes[i] < quantum { quantum = sizes[i] }
        return (heard - quantum + Int((Double(since) * Double(rate) / 1e9).rounded()), time)
    }

    /// The lowest bound kept (count > 0): the clock's offset, `time − frame/rate`.
    private func lowestBound() -> Int64 {
        var offset = bounds[0]
        for i in 1..<count where bounds[i] < offset { offset = bounds[i] }
        return offset
    }

    /// The `n`th period between reports while they step: `tick` less a golden-ratio sequence
    /// over `spread`, so that the reports' phases in the cycle fill it evenly.
    public static func ditheredTick(_ n: Int, tick: Int, spread: Int) -> Int {
        tick - Int((Double(n) * 0.618_033_988_75).truncatingRemainder(dividingBy: 1) * Double(spread))
    }

    @inline(__always)
    private func nanoseconds(_ frames: Int) -> Int64 {
        Int64((Double(frames) * 1e9 / Double(rate)).rounded())
    }
}
