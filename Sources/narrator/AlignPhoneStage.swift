import Foundation
import NarratorAudioFile
import NarratorCore

/// PocketSphinx as `align`'s first stage for English (docs/align.md): the recording at 16 kHz
/// mono in a scratch directory, aligned by a `PocketSphinxWorker` (one for the whole run), its
/// JSON read strictly.
enum PocketSphinx {
    /// Seconds a recording may last to be aligned in one piece; longer ones are cut at
    /// sentence anchors into pieces of about `pieceSeconds`.
    static let wholeSeconds = 30
    static let pieceSeconds = 20
    /// A sentence longer than this many words is split (a text with no punctuation).
    static let sentenceWords = 30

    /// How long each stage took, in seconds (for --json and the benchmark).
    struct Timing {
        /// Reading the recording at the lesson rate and at 16 kHz for PocketSphinx (one pass,
        /// with the 1 ms energies the anchors read), and again a piece at a time for the
        /// refinement when it is longer than one piece.
        var decode = 0.0
        var anchors = 0.0
        var pocketsphinx = 0.0
        var refinement = 0.0
    }

    /// The words' positions grouped into sentences: a word ending with . ! ? ; or : ends one
    /// (closing quotes and brackets after it allowed); a run of more than `sentenceWords`
    /// words is split evenly.
    static func sentences(_ words: [String]) -> [Range<Int>] {
        var found: [Range<Int>] = []
        var start = 0
        for (index, word) in words.enumerated() {
            let trimmed = word.trimmingCharacters(in: CharacterSet(charactersIn: "\"'”’»)]}"))
            if let last = trimmed.last, ".!?;:…".contains(last) || index == words.count - 1 {
                found.append(start..<(index + 1))
                start = index + 1
            }
        }
        return found.flatMap { range -> [Range<Int>] in
            guard range.count > sentenceWords else { return [range] }
            let parts = (range.count + sentenceWords - 1) / sentenceWords
            return (0..<parts).map { part in
                (range.lowerBound + range.count * part / parts)..<(range.lowerBound + range.count * (part + 1) / parts)
            }
        }
    }

    /// Aligns and refines `words` in `recording` (`audio` at `rate`). A recording
    /// of up to `wholeSeconds` is one piece. A longer one is anchored first: its sentences are
    /// laid on its own pauses (`SentenceAnchors`, from the recording's 1 ms energies; where no
    /// pause fits, aeneas aligns the sentences, in chunks, and their boundaries move onto the
    /// pauses between them), and PocketSphinx aligns the words of a group of sentences (about
    /// `pieceSeconds`) inside each group's span, so a bad stretch stays inside its piece. Each
    /// piece is refined on its own samples, read from the file only then. A piece PocketSphinx
    /// cannot align is aligned by aeneas (a whole recording that is one piece: the error is
    /// thrown, and the caller falls back).
    static func align(
        audio: String, recording: AlignRecording, words: [String], rate: Int, timeout: Int, source: String, aeneasChunk: Int,
        worker: PocketSphinxWorker, timing: inout Timing
    ) throws(NarratorError) -> [BoundaryRefinement.Word] {
        let scratch = try Scratch.make("narrator-pocketsphinx")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let frames = recording.frames
        // Pieces in frames at `rate`, with their words.
        var pieces: [(start: Int, end: Int, words: Range<Int>)] = []
        let groups = sentences(words)
        if frames <= wholeSeconds * rate || groups.count < 2 {
            pieces = [(0, frames, 0..<words.count)]
        } else {
            let began = Date()
            // Where the recording may be cut after each sentence (nil: not there). From its own
            // pauses first (SentenceAnchors: a bad stretch moves only the anchors beside it);
            // where none fits, from aeneas's sentence alignment, as before.
            var cuts = [Int?](repeating: nil, count: groups.count - 1)
            if let envelope = recording.takeEnvelope(), let found = SentenceAnchors.pauses(envelope, frames: frames) {
                let lengths = groups.map { words[$0].reduce(0) { $0 + $1.unicodeScalars.filter { CharacterSet.letters.contains($0) }.count } }
                for (index, pause) in SentenceAnchors.fit(pauses: found.pauses, speech: found.speech, lengths: lengths).enumerated() {
                    if let pause { cuts[index] = (found.pauses[pause].start + found.pauses[pause].end) / 2 }
                }
            }
            if cuts.allSatisfy({ $0 == nil }) {
                let texts = groups.map { words[$0].joined(separator: " ") }
                let buffer = try recording.whole(timing: &timing)
                let anchored = try Aeneas.alignInChunks(
                    audio: audio, buffer: buffer, words: texts, language: "eng", rate: rate, timeout: timeout, source: source,
                    chunkSeconds: aeneasChunk)
                let onPauses = BoundaryRefinement.refine(anchored, samples: buffer.storage, channels: buffer.channels, rate: rate).map(\.timing)
                cuts = (0..<(groups.count - 1)).map { (onPauses[$0].endFrame + onPauses[$0 + 1].startFrame) / 2 }
            }
            timing.anchors += Date().timeIntervalSince(began)
            var start = 0
            var first = 0
            for index in groups.indices {
                let isLast = index == groups.count - 1
                guard isLast || cuts[index] != nil else { continue }
                let cut = isLast ? frames : cuts[index]!
                if isLast || cut - start >= pieceSeconds * rate {
                    if cut > start {
                        pieces.append((start, cut, groups[first].lowerBound..<groups[index].upperBound))
                        start = cut
                        first = index + 1
                    }
                }
            }
            if first < groups.count {
                // A sentence with no sound of its own at the end: joined to the last piece.
                if pieces.isEmpty {
                    pieces = [(0, frames, 0..<words.count)]
                } else {
                    pieces[pieces.count - 1].words = pieces[pieces.count - 1].words.lowerBound..<words.count
                    pieces[pieces.count - 1].end = frames
                }
            }
        }

        guard let raw = recording.pocketSphinxAudio else { throw NarratorError(file: audio, "PocketSphinx's audio was not made") }
        let asked = pieces.map { piece in
            PocketSphinxStage.Piece(
                start: min(recording.frames16k, piece.start * 16000 / rate), end: min(recording.frames16k, piece.end * 16000 / rate),
                words: Array(words[piece.words]))
        }
        let asking = Date()
        let data = try worker.ask(PocketSphinxStage.job(audio: raw, pieces: asked), audio: audio)
        let results = try PocketSphinxStage.read(
            data, pieces: asked, words: asked.map(\.words), rate: rate, file: "\(audio): PocketSphinx's output")
        timing.pocketsphinx += Date().timeIntervalSince(asking)

        var refined: [BoundaryRefinement.Word] = []
        var refinementSeconds = 0.0
        let channels = recording.channels
        // Each piece refined on its own samples, read only now and let go after it.
        try recording.pieces(pieces.map { $0.start..<$0.end }, timing: &timing) { index, region throws(NarratorError) in
            let piece = pieces[index]
            switch results[index] {
            case .aligned(let stageWords, _, _):
                let start = Date()
                let local = stageWords.map { word in
                    var shifted = word
                    shifted.timing.startFrame = max(0, word.timing.startFrame - piece.start)
                    shifted.timing.endFrame = min(piece.end - piece.start, max(shifted.timing.startFrame + 1, word.timing.endFrame - piece.start))
                    shifted.phones = word.phones.map {
                        .init(name: $0.name, startFrame: $0.startFrame - piece.start, endFrame: $0.endFrame - piece.start, score: $0.score)
                    }
                    return shifted
                }
                refined += BoundaryRefinement.refinePhoneStage(local, samples: region, channels: channels, rate: rate).map {
                    offset($0, by: piece.start, index: piece.words.lowerBound)
                }
                refinementSeconds += Date().timeIntervalSince(start)
            case .failed(let reason):
                guard pieces.count > 1 else { throw NarratorError(file: audio, "PocketSphinx could not align it: \(reason)") }
                // This piece by aeneas, as a file of its own.
                let path = scratch.appendingPathComponent("piece\(piece.start).wav").path
                // (In blocks: one write of a whole 20 s piece tripped the writer's precondition.)
                try Aeneas.writePiece(region, channels: channels, rate: rate, to: path)
                let aligned = try Aeneas.align(
                    audio: path, words: Array(words[piece.words]), language: "eng", rate: rate, timeout: timeout, source: source)
                refined += BoundaryRefinement.refine(aligned, samples: region, channels: channels, rate: rate).map {
                    offset($0, by: piece.start, index: piece.words.lowerBound)
                }
            }
        }
        timing.refinement += refinementSeconds
        return refined
    }

    /// A piece's word in the whole recording's frames and positions.
    static func offset(_ word: BoundaryRefinement.Word, by frames: Int, index: Int) -> BoundaryRefinement.Word {
        var moved = word
        moved.timing.startFrame += frames
        moved.timing.endFrame += frames
        moved.timing.index += index
        moved.aligned.startFrame += frames
        moved.aligned.endFrame += frames
        moved.aligned.index += index
        return moved
    }
}

/// PocketSphinx's program (`PocketSphinxStage.program`) as one long-lived worker for a whole
/// `align` run or manifest batch, so its model loads once: a job a line on its standard input,
/// one line back on its standard output. Bounded: each answer within `timeout` seconds (then its
/// process group is stopped) and `replyLimit` bytes; a worker that ends before it answers is one
/// error naming how it ended and what it last said, and the next job starts a new one.
final class PocketSphinxWorker {
    /// An answer is at most this long (a 10-minute recording's words and phones are ~1 MB).
    static let replyLimit = 64 << 20

    private let timeout: Int
    private var process: Process?
    private var input: FileHandle?
    private var output: FileHandle?
    private var finished: DispatchSemaphore?
    private let logPath: String

    init(timeout: Int) {
        self.timeout = timeout
        logPath = FileManager.default.temporaryDirectory.appendingPathComponent("narrator-pocketsphinx-\(UUID().uuidString).log").path
    }

    deinit { close() }

    /// Sends `job` (one line) and returns the worker's answer (one line, without its newline).
    func ask(_ job: String, audio: String) throws(NarratorError) -> Data {
        if process == nil { try start(audio: audio) }
        guard let input, let output else { throw NarratorError(file: audio, "PocketSphinx's worker did not start") }
        let line = Array((job.hasSuffix("\n") ? job : job + "\n").utf8)
        let deadline = Date().addingTimeInterval(Double(timeout))
        try send(line, to: input.fileDescriptor, before: deadline, audio: audio)
        var reply = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                stop()
                throw NarratorError(file: audio, "PocketSphinx did not finish within \(timeout) s (--timeout)")
            }
            var poller = pollfd(fd: output.fileDescriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining * 1000, 1000)))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            let count = read(output.fileDescriptor, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw ended(audio: audio) }
            if let newline = buffer[0..<count].firstIndex(of: UInt8(ascii: "\n")) {
                reply.append(contentsOf: buffer[0..<newline])
                return reply
            }
            reply.append(contentsOf: buffer[0..<count])
            guard reply.count <= Self.replyLimit else {
                stop()
                throw NarratorError(file: audio, "PocketSphinx answered more than \(Self.replyLimit >> 20) MiB without ending its line")
            }
        }
    }

    /// Writes `bytes` to the worker's input within the job's `deadline`: a job longer than the
    /// pipe's buffer (a long transcript) to a worker that has stopped reading must not block
    /// `align` for ever.
    private func send(_ bytes: [UInt8], to descriptor: Int32, before deadline: Date, audio: String) throws(NarratorError) {
        let flags = fcntl(descriptor, F_GETFL)
        if flags >= 0 && flags & O_NONBLOCK == 0 { _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, bytes.count - offset) }
            if written > 0 {
                offset += written
                continue
            }
            guard written < 0, errno == EAGAIN || errno == EINTR else { throw ended(audio: audio) }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                stop()
                throw NarratorError(file: audio, "PocketSphinx did not take its job within \(timeout) s (--timeout)")
            }
            var poller = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
            _ = poll(&poller, 1, Int32(min(remaining * 1000, 1000)))
        }
    }

    /// Ends the worker: its input closed (it leaves its loop), then stopped if it lingers.
    func close() {
        try? input?.close()
        input = nil
        if let finished, finished.wait(timeout: .now() + .seconds(5)) == .timedOut { stop() }
        forget()
        try? FileManager.default.removeItem(atPath: logPath)
    }

    private func start(audio: String) throws(NarratorError) {
        // A worker that dies makes our write fail with EPIPE, not end us.
        signal(SIGPIPE, SIG_IGN)
        guard FileManager.default.createFile(atPath: logPath, contents: nil), let log = FileHandle(forWritingAtPath: logPath) else {
            throw NarratorError(file: logPath, "cannot write PocketSphinx's log")
        }
        let toWorker = Pipe(), fromWorker = Pipe()
        let started: (process: Process, finished: DispatchSemaphore)
        do throws(NarratorError) {
            started = try Subprocess.start(
                name: "PocketSphinx", arguments: ["python3", "-c", PocketSphinxStage.program], input: toWorker, output: fromWorker, log: log, audio: audio)
        } catch {
            try? log.close()
            throw error
        }
        let (process, finished) = started
        try? log.close()
        try? toWorker.fileHandleForReading.close()
        try? fromWorker.fileHandleForWriting.close()
        self.process = process
        self.finished = finished
        input = toWorker.fileHandleForWriting
        output = fromWorker.fileHandleForReading
    }

    /// Stops the worker's process group (what it started too): SIGTERM, SIGKILL 5 s later.
    private func stop() {
        if let process, let finished { Subprocess.stop(process, finished) }
        forget()
    }

    /// Lets go of the worker's pipes and process (the next job starts a new one).
    private func forget() {
        try? input?.close()
        try? output?.close()
        input = nil
        output = nil
        process = nil
        finished = nil
    }

    /// The error for a worker that ended before it answered (it is then forgotten).
    private func ended(audio: String) -> NarratorError {
        guard let process, let finished else { return NarratorError(file: audio, "PocketSphinx's worker ended before it answered") }
        guard finished.wait(timeout: .now() + .seconds(5)) == .success else {
            // It closed its output but goes on: stopped.
            stop()
            return NarratorError(file: audio, "PocketSphinx's worker closed its output before it answered")
        }
        forget()
        let exited = process.terminationReason == .exit
        let reason = exited ? "exit status \(process.terminationStatus)" : "signal \(process.terminationStatus)"
        let said = ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")
            .split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let detail = said.last ?? "it said nothing"
        if exited && (process.terminationStatus == 3 || process.terminationStatus == 127) {
            return NarratorError(file: audio, "PocketSphinx is not installed (\(detail)); `make deps` installs it (pip: pocketsphinx)")
        }
        return NarratorError(file: audio, "PocketSphinx's worker ended (\(reason)) before it answered: \(detail)")
    }
}
