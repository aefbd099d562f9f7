/// What a lesson plays, laid out on its timeline: the one way both builds (native, through
/// NarratorKit, and WebAssembly) turn a chain or an activity with its taps into a schedule.
extension Lesson {
    /// Chain `chain`, `repeats` times, its pools drawn with `seed`, its clips from `decoder`.
    public func schedule(chain: String, repeats: Int = 1, seed: UInt64, decoder: some AudioDecoder) throws(NarratorError) -> Schedule {
        var draws = PoolDraws(seed: seed)
        let bank = try ClipBank.prepare(lesson: self, chain: chain, decoder: decoder)
        return try Scheduler.schedule(chain: chain, repeats: repeats, bank: bank, draws: &draws)
    }

    /// The clips every one of `chains` can play (and `more`), each file decoded once.
    public func bank(for chains: [String], also more: [String] = [], decoder: some AudioDecoder) throws(NarratorError) -> ClipBank {
        var ids: [String] = []
        for chain in chains {
            for id in try clipIDs(reachableFrom: chain) where !ids.contains(id) { ids.append(id) }
        }
        for id in more where !ids.contains(id) { ids.append(id) }
        return try ClipBank.prepare(lesson: self, clipIDs: ids, decoder: decoder)
    }
}

/// An activity's plan from taps: `ActivityRunner` with fresh pool draws from one seed, so that
/// a plan with one more tap is the same as the last one up to that tap.
public struct ActivityPlanner: Sendable {
    public let activity: Activity
    let bank: ClipBank
    let bed: ActivityRunner.Bed?
    let seed: UInt64
    /// Where the virtual clock stops (frames).
    public let until: Int
    let state: String?

    /// The planner of activity `id`, its clips (and bed) from `decoder`. `until` (frames)
    /// defaults to 20 s after the last scripted tap (60 s without taps), or a day when it is
    /// answered `live`.
    public init(
        lesson: Lesson, activity id: String, live: Bool, taps: [Tap], until: Int? = nil, state: String?, seed: UInt64,
        decoder: some AudioDecoder
    ) throws(NarratorError) {
        let activity = try lesson.activity(id)
        let rate = lesson.sampleRate
        let lastTap = taps.map({ $0.frame }).max()
        self.activity = activity
        self.until = until ?? (live ? Frames.capped(seconds: 86400, rate: rate) : (lastTap ?? 40 * rate) + 20 * rate)
        bank = try lesson.bank(for: activity.chainIDs, also: activity.music.map { [$0.clip] } ?? [], decoder: decoder)
        bed = try ActivityRunner.Bed.resolve(activity, bank: bank)
        self.seed = seed
        self.state = state
    }

    public func plan(taps: [Tap]) throws(NarratorError) -> Schedule {
        var draws = PoolDraws(seed: seed)
        let bank = bank
        var runner = ActivityRunner(activity: activity, sampleRate: bank.lesson.sampleRate) { chain throws(NarratorError) in
            try Scheduler.schedule(chain: chain, bank: bank, draws: &draws)
        }
        runner.bed = bed
        return try runner.run(taps: taps, until: until, state: state).schedule
    }
}
