import ArgumentParser
import Foundation
import NarratorAudioFile
import NarratorCore

struct Align: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "align",
        abstract: "Time a recording word by word from its text: a forced aligner places the words, the audio refines them.",
        discussion: """
            English goes to PocketSphinx (its bundled en-US model, one worker process a run; \
            `make deps` installs it), other languages to aeneas (espeak-ng's voices); \
            --first-stage chooses. The refinement then moves a boundary only on strong evidence: \
            onto a real pause (in a clean recording the floor's silences, under a music bed the \
            background's own spectrum, matched with the words in order), never a join by energy \
            alone; the first and last word to the first and last speech-like sound. A recording \
            of 1–10 minutes is cut at its own pauses into sentence pieces first (docs/align.md). \
            Writes the timings by the file's extension, as `timings convert` does: .json, .txt, \
            .vtt, .srt or .smil. Words under confidence 0.5 are named on the summary line; \
            --json prints each word's first-stage and refined frames and its confidence.

            A batch: --manifest FILE lists one recording a line (JSON Lines: {"audio", "text" \
            or "transcript", "timings", optional "language"}, paths relative to the manifest). \
            --shard K/N aligns only this worker's items (the 1st, N+1th, … for 1/N), so N \
            workers run the same command with no coordination; --report writes each item's \
            result as JSON Lines, and `narrator merge` joins the N reports into the report of \
            one unsharded run, byte for byte (docs/align.md). --shard auto takes K and N \
            from the job array it runs in (Slurm, a Kubernetes Indexed Job; docs/cluster.md).

            Examples:
              narrator align Audio/lessons/sight-words/part1.wav --text "I can see" \\
                --timings part1.json
              narrator align --manifest Timings/batch/sight-words.jsonl --to aligned \\
                --shard 1/2 --report part1.jsonl
            """)

    @Argument(help: "The recording (any format libsndfile reads; aeneas reads it through ffmpeg).")
    var audio: String?

    @Option(help: "The text that is spoken.")
    var text: String?

    @Option(help: "A UTF-8 text file holding what is spoken.")
    var transcript: String?

    @Option(help: "The timings to write: .json, .txt (Audacity labels), .vtt, .srt or .smil.")
    var timings: String?

    @Option(help: "The language, as aeneas names it (eng, deu, fra, spa, …); a manifest item's \"language\" overrides it.")
    var language = "eng"

    @Option(help: "The sample rate the timings are in frames at (the lesson's).")
    var rate = 48000

    @Option(help: "Seconds aeneas may run before it is stopped.")
    var timeout = 900

    @Option(help: "Seconds of audio aeneas aligns at once: longer recordings are aligned in pieces cut at pauses (aeneas drifts on long files).")
    var piece = 120

    @Option(help: "The first stage: auto (PocketSphinx for English, aeneas for every other language and when PocketSphinx fails), pocketsphinx or aeneas.")
    var firstStage = "auto"

    @Option(help: "A batch: one recording a line, as JSON Lines (see above).")
    var manifest: String?

    @Option(help: "With --manifest: align only this worker's items, K of N workers (e.g. 2/8), or auto: K and N from the Slurm array or Kubernetes Indexed Job it runs in.")
    var shard: String?

    @Option(help: "With --manifest: write each item's result (words, confidence, or its error) as JSON Lines.")
    var report: String?

    @Option(help: "With --manifest: the folder the items' timings are written under (default: the manifest's folder); made if missing.")
    var to: String?

    @Flag(help: "Print each word's aligner and refined frames and its confidence as JSON.")
    var json = false

    func validate() throws {
        if manifest != nil {
            guard audio == nil, text == nil, transcript == nil, timings == nil else {
                throw ValidationError("with --manifest, each item names its audio, text and timings: give none of them on the command line")
            }
            guard !json else { throw ValidationError("--json prints one alignment; with --manifest, --report writes each item's result") }
        } else {
            guard shard == nil, report == nil, to == nil else { throw ValidationError("--shard, --report and --to go with --manifest") }
            guard audio != nil else { throw ValidationError("give the recording (AUDIO), or a batch with --manifest") }
            guard timings != nil else { throw ValidationError("give the timings to write with --timings") }
            guard (text == nil) != (transcript == nil) else { throw ValidationError("give the text with --text or --transcript (one of them)") }
        }
        guard (8000...384_000).contains(rate) else { throw ValidationError("--rate must be between 8000 and 384000, got \(rate)") }
        guard (1...86_400).contains(timeout) else { throw ValidationError("--timeout must be between 1 and 86400 seconds, got \(timeout)") }
        guard (10...3600).contains(piece) else { throw ValidationError("--piece must be between 10 and 3600 seconds, got \(piece)") }
        guard ["auto", "pocketsphinx", "aeneas"].contains(firstStage) else {
            throw ValidationError("--first-stage must be auto, pocketsphinx or aeneas, got '\(firstStage)'")
        }
        guard Self.isLanguage(language) else { throw ValidationError("--language must be a language code such as eng") }
    }

    /// aeneas reads its settings as `key=value|key=value`: a language is letters and dashes.
    static func isLanguage(_ code: String) -> Bool {
        (2...12).contains(code.count) && code.allSatisfy { $0.isASCII && ($0.isLetter || $0 == "-") }
    }

    func run() throws {
        if let manifest {
            try runBatch(manifest)
            return
        }
        try reportingErrors { () throws(NarratorError) in
            let audio = audio ?? "", timings = timings ?? ""
            try Self.checkWritable(timings)
            let source = transcript ?? "--text"
            let words = try Self.words(text: text, transcript: transcript)
            var timing = PocketSphinx.Timing()
            let worker = PocketSphinxWorker(timeout: timeout)
            defer { worker.close() }
            let refined = try align(
                audio: audio, words: words, source: source, timings: timings, language: language, worker: worker, timing: &timing)
            if json {
                print(Self.report(refined, rate: rate, audio: audio, timings: timings, timing: timing), terminator: "")
            } else {
                print(Self.summary(refined, audio: audio, timings: timings))
            }
        }
    }

    static func checkWritable(_ timings: String) throws(NarratorError) {
        let ext = URL(fileURLWithPath: timings).pathExtension.lowercased()
        guard TimingFormat.writable[ext] != nil else {
            throw NarratorError(file: timings, "cannot write '.\(ext)' (expected \(TimingFormat.writableList))")
        }
    }

    /// The words of `text`, or of the file `transcript`.
    static func words(text: String?, transcript: String?) throws(NarratorError) -> [String] {
        let spoken: String
        if let transcript {
            guard let decoded = String(data: try InputFile.read(path: transcript, limit: InputFile.documentLimit), encoding: .utf8) else {
                throw NarratorError(file: transcript, "not UTF-8 text")
            }
            spoken = decoded
        } else {
            spoken = text ?? ""
        }
        let words = spoken.split(whereSeparator: \.isWhitespace).map(String.init)
        guard !words.isEmpty else { throw NarratorError(file: transcript ?? "--text", "holds no words") }
        return words
    }

    /// English, for PocketSphinx's en-US model: eng, en and en-*.
    static func isEnglish(_ language: String) -> Bool {
        let code = language.lowercased()
        return code == "eng" || code == "en" || code.hasPrefix("en-")
    }

    /// Aligns one recording, refines its boundaries and writes its timings.
    func align(
        audio: String, words: [String], source: String, timings: String, language: String, worker: PocketSphinxWorker,
        timing: inout PocketSphinx.Timing
    ) throws(NarratorError) -> [BoundaryRefinement.Word] {
        let sphinx = firstStage == "pocketsphinx" || (firstStage == "auto" && Self.isEnglish(language))
        let recording = try AlignRecording(
            path: audio, rate: rate, forPocketSphinx: sphinx, holdSeconds: PocketSphinx.wholeSeconds, timing: &timing)
        var refined: [BoundaryRefinement.Word]? = nil
        var sphinxFailure: NarratorError? = nil
        if sphinx {
            do throws(NarratorError) {
                refined = try PocketSphinx.align(
                    audio: audio, recording: recording, words: words, rate: rate, timeout: timeout, source: source, aeneasChunk: piece,
                    worker: worker, timing: &timing)
            } catch {
                guard firstStage == "auto" else { throw error }
                sphinxFailure = error
            }
        }
        if refined == nil {
            do throws(NarratorError) {
                let audioBuffer = try recording.whole(timing: &timing)
                let began = Date()
                let aligned = try Aeneas.alignInChunks(
                    audio: audio, buffer: audioBuffer, words: words, language: language, rate: rate, timeout: timeout, source: source,
                    chunkSeconds: piece)
                timing.anchors += Date().timeIntervalSince(began)
                let start = Date()
                refined = BoundaryRefinement.refine(aligned, samples: audioBuffer.storage, channels: audioBuffer.channels, rate: rate)
                timing.refinement += Date().timeIntervalSince(start)
            } catch {
                // Both stages failed: aeneas's reason, then PocketSphinx's, on one line.
                guard let sphinxFailure else { throw error }
                throw NarratorError(file: error.file, place: error.place, "\(error.message) (PocketSphinx first: \(sphinxFailure.message))")
            }
        }
        let words = refined ?? []
        let result = words.map(\.timing)
        let notes = ["narrator align: confidence per word (the recording's range over its floor, the word's slack past its sound)"]
            + words.map {
                "\($0.timing.index) \($0.timing.text) \(String(format: "%.2f", $0.confidence)) (range \(String(format: "%.1f", $0.range)) dB, slack \(String(format: "%.0f", $0.slack)) ms)"
            }
        try WordTimings.write(result, rate: rate, to: timings, audio: audio, sentences: Sentences.group(result), notes: notes)
        return words
    }

    /// `AUDIO: N words aligned → TIMINGS[; low confidence: …]`.
    static func summary(_ refined: [BoundaryRefinement.Word], audio: String, timings: String) -> String {
        let low = refined.filter { $0.confidence < AlignConfidence.threshold }.map { "\($0.timing.index) \(EventEncoder.quoted($0.timing.text))" }
        let doubt = low.isEmpty ? "" : "; low confidence: " + low.joined(separator: ", ")
        return "\(audio): \(Wording.count(refined.count, "word")) aligned → \(timings)\(doubt)"
    }

    /// The items of a manifest this worker aligns, one after the other. An item that fails is
    /// reported (its line on stderr, its `error` in the report) and the batch goes on; the
    /// exit status is then 1. The report is written once every item is done (complete or absent).
    func runBatch(_ manifestPath: String) throws {
        var failures = 0
        try reportingErrors { () throws(NarratorError) in
            let part = try Shard.resolve(shard, environment: ProcessInfo.processInfo.environment)
            let batch = try AlignManifest.read(path: manifestPath, defaultLanguage: language, outputFolder: to)
            for item in batch.items { try Self.checkWritable(item.timings) }
            var lines: [String] = []
            // One PocketSphinx worker for the batch: its model loads once.
            let worker = PocketSphinxWorker(timeout: timeout)
            defer { worker.close() }
            var timing = PocketSphinx.Timing()
            for item in batch.items where part.contains(item.ordinal) {
                var fields = "\"audio\": \(EventEncoder.quoted(item.written.audio)), \"timings\": \(EventEncoder.quoted(item.written.timings))"
                do throws(NarratorError) {
                    let words = try Self.words(text: item.text, transcript: item.transcript)
                    let folder = URL(fileURLWithPath: item.timings).deletingLastPathComponent().path
                    do {
                        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                    } catch {
                        throw NarratorError(file: folder, "cannot make the folder: \(error.localizedDescription)")
                    }
                    let refined = try align(
                        audio: item.audio, words: words, source: item.transcript ?? "\(manifestPath): line \(item.line): text", timings: item.timings,
                        language: item.language, worker: worker, timing: &timing)
                    print(Self.summary(refined, audio: item.audio, timings: item.timings))
                    fields += ", " + Self.itemFields(refined)
                } catch {
                    failures += 1
                    printError("\(manifestPath): line \(item.line): \(error.description)")
                    // Paths as the manifest spells them: the same report from every worker.
                    let shown = NarratorError(file: batch.written(error.file), place: error.place, error.message)
                    fields += ", \"error\": \(EventEncoder.quoted(shown.description))"
                }
                lines.append(BatchReport.itemLine(ordinal: item.ordinal, fields: fields))
            }
            if let report {
                let header = BatchReport.Header(report: "align", manifestDigest: batch.digest, items: batch.items.count, shard: part)
                try AtomicFile.write(BatchReport.text(header: header, items: lines), to: report)
            }
            if failures > 0 {
                throw NarratorError(file: manifestPath, "\(Wording.count(failures, "item")) of shard \(part) failed (above)")
            }
        }
    }

    /// An aligned item's report fields: its word count, its confidence (mean and least), and
    /// the words under `AlignConfidence.threshold`.
    static func itemFields(_ refined: [BoundaryRefinement.Word]) -> String {
        let confidences = refined.map(\.confidence)
        let mean = confidences.reduce(0, +) / Double(max(1, confidences.count))
        let least = confidences.min() ?? 0
        let low = refined.filter { $0.confidence < AlignConfidence.threshold }.map { EventEncoder.quoted("\($0.timing.index) \($0.timing.text)") }
        return "\"words\": \(refined.count), \"confidence\": {\"mean\": \(String(format: "%.3f", mean)), \"least\": \(String(format: "%.3f", least))}, "
            + "\"lowConfidence\": [\(low.joined(separator: ", "))]"
    }

    /// `{"audio", "timings", "rate", "seconds": {"decode", "anchors", "pocketsphinx", "refinement"},
    /// "words": [{text, start, end, startFrame, endFrame, stage, alignerStartFrame,
    /// alignerEndFrame, stageShiftMs, acousticScore, squeezedPhones, agreement, voiced, rangeDb,
    /// slackMs, confidence}]}` (acousticScore and squeezedPhones null for aeneas's words).
    static func report(_ words: [BoundaryRefinement.Word], rate: Int, audio: String, timings: String, timing: PocketSphinx.Timing) -> String {
        func fixed(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }
        func optional(_ value: Double?, _ digits: Int) -> String { value.map { fixed($0, digits) } ?? "null" }
        let lines = words.map { word in
            let t = word.timing
            return "{\"text\": \(EventEncoder.quoted(t.text)), \"start\": \(fixed(Double(t.startFrame) / Double(rate), 6)), "
                + "\"end\": \(fixed(Double(t.endFrame) / Double(rate), 6)), \"startFrame\": \(t.startFrame), \"endFrame\": \(t.endFrame), "
                + "\"stage\": \"\(word.stage)\", \"alignerStartFrame\": \(word.aligned.startFrame), \"alignerEndFrame\": \(word.aligned.endFrame), "
                + "\"stageShiftMs\": \(fixed(word.stageShift, 1)), \"acousticScore\": \(optional(word.acousticScore, 1)), "
                + "\"squeezedPhones\": \(optional(word.squeezedPhones, 3)), "
                + "\"agreement\": \(fixed(word.agreement, 3)), \"voiced\": \(fixed(word.voiced, 3)), "
                + "\"rangeDb\": \(fixed(word.range, 1)), \"slackMs\": \(fixed(word.slack, 1)), \"confidence\": \(fixed(word.confidence, 3))}"
        }
        let seconds = "{\"decode\": \(fixed(timing.decode, 3)), \"anchors\": \(fixed(timing.anchors, 3)), \"pocketsphinx\": \(fixed(timing.pocketsphinx, 3)), \"refinement\": \(fixed(timing.refinement, 3))}"
        return "{\"audio\": \(EventEncoder.quoted(audio)), \"timings\": \(EventEncoder.quoted(timings)), \"rate\": \(rate), \"seconds\": \(seconds), \"words\": [\n  "
            + lines.joined(separator: ",\n  ") + "\n]}\n"
    }
}

/// aeneas's command-line tool as a subprocess, in a scratch directory removed afterwards.
enum Aeneas {
    /// Aligns `words` with `buffer` (decoded from `audio` at `rate`), a piece at a time when
    /// it is longer than `chunkSeconds`: aeneas drifts on long files (its word starts were
    /// 126 ms early in the first fifth of a 10-minute fixture and 407 ms in the last, whatever
    /// its DTW margin), and is good at the start of what it aligns. So the rest of the file is
    /// aligned with the rest of the words, the words up to the longest pause (by the audio's
    /// energy) in the last quarter of the first `chunkSeconds` are kept, and the next piece
    /// starts in that pause. Each piece is aligned from its start: a long file costs about
    /// (length / chunk) / 2 whole-file alignments.
    static func alignInChunks(
        audio: String, buffer: AudioBuffer, words: [String], language: String, rate: Int, timeout: Int, source: String, chunkSeconds: Int = 120
    ) throws(NarratorError) -> [WordTiming] {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("narrator-align-pieces-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let chunk = chunkSeconds * rate
        var result: [WordTiming] = []
        var cursor = 0
        var next = 0
        while true {
            var path = audio
            if cursor > 0 {
                do {
                    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
                } catch {
                    throw NarratorError(file: scratch.path, "cannot create a scratch directory: \(error.localizedDescription)")
                }
                path = scratch.appendingPathComponent("piece\(cursor).wav").path
                try writePiece(buffer, frames: cursor..<buffer.frames, rate: rate, to: path)
            }
            // In frames of the whole file; aeneas's last word may end a few milliseconds past
            // the decoded audio.
            let piece = try align(audio: path, words: Array(words[next...]), language: language, rate: rate, timeout: timeout, source: source).map {
                WordTiming(
                    index: $0.index, text: $0.text, startFrame: min(cursor + $0.startFrame, buffer.frames),
                    endFrame: min(cursor + $0.endFrame, buffer.frames))
            }
            var cut: (word: Int, frame: Int)? = nil
            if buffer.frames - cursor > chunk {
                let refined = BoundaryRefinement.refine(piece, samples: buffer.storage, channels: buffer.channels, rate: rate)
                var longest = 0
                for index in refined.indices.dropLast() {
                    let start = refined[index + 1].timing.startFrame
                    guard start >= cursor + chunk * 3 / 4 else { continue }
                    guard start <= cursor + chunk else { break }
                    let gap = start - refined[index].timing.endFrame
                    if gap > longest {
                        longest = gap
                        cut = (index, refined[index].timing.endFrame + gap / 2)
                    }
                }
            }
            guard let cut, cut.frame > cursor else {
                result += piece
                break
            }
            result += piece[...cut.word]
            result[result.count - 1].endFrame = min(result[result.count - 1].endFrame, cut.frame)
            next += cut.word + 1
            cursor = cut.frame
        }
        var previousEnd = 0
        return result.enumerated().map { position, word in
            let start = max(word.startFrame, previousEnd)
            let end = max(start, word.endFrame)
            previousEnd = end
            return WordTiming(index: position, text: words[position], startFrame: start, endFrame: end)
        }
    }

    /// Writes `frames` of `buffer` as a 16-bit WAV file (a piece for aeneas), in blocks the
    /// writer takes.
    static func writePiece(_ buffer: AudioBuffer, frames: Range<Int>, rate: Int, to path: String) throws(NarratorError) {
        try writePiece(
            UnsafeBufferPointer(rebasing: buffer.storage[(frames.lowerBound * buffer.channels)..<(frames.upperBound * buffer.channels)]),
            channels: buffer.channels, rate: rate, to: path)
    }

    /// Writes interleaved `samples` as a 16-bit WAV file, in blocks the writer takes.
    static func writePiece(_ samples: UnsafeBufferPointer<Float>, channels: Int, rate: Int, to path: String) throws(NarratorError) {
        let writer = try SoundFileWriter(path: path, sampleRate: rate, channels: channels, format: .s16)
        do throws(NarratorError) {
            let frames = samples.count / channels
            var offset = 0
            while offset < frames {
                let count = min(8192, frames - offset)
                try writer.write(UnsafeBufferPointer(rebasing: samples[(offset * channels)..<((offset + count) * channels)]), frames: count)
                offset += count
            }
            try writer.finish()
        } catch {
            writer.abandon()
            throw error
        }
    }

    static func align(audio: String, words: [String], language: String, rate: Int, timeout: Int, source: String) throws(NarratorError) -> [WordTiming] {
        let scratch = try Scratch.make("narrator-align")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let textPath = scratch.appendingPathComponent("words.txt").path
        let output = scratch.appendingPathComponent("aeneas.json").path
        let logPath = scratch.appendingPathComponent("aeneas.log").path
        // One word a line: one aeneas fragment a word.
        guard FileManager.default.createFile(atPath: textPath, contents: Data((words.joined(separator: "\n") + "\n").utf8)) else {
            throw NarratorError(file: scratch.path, "cannot write aeneas's input")
        }
        let ended = try Subprocess.run(
            name: "aeneas",
            arguments: [
                "python3", "-m", "aeneas.tools.execute_task", URL(fileURLWithPath: audio).path, textPath,
                "task_language=\(language)|is_text_type=plain|os_task_file_format=json", output,
            ], stdout: logPath, log: logPath, timeout: timeout, audio: audio)
        guard ended.status == 0 else {
            // 127: env found no python3.
            let missing = ended.status == 127 || ended.said.contains { $0.contains("No module named") }
            let detail = ended.said.last { $0.contains("[ERRO]") || $0.contains("Error") } ?? ended.said.last ?? ""
            throw NarratorError(
                file: audio,
                missing
                    ? "aeneas is not installed (\(detail)); `make deps` installs it (pip: aeneas-ng)"
                    : "aeneas failed (\(ended.reason)): \(detail.isEmpty ? "it said nothing" : detail)")
        }
        let imported = try WordTimings.read(path: output, rate: rate)
        guard imported.words.count == words.count else {
            throw NarratorError(file: source, "aeneas returned \(imported.words.count) words for the \(words.count) of the text")
        }
        // The words as the text spells them (aeneas returns each fragment's lines).
        return zip(imported.words, words).map { WordTiming(index: $0.index, text: $1, startFrame: $0.startFrame, endFrame: $0.endFrame) }
    }
}

/// A scratch directory (removed by the caller).
enum Scratch {
    static func make(_ prefix: String) throws(NarratorError) -> URL {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        } catch {
            throw NarratorError(file: scratch.path, "cannot create a scratch directory: \(error.localizedDescription)")
        }
        return scratch
    }
}

/// A first stage's program, bounded: stopped after `timeout` seconds (SIGTERM to its process
/// group, so what it started too, SIGKILL 5 s later).
enum Subprocess {
    struct Ended {
        /// The exit status, or -1 when a signal ended it.
        var status: Int32
        /// "exit status N" or "signal N".
        var reason: String
        /// The non-empty lines it wrote to `log`.
        var said: [String]
    }

    /// Starts `/usr/bin/env arguments` (a Python program: UTF-8 on its pipes) with the given
    /// standard streams; `finished` is signalled when it ends.
    static func start(
        name: String, arguments: [String], input: Any, output: Any, log: FileHandle, audio: String
    ) throws(NarratorError) -> (process: Process, finished: DispatchSemaphore) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["PYTHONIOENCODING": "UTF-8"]) { $1 }
        process.standardInput = input
        process.standardOutput = output
        process.standardError = log
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        do {
            try process.run()
        } catch {
            throw NarratorError(file: audio, "cannot start \(name) (python3): \(error.localizedDescription); `make deps` installs it")
        }
        return (process, finished)
    }

    /// Stops `process`'s group: SIGTERM, then SIGKILL 5 s later. Foundation starts the child in
    /// a process group of its own, so this stops what it started too (ffmpeg); never our own group.
    static func stop(_ process: Process, _ finished: DispatchSemaphore) {
        let pid = process.processIdentifier
        let target = getpgid(pid) == pid && pid != getpgrp() ? -pid : pid
        kill(target, SIGTERM)
        if finished.wait(timeout: .now() + .seconds(5)) == .timedOut { kill(target, SIGKILL) }
    }

    static func run(name: String, arguments: [String], stdout: String, log logPath: String, timeout: Int, audio: String) throws(NarratorError) -> Ended {
        guard FileManager.default.createFile(atPath: logPath, contents: nil), FileManager.default.createFile(atPath: stdout, contents: nil),
            let log = FileHandle(forWritingAtPath: logPath), let out = stdout == logPath ? log : FileHandle(forWritingAtPath: stdout)
        else {
            throw NarratorError(file: logPath, "cannot write \(name)'s output")
        }
        let started: (process: Process, finished: DispatchSemaphore)
        do throws(NarratorError) {
            started = try start(name: name, arguments: arguments, input: FileHandle.nullDevice, output: out, log: log, audio: audio)
        } catch {
            try? log.close()
            if out !== log { try? out.close() }
            throw error
        }
        let (process, finished) = started
        try? log.close()
        if out !== log { try? out.close() }
        if finished.wait(timeout: .now() + .seconds(timeout)) == .timedOut {
            stop(process, finished)
            throw NarratorError(file: audio, "\(name) did not finish within \(timeout) s (--timeout)")
        }
        let said = ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
            .split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let exited = process.terminationReason == .exit
        return Ended(
            status: exited ? process.terminationStatus : -1,
            reason: exited ? "exit status \(process.terminationStatus)" : "signal \(process.terminationStatus)", said: said)
    }
}
