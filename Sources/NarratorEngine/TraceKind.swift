/// The kinds of event an activity or an announcer run puts in its trace, beside the chains' own
/// cues. The raw value is the cue sheet's `type`: every producer and every consumer names a kind
/// through this enum, so a kind renamed here is a compile error wherever it is matched.
public enum TraceKind: String, Sendable, CaseIterable {
    // An activity's run (`ActivityMachine`).
    /// The run begins (`activity`).
    case activityStart
    /// The intro's variant chosen by the state (`state`).
    case variant
    /// A step begins (`step`, `answer`).
    case stepStart
    /// A chain starts (`chain`, `role`, `step`; `replay` when replayed).
    case chainStart
    /// A target to pulse as a chain starts (`target`, `role`).
    case pulse
    /// No answer came in time: the idle prompt starts (`step`, `waited` frames).
    case idlePrompt
    /// A tap and what it did (`answer`, `result`: correct, wrong, sound, replay, close, ignored;
    /// `reason` when ignored, `ActivityMachine.IgnoredTap`).
    case tap
    /// Feedback for an answer begins (`kind`, `step`, `attempt`).
    case feedback
    /// Feedback ended or was cut (`step`, `kind`, `attempt`; `canceled`).
    case feedbackEnd
    /// A one-shot sound starts (`name`, `chain`).
    case sound
    /// A sound cut before its end: by a newer one or by the end of the run (`name`, `chain`).
    case soundCut
    /// The last step was answered and the final chain played: the app moves on.
    case advance
    /// The app closed the activity.
    case close
    /// The activity ended (`reason`: advance or close).
    case activityEnd
    /// The run stopped without ending (`reason`): the virtual clock's end, or a child who never
    /// answers.
    case stop
    /// A music bed starts (`clip`), at frame 0: the activity's, or the lesson's under an
    /// activity without one or under a chain played on its own (`MusicBed`).
    case musicStart
    /// The bed goes back to its loop's start (`clip`, `loop`: how many times it has looped).
    case musicLoop
    /// The bed falls silent (`clip`, `reason`: `faded` after the activity's or chain's end, or `clip
    /// ended` for a bed that does not loop).
    case musicStop

    // An announcer's run (`Announcer`), each with `id` and `priority`.
    /// A request arrived (`chain`).
    case request
    /// A request starts playing (`chain`).
    case begin
    /// A request played to its end.
    case end
    /// A request was interrupted and waits to resume (`reason`, `resumeFrame`: the frame of
    /// its chain it will resume from).
    case interrupted
    /// An interrupted request plays again (`from`: the frame of its chain it resumes from).
    case resume

    /// A chain (an activity's) or a request (an announcer's) was cut short (`chain` or `reason`).
    case canceled

    /// The last event of an activity's run: nothing follows it.
    public var endsActivity: Bool { self == .activityEnd || self == .stop }
}

extension Cue {
    /// The trace kind of an `activity` cue; nil for the chains' own cues.
    public var traceKind: TraceKind? {
        if case .activity(let type, _) = kind { return type }
        return nil
    }
}
