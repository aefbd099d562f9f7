import Foundation
import NarratorCore
import Testing

/// The cue sheet's lines are written by hand for speed: they must be the bytes JSONEncoder
/// (sorted keys, slashes unescaped) writes for the same cue, whatever the strings hold.
@Suite("Cue lines")
struct CueLineTests {
    func encoded(_ cue: Cue) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(cue), as: UTF8.self)
    }

    @Test func linesAreWhatJSONEncoderWrites() throws {
        let strings = ["a", "tile-the", "sfx.ding", "a/b", "", "x y", "quote\"d", "back\\slash", "new\nline", "tab\t", "\u{1}", "é", "😀", "\u{7F}", "\u{2028}"]
        var cues: [Cue] = []
        for (k, text) in strings.enumerated() {
            cues.append(Cue(frame: k, kind: .clipStart(clip: text, pool: nil)))
            cues.append(Cue(frame: k * 1000, kind: .clipEnd(clip: "c", pool: text)))
            cues.append(Cue(frame: -k, kind: .word(clip: text, index: k, text: text, endFrame: Int.max)))
            cues.append(Cue(frame: Int.min, kind: .pulse(target: text)))
            cues.append(Cue(frame: 0, kind: .chainEnd(chain: text)))
            cues.append(Cue(frame: 3, kind: .activity(type: .tap, fields: ["answer": .string(text), "step": .int(k), "late": .bool(k % 2 == 0)])))
        }
        for cue in cues {
            #expect(cue.jsonLine == (try encoded(cue)), "\(cue)")
        }
        #expect(Cue(frame: 7, kind: .word(clip: "a", index: 2, text: "the", endFrame: 9)).jsonLine
            == #"{"clip":"a","endFrame":9,"frame":7,"index":2,"text":"the","type":"word"}"#)
    }
}
