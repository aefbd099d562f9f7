import NarratorCore

/// A playback's events as JSON lines, through the one `EventEncoder`: the CLI's `play`, the
/// daemon and the Swift API write the same members under the same names; a front end adds only
/// its envelope (the daemon's `id` and `playback`, the CLI's `t` and `final`). docs/events.md.
extension PlaybackEvent {
    /// When it happened, in CLOCK_MONOTONIC nanoseconds: for a cue, when its frame is heard;
    /// for `start`, when frame 0 is heard; otherwise when the audio thread saw it. The
    /// event's `heard`.
    public var heard: Int64 {
        switch self {
        case .start(let info): info.firstFrameHeardTime
        case .cue(_, let at, _), .underrun(_, let at), .lateSwitch(_, _, let at), .streamProblem(_, let at),
            .paused(_, let at), .resumed(_, let at), .seeked(_, _, let at), .speedChanged(_, _, let at), .canceled(_, let at), .error(_, _, let at):
            at
        }
    }

    /// The event as one line of JSON (no newline), keys sorted.
    public var jsonLine: String { jsonLine() }

    /// The event as one line of JSON with `envelope`'s members added; see `appendJSON`.
    public func jsonLine(_ envelope: [EventEncoder.Member] = [], message: String? = nil, reason: String? = nil) -> String {
        var out: [UInt8] = []
        appendJSON(envelope, message: message, reason: reason, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the event's line to `out`. `envelope`: the front end's own members. `message`
    /// replaces the error's own description in `streamProblem` and `error` (the daemon names no
    /// path of its own); `reason` says why a `stopped` playback stopped.
    public func appendJSON(_ envelope: [EventEncoder.Member] = [], message: String? = nil, reason: String? = nil, to out: inout [UInt8]) {
        typealias Member = EventEncoder.Member
        switch self {
        case .cue(let cue, let heard, let delivered):
            EventEncoder.appendCue(cue, [Member("heard", .int(Int(heard))), Member("delivered", .int(Int(delivered)))] + envelope, to: &out)
        case .start(let info):
            let output = info.output
            let latencyMs = (Double(info.measuredDelayFrames) / Double(max(1, output.sampleRate)) * 1e6).rounded() / 1000
            let members: [Member] = [
                Member("device", .string(output.device)), Member("sampleRate", .int(output.sampleRate)),
                Member("channels", .int(output.channels)), Member("format", .string(output.format.rawValue)),
                Member("periodFrames", .int(output.periodFrames)), Member("bufferFrames", .int(output.bufferFrames)),
                Member("latencyFrames", .int(info.measuredDelayFrames)), Member("latencyMs", .double(latencyMs)),
                Member("realtime", .bool(info.realtime)),
                Member("startClock", .int(Int(info.startTime))), Member("firstWriteClock", .int(Int(info.firstWriteTime))),
            ]
            EventEncoder.append(.start, frame: 0, heard: heard, members + envelope, to: &out)
        case .underrun(let count, _):
            EventEncoder.append(.underrun, frame: nil, heard: heard, [Member("count", .int(count))] + envelope, to: &out)
        case .lateSwitch(let wanted, let switched, _):
            EventEncoder.append(.lateSwitch, frame: switched, heard: heard, [Member("wanted", .int(wanted)), Member("switched", .int(switched))] + envelope, to: &out)
        case .streamProblem(let problem, _):
            EventEncoder.append(.streamProblem, frame: nil, heard: heard, [Member("message", .string(message ?? problem.description))] + envelope, to: &out)
        case .paused(let frame, _):
            EventEncoder.append(.paused, frame: frame, heard: heard, envelope, to: &out)
        case .resumed(let frame, _):
            EventEncoder.append(.resumed, frame: frame, heard: heard, envelope, to: &out)
        case .seeked(let from, let to, _):
            EventEncoder.append(.seeked, frame: to, heard: heard, [Member("from", .int(from))] + envelope, to: &out)
        case .speedChanged(let speed, let frame, _):
            EventEncoder.append(.speedChanged, frame: frame, heard: heard, [Member("speed", .double(speed))] + envelope, to: &out)
        case .canceled(let frame, _):
            EventEncoder.append(.stopped, frame: frame, heard: heard, (reason.map { [Member("reason", .string($0))] } ?? []) + envelope, to: &out)
        case .error(let error, let frame, _):
            EventEncoder.append(
                .error, frame: frame, heard: heard, [Member("code", .string(error.code)), Member("message", .string(message ?? error.description))] + envelope,
                to: &out)
        }
    }
}
