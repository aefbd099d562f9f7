import Foundation
@testable import NarratorCore
@testable import NarratorEngine
@_spi(Testing) import NarratorLive
import NarratorTestSupport
import Synchronization
import Testing

/// The engine announces each moment before delivering it (`onUpcoming`), so that the daemon can
/// have its event loops awake then (issue 28.8). On the virtual output: when each cue is heard
/// is the output's own arithmetic (`check`), and a seek takes back, by a rewind, a moment that
/// was already announced.
@Suite struct UpcomingTests {
    /// What the cue thread announced: when (its clock) and for when.
    final class Notices: Sendable {
        let list = Mutex<[(at: Int64, due: Int64)]>([])
        var all: [(at: Int64, due: Int64)] { list.withLock { $0 } }
        func record(_ clock: VirtualClock) -> @Sendable (Int64) -> Void {
            { due in self.list.withLock { $0.append((clock.now(), due)) } }
        }
    }

    /// Every moment's cues come at a time announced beforehand, at least the daemon's default
    /// wake-up lead (1 ms) before it, and the notice named the time the cues were heard.
    @Test func everyMomentIsAnnouncedAheadOfItsTime() throws {
        let fixture = try LiveFixture(repeats: 3)
        defer { fixture.dir.remove() }
        let playback = VirtualPlayback(fixture.schedule)
        let notices = Notices()
        playback.start(onUpcoming: notices.record(playback.clock))
        try #require(playback.output.runToEnd(limit: 120_000_000_000))
        try playback.check(against: fixture.reference, cues: fixture.schedule.cues, gaps: 0)
        let announced = notices.all
        let moments = Dictionary(grouping: playback.log.cues, by: \.heard)
        #expect(moments.count > 10, "too few moments to say anything")
        for (heard, cues) in moments {
            let delivered = cues.map(\.delivered).min()!
            let notice = announced.last { $0.at <= delivered && abs($0.due - heard) <= PlaybackEngine.upcomingTolerance }
            #expect(notice != nil, "\(cues[0].cue.type) at frame \(cues[0].cue.frame), heard at \(heard): never announced")
            if let notice {
                #expect(heard - notice.at >= WakeAheadLead.daemonDefault, "\(cues[0].cue.type) at frame \(cues[0].cue.frame): announced only \(ms(heard - notice.at)) ahead")
            }
        }
        // Once per moment, not at every look at the clock.
        #expect(announced.count <= moments.count + 4, "\(announced.count) notices for \(moments.count) moments")
    }

    /// A seek back, asked while the next moment is announced (and its audio already with the
    /// output), takes that moment back: it is never delivered, at that time or any other, and
    /// what comes after the seek is announced anew (but for the cue at the seek's frame itself).
    @Test func aSeekTakesBackAnAnnouncedMoment() throws {
        let fixture = try LiveFixture(repeats: 3)
        defer { fixture.dir.remove() }
        let cues = fixture.schedule.cues
        let words = cues.filter { $0.type == "word" }
        try #require(words.count > 6)
        let trigger = words[4]
        let target = words[1].frame
        let playback = VirtualPlayback(fixture.schedule)
        let engine = playback.engine
        let notices = Notices()
        let record = notices.record(playback.clock)
        let armed = Atomic<Bool>(false)
        let sought = Atomic<Bool>(false)
        let takenBack = Mutex<Int64?>(nil)
        playback.start(
            onEvent: { event in
                // (Once: after the seek back, the trigger comes again.)
                if case .cue(let cue, _, _) = event, cue == trigger, !sought.exchange(true, ordering: .relaxed) { armed.store(true, ordering: .relaxed) }
            },
            onUpcoming: { due in
                record(due)
                // The moment after the trigger is announced (its audio is with the output): go back.
                guard armed.exchange(false, ordering: .relaxed) else { return }
                takenBack.withLock { $0 = due }
                #expect(engine.seek(to: target))
            })
        try #require(playback.output.runToEnd(limit: 120_000_000_000))
        let moment = try #require(takenBack.withLock { $0 }, "the trigger was never delivered")
        #expect(!playback.log.cues.contains { abs($0.heard - moment) <= PlaybackEngine.upcomingTolerance }, "the moment announced for \(moment) was delivered all the same")
        // Every cue up to the trigger, then every cue from the seek's frame on: the moment taken
        // back comes again after the seek, later, as any other.
        let triggerIndex = try #require(cues.firstIndex(of: trigger))
        #expect(playback.log.cues.map(\.cue) == Array(cues[...triggerIndex]) + cues.filter { $0.frame >= target })
        // (The cue at the seek's frame is heard a few ms after the seek, its audio rendered in the
        // rewind's margin: it is due before the cue thread can see it, and is not announced.)
        for (cue, heard, delivered) in playback.log.cues where cue.frame != target {
            #expect(notices.all.contains { $0.at <= delivered && abs($0.due - heard) <= PlaybackEngine.upcomingTolerance }, "\(cue.type) at frame \(cue.frame), heard at \(heard), delivered at \(delivered), was never announced; notices \(notices.all.filter { abs($0.due - heard) < 50_000_000 })")
        }
    }
}

/// The daemon's default lead (NarratorService's `WakeAhead.defaultWake`, 1 ms): NarratorLive's
/// tests do not link the service, so it is restated here.
enum WakeAheadLead {
    static let daemonDefault: Int64 = 1_000_000
}
