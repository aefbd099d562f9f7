import Foundation

/// A parsed JSON document, kept as plain values so that validation can walk it by hand and
/// name the exact key that is wrong ("chains.correct[2].pool"), which Codable cannot.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses `data`; a syntax error becomes a `NarratorError` naming `file` and the line and
    /// column where the parser gave up.
    public static func parse(_ data: Data, file: String) throws(NarratorError) -> JSONValue {
        if data.isEmpty { throw NarratorError(file: file, "empty file, expected JSON") }
        do {
            return try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw NarratorError(file: file, place: syntaxErrorPlace(data), "not valid JSON")
        }
    }

    /// "line L, column C" of a syntax error, from the character offset Foundation reports.
    private static func syntaxErrorPlace(_ data: Data) -> String? {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return nil
        } catch {
            let text = "\(error)"
            guard let range = text.range(of: "character "),
                let offset = Int(text[range.upperBound...].prefix { $0.isNumber })
            else { return nil }
            var line = 1
            var column = 1
            for byte in data.prefix(offset) {
                if byte == UInt8(ascii: "\n") {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            }
            return "line \(line), column \(column)"
        }
    }
}

extension JSONValue: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}

/// A JSON value together with where it sits in its file, for error messages.
/// Accessors throw a `NarratorError` that names the file and the key path.
public struct JSONCursor: Sendable {
    public let value: JSONValue
    public let file: String
    public let path: String

    public init(_ value: JSONValue, file: String, path: String = "") {
        self.value = value
        self.file = file
        self.path = path
    }

    public func fail(_ message: String) -> NarratorError {
        NarratorError(file: file, place: path.isEmpty ? nil : path, message)
    }

    private func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    public func object(allowing keys: Set<String>? = nil) throws(NarratorError) -> [String: JSONCursor] {
        guard case .object(let members) = value else { throw fail("expected an object") }
        if let keys {
            for key in members.keys.sorted() where !keys.contains(key) {
                throw NarratorError(
                    file: file, place: child(key),
                    "unknown key (expected one of: \(keys.sorted().joined(separator: ", ")))")
            }
        }
        var result: [String: JSONCursor] = [:]
        for (key, member) in members { result[key] = JSONCursor(member, file: file, path: child(key)) }
        return result
    }

    public func array() throws(NarratorError) -> [JSONCursor] {
        guard case .array(let items) = value else { throw fail("expected an array") }
        return items.enumerated().map { JSONCursor($1, file: file, path: "\(path)[\($0)]") }
    }

    public func string() throws(NarratorError) -> String {
        guard case .string(let text) = value else { throw fail("expected a string") }
        return text
    }

    public func number() throws(NarratorError) -> Double {
        guard case .number(let number) = value, number.isFinite else { throw fail("expected a number") }
        return number
    }

    public func integer(in range: ClosedRange<Int>) throws(NarratorError) -> Int {
        let number = try number()
        guard number.rounded() == number, number >= Double(range.lowerBound), number <= Double(range.upperBound)
        else { throw fail("expected a whole number in \(range.lowerBound)...\(range.upperBound), got \(number)") }
        return Int(number)
    }
}

extension Dictionary where Key == String, Value == JSONCursor {
    /// The member `key`, or an error naming it when it is missing.
    public func required(_ key: String, in parent: JSONCursor) throws(NarratorError) -> JSONCursor {
        guard let member = self[key] else {
            let place = parent.path.isEmpty ? key : "\(parent.path).\(key)"
            throw NarratorError(file: parent.file, place: place, "missing key")
        }
        return member
    }
}
