import Foundation
import NarratorCore
import NarratorTestSupport
import Testing

@testable import NarratorAudioFile

/// Compressed files as sox, ffmpeg and the Debian encoders (lame, oggenc, opusenc, flac) write
/// them, at 8, 16, 22.05, 44.1 and 48 kHz and 0.05, 0.3, 2 and 7 s, made by
/// scripts/encoded-audio.sh into a temporary folder. Each decodes whole, to the length these
/// rules give, against two truths not computed by Narrator: the source's frame count (soxi)
/// and ffmpeg's own decoded frame count.
///
/// - FLAC: the source's frames, as ffmpeg decodes them.
/// - Ogg Vorbis: the final granule position, which the encoders set to the source's frames.
///   ffmpeg agrees, except when all the audio fits one page (the short files): it then does not
///   trim the last packet and decodes up to one block more (less than 2048 frames).
/// - Ogg Opus: libsndfile decodes at the encoder's input rate when Opus has it (8, 12, 16,
///   24, 48 kHz; else the next one up: 22.05 → 24, 44.1 → 48 kHz), ffmpeg always at 48 kHz:
///   the same length once scaled, the pre-skip removed by both; the source's length at that
///   rate (±1 frame, the encoder's resampling).
/// - MP3 with a Xing/Info header (LAME's tag: encoder delay and padding): the source's frames,
///   as ffmpeg decodes them. Without one (sox, `lame -t`, ffmpeg `-write_xing 0`, lame below
///   32 kHz, which leaves the tag out): every MPEG frame, the delay and padding included, as
///   ffmpeg decodes it; a whole number of MPEG frames (1152 samples at 32 kHz and above,
///   576 below), longer than the source; libsndfile's own count is then only an estimate.
@Suite(.serialized) struct EncodedFileTests {
    struct Entry {
        let name: String
        let encoder: String
        let rate: Int
        let sourceFrames: Int
        let ffmpegFrames: Int
        let ffmpegRate: Int
    }

    static func make(_ dir: TempDir, rates: String? = nil, seconds: String? = nil) throws -> [Entry] {
        var arguments = [Repo.path("scripts/encoded-audio.sh"), dir.path]
        if let rates { arguments.append(rates) }
        if let seconds { arguments.append(seconds) }
        let made = try run("/bin/bash", arguments)
        try #require(made.status == 0, "\(made.stderr)")
        let manifest = try String(contentsOfFile: dir.file("manifest.tsv"), encoding: .utf8)
        return try manifest.split(separator: "\n").map { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            try #require(f.count == 6, "manifest line: \(line)")
            let numbers = try f[2...5].map { try #require(Int($0), "manifest line: \(line)") }
            return Entry(name: f[0], encoder: f[1], rate: numbers[0], sourceFrames: numbers[1], ffmpegFrames: numbers[2], ffmpegRate: numbers[3])
        }
    }

    /// Whether an MP3 begins (after an ID3v2 tag) with a frame holding a Xing/Info or VBRI
    /// header, looked for as bytes in its first frame.
    static func hasGaplessHeader(_ path: String) throws -> Bool {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(20000))
        var start = 0
        if data.starts(with: Array("ID3".utf8)) {
            start = 10 + data[6..<10].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
        }
        let frame = data[start..<min(data.count, start + 200)]
        return ["Xing", "Info", "VBRI"].contains { tag in
            let bytes = Array(tag.utf8)
            return frame.indices.contains { i in i + 4 <= frame.endIndex && Array(frame[i..<(i + 4)]) == bytes }
        }
    }

    @Test func everyEncoderAtEveryRateAndLengthDecodesWhole() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let entries = try Self.make(dir)
        #expect(entries.count >= 5 * 4 * 11, "every encoder at every rate and length")
        var untagged = 0
        for entry in entries {
            let path = dir.file(entry.name)
            let scan: AudioScan
            do {
                scan = try AudioScan(path: path)
            } catch {
                Issue.record("\(entry.name) refused: \(error)")
                continue
            }
            let what = "\(entry.name): decoded \(scan.frames) at \(scan.sampleRate) Hz, source \(entry.sourceFrames), ffmpeg \(entry.ffmpegFrames) at \(entry.ffmpegRate) Hz"
            switch URL(fileURLWithPath: entry.name).pathExtension {
            case "flac":
                #expect(scan.sampleRate == entry.rate, "\(what)")
                #expect(scan.frames == entry.sourceFrames && scan.frames == entry.ffmpegFrames, "\(what)")
            case "ogg":
                #expect(scan.sampleRate == entry.rate, "\(what)")
                #expect(scan.frames == entry.sourceFrames, "\(what)")
                if entry.sourceFrames >= 2 * entry.rate {
                    #expect(scan.frames == entry.ffmpegFrames, "\(what)")
                } else {
                    #expect(entry.ffmpegFrames >= scan.frames && entry.ffmpegFrames - scan.frames < 2048, "\(what)")
                }
            case "opus":
                let opusRate = [8000, 12000, 16000, 24000, 48000].first { $0 >= entry.rate }!
                #expect(scan.sampleRate == opusRate, "\(what)")
                #expect(entry.ffmpegRate == 48000)
                #expect(scan.frames * 48000 / opusRate == entry.ffmpegFrames, "\(what)")
                #expect(abs(scan.frames * entry.rate - entry.sourceFrames * opusRate) <= entry.rate, "\(what)")
            case "mp3":
                #expect(scan.sampleRate == entry.rate, "\(what)")
                #expect(scan.frames == entry.ffmpegFrames, "\(what)")
                if try Self.hasGaplessHeader(path) {
                    #expect(!scan.lacksGaplessInfo, "\(what)")
                    #expect(scan.frames == entry.sourceFrames, "\(what)")
                } else {
                    untagged += 1
                    #expect(scan.lacksGaplessInfo, "\(what)")
                    #expect(scan.frames > entry.sourceFrames, "\(what)")
                    #expect(scan.frames % (entry.rate >= 32000 ? 1152 : 576) == 0, "\(what)")
                    // Decoding and the length the player plans with agree.
                    let decoded = try SndFileDecoder().decode(path: path, sampleRate: entry.rate)
                    #expect(decoded.frames == scan.frames, "\(what)")
                }
            default:
                Issue.record("unexpected file \(entry.name)")
            }
        }
        #expect(untagged >= 5 * 4 * 3, "sox, lame -t and ffmpeg -write_xing 0 at every rate and length")
    }

    /// Cut files are still refused, each by its container's own truth.
    @Test func filesCutShortAreStillTruncated() throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = try Self.make(dir, rates: "44100", seconds: "7")
        func cut(_ name: String, to length: (Data) -> Int) throws -> String {
            let data = try Data(contentsOf: URL(fileURLWithPath: dir.file(name)))
            return dir.write("cut-" + name, data: data.prefix(length(data)))
        }
        func refusal(_ path: String) -> String? {
            do {
                _ = try AudioScan(path: path)
                return nil
            } catch { return error.message }
        }
        /// Byte offsets where Ogg pages begin, read here by hand.
        func oggPages(_ data: Data) -> [Int] {
            let bytes = [UInt8](data)
            return bytes.indices.filter { i in i + 4 <= bytes.count && bytes[i..<(i + 4)].elementsEqual("OggS".utf8) }
        }
        let base = "r44100-s7"
        for name in ["\(base).flac.flac", "\(base).sox.flac", "\(base).oggenc.ogg", "\(base).sox.ogg", "\(base).opusenc.opus", "\(base).ffmpeg.mp3", "\(base).lame.mp3"] {
            // In the middle of the stream.
            let half = try cut(name) { $0.count / 2 }
            #expect(refusal(half)?.contains("truncated") == true, "\(name): \(refusal(half) ?? "accepted")")
        }
        for name in ["\(base).oggenc.ogg", "\(base).ffmpeg.ogg", "\(base).opusenc.opus"] {
            // At a page boundary: whole pages, the last without its end-of-stream flag.
            let whole = try cut(name) { oggPages($0).last! }
            #expect(refusal(whole)?.contains("end-of-stream") == true, "\(name): \(refusal(whole) ?? "accepted")")
        }
        // The complete files are accepted, and untagged MP3 cut short has no truth to fail.
        for name in ["\(base).oggenc.ogg", "\(base).flac.flac", "\(base).lame.mp3", "\(base).sox.mp3"] {
            #expect(refusal(dir.file(name)) == nil, "\(name)")
        }
    }

    /// WAV and AIFF: the data chunk's declared size against the bytes there; a size of
    /// 0xFFFFFFFF (sox writing to a pipe) declares no length and is read to the end.
    @Test func wavAndAiffDataChunksAreCheckedAgainstTheFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for ext in ["wav", "aiff"] {
            let made = try runTool("sox", ["-n", "-r", "16000", "-b", "16", dir.file("tone.\(ext)"), "synth", "1", "sine", "300"])
            try #require(made.status == 0, "\(made.stderr)")
            let data = try Data(contentsOf: URL(fileURLWithPath: dir.file("tone.\(ext)")))
            #expect(try AudioScan(path: dir.file("tone.\(ext)")).frames == 16000)
            let cut = dir.write("cut.\(ext)", data: data.prefix(data.count - 1000))
            do {
                _ = try AudioScan(path: cut)
                Issue.record("\(ext) cut short was accepted")
            } catch {
                #expect(error.message.contains("truncated"), "\(error)")
                if ext == "wav" {
                    // 32000 bytes announced after a 44-byte header, 31000 there.
                    #expect(error.message.contains("claims 32000 bytes, the file holds 31000"), "\(error)")
                }
            }
        }
        // Through a pipe, sox and ffmpeg cannot go back to write the sizes: each leaves its
        // placeholder (sox 0x7FFFF000 in whole frames for WAV, 0x7F000008 for AIFF; ffmpeg
        // 0xFFFFFFFF), and the file is read to its end.
        let pipes: [(String, String, Int)] = [
            ("sox-mono.wav", "sox -n -r 16000 -b 16 -t wav - synth 0.5 sine 300", 8000),
            ("sox-stereo24.wav", "sox -n -r 16000 -b 24 -c 2 -t wav - synth 0.5 sine 300", 8000),
            ("sox.aiff", "sox -n -r 16000 -b 16 -t aiff - synth 0.5 sine 300", 8000),
            ("ffmpeg.wav", "ffmpeg -v error -nostdin -f lavfi -i sine=r=16000:d=0.5 -f wav -", 8000),
        ]
        for (name, command, frames) in pipes {
            let piped = try runTool("bash", ["-c", "\(command) | cat > '\(dir.file(name))'"])
            try #require(piped.status == 0, "\(piped.stderr)")
            let scan = try AudioScan(path: dir.file(name))
            #expect(scan.frames == frames, "\(name)")
        }
    }
}
