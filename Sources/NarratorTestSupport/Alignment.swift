import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Where a reference render sits in a recording.
///
/// **Expected shape.** The recording is the reference, sample for sample (bit-exact s16),
/// preceded by the sink's silence, and possibly interrupted by inserted digital silence where
/// the player underran (e.g. a test stops it with SIGSTOP for 300 ms: the server plays zeros
/// meanwhile and then the rest continues with nothing lost or repeated). Observed with PulseAudio
/// 16: a stream's first frame lands on a sink chunk boundary (the sink mixes whole chunks), and
/// an underrun's silence is whole chunks too (`aplay` with a 100 ms buffer stopped for 300 ms:
/// 10 or 11 × 1023 frames).
///
/// **How it is found.** The first 64 frames from the reference's first non-zero frame are
/// looked for in the recording (a linear scan for their largest-magnitude sample, then a full
/// compare), and the reference is then matched forward greedily, frame by frame, for as long as
/// it agrees. At a mismatch: if the recording holds silence there, the next 64 reference frames
/// from the first non-zero frame on are looked for further on, and the zeros in between count
/// as an inserted gap; if it differs otherwise, a few frames later at the same offset are tried
/// (an altered sample), then fingerprints further ahead. Anything but inserted silence is an
/// ``issues`` entry and makes the alignment incomplete. Each step scans forward, so the whole
/// costs a few linear passes, not a quadratic search.
///
/// **Ambiguity.** The reference has digital silence of its own (between words, `silence`
/// items). When a gap falls inside such a stretch, the recording shows one longer run of zeros,
/// and which of its zeros belong to the reference cannot be known: any split is consistent. This
/// alignment resolves it deterministically, greedily: the reference's zeros stay right after the
/// sound before them and the gap is put at the end of the stretch (``Gap/referenceFrame`` is the
/// first non-zero frame after it). A cue inside such a stretch may legitimately have been heard
/// anywhere within the gap; ``ambiguousStretches`` lists them (with the recording frames they
/// may occupy) and ``recordingFrames(ofReferenceFrame:)`` gives the bounds. The same holds, by
/// nature, for leading silence (the recording cannot show when the stream started; it is placed
/// right before the first sound) and trailing silence (placed right after the last sound, with
/// the reference's end position included in its range).
public struct Alignment: Sendable, CustomStringConvertible {
    /// Reference frames `referenceStart..<referenceStart + length` are, bit for bit, recording
    /// frames `recordingStart..<recordingStart + length`.
    public struct Segment: Sendable, Equatable {
        /// The first reference frame.
        public let referenceStart: Int
        /// The recording frame it is.
        public let recordingStart: Int
        /// Frames.
        public let length: Int
        /// One past the last reference frame.
        public var referenceEnd: Int { referenceStart + length }
        /// One past the last recording frame.
        public var recordingEnd: Int { recordingStart + length }
        /// Memberwise.
        public init(referenceStart: Int, recordingStart: Int, length: Int) {
            self.referenceStart = referenceStart
            self.recordingStart = recordingStart
            self.length = length
        }
    }

    /// Silence inserted by the playback: `length` frames at `recordingStart`, before reference
    /// frame `referenceFrame` (a non-zero frame; see the ambiguity note on ``Alignment``).
    public struct Gap: Sendable, Equatable {
        /// The reference frame the silence comes before.
        public let referenceFrame: Int
        /// The silence's first recording frame.
        public let recordingStart: Int
        /// Its length in frames.
        public let length: Int
        /// Memberwise.
        public init(referenceFrame: Int, recordingStart: Int, length: Int) {
            self.referenceFrame = referenceFrame
            self.recordingStart = recordingStart
            self.length = length
        }
    }

    /// Reference positions whose recording frame is not determined: a stretch of reference
    /// silence that lies in a longer run of recording silence, `recordingFrames`. Reference
    /// position `referenceFrames.lowerBound + i` lies at some recording frame in
    /// `recordingFrames.lowerBound + i ... recordingFrames.upperBound - referenceFrames.count + i`.
    /// A trailing stretch includes the reference's end position (`referenceFrames.upperBound`
    /// is the reference's frame count + 1, `recordingFrames` one past the run).
    public struct AmbiguousStretch: Sendable, Equatable {
        /// The reference positions (silence; the trailing stretch also its end position).
        public let referenceFrames: Range<Int>
        /// The run of recording silence they lie in (the trailing stretch: one past it).
        public let recordingFrames: Range<Int>
        /// Memberwise.
        public init(referenceFrames: Range<Int>, recordingFrames: Range<Int>) {
            self.referenceFrames = referenceFrames
            self.recordingFrames = recordingFrames
        }

        /// The recording frames reference position `k` (in ``referenceFrames``) may occupy.
        public func bounds(ofReferenceFrame k: Int) -> ClosedRange<Int> {
            let i = k - referenceFrames.lowerBound
            return (recordingFrames.lowerBound + i)...(recordingFrames.upperBound - referenceFrames.count + i)
        }
    }

    /// The reference's length in frames.
    public let referenceFrameCount: Int
    /// The recording frame where reference frame 0 sits (as placed; see the ambiguity note).
    /// Negative if the recording started after it.
    public let startFrame: Int
    /// The matched stretches, in order.
    public let segments: [Segment]
    /// Inserted silences, in order.
    public let gaps: [Gap]
    /// Stretches of reference silence whose place is ambiguous (see ``Alignment``).
    public let ambiguousStretches: [AmbiguousStretch]
    /// What does not fit the expected shape: missing, altered, inserted (other than silence) or
    /// lost frames, a recording that ends early. Empty when ``isComplete``.
    public let issues: [String]

    /// The reference positions of ``ambiguousStretches``: cues there may legitimately be
    /// anywhere within their stretch's gap; exclude or relax them.
    public var ambiguousRanges: [Range<Int>] { ambiguousStretches.map(\.referenceFrames) }

    /// The whole reference was found, in order, with nothing missing or altered; only silence
    /// was inserted.
    public var isComplete: Bool { issues.isEmpty }

    /// The recording frame of reference position `k` (0…``referenceFrameCount``, the end
    /// position included), as placed: nil where that part of the reference was not found.
    public func recordingFrame(ofReferenceFrame k: Int) -> Int? {
        guard k >= 0, k <= referenceFrameCount, !segments.isEmpty else { return nil }
        // The last segment starting at or before k.
        var lo = 0, hi = segments.count
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if segments[mid].referenceStart <= k { lo = mid } else { hi = mid }
        }
        let segment = segments[lo]
        guard k >= segment.referenceStart else { return nil }
        if k < segment.referenceEnd || (k == referenceFrameCount && k == segment.referenceEnd) {
            return segment.recordingStart + (k - segment.referenceStart)
        }
        return nil
    }

    /// The recording frames reference position `k` may occupy: one frame, or the bounds an
    /// ambiguous stretch allows. Nil where that part of the reference was not found.
    public func recordingFrames(ofReferenceFrame k: Int) -> ClosedRange<Int>? {
        if let stretch = ambiguousStretches.first(where: { $0.referenceFrames.contains(k) }) {
            return stretch.bounds(ofReferenceFrame: k)
        }
        return recordingFrame(ofReferenceFrame: k).map { $0...$0 }
    }

    /// A summary for test failure messages: placement, gaps, ambiguous stretches, issues.
    public var description: String {
        var lines = ["reference (\(referenceFrameCount) frames) at recording frame \(startFrame): "
            + (isComplete ? "complete" : "INCOMPLETE") + ", \(segments.count) segment(s), \(gaps.count) gap(s)"]
        lines += gaps.map {
            "  gap of \($0.length) frames at recording frame \($0.recordingStart), before reference frame \($0.referenceFrame)"
        }
        lines += ambiguousStretches.map {
            "  ambiguous: reference \($0.referenceFrames) in recording silence \($0.recordingFrames)"
        }
        lines += issues.map { "  issue: \($0)" }
        return lines.joined(separator: "\n")
    }
}

/// The alignment algorithm over raw buffers (see ``Alignment``). All positions are frames.
struct Aligner {
    let ref: UnsafeBufferPointer<Int16>
    let rec: UnsafeBufferPointer<Int16>
    let channels: Int
    let refFrames: Int
    let recFrames: Int
    /// Frames in a fingerprint.
    let fingerprint = 64

    init(ref: UnsafeBufferPointer<Int16>, rec: UnsafeBufferPointer<Int16>, channels: Int) {
        self.ref = ref
        self.rec = rec
        self.channels = channels
        refFrames = ref.count / channels
        recFrames = rec.count / channels
    }

    func align() -> Alignment? {
        guard refFrames > 0, recFrames > 0, let f0 = firstNonzeroRef(from: 0),
              let p = find(f0, from: 0)
        else { return nil }
        var issues: [String] = []
        var segments: [Alignment.Segment] = []
        var gaps: [Alignment.Gap] = []
        var stretches: [Alignment.AmbiguousStretch] = []

        // Leading silence: placed right before the first sound.
        var back = 0
        while back < f0, p - back - 1 >= 0, recZero(p - back - 1) { back += 1 }
        if back < f0 {
            issues.append("reference frames 0..<\(f0 - back) (silence) are missing: the recording "
                + (p - back == 0 ? "starts" : "holds sound") + " at frame \(p - back)")
        } else if f0 > 0 {
            var s = p - f0
            while s > 0, recZero(s - 1) { s -= 1 }
            if s < p - f0 { stretches.append(.init(referenceFrames: 0..<f0, recordingFrames: s..<p)) }
        }

        var refPos = f0 - back
        var recPos = p - back
        while true {
            let n = matchLength(refPos, recPos)
            if n > 0 { segments.append(.init(referenceStart: refPos, recordingStart: recPos, length: n)) }
            refPos += n
            recPos += n
            if refPos == refFrames { break }
            if recPos == recFrames {
                issues.append("the recording ends at frame \(recPos), at reference frame \(refPos) of \(refFrames)")
                break
            }
            guard let (q, r) = resync(refPos, recPos) else {
                if firstNonzeroRef(from: refPos) == nil {
                    issues.append(
                        "reference frames \(refPos)..<\(refFrames) (silence) do not match recording frame \(recPos) on (sound there)")
                } else {
                    issues.append("reference frames \(refPos)..<\(refFrames) not found in the recording after frame \(recPos)")
                }
                break
            }
            let expected = recPos + (q - refPos)
            if q == refPos, r > recPos, recAllZero(recPos..<r) {
                gaps.append(.init(referenceFrame: q, recordingStart: recPos, length: r - recPos))
                // The reference silence right before q (greedily matched already) is ambiguous.
                var z0 = q
                let segmentStart = segments.last?.referenceStart ?? 0
                while z0 > segmentStart, refZero(z0 - 1) { z0 -= 1 }
                if z0 < q {
                    stretches.append(.init(referenceFrames: z0..<q, recordingFrames: (recPos - (q - z0))..<r))
                }
            } else if r == expected {
                issues.append("recording frames \(recPos)..<\(r) differ from reference frames \(refPos)..<\(q)")
            } else if r < expected {
                issues.append(
                    "reference frames \(refPos)..<\(q) (\(q - refPos) frames) are \(r - recPos) frames in the recording "
                        + "(\(recPos)..<\(r)): \(expected - r) lost or altered")
            } else {
                issues.append(
                    "reference frames \(refPos)..<\(q) (\(q - refPos) frames) are \(r - recPos) frames in the recording "
                        + "(\(recPos)..<\(r)): \(r - expected) inserted, not all silence")
            }
            refPos = q
            recPos = r
        }

        // Trailing silence: placed right after the last sound.
        if let last = segments.last, last.referenceEnd == refFrames, let zl = lastNonzeroRef(), zl < refFrames - 1,
           last.referenceStart <= zl + 1 {
            let a = last.recordingStart + (zl + 1 - last.referenceStart)
            var b = last.recordingEnd
            while b < recFrames, recZero(b) { b += 1 }
            if b > last.recordingEnd {
                stretches.append(.init(referenceFrames: (zl + 1)..<(refFrames + 1), recordingFrames: a..<(b + 1)))
            }
        }

        // Belt and braces: a complete alignment tiles the reference.
        if issues.isEmpty {
            var next = 0
            for segment in segments where segment.referenceStart == next { next = segment.referenceEnd }
            if next != refFrames { issues.append("internal: the segments do not cover the reference (up to \(next))") }
        }
        return Alignment(referenceFrameCount: refFrames, startFrame: p - f0, segments: segments, gaps: gaps,
                         ambiguousStretches: stretches, issues: issues)
    }

    /// Where matching continues after a mismatch at (refPos, recPos): a reference frame `q` ≥
    /// refPos and the recording frame `r` ≥ recPos it sits at.
    private func resync(_ refPos: Int, _ recPos: Int) -> (Int, Int)? {
        if !recZero(recPos) {
            // An altered frame or a few: the same offset a little later.
            for d in 1...fingerprint where refPos + d < refFrames && recPos + d < recFrames {
                if matchLength(refPos + d, recPos + d, upTo: fingerprint) >= min(fingerprint, refFrames - refPos - d) {
                    return (refPos + d, recPos + d)
                }
            }
        }
        // Inserted silence (skip 0), or further ahead.
        for skip in [0, 1, fingerprint, 1024, 16384, 262_144, 4_194_304] where refPos + skip < refFrames {
            guard let q = firstNonzeroRef(from: refPos + skip) else { return nil }
            if let r = find(q, from: recPos) { return (q, r) }
        }
        return nil
    }

    private func refZero(_ f: Int) -> Bool {
        for i in (f * channels)..<((f + 1) * channels) where ref[i] != 0 { return false }
        return true
    }

    private func recZero(_ f: Int) -> Bool {
        for i in (f * channels)..<((f + 1) * channels) where rec[i] != 0 { return false }
        return true
    }

    private func recAllZero(_ frames: Range<Int>) -> Bool {
        for i in (frames.lowerBound * channels)..<(frames.upperBound * channels) where rec[i] != 0 { return false }
        return true
    }

    private func firstNonzeroRef(from f: Int) -> Int? {
        var i = f * channels
        while i < ref.count {
            if ref[i] != 0 { return i / channels }
            i += 1
        }
        return nil
    }

    private func lastNonzeroRef() -> Int? {
        var i = ref.count - 1
        while i >= 0 {
            if ref[i] != 0 { return i / channels }
            i -= 1
        }
        return nil
    }

    /// How many frames from reference frame `i` and recording frame `j` on are equal (at most
    /// `limit`), compared with memcmp a block at a time.
    private func matchLength(_ i: Int, _ j: Int, upTo limit: Int = .max) -> Int {
        let most = min(refFrames - i, recFrames - j, limit)
        guard most > 0 else { return 0 }
        let a = ref.baseAddress! + i * channels
        let b = rec.baseAddress! + j * channels
        var n = 0
        while n < most {
            let block = min(4096, most - n)
            if memcmp(a + n * channels, b + n * channels, block * channels * 2) == 0 {
                n += block
                continue
            }
            var k = n * channels
            while a[k] == b[k] { k += 1 }
            return k / channels
        }
        return n
    }

    /// The first recording frame ≥ `from` where the fingerprint of reference frames `q..<q+64`
    /// (fewer at the end) occurs: a scan for its largest-magnitude sample, then memcmp.
    private func find(_ q: Int, from: Int) -> Int? {
        let length = min(fingerprint, refFrames - q)
        let base = q * channels
        let count = length * channels
        var keyOffset = 0
        var best = -1
        for s in 0..<count where abs(Int(ref[base + s])) > best {
            best = abs(Int(ref[base + s]))
            keyOffset = s
        }
        let key = ref[base + keyOffset]
        let lastStart = recFrames - length
        guard from <= lastStart else { return nil }
        let pattern = ref.baseAddress! + base
        let recording = rec.baseAddress!
        var s = from * channels + keyOffset
        let end = lastStart * channels + keyOffset
        while s <= end {
            if recording[s] == key {
                let start = s - keyOffset
                if memcmp(pattern, recording + start, count * 2) == 0 { return start / channels }
            }
            s += channels
        }
        return nil
    }
}

extension Alignment {
    /// Finds `reference` in any capture of played samples (not only a pulse recording): the
    /// same analysis as ``Recording/locate(_:channels:)``.
    public static func locate(_ reference: [Int16], in played: [Int16], channels: Int) -> Alignment? {
        let whole = reference.count - reference.count % channels
        let playedWhole = played.count - played.count % channels
        return reference.withUnsafeBufferPointer { ref in
            played.withUnsafeBufferPointer { rec in
                Aligner(
                    ref: UnsafeBufferPointer(rebasing: ref[0..<whole]), rec: UnsafeBufferPointer(rebasing: rec[0..<playedWhole]),
                    channels: channels
                ).align()
            }
        }
    }
}
