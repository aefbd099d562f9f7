/// The one JSON writer of cues and events: the cue sheet's lines (`render --cues`, `simulate`),
/// the CLI's and the daemon's event lines, and the Swift API's `PlaybackEvent.jsonLine` all go
/// through it, so that a field has one name and one spelling everywhere. docs/events.md and
/// docs/events.schema.json describe what it writes.
///
/// Every line is one JSON object, keys in byte order (as JSONEncoder's `.sortedKeys`), slashes
/// not escaped; strings are escaped as JSONEncoder does (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`,
/// `\t`, other controls as `\u00XX`; everything else as UTF-8). It writes bytes into a buffer
/// the caller owns: a cue sheet of millions of cues appends to one buffer, and a plain ASCII
/// string is copied as it is, after one scan.
public enum EventEncoder {
    /// A value of a member.
    public enum Value: Sendable, Equatable {
        case int(Int)
        case double(Double)
        case string(String)
        case bool(Bool)
        /// An array of strings (the daemon's `library` listing: a lesson's answers, its sounds).
        case strings([String])
        /// An object of strings, written with its keys in byte order (the `library` listing: a
        /// program's `pulseAnswers`, its `texts`).
        case stringMap([String: String])
        /// An array of any values (the `library` listing: an activity's `steps`).
        case array([Value])
        /// An object of any values, written with its keys in byte order (the `library`
        /// listing: a program's `pictures`, each `{"alt", "url"}`).
        case object([String: Value])
        case null

        public init(_ field: Cue.Field) {
            switch field {
            case .int(let number): self = .int(number)
            case .string(let text): self = .string(text)
            case .bool(let flag): self = .bool(flag)
            }
        }

        /// `.int(value)`, or `.null` when there is none.
        public static func int(_ value: Int64?) -> Value { value.map { .int(Int($0)) } ?? .null }
    }

    /// A member of an object: its key and its value.
    public struct Member: Sendable, Equatable {
        public var key: String
        public var value: Value
        public init(_ key: String, _ value: Value) {
            self.key = key
            self.value = value
        }
    }

    /// What an event that is not a cue says happened: a playback's own events and the daemon's
    /// answers. A cue event's `type` is its cue's (`word`, `clipStart`, an activity's `tap` …),
    /// and none of these names is a cue's, so that one switch on `type` tells them apart.
    public enum Kind: String, Sendable, CaseIterable {
        /// Playback began: what the output agreed to; `frame` 0 and when it is heard.
        case start
        /// The output ran dry and recovered.
        case underrun
        /// A new plan took over later than wanted.
        case lateSwitch
        /// Playback paused: `frame` is where the timeline waits (after the fade-out); `heard`
        /// when the pause was heard.
        case paused
        /// Playback resumed from `frame`, heard at `heard`.
        case resumed
        /// The timeline jumped from `from` to `frame` (a seek), heard at `heard`.
        case seeked
        /// From `frame` on, heard from `heard`, the timeline plays at `speed`.
        case speedChanged
        /// A streamed file could not be read; its voice plays silence.
        case streamProblem
        /// The daemon's `library` listing: one chain or activity of a lesson of the library (or a
        /// lesson file that cannot be read, with its `problem`).
        case program
        /// Terminal (daemon): the request did all it was asked.
        case finished
        /// Terminal: stopped before its end (a stop request, Ctrl-C, the client gone, the daemon stopping).
        case stopped
        /// Terminal: what went wrong.
        case error
    }

    // MARK: Lines

    /// A cue as the cue sheet writes it: `frame`, `type` and the cue's own members, with
    /// `extra` (an event's `heard`, `delivered`, a front end's envelope) merged in key order.
    /// A member of `extra` named like one of the cue's replaces it.
    public static func appendCue(_ cue: Cue, _ extra: [Member] = [], to out: inout [UInt8]) {
        let sorted = extra.count > 1 ? stablySorted(extra) { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) } : extra
        sorted.withUnsafeBufferPointer { extra in
            var object = ObjectWriter(extra: extra)
            // Keys are written with their punctuation (`{"key":` first, `,"key":` then) in one
            // piece, and the last with its value and the closing brace: a cue sheet is millions
            // of these.
            switch cue.kind {
            case .clipStart(let clip, let pool), .clipEnd(let clip, let pool):
                object.member("{\"clip\":", clip, to: &out)
                object.member(",\"frame\":", cue.frame, to: &out)
                if let pool { object.member(",\"pool\":", pool, to: &out) }
                if case .clipStart = cue.kind {
                    object.close(type: ",\"type\":\"clipStart\"}", to: &out)
                } else {
                    object.close(type: ",\"type\":\"clipEnd\"}", to: &out)
                }
            case .word(let clip, let index, let text, let endFrame), .sentence(let clip, let index, let text, let endFrame):
                object.member("{\"clip\":", clip, to: &out)
                object.member(",\"endFrame\":", endFrame, to: &out)
                object.member(",\"frame\":", cue.frame, to: &out)
                object.member(",\"index\":", index, to: &out)
                object.member(",\"text\":", text, to: &out)
                if case .word = cue.kind {
                    object.close(type: ",\"type\":\"word\"}", to: &out)
                } else {
                    object.close(type: ",\"type\":\"sentence\"}", to: &out)
                }
            case .pulse(let target):
                object.member("{\"frame\":", cue.frame, to: &out)
                object.member(",\"target\":", target, to: &out)
                object.close(type: ",\"type\":\"pulse\"}", to: &out)
            case .chainEnd(let chain):
                object.member("{\"chain\":", chain, to: &out)
                object.member(",\"frame\":", cue.frame, to: &out)
                object.close(type: ",\"type\":\"chainEnd\"}", to: &out)
            case .activity(_, let fields):
                var members = fields.map { Member($0.key, Value($0.value)) }
                members.append(Member("frame", .int(cue.frame)))
                members.append(Member("type", .string(cue.type)))
                members = stablySorted(members) { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                for member in members { object.member(member.key, member.value, to: &out) }
                object.close(to: &out)
            }
        }
    }

    /// An event that is not a cue: `type`, `frame` and `heard` (null where they do not apply)
    /// and `members`, in key order.
    public static func append(_ kind: Kind, frame: Int?, heard: Int64?, _ members: [Member] = [], to out: inout [UInt8]) {
        var all = members
        all.append(Member("type", .string(kind.rawValue)))
        all.append(Member("frame", frame.map { .int($0) } ?? .null))
        all.append(Member("heard", .int(heard)))
        appendObject(all, to: &out)
    }

    /// Any object, `members` written in key order (a key given twice: the last wins).
    public static func appendObject(_ members: [Member], to out: inout [UInt8]) {
        let sorted = stablySorted(members) { $0.key != $1.key && $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        out.append(UInt8(ascii: "{"))
        var first = true
        for (k, member) in sorted.enumerated() {
            if k + 1 < sorted.count, sorted[k + 1].key == member.key { continue }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            appendString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            appendValue(member.value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// The cue sheet's line for `cue`.
    public static func line(_ cue: Cue) -> String {
        var out: [UInt8] = []
        appendCue(cue, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    // MARK: Values

    /// `text` as a JSON string. The one escaping routine of the project's JSON output.
    public static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Nearly every string is printable ASCII without a quote or a backslash (and UTF-8 above
        // ASCII is written as it is): one scan, then one copy.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            out.append(contentsOf: text.utf8)
        } else {
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
                case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
                case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0xF)])
                default: out.append(byte)
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `text` as a JSON string, for a line written elsewhere (the daemon's ready line).
    public static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        appendString(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `value` in decimal, without allocating. The one integer writer.
    public static func appendInt(_ value: Int, to out: inout [UInt8]) {
        if value == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        if value < 0 { out.append(UInt8(ascii: "-")) }
        // The magnitude as unsigned: Int.min's has no Int.
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: 20 digits at most
        withUnsafeMutableBytes(of: &digits) { buffer in
            var count = 0
            while magnitude > 0 {
                buffer[count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            for k in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[k]) }
        }
    }

    /// A number that is not whole (latencies in ms, the CLI's `t`): Swift's shortest exact
    /// spelling, which JSON reads back to the same value; null when not finite.
    public static func appendDouble(_ value: Double, to out: inout [UInt8]) {
        if value.isFinite {
            out.append(contentsOf: value.description.utf8)
        } else {
            out.append(contentsOf: "null".utf8)
        }
    }

    public static func appendValue(_ value: Value, to out: inout [UInt8]) {
        switch value {
        case .int(let number): appendInt(number, to: &out)
        case .double(let number): appendDouble(number, to: &out)
        case .string(let text): appendString(text, to: &out)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .strings(let texts):
            out.append(UInt8(ascii: "["))
            for (k, text) in texts.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                appendString(text, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .stringMap(let map):
            out.append(UInt8(ascii: "{"))
            for (k, key) in sortedByUTF8(Array(map.keys)).enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                appendString(map[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (k, value) in values.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                appendValue(value, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let map):
            out.append(UInt8(ascii: "{"))
            for (k, key) in sortedByUTF8(Array(map.keys)).enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                appendValue(map[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .null: out.append(contentsOf: "null".utf8)
        }
    }

    /// Writes an object's members given in key order, merging in `extra` (sorted by key) where
    /// each belongs. The buffer is passed to each call rather than held, so that the cue sheet's
    /// loop appends to one array without copying it.
    private struct ObjectWriter {
        let extra: UnsafeBufferPointer<Member>
        var next = 0
        var first = true

        init(extra: UnsafeBufferPointer<Member>) {
            self.extra = extra
        }

        /// Writes the members of `extra` that sort before `key`; true when one is named `key`
        /// (the caller's own is then left out).
        private mutating func flush(before key: String?, to out: inout [UInt8]) -> Bool {
            while next < extra.count {
                let member = extra[next]
                if let key, !member.key.utf8.lexicographicallyPrecedes(key.utf8) {
                    if member.key == key {
                        next += 1
                        write(member.key, member.value, to: &out)
                        return true
                    }
                    return false
                }
                next += 1
                write(member.key, member.value, to: &out)
            }
            return false
        }

        private mutating func write(_ key: String, _ value: Value, to out: inout [UInt8]) {
            out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
            first = false
            appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            appendValue(value, to: &out)
        }

        /// Writes `piece`: `{"name":…` or `,"name":…` (its first byte is made right for where it
        /// lands), after the members of `extra` that sort before `name`; false when `extra` had
        /// one named `name` (written instead).
        private mutating func open(_ piece: StaticString, name: Range<Int>, to out: inout [UInt8]) -> Bool {
            let bytes = UnsafeBufferPointer(start: piece.utf8Start, count: piece.utf8CodeUnitCount)
            if next < extra.count, flush(before: String(decoding: bytes[name], as: UTF8.self), to: &out) { return false }
            if (bytes[0] == UInt8(ascii: "{")) == first {
                out.append(contentsOf: bytes)
            } else {
                out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[1...]))
            }
            first = false
            return true
        }

        /// `key`: `{"name":` or `,"name":`.
        private mutating func open(_ key: StaticString, to out: inout [UInt8]) -> Bool {
            open(key, name: 2..<(key.utf8CodeUnitCount - 2), to: &out)
        }

        mutating func member(_ key: StaticString, _ text: String, to out: inout [UInt8]) {
            if open(key, to: &out) { appendString(text, to: &out) }
        }

        mutating func member(_ key: StaticString, _ number: Int, to out: inout [UInt8]) {
            if open(key, to: &out) { appendInt(number, to: &out) }
        }

        mutating func member(_ key: String, _ value: Value, to out: inout [UInt8]) {
            if next < extra.count, flush(before: key, to: &out) { return }
            write(key, value, to: &out)
        }

        /// The last of the cue's members and the closing brace: `last` is `,"type":"kind"}`
        /// (nothing to escape), one append when no member of `extra` is left.
        mutating func close(type last: StaticString, to out: inout [UInt8]) {
            let bytes = UnsafeBufferPointer(start: last.utf8Start, count: last.utf8CodeUnitCount)
            if next == extra.count && !first {
                out.append(contentsOf: bytes)
                return
            }
            if next == extra.count || !flush(before: "type", to: &out) {
                out.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
                first = false
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[1..<(bytes.count - 1)]))
            }
            close(to: &out)
        }

        mutating func close(to out: inout [UInt8]) {
            _ = flush(before: nil, to: &out)
            if first { out.append(UInt8(ascii: "{")) }
            out.append(UInt8(ascii: "}"))
        }
    }
}
