import Foundation
import NarratorCore
import NarratorTestTraits
import Testing

@_spi(Testing) import NarratorLive
import NarratorTestSupport

/// A cue's `at` is when its frame is heard, even when it is delivered late; `start` says when
/// frame 0 is heard. The device double's own arithmetic is the truth.
@Suite("Cue stamps", .serialized, .awakeCPUs)
struct CueStampTests {
    @Test func lateDeliveryKeepsTheHeardTime() throws {
        let fixture = try LiveFixture()
        defer { fixture.dir.remove() }
        let device = fixture.device()
        let log = EventLog()
        var held = false
        let outcome = LivePlayer(schedule: fixture.schedule, pcm: device).run { event in
            log.events.append(event)
            // The cue thread is held up once, 400 ms: the cues due meanwhile go out late.
            if case .cue(let cue, _, _) = event, !held, cue.frame > 0 {
                held = true
                usleep(400_000)
            }
        }
        #expect(outcome == .finished)
        let alignment = try #require(Alignment.locate(fixture.reference, in: device.played, channels: 2))
        #expect(alignment.isComplete, "\(alignment)")

        guard case .start(let info) = try #require(log.events.first) else { Issue.record("first event \(log.events[0])"); return }
        let first = try #require(alignment.recordingFrames(ofReferenceFrame: 0))
        let frameZero = try #require(device.heardTime(ofDeviceFrame: first.lowerBound))
        #expect(abs(info.firstFrameHeardTime - frameZero) <= 1_000_000, "start says frame 0 is heard \(ms(info.firstFrameHeardTime - frameZero)) from when it was")

        var stampErrors: [Int64] = []
        var lateDeliveries = 0
        for event in log.events {
            guard case .cue(let cue, let at, let delivered) = event else { continue }
            let frames = try #require(alignment.recordingFrames(ofReferenceFrame: cue.frame))
            guard frames.count == 1 else { continue }
            let heard = try #require(device.heardTime(ofDeviceFrame: frames.lowerBound))
            #expect(delivered >= at, "\(cue.type) at frame \(cue.frame): delivered before the time it reports")
            stampErrors.append(at - heard)
            if delivered - heard > 20_000_000 { lateDeliveries += 1 }
        }
        let worst = stampErrors.map { abs($0) }.max() ?? 0
        print("paced device: \(lateDeliveries) cues delivered over 20 ms late; stamps vs heard: worst \(ms(worst)) over \(stampErrors.count) cues; start \(ms(info.firstFrameHeardTime - frameZero))")
        #expect(lateDeliveries >= 1, "the hold-up delayed no cue: the test proves nothing")
        #expect(stampErrors.count >= 10)
        #expect(worst <= 1_000_000, "a cue's stamp is \(ms(worst)) from when its frame was heard")
    }
}
