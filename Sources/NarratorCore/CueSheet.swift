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
        var bytes: [UInt8] = []
        guard appendPlainLine(to: &bytes) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the hand-written line to `out`; false (and `out` unchanged) when JSONEncoder
    /// must write it.
    func appendPlainLine(to out: inout [UInt8]) -> Bool {
        func plain(_ text: String) -> Bool {
            text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        }
        func raw(_ text: StaticString) {
            out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }
        func string(_ text: String) {
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: text.utf8)
            out.append(UInt8(ascii: "\""))
        }
        func number(_ value: Int) {
            if value == 0 { out.append(UInt8(ascii: "0")); return }
            if value == Int.min { out.append(contentsOf: String(value).utf8); return }
            if value < 0 { out.append(UInt8(ascii: "-")) }
            var magnitude = abs(value)
            var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            var count = 0
            withUnsafeMutableBytes(of: &digits) { buffer in
                while magnitude > 0 {
                    buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                    magnitude /= 10
                    count += 1
                }
                for k in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[k]) }
            }
        }
        // Keys in sorted order, as JSONEncoder's .sortedKeys writes them.
        switch kind {
        case .clipStart(let clip, let pool), .clipEnd(let clip, let pool):
            guard plain(clip), pool.map(plain) ?? true else { return false }
            raw("{\"clip\":"); string(clip)
            raw(",\"frame\":"); number(frame)
            if let pool { raw(",\"pool\":"); string(pool) }
            if case .clipStart = kind { raw(",\"type\":\"clipStart\"}") } else { raw(",\"type\":\"clipEnd\"}") }
        case .word(let clip, let index, let text, let endFrame):
            guard plain(clip), plain(text) else { return false }
            raw("{\"clip\":"); string(clip)
            raw(",\"endFrame\":"); number(endFrame)
            raw(",\"frame\":"); number(frame)
            raw(",\"index\":"); number(index)
            raw(",\"text\":"); string(text)
            raw(",\"type\":\"word\"}")
        case .pulse(let target):
            guard plain(target) else { return false }
            raw("{\"frame\":"); number(frame)
            raw(",\"target\":"); string(target)
            raw(",\"type\":\"pulse\"}")
        case .chainEnd(let chain):
            guard plain(chain) else { return false }
            raw("{\"chain\":"); string(chain)
            raw(",\"frame\":"); number(frame)
            raw(",\"type\":\"chainEnd\"}")
        case .activity:
            return false
        }
        return true
    }
}

/// The cue sheet: `{"sampleRate", "channels", "frames", "cues": [...]}` with one cue a line.
public enum CueSheet {
    public static func json(_ schedule: Schedule) -> String {
        var all: [UInt8] = []
        write(schedule) { all.append(contentsOf: $0) }
        return String(decoding: all, as: UTF8.self)
    }

    /// The same text as UTF-8 in pieces of about 64 KiB, for `output` to write as they come: a
    /// sheet of millions of cues is never held whole in memory.
    public static func write(_ schedule: Schedule, to output: ([UInt8]) -> Void) {
        var text = Array("{\"sampleRate\": \(schedule.sampleRate), \"channels\": \(schedule.channels), \"frames\": \(schedule.frames), \"cues\": [".utf8)
        text.reserveCapacity(1 << 17)
        for (index, cue) in schedule.cues.enumerated() {
            text.append(contentsOf: index == 0 ? [0x0A, 0x20, 0x20] : [0x2C, 0x0A, 0x20, 0x20])
            if !cue.appendPlainLine(to: &text) { text.append(contentsOf: cue.jsonLine.utf8) }
            if text.count >= 1 << 16 {
                output(text)
                text.removeAll(keepingCapacity: true)
            }
        }
        text.append(contentsOf: (schedule.cues.isEmpty ? "]}\n" : "\n]}\n").utf8)
        output(text)
    }
}
