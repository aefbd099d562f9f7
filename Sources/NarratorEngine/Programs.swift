/// What a lesson plays, laid out on its timeline: the one way both builds (native, through
/// NarratorKit, and WebAssembly) turn a chain or an activity with its taps into a schedule.
extension Lesson {
    /// Chain `chain`, `repeats` times, its pools drawn with `seed`, its clips from `decoder`;
    /// the lesson's music bed under it, when it has one.
    public func schedule(chain: String, repeats: Int = 1, seed: UInt64, decoder: some AudioDecoder) throws(NarratorError) -> Schedule {
        var draws = PoolDraws(seed: seed)
        let bank = try ClipBank.prepare(lesson: self, chain: chain, decoder: decoder)
        let schedule = try Scheduler.schedule(chain: chain, repeats: repeats, bank: bank, draws: &draws)
        guard let bed = try chainBed(besides: bank, decoder: decoder) else { return schedule }
        return try bed.under(schedule, file: path)
    }

    /// The lesson's music bed for a chain played on its own, if it has one: its clip from
    /// `bank` (the chain's) when that holds it in memory, else decoded whole on its own (a
    /// chain's long clips stream; a bed loops and seeks from memory). A decoder that streams
    /// long files is asked again for the bed's clip; it must then decode it whole.
    private func chainBed(besides bank: ClipBank, decoder: some AudioDecoder) throws(NarratorError) -> MusicBed? {
        guard let (music, _) = try bed(for: nil) else { return nil }
        if case .memory? = bank.clips[music.clip]?.audio.source { return try MusicBed.resolve(nil, bank: bank) }
        return try MusicBed.resolve(nil, bank: try ClipBank.prepare(lesson: self, clipIDs: [music.clip], decoder: decoder.wholeFiles))
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
    let bed: MusicBed?
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
        let music = try lesson.bed(for: activity)
        bank = try lesson.bank(for: activity.chainIDs, also: music.map { [$0.music.clip] } ?? [], decoder: decoder)
        bed = try MusicBed.resolve(activity, bank: bank)
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
