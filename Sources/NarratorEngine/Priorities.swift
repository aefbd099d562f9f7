/// Speech-dispatcher's five priorities, for announcements the app asks for at any moment (a
/// letter's name on a swipe, a coin's value as it is placed, a progress report).
public enum Priority: String, Sendable, CaseIterable, Comparable {
    case important, message, text, notification, progress

    /// Lower is more urgent.
    var rank: Int { Self.allCases.firstIndex(of: self)! }

    public static func < (a: Priority, b: Priority) -> Bool { a.rank < b.rank }
}

/// What a new request does, given what is playing. The written rules (docs/lessons.md, "Priorities"):
///
/// | new ↓ / playing → | important | message | text | notification | progress |
/// |---|---|---|---|---|---|
/// | important    | queue | interrupt | interrupt | interrupt | interrupt |
/// | message      | queue | queue     | interrupt | interrupt | interrupt |
/// | text         | queue | queue     | interrupt | interrupt | interrupt |
/// | notification | drop  | drop      | drop      | interrupt | drop      |
/// | progress     | last  | last      | last      | interrupt | last      |
///
/// - *interrupt*: what plays is canceled at the request's frame and the request begins there.
/// - *queue*: it waits; the waiting play most urgent first, in arrival order within a priority.
/// - *drop*: it is canceled at once, never heard.
/// - *last*: it waits as the one pending progress report, replacing (canceling) any earlier one,
///   so that of a burst of reports the last is spoken.
///
/// On arrival a request also cancels waiting requests it outranks in kind: important cancels
/// waiting notifications and progress; message and text cancel waiting text, notifications and
/// progress (a text is only worth saying if it is the latest).
public enum PriorityRule: String, Sendable {
    case interrupt, queue, drop, last

    public static func rule(new: Priority, playing: Priority) -> PriorityRule {
        switch new {
        case .important: playing == .important ? .queue : .interrupt
        case .message: playing <= .message ? .queue : .interrupt
        case .text: playing <= .message ? .queue : .interrupt
        case .notification: playing == .notification ? .interrupt : .drop
        case .progress: playing == .notification ? .interrupt : .last
        }
    }

    /// Whether a request of priority `new`, arriving, cancels a waiting one of `waiting`.
    static func cancels(new: Priority, waiting: Priority) -> Bool {
        switch new {
        case .important: waiting >= .notification
        case .message, .text: waiting >= .text
        case .notification, .progress: false
        }
    }
}

/// What an *interrupt* does to the request it interrupts.
public enum InterruptionPolicy: String, Sendable, Equatable, CaseIterable {
    /// It is canceled (speech-dispatcher's rule).
    case cancel
    /// It waits, first of its priority, and when its turn comes plays again from the start of
    /// the sentence it was in (or of the word, when its chain has no sentence there; or from the
    /// frame it was cut at, in a stretch without words).
    case resumeSentence
    /// The same, from the start of the word it was in.
    case resumeWord

    /// Where a chain cut at `frame` (of its own frames) resumes, by its cues.
    func resumeFrame(in schedule: Schedule, cutAt frame: Int) -> Int {
        guard self != .cancel else { return frame }
        var sentence: Int?
        var word: Int?
        for cue in schedule.cues where cue.frame <= frame {
            switch cue.kind {
            case .sentence(_, _, _, let end) where end > frame: sentence = cue.frame
            case .word(_, _, _, let end) where end > frame: word = cue.frame
            default: break
            }
        }
        return (self == .resumeSentence ? sentence ?? word : word) ?? frame
    }
}

/// An announcement the app asks for: a chain at a priority, at a frame as heard.
public struct AnnouncementRequest: Sendable, Equatable {
    public var frame: Int
    public var id: String
    public var chain: String
    public var priority: Priority

    public init(frame: Int, id: String, chain: String, priority: Priority) {
        self.frame = frame
        self.id = id
        self.chain = chain
        self.priority = priority
    }
}

/// Plays announcements by the priority rules on a virtual clock: the exact trace of what is
/// heard. Every request ends with exactly one `end` or `canceled`.
public struct Announcer {
    public let schedule: (String) throws(NarratorError) -> Schedule

    public init(schedule: @escaping (String) throws(NarratorError) -> Schedule) { self.schedule = schedule }

    private struct Playing {
        let request: AnnouncementRequest
        /// Where the chain's frame 0 is placed (before `from` when it resumes).
        let start: Int
        let schedule: Schedule
        var emitted = 0
        /// Where this stretch of it began to play.
        var from: Int
        var end: Int { start + schedule.frames }
    }

    /// A request waiting; `resumeFrame` is set for one that was interrupted (the frame of its
    /// chain to resume from).
    private struct Waiting {
        let request: AnnouncementRequest
        var resumeFrame: Int?
    }

    /// Plays `unsorted` by the priority rules; `interruptions` says what an interrupt does to
    /// what it interrupts.
    public func run(_ unsorted: [AnnouncementRequest], interruptions: InterruptionPolicy = .cancel) throws(NarratorError) -> Timeline {
        let requests = stablySorted(unsorted) { $0.frame < $1.frame }
        var out = TimelineBuilder()
        var playing: Playing?
        var waiting: [Waiting] = []
        var next = 0
        var lastEnd = 0

        func note(_ frame: Int, _ type: TraceKind, _ request: AnnouncementRequest, _ extra: [String: Cue.Field] = [:]) {
            var fields: [String: Cue.Field] = ["id": .string(request.id), "priority": .string(request.priority.rawValue)]
            for (key, value) in extra { fields[key] = value }
            out.note(frame, type, fields)
        }

        func emitCues(through frame: Int, inclusive: Bool) {
            guard var current = playing else { return }
            current.emitted = out.emitCues(
                of: current.schedule, placedAt: current.start, from: current.emitted, through: frame, inclusive: inclusive)
            playing = current
        }

        func begin(_ request: AnnouncementRequest, at frame: Int, resumingFrom resumeFrame: Int? = nil) throws(NarratorError) {
            let chain = try schedule(request.chain)
            if let resumeFrame {
                note(frame, .resume, request, ["chain": .string(request.chain), "from": .int(resumeFrame)])
                let emitted = chain.cues.firstIndex { $0.frame >= resumeFrame } ?? chain.cues.count
                playing = Playing(request: request, start: frame - resumeFrame, schedule: chain, emitted: emitted, from: frame)
            } else {
                note(frame, .begin, request, ["chain": .string(request.chain)])
                playing = Playing(request: request, start: frame, schedule: chain, from: frame)
            }
        }

        func startNextWaiting(at frame: Int) throws(NarratorError) {
            guard
                let index = waiting.indices.min(by: {
                    waiting[$0].request.priority < waiting[$1].request.priority
                        || (waiting[$0].request.priority == waiting[$1].request.priority && $0 < $1)
                })
            else { return }
            let next = waiting.remove(at: index)
            try begin(next.request, at: frame, resumingFrom: next.resumeFrame)
        }

        while next < requests.count || playing != nil {
            if let current = playing, next >= requests.count || requests[next].frame >= current.end {
                emitCues(through: current.end, inclusive: true)
                out.add(current.schedule, from: current.start, until: current.end, notBefore: current.from)
                lastEnd = current.end
                note(current.end, .end, current.request)
                playing = nil
                try startNextWaiting(at: current.end)
                continue
            }
            let request = requests[next]
            next += 1
            emitCues(through: request.frame, inclusive: false)
            note(request.frame, .request, request, ["chain": .string(request.chain)])
            waiting.removeAll { old in
                guard PriorityRule.cancels(new: request.priority, waiting: old.request.priority) else { return false }
                note(request.frame, .canceled, old.request, ["reason": .string("outranked by \(request.id)")])
                return true
            }
            guard let current = playing else {
                try begin(request, at: request.frame)
                continue
            }
            switch PriorityRule.rule(new: request.priority, playing: current.request.priority) {
            case .interrupt:
                emitCues(through: request.frame, inclusive: false)
                out.add(current.schedule, from: current.start, until: request.frame, notBefore: current.from)
                if interruptions == .cancel {
                    note(request.frame, .canceled, current.request, ["reason": .string("interrupted by \(request.id)")])
                } else {
                    // It waits first of its priority, to go on from its sentence's (or word's) start.
                    let resumeFrame = interruptions.resumeFrame(in: current.schedule, cutAt: request.frame - current.start)
                    note(request.frame, .interrupted, current.request, ["reason": .string("interrupted by \(request.id)"), "resumeFrame": .int(resumeFrame)])
                    waiting.insert(Waiting(request: current.request, resumeFrame: resumeFrame), at: 0)
                }
                playing = nil
                try begin(request, at: request.frame)
            case .queue:
                waiting.append(Waiting(request: request))
            case .drop:
                note(request.frame, .canceled, request, ["reason": .string("dropped: \(current.request.id) is playing")])
            case .last:
                waiting.removeAll { old in
                    guard old.request.priority == .progress else { return false }
                    note(request.frame, .canceled, old.request, ["reason": .string("superseded by \(request.id)")])
                    return true
                }
                waiting.append(Waiting(request: request))
            }
        }
        return out.timeline(end: max(lastEnd, requests.last?.frame ?? 0))
    }
}
