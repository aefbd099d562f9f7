import Foundation

extension Cue: Encodable {
    private enum Field: String, CodingKey { case frame, type, clip, pool, index, text, endFrame, target, chain }

    public func encode(to encoder: any Encoder) throws {
        var out = encoder.container(keyedBy: Field.self)
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
        }
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
