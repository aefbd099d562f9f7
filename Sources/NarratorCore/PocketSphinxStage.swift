import Foundation

/// PocketSphinx 5 (PyPI `pocketsphinx`, BSD-2-Clause, its en-US model and CMUdict inside the
/// wheel) as `narrator align`'s first stage for English: the program run once per `align`
/// run (or manifest batch) as `python3 -c PROGRAM`, a worker fed one job a line on its standard
/// input, answering one line each on its standard output; and the strict reader of what it prints.
///
/// A job names a file of raw 16-bit little-endian mono samples at 16 kHz and its pieces (frames at 16 kHz and the words
/// of each). For each piece the program aligns the words with `set_align_text` (the decoder
/// puts optional silences between them), then aligns again with `set_alignment` for the
/// phones; when the search loses the grammar's final state ("Final result does not match the
/// grammar") it retries with wide beams, then unpruned. One decoder a beam setting, reused from
/// piece to piece and job to job (its model loads once a worker). It answers one JSON object a line:
/// `{"pieces": [{"beams", "words": [{"word", "start", "end", "score", "phones": [[name, start,
/// end, score]]}], "silences": [[start, end]]} | {"error": "…"}]}`, seconds from the piece's
/// start. Exit status 3: PocketSphinx is not installed.
public enum PocketSphinxStage {
    public static let program = #"""
        import json, re, sys
        BEAMS = {
            "default": {},
            "wide": dict(beam=1e-100, wbeam=1e-80, pbeam=1e-100, lpbeam=1e-80, lponlybeam=1e-80),
            "unpruned": dict(beam=1e-200, wbeam=1e-200, pbeam=1e-200, lpbeam=1e-200, lponlybeam=1e-200),
        }
        def main():
            try:
                from pocketsphinx import Decoder
            except ImportError as e:
                sys.stderr.write("pocketsphinx is not installed (%s)\n" % e)
                sys.exit(3)
            decoders = {}
            def decoder(level):
                # lm=None: alignment needs no language model (loading en-us.lm.bin took more
                # than half of the model's load).
                if level not in decoders:
                    decoders[level] = Decoder(samprate=16000, bestpath=False, loglevel="FATAL", lm=None, **BEAMS[level])
                return decoders[level]
            for line in sys.stdin:
                if not line.strip():
                    continue
                job = json.loads(line)
                out = []
                with open(job["audio"], "rb") as audio:
                    for piece in job["pieces"]:
                        out.append(run(decoder, audio, piece))
                sys.stdout.write(json.dumps({"pieces": out}) + "\n")
                sys.stdout.flush()
        def run(decoder, audio, piece):
            audio.seek(2 * piece["start"])
            data = audio.read(2 * (piece["end"] - piece["start"]))
            clean = [re.sub(r"[^a-z0-9']", "", w.lower()) for w in piece["words"]]
            missing = [w for w, c in zip(piece["words"], clean) if not c or decoder("default").lookup_word(c) is None]
            if missing:
                return {"error": "not in PocketSphinx's dictionary: " + ", ".join(missing[:5])}
            said = "no alignment"
            for level in ("default", "wide", "unpruned"):
                try:
                    result = align(decoder(level), data, clean)
                except AlignError as e:
                    said = str(e)
                    continue
                result["beams"] = level
                return result
            return {"error": said}
        class AlignError(Exception):
            pass
        def align(d, data, clean):
            d.set_align_text(" ".join(clean))
            d.start_utt()
            d.process_raw(data, full_utt=True)
            d.end_utt()
            if d.hyp() is None:
                raise AlignError("the search did not reach the end of the text")
            d.set_alignment()
            d.start_utt()
            d.process_raw(data, full_utt=True)
            d.end_utt()
            alignment = d.get_alignment()
            if alignment is None:
                raise AlignError("no phone alignment")
            words, silences = [], []
            for w in alignment:
                name = re.sub(r"\(\d+\)$", "", w.name)
                start, end = w.start / 100.0, (w.start + w.duration) / 100.0
                if name.startswith("<") or name.startswith("["):
                    silences.append([start, end])
                    continue
                phones = [[p.name, p.start / 100.0, (p.start + p.duration) / 100.0, int(p.score)] for p in w]
                words.append({"word": name, "start": start, "end": end, "score": int(w.score), "phones": phones})
            if [w["word"] for w in words] != clean:
                raise AlignError("the alignment holds %d words for the %d of the text" % (len(words), len(clean)))
            return {"words": words, "silences": silences}
        main()
        """#

    /// A piece of the recording to align: frames at 16 kHz, and its words.
    public struct Piece: Sendable, Equatable {
        public var start: Int
        public var end: Int
        public var words: [String]

        public init(start: Int, end: Int, words: [String]) {
            self.start = start
            self.end = end
            self.words = words
        }
    }

    /// A job, one line the worker reads.
    public static func job(audio: String, pieces: [Piece]) -> String {
        let items = pieces.map { piece in
            "{\"start\": \(piece.start), \"end\": \(piece.end), \"words\": [\(piece.words.map { EventEncoder.quoted($0) }.joined(separator: ", "))]}"
        }
        return "{\"audio\": \(EventEncoder.quoted(audio)), \"pieces\": [\(items.joined(separator: ", "))]}\n"
    }

    /// One piece's result: its words (frames at `rate`, in the whole recording) or why it failed.
    public enum Result: Sendable, Equatable {
        case aligned(words: [BoundaryRefinement.StageWord], silences: [ClosedRange<Int>], beams: String)
        case failed(String)
    }

    /// Reads the program's output for `pieces`, strictly: every time finite, not negative,
    /// within its piece (a 10 ms frame of slack at the end), in order and not overlapping, and
    /// checked before it becomes a frame (`round(seconds × rate)`); the words of each piece as
    /// the text has them. Anything else is an error naming `file`.
    public static func read(_ data: Data, pieces: [Piece], words: [[String]], rate: Int, file: String) throws(NarratorError) -> [Result] {
        let root = JSONCursor(try JSONValue.parse(data, file: file), file: file)
        let list = try root.object(allowing: ["pieces"]).required("pieces", in: root).array()
        guard list.count == pieces.count else { throw root.fail("\(list.count) pieces for the \(pieces.count) asked") }
        var results: [Result] = []
        for (position, item) in list.enumerated() {
            let piece = pieces[position]
            let members = try item.object(allowing: ["error", "beams", "words", "silences"])
            if let error = members["error"] {
                results.append(.failed(try error.string()))
                continue
            }
            let offset = Double(piece.start) / 16000
            let length = Double(piece.end - piece.start) / 16000 + 0.01
            func frame(_ cursor: JSONCursor, after previous: Double) throws(NarratorError) -> (Int, Double) {
                let seconds = try cursor.number()
                guard seconds >= previous - 1e-9, seconds <= length else {
                    throw cursor.fail("\(JSONCursor.describe(seconds)) s is outside the piece (0 to \(String(format: "%.3f", length)) s) or out of order")
                }
                let value = ((offset + seconds) * Double(rate)).rounded()
                guard value >= 0, value < 9.0e15 else { throw cursor.fail("\(seconds) s cannot be a frame") }
                return (Int(value), seconds)
            }
            let beams = try members.required("beams", in: item).string()
            let wordList = try members.required("words", in: item).array()
            let expected = words[position]
            guard wordList.count == expected.count else { throw item.fail("\(wordList.count) words for the \(expected.count) of the text") }
            var stageWords: [BoundaryRefinement.StageWord] = []
            var last = 0.0
            for (index, entry) in wordList.enumerated() {
                let fields = try entry.object(allowing: ["word", "start", "end", "score", "phones"])
                _ = try fields.required("word", in: entry).string()
                let (start, startSeconds) = try frame(try fields.required("start", in: entry), after: last)
                let (end, endSeconds) = try frame(try fields.required("end", in: entry), after: startSeconds)
                guard endSeconds > startSeconds else { throw entry.fail("the word ends where it starts") }
                last = endSeconds
                let score = try fields.required("score", in: entry).integer(in: -1_000_000_000...0)
                var phones: [BoundaryRefinement.StagePhone] = []
                var phoneLast = startSeconds
                for phone in try fields.required("phones", in: entry).array() {
                    let parts = try phone.array()
                    guard parts.count == 4 else { throw phone.fail("expected [name, start, end, score]") }
                    let name = try parts[0].string()
                    let (phoneStart, phoneStartSeconds) = try frame(parts[1], after: phoneLast)
                    let (phoneEnd, phoneEndSeconds) = try frame(parts[2], after: phoneStartSeconds)
                    guard phoneEndSeconds <= endSeconds + 1e-9 else { throw phone.fail("the phone runs past its word") }
                    phoneLast = phoneEndSeconds
                    phones.append(.init(name: name, startFrame: phoneStart, endFrame: phoneEnd, score: try parts[3].integer(in: -1_000_000_000...1_000_000_000)))
                }
                stageWords.append(
                    .init(timing: WordTiming(index: index, text: expected[index], startFrame: start, endFrame: end), phones: phones, score: score))
            }
            var silences: [ClosedRange<Int>] = []
            var silenceLast = 0.0
            for silence in try members["silences"]?.array() ?? JSONCursor.Items() {
                let parts = try silence.array()
                guard parts.count == 2 else { throw silence.fail("expected [start, end]") }
                let (start, startSeconds) = try frame(parts[0], after: silenceLast)
                let (end, endSeconds) = try frame(parts[1], after: startSeconds)
                silenceLast = endSeconds
                silences.append(start...end)
            }
            results.append(.aligned(words: stageWords, silences: silences, beams: beams))
        }
        return results
    }
}
