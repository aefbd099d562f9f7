import Foundation
import NarratorTestSupport
import Testing

/// Sync maps as aeneas itself writes them: the aeneas forced aligner (aeneas-ng from PyPI, which
/// `make deps` installs) aligns speech that `narrator synth` made, in JSON, CSV, TSV and SMIL,
/// and `narrator timings convert` imports each. Not skipped when aeneas is missing: it fails,
/// saying how to install it.
@Suite("aeneas")
struct AeneasTests {
    /// (Not "in the park" nor "on the grass": espeak-ng speaks "in the" and "on the" as one word,
    /// with one word event, and `narrator synth` then has no start for "the".)
    static let sentence = "look at the big brown dog, it runs and jumps and plays"
    static let rate = 48000
    /// aeneas writes seconds to the millisecond: every time is a whole number of these frames.
    static let framesPerMillisecond = rate / 1000
    /// How far aeneas's word starts may lie from espeak's own. With its default settings aeneas
    /// places boundaries on a 40 ms grid (its MFCC window shift), and on this sentence its starts
    /// after the first were measured 0.8 to 55.6 ms from espeak's (−1511 to +2667 frames; 25.4 ms
    /// on average; aeneas-ng 1.7.4.0, espeak-ng 1.51): each may be off by two grid steps, and on
    /// average by less than one.
    static let tolerance = 2 * 40 * framesPerMillisecond
    static let meanTolerance = 40 * framesPerMillisecond

    struct Word: Equatable, CustomStringConvertible {
        let text: String
        let start: Int
        let end: Int
        var description: String { "\(text) \(start)…\(end)" }
    }

    /// A canonical JSON timing file's words, their times back to frames at `rate` (the file
    /// holds frame / rate to the microsecond, so rounding gives the frame exactly).
    static func words(_ path: String) throws -> [Word] {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        return try #require(object["words"] as? [[String: Any]]).map {
            Word(
                text: $0["text"] as? String ?? "", start: Int(((($0["start"] as? Double) ?? -1) * Double(rate)).rounded()),
                end: Int(((($0["end"] as? Double) ?? -1) * Double(rate)).rounded()))
        }
    }

    /// aeneas's command-line tool, started on `audio` and `text` with a task configuration; its
    /// own messages go to a log file beside the output, read if it fails.
    static func startAeneas(audio: String, text: String, configuration: String, output: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-m", "aeneas.tools.execute_task", audio, text, configuration, output]
        process.environment = ProcessInfo.processInfo.environment.merging(["PYTHONIOENCODING": "UTF-8"]) { $1 }
        _ = FileManager.default.createFile(atPath: output + ".log", contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: output + ".log"))
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try log.close()
        return process
    }

    @Test func syncMapsInEveryFormatAgreeWithEachOtherAndWithEspeak() throws {
        let installed = try runTool("python3", ["-c", "import aeneas.tools.execute_task, aeneas.cew.cew, aeneas.cdtw.cdtw"])
        try #require(
            installed.status == 0,
            """
            aeneas is not installed (or not with its C extensions): `make deps` installs it (apt: festival-dev \
            libestools-dev libespeak-ng-dev ffmpeg; pip: aeneas-ng). python3 said: \(installed.stderr)
            """)

        let dir = TempDir()
        defer { dir.remove() }
        let audio = dir.file("clip.wav")
        let made = try run(Repo.narrator, ["synth", Self.sentence, "--output", audio, "--timings", dir.file("espeak.json"), "--rate", "\(Self.rate)"])
        try #require(made.status == 0, "\(made.stderr)")
        let espeak = try Self.words(dir.file("espeak.json"))
        let sentenceWords = Self.sentence.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        // synth keeps each word as written, its comma too.
        try #require(espeak.map(\.text) == Self.sentence.split(separator: " ").map(String.init))

        // Plain text, one word a line: one fragment a word, with ids f000001, f000002, …
        let plain = dir.write("words.txt", sentenceWords.joined(separator: "\n") + "\n")
        // For SMIL, the EPUB way: aeneas reads the XHTML page's elements by id, and the SMIL
        // it writes points back at them (the same words, so the same fragments).
        let ids = sentenceWords.indices.map { String(format: "f%06d", $0 + 1) }
        let spans = zip(ids, sentenceWords).map { "<span id=\"\($0)\">\($1)</span>" }.joined(separator: " ")
        let page = dir.write(
            "page.xhtml",
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <html xmlns="http://www.w3.org/1999/xhtml"><head><title>lesson</title></head>
            <body><p>\(spans)</p></body></html>

            """)
        let plainTask = "task_language=eng|is_text_type=plain"
        let runs: [(format: String, text: String, configuration: String)] = [
            ("json", plain, "\(plainTask)|os_task_file_format=json"),
            ("csv", plain, "\(plainTask)|os_task_file_format=csv"),
            ("tsv", plain, "\(plainTask)|os_task_file_format=tsv"),
            (
                "smil", page,
                "task_language=eng|is_text_type=unparsed|is_text_unparsed_id_regex=f[0-9]+|is_text_unparsed_id_sort=numeric"
                    + "|os_task_file_format=smil|os_task_file_smil_page_ref=page.xhtml|os_task_file_smil_audio_ref=clip.wav"
            ),
        ]
        // The four alignments at once: each is mostly Python starting up.
        let processes = try runs.map {
            try Self.startAeneas(audio: audio, text: $0.text, configuration: $0.configuration, output: dir.file("aeneas.\($0.format)"))
        }
        for (process, task) in zip(processes, runs) {
            process.waitUntilExit()
            let log = (try? String(contentsOfFile: dir.file("aeneas.\(task.format).log"), encoding: .utf8)) ?? ""
            try #require(process.terminationStatus == 0, "aeneas (\(task.format)) failed:\n\(log)")
        }

        var imported: [String: [Word]] = [:]
        for format in runs.map(\.format) {
            let converted = try run(
                Repo.narrator, ["timings", "convert", dir.file("aeneas.\(format)"), dir.file("\(format).json"), "--rate", "\(Self.rate)"])
            try #require(converted.status == 0, "\(format): \(converted.stderr)")
            #expect(converted.stderr.isEmpty, "\(format): \(converted.stderr)")
            imported[format] = try Self.words(dir.file("\(format).json"))
        }
        let aligned = try #require(imported["json"])

        // The words: the text in JSON, CSV and SMIL (from the page); aeneas's TSV has only the
        // fragment ids, which Narrator takes as the text.
        #expect(aligned.map(\.text) == sentenceWords)
        #expect(imported["csv"]?.map(\.text) == sentenceWords)
        #expect(imported["smil"]?.map(\.text) == sentenceWords)
        #expect(imported["tsv"]?.map(\.text) == ids)

        // One alignment, four spellings: the same frames, each a whole millisecond.
        for format in ["csv", "tsv", "smil"] {
            #expect(imported[format]?.map { [$0.start, $0.end] } == aligned.map { [$0.start, $0.end] }, "\(format) differs from json")
        }
        #expect(aligned.allSatisfy { $0.start % Self.framesPerMillisecond == 0 && $0.end % Self.framesPerMillisecond == 0 }, "\(aligned)")
        #expect(aligned.allSatisfy { $0.end > $0.start })

        // Against espeak's own word starts. Both put the first word at the start of the audio
        // (aeneas's first fragment always begins at 0), so the words after it are what tells.
        #expect(aligned.first?.start == 0 && espeak.first?.start == 0)
        let offsets = zip(aligned, espeak).dropFirst().map { $0.start - $1.start }
        let report = zip(sentenceWords.dropFirst(), offsets).map { "\($0) \($1) (\(String(format: "%.1f", Double($1) / Double(Self.framesPerMillisecond))) ms)" }
            .joined(separator: ", ")
        #expect(offsets.allSatisfy { abs($0) <= Self.tolerance }, "aeneas − espeak word starts, in frames: \(report)")
        let mean = offsets.map { abs($0) }.reduce(0, +) / offsets.count
        #expect(mean <= Self.meanTolerance, "mean |aeneas − espeak| \(mean) frames: \(report)")
    }
}
