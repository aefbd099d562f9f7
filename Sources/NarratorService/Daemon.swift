import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import NarratorKit
import NarratorLive
import NarratorTouches
import ServiceLifecycle

/// `narrator serve`: the service on a Unix socket and/or WebSocket until SIGTERM or SIGINT.
public enum NarratorDaemon {
    public struct Options: Sendable {
        public var configuration: NarratorService.Configuration
        /// The Unix socket's path; nil for none.
        public var socket: String?
        /// Where WebSocket and the page listen; nil for none. Port 0 picks a free one.
        public var listen: (host: String, port: Int)?
        /// Required of every WebSocket client (`/ws?token=`).
        public var token: String
        /// Whether the threads that write events to clients ask for SCHED_FIFO
        /// (`deliveryPriority`).
        public var realtimeDelivery: Bool
        /// Connections held at once, both transports together (lowered to fit the descriptor
        /// limit: `ConnectionGate.fitted`).
        public var maxConnections: Int
        /// The touch log's file (`serve --touches`), opened or created by `run`; nil for none.
        public var touches: String?

        public init(
            configuration: NarratorService.Configuration, socket: String?, listen: (host: String, port: Int)?, token: String,
            realtimeDelivery: Bool = true, maxConnections: Int = NarratorDaemon.defaultMaxConnections, touches: String? = nil
        ) {
            self.touches = touches
            self.maxConnections = maxConnections
            self.configuration = configuration
            self.socket = socket
            self.listen = listen
            self.token = token
            self.realtimeDelivery = realtimeDelivery
        }
    }

    /// Runs until a signal stops it. `ready` gets one JSON line per transport once it accepts
    /// clients. On SIGTERM or SIGINT every request still active ends with `stopped` (reason
    /// "daemon stopping"), then the connections close and the socket file is removed.
    public static func run(_ options: Options, logger: Logger, ready: @escaping @Sendable (String) -> Void) async throws {
        var configuration = options.configuration
        // Refused (a file that is not a touch log) before anything listens.
        if let path = options.touches {
            configuration.touches = try TouchLog(path: path) { line in logger.warning("\(line)") }
        }
        let service = try NarratorService(configuration)
        let gate = ConnectionGate(limit: ConnectionGate.fitted(options.maxConnections))
        // Both transports on the same event loops: the threads that write every event. A few,
        // whatever the machine (the daemon's threads are bounded: at most 64 in all), and one
        // core fewer than there are: real-time loops on every core would keep the clients they
        // wake (and the sound server) off the CPU until all of them had written.
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: max(1, min(System.coreCount - 1, 4)))
        if options.realtimeDelivery, await !raise(loops) {
            logger.warning("delivery threads stay at normal priority: SCHED_FIFO is not permitted (root, CAP_SYS_NICE or RLIMIT_RTPRIO)")
        }
        var services: [any Service] = []
        // The web server first: it can fail (the page's files) before the socket is bound.
        var web: (any Service)?
        if let (host, port) = options.listen {
            let token = options.token
            web = try WebServer.make(host: host, port: port, token: token, service: service, gate: gate, loops: loops, logger: logger) { port in
                let base = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
                ready(
                    #"{"listening":"websocket","url":\#(EventEncoder.quoted("ws://\(base)/ws")),"page":\#(EventEncoder.quoted("http://\(base)/#token=\(token)")),"port":\#(port)}"#)
            }
        }
        if let path = options.socket {
            services.append(try await UnixSocketServer.bind(path: path, service: service, gate: gate, loops: loops))
            ready(#"{"listening":"unix","socket":\#(EventEncoder.quoted(path))}"#)
        }
        if let web { services.append(web) }
        // Shut down first (services stop in reverse order): end every request with its
        // terminal event while the transports can still carry it.
        services.append(Drain(service: service))
        let group = ServiceGroup(
            configuration: .init(services: services.map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    /// `narrator serve --prepare-request`: the loader child of a daemon (`LessonLoader`).
    /// Returns the exit status.
    public static func prepareInChild(library: String, request: String) -> Int32 {
        LessonLoader.child(library: library, request: request)
    }

    /// `Options.maxConnections` unless told otherwise (`serve --max-connections`).
    public static let defaultMaxConnections = 1024

    /// SCHED_FIFO priority of the event-loop threads, below the audio and cue threads.
    public static let deliveryPriority: Int32 = 18

    /// Puts the threads of `loops` (both transports': they write every event to every
    /// client) on SCHED_FIFO at `deliveryPriority`, by default. At normal priority, fifty
    /// client processes woken by the first writes of a moment preempt the loop before it has
    /// written to the rest: 50 WebSocket subscribers measured p99 2.2–5.8 ms from heard with
    /// the loops at normal priority, 1.3–1.8 ms raised (docs/benchmarks.md). The loops block in
    /// epoll between moments and prepare no audio. Every thread that plays or prepares sets its
    /// own policy (the service's workers and the engine's threads are normal unless
    /// `--realtime`), so nothing inherits this one. False when not permitted.
    static func raise(_ loops: any EventLoopGroup) async -> Bool {
        var raised = true
        for loop in loops.makeIterator() {
            let done = (try? await loop.submit { ThreadPolicy.realtime(deliveryPriority).apply() }.get()) ?? false
            raised = raised && done
        }
        return raised
    }

    /// Waits for the shutdown signal, then drains the service.
    private struct Drain: Service {
        let service: NarratorService
        func run() async throws {
            try? await gracefulShutdown()
            await service.shutdown()
            // Every request has ended: what the touch log still holds is written out.
            service.configuration.touches?.finish()
        }
    }

    /// A fresh token: 128 random bits as hex.
    public static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in String(format: "%08x", UInt32.random(in: .min ... .max, using: &generator)) }.joined()
    }
}
