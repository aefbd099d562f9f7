import Foundation
import NarratorKit
import Synchronization

/// The daemon's engine, independent of transport: connections hand it request messages, and it
/// hands each its event lines through the connection's `EventOutlet`. Playbacks go through `NarratorKit`,
/// like the CLI's.
///
/// Every request gets exactly one terminal event (`end`, `canceled` or `error`); a connection
/// that goes away cancels its own playbacks and nothing else.
public final class NarratorService: Sendable {
    public struct Configuration: Sendable {
        /// The folder of lessons that requests may name.
        public var library: String
        /// The ALSA device every playback opens.
        public var device: String
        public var latencyMs: Int
        public var realtime: Bool
        /// The largest request accepted, in bytes; a longer one gets an error event.
        public var maxMessageBytes: Int

        public init(library: String, device: String = "default", latencyMs: Int = 50, realtime: Bool = false,
                    maxMessageBytes: Int = 65536) {
            self.library = library
            self.device = device
            self.latencyMs = latencyMs
            self.realtime = realtime
            self.maxMessageBytes = maxMessageBytes
        }
    }

    public let configuration: Configuration
    let library: LessonLibrary
    private let state = Mutex(State())

    /// Where a request of a connection stands.
    private enum Active {
        /// A play request being prepared (decoding, opening the device).
        case preparing
        /// Playing as playback `name`.
        case playing(String)
        /// Following a playback, or waiting for the next to begin (`nil`).
        case subscribed(String?)
    }

    private struct Recipient: Hashable {
        let connection: Int
        let id: RequestID
    }

    private struct Connection {
        let outlet: any EventOutlet
        var requests: [RequestID: Active] = [:]
    }

    private struct Entry {
        let owner: Recipient
        let playback: Playback
        var begin: EventLine?
        var subscribers: [Recipient] = []
        var cancelReason: String?
    }

    private struct State {
        var connections: [Int: Connection] = [:]
        var playbacks: [String: Entry] = [:]
        var waitingForNext: [Recipient] = []
        var lastConnection = 0
        var lastPlayback = 0
        var stopping = false
        var running = 0
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    public init(_ configuration: Configuration) throws(NarratorError) {
        self.configuration = configuration
        library = try LessonLibrary(path: configuration.library)
    }

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

    /// Cancels every playback and subscription (`canceled`, reason "daemon stopping"), waits
    /// until their terminal events are queued, then finishes every connection's outlet.
    public func shutdown() async {
        let reason = "daemon stopping"
        state.withLock { state in
            state.stopping = true
            for (name, entry) in state.playbacks {
                state.playbacks[name]?.cancelReason = entry.cancelReason ?? reason
                entry.playback.stop()
            }
            for waiting in state.waitingForNext {
                send(EventLine("canceled", frame: nil, heard: MonotonicClock.now(), fields: ["reason": .string(reason)]), to: waiting, in: &state)
                state.connections[waiting.connection]?.requests[waiting.id] = nil
            }
            state.waitingForNext = []
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                if state.running == 0 { return true }
                state.drained.append(done)
                return false
            }
            if idle { done.resume() }
        }
        state.withLock { state in
            for connection in state.connections.values { connection.outlet.finish() }
        }
    }

    // MARK: Requests

    func receive(_ data: Data, from connection: Int) {
        let (id, parsed) = ServiceRequest.parse(data)
        let request: ServiceRequest
        switch parsed {
        case .failure(let error):
            reply(.error(error.description), to: connection, id: id)
            return
        case .success(let value):
            request = value
        }
        guard let id else { return }
        let me = Recipient(connection: connection, id: id)
        let refusal: String? = state.withLock { state in
            if state.stopping { return "the daemon is stopping" }
            if state.connections[connection]?.requests[id] != nil {
                return "request \(id) is still active on this connection: give each request its own id"
            }
            return nil
        }
        if let refusal {
            reply(.error(refusal), to: connection, id: id)
            return
        }
        switch request {
        case .play(let lesson, let program, let seed):
            state.withLock { $0.connections[connection]?.requests[id] = .preparing }
            running(+1)
            Thread.detachNewThread { [self] in
                start(lesson: lesson, program: program, seed: seed, for: me)
            }
        case .cues(let lesson, let program, let seed):
            running(+1)
            Thread.detachNewThread { [self] in
                defer { running(-1) }
                do throws(NarratorError) {
                    let prepared = try library.load(lesson).prepare(program, seed: seed)
                    for cue in prepared.cues {
                        reply(EventLine("cue", frame: cue.frame, heard: nil, fields: EventLine.cueFields(cue)), to: connection, id: id)
                    }
                    reply(
                        EventLine("end", frame: prepared.schedule.frames, heard: nil, fields: ["sampleRate": .int(Int64(prepared.schedule.sampleRate))]),
                        to: connection, id: id)
                } catch {
                    reply(.error(error.description), to: connection, id: id)
                }
            }
        case .tap(let target, let answer):
            let playback: Playback? = state.withLock { state in
                guard case .playing(let name)? = state.connections[connection]?.requests[target] else { return nil }
                return state.playbacks[name]?.playback
            }
            guard let playback else {
                reply(.error("request \(target) is not playing on this connection"), to: connection, id: id)
                return
            }
            let now = MonotonicClock.now()
            playback.tap(answer)
            reply(EventLine("end", frame: nil, heard: now), to: connection, id: id)
        case .stop(let target):
            let found = state.withLock { state in stop(Recipient(connection: connection, id: target), reason: "stopped", in: &state) }
            if found {
                reply(EventLine("end", frame: nil, heard: MonotonicClock.now()), to: connection, id: id)
            } else {
                reply(.error("request \(target) is not active on this connection"), to: connection, id: id)
            }
        case .subscribe(let playback):
            subscribe(me, to: playback)
        }
    }

    /// A message that is not a request at all (too long, not text): an error event, no id.
    func refuse(_ problem: String, to connection: Int) {
        reply(.error("request: \(problem)"), to: connection, id: nil)
    }

    /// The client has gone: its playbacks stop, its subscriptions end; nothing more is sent.
    func disconnect(_ connection: Int) {
        state.withLock { state in drop(connection, in: &state) }
    }

    /// Ends `request` (a playback, or a subscription); false when it is not active.
    private func stop(_ request: Recipient, reason: String, in state: inout State) -> Bool {
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
            send(EventLine("canceled", frame: nil, heard: MonotonicClock.now(), fields: ["reason": .string(reason)]), to: request, in: &state)
            state.connections[request.connection]?.requests[request.id] = nil
        case .preparing?:
            // Stopped as soon as it starts (`start` sees the request gone).
            state.connections[request.connection]?.requests[request.id] = nil
        case nil:
            return false
        }
        return true
    }

    private func subscribe(_ me: Recipient, to playback: String) {
        let problem: String? = state.withLock { state in
            if playback == "next" {
                state.waitingForNext.append(me)
                state.connections[me.connection]?.requests[me.id] = .subscribed(nil)
                return nil
            }
            guard state.playbacks[playback] != nil else { return "no playback '\(playback)' is playing (name one from a begin event, or next)" }
            state.playbacks[playback]?.subscribers.append(me)
            state.connections[me.connection]?.requests[me.id] = .subscribed(playback)
            if let begin = state.playbacks[playback]?.begin { send(begin, to: me, in: &state) }
            return nil
        }
        if let problem { reply(.error(problem), to: me.connection, id: me.id) }
    }

    // MARK: Playback

    /// Prepares and opens the device (on a thread of its own: both block), forwards each event
    /// from the cue thread as it is delivered, and sends the terminal event once playback ends.
    private func start(lesson: String, program: Program, seed: UInt64, for owner: Recipient) {
        defer { running(-1) }
        let playback: Playback
        let forwarder: Forwarder
        do {
            let prepared = try library.load(lesson).prepare(program, seed: seed)
            forwarder = Forwarder(service: self, frames: prepared.schedule.frames)
            playback = try prepared.play(
                device: configuration.device, latencyMs: configuration.latencyMs, realtime: configuration.realtime,
                onEvent: forwarder.forward)
        } catch {
            let line: EventLine =
                switch error {
                case let error as PlaybackError: .error("audio device '\(error.device)': \(error.message)", fields: ["code": .string(error.code)])
                default: .error("\(error)")
                }
            finishPreparing(owner, with: line)
            return
        }
        state.withLock { state in
            state.lastPlayback += 1
            let name = "p\(state.lastPlayback)"
            forwarder.name = name
            var entry = Entry(owner: owner, playback: playback)
            let stillWanted: Bool
            if case .preparing? = state.connections[owner.connection]?.requests[owner.id] { stillWanted = true } else { stillWanted = false }
            if stillWanted { state.connections[owner.connection]?.requests[owner.id] = .playing(name) }
            if !stillWanted || state.stopping {
                entry.cancelReason = state.stopping ? "daemon stopping" : "stopped"
                playback.stop()
            }
            state.playbacks[name] = entry
        }
        forwarder.started.signal()
        _ = playback.waitUntilFinished()
        let name = forwarder.name
        let end = forwarder.terminal ?? EventLine("end", frame: forwarder.last?.frame ?? forwarder.frames,
                                                  heard: forwarder.last?.heard ?? MonotonicClock.now(), fields: ["playback": .string(name)])
        state.withLock { state in
            guard let entry = state.playbacks.removeValue(forKey: name) else { return }
            for recipient in [entry.owner] + entry.subscribers {
                send(end, to: recipient, in: &state)
                state.connections[recipient.connection]?.requests[recipient.id] = nil
            }
        }
    }

    private func finishPreparing(_ owner: Recipient, with line: EventLine) {
        state.withLock { state in
            send(line, to: owner, in: &state)
            state.connections[owner.connection]?.requests[owner.id] = nil
        }
    }

    /// Turns one playback's events into event lines, on its cue thread. Its fields are written
    /// by the cue thread only (and `name` before `started` is signaled); read after the
    /// playback has finished.
    private final class Forwarder: @unchecked Sendable {
        let service: NarratorService
        let frames: Int
        var name = ""
        let started = DispatchSemaphore(value: 0)
        private var waited = false
        var last: (frame: Int, heard: Int64)?
        var terminal: EventLine?

        init(service: NarratorService, frames: Int) {
            self.service = service
            self.frames = frames
        }

        func forward(_ event: PlaybackEvent) {
            if !waited {
                // The playback's name is given once it is registered (right after it opens).
                started.wait()
                started.signal()
                waited = true
            }
            let playback = Scalar.string(name)
            switch event {
            case .start(let info):
                let latency = (Double(info.measuredDelayFrames) / Double(info.output.sampleRate) * 1e6).rounded() / 1000
                service.began(
                    name,
                    EventLine(
                        "begin", frame: 0, heard: info.firstFrameHeardTime,
                        fields: [
                            "playback": playback, "sampleRate": .int(Int64(info.output.sampleRate)),
                            "device": .string(info.output.device), "latencyMs": .double(latency),
                        ]))
            case .cue(let cue, let at):
                last = (cue.frame, at)
                var fields = EventLine.cueFields(cue)
                fields["playback"] = playback
                service.publish(EventLine("cue", frame: cue.frame, heard: at, fields: fields), from: name)
            case .underrun(let count, let at):
                service.publish(EventLine("underrun", frame: last?.frame, heard: at, fields: ["playback": playback, "count": .int(Int64(count))]), from: name)
            case .lateSwitch(_, let switched, let at):
                service.publish(EventLine("lateSwitch", frame: switched, heard: at, fields: ["playback": playback]), from: name)
            case .streamProblem(let problem, let at):
                service.publish(
                    EventLine("streamProblem", frame: last?.frame, heard: at, fields: ["playback": playback, "message": .string(problem.description)]),
                    from: name)
            case .canceled(let frame, let at):
                let reason = service.cancelReason(of: name)
                terminal = EventLine("canceled", frame: frame, heard: at, fields: ["playback": playback, "reason": .string(reason)])
            case .error(let error, let frame, let at):
                terminal = EventLine(
                    "error", frame: frame, heard: at,
                    fields: ["playback": playback, "code": .string(error.code), "message": .string("audio device '\(error.device)': \(error.message)")])
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

    private func publish(_ line: EventLine, from name: String) {
        state.withLock { state in
            guard let entry = state.playbacks[name] else { return }
            for recipient in [entry.owner] + entry.subscribers { send(line, to: recipient, in: &state) }
        }
    }

    // MARK: Delivery

    private func reply(_ line: EventLine, to connection: Int, id: RequestID?) {
        state.withLock { state in
            guard let client = state.connections[connection] else { return }
            if !client.outlet.send(line.line(for: id)) { drop(connection, in: &state) }
        }
    }

    private func send(_ line: EventLine, to recipient: Recipient, in state: inout State) {
        guard let client = state.connections[recipient.connection] else { return }
        if !client.outlet.send(line.line(for: recipient.id)) { drop(recipient.connection, in: &state) }
    }

    /// A client that cannot keep up (its outlet refused a line) is disconnected, as if gone.
    private func drop(_ connection: Int, in state: inout State) {
        guard let client = state.connections.removeValue(forKey: connection) else { return }
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
            case .preparing:
                break  // `start` finds the request gone and stops the playback at once
            }
        }
        client.outlet.finish()
    }

    private func running(_ change: Int) {
        let waiters: [CheckedContinuation<Void, Never>] = state.withLock { state in
            state.running += change
            guard state.running == 0 else { return [] }
            defer { state.drained = [] }
            return state.drained
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

    /// The client has gone: its playbacks stop (`canceled`, reason "client disconnected").
    public func disconnect() { service.disconnect(number) }
}

/// Where a connection's event lines go: called with the service's lock held, from whatever
/// thread delivers the event (a playback's cue thread among them), so it must not block.
public protocol EventOutlet: Sendable {
    /// Queues one line (ending in a newline). False when the client has fallen too far behind.
    func send(_ line: String) -> Bool
    /// Nothing more will be sent: close once what is queued has gone out.
    func finish()
}

/// An outlet read as an AsyncStream, for transports whose writes are async (WebSocket).
public struct StreamOutlet: EventOutlet {
    private let continuation: AsyncStream<String>.Continuation

    /// The outlet and the lines it queues; at most `limit` unread lines.
    public static func make(limit: Int = 4096) -> (StreamOutlet, AsyncStream<String>) {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingOldest(limit))
        return (StreamOutlet(continuation: continuation), stream)
    }

    public func send(_ line: String) -> Bool {
        if case .dropped = continuation.yield(line) { return false }
        return true
    }

    public func finish() { continuation.finish() }
}
