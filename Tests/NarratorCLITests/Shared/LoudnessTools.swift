import Foundation
import NarratorTestSupport
import Testing

/// Loudness as measured by tools other than Narrator (ffmpeg's ebur128 filter, af_ebur128, an
/// implementation of its own, not libebur128), and the signals the loudness suites make with sox.
enum LoudnessTools {
    /// What ffmpeg's ebur128 filter says of a file: integrated loudness (the last value it
    /// reports, to 3 decimals, checked against its summary), loudness range, true peak in dBTP
    /// (its summary, to 0.1 dB).
    struct FFmpegLoudness {
        let integrated: Double
        let range: Double
        let truePeak: Double
    }

    static func ffmpeg(_ path: String) throws -> FFmpegLoudness {
        let result = try runTool(
            "ffmpeg", ["-hide_banner", "-nostats", "-i", path, "-af", "ebur128=metadata=1:peak=true,ametadata=print:file=-", "-f", "null", "-"])
        try #require(result.status == 0, "\(result.stderr)")
        func last(_ key: String, in text: String) -> Double? {
            text.split(separator: "\n").last { $0.hasPrefix(key) }.flatMap { Double($0.dropFirst(key.count)) }
        }
        let integrated = try #require(last("lavfi.r128.I=", in: result.stdout), "\(result.stdout.suffix(500))")
        let range = try #require(last("lavfi.r128.LRA=", in: result.stdout))
        // The summary: "    I:         -21.0 LUFS", "    Peak:       -4.6 dBFS".
        let summary = result.stderr.components(separatedBy: "Summary:").last ?? ""
        func field(_ name: String) -> Double? {
            summary.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(name) }
                .flatMap { Double($0.split(separator: " ").dropFirst().first ?? "") }
        }
        let summaryI = try #require(field("I:"), "\(summary)")
        #expect(abs(summaryI - integrated) <= 0.0501, "the last reported value is the whole file's: \(summaryI) vs \(integrated)")
        let peak = try #require(field("Peak:"), "\(summary)")
        return FFmpegLoudness(integrated: integrated, range: range, truePeak: peak)
    }

    static func sox(_ arguments: [String]) throws {
        let made = try runTool("sox", ["-D"] + arguments)
        try #require(made.status == 0, "\(made.stderr)")
    }

    /// A speech-like signal: pink noise with a 4 Hz syllable rhythm, 2.5 s at 48 kHz, and
    /// copies of it peaking at `levels` dBFS (c10.wav at -10, …).
    static func speechAtLevels(_ levels: [Int], in dir: TempDir, seconds: String = "2.5") throws {
        try sox(["-n", "-r", "48000", "-c", "1", "-b", "16", dir.file("speech.wav"), "synth", seconds, "pinknoise", "synth", seconds, "sine", "amod", "4", "0"])
        for level in levels {
            try sox([dir.file("speech.wav"), dir.file("c\(level).wav"), "norm", "-\(level)"])
        }
    }
}
