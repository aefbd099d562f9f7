import Synchronization

/// What the rendering thread handed to the output, as the cue thread needs to know it: each
/// cue with the output frame it was rendered at, and the moments where the timeline started,
/// paused, resumed or jumped. The device's clock is linear in output frames whatever the
/// timeline does (pauses, seeks, plan switches), so a mark is due exactly when its output frame
/// is heard.
struct RenderedMark: Sendable, Equatable {
    enum Kind: UInt8, Sendable {
        /// A cue of plan `generation`, at index `index` of its `cues`.
        case cue
        /// Timeline frame 0 was rendered here.
        case start
        /// The output took back everything from `outputFrame` on: marks at or past it are void.
        case rewind
        /// The timeline stopped at `timelineFrame` (a pause, after its fade-out).
        case paused
        /// The timeline goes on from `timelineFrame` (a resume, after a pause).
        case resumed
        /// The timeline jumped to `timelineFrame` (a seek), from `index`, the frame it left.
        case seeked
        /// From here the timeline is rendered at a new speed (`index`: its `Double`'s bits),
        /// from `timelineFrame` (after the change's fade-out, or at a resume).
        case speed
    }

    var kind: Kind
    var generation: Int = 0
    var index: Int = 0
    var timelineFrame: Int
    var outputFrame: Int
}

/// A single-producer, single-consumer ring of marks: the rendering thread pushes (no
/// allocation, no lock), the cue thread pops. Fixed capacity; a full ring makes the renderer
/// render less (the cue thread drains it every few milliseconds).
final class RenderedMarks: @unchecked Sendable {
    // @unchecked: a slot is written by the producer before `head` is released past it, and
    // read by the consumer after acquiring `head`, before `tail` is released past it.
    let capacity: Int
    private let slots: UnsafeMutablePointer<RenderedMark>
    /// Marks pushed, and marks popped, since the start (free-running counters).
    private let head = Atomic<Int>(0)
    private let tail = Atomic<Int>(0)

    init(capacity: Int = 4096) {
        precondition(capacity > 0 && capacity & (capacity - 1) == 0, "a power of two")
        self.capacity = capacity
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: RenderedMark(kind: .start, timelineFrame: 0, outputFrame: 0), count: capacity)
    }

    deinit { slots.deallocate() }

    /// Producer: slots free now.
    var free: Int { capacity - (head.load(ordering: .relaxed) - tail.load(ordering: .acquiring)) }

    /// Producer: pushes `mark` if there is room.
    @discardableResult
    func push(_ mark: RenderedMark) -> Bool {
        let h = head.load(ordering: .relaxed)
        guard h - tail.load(ordering: .acquiring) < capacity else { return false }
        slots[h & (capacity - 1)] = mark
        head.store(h + 1, ordering: .releasing)
        return true
    }

    /// Consumer: every mark pushed so far, in order.
    func drain(into marks: inout [RenderedMark]) {
        let t = tail.load(ordering: .relaxed)
        let h = head.load(ordering: .acquiring)
        guard h > t else { return }
        for index in t..<h { marks.append(slots[index & (capacity - 1)]) }
        tail.store(h, ordering: .releasing)
    }
}

/// The map from output frames to timeline frames, as the rendering thread made it: a run of
/// segments, each starting at an output frame where the timeline either advances with the
/// output (at speed 1, frame for frame; at another speed, through a time stretcher, along
/// the stretcher's own line: timeline frame `t` at output frame `round(o + (t − t₀) / speed)`)
/// or waits at one frame (speed 0). Owned by the rendering thread; a fixed ring of the latest
/// segments (older ones are long heard), so nothing allocates after `init`. A segment may
/// begin past what is rendered (a stretcher's speed change applies at a frame it has not
/// produced yet).
final class SegmentMap {
    struct Segment {
        var output: Int
        var timeline: Int
        /// Timeline frames per output frame: 0 while the timeline waits.
        var speed: Double

        func timeline(atOutput frame: Int) -> Int {
            if speed == 0 { return timeline }
            let offset = max(0, frame - output)
            return speed == 1 ? timeline + offset : timeline + Int((Double(offset) * speed).rounded())
        }

        func output(ofTimeline frame: Int) -> Int {
            speed == 1 ? output + (frame - timeline) : output + Int((Double(frame - timeline) / speed).rounded())
        }
    }

    private let capacity = 64
    private let ring: UnsafeMutablePointer<Segment>
    /// Segments kept (at most `capacity`), the newest at `newest`.
    private var count = 0
    private var newest = -1

    init() {
        ring = .allocate(capacity: capacity)
        ring.initialize(repeating: Segment(output: 0, timeline: 0, speed: 0), count: capacity)
    }

    deinit { ring.deallocate() }

    /// The segment `back` places before the newest (0: the newest).
    private func segment(_ back: Int) -> Segment { ring[(newest - back + capacity) % capacity] }

    /// From output frame `output` on, the timeline is at `timeline` and advances frame for
    /// frame (or waits).
    func begin(output: Int, timeline: Int, advancing: Bool) {
        begin(output: output, timeline: timeline, speed: advancing ? 1 : 0)
    }

    /// From output frame `output` on, the timeline is at `timeline` and advances at `speed`
    /// (0: waits); nothing is recorded when that continues the newest segment.
    func begin(output: Int, timeline: Int, speed: Double) {
        if count > 0 {
            let last = segment(0)
            if last.speed == speed && last.output <= output && last.timeline(atOutput: output) == timeline
                && (speed == 0 || speed == 1)
            {
                return
            }
            if last.output == output {
                // Nothing was rendered in the newest segment: replace it.
                ring[newest] = Segment(output: output, timeline: timeline, speed: speed)
                return
            }
        }
        newest = (newest + 1) % capacity
        ring[newest] = Segment(output: output, timeline: timeline, speed: speed)
        count = min(count + 1, capacity)
    }

    /// The timeline frame at output frame `output`, and its speed there (0: it waits).
    func timeline(atOutput output: Int) -> (frame: Int, speed: Double) {
        guard count > 0 else { return (0, 0) }
        for back in 0..<count {
            let s = segment(back)
            if s.output <= output || back == count - 1 { return (s.timeline(atOutput: output), s.speed) }
        }
        return (0, 0)
    }

    /// The output frame at which timeline frame `frame` was rendered, among the output frames
    /// before `end`, the newest such; nil if none was.
    func outputFrame(ofTimeline frame: Int, before end: Int) -> Int? {
        var segmentEnd = end
        for back in 0..<count {
            let s = segment(back)
            if s.speed > 0 && frame >= s.timeline {
                let at = s.output(ofTimeline: frame)
                if at >= s.output && at < segmentEnd { return at }
            }
            segmentEnd = min(segmentEnd, s.output)
        }
        return nil
    }

    /// Forgets what was rendered from output frame `output` on (the output took it back).
    func truncate(at output: Int) {
        while count > 1 && segment(0).output >= output {
            newest = (newest - 1 + capacity) % capacity
            count -= 1
        }
    }
}
