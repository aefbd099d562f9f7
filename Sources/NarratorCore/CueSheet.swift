import Foundation

extension Cue: Encodable {
    private enum Key: String, CodingKey { case frame, type, clip, pool, index, text, endFrame, target, chain }

    public func encode(to encoder: any Encoder) throws {
        var out = encoder.container(keyedBy: Key.self)
        try out.encode(frame, forKey: .frame)
        try out.encode(type, forKey: .type)
        switch kind {
        case .clipStart(let clip, let pool), .clipEnd(let clip, let pool):
            try out.encode(clip, forKey: .clip)
            try out.encodeIfPresent(pool, forKey: .pool)
        case .word(let clip, let index, let text, let endFrame):
            try out.encode(clip, forKey: .clip)
            try out.encode(index, forKey: .index)
            try out.encode(text, forKey: .text)
            try out.encode(endFrame, forKey: .endFrame)
        case .pulse(let target):
            try out.encode(target, forKey: .target)
        case .chainEnd(let chain):
            try out.encode(chain, forKey: .chain)
        case .activity(_, let fields):
            var any = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in fields {
                switch value {
                case .int(let number): try any.encode(number, forKey: AnyKey(key))
                case .string(let text): try any.encode(text, forKey: AnyKey(key))
                case .bool(let flag): try any.encode(flag, forKey: AnyKey(key))
                }
            }
        }
    }

    private struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ key: String) { stringValue = key }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The cue as one line of JSON, keys sorted.
    public var jsonLine: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings and integers cannot fail.
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }
}

/// The cue sheet: `{"sampleRate", "channels", "frames", "cues": [...]}` with one cue a line.
public enum CueSheet {
    public static func json(_ schedule: Schedule) -> String {
        var text = "{\"sampleRate\": \(schedule.sampleRate), \"channels\": \(schedule.channels), "
        text += "\"frames\": \(schedule.frames), \"cues\": ["
        text += schedule.cues.map { "\n  " + $0.jsonLine }.joined(separator: ",")
        text += schedule.cues.isEmpty ? "]}\n" : "\n]}\n"
        return text
    }
}
