import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// XML bytes checked before Foundation's `XMLParser` sees them, and the parser made safe to
/// hand them to.
///
/// Why check first: on Linux, `XMLParser` (swift-corelibs-foundation over libxml2) turns each
/// element name, attribute name, processing-instruction target, comment and entity name
/// libxml2 hands it into a `String` with a force-unwrapped strict UTF-8 decoding, and it
/// parses in libxml2's recover mode, which carries on past a byte that is not UTF-8: invalid
/// UTF-8 in a name (`<aud\xE1o/>`, `<?p\xE1 x?>`) kills the process with no way to catch it.
/// The other way out, reading XML through libxml2 directly with its own error reporting,
/// would give NarratorCore a C module, which it stays free of so that it builds wherever
/// Swift and Foundation do. Checking the bytes refuses nothing valid: EPUB and SMIL files
/// are UTF-8 or UTF-16 (with its byte-order mark), and XML allows no other bytes in them.
///
/// What is checked, each refusal one line with its line and column:
/// - the bytes are UTF-8 (shortest forms, no surrogates), or UTF-16 with a byte-order mark,
///   transcoded here to UTF-8 (its declaration rewritten to say so);
/// - every character is one XML 1.0 allows (no NUL or other control characters, no U+FFFE);
/// - an XML declaration names UTF-8 (or UTF-16 for UTF-16 input) if it names an encoding:
///   libxml2 would otherwise transcode from whatever it names;
/// - no DOCTYPE with an internal subset: the parser substitutes entities (libxml2's
///   XML_PARSE_NOENT, which Foundation sets), so declared entities nested ten deep expand a
///   kilobyte into gigabytes ("billion laughs") or name local files. An external DTD
///   (`<!DOCTYPE html PUBLIC … "…dtd">`, as EPUB 2 pages have) is allowed: it is never
///   loaded, external entities are never resolved;
/// - at most 256 MiB (the reader's limit; Foundation passes the length to libxml2 as a 32-bit
///   number, which a file over 2 GiB would overflow).
/// Deep nesting and unclosed tags are the parser's and the delegates' business (libxml2 stops
/// at 256 levels; the delegates count too).
enum XMLInput {
    static func parser(for data: Data) -> XMLParser {
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.externalEntityResolvingPolicy = .never
        return parser
    }

    /// `data` as UTF-8 XML the parser may be given, or the first fault in it.
    static func checked(_ data: Data, path: String) throws(NarratorError) -> Data {
        guard data.count <= InputFile.timingLimit else {
            throw NarratorError(file: path, "larger than \(InputFile.timingLimit >> 20) MiB: too large for a file Narrator reads whole")
        }
        let bytes = [UInt8](data)
        var utf8: [UInt8]
        let utf16: Bool
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            utf8 = try transcodeUTF16(bytes, bigEndian: bytes[0] == 0xFE, path: path)
            utf16 = true
        } else {
            if bytes.starts(with: [0x00, 0x3C]) || bytes.starts(with: [0x3C, 0x00]) {
                throw NarratorError(file: path, place: "line 1, column 1", "UTF-16 without a byte-order mark: save it as UTF-8, or as UTF-16 with its mark")
            }
            utf8 = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? Array(bytes.dropFirst(3)) : bytes
            try validateUTF8(utf8, path: path, xml: true)
            utf16 = false
        }
        try checkDeclaration(&utf8, wasUTF16: utf16, path: path)
        try checkDoctype(utf8, path: path)
        blankProcessingInstructions(&utf8)
        return Data(utf8)
    }

    /// Every processing instruction, the XML declaration included, becomes spaces (its line
    /// breaks kept, so lines and columns stay true). Foundation's delegate call for one hands
    /// `strlen` the instruction's data unchecked, and libxml2 gives none for `<?x?>`, nor for
    /// a declaration it cannot read as one (`<?xml version="1.0" standalon…`), which it then
    /// passes on as an instruction named `xml`: the process dies (SIGSEGV; both found by the
    /// `smil` fuzz target). The declaration has been checked already (`checkDeclaration`) and
    /// the bytes are UTF-8 now, the default without one; Narrator reads no instructions
    /// (`<?xml-stylesheet …?>` means nothing to its timings), so none reaches the parser. Comments and CDATA sections are passed over: a `<?` inside them is text. Outside
    /// them XML allows no raw `<` but markup, so every `<?` there begins an instruction.
    static func blankProcessingInstructions(_ bytes: inout [UInt8]) {
        var index = 0
        func at(_ text: String) -> Bool { bytes[index...].starts(with: text.utf8) }
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "<") else {
                index += 1
                continue
            }
            if at("<!--") {
                index = (find(Array("-->".utf8), in: bytes, from: index + 4).map { $0 + 3 }) ?? bytes.count
            } else if at("<![CDATA[") {
                index = (find(Array("]]>".utf8), in: bytes, from: index + 9).map { $0 + 3 }) ?? bytes.count
            } else if at("<?") {
                let end = (find(Array("?>".utf8), in: bytes, from: index + 2).map { $0 + 2 }) ?? bytes.count
                for position in index..<end where bytes[position] != 0x0A && bytes[position] != 0x0D {
                    bytes[position] = 0x20
                }
                index = end
            } else {
                index += 1
            }
        }
    }

    /// Characters XML 1.0 allows in a document.
    static func isXMLCharacter(_ value: UInt32) -> Bool {
        switch value {
        case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: return true
        default: return false
        }
    }

    /// Counts lines and columns (in characters) as the text is walked, for messages.
    private struct Position {
        var line = 1
        var column = 1
        var afterCR = false

        mutating func advance(past value: UInt32) {
            if value == 0x0A {
                if !afterCR { line += 1 }
                column = 1
            } else if value == 0x0D {
                line += 1
                column = 1
            } else {
                column += 1
            }
            afterCR = value == 0x0D
        }

        var place: String { "line \(line), column \(column)" }
    }

    /// Throws at the first byte that is not UTF-8 (shortest forms only, no surrogates), and
    /// for XML at the first character XML does not allow, with its line and column.
    static func validateUTF8(_ bytes: [UInt8], path: String, xml: Bool) throws(NarratorError) {
        var position = Position()
        var index = 0
        func invalid() -> NarratorError {
            NarratorError(
                file: path, place: position.place,
                "not UTF-8 (byte 0x\(String(bytes[index], radix: 16, uppercase: true))): "
                    + (xml ? "SMIL and XHTML files are UTF-8 or UTF-16" : "timing files are UTF-8, or UTF-16 with its byte-order mark"))
        }
        while index < bytes.count {
            let lead = bytes[index]
            var value: UInt32
            var length: Int
            var lowest: UInt8 = 0x80, highest: UInt8 = 0xBF  // the second byte's range
            switch lead {
            case 0x00...0x7F: value = UInt32(lead); length = 1
            case 0xC2...0xDF: value = UInt32(lead & 0x1F); length = 2
            case 0xE0: value = 0; length = 3; lowest = 0xA0  // no overlong forms
            case 0xE1...0xEC, 0xEE...0xEF: value = UInt32(lead & 0x0F); length = 3
            case 0xED: value = 0xD; length = 3; highest = 0x9F  // no surrogates
            case 0xF0: value = 0; length = 4; lowest = 0x90
            case 0xF1...0xF3: value = UInt32(lead & 0x07); length = 4
            case 0xF4: value = 4; length = 4; highest = 0x8F  // up to U+10FFFF
            default: throw invalid()
            }
            for offset in 1..<length {
                guard index + offset < bytes.count else { throw invalid() }
                let byte = bytes[index + offset]
                let range = offset == 1 ? lowest...highest : 0x80...0xBF
                guard range.contains(byte) else { throw invalid() }
                value = value << 6 | UInt32(byte & 0x3F)
            }
            guard !xml || isXMLCharacter(value) else {
                throw NarratorError(file: path, place: position.place, "\(describe(value)), a character XML does not allow")
            }
            position.advance(past: value)
            index += length
        }
    }

    private static func transcodeUTF16(_ bytes: [UInt8], bigEndian: Bool, path: String) throws(NarratorError) -> [UInt8] {
        var position = Position()
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        guard bytes.count % 2 == 0 else {
            throw NarratorError(file: path, "UTF-16 with an odd number of bytes: the last character is cut")
        }
        func unit(_ index: Int) -> UInt32 {
            bigEndian ? UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1]) : UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index])
        }
        var index = 2  // after the byte-order mark
        while index < bytes.count {
            var value = unit(index)
            var length = 2
            if (0xD800...0xDBFF).contains(value), index + 2 < bytes.count, (0xDC00...0xDFFF).contains(unit(index + 2)) {
                value = 0x10000 + ((value - 0xD800) << 10 | (unit(index + 2) - 0xDC00))
                length = 4
            } else if (0xD800...0xDFFF).contains(value) {
                throw NarratorError(file: path, place: position.place, "not UTF-16: an unpaired surrogate (0x\(String(value, radix: 16, uppercase: true)))")
            }
            guard isXMLCharacter(value) else {
                throw NarratorError(file: path, place: position.place, "\(describe(value)), a character XML does not allow")
            }
            out.append(contentsOf: String(Character(Unicode.Scalar(value)!)).utf8)
            position.advance(past: value)
            index += length
        }
        return out
    }

    private static func describe(_ value: UInt32) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// `<?xml version="1.0" encoding="…"?>`: the encoding named must be what the bytes are.
    /// For UTF-16 input, now UTF-8, the name is rewritten.
    private static func checkDeclaration(_ bytes: inout [UInt8], wasUTF16: Bool, path: String) throws(NarratorError) {
        let open = Array("<?xml".utf8)
        guard bytes.starts(with: open), bytes.count > open.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[open.count]) else { return }
        guard let end = find(Array("?>".utf8), in: bytes, from: open.count) else { return }  // the parser reports it
        let declaration = bytes[open.count..<end]
        guard let key = find(Array("encoding".utf8), in: Array(declaration), from: 0) else { return }
        var index = open.count + key + 8
        while index < end, [0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: "=")].contains(bytes[index]) { index += 1 }
        guard index < end, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else { return }
        let quote = bytes[index]
        let valueStart = index + 1
        guard let valueEnd = bytes[valueStart..<end].firstIndex(of: quote) else { return }
        let name = String(decoding: bytes[valueStart..<valueEnd], as: UTF8.self)
        let allowed: Set<String> = wasUTF16 ? ["UTF-16", "UTF-16LE", "UTF-16BE"] : ["UTF-8"]
        guard allowed.contains(name.uppercased()) else {
            let line = 1 + bytes[..<valueStart].count { $0 == 0x0A }
            throw NarratorError(
                file: path, place: "line \(line)",
                "declares encoding \(WordTimings.shown(name))"
                    + (wasUTF16 ? " but is UTF-16" : "") + ": SMIL and XHTML files are UTF-8 or UTF-16; save it as UTF-8")
        }
        if wasUTF16 { bytes.replaceSubrange(valueStart..<valueEnd, with: Array("UTF-8".utf8)) }
    }

    /// Refuses a DOCTYPE with an internal subset (`<!DOCTYPE x [ … ]>`): looked for in the
    /// prolog only (declarations, comments, processing instructions before the root element).
    private static func checkDoctype(_ bytes: [UInt8], path: String) throws(NarratorError) {
        var index = 0
        func at(_ text: String) -> Bool { bytes[index...].starts(with: text.utf8) }
        while index < bytes.count {
            if [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) {
                index += 1
            } else if at("<?") {
                guard let end = find(Array("?>".utf8), in: bytes, from: index + 2) else { return }
                index = end + 2
            } else if at("<!--") {
                guard let end = find(Array("-->".utf8), in: bytes, from: index + 4) else { return }
                index = end + 3
            } else if at("<!DOCTYPE") {
                let line = 1 + bytes[..<index].count { $0 == 0x0A }
                var quote: UInt8? = nil
                var scan = index + 9
                while scan < bytes.count {
                    let byte = bytes[scan]
                    if let open = quote {
                        if byte == open { quote = nil }
                    } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                        quote = byte
                    } else if byte == UInt8(ascii: "[") {
                        throw NarratorError(
                            file: path, place: "line \(line)",
                            "a DOCTYPE with declarations ([…]) is not read: its entities could expand without bound")
                    } else if byte == UInt8(ascii: ">") {
                        return
                    }
                    scan += 1
                }
                return
            } else {
                return
            }
        }
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        var index = start
        while index <= bytes.count - needle.count {
            if bytes[index] == needle[0], bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}
