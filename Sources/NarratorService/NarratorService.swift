import Foundation
import NarratorKit
import NarratorOutputs
import NarratorTouches
import Synchronization

/// The daemon's engine, independent of transport: connections hand it request messages, and it
/// hands each its event lines through the connection's `EventOutlet`. Playbacks go through `NarratorKit`,
/// like the CLI's.
///
/// Every request gets exactly one terminal event (`finished`, `stopped` or `error`); a connection
/// that goes away cancels its own playbacks and nothing else.
public final class NarratorService: Sendable {
    public struct Configuration: Sendable {
        /// The folder of lessons that requests may name.
        public var library: String
        /// The output every playback opens, and its device (the output's default when nil).
        public var output: OutputKind
        public var device: String?
        public var latencyMs: Int
        /// Whether playbacks' audio and cue threads run at real-time priority.
        public var realtime: Bool
        /// The largest request accepted, in bytes; a longer one gets an error event.
        public var maxMessageBytes: Int
        /// The `narrator` executable whose `serve --prepare-request` prepares each lesson in a
        /// child process (`LessonLoader`): by default this process's own.
        public var loaderExecutable: String
        /// A connection with no request active and nothing unwritten for this long is closed
        /// (an `error` line says why); nil: never.
        public var idleTimeout: Duration?
        /// Where every touch heard goes (`serve --touches`): a `say`, and each tap as its
        /// activity hears it; nil: kept nowhere. With a log, a touch's request is answered once
        /// its touch is committed (`finished` with `logged`), or after `touchReplyLimit`.
        public var touches: TouchLog?
        /// How the event loops are woken ahead of each moment a playback announces; nil: they
        /// are woken by the moment's events, when the cue thread queues them.
        public var wakeAhead: WakeAhead?

        public init(library: String, output: OutputKind = Outputs.defaultKind, device: String? = nil, latencyMs: Int = 50,
                    realtime: Bool = false, maxMessageBytes: Int = 65536, loaderExecutable: String? = nil,
                    idleTimeout: Duration? = NarratorService.defaultIdleTimeout, touches: TouchLog? = nil,
                    wakeAhead: WakeAhead? = WakeAhead()) {
            self.library = library
            self.output = output
            self.device = device
            self.latencyMs = latencyMs
            self.realtime = realtime
            self.maxMessageBytes = maxMessageBytes
            self.loaderExecutable = loaderExecutable ?? LessonLoader.currentExecutable
            self.idleTimeout = idleTimeout
            self.touches = touches
            self.wakeAhead = wakeAhead
        }
    }

    public let configuration: Configuration
    let library: LessonLibrary
    private let state = Mutex(State())

    /// Where a request of a connection stands.
    private enum Active {
        /// A play request being prepared (decoding, opening the device); `canceled` is the
        /// reason when it was stopped meanwhile: it is stopped as soon as it starts.
        case preparing(canceled: String?)
        /// A cues request whose cues are being sent.
        case listing(canceled: Bool)
        /// Playing as playback `name`.
        case playing(String)
        /// Following a playback, or waiting for the next to begin (`nil`).
        case subscribed(String?)
    }

    /// Active requests one connection may have at once.
    static let maxActiveRequests = 64
    /// The longest a touch's request (`say`, `tap`, `replay`, `close`) waits for its touch to be
    /// committed to the touch log (a tap's, to be heard first): then it is answered
    /// `"logged":false` (the log locked by another process, the disk stalled, the playback
    /// paused), and that touch is not promised.
    public static let touchReplyLimit: Duration = .seconds(1)
    /// `Configuration.idleTimeout` unless told otherwise (`serve --idle-timeout`).
    public static let defaultIdleTimeout: Duration = .seconds(300)
    /// A `cues` listing is read from its loader child only while its client has at most this
    /// much unwritten; beyond it the listing is parked (the worker goes on to other requests,
    /// the child waits on its full pipe) until the client has taken all but `resumeBelow`.
    static let parkAbove = 256 * 1024
    static let resumeBelow = 64 * 1024
    /// Listings parked at once, all clients together: each keeps a loader child and its pipe
    /// (a descriptor) until its client reads. One more is ended with an `error` "busy".
    static let maxParked = 32

    // The work of all clients together is bounded, whatever they do: requests that prepare a
    // lesson wait in one queue for a fixed set of worker threads (each runs one loader child
    // at a time); a full queue, or every playback slot taken, is an `error` "busy" at once.
    // A request whose client has gone leaves the queue, and one being prepared is stopped
    // (its child killed).

    /// Worker threads preparing requests (each mostly waits on its loader child).
    static let workers = 3
    /// Requests waiting for a worker, all clients together, and one connection's.
    static let maxQueued = 128
    /// (A connection is worked on one request at a time, so its pipelined requests wait here.)
    static let maxQueuedPerConnection = 16
    /// Playbacks at once (each has an audio, a cue and a stream thread, and a device).
    static let maxPlaybacks = 8
    /// Nesting of `[` and `{` a request may have (the parser's limit for requests).
    static let maxRequestDepth = 32

    private struct Recipient: Hashable {
        let connection: Int
        let id: RequestID
        /// `{"id":…,`, the start of every line it is sent (made once, not per event).
        let head: String

        init(connection: Int, id: RequestID) {
            self.connection = connection
            self.id = id
            head = EventLine.head(for: id)
        }
    }

    /// A touch's request, answered once: `finished` with `"logged":true` when the touch log's
    /// writer has committed its touch, or `"logged":false` (dropped, refused by SQLite, not
    /// committed or not heard within `touchReplyLimit`, or its playback ended first),
    /// whichever comes first.
    private final class TouchReply: Sendable {
        let recipient: Recipient
        /// A tap's answer (its reply waits for the activity to hear it); nil for a `say`.
        let answer: String?
        private let answered = Atomic<Bool>(false)

        init(_ recipient: Recipient, answer: String? = nil) {
            self.recipient = recipient
            self.answer = answer
        }

        /// True the first time only: whoever gets it sends the reply.
        func claim() -> Bool { !answered.exchange(true, ordering: .acquiringAndReleasing) }

        var isAnswered: Bool { answered.load(ordering: .acquiring) }
        /// When it is to be answered at the latest (`MonotonicClock`).
        let due = MonotonicClock.now() + NarratorService.nanoseconds(NarratorService.touchReplyLimit)
    }

    /// Touch replies not yet answered, in the order they were asked, which is the order they
    /// are due (`touchReplyLimit` after): the answered ones leave as they reach the front, or
    /// all at once when `maxTouchReplies` are kept. A reply not yet answered is a touch in the
    /// log's queue (1024 at most) or a tap not yet heard (`Playback.maxWaitingTaps` a playback),
    /// so the bound holds them all.
    private final class TouchDeadlines: Sendable {
        private struct Kept {
            var replies: [TouchReply] = []
            var head = 0
        }

        private let kept = Mutex(Kept())
        /// Signaled when a reply is kept while none was (the thread waits for none then).
        let wake = DispatchSemaphore(value: 0)
        static let maxTouchReplies = 4 * TouchLog.capacity

        /// Keeps `reply` until it is due; false when even the answered ones taken out leave no
        /// room (then it is to be answered now).
        func add(_ reply: TouchReply) -> Bool {
            let (added, wasEmpty) = kept.withLock { kept in
                let wasEmpty = kept.head == kept.replies.count
                if kept.replies.count - kept.head >= Self.maxTouchReplies {
                    kept.replies = kept.replies[kept.head...].filter { !$0.isAnswered }
                    kept.head = 0
                    if kept.replies.count >= Self.maxTouchReplies { return (false, wasEmpty) }
                }
                kept.replies.append(reply)
                return (true, wasEmpty)
            }
            if added && wasEmpty { wake.signal() }
            return added
        }

        /// The replies due at `now` and not yet answered, taken out, and when the next is due.
        func due(at now: Int64) -> ([TouchReply], Int64?) {
            kept.withLock { kept in
                var due: [TouchReply] = []
                while kept.head < kept.replies.count {
                    let reply = kept.replies[kept.head]
                    guard reply.isAnswered || reply.due <= now else { break }
                    if !reply.isAnswered { due.append(reply) }
                    kept.head += 1
                }
                if kept.head == kept.replies.count {
                    kept.replies.removeAll(keepingCapacity: true)
                    kept.head = 0
                } else if kept.head * 2 > kept.replies.count {
                    kept.replies.removeFirst(kept.head)
                    kept.head = 0
                }
                return (due, kept.head < kept.replies.count ? kept.replies[kept.head].due : nil)
            }
        }
    }

    private let touchDeadlines = TouchDeadlines()

    private struct Connection {
        let outlet: any EventOutlet
        var requests: [RequestID: Active] = [:]
        /// The gains of every playback this connection starts (`volume`), kept across them.
        let gains = MixGains()
        /// The client will send nothing more: close once its last request has ended.
        var inputEnded = false
        /// When the client last sent something, a request of it ended, or it had events unwritten
        /// (`MonotonicClock`): the idle timeout counts from here.
        var lastActive = MonotonicClock.now()
    }

    private struct Entry {
        let owner: Recipient
        let playback: Playback
        /// What plays, as its touches are logged.
        let source: TouchLog.Source
        /// Taps taken and not yet heard, oldest first, whose replies wait for their touch (with
        /// a touch log): at most `Playback.maxWaitingTaps` besides any already answered.
        var waitingTaps: [TouchReply] = []
        var begin: EventLine?
        var subscribers: [Recipient] = []
        var cancelReason: String?
    }

    /// A request waiting for a worker.
    private struct Job {
        let recipient: Recipient
        let message: Data
        let lesson: String
        let program: Program
        let seed: UInt64
        let locale: String?
        let listing: Bool
        /// A listing taken up again: its loader child, started by an earlier worker.
        var child: LoaderChild?
    }

    private struct State {
        var queue: [Job] = []
        /// Listings parked while their client reads what it was sent, by connection (which
        /// keeps its place in `working`: one loader child a connection), and those whose
        /// client has read (or whose time is up), waiting for a worker before any queued job.
        var parked: [Int: Job] = [:]
        var resumed: [Job] = []
        /// Connections with a job being worked on (at most one each): a worker takes the oldest
        /// job of a connection that has none, so that a few clients cannot hold every worker.
        var working: [Int: Int] = [:]
        /// Playbacks preparing or playing: at most `maxPlaybacks`.
        var playbackSlots = 0
        var connections: [Int: Connection] = [:]
        var playbacks: [String: Entry] = [:]
        var waitingForNext: [Recipient] = []
        var lastConnection = 0
        var lastPlayback = 0
        var stopping = false
        var running = 0
        var workersAlive = NarratorService.workers
        /// Who waits for the workers to be idle (`shutdown`), by number: the wait's time-out
        /// takes its own out.
        var drained: [Int: CheckedContinuation<Void, Never>] = [:]
        var lastDrainWaiter = 0
    }

    /// How long `shutdown` waits for the workers' jobs to end. A job that is not done by then
    /// (a lesson prepared in the daemon, whose decoding no one can interrupt) does not hold
    /// the daemon: every request has had its `stopped` already, and the process ends with
    /// the worker's thread in it.
    static let drainLimit: Duration = .milliseconds(1200)

    let loader: LessonLoader
    /// One signal per job queued (a purged job leaves a signal that finds nothing).
    private let queued = DispatchSemaphore(value: 0)

    public init(_ configuration: Configuration) throws(NarratorError) {
        self.configuration = configuration
        library = try LessonLibrary(path: configuration.library)
        loader = LessonLoader(executable: configuration.loaderExecutable, library: library)
        // The threads hold the service only while working on a job: they end on `shutdown`,
        // or when the service goes away. Normal priority, set explicitly: they spawn the
        // loader children and start playbacks, which must not inherit a real-time policy.
        for number in 0..<Self.workers {
            ThreadPolicy.normal.startThread(named: "narrator-prep-\(number)") { [weak self, queued = self.queued] _ in
                while true {
                    queued.wait()
                    guard let service = self, service.workOnce() else { return }
                }
            }
        }
        Self.startSweeper(self)
        if configuration.touches != nil { Self.startTouchDeadlines(self) }
    }

    deinit {
        touchDeadlines.wake.signal()
        for _ in 0..<Self.workers { queued.signal() }
    }

    /// Every second (or sooner for a short idle timeout): closes idle connections and takes up
    /// parked listings whose time is up (their child is then stopped with an error).
    private static func startSweeper(_ service: NarratorService) {
        let period: Int64 = min(1_000_000_000, service.configuration.idleTimeout.map { max(10_000_000, Self.nanoseconds($0) / 4) } ?? 1_000_000_000)
        ThreadPolicy.normal.startThread(named: "narrator-sweep") { [weak service] _ in
            while true {
                var pause = timespec(tv_sec: Int(period / 1_000_000_000), tv_nsec: Int(period % 1_000_000_000))
                var left = timespec()
                while nanosleep(&pause, &left) != 0 && errno == EINTR { pause = left }
                guard let service, service.sweep() else { return }
            }
        }
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// One pass of the sweeper; false once the service is stopping.
    private func sweep() -> Bool {
        let now = MonotonicClock.now()
        let idle = configuration.idleTimeout.map(Self.nanoseconds)
        return state.withLock { state in
            if state.stopping { return false }
            for (connection, job) in state.parked where (job.child?.deadline ?? 0) <= now { unpark(connection, in: &state) }
            guard let idle else { return true }
            for (number, client) in state.connections {
                if client.outlet.backlog > 0 || state.parked[number] != nil || state.working[number] != nil {
                    state.connections[number]?.lastActive = now
                    continue
                }
                guard client.requests.isEmpty, now - client.lastActive >= idle else { continue }
                let seconds = Double(idle) / 1e9
                let line = EventLine.error("closing the connection: no request for \(seconds.formatted(.number.precision(.fractionLength(0...3)))) s (the daemon's idle timeout)")
                if client.outlet.send(EventLines(head: EventLine.head(for: nil), bodies: [line.body])) { client.outlet.flush() }
                drop(number, in: &state)
            }
            return true
        }
    }

    /// Worker threads that have not yet ended (after `shutdown`, none once their jobs end).
    var workersAlive: Int { state.withLock { $0.workersAlive } }

    /// A new client, whose events go out through `outlet` until the daemon finishes it
    /// (shutdown, or the client stopped reading).
    public func connect(_ outlet: any EventOutlet) -> ClientConnection {
        let number = state.withLock { state in
            state.lastConnection += 1
            state.connections[state.lastConnection] = Connection(outlet: outlet)
            return state.lastConnection
        }
        return ClientConnection(service: self, number: number)
    }

    /// Cancels every request still active (`stopped`, reason "daemon stopping"), waits until
    /// their terminal events are queued, then closes every connection once what it was sent has
    /// been written.
    public func shutdown() async {
        let reason = "daemon stopping"
        state.withLock { state in
            state.stopping = true
            for job in state.queue {
                finish(job.recipient, with: EventLine(.stopped, frame: nil, heard: MonotonicClock.now(), fields: [EventEncoder.Member("reason", .string(reason))]), in: &state)
            }
            state.queue = []
            for job in Array(state.parked.values) + state.resumed {
                job.child?.end()
                finish(job.recipient, with: EventLine(.stopped, frame: nil, heard: MonotonicClock.now(), fields: [EventEncoder.Member("reason", .string(reason))]), in: &state)
            }
            state.parked = [:]
            state.resumed = []
            for (number, connection) in state.connections {
                for id in connection.requests.keys {
                    _ = stop(Recipient(connection: number, id: id), reason: reason, in: &state)
                }
            }
        }
        // Each worker wakes and ends (once its job, if any, has ended).
        for _ in 0..<Self.workers { queued.signal() }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let waiter: Int? = state.withLock { state in
                if state.running == 0 { return nil }
                state.lastDrainWaiter += 1
                state.drained[state.lastDrainWaiter] = done
                return state.lastDrainWaiter
            }
            guard let waiter else { return done.resume() }
            let (seconds, attoseconds) = Self.drainLimit.components
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))) {
                self.state.withLock { $0.drained.removeValue(forKey: waiter) }?.resume()
            }
        }
        let outlets = state.withLock { state in
            defer { state.connections = [:] }
            return state.connections.values.map(\.outlet)
        }
        await withTaskGroup(of: Void.self) { group in
            for outlet in outlets {
                outlet.finish()
                group.addTask { await outlet.closed() }
            }
        }
    }

    // MARK: Requests

    func receive(_ data: Data, from connection: Int) {
        let (id, parsed) = ServiceRequest.parse(data)
        guard case .success(let request) = parsed, let id else {
            if case .failure(let error) = parsed { reply(.error(error.description), to: connection, id: id) }
            return
        }
        let me = Recipient(connection: connection, id: id)
        // Checked and registered in one step: a stop, a disconnect or the shutdown sees the
        // request either not yet there or already active.
        let work: Bool = state.withLock { state in
            guard let client = state.connections[connection] else { return false }
            state.connections[connection]?.lastActive = MonotonicClock.now()
            func refuse(_ problem: String) -> Bool {
                send(.error(problem), to: me, in: &state)
                return false
            }
            if state.stopping { return refuse("the daemon is stopping") }
            if client.requests[id] != nil {
                return refuse("request \(id) is still active on this connection: give each request its own id")
            }
            switch request {
            case .tap(let target, let answer):
                guard case .playing(let name)? = client.requests[target], let playback = state.playbacks[name]?.playback else {
                    return refuse("request \(target) is not playing on this connection")
                }
                let now = MonotonicClock.now()
                switch playback.tap(answer) {
                case .taken:
                    if configuration.touches != nil {
                        // Answered once the activity has heard it and its touch is committed.
                        let reply = TouchReply(me, answer: answer)
                        state.playbacks[name]?.waitingTaps.append(reply)
                        expire(reply, in: &state)
                        return false
                    }
                    send(EventLine(.finished, frame: nil, heard: now), to: me, in: &state)
                    return false
                case .notAnActivity:
                    return refuse("request \(target) plays a chain: only an activity answered live takes taps")
                case .tooManyWaiting:
                    return refuse("request \(target) has \(Playback.maxWaitingTaps) taps not yet heard: tap again once they are")
                case .tooMany:
                    return refuse("request \(target) has taken \(Playback.maxTaps) taps, the most one playback takes")
                }
            case .control(let target, let control):
                guard case .playing(let name)? = client.requests[target], let playback = state.playbacks[name]?.playback else {
                    return refuse("request \(target) is not playing on this connection")
                }
                var logged: Bool?
                do throws(NarratorError) {
                    switch control {
                    case .pause: playback.pause()
                    case .resume(let point): playback.resume(from: point)
                    case .seek(let position): try playback.seek(to: position)
                    case .say(let clip, let word, let then):
                        let said = try playback.say(clip: clip, word: word, then: then)
                        // Queued for the touch log's writer: no disk on this thread. The word is
                        // said at once; the request is answered once the writer has committed.
                        if let touches = configuration.touches, let source = state.playbacks[name]?.source {
                            let reply = TouchReply(me)
                            let touch = TouchLog.Touch(.say, source: source, clip: clip, wordIndex: word, wordText: said.text, frame: said.frame)
                            if touches.record(touch, committed: { [weak self] committed in self?.answer(reply, logged: committed) }) {
                                expire(reply, in: &state)
                                return false
                            }
                            logged = false  // dropped: answered at once
                        }
                    case .speed(let speed): try playback.setSpeed(speed)
                    }
                } catch {
                    return refuse(error.description)
                }
                send(logged.map(Self.touchFinished) ?? EventLine(.finished, frame: nil, heard: MonotonicClock.now()), to: me, in: &state)
                return false
            case .volume(let target, let gain, let muted):
                if let gain { client.gains.set(target, gain: gain) }
                if let muted { client.gains.set(target, muted: muted) }
                send(EventLine(.finished, frame: nil, heard: MonotonicClock.now()), to: me, in: &state)
                return false
            case .stop(let target):
                guard stop(Recipient(connection: connection, id: target), reason: "stopped", in: &state) else {
                    return refuse("request \(target) is not active on this connection")
                }
                send(EventLine(.finished, frame: nil, heard: MonotonicClock.now()), to: me, in: &state)
                return false
            default:
                break
            }
            if client.requests.count >= Self.maxActiveRequests {
                return refuse("\(Self.maxActiveRequests) requests are already active on this connection")
            }
            switch request {
            case .play, .cues, .library:
                let job: Job
                switch request {
                case .play(let lesson, let program, let seed, let locale):
                    job = Job(recipient: me, message: data, lesson: lesson, program: program, seed: seed, locale: locale, listing: false)
                case .cues(let lesson, let program, let seed, let locale):
                    job = Job(recipient: me, message: data, lesson: lesson, program: program, seed: seed, locale: locale, listing: true)
                default:
                    // Listed by a loader child like a schedule's cues; it reads no lesson named
                    // by the request, and plays nothing (the program is not used).
                    job = Job(recipient: me, message: data, lesson: ".", program: .chain("", repeats: 1), seed: 0, locale: nil, listing: true)
                }
                let listing = job.listing
                if state.queue.count >= Self.maxQueued {
                    return refuse("busy: \(Self.maxQueued) requests are waiting to be prepared; try again shortly")
                }
                if state.queue.lazy.filter({ $0.recipient.connection == connection }).count >= Self.maxQueuedPerConnection {
                    return refuse("busy: \(Self.maxQueuedPerConnection) requests of this connection are waiting to be prepared; wait for their answers")
                }
                state.connections[connection]?.requests[id] = listing ? .listing(canceled: false) : .preparing(canceled: nil)
                state.queue.append(job)
                return true
            case .subscribe(let playback):
                if playback == "next" {
                    state.waitingForNext.append(me)
                    state.connections[connection]?.requests[id] = .subscribed(nil)
                    return false
                }
                guard state.playbacks[playback] != nil else {
                    return refuse("no playback '\(playback)' is playing (name one from a start event, or next)")
                }
                state.playbacks[playback]?.subscribers.append(me)
                state.connections[connection]?.requests[id] = .subscribed(playback)
                if let begin = state.playbacks[playback]?.begin { send(begin, to: me, in: &state) }
                return false
            case .tap, .stop, .control, .volume:
                return false
            }
        }
        if work { queued.signal() }
    }

    // MARK: Workers

    /// One wake-up of a worker thread: takes the oldest queued request of a connection that has
    /// no other request being prepared (so that a few clients cannot hold every worker), and
    /// prepares it. False once the service is stopping: the thread ends.
    private func workOnce() -> Bool {
        let job: Job?? = state.withLock { state in
            if state.stopping {
                state.workersAlive -= 1
                return .none
            }
            if !state.resumed.isEmpty {
                // A listing taken up again keeps its connection's place in `working`.
                state.running += 1
                return state.resumed.removeFirst()
            }
            guard let index = state.queue.firstIndex(where: { state.working[$0.recipient.connection] == nil }) else { return .some(nil) }
            let job = state.queue.remove(at: index)
            state.working[job.recipient.connection] = 1
            state.running += 1
            return job
        }
        guard let job else { return false }
        guard let job else { return true }
        let playing = job.listing ? false : start(job)
        if job.listing, list(job) {
            running(-1)  // parked: no worker holds it
            return true
        }
        let more = state.withLock { state in
            state.working[job.recipient.connection] = nil
            // A job of this connection left waiting may now be taken.
            return state.queue.contains { $0.recipient.connection == job.recipient.connection }
        }
        if more { queued.signal() }
        if !playing { running(-1) }
        return true
    }

    /// Whether `request` is still wanted: its connection is there and it was not stopped.
    private func wanted(_ request: Recipient) -> Bool {
        state.withLock { state in
            switch state.connections[request.connection]?.requests[request.id] {
            case .listing(canceled: false)?, .preparing(canceled: nil)?: true
            default: false
            }
        }
    }

    /// The terminal event of a request stopped before it played: `stopped`, with the reason.
    private func canceledLine(_ request: Recipient, in state: State) -> EventLine {
        var reason = state.stopping ? "daemon stopping" : "stopped"
        if case .preparing(let given?)? = state.connections[request.connection]?.requests[request.id] { reason = given }
        return EventLine(.stopped, frame: nil, heard: MonotonicClock.now(), fields: [EventEncoder.Member("reason", .string(reason))])
    }

    /// Ends a request that is not playing: `line`, or `stopped` when it was stopped meanwhile
    /// (nothing when its client has gone).
    private func conclude(_ request: Recipient, with line: EventLine) {
        state.withLock { state in
            switch state.connections[request.connection]?.requests[request.id] {
            case nil: return
            case .listing(canceled: true)?, .preparing(canceled: .some)?: finish(request, with: canceledLine(request, in: state), in: &state)
            default: finish(request, with: line, in: &state)
            }
        }
    }

    /// Sends a schedule's cues (without playing), at the pace the client reads them: they are
    /// the loader child's output, read while the client has little unwritten. When it has
    /// more, the listing is parked and the worker returns (true): no worker waits on a
    /// client's reading. The listing is taken up again, by whichever worker is free, once the
    /// client has read (`EventOutlet.whenDrained`), or stopped with an error once the
    /// loader's wall limit has passed (the sweeper), or ended when the client goes.
    private func list(_ job: Job) -> Bool {
        let me = job.recipient
        guard wanted(me), let outlet = state.withLock({ $0.connections[me.connection]?.outlet }) else {
            job.child?.end()
            conclude(me, with: .error("stopped"))
            return false
        }
        let child: LoaderChild
        if let resumed = job.child {
            child = resumed
        } else {
            switch loader.start(request: job.message, lesson: job.lesson) {
            case .success(let started): child = started
            case .failure(let failure):
                conclude(me, with: .error(library.scrub(failure.message)))
                return false
            }
        }
        let outcome = child.pump(
            isCanceled: { !wanted(me) },
            canRead: { outlet.backlog <= Self.parkAbove },
            lines: { bodies in
                state.withLock { state in
                    guard case .listing(canceled: false)? = state.connections[me.connection]?.requests[me.id] else { return }
                    send(bodies, to: [me], in: &state)
                }
            })
        switch outcome {
        case nil:
            var parked = job
            parked.child = child
            let kept: Bool? = state.withLock { state in
                guard state.connections[me.connection] != nil else { return false }
                guard state.parked.count < Self.maxParked else { return nil }
                state.parked[me.connection] = parked
                return true
            }
            guard kept == true else {
                child.end()
                if kept == nil {
                    conclude(me, with: .error("busy: \(Self.maxParked) listings are waiting for their clients to read them; read the events as they come"))
                }
                return false
            }
            let connection = me.connection
            outlet.whenDrained(below: Self.resumeBelow) { [weak self] in
                self?.state.withLock { state in self?.unpark(connection, in: &state) }
            }
            return true
        case .finished(let terminal, _)?: conclude(me, with: EventLine(body: terminal))
        case .canceled?: conclude(me, with: .error("stopped"))
        case .failed(let problem)?: conclude(me, with: .error(library.scrub(problem)))
        }
        return false
    }

    /// Hands a parked listing of `connection` back to the workers.
    private func unpark(_ connection: Int, in state: inout State) {
        guard let job = state.parked.removeValue(forKey: connection) else { return }
        state.resumed.append(job)
        queued.signal()
    }

    /// A message that is not a request at all (too long, not text): an error event, no id.
    func refuse(_ problem: String, to connection: Int) {
        reply(.error("request: \(problem)"), to: connection, id: nil)
    }

    /// The client has gone: its playbacks stop, its subscriptions end; nothing more is sent.
    func disconnect(_ connection: Int) {
        state.withLock { state in drop(connection, in: &state) }
    }

    /// The client will send no more requests (it closed its side for writing): the connection
    /// closes once its last request has had its terminal event.
    func inputEnded(_ connection: Int) {
        state.withLock { state in
            state.connections[connection]?.inputEnded = true
            closeIfDone(connection, in: &state)
        }
    }

    /// Ends `request`; false when it is not active. A playback is stopped (its terminal
    /// `stopped` follows from its cue thread), a subscription ends with `stopped` now.
    private func stop(_ request: Recipient, reason: String, in state: inout State) -> Bool {
        if let queued = state.queue.firstIndex(where: { $0.recipient == request }) {
            // Still waiting for a worker: it never will.
            state.queue.remove(at: queued)
            finish(request, with: EventLine(.stopped, frame: nil, heard: MonotonicClock.now(), fields: [EventEncoder.Member("reason", .string(reason))]), in: &state)
            return true
        }
        switch state.connections[request.connection]?.requests[request.id] {
        case .playing(let name)?:
            if state.playbacks[name]?.cancelReason == nil { state.playbacks[name]?.cancelReason = reason }
            state.playbacks[name]?.playback.stop()
        case .subscribed(let name)?:
            if let name {
                state.playbacks[name]?.subscribers.removeAll { $0 == request }
            } else {
                state.waitingForNext.removeAll { $0 == request }
            }
            finish(request, with: EventLine(.stopped, frame: nil, heard: MonotonicClock.now(), fields: [EventEncoder.Member("reason", .string(reason))]), in: &state)
        case .preparing(nil)?:
            state.connections[request.connection]?.requests[request.id] = .preparing(canceled: reason)
        case .listing(false)?:
            state.connections[request.connection]?.requests[request.id] = .listing(canceled: true)
            if state.parked[request.connection]?.recipient == request { unpark(request.connection, in: &state) }
        case .preparing?, .listing?:
            break  // already stopping
        case nil:
            return false
        }
        return true
    }

    /// Sends `request` its terminal event; it is no longer active.
    private func finish(_ request: Recipient, with line: EventLine, in state: inout State) {
        send(line, to: request, in: &state)
        state.connections[request.connection]?.requests[request.id] = nil
        state.connections[request.connection]?.lastActive = MonotonicClock.now()
        closeIfDone(request.connection, in: &state)
    }

    private func finish(_ request: Recipient, with line: EventLine) {
        state.withLock { state in finish(request, with: line, in: &state) }
    }

    private func closeIfDone(_ connection: Int, in state: inout State) {
        guard let client = state.connections[connection], client.inputEnded, client.requests.isEmpty else { return }
        state.connections[connection] = nil
        client.outlet.finish()
    }

    // MARK: Playback

    /// Prepares (first in a loader child, then here) and opens the device, on a worker; the
    /// playback's cue thread then forwards each event as it is delivered, and sends the
    /// terminal event once playback ends. True when a playback started (it ends `running`).
    private func start(_ job: Job) -> Bool {
        let owner = job.recipient
        let slot: Bool = state.withLock { state in
            guard state.playbackSlots < Self.maxPlaybacks else { return false }
            state.playbackSlots += 1
            return true
        }
        guard slot else {
            conclude(owner, with: .error("busy: \(Self.maxPlaybacks) playbacks are playing or being prepared; try again later"))
            return false
        }
        func release() { state.withLock { $0.playbackSlots -= 1 } }
        let checked = loader.run(request: job.message, lesson: job.lesson, isCanceled: { !wanted(owner) }, lines: { _ in })
        switch checked {
        case .finished(_, prepared: true):
            break
        case .finished(let terminal, prepared: false):
            release()
            conclude(owner, with: EventLine(body: terminal))
            return false
        case .canceled:
            release()
            conclude(owner, with: .error("stopped"))
            return false
        case .failed(let problem):
            release()
            conclude(owner, with: .error(library.scrub(problem)))
            return false
        }
        let playback: Playback
        let forwarder = Forwarder(service: self)
        do {
            let loaded = try library.load(job.lesson, locale: job.locale)
            let prepared = try loaded.prepare(job.program, seed: job.seed)
            forwarder.finishedFields = LessonLibrary.localesMember(of: loaded)
            guard wanted(owner) else {
                release()
                conclude(owner, with: .error("stopped"))
                return false
            }
            forwarder.frames = prepared.schedule.frames
            let output = try Outputs.open(
                configuration.output, device: configuration.device, rate: prepared.schedule.sampleRate,
                channels: prepared.schedule.channels, latencyMs: configuration.latencyMs,
                threads: configuration.realtime ? .realtime : .normal)
            let gains = state.withLock { $0.connections[owner.connection]?.gains } ?? MixGains()
            playback = prepared.play(
                on: output, threads: configuration.realtime ? .realtime : .normal, gains: gains,
                onEvents: forwarder.forward, onUpcoming: configuration.wakeAhead == nil ? nil : forwarder.upcoming,
                onFinished: { [self] _ in ended(forwarder) })
        } catch {
            release()
            let line: EventLine =
                switch error {
                case let error as PlaybackError: .error(library.scrub("audio device '\(error.device)': \(error.message)"), fields: [EventEncoder.Member("code", .string(error.code))])
                case let error as NarratorError: .error(library.publicDescription(of: error))
                default: .error(library.scrub("\(error)"))
                }
            conclude(owner, with: line)
            return false
        }
        state.withLock { state in
            state.lastPlayback += 1
            let name = "p\(state.lastPlayback)"
            forwarder.name = name
            let source: TouchLog.Source =
                switch job.program {
                case .activity(let activity, _, _): TouchLog.Source(lesson: job.lesson, chain: nil, activity: activity, playback: name)
                case .chain(let chain, _): TouchLog.Source(lesson: job.lesson, chain: chain, activity: nil, playback: name)
                case .requests: TouchLog.Source(lesson: job.lesson, chain: nil, activity: nil, playback: name)
                }
            forwarder.source = source
            var entry = Entry(owner: owner, playback: playback, source: source)
            switch state.connections[owner.connection]?.requests[owner.id] {
            case .preparing(let canceled)?:
                state.connections[owner.connection]?.requests[owner.id] = .playing(name)
                entry.cancelReason = canceled
            default:
                entry.cancelReason = "client disconnected"  // the connection has gone
            }
            if entry.cancelReason != nil { playback.stop() }
            state.playbacks[name] = entry
        }
        forwarder.started.signal()
        return true
    }

    /// A playback has ended (on its cue thread, after its last event): its terminal event
    /// goes to its owner and subscribers, and its slot is free.
    private func ended(_ forwarder: Forwarder) {
        forwarder.waitUntilNamed()
        let name = forwarder.name
        let end = forwarder.terminal ?? EventLine(.finished, frame: forwarder.last?.frame ?? forwarder.frames,
                                                  heard: forwarder.last?.heard ?? MonotonicClock.now(),
                                                  fields: [EventEncoder.Member("playback", .string(name))] + forwarder.finishedFields)
        state.withLock { state in
            state.playbackSlots -= 1
            guard let entry = state.playbacks.removeValue(forKey: name) else { return }
            // Taps never heard are no touch.
            for reply in entry.waitingTaps { answer(reply, logged: false, in: &state) }
            for recipient in [entry.owner] + entry.subscribers { finish(recipient, with: end, in: &state) }
        }
        running(-1)
    }

    /// Turns one playback's events into event lines, on its cue thread. Its fields are written
    /// by the cue thread only (and `name` before `started` is signaled); read after the
    /// playback has finished.
    private final class Forwarder: @unchecked Sendable {
        let service: NarratorService
        var frames = 0
        /// What `finished` says besides the playback's name: the locales used (`locales`).
        var finishedFields: [EventEncoder.Member] = []
        var name = ""
        /// What plays, for the touch log (set with `name`).
        var source: TouchLog.Source?
        /// Taps logged, by frame: a seek back delivers a tap's event again, which is no new touch.
        private var tapsLogged: [Int: Int] = [:]
        let started = DispatchSemaphore(value: 0)
        private var waited = false
        var last: (frame: Int, heard: Int64)?
        var terminal: EventLine?

        init(service: NarratorService) {
            self.service = service
        }

        /// The playback's name is given once it is registered (right after it opens).
        func waitUntilNamed() {
            guard !waited else { return }
            started.wait()
            started.signal()
            waited = true
        }

        /// Forwards the events of one moment: their lines go to each client in one write.
        func forward(_ events: [PlaybackEvent]) {
            waitUntilNamed()
            var lines: [EventLine] = []
            var tapsNow: [Int: Int] = [:]
            for event in events {
                switch event {
                case .start:
                    service.began(name, EventLine(event, playback: name))
                case .cue(let cue, let heard, _):
                    last = (cue.frame, heard)
                    lines.append(EventLine(event, playback: name))
                    if case .activity(.tap, let fields) = cue.kind, let touches = service.configuration.touches, let source {
                        // Its result is known only now, as the activity hears it: the touch is
                        // queued for the log's writer (a short lock, never the disk), and its
                        // request answered once the writer has committed it.
                        tapsNow[cue.frame, default: 0] += 1
                        if tapsNow[cue.frame]! > tapsLogged[cue.frame, default: 0] {
                            tapsLogged[cue.frame] = tapsNow[cue.frame]
                            let touch = TouchLog.Touch.tap(fields: fields, frame: cue.frame, source: source)
                            let reply = service.heardTap(touch.answer, of: name)
                            let queued = touches.record(touch, committed: { [weak service] committed in
                                if let reply { service?.answer(reply, logged: committed) }
                            })
                            if !queued, let reply { service.answer(reply, logged: false) }
                        }
                    }
                case .underrun, .lateSwitch, .paused, .resumed, .seeked, .speedChanged:
                    lines.append(EventLine(event, playback: name))
                case .streamProblem(let problem, _):
                    lines.append(EventLine(event, playback: name, message: service.library.publicDescription(of: problem)))
                case .canceled:
                    terminal = EventLine(event, playback: name, reason: service.cancelReason(of: name))
                case .error(let error, _, _):
                    terminal = EventLine(event, playback: name, message: service.library.scrub("audio device '\(error.device)': \(error.message)"))
                }
            }
            if !lines.isEmpty { service.publish(lines, from: name) }
        }

        /// The next moment will be delivered at `time`: the event loops of its clients are to
        /// be awake then.
        func upcoming(_ time: Int64) {
            waitUntilNamed()
            service.expect(at: time, from: name)
        }
    }

    /// The reply of the tap playback `name` has just heard (`answer`): the oldest waiting. A
    /// tap before it with another answer was heard without a `tap` event (its plan failed):
    /// no touch, answered so.
    private func heardTap(_ answer: String?, of name: String) -> TouchReply? {
        state.withLock { state in
            while let first = state.playbacks[name]?.waitingTaps.first {
                state.playbacks[name]?.waitingTaps.removeFirst()
                if first.answer == answer { return first }
                self.answer(first, logged: false, in: &state)
            }
            return nil
        }
    }

    // MARK: Touch replies

    private static func touchFinished(logged: Bool) -> EventLine {
        EventLine(.finished, frame: nil, heard: MonotonicClock.now(), fields: [EventEncoder.Member("logged", .bool(logged))])
    }

    /// Sends a touch's reply, unless it has gone already.
    private func answer(_ reply: TouchReply, logged: Bool) {
        guard reply.claim() else { return }
        state.withLock { state in send(Self.touchFinished(logged: logged), to: reply.recipient, in: &state) }
    }

    private func answer(_ reply: TouchReply, logged: Bool, in state: inout State) {
        guard reply.claim() else { return }
        send(Self.touchFinished(logged: logged), to: reply.recipient, in: &state)
    }

    /// A touch's reply goes out `touchReplyLimit` from now at the latest (`touchDeadlines`'
    /// thread sends it): no request hangs on the log.
    private func expire(_ reply: TouchReply, in state: inout State) {
        if !touchDeadlines.add(reply) { answer(reply, logged: false, in: &state) }
    }

    /// The thread that answers touch replies whose time is up, started with a touch log. It
    /// holds the service only while answering: it ends once the service has gone.
    private static func startTouchDeadlines(_ service: NarratorService) {
        ThreadPolicy.normal.startThread(named: "narrator-due") { [weak service, deadlines = service.touchDeadlines] _ in
            while true {
                let (due, next) = deadlines.due(at: MonotonicClock.now())
                if !due.isEmpty {
                    guard let service else { return }
                    for reply in due { service.answer(reply, logged: false) }
                }
                if let next {
                    _ = deadlines.wake.wait(timeout: .now() + .nanoseconds(Int(max(0, next - MonotonicClock.now()))))
                } else {
                    deadlines.wake.wait()
                }
                if service == nil { return }
            }
        }
    }

    private func cancelReason(of name: String) -> String {
        state.withLock { $0.playbacks[name]?.cancelReason } ?? "stopped"
    }

    private func began(_ name: String, _ begin: EventLine) {
        state.withLock { state in
            guard var entry = state.playbacks[name] else { return }
            entry.begin = begin
            entry.subscribers += state.waitingForNext
            for waiting in state.waitingForNext { state.connections[waiting.connection]?.requests[waiting.id] = .subscribed(name) }
            state.waitingForNext = []
            state.playbacks[name] = entry
            for recipient in [entry.owner] + entry.subscribers { send(begin, to: recipient, in: &state) }
        }
    }

    private func publish(_ lines: [EventLine], from name: String) {
        let bodies = lines.map(\.body)
        state.withLock { state in
            guard let entry = state.playbacks[name] else { return }
            send(bodies, to: [entry.owner] + entry.subscribers, in: &state)
        }
    }

    /// Has the outlets of a playback's owner and subscribers wake their event loops ahead of
    /// a moment heard at `time` (once per loop: `ChannelOutlet`).
    private func expect(at time: Int64, from name: String) {
        guard let wakeAhead = configuration.wakeAhead else { return }
        state.withLock { state in
            guard let entry = state.playbacks[name] else { return }
            for recipient in [entry.owner] + entry.subscribers {
                state.connections[recipient.connection]?.outlet.expect(at: time, wakeAhead)
            }
        }
    }

    // MARK: Delivery

    private func reply(_ line: EventLine, to connection: Int, id: RequestID?) {
        state.withLock { state in
            guard let client = state.connections[connection] else { return }
            if client.outlet.send(EventLines(head: EventLine.head(for: id), bodies: [line.body])) {
                client.outlet.flush()
            } else {
                drop(connection, in: &state)
            }
        }
    }

    private func send(_ line: EventLine, to recipient: Recipient, in state: inout State) {
        send([line.body], to: [recipient], in: &state)
    }

    /// The events of one moment, handed to each client's outlet together (one write), then
    /// the outlets flushed: no client's write waits for the queuing of the others (a
    /// `ChannelOutlet` wakes its loop at the first line). `bodies` are shared: each outlet puts
    /// its own request id in front, on its own thread, so a moment costs the delivering thread
    /// little per client.
    private func send(_ bodies: [String], to recipients: [Recipient], in state: inout State) {
        var queued: [any EventOutlet] = []
        queued.reserveCapacity(recipients.count)
        for recipient in recipients {
            guard let client = state.connections[recipient.connection] else { continue }
            if client.outlet.send(EventLines(head: recipient.head, bodies: bodies)) {
                queued.append(client.outlet)
            } else {
                drop(recipient.connection, in: &state)
            }
        }
        for outlet in queued { outlet.flush() }
    }

    /// A client that cannot keep up (its outlet refused a line) is disconnected, as if gone.
    private func drop(_ connection: Int, in state: inout State) {
        guard let client = state.connections.removeValue(forKey: connection) else { return }
        state.queue.removeAll { $0.recipient.connection == connection }
        if let parked = state.parked.removeValue(forKey: connection) {
            parked.child?.end()
            state.working[connection] = nil
        }
        for (id, active) in client.requests {
            let request = Recipient(connection: connection, id: id)
            switch active {
            case .playing(let name):
                if state.playbacks[name]?.cancelReason == nil { state.playbacks[name]?.cancelReason = "client disconnected" }
                state.playbacks[name]?.playback.stop()
            case .subscribed(let name?):
                state.playbacks[name]?.subscribers.removeAll { $0 == request }
            case .subscribed(nil):
                state.waitingForNext.removeAll { $0 == request }
            case .preparing, .listing:
                break  // `start` and `list` find the request gone and stop
            }
        }
        client.outlet.finish()
    }

    private func running(_ change: Int) {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.running += change
            guard state.running == 0 else { return [] }
            defer { state.drained = [:] }
            return Array(state.drained.values)
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// One client of the daemon, whatever carries it.
public final class ClientConnection: Sendable {
    private let service: NarratorService
    private let number: Int

    fileprivate init(service: NarratorService, number: Int) {
        self.service = service
        self.number = number
    }

    /// One request message (a line without its newline, or a WebSocket text message).
    public func receive(_ message: Data) {
        guard message.count <= service.configuration.maxMessageBytes else {
            refuseOversized(bytes: message.count)
            return
        }
        service.receive(message, from: number)
    }

    /// A message over the size limit (counted so far): refused, and the connection stays up.
    public func refuseOversized(bytes: Int) {
        service.refuse("message of \(bytes) bytes or more is over the \(service.configuration.maxMessageBytes)-byte limit", to: number)
    }

    /// A WebSocket binary message: requests are text.
    public func refuseBinary() {
        service.refuse("binary message; requests are JSON text", to: number)
    }

    /// The client will send nothing more; the connection closes once its requests have ended.
    public func inputEnded() { service.inputEnded(number) }

    /// The client has gone: its playbacks stop (`stopped`, reason "client disconnected").
    public func disconnect() { service.disconnect(number) }
}

/// Where a connection's event lines go: called with the service's lock held, from whatever
/// thread delivers the event (a playback's cue thread among them), so it must not block.
public protocol EventOutlet: Sendable {
    /// Queues the lines of events heard at one moment, to be written together. False when
    /// the client has fallen too far behind.
    func send(_ lines: EventLines) -> Bool
    /// Starts writing what `send` queued: called once the lines of one moment are queued for
    /// every client, so that no client's write waits on another's queuing.
    func flush()
    /// Lines are expected at `time` (monotonic ns), a moment a playback announced: whatever
    /// writes them is to be awake and ready then (`wakeAhead`), not woken by them. Nothing is
    /// written because of it; the moment may never come (a pause, seek or stop took it back).
    func expect(at time: Int64, _ wakeAhead: WakeAhead)
    /// Bytes queued and not yet written.
    var backlog: Int { get }
    /// Calls `action` once, as soon as at most `threshold` bytes are unwritten (at once if that
    /// is so already), or the connection has closed.
    func whenDrained(below threshold: Int, _ action: @escaping @Sendable () -> Void)
    /// Nothing more will be sent: close once what is queued has gone out.
    func finish()
    /// Returns once the connection has closed after `finish` (or a few seconds have passed).
    func closed() async
}

/// The event lines of one moment for one request: each is `head`, one of `bodies`, and a
/// newline. The bodies are shared by every client of the moment; each outlet joins them on
/// its own thread.
public struct EventLines: Sendable {
    /// `{"id":…,`: the request the events answer.
    public let head: String
    /// Each event's members after the id, closing brace included.
    public let bodies: [String]

    /// The bytes of the lines with their newlines.
    public var byteCount: Int { bodies.reduce(0) { $0 + head.utf8.count + $1.utf8.count + 1 } }
}
