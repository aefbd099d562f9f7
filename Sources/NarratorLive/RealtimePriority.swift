import Foundation

/// Real-time scheduling for the threads that must keep time: SCHED_FIFO when the process may
/// (root, CAP_SYS_NICE or an RLIMIT_RTPRIO allowance), else they stay as they are. The audio
/// and cue threads ask for it on request (`--realtime`, priorities 20 and 19), and so do the
/// daemon's delivery threads (`--realtime-delivery`, 18, see `NarratorDaemon`).
///
/// Not the default: through ALSA's pulse plugin, SCHED_FIFO threads that poll the device every
/// millisecond delay the plugin's own (normal-priority) PulseAudio thread, whose latency
/// estimate then drifts: measured against the pipe sink, cue errors went from p99 0.2–0.4 ms
/// (6 runs of 6 at normal priority) to 2–5 ms in 2 runs of 6. On a hardware device under heavy
/// load it is worth asking for.
public enum RealtimePriority {
    /// Puts the calling thread on SCHED_FIFO at `priority`; returns the previous policy and
    /// priority to restore, or nil when not permitted.
    public static func raise(_ priority: Int32) -> (policy: Int32, priority: Int32)? {
        var policy: Int32 = 0
        var old = sched_param()
        pthread_getschedparam(pthread_self(), &policy, &old)
        var param = sched_param()
        param.sched_priority = priority
        guard pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0 else { return nil }
        return (policy, old.sched_priority)
    }

    public static func restore(_ previous: (policy: Int32, priority: Int32)?) {
        guard let previous else { return }
        var param = sched_param()
        param.sched_priority = previous.priority
        pthread_setschedparam(pthread_self(), previous.policy, &param)
    }
}
