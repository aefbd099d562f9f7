import Foundation
import NarratorCore
import Testing

/// The strict JSON reader (RFC 8259) behind lessons, sprite maps, timing files and the daemon's
/// requests: every fault refused with the line and column where it is (counted by hand here),
/// every valid document read exactly.
@Suite("Strict JSON")
struct StrictJSONTests {
    func parse(_ text: String) throws(NarratorError) -> JSONValue { try JSONValue.parse(Data(text.utf8), file: "f.json") }
    func parse(bytes: [UInt8]) throws(NarratorError) -> JSONValue { try JSONValue.parse(Data(bytes), file: "f.json") }

    /// The one-line error for `text`, or "accepted".
    func error(_ text: String) -> String { error(bytes: Array(text.utf8)) }
    func error(bytes: [UInt8]) -> String {
        do {
            _ = try parse(bytes: bytes)
            return "accepted"
        } catch {
            return error.description
        }
    }

    struct Refusal: CustomTestStringConvertible, Sendable {
        let name: String
        let bytes: [UInt8]
        /// The place, "line L, column C", and a fragment of the message.
        let place: String
        let says: String
        init(_ name: String, _ text: String, _ place: String, _ says: String) {
            self.init(name, bytes: Array(text.utf8), place, says)
        }
        init(_ name: String, bytes: [UInt8], _ place: String, _ says: String) {
            self.name = name
            self.bytes = bytes
            self.place = place
            self.says = says
        }
        var testDescription: String { name }
    }

    static let refusals: [Refusal] = [
        Refusal("trailing comma in an object", #"{"a": 1,}"#, "line 1, column 8", "trailing comma before '}'"),
        Refusal("trailing comma in an array", "[1, 2,\n]", "line 1, column 6", "trailing comma before ']'"),
        Refusal("trailing comma, nested", "{\"a\": [1],\n \"b\": {\"c\": 2,}}", "line 2, column 14", "trailing comma"),
        Refusal("line comment", "{\"a\": 1} // note", "line 1, column 10", "(JSON has no comments)"),
        Refusal("block comment first", "/* lesson */ {}", "line 1, column 1", "(JSON has no comments)"),
        Refusal("comment inside", "{\n  // clips\n  \"a\": 1}", "line 2, column 3", "JSON has no comments"),
        Refusal("hash comment", "# x\n{}", "line 1, column 1", "JSON has no comments"),
        Refusal("NaN", #"{"a": NaN}"#, "line 1, column 7", "'NaN' is not a JSON value (JSON numbers are finite"),
        Refusal("Infinity", #"[Infinity]"#, "line 1, column 2", "'Infinity' is not a JSON value"),
        Refusal("-Infinity", #"[-Infinity]"#, "line 1, column 3", "expected a digit after '-', found 'I' (JSON numbers are finite"),
        Refusal("undefined", #"[undefined]"#, "line 1, column 2", "'undefined' is not a JSON value"),
        Refusal("True", #"[True]"#, "line 1, column 2", "'True' is not a JSON value"),
        Refusal("nulls", #"[nulls]"#, "line 1, column 2", "'nulls' is not a JSON value"),
        Refusal("leading zero", #"{"a": 012}"#, "line 1, column 7", "leading zero"),
        Refusal("negative leading zero", #"[-00]"#, "line 1, column 2", "leading zero"),
        Refusal("leading plus", #"[+1]"#, "line 1, column 2", "no '+' sign"),
        Refusal("leading point", #"[.5]"#, "line 1, column 2", "0.5, not .5"),
        Refusal("trailing point", #"[1.]"#, "line 1, column 4", "expected a digit after the decimal point, found ']'"),
        Refusal("empty exponent", #"[1e]"#, "line 1, column 4", "expected a digit in the exponent"),
        Refusal("hex number", #"[0x10]"#, "line 1, column 3", "expected ',' or ']' after an array item, found 'x'"),
        Refusal("lone minus", #"[-]"#, "line 1, column 3", "expected a digit after '-'"),
        Refusal("huge exponent", #"{"a": 1e400}"#, "line 1, column 7", "the number 1e400 is out of range"),
        Refusal("huge negative", #"{"a": -2.5E+309}"#, "line 1, column 7", "out of range"),
        Refusal("huge integer", "[" + String(repeating: "9", count: 400) + "]", "line 1, column 2", "out of range"),
        Refusal("single-quoted key", #"{'a': 1}"#, "line 1, column 2", "in double quotes"),
        Refusal("single-quoted value", #"{"a": 'x'}"#, "line 1, column 7", "in double quotes"),
        Refusal("unquoted key", #"{a: 1}"#, "line 1, column 2", "expected a key in double quotes, found 'a'"),
        Refusal("typographic quotes", "{\"a\": \u{201C}x\u{201D}}", "line 1, column 7", "typographic quote"),
        Refusal("raw newline in a string", "{\"a\": \"x\ny\"}", "line 1, column 9", "control character U+000A inside a string (control characters must be escaped; write it as \\n)"),
        Refusal("raw tab in a string", "[\"a\tb\"]", "line 1, column 4", "control character U+0009"),
        Refusal("raw NUL in a string", "[\"a\u{0}\"]", "line 1, column 4", "control character U+0000"),
        Refusal("bad escape", #"["a\x"]"#, "line 1, column 4", "invalid escape: a backslash followed by 'x'"),
        Refusal("short \\u", #"["\u12"]"#, "line 1, column 3", "\\u needs four hex digits, found '\"'"),
        Refusal("lone high surrogate", #"["\uD800"]"#, "line 1, column 3", "lone surrogate \\uD800"),
        Refusal("high surrogate then a letter", #"["\uD83Dx"]"#, "line 1, column 3", "lone surrogate \\uD83D"),
        Refusal("high surrogate then not low", #"["\uD800\u0041"]"#, "line 1, column 3", "followed by \\u0041"),
        Refusal("lone low surrogate", #"["ab\uDC00"]"#, "line 1, column 5", "lone surrogate \\uDC00: a low surrogate"),
        Refusal("invalid UTF-8 in a string", bytes: Array(#"{"a": ""#.utf8) + [0xE1, 0x78] + Array("\"}".utf8), "line 1, column 8", "byte 0xE1 (not UTF-8) inside a string"),
        Refusal("overlong UTF-8", bytes: Array("[\"".utf8) + [0xC0, 0xAF] + Array("\"]".utf8), "line 1, column 3", "byte 0xC0"),
        Refusal("UTF-8 surrogate", bytes: Array("[\"".utf8) + [0xED, 0xA0, 0x80] + Array("\"]".utf8), "line 1, column 3", "byte 0xED"),
        Refusal("UTF-8 past U+10FFFF", bytes: Array("[\"".utf8) + [0xF4, 0x90, 0x80, 0x80] + Array("\"]".utf8), "line 1, column 3", "byte 0xF4"),
        Refusal("truncated UTF-8", bytes: Array("[\"".utf8) + [0xE2, 0x82], "line 1, column 3", "byte 0xE2"),
        Refusal("invalid UTF-8 outside strings", bytes: [0x5B, 0xFF, 0x5D], "line 1, column 2", "expected a value, found byte 0xFF (not UTF-8)"),
        Refusal("UTF-16", bytes: [0xFF, 0xFE, 0x7B, 0x00, 0x7D, 0x00], "line 1, column 1", "the file is UTF-16"),
        Refusal("two values", "{} {}", "line 1, column 4", "'{' after the JSON value"),
        Refusal("only white space", " \n\t ", "line 2, column 3", "no value"),
        Refusal("BOM elsewhere", "[\u{FEFF}1]", "line 1, column 2", "expected a value, found '\u{FEFF}' (U+FEFF)"),
        Refusal("missing colon", #"{"a" 1}"#, "line 1, column 6", "expected ':' after the key, found '1'"),
        Refusal("missing comma", "[1\n 2]", "line 2, column 2", "expected ',' or ']' after an array item, found '2'"),
        Refusal("mismatched close", #"{"a": [1}"#, "line 1, column 9", "expected ',' or ']' after an array item, found '}'"),
        Refusal("duplicate key", "{\"a\": 1,\n \"a\": 2}", "line 2, column 2", "duplicate key 'a'"),
        Refusal("duplicate key among many", "{" + (0..<40).map { "\"k\($0)\": \($0), " }.joined() + "\"k7\": 0}", "line 1, column 422", "duplicate key 'k7'"),
        Refusal("duplicate key, nested", #"[{"x": {"b": 1, "b": 1}}]"#, "line 1, column 17", "duplicate key 'b'"),
        // Unclosed: the place is the end of the file, the message says what was expected and
        // where the open container began.
        Refusal("unclosed object", "{\"a\": 1,\n \"b\": [1, 2]\n", "line 3, column 1", "the file ends inside the object opened at line 1, column 1: expected ',' or '}'"),
        Refusal("unclosed array", #"{"a": [1, 2"#, "line 1, column 12", "the file ends inside the array opened at line 1, column 7: expected ',' or ']'"),
        Refusal("unclosed string", "{\"a\": \"xy", "line 1, column 10", "the file ends inside the string opened at line 1, column 7: expected '\"'"),
        Refusal("unclosed after a key", #"{"a""#, "line 1, column 5", "the file ends inside the object opened at line 1, column 1: expected ':' after the key"),
        Refusal("unclosed after a colon", #"{"a": "#, "line 1, column 7", "expected a value"),
        Refusal("unclosed after a comma", #"[1, "#, "line 1, column 5", "the file ends inside the array opened at line 1, column 1: expected a value"),
        Refusal("unclosed escape", #"["a\"#, "line 1, column 5", "the file ends inside an escape"),
        Refusal("truncated literal", #"[tru"#, "line 1, column 2", "'tru' is not a JSON value"),
        Refusal("truncated number", #"[1."#, "line 1, column 4", "expected a digit after the decimal point"),
        // Columns count characters, not bytes.
        Refusal("column after wide characters", "{\"é\": 1,\n \"ü\": [1,]}", "line 2, column 9", "trailing comma"),
        Refusal("column after a BOM", "\u{FEFF}{,}", "line 1, column 2", "expected a key in double quotes, found ','"),
    ]

    @Test(arguments: refusals)
    func refused(_ refusal: Refusal) {
        let message = error(bytes: refusal.bytes)
        #expect(message.hasPrefix("f.json: \(refusal.place): not valid JSON: "), "\(message)")
        #expect(message.contains(refusal.says), "\(message)")
        #expect(!message.contains("\n"), "one line")
    }

    @Test func readsEveryValueExactly() throws {
        let text = #"""
            {"s": "a\"b\\c\/d\b\f\n\r\t\u00e9\u0000\uD83D\uDE00é",
             "n": [0, -0, 1.5e2, -12, 1E+2, 2.5e-3, 123456789012345678901234567890, 9007199254740993, 1e-400, 18446744073709551616],
             "t": true, "f": false, "z": null, "e": {}, "a": [[]]}
            """#
        guard case .object(let object) = try parse(text) else { Issue.record("not an object"); return }
        #expect(object.keys == ["s", "n", "t", "f", "z", "e", "a"], "the file's order")
        #expect(object["s"] == .string("a\"b\\c/d\u{8}\u{C}\n\r\té\u{0}😀é"))
        guard case .array(let numbers) = object["n"] else { Issue.record("n"); return }
        let expected: [Double] = [0, 0, 150, -12, 100, 0.0025, 1.2345678901234568e29, 9007199254740992, 0, 18446744073709551616]
        #expect(numbers == expected.map(JSONValue.number))
        if case .number(let negativeZero) = numbers[1] { #expect(negativeZero.sign == .minus, "-0 keeps its sign") }
        #expect(object["t"] == .bool(true) && object["f"] == .bool(false) && object["z"] == .null)
        #expect(object["e"] == .object(JSONObject()) && object["a"] == .array([.array([])]))
        #expect(try parse(" \t\r\n 7 \n") == .number(7), "a scalar document, white space around")
        #expect(try parse("\u{FEFF}[1]") == .array([.number(1)]), "a UTF-8 byte order mark is skipped")
        #expect(try parse("\"\u{10FFFF}\u{7F}\"") == .string("\u{10FFFF}\u{7F}"))
    }

    @Test func objectsLookUpAndCompareByKey() throws {
        let many = "{" + (0..<100).map { "\"k\($0)\": \($0)" }.joined(separator: ", ") + "}"
        guard case .object(let object) = try parse(many) else { Issue.record("not an object"); return }
        #expect(object.count == 100)
        #expect(object["k0"] == .number(0) && object["k99"] == .number(99) && object["k100"] == nil)
        #expect(try parse(#"{"a": 1, "b": 2}"#) == parse(#"{"b": 2, "a": 1}"#), "equal whatever the order")
        #expect(try parse(#"{"a": 1, "b": 2}"#) != parse(#"{"a": 1, "b": 3}"#))
    }

    @Test func nestingIsBoundedNotRecursive() throws {
        let deepest = String(repeating: "[", count: JSONValue.maxDepth) + String(repeating: "]", count: JSONValue.maxDepth)
        var value = try parse(deepest)
        var depth = 0
        while case .array(let items) = value, let first = items.first {
            depth += 1
            value = first
        }
        #expect(depth == JSONValue.maxDepth - 1)
        #expect(error("[" + deepest + "]") == "f.json: line 1, column \(JSONValue.maxDepth + 1): not valid JSON: nested deeper than 512 levels")
        // A million open brackets (and objects) are refused at once, without running out of stack.
        let million = 1_000_000
        #expect(error(String(repeating: "[", count: million)).hasPrefix("f.json: line 1, column 513: not valid JSON: nested deeper"))
        #expect(error(String(repeating: #"{"a":"#, count: million)).hasPrefix("f.json: line 1, column 2561: not valid JSON: nested deeper"))
    }

    /// A caller's own depth limit (the daemon's 32 for requests): 32 levels parse, the 33rd
    /// opening is the fault's place.
    @Test func callersDepthLimit() throws {
        let levels32 = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        #expect(throws: Never.self) { try JSONValue.parse(Data(levels32.utf8), file: "r", maxDepth: 32) }
        let levels33 = Data(("[" + levels32 + "]").utf8)
        #expect(throws: NarratorError.self) { try JSONValue.parse(levels33, file: "r", maxDepth: 32) }
        do {
            _ = try JSONValue.parse(levels33, file: "r", maxDepth: 32)
        } catch {
            #expect(error.description == "r: line 1, column 33: not valid JSON: nested deeper than 32 levels")
        }
        #expect(throws: Never.self) { try JSONValue.parse(levels33, file: "r") }
    }

    @Test func emptyFile() {
        #expect(error("") == "f.json: empty file, expected JSON")
    }

    /// Whole numbers: anything a JSON number can say is refused cleanly, never a trap.
    @Test func integersAreRangeChecked() throws {
        func integer(_ text: String) throws(NarratorError) -> Int {
            try JSONCursor(parse(text), file: "f.json", path: "k").integer(in: 0...1000)
        }
        #expect(try integer("7") == 7)
        #expect(try integer("-0") == 0)
        #expect(try integer("1e3") == 1000)
        for (text, got) in [("1e30", "1e+30"), ("18446744073709551616", "1.8446744073709552e+19"), ("1e308", "1e+308"), ("-1", "-1"),
                            ("2.5", "2.5"), ("9223372036854775807", "9.223372036854776e+18"), ("-9223372036854775809", "-9.223372036854776e+18"),
                            ("1001", "1001"), ("4.9e-324", "5e-324")]
        {
            do {
                let value = try integer(text)
                Issue.record("\(text) gave \(value)")
            } catch {
                #expect(error.description == "f.json: k: expected a whole number in 0...1000, got \(got)", "\(text)")
            }
        }
        #expect(JSONCursor.exactInteger(9.223372036854775807e18) == nil, "2^63 does not fit an Int")
        #expect(JSONCursor.exactInteger(-9.223372036854775808e18) == nil)
        #expect(JSONCursor.exactInteger(9.2233720368547748e18) == 9_223_372_036_854_774_784)
        #expect(JSONCursor.exactInteger(.nan) == nil && JSONCursor.exactInteger(-.infinity) == nil)
    }
}
