import Foundation
import NarratorTestSupport
import Testing

/// The live-playback harness's analysis, without any server: the audible-clock fit on
/// synthetic read times, and the alignment of a reference in synthetic recordings.
@Suite struct RecordingAnalysisTests {
    /// Deterministic noise.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// `frames` stereo frames of non-zero noise.
    static func sound(_ frames: Int, _ rng: inout SplitMix) -> [Int16] {
        (0..<(frames * 2)).map { _ in
            let v = Int16(truncatingIfNeeded: rng.next())
            return v == 0 ? 1 : v
        }
    }

    static func silence(_ frames: Int) -> [Int16] { [Int16](repeating: 0, count: frames * 2) }

    /// sound 3000, silence 2000, sound 5000, silence 100, sound 4000 (14100 frames).
    static func reference(leading: Int = 0, trailing: Int = 0) -> [Int16] {
        var rng = SplitMix(state: 42)
        return silence(leading) + sound(3000, &rng) + silence(2000) + sound(5000, &rng) + silence(100)
            + sound(4000, &rng) + silence(trailing)
    }

    /// Reads every 1024 frames, stamped at their slot start: enough to fit a clock.
    static func steadyReads(frames: Int) -> [Recording.Read] {
        (1...max(3, frames / 1024 + 1)).map {
            Recording.Read(bytes: $0 * 4096, nanoseconds: UInt64(1_000_000_000 + $0 * 21_333_333))
        }
    }

    static func recording(_ samples: [Int16]) throws -> Recording {
        try Recording(rate: 48000, channels: 2, samples: samples, reads: steadyReads(frames: samples.count / 2))
    }

    // MARK: Audible clock

    @Test(arguments: 0..<20 as Range<UInt64>)
    func clockFitFindsTheLowerEnvelopeDespiteJitterStallsSplitReadsAndAnOutlier(seed: UInt64) throws {
        let rate = 48000
        let t0: UInt64 = 5_000_000_000_000
        let ppm = -23.46
        let nsPerFrame = 1e9 / Double(rate) * (1 + ppm / 1e6)
        func slot(_ frame: Int) -> Double { Double(t0) + Double(frame) * nsPerFrame }
        var rng = SplitMix(state: seed)
        var reads: [Recording.Read] = []
        var frame = 0
        for block in 0..<1000 {
            // Late only: up to 1 ms, every 97th read a stall of 5…15 ms.
            var late = Double(rng.next() % 1_000_000)
            if block % 97 == 50 { late += 5e6 + Double(rng.next() % 10_000_000) }
            var t = slot(frame) + late
            if block == 500 { t -= 8e6 }  // the outlier: 8 ms early
            if block % 50 == 25 {
                // One wake-up writing two blocks, read as two full reads 0.1 ms apart: the
                // second starts a block before its slot and must not be used.
                reads.append(.init(bytes: (frame + 1024) * 4, nanoseconds: UInt64(t)))
                reads.append(.init(bytes: (frame + 2048) * 4, nanoseconds: UInt64(t + 100_000)))
                frame += 2048
                continue
            }
            reads.append(.init(bytes: (frame + 1024) * 4, nanoseconds: UInt64(t)))
            frame += 1024
        }
        let recording = try Recording(rate: rate, channels: 2, samples: [], reads: reads)
        let clock = recording.clock
        #expect(abs(clock.originNanoseconds - Double(t0)) < 50_000, "T0 off by \(clock.originNanoseconds - Double(t0)) ns")
        #expect(abs(clock.slopePPM - ppm) < 2, "slope \(clock.slopePPM) ppm")
        // Every 50th wake-up's second read was left out.
        #expect(clock.pointCount == reads.count - 1 - 20)
        for k in [0, 123_456, 500_000, frame] {
            let error = Double(recording.audibleTime(ofFrame: k)) - slot(k)
            #expect(abs(error) < 50_000, "frame \(k): \(error) ns")
            #expect(abs(recording.frame(audibleAt: UInt64(slot(k))) - Double(k)) < 3)
        }
        #expect(clock.residualsMs.min < -6 && clock.residualsMs.early == 1)  // the outlier is reported
        #expect(clock.residualsMs.p50 > 0.3 && clock.residualsMs.p50 < 0.7)
        #expect(clock.residualsMs.max > 5)
    }

    @Test func lowLatencyBlocksAndReadsRightAfterALateOneAreHandled() throws {
        // Idle 1024-frame blocks, then a low-latency stream: 240-frame writes every 5 ms, each
        // read at once, every 10th read 4.6 ms late so that the next comes only 0.45 ms after
        // it (not taken for a fresh wake-up, though it is one).
        let nsPerFrame = 1e9 / 48000
        var reads: [Recording.Read] = []
        var frame = 0
        for size in Array(repeating: 1024, count: 5) + Array(repeating: 240, count: 400) {
            let late = reads.count % 10 == 9 ? 4_600_000.0 : 50_000.0
            reads.append(.init(bytes: (frame + size) * 4, nanoseconds: UInt64(1e12 + Double(frame) * nsPerFrame + late)))
            frame += size
        }
        let recording = try Recording(rate: 48000, channels: 2, samples: [], reads: reads)
        #expect(recording.clock.pointCount == reads.count - 1 - 40)
        #expect(abs(recording.clock.originNanoseconds - 1e12 - 50_000) < 1_000)
        #expect(abs(recording.clock.slopePPM) < 0.5)
    }

    @Test func tooFewReadsOrReadsOutOfOrderAreErrors() {
        #expect(throws: PulseTestServerError.self) {
            try Recording(rate: 48000, channels: 2, samples: [], reads: [])
        }
        #expect(throws: PulseTestServerError.self) {
            try Recording(rate: 48000, channels: 2, samples: [], reads: [.init(bytes: 4096, nanoseconds: 10)])
        }
        #expect(throws: PulseTestServerError.self) {
            try Recording(rate: 48000, channels: 2, samples: [], reads: [
                .init(bytes: 4096, nanoseconds: 10), .init(bytes: 4096, nanoseconds: 20), .init(bytes: 8192, nanoseconds: 30),
            ])
        }
    }

    @Test func recordingReadsTheRecordersFiles() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var rng = SplitMix(state: 1)
        let samples = Self.sound(3 * 1024, &rng) + [7]  // a partial frame at the end
        var raw = Data()
        for s in samples { withUnsafeBytes(of: s.littleEndian) { raw.append(contentsOf: $0) } }
        dir.write("rec.raw", data: raw)
        // The last line is still being written: ignored.
        dir.write("rec.times.tsv", "4096\t1000000000\n8192\t1021333333\n12288\t1042666666\n12290\t10")
        let recording = try Recording(rawFile: dir.file("rec.raw"), timesFile: dir.file("rec.times.tsv"), rate: 48000, channels: 2)
        #expect(recording.frames == 3 * 1024)
        #expect(recording.samples == Array(samples.dropLast()))
        #expect(recording.reads.count == 3)
        #expect(recording.clock.pointCount == 2)

        dir.write("bad.tsv", "4096 1000\n")
        #expect(throws: PulseTestServerError.self) {
            try Recording(rawFile: dir.file("rec.raw"), timesFile: dir.file("bad.tsv"), rate: 48000, channels: 2)
        }
    }

    // MARK: Alignment

    @Test func referenceAfterSilenceIsFoundWhole() throws {
        let reference = Self.reference()
        let recording = try Self.recording(Self.silence(7777) + reference + Self.silence(3000))
        let alignment = try #require(recording.locate(reference, channels: 2))
        #expect(alignment.isComplete, "\(alignment)")
        #expect(alignment.startFrame == 7777)
        #expect(alignment.segments == [.init(referenceStart: 0, recordingStart: 7777, length: 14100)])
        #expect(alignment.gaps.isEmpty)
        #expect(alignment.ambiguousRanges.isEmpty)
        #expect(alignment.recordingFrame(ofReferenceFrame: 0) == 7777)
        #expect(alignment.recordingFrame(ofReferenceFrame: 4000) == 7777 + 4000)
        #expect(alignment.recordingFrame(ofReferenceFrame: 14100) == 7777 + 14100)
        #expect(alignment.recordingFrame(ofReferenceFrame: 14101) == nil)
        #expect(alignment.recordingFrames(ofReferenceFrame: 4000) == (7777 + 4000)...(7777 + 4000))
    }

    @Test func leadingAndTrailingSilenceAreAmbiguous() throws {
        let reference = Self.reference(leading: 500, trailing: 300)  // 14900 frames
        let recording = try Self.recording(Self.silence(2000) + reference + Self.silence(1000))
        let alignment = try #require(recording.locate(reference, channels: 2))
        #expect(alignment.isComplete, "\(alignment)")
        #expect(alignment.startFrame == 2000)
        #expect(alignment.segments == [.init(referenceStart: 0, recordingStart: 2000, length: 14900)])
        #expect(alignment.ambiguousRanges == [0..<500, 14600..<14901])
        // Leading silence: placed right before the sound; it may have started any time before.
        #expect(alignment.recordingFrame(ofReferenceFrame: 0) == 2000)
        #expect(alignment.recordingFrames(ofReferenceFrame: 0) == 0...2000)
        #expect(alignment.recordingFrames(ofReferenceFrame: 499) == 499...2499)
        #expect(alignment.recordingFrames(ofReferenceFrame: 500) == 2500...2500)
        // Trailing silence and the end position: right after the sound, or up to 1000 later.
        #expect(alignment.recordingFrame(ofReferenceFrame: 14900) == 16900)
        #expect(alignment.recordingFrames(ofReferenceFrame: 14600) == 16600...17600)
        #expect(alignment.recordingFrames(ofReferenceFrame: 14900) == 16900...17900)
    }

    @Test func gapsInSoundAndInReferenceSilenceAreInsertedSilence() throws {
        let reference = Self.reference()
        // A 14400-frame gap in the first sound (at reference frame 1500) and a 9000-frame gap
        // inside the 2000-frame silence (at reference frame 3700).
        let recording = try Self.recording(
            Self.silence(5000) + Array(reference[0..<3000]) + Self.silence(14400) + Array(reference[3000..<7400])
                + Self.silence(9000) + Array(reference[7400...]) + Self.silence(500))
        let alignment = try #require(recording.locate(reference, channels: 2))
        #expect(alignment.isComplete, "\(alignment)")
        #expect(alignment.startFrame == 5000)
        #expect(alignment.gaps == [
            .init(referenceFrame: 1500, recordingStart: 6500, length: 14400),
            // Placed at the end of the reference's silence, before its next sound.
            .init(referenceFrame: 5000, recordingStart: 5000 + 14400 + 5000, length: 9000),
        ])
        #expect(alignment.segments == [
            .init(referenceStart: 0, recordingStart: 5000, length: 1500),
            .init(referenceStart: 1500, recordingStart: 5000 + 14400 + 1500, length: 3500),
            .init(referenceStart: 5000, recordingStart: 5000 + 14400 + 9000 + 5000, length: 9100),
        ])
        #expect(alignment.ambiguousRanges == [3000..<5000])
        let base = 5000 + 14400
        #expect(alignment.recordingFrame(ofReferenceFrame: 1499) == 5000 + 1499)
        #expect(alignment.recordingFrame(ofReferenceFrame: 1500) == base + 1500)
        #expect(alignment.recordingFrame(ofReferenceFrame: 3700) == base + 3700)
        #expect(alignment.recordingFrames(ofReferenceFrame: 3700) == (base + 3700)...(base + 3700 + 9000))
        #expect(alignment.recordingFrames(ofReferenceFrame: 2999) == (base + 2999)...(base + 2999))
        #expect(alignment.recordingFrame(ofReferenceFrame: 5000) == base + 9000 + 5000)
        #expect(alignment.recordingFrame(ofReferenceFrame: 14100) == base + 9000 + 14100)
    }

    @Test func aGapAtTheStartOfReferenceSilenceIsPlacedAtItsEnd() throws {
        let reference = Self.reference()
        // The gap falls right after the sound, at reference frame 3000: same placement.
        let recording = try Self.recording(
            Self.silence(100) + Array(reference[0..<6000]) + Self.silence(777) + Array(reference[6000...]))
        let alignment = try #require(recording.locate(reference, channels: 2))
        #expect(alignment.isComplete, "\(alignment)")
        #expect(alignment.gaps == [.init(referenceFrame: 5000, recordingStart: 5100, length: 777)])
        #expect(alignment.ambiguousStretches == [.init(referenceFrames: 3000..<5000, recordingFrames: 3100..<5877)])
    }

    @Test func anAlteredSampleMakesItIncomplete() throws {
        let reference = Self.reference()
        var samples = Self.silence(1000) + reference
        samples[(1000 + 6000) * 2 + 1] &+= 1
        let alignment = try #require(try Self.recording(samples).locate(reference, channels: 2))
        #expect(!alignment.isComplete)
        #expect(alignment.issues.count == 1, "\(alignment)")
        #expect(alignment.recordingFrame(ofReferenceFrame: 5999) == 6999)
        #expect(alignment.recordingFrame(ofReferenceFrame: 6000) == nil)
        #expect(alignment.recordingFrame(ofReferenceFrame: 6001) == 7001)
    }

    @Test func lostFramesMissingEndAndForeignSoundAreIncomplete() throws {
        let reference = Self.reference()
        var rng = SplitMix(state: 99)
        let cases: [(String, [Int16])] = [
            ("10 frames lost", Self.silence(1000) + Array(reference[0..<(2 * 8000)]) + Array(reference[(2 * 8010)...])),
            ("the recording ends early", Self.silence(1000) + Array(reference[0..<(2 * 12000)])),
            ("sound inserted",
             Self.silence(1000) + Array(reference[0..<(2 * 8000)]) + Self.sound(50, &rng) + Array(reference[(2 * 8000)...])),
            ("silence lost", Self.silence(1000) + Array(reference[0..<(2 * 3500)]) + Array(reference[(2 * 3600)...])),
        ]
        for (name, samples) in cases {
            let alignment = try #require(try Self.recording(samples).locate(reference, channels: 2), "\(name)")
            #expect(!alignment.isComplete, "\(name): \(alignment)")
            #expect(alignment.startFrame == 1000, "\(name)")
        }
    }

    @Test func absentOrSilentReferencesAreNotFound() throws {
        var rng = SplitMix(state: 5)
        let recording = try Self.recording(Self.silence(1000) + Self.reference())
        #expect(recording.locate(Self.sound(100, &rng), channels: 2) == nil)
        #expect(recording.locate(Self.silence(100), channels: 2) == nil)
        #expect(recording.locate([], channels: 2) == nil)
    }

    @Test func tenMinutesAreAlignedInLinearTime() throws {
        // 10 minutes at 48 kHz stereo with two gaps: a few linear passes. One block of noise
        // and silence repeated, its first sample numbering the repeat (building the data in a
        // debug build takes longer than aligning it).
        var rng = SplitMix(state: 3)
        let block = Self.sound(12000, &rng) + Self.silence(2400)
        var reference: [Int16] = []
        reference.reserveCapacity(48000 * 600 * 2 + block.count)
        var repeatNumber: Int16 = 1
        while reference.count < 48000 * 600 * 2 {
            let start = reference.count
            reference += block
            reference[start] = repeatNumber
            repeatNumber = repeatNumber == .max ? 1 : repeatNumber + 1
        }
        let f1 = 200 * 48000, f2 = 400 * 48000 + 12345
        var samples = Self.silence(24000)
        samples.reserveCapacity(reference.count + 48000 * 2)
        samples += reference[0..<(2 * f1)]
        samples += Self.silence(14400)
        samples += reference[(2 * f1)..<(2 * f2)]
        samples += Self.silence(14400)
        samples += reference[(2 * f2)...]
        let recording = try Self.recording(samples)
        let start = Date()
        let alignment = try #require(recording.locate(reference, channels: 2))
        let seconds = Date().timeIntervalSince(start)
        print("10-minute alignment: \(String(format: "%.2f", seconds)) s")
        #expect(alignment.isComplete, "\(alignment)")
        #expect(alignment.gaps.map(\.length) == [14400, 14400])
        #expect(seconds < 10)
    }
}
