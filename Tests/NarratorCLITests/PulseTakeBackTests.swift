import NarratorOutputs
import Testing

/// `PulseOutput.firstUnread`: how far back a pause or a seek may take audio from a PulseAudio
/// sink, checked against a sink simulated block by block (it reads `block` frames each time
/// what it holds has been heard), for snapshots fresh and old.
@Suite struct PulseTakeBackTests {
    /// The simulated sink's read index when frame `heard` is heard: it read up to `read` at the
    /// snapshot, then one block each time what it held had been heard.
    static func sinkRead(at heard: Int, snapshotRead read: Int, block: Int) -> Int {
        var index = read
        while heard >= index { index += block }
        return index
    }

    @Test func neverReachesWhatTheSinkHasRead() {
        let block = 480  // 10 ms at 48 kHz: the sink's block for a 50 ms latency
        let margin = 48  // 1 ms
        let read = 10_000
        // The sink holds between nothing and a block when the snapshot is taken; the snapshot
        // is up to 40 ms old (a busy server's late answer).
        for holding in stride(from: 0, through: block, by: 7) {
            for since in stride(from: 0, through: 1920, by: 11) {
                let heard = read - holding + since
                let keep = PulseOutput.firstUnread(heard: heard, read: read, block: block, margin: margin)
                // When the seek lands, `margin` later, the sink has read no further than this.
                let readWhenLanding = Self.sinkRead(at: heard + margin, snapshotRead: read, block: block)
                #expect(keep >= readWhenLanding, "holding \(holding), \(since) frames after the snapshot")
                // And no more is kept than that: one block at most beyond what it has read.
                #expect(keep <= readWhenLanding + block, "holding \(holding), \(since) frames after the snapshot")
            }
        }
    }

    @Test func freshSnapshotsKeepTheReadIndexOrTheNextBlock() {
        // Far from the next read: everything past the read index can go.
        #expect(PulseOutput.firstUnread(heard: 9_600, read: 10_000, block: 480, margin: 48) == 10_000)
        // Within the margin of it: the block the sink is about to read stays.
        #expect(PulseOutput.firstUnread(heard: 9_960, read: 10_000, block: 480, margin: 48) == 10_480)
        // Two blocks later (a snapshot 20 ms old): two blocks more stay.
        #expect(PulseOutput.firstUnread(heard: 10_500, read: 10_000, block: 480, margin: 48) == 10_960)
        // A sink that says no block: what is heard plus the margin.
        #expect(PulseOutput.firstUnread(heard: 10_500, read: 10_000, block: 0, margin: 48) == 10_548)
    }
}
