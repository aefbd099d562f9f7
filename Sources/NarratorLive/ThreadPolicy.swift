import Foundation

/// How a thread of Narrator's is scheduled. Every thread the engine creates (audio, cue
/// delivery, stream feeding) sets its policy itself when it starts, so none inherits one by
/// accident: a playback started from a daemon's real-time event loop still feeds its streams
/// at normal priority, and an audio thread is real-time only when asked.
///
/// Real-time is SCHED_FIFO, when the process may (root, CAP_SYS_NICE or an RLIMIT_RTPRIO
/// allowance); otherwise the thread runs at normal priority and `apply()` says so.
///
/// Through ALSA's pulse plugin, SCHED_FIFO audio and cue threads that poll the device every
/// millisecond delay the plugin's own (normal-priority) PulseAudio thread, whose latency
/// estimate then drifts: measured against the pipe sink, cue errors went from p99 0.2–0.4 ms
/// (6 runs of 6 at normal priority) to 2–5 ms in 2 runs of 6. So on the ALSA output playback's
/// threads are normal unless `--realtime` asks (on a hardware device under heavy load it is
/// worth asking for). The pulse output has no such thread (libpulse's mainloop is the audio
/// thread, and the server's timing reports are its clock), so there they are real-time unless
/// `--no-realtime`: a daemon's real-time event loops (SCHED_FIFO 18) would otherwise outrank
/// the threads that feed them.
public enum ThreadPolicy: Sendable, Equatable {
    /// SCHED_OTHER at nice 0.
    case normal
    /// SCHED_FIFO at this priority (1–99), or normal when not permitted.
    case realtime(Int32)

    /// Sets the calling thread's policy; true when it is what was asked.
    @discardableResult
    public func apply() -> Bool {
        var param = sched_param()
        switch self {
        case .normal:
            param.sched_priority = 0
            return pthread_setschedparam(pthread_self(), SCHED_OTHER, &param) == 0
        case .realtime(let priority):
            param.sched_priority = priority
            if pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0 { return true }
            param.sched_priority = 0
            pthread_setschedparam(pthread_self(), SCHED_OTHER, &param)
            return false
        }
    }

    /// The calling thread's policy now (normal for anything but SCHED_FIFO/SCHED_RR).
    public static var current: ThreadPolicy {
        var policy: Int32 = 0
        var param = sched_param()
        pthread_getschedparam(pthread_self(), &policy, &param)
        return policy == SCHED_FIFO || policy == SCHED_RR ? .realtime(param.sched_priority) : .normal
    }

    /// Starts a thread named `name` (as the kernel shows it: at most 15 bytes) that applies
    /// this policy, then runs `body`. The body is told whether the policy took.
    public func startThread(named name: String, _ body: @escaping @Sendable (_ applied: Bool) -> Void) {
        let policy = self
        let thread = Thread {
            Self.nameCurrentThread(name)
            body(policy.apply())
        }
        thread.name = name
        thread.start()
    }

    /// Names the calling thread where the kernel keeps names (top, /proc, debuggers).
    public static func nameCurrentThread(_ name: String) {
        let short = Array(name.utf8.prefix(15))
        #if os(Linux) || os(Android)
            // pthread_setname_np is not visible to Swift from Glibc; the kernel's own file is.
            let file = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            guard file >= 0 else { return }
            _ = short.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
            close(file)
        #elseif canImport(Darwin)
            pthread_setname_np(String(decoding: short, as: UTF8.self))
        #endif
    }
}
