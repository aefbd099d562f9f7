import Foundation

extension Cue: Encodable {
    /// The cue's members besides `frame` and `type`, named as in the cue sheet.
    public var members: [String: Field] {
        switch kind {
        case .clipStart(let clip, let pool), .clipEnd(let clip, let pool):
            var members: [String: Field] = ["clip": .string(clip)]
            if let pool { members["pool"] = .string(pool) }
            return members
        case .word(let clip, let index, let text, let endFrame):
            return ["clip": .string(clip), "index": .int(index), "text": .string(text), "endFrame": .int(endFrame)]
        case .pulse(let target):
            return ["target": .string(target)]
        case .chainEnd(let chain):
            return ["chain": .string(chain)]
        case .activity(_, let fields):
            return fields
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var out = encoder.container(keyedBy: AnyKey.self)
        try out.encode(frame, forKey: AnyKey("frame"))
        try out.encode(type, forKey: AnyKey("type"))
        for (key, value) in members {
            switch value {
            case .int(let number): try out.encode(number, forKey: AnyKey(key))
            case .string(let text): try out.encode(text, forKey: AnyKey(key))
            case .bool(let flag): try out.encode(flag, forKey: AnyKey(key))
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
