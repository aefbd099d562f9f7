import Foundation
import NarratorTestSupport
import Testing

/// Music under the voice, checked on rendered samples: the envelope a voice-bus clip puts on a
/// constant music signal, frame by frame, against the rule computed here on its own.
@Suite("Ducking")
struct DuckingTests {
    /// A mono 16-bit WAV of `frames` copies of `value`.
    static func constant(_ value: Int16, frames: Int) -> Data {
        WAVFile.pcm16([Int16](repeating: value, count: frames), rate: 48000)
    }

    @Test func musicRampsDownFromTheVoicesFirstFrameAndBackUpAfterItsLast() throws {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("music.wav", data: Self.constant(16384, frames: 3 * 48000))
        dir.write("voice.wav", data: Self.constant(0, frames: 48000))  // a voice clip of silence
        let lesson = dir.write(
            "l.json",
            """
            {"sampleRate": 48000, "channels": 1, "ducking": {"gain": -12, "attack": 0.05, "release": 0.3},
             "clips": {"bed": {"file": "music.wav", "bus": "music"}, "say": {"file": "voice.wav"}},
             "chains": {"c": [{"music": "bed"}, {"silence": 0.5}, {"clip": "say"}, {"silence": 1.0}]}}
            """)
        let rendered = try run(Repo.narrator, ["render", lesson, "--chain", "c", "--output", dir.file("out.wav")])
        try #require(rendered.status == 0, "\(rendered.stderr)")
        let samples = try WAVFile(path: dir.file("out.wav")).int16Samples
        #expect(samples.count == 120_000, "the music is cut where the chain ends")

        // The rule: per frame, covered by the voice (24000..<72000) → one attack step down,
        // else one release step up; gain = 1 + duck × (10^(−12/20) − 1).
        let attack = 2400.0, release = 14400.0, floor = pow(10, -12.0 / 20)
        var duck = 0.0
        var worst = 0
        for f in 0..<samples.count {
            duck = (24000..<72000).contains(f) ? min(1, duck + 1 / attack) : max(0, duck - 1 / release)
            let expected = Int((16384 * (1 + duck * (floor - 1))).rounded())
            worst = max(worst, abs(Int(samples[f]) - expected))
        }
        #expect(worst <= 1, "largest difference \(worst) LSB")
        #expect(samples[23999] == 16384, "full level up to the voice's first frame")
        #expect(samples[24000] < 16384, "the ramp starts at the voice's first frame")
        #expect(abs(Int(samples[26399]) - Int((16384 * floor).rounded())) <= 1, "fully down after 50 ms")
        #expect(samples[72000 + 14400] == 16384, "back up 300 ms after the voice")
    }
}
