import Foundation
import NarratorCore
import Testing

/// Cue and event lines are written by `EventEncoder` by hand, for speed: they must be the bytes
/// Foundation's JSONEncoder (sorted keys, slashes unescaped) writes for the same members,
/// whatever the strings hold. The members are spelled out here, not taken from the encoder.
@Suite("Cue lines")
struct CueLineTests {
    /// A JSON object for JSONEncoder: the ground truth.
    struct Object: Encodable {
        enum Value: Encodable {
            case int(Int), string(String), bool(Bool), null
            func encode(to encoder: any Encoder) throws {
                var one = encoder.singleValueContainer()
                switch self {
                case .int(let number): try one.encode(number)
                case .string(let text): try one.encode(text)
                case .bool(let flag): try one.encode(flag)
                case .null: try one.encodeNil()
                }
            }
        }
        var members: [String: Value]
        func encode(to encoder: any Encoder) throws {
            var out = encoder.container(keyedBy: Key.self)
            for (key, value) in members { try out.encode(value, forKey: Key(stringValue: key)) }
        }
        struct Key: CodingKey {
            let stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
    }

    func encoded(_ members: [String: Object.Value]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(Object(members: members)), as: UTF8.self)
    }

    static let strings = ["a", "tile-the", "sfx.ding", "a/b", "", "x y", "quote\"d", "back\\slash", "new\nline", "tab\t", "\u{1}", "é", "😀", "\u{7F}", "\u{2028}"]
        + (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }

    /// Each cue with the members the cue sheet documents for its kind.
    static func cases() -> [(Cue, [String: Object.Value])] {
        var cases: [(Cue, [String: Object.Value])] = []
        for (k, text) in strings.enumerated() {
            cases.append((Cue(frame: k, kind: .clipStart(clip: text, pool: nil)), ["clip": .string(text), "frame": .int(k), "type": .string("clipStart")]))
            cases.append(
                (Cue(frame: k * 1000, kind: .clipEnd(clip: "c", pool: text)), ["clip": .string("c"), "pool": .string(text), "frame": .int(k * 1000), "type": .string("clipEnd")]))
            cases.append(
                (Cue(frame: -k, kind: .word(clip: text, index: k, text: text, endFrame: Int.max)),
                 ["clip": .string(text), "index": .int(k), "text": .string(text), "endFrame": .int(Int.max), "frame": .int(-k), "type": .string("word")]))
            cases.append((Cue(frame: Int.min, kind: .pulse(target: text)), ["target": .string(text), "frame": .int(Int.min), "type": .string("pulse")]))
            cases.append((Cue(frame: 0, kind: .chainEnd(chain: text)), ["chain": .string(text), "frame": .int(0), "type": .string("chainEnd")]))
            cases.append(
                (Cue(frame: 3, kind: .activity(type: .tap, fields: ["answer": .string(text), "step": .int(k), "late": .bool(k % 2 == 0)])),
                 ["answer": .string(text), "step": .int(k), "late": .bool(k % 2 == 0), "frame": .int(3), "type": .string("tap")]))
        }
        return cases
    }

    @Test func linesAreWhatJSONEncoderWrites() throws {
        for (cue, members) in Self.cases() {
            #expect(cue.jsonLine == (try encoded(members)), "\(cue)")
        }
        #expect(Cue(frame: 7, kind: .word(clip: "a", index: 2, text: "the", endFrame: 9)).jsonLine
            == #"{"clip":"a","endFrame":9,"frame":7,"index":2,"text":"the","type":"word"}"#)
    }

    /// An event's members (heard, delivered, an envelope's) land in key order among the cue's,
    /// before the first, between any two and after the last; one named like a cue's replaces it.
    @Test func eventMembersMergeInKeyOrder() throws {
        let extras: [[EventEncoder.Member]] = [
            [], [EventEncoder.Member("a", .int(1))], [EventEncoder.Member("zz", .string("z\n"))],
            [EventEncoder.Member("heard", .int(Int(Int64.max))), EventEncoder.Member("delivered", .null), EventEncoder.Member("playback", .string("p1"))],
            [EventEncoder.Member("t", .bool(true)), EventEncoder.Member("final", .bool(true)), EventEncoder.Member("id", .int(-5))],
            [EventEncoder.Member("clip", .string("replaced")), EventEncoder.Member("index", .null)],
        ]
        for (cue, members) in Self.cases() {
            for extra in extras {
                var all = members
                for member in extra {
                    all[member.key] =
                        switch member.value {
                        case .int(let number): .int(number)
                        case .string(let text): .string(text)
                        case .bool(let flag): .bool(flag)
                        default: .null
                        }
                }
                var out: [UInt8] = []
                EventEncoder.appendCue(cue, extra, to: &out)
                #expect(String(decoding: out, as: UTF8.self) == (try encoded(all)), "\(cue) \(extra)")
            }
        }
    }

    /// The other events: `type`, `frame`, `heard` (null when absent) and the members.
    @Test func otherEventsAreWhatJSONEncoderWrites() throws {
        for text in Self.strings {
            var out: [UInt8] = []
            EventEncoder.append(.stopped, frame: nil, heard: 12, [EventEncoder.Member("reason", .string(text)), EventEncoder.Member("playback", .string("p2"))], to: &out)
            #expect(
                String(decoding: out, as: UTF8.self)
                    == (try encoded(["type": .string("stopped"), "frame": .null, "heard": .int(12), "reason": .string(text), "playback": .string("p2")])))
        }
        var out: [UInt8] = []
        EventEncoder.append(.start, frame: 0, heard: nil, [EventEncoder.Member("latencyMs", .double(10.667)), EventEncoder.Member("x", .double(.nan))], to: &out)
        #expect(String(decoding: out, as: UTF8.self) == #"{"frame":0,"heard":null,"latencyMs":10.667,"type":"start","x":null}"#)
    }
}
