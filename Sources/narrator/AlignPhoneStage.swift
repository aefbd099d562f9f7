import Foundation
import NarratorAudioFile
import NarratorCore

/// PocketSphinx as `align`'s first stage for English (docs/align.md): the recording at 16 kHz
/// mono in a scratch directory, the program of `PocketSphinxStage` run on it as a bounded
/// subprocess, its JSON read strictly.
enum PocketSphinx {
    /// Seconds a recording may last to be aligned in one piece; longer ones are cut at
    /// sentence anchors into pieces of about `pieceSeconds`.
    static let wholeSeconds = 30
    static let pieceSeconds = 20
    /// A sentence longer than this many words is split (a text with no punctuation).
    static let sentenceWords = 30

    /// How long each stage took, in seconds (for --json and the benchmark).
    struct Timing {
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

    /// Aligns and refines `words` in `buffer` (decoded from `audio` at `rate`). A recording
    /// of up to `wholeSeconds` is one piece. A longer one is anchored first: aeneas aligns its
    /// sentences (in chunks, as `Aeneas.alignInChunks`), their boundaries move onto the pauses
    /// between them, and PocketSphinx aligns the words of a group of sentences (about
    /// `pieceSeconds`) inside each group's span, so a bad stretch stays inside its piece. A
    /// piece PocketSphinx cannot align is aligned by aeneas (a whole recording that is one
    /// piece: the error is thrown, and the caller falls back).
    static func align(
        audio: String, buffer: AudioBuffer, words: [String], rate: Int, timeout: Int, source: String, aeneasChunk: Int, timing: inout Timing
    ) throws(NarratorError) -> [BoundaryRefinement.Word] {
        let scratch = try Scratch.make("narrator-pocketsphinx")
        defer { try? FileManager.default.removeItem(at: scratch) }
        // Pieces in frames at `rate`, with their words.
        var pieces: [(start: Int, end: Int, words: Range<Int>)] = []
        let groups = sentences(words)
        if buffer.frames <= wholeSeconds * rate || groups.count < 2 {
            pieces = [(0, buffer.frames, 0..<words.count)]
        } else {
            let began = Date()
            let texts = groups.map { words[$0].joined(separator: " ") }
            let anchored = try Aeneas.alignInChunks(
                audio: audio, buffer: buffer, words: texts, language: "eng", rate: rate, timeout: timeout, source: source,
                chunkSeconds: aeneasChunk)
            let onPauses = BoundaryRefinement.refine(anchored, samples: buffer.storage, channels: buffer.channels, rate: rate).map(\.timing)
            timing.anchors += Date().timeIntervalSince(began)
            var start = 0
            var first = 0
            for index in onPauses.indices {
                let isLast = index == onPauses.count - 1
                let cut = isLast ? buffer.frames : (onPauses[index].endFrame + onPauses[index + 1].startFrame) / 2
                if isLast || onPauses[index + 1].startFrame - start >= pieceSeconds * rate {
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
                    pieces = [(0, buffer.frames, 0..<words.count)]
                } else {
                    pieces[pieces.count - 1].words = pieces[pieces.count - 1].words.lowerBound..<words.count
                    pieces[pieces.count - 1].end = buffer.frames
                }
            }
        }

        let began = Date()
        // Raw 16-bit little-endian mono at 16 kHz: what PocketSphinx decodes.
        let raw = scratch.appendingPathComponent("audio16k.raw").path
        let mono = try SndFileDecoder().decode(path: audio, sampleRate: 16000)
        guard FileManager.default.createFile(atPath: raw, contents: nil), let file = FileHandle(forWritingAtPath: raw) else {
            throw NarratorError(file: raw, "cannot write the audio for PocketSphinx")
        }
        do {
            var offset = 0
            while offset < mono.frames {
                let count = min(16384, mono.frames - offset)
                var bytes = Data(count: count * 2)
                bytes.withUnsafeMutableBytes { (pointer: UnsafeMutableRawBufferPointer) in
                    for index in 0..<count {
                        var sum: Float = 0
                        for channel in 0..<mono.channels { sum += mono.storage[(offset + index) * mono.channels + channel] }
                        let value = Int16(max(-32768, min(32767, (sum / Float(mono.channels) * 32768).rounded())))
                        pointer.storeBytes(of: value.littleEndian, toByteOffset: index * 2, as: Int16.self)
                    }
                }
                try file.write(contentsOf: bytes)
                offset += count
            }
            try file.close()
        } catch {
            try? file.close()
            throw NarratorError(file: raw, "cannot write the audio for PocketSphinx: \(error.localizedDescription)")
        }
        let asked = pieces.map { piece in
            PocketSphinxStage.Piece(
                start: min(mono.frames, piece.start * 16000 / rate), end: min(mono.frames, piece.end * 16000 / rate), words: Array(words[piece.words]))
        }
        let jobPath = scratch.appendingPathComponent("job.json").path
        guard FileManager.default.createFile(atPath: jobPath, contents: Data(PocketSphinxStage.job(audio: raw, pieces: asked).utf8)) else {
            throw NarratorError(file: scratch.path, "cannot write PocketSphinx's job")
        }
        let output = scratch.appendingPathComponent("out.json").path
        let ended = try Subprocess.run(
            name: "PocketSphinx", arguments: ["python3", "-c", PocketSphinxStage.program, jobPath], stdout: output,
            log: scratch.appendingPathComponent("log").path, timeout: timeout, audio: audio)
        guard ended.status == 0 else {
            let detail = ended.said.last ?? "it said nothing"
            throw NarratorError(
                file: audio,
                ended.status == 3 || ended.status == 127
                    ? "PocketSphinx is not installed (\(detail)); `make deps` installs it (pip: pocketsphinx)"
                    : "PocketSphinx failed (\(ended.reason)): \(detail)")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: output))
        } catch {
            throw NarratorError(file: output, "cannot read PocketSphinx's output: \(error.localizedDescription)")
        }
        let results = try PocketSphinxStage.read(
            data, pieces: asked, words: asked.map(\.words), rate: rate, file: "\(audio): PocketSphinx's output")
        timing.pocketsphinx += Date().timeIntervalSince(began)

        var refined: [BoundaryRefinement.Word] = []
        for (piece, result) in zip(pieces, results) {
            let region = UnsafeBufferPointer(rebasing: buffer.storage[(piece.start * buffer.channels)..<(piece.end * buffer.channels)])
            switch result {
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
                refined += BoundaryRefinement.refinePhoneStage(local, samples: region, channels: buffer.channels, rate: rate).map {
                    offset($0, by: piece.start, index: piece.words.lowerBound)
                }
                timing.refinement += Date().timeIntervalSince(start)
            case .failed(let reason):
                guard pieces.count > 1 else { throw NarratorError(file: audio, "PocketSphinx could not align it: \(reason)") }
                // This piece by aeneas, as a file of its own.
                let path = scratch.appendingPathComponent("piece\(piece.start).wav").path
                let pieceWriter = try SoundFileWriter(path: path, sampleRate: rate, channels: buffer.channels, format: .s16)
                do throws(NarratorError) {
                    try pieceWriter.write(region, frames: piece.end - piece.start)
                    try pieceWriter.finish()
                } catch {
                    pieceWriter.abandon()
                    throw error
                }
                let aligned = try Aeneas.align(
                    audio: path, words: Array(words[piece.words]), language: "eng", rate: rate, timeout: timeout, source: source)
                refined += BoundaryRefinement.refine(aligned, samples: region, channels: buffer.channels, rate: rate).map {
                    offset($0, by: piece.start, index: piece.words.lowerBound)
                }
            }
        }
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
