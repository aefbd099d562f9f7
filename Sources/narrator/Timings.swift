import ArgumentParser
import Foundation
import NarratorAudioFile
import NarratorCore

struct Timings: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timings",
        abstract: "Word-timing files: convert between the formats aligners, subtitle tools and web players use.",
        subcommands: [Convert.self])

    struct Convert: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "convert",
            abstract: "Convert a timing file: IN in any format Narrator reads, OUT by its extension.",
            discussion: """
                Reads: Narrator JSON (.json), Audacity labels (.txt), WebVTT (.vtt), SubRip (.srt), \
                Praat TextGrid, long or short (.TextGrid: the 'words' tier, as the Montreal Forced \
                Aligner writes it), aeneas sync maps (.json, .csv, .tsv, .smil), Gentle (.json; words \
                it did not align are skipped and listed on stderr), EPUB 3 Media Overlays (.smil, \
                with the text from the XHTML page it points to), and the labelled cue markers of an \
                audio file (.wav and what else libsndfile reads: each label starts a word that ends at \
                the next marker or the audio's end; an unlabelled marker only ends a word).
                Writes: .json (Narrator's, seconds to the microsecond), .txt (Audacity labels, \
                likewise), .vtt (karaoke timestamps), \
                .srt, .smil (and its .xhtml page beside it). Times are taken to frames at --rate and \
                checked (order, overlap) on the way.

                Example:
                  narrator timings convert Timings/fixtures/formats/sentence.TextGrid \\
                    sentence.vtt
                """)

        @Argument(help: "The timing file to read.")
        var input: String

        @Argument(help: "The file to write: .json, .txt, .vtt, .srt or .smil.")
        var output: String

        @Option(help: "The sample rate the times are checked and rounded at (the lesson's).")
        var rate = 48000

        @Option(help: "For .smil: the audio file its <audio src> names (default: OUT's name with .wav).")
        var audio: String?

        func validate() throws {
            guard (8000...384_000).contains(rate) else { throw ValidationError("--rate must be between 8000 and 384000, got \(rate)") }
        }

        func run() throws {
            try reportingErrors { () throws(NarratorError) in
                let imported = AudioMarker.isAudioFile(input)
                    ? TimingImport(format: .markers, words: try SndFileDecoder().markerWords(path: input, sampleRate: rate), notes: [])
                    : try WordTimings.read(path: input, rate: rate)
                for note in imported.notes { printError("note: \(note)") }
                try WordTimings.write(imported.words, rate: rate, to: output, audio: audio, sentences: imported.sentences)
                print("\(input) (\(imported.format.rawValue)): \(Wording.count(imported.words.count, "word")) → \(output)")
            }
        }
    }
}
