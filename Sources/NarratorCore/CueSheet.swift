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
        if let line = plainLine { return line }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings and integers cannot fail.
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }
}

extension Cue {
    /// `jsonLine` written by hand when every string in the cue is printable ASCII without a quote
    /// or a backslash (nothing JSON escapes): the same bytes JSONEncoder writes, at a fraction of
    /// its cost, for cue sheets of millions of cues. Nil otherwise (JSONEncoder writes those).
    var plainLine: String? {
        func plain(_ text: String) -> Bool {
            text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        }
        // Keys in sorted order, as JSONEncoder's .sortedKeys writes them.
        switch kind {
        case .clipStart(let clip, let pool), .clipEnd(let clip, let pool):
            guard plain(clip), pool.map(plain) ?? true else { return nil }
            let poolMember = pool.map { ",\"pool\":\"\($0)\"" } ?? ""
            return "{\"clip\":\"\(clip)\",\"frame\":\(frame)\(poolMember),\"type\":\"\(type)\"}"
        case .word(let clip, let index, let text, let endFrame):
            guard plain(clip), plain(text) else { return nil }
            return "{\"clip\":\"\(clip)\",\"endFrame\":\(endFrame),\"frame\":\(frame),\"index\":\(index),\"text\":\"\(text)\",\"type\":\"word\"}"
        case .pulse(let target):
            guard plain(target) else { return nil }
            return "{\"frame\":\(frame),\"target\":\"\(target)\",\"type\":\"pulse\"}"
        case .chainEnd(let chain):
            guard plain(chain) else { return nil }
            return "{\"chain\":\"\(chain)\",\"frame\":\(frame),\"type\":\"chainEnd\"}"
        case .activity:
            return nil
        }
    }
}

/// The cue sheet: `{"sampleRate", "channels", "frames", "cues": [...]}` with one cue a line.
public enum CueSheet {
    public static func json(_ schedule: Schedule) -> String {
        var all = ""
        write(schedule) { all += $0 }
        return all
    }

    /// The same text in pieces of about 64 KiB, for `output` to write as they come: a sheet of
    /// millions of cues is never held whole in memory.
    public static func write(_ schedule: Schedule, to output: (String) -> Void) {
        var text = "{\"sampleRate\": \(schedule.sampleRate), \"channels\": \(schedule.channels), "
        text += "\"frames\": \(schedule.frames), \"cues\": ["
        for (index, cue) in schedule.cues.enumerated() {
            text += index == 0 ? "\n  " : ",\n  "
            text += cue.jsonLine
            if text.utf8.count >= 1 << 16 {
                output(text)
                text = ""
            }
        }
        text += schedule.cues.isEmpty ? "]}\n" : "\n]}\n"
        output(text)
    }
}
