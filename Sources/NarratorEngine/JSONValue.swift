/// A parsed JSON document, kept as plain values so that validation can walk it by hand and
/// name the exact key that is wrong ("chains.correct[2].pool"), which Codable cannot.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// Deepest nesting of arrays and objects a document may have: far beyond any lesson, and
    /// shallow enough that nothing downstream can run out of stack.
    public static let maxDepth = 512

    /// The largest document read: lesson files and sprite maps are JSON that names audio,
    /// never holds it.
    public static let documentLimit = 16 << 20

    /// Parses `data` as strict JSON (RFC 8259): UTF-8 (a leading byte order mark is skipped),
    /// no comments, no trailing commas, no single quotes, no NaN or Infinity, no leading zeros,
    /// no unescaped control characters or lone surrogates, no duplicate keys, no number beyond
    /// a Double's range, at most `maxDepth` levels (512 unless given). A fault becomes a `NarratorError` naming
    /// `file` and "line L, column C" (columns count characters, from 1) of the fault, or of the
    /// end of the file when it ends too early, with what was expected there.
    ///
    /// Linear time and no recursion: the open arrays and objects are kept on explicit stacks.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, file: String, maxDepth: Int = JSONValue.maxDepth) throws(NarratorError) -> JSONValue {
        if bytes.isEmpty { throw NarratorError(file: file, "empty file, expected JSON") }
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        do throws(JSONParser.Fault) {
            return try parser.document()
        } catch {
            throw NarratorError(file: file, place: parser.position(error.offset), "not valid JSON: \(error.message)")
        }
    }

    /// `parse` of bytes in an array.
    public static func parse(_ bytes: [UInt8], file: String, maxDepth: Int = JSONValue.maxDepth) throws(NarratorError) -> JSONValue {
        let outcome: Result<JSONValue, NarratorError> = bytes.withUnsafeBufferPointer { buffer in
            do throws(NarratorError) { return .success(try parse(buffer, file: file, maxDepth: maxDepth)) } catch { return .failure(error) }
        }
        return try outcome.get()
    }
}

/// A JSON object's members in the order the file gives them (so that the first fault found is
/// the first in the file), with lookup by key. Keys are unique: the parser refuses duplicates.
public struct JSONObject: Sendable, Equatable, RandomAccessCollection {
    public private(set) var members: [(key: String, value: JSONValue)] = []
    /// Positions by key, built once an object is large enough for a linear search to cost.
    private var positions: [String: Int]?
    private static let indexAbove = 12

    public init() {}

    public init(_ members: [(key: String, value: JSONValue)]) {
        for (key, value) in members { _ = insert(key, value) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { members.count }
    public subscript(position: Int) -> (key: String, value: JSONValue) { members[position] }

    public subscript(key: String) -> JSONValue? {
        guard let position = position(of: key) else { return nil }
        return members[position].value
    }

    public var keys: [String] { members.map { $0.key } }

    private func position(of key: String) -> Int? {
        if let positions { return positions[key] }
        return members.firstIndex { $0.key == key }
    }

    /// Adds a member; false (and no change) when `key` is already there.
    public mutating func insert(_ key: String, _ value: JSONValue) -> Bool {
        if position(of: key) != nil { return false }
        members.append((key, value))
        if positions != nil {
            positions![key] = members.count - 1
        } else if members.count > Self.indexAbove {
            var index: [String: Int] = [:]
            index.reserveCapacity(members.count * 2)
            for (position, member) in members.enumerated() { index[member.key] = position }
            positions = index
        }
        return true
    }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.count == b.count && a.members.allSatisfy { b[$0.key] == $0.value }
    }
}

/// The strict parser behind `JSONValue.parse`: one pass over the bytes, open containers on
/// explicit stacks (no recursion), each fault with its byte offset.
private struct JSONParser {
    struct Fault: Error {
        let offset: Int
        let message: String
    }

    let bytes: UnsafeBufferPointer<UInt8>
    var i = 0
    /// Where the text starts (after a byte order mark): column counting starts there.
    var textStart = 0

    /// The open containers, innermost last: whether it is an object, and its offset.
    var open: [(isObject: Bool, offset: Int)] = []
    var arrays: [[JSONValue]] = []
    var objects: [JSONObject] = []
    /// The key waiting for its value, for each open object, and its offset.
    var keys: [(key: String, offset: Int)] = []

    /// The deepest nesting accepted.
    let maxDepth: Int

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    var n: Int { bytes.count }

    // MARK: Document

    mutating func document() throws(Fault) -> JSONValue {
        if n >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
            i = 3
            textStart = 3
        } else if n >= 2, (bytes[0] == 0xFF && bytes[1] == 0xFE) || (bytes[0] == 0xFE && bytes[1] == 0xFF) {
            throw Fault(offset: 0, message: "the file is UTF-16; JSON is UTF-8")
        }
        skipSpace()
        if i == n { throw Fault(offset: i, message: "no value: the file holds only white space") }
        nextValue: while true {
            skipSpace()
            guard i < n else { throw ended(expecting: "a value") }
            var value: JSONValue
            switch bytes[i] {
            case UInt8(ascii: "{"):
                try push(isObject: true)
                skipSpace()
                if i < n, bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    open.removeLast()
                    value = .object(objects.removeLast())
                } else {
                    try key()
                    continue nextValue
                }
            case UInt8(ascii: "["):
                try push(isObject: false)
                skipSpace()
                if i < n, bytes[i] == UInt8(ascii: "]") {
                    i += 1
                    open.removeLast()
                    value = .array(arrays.removeLast())
                } else {
                    continue nextValue
                }
            case UInt8(ascii: "\""):
                value = .string(try string())
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = .number(try number())
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                value = try word()
            default:
                throw unexpected(expecting: "a value")
            }
            // Put the value in its container; close the containers that end here.
            while true {
                guard let container = open.last else {
                    skipSpace()
                    if i < n { throw Fault(offset: i, message: "\(found(at: i)) after the JSON value (a file holds one value)\(hint(at: i))") }
                    return value
                }
                if container.isObject {
                    let pending = keys.removeLast()
                    guard objects[objects.count - 1].insert(pending.key, value) else {
                        throw Fault(offset: pending.offset, message: "duplicate key \(quoted(pending.key)) in this object")
                    }
                } else {
                    arrays[arrays.count - 1].append(value)
                }
                skipSpace()
                let closer = container.isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
                guard i < n else { throw ended(expecting: container.isObject ? "',' or '}'" : "',' or ']'") }
                if bytes[i] == UInt8(ascii: ",") {
                    let comma = i
                    i += 1
                    skipSpace()
                    if i < n, bytes[i] == closer {
                        throw Fault(offset: comma, message: "trailing comma before '\(Character(Unicode.Scalar(closer)))' (strict JSON has none)")
                    }
                    if container.isObject { try key() }
                    continue nextValue
                }
                guard bytes[i] == closer else {
                    throw unexpected(expecting: container.isObject ? "',' or '}' after an object member" : "',' or ']' after an array item")
                }
                i += 1
                open.removeLast()
                value = container.isObject ? .object(objects.removeLast()) : .array(arrays.removeLast())
            }
        }
    }

    mutating func push(isObject: Bool) throws(Fault) {
        guard open.count < maxDepth else {
            throw Fault(offset: i, message: "nested deeper than \(maxDepth) levels")
        }
        open.append((isObject, i))
        if isObject { objects.append(JSONObject()) } else { arrays.append([]) }
        i += 1
    }

    /// An object's key and its colon, at `i` (white space skipped).
    mutating func key() throws(Fault) {
        skipSpace()
        guard i < n else { throw ended(expecting: "a key in double quotes") }
        guard bytes[i] == UInt8(ascii: "\"") else { throw unexpected(expecting: "a key in double quotes") }
        let offset = i
        let text = try string()
        skipSpace()
        guard i < n else { throw ended(expecting: "':' after the key") }
        guard bytes[i] == UInt8(ascii: ":") else { throw unexpected(expecting: "':' after the key") }
        i += 1
        keys.append((text, offset))
    }

    mutating func skipSpace() {
        while i < n {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    // MARK: Scalars

    /// `true`, `false`, `null`; any other word (NaN, Infinity, undefined, True) is refused whole.
    mutating func word() throws(Fault) -> JSONValue {
        let start = i
        while i < n, isWordByte(bytes[i]) { i += 1 }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        switch text {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default:
            let hint = ["nan", "infinity", "inf"].contains(text.asciiLowercased())
                ? " (JSON numbers are finite: no NaN or Infinity)"
                : " (a value is a number, a string in double quotes, true, false, null, an array or an object)"
            throw Fault(offset: start, message: "\(quoted(clipped(text))) is not a JSON value\(hint)")
        }
    }

    func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"): true
        default: false
        }
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// A number by RFC 8259's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    mutating func number() throws(Fault) -> Double {
        let start = i
        let negative = bytes[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        guard i < n else { throw ended(expecting: "a digit after '-'") }
        guard isDigit(bytes[i]) else {
            let hint = bytes[i] == UInt8(ascii: "I") || bytes[i] == UInt8(ascii: "N") ? " (JSON numbers are finite: no NaN or Infinity)" : ""
            throw Fault(offset: i, message: "expected a digit after '-', found \(found(at: i))\(hint)")
        }
        var integer: UInt64 = 0
        var digits = 0
        if bytes[i] == UInt8(ascii: "0") {
            i += 1
            if i < n, isDigit(bytes[i]) { throw Fault(offset: start, message: "a number with a leading zero (write 7, not 07)") }
        } else {
            while i < n, isDigit(bytes[i]) {
                if digits < 18 { integer = integer * 10 + UInt64(bytes[i] - UInt8(ascii: "0")) }
                digits += 1
                i += 1
            }
        }
        var plain = true
        if i < n, bytes[i] == UInt8(ascii: ".") {
            plain = false
            i += 1
            guard i < n else { throw ended(expecting: "a digit after the decimal point") }
            guard isDigit(bytes[i]) else { throw Fault(offset: i, message: "expected a digit after the decimal point, found \(found(at: i))") }
            while i < n, isDigit(bytes[i]) { i += 1 }
        }
        if i < n, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            plain = false
            i += 1
            if i < n, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < n else { throw ended(expecting: "a digit in the exponent") }
            guard isDigit(bytes[i]) else { throw Fault(offset: i, message: "expected a digit in the exponent, found \(found(at: i))") }
            while i < n, isDigit(bytes[i]) { i += 1 }
        }
        // Up to 15 digits a whole number is exact as a Double; the rest goes through the
        // correctly rounded conversion of the standard library.
        if plain && digits <= 15 {
            let value = Double(integer)
            return negative ? -value : value
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw Fault(offset: start, message: "the number \(clipped(text)) is out of range (a JSON number here is at most ±1.8e308)")
        }
        return value
    }

    /// A string at `i` (its opening quote), escapes decoded; the bytes are checked to be UTF-8.
    mutating func string() throws(Fault) -> String {
        let opening = i
        i += 1
        var run = i
        var decoded: [UInt8]?
        while true {
            guard i < n else {
                throw Fault(offset: n, message: "the file ends inside the string opened at \(position(opening)): expected '\"'")
            }
            let byte = bytes[i]
            if byte == UInt8(ascii: "\"") {
                let text: String
                if var decoded {
                    decoded.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                    text = String(decoding: decoded, as: UTF8.self)
                } else {
                    text = String(decoding: UnsafeBufferPointer(rebasing: bytes[run..<i]), as: UTF8.self)
                }
                i += 1
                return text
            }
            if byte == UInt8(ascii: "\\") {
                if decoded == nil { decoded = [] }
                decoded!.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                try escape(into: &decoded!)
                run = i
                continue
            }
            if byte < 0x20 {
                let names: [UInt8: String] = [0x0A: "\\n", 0x09: "\\t", 0x0D: "\\r"]
                let hint = names[byte].map { "; write it as \($0)" } ?? ""
                throw Fault(offset: i, message: "\(found(at: i)) inside a string (control characters must be escaped\(hint))")
            }
            if byte < 0x80 {
                i += 1
            } else {
                guard let length = utf8Length(at: i) else {
                    throw Fault(offset: i, message: "\(found(at: i)) inside a string: the file is not valid UTF-8")
                }
                i += length
            }
        }
    }

    /// The escape at `i` (its backslash), appended as UTF-8.
    mutating func escape(into out: inout [UInt8]) throws(Fault) {
        let backslash = i
        i += 1
        guard i < n else { throw Fault(offset: n, message: "the file ends inside an escape") }
        let letter = bytes[i]
        i += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(letter)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4(escapeAt: backslash)
            if (0xD800...0xDBFF).contains(scalar) {
                guard i + 1 < n, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") else {
                    throw Fault(offset: backslash, message: "lone surrogate \\u\(hex(scalar)): a high surrogate needs a low one (\\uDC00–\\uDFFF) after it")
                }
                let second = i
                i += 2
                let low = try hex4(escapeAt: second)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw Fault(offset: backslash, message: "lone surrogate \\u\(hex(scalar)): it is followed by \\u\(hex(low)), not a low surrogate")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw Fault(offset: backslash, message: "lone surrogate \\u\(hex(scalar)): a low surrogate with no high one before it")
            }
            appendUTF8(scalar, to: &out)
        default:
            throw Fault(offset: backslash, message: "invalid escape: a backslash followed by \(found(at: i - 1)) (JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
        }
    }

    func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case ..<0x80:
            out.append(UInt8(scalar))
        case ..<0x800:
            out.append(0xC0 | UInt8(scalar >> 6))
            out.append(0x80 | UInt8(scalar & 0x3F))
        case ..<0x10000:
            out.append(0xE0 | UInt8(scalar >> 12))
            out.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            out.append(0x80 | UInt8(scalar & 0x3F))
        default:
            out.append(0xF0 | UInt8(scalar >> 18))
            out.append(0x80 | UInt8(scalar >> 12 & 0x3F))
            out.append(0x80 | UInt8(scalar >> 6 & 0x3F))
            out.append(0x80 | UInt8(scalar & 0x3F))
        }
    }

    /// Four hex digits at `i` (after `\u`).
    mutating func hex4(escapeAt backslash: Int) throws(Fault) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard i < n else { throw Fault(offset: n, message: "the file ends inside a \\u escape") }
            let byte = bytes[i]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw Fault(offset: backslash, message: "\\u needs four hex digits, found \(found(at: i))")
            }
            value = value << 4 | digit
            i += 1
        }
        return value
    }

    func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    /// The length of the well-formed UTF-8 sequence at `at` (RFC 3629: no overlong forms, no
    /// surrogates, nothing past U+10FFFF), or nil.
    func utf8Length(at: Int) -> Int? {
        let lead = bytes[at]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return nil
        }
        guard at + length <= n else { return nil }
        let second = bytes[at + 1]
        guard second >= low, second <= high else { return nil }
        for k in 2..<length where bytes[at + k] & 0xC0 != 0x80 { return nil }
        return length
    }

    // MARK: Faults

    /// The file ended where `expecting` should have come: names the innermost open container.
    func ended(expecting: String) -> Fault {
        guard let container = open.last else {
            return Fault(offset: n, message: "the file ends where \(expecting) should be")
        }
        let kind = container.isObject ? "object" : "array"
        return Fault(
            offset: n,
            message: "the file ends inside the \(kind) opened at \(position(container.offset)): expected \(expecting)")
    }

    func unexpected(expecting: String) -> Fault {
        guard i < n else { return ended(expecting: expecting) }
        return Fault(offset: i, message: "expected \(expecting), found \(found(at: i))\(hint(at: i))")
    }

    /// Why the character at `offset` is a common mistake, if it is one.
    func hint(at offset: Int) -> String {
        switch bytes[offset] {
        case UInt8(ascii: "/"), UInt8(ascii: "#"): " (JSON has no comments)"
        case UInt8(ascii: "'"): " (JSON strings and keys are in double quotes)"
        case UInt8(ascii: "+"): " (a JSON number has no '+' sign)"
        case UInt8(ascii: "."): " (a JSON number starts with a digit: 0.5, not .5)"
        case 0xE2 where offset + 2 < n && bytes[offset + 1] == 0x80 && (0x98...0x9F).contains(bytes[offset + 2]):
            " (a typographic quote: JSON strings are in plain double quotes)"
        default: ""
        }
    }

    /// What is at `offset`, for a message: a character, or a byte that is not one.
    func found(at offset: Int) -> String {
        guard offset < n else { return "the end of the file" }
        let byte = bytes[offset]
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        if byte < 0x80 { return "control character U+\(hex(UInt32(byte)))" }
        if let length = utf8Length(at: offset),
            let scalar = String(decoding: UnsafeBufferPointer(rebasing: bytes[offset..<(offset + length)]), as: UTF8.self).unicodeScalars.first
        {
            return "'\(Character(scalar))' (U+\(hex(scalar.value)))"
        }
        return "byte 0x\(String(byte, radix: 16, uppercase: true)) (not UTF-8)"
    }

    /// "line L, column C" of a byte offset: columns count characters (UTF-8 sequences) from 1.
    func position(_ offset: Int) -> String {
        var line = 1
        var column = 1
        var k = textStart
        let end = min(offset, n)
        while k < end {
            let byte = bytes[k]
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
            k += 1
        }
        return "line \(line), column \(column)"
    }

    func quoted(_ text: String) -> String {
        var out = "'"
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += "\\u" + hex(scalar.value)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out + "'"
    }

    /// At most 40 characters of `text`, for a message.
    func clipped(_ text: String) -> String { text.count > 40 ? text.prefix(40) + "…" : text }
}

/// A JSON value together with where it sits in its file, for error messages.
/// Accessors throw a `NarratorError` that names the file and the key path.
///
/// The path is kept as the parent's path and this value's key or index, and spelled out only
/// when it is asked for (an error): walking a million array items builds no strings.
public struct JSONCursor: Sendable {
    public let value: JSONValue
    public let file: String
    fileprivate let place: Place

    /// Where a value is: spelled out as a string only when asked (an error), so that walking a
    /// million array items builds no strings, only a small node each.
    fileprivate indirect enum Place: Sendable {
        case root(String)
        case key(Place, String)
        case index(Place, Int)

        var path: String {
            switch self {
            case .root(let path):
                return path
            case .key(let parent, let key):
                let above = parent.path
                return above.isEmpty ? key : "\(above).\(key)"
            case .index(let parent, let index):
                return "\(parent.path)[\(index)]"
            }
        }
    }

    public init(_ value: JSONValue, file: String, path: String = "") {
        self.value = value
        self.file = file
        self.place = .root(path)
    }

    fileprivate init(_ value: JSONValue, file: String, place: Place) {
        self.value = value
        self.file = file
        self.place = place
    }

    /// The key path: `chains.correct[2].pool`.
    public var path: String { place.path }

    public func fail(_ message: String) -> NarratorError {
        let path = path
        return NarratorError(file: file, place: path.isEmpty ? nil : path, message)
    }

    /// An object's members as cursors, in the file's order; with `keys`, any other key is an
    /// error naming it.
    public func object(allowing keys: Set<String>? = nil) throws(NarratorError) -> Members {
        guard case .object(let object) = value else { throw fail("expected an object") }
        let members = Members(object: object, file: file, place: place)
        if let keys {
            for member in object.members where !keys.contains(member.key) {
                throw NarratorError(
                    file: file, place: members.childPath(member.key),
                    "unknown key (expected one of: \(sortedNames(keys).joined(separator: ", ")))")
            }
        }
        return members
    }

    public func array() throws(NarratorError) -> Items {
        guard case .array(let items) = value else { throw fail("expected an array") }
        return Items(items: items, file: file, place: place)
    }

    public func string() throws(NarratorError) -> String {
        guard case .string(let text) = value else { throw fail("expected a string") }
        return text
    }

    public func number() throws(NarratorError) -> Double {
        guard case .number(let number) = value, number.isFinite else { throw fail("expected a number") }
        return number
    }

    /// A whole number in `range`: anything else (a fraction, 1e30, 18446744073709551616) is an
    /// error naming the key, never a trap.
    public func integer(in range: ClosedRange<Int>) throws(NarratorError) -> Int {
        let number = try number()
        guard let whole = JSONCursor.exactInteger(number), range.contains(whole) else {
            throw fail("expected a whole number in \(range.lowerBound)...\(range.upperBound), got \(JSONCursor.describe(number))")
        }
        return whole
    }

    /// `number` as an Int when it is a whole number an Int holds exactly, else nil.
    public static func exactInteger(_ number: Double) -> Int? {
        // 2^63 is exactly representable; every whole Double below it in magnitude fits an Int.
        guard number.isFinite, number.rounded(.towardZero) == number, number > -9.223372036854775808e18,
            number < 9.223372036854775808e18
        else { return nil }
        return Int(number)
    }

    /// A number as a person reads it: whole numbers without ".0", others as Swift prints them.
    public static func describe(_ number: Double) -> String {
        if let whole = exactInteger(number) { return "\(whole)" }
        return "\(number)"
    }

    /// An object's members as cursors: look up by key, or walk in the file's order.
    public struct Members: RandomAccessCollection, Sendable {
        let object: JSONObject
        let file: String
        fileprivate let place: Place

        public var startIndex: Int { 0 }
        public var endIndex: Int { object.count }

        public subscript(position: Int) -> (key: String, value: JSONCursor) {
            let member = object.members[position]
            return (member.key, JSONCursor(member.value, file: file, place: .key(place, member.key)))
        }

        public subscript(key: String) -> JSONCursor? {
            object[key].map { JSONCursor($0, file: file, place: .key(place, key)) }
        }

        public var keys: [String] { object.keys }

        func childPath(_ key: String) -> String { Place.key(place, key).path }

        /// The member `key`, or an error naming it when it is missing.
        public func required(_ key: String, in parent: JSONCursor) throws(NarratorError) -> JSONCursor {
            guard let member = self[key] else {
                throw NarratorError(file: parent.file, place: childPath(key), "missing key")
            }
            return member
        }
    }

    /// An array's items as cursors, made when read.
    public struct Items: RandomAccessCollection, Sendable {
        let items: [JSONValue]
        let file: String
        fileprivate let place: Place

        fileprivate init(items: [JSONValue], file: String, place: Place) {
            self.items = items
            self.file = file
            self.place = place
        }

        /// No items.
        public init() { self.init(items: [], file: "", place: .root("")) }

        public var startIndex: Int { 0 }
        public var endIndex: Int { items.count }

        public subscript(position: Int) -> JSONCursor {
            JSONCursor(items[position], file: file, place: .index(place, position))
        }
    }
}
