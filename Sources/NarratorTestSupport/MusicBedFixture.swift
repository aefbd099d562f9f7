import Foundation

/// A lesson whose activities play a music bed (docs/lessons.md, "Music for a whole activity"),
/// with its audio written sample by sample here, so that what the bed must sound like is known
/// without Narrator: 48 kHz mono 16-bit files.
///
/// - `noise.wav`: 3 s of seeded pseudo-random samples (±8000): every frame differs from its
///   neighbours, so a bed one frame out of place shows.
/// - `tone.wav`: 3 s of a 300 Hz sine (amplitude 8000): its loop region 0.5–2.5 s holds 600
///   whole cycles, so the frame after its end continues the wave (a click-free seam).
/// - `voice.wav`: 0.5 s of a 1 kHz sine (amplitude 4000), played at 1.0 s by chain `say`.
///
/// Activity `a` plays `say` as its intro and waits for the answer `x`, over the noise bed
/// looped over 0.5–2.5 s, faded out over 0.25 s; activity `b` is the same over the tone bed
/// (default fade-out, 0.5 s); activity `c` is the same with no bed of its own. With
/// `lessonMusic`, the lesson has a bed (`"music"`) for chains played alone and for `c`. Chain
/// `pause` lasts 5 s, its voice at 1 s (`voiceAt`, as `say` and as an activity closed at
/// 5 s); chain `item` starts the tone as a `{"music"}` item and lasts 1 s.
public struct MusicBedFixture: Sendable {
    public let dir = TempDir()
    public let path: String
    public let noise: [Int16]
    public let tone: [Int16]
    public let voice: [Int16]
    public static let rate = 48000
    /// The noise bed of activity `a`, to give the lesson the same (`lessonMusic`).
    public static let noiseBed = #"{"clip": "noise", "loop": {"start": 0.5, "end": 2.5}, "fadeOut": 0.25}"#
    /// The loop region of both beds, in frames.
    public static let loop = 24_000..<120_000
    /// The voice's frames on the timeline.
    public static let voiceAt = 48_000..<72_000

    /// `channels`: the lesson's output channels (the live suites compare stereo).
    public init(channels: Int = 1, music: String? = nil, lessonMusic: String? = nil) {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        noise = (0..<(3 * Self.rate)).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int16(Int((state >> 33) % 16001) - 8000)
        }
        tone = (0..<(3 * Self.rate)).map { Int16((8000 * sin(2 * Double.pi * 300 * Double($0) / Double(Self.rate))).rounded()) }
        voice = (0..<(Self.rate / 2)).map { Int16((4000 * sin(2 * Double.pi * 1000 * Double($0) / Double(Self.rate))).rounded()) }
        for (name, samples) in [("noise", noise), ("tone", tone), ("voice", voice)] {
            _ = dir.write("\(name).wav", data: WAVFile.pcm16(samples, rate: Self.rate))
        }
        let step = #""steps": [{"answer": "x", "correct": "say", "wrong": ["say"]}]"#
        path = dir.write(
            "bed.json",
            """
            {"sampleRate": 48000, "channels": \(channels),\(lessonMusic.map { "\n \"music\": \($0)," } ?? "")
             "clips": {"noise": {"file": "noise.wav", "bus": "music"}, "tone": {"file": "tone.wav"}, "voice": {"file": "voice.wav"}},
             "chains": {"say": [{"silence": 1}, {"clip": "voice"}],
                        "pause": [{"silence": 1}, {"clip": "voice"}, {"silence": 3.5}],
                        "item": [{"music": "tone"}, {"silence": 1}]},
             "activities": {
               "a": {"intro": "say", \(step),
                     "music": \(music ?? Self.noiseBed)},
               "b": {"intro": "say", \(step), "music": {"clip": "tone", "loop": {"start": 0.5, "end": 2.5}}},
               "c": {"intro": "say", \(step)}}}
            """)
    }

    /// The bed's frame `frame` of the timeline, as the loop plays it: the clip up to the
    /// loop's end, then the loop region over and over.
    public static func looped(_ clip: [Int16], at frame: Int) -> Int16 {
        frame < loop.upperBound ? clip[frame] : clip[loop.lowerBound + (frame - loop.lowerBound) % loop.count]
    }
}
