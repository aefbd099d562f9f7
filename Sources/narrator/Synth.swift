import ArgumentParser
import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorSynth

struct Synth: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "synth",
        abstract: "Scratch narration: speak a text with libespeak-ng, with word timings from its word events.",
        discussion: """
            Writes the speech (mono at --rate: a 16-bit WAV, or by the extension .flac, .ogg, .opus \
            or .mp3) and its word timings (by the extension: \
            .json, .txt, .vtt, .srt or .smil), one timed word per word of the text (or per pair espeak-ng \
            speaks as one), each starting where its sound starts (for a word that begins with a \
            stop, at its burst) and ending where its sound ends, so that a lesson can be built and tested before the \
            voice is recorded.

            Example:
              narrator synth "A round fruit that grows on trees." \\
                --output apple.wav --timings apple.json
            """)

    @Argument(help: "What to say.")
    var text: String

    @Option(help: "The audio file to write: .wav (16-bit), .flac, .ogg (Vorbis), .opus or .mp3.")
    var output: String

    @Option(help: "The word timings to write (.json, .txt, .vtt, .srt or .smil).")
    var timings: String

    @Option(help: "The espeak-ng voice (espeak-ng --voices lists them).")
    var voice = "en"

    @Option(help: "The sample rate of the output (espeak-ng's own is resampled with libsoxr).")
    var rate = 48000

    func validate() throws {
        guard (8000...384_000).contains(rate) else { throw ValidationError("--rate must be between 8000 and 384000, got \(rate)") }
    }

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            // The output's type takes the rate, before anything is spoken.
            try AudioFileType(path: output).check(sampleRate: rate, channels: 1, path: output, rateSetBy: "--rate")
            let speech = try Synthesizer.speak(text, voice: voice, rate: rate)
            let writer = try SoundFileWriter(path: output, sampleRate: speech.sampleRate, channels: 1, format: .s16, rateSetBy: "--rate")
            do throws(NarratorError) {
                try speech.samples.withUnsafeBufferPointer { samples throws(NarratorError) in
                    var offset = 0
                    while offset < samples.count {
                        let count = min(8192, samples.count - offset)
                        try writer.write(UnsafeBufferPointer(rebasing: samples[offset..<offset + count]), frames: count)
                        offset += count
                    }
                }
                try WordTimings.write(speech.words, rate: speech.sampleRate, to: timings)
                try writer.finish()
            } catch {
                writer.abandon()
                throw error
            }
            print("\(output): \(speech.samples.count) frames at \(speech.sampleRate) Hz, \(Wording.count(speech.words.count, "word")) → \(timings)")
        }
    }
}
