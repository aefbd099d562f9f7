import Foundation
import NarratorTestSupport
import Testing

@testable import NarratorCore
@testable import NarratorEngine

/// SMIL files and the XHTML pages they name, with the bytes that killed Foundation's
/// XMLParser on Linux (invalid UTF-8 in a name) and the other ways XML can hurt a reader:
/// NUL bytes, entity expansion, deep nesting, unclosed tags, other encodings. Each is a file
/// read through `WordTimings.read`, as the CLI reads it; each must be one line naming the file
/// and where, and fast.
@Suite struct HostileXMLTests {
    static func bytes(_ parts: [Any]) -> Data {
        var data = Data()
        for part in parts {
            if let text = part as? String { data.append(contentsOf: Array(text.utf8)) } else { data.append(contentsOf: (part as? [UInt8]) ?? (part as! [Int]).map { UInt8($0) }) }
        }
        return data
    }

    static func smil(page: String = "p.xhtml", id: String = "a") -> String {
        #"<smil xmlns="http://www.w3.org/ns/SMIL"><body><par><text src="\#(page)#\#(id)"/><audio src="a.wav" clipBegin="0s" clipEnd="1s"/></par></body></smil>"#
    }

    static func read(_ dir: TempDir, _ name: String, _ data: Data) -> Result<TimingImport, NarratorError> {
        let path = dir.write(name, data: data)
        return Result { () throws(NarratorError) in try WordTimings.read(path: path, rate: 48000) }
    }

    static func expectError(
        _ result: Result<TimingImport, NarratorError>, file: String, place: String?, message: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        switch result {
        case .success(let imported): Issue.record("accepted: \(imported.words)", sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(error.file.hasSuffix("/" + file), "\(error)", sourceLocation: sourceLocation)
            #expect(error.place == place, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.hasPrefix(message), "\(error)", sourceLocation: sourceLocation)
            #expect(!error.description.contains("\n"), sourceLocation: sourceLocation)
        }
    }

    /// The bytes of the issue, and their relatives: a name, an attribute name, a PI target, a
    /// comment, an entity name, a namespace prefix; the column counts characters.
    @Test func invalidUTF8AnywhereIsRefusedWithItsPosition() {
        let dir = TempDir()
        defer { dir.remove() }
        let cases: [(Data, String)] = [
            (Self.bytes(["<smil><body><par><aud", [0xE1], "o/></par></body></smil>"]), "line 1, column 22"),
            (Self.bytes(["<?p", [0xE1], " x?>\n<smil/>"]), "line 1, column 4"),
            (Self.bytes(["<smil>\n  <body a", [0xE1], "b=\"1\"/>\n</smil>"]), "line 2, column 10"),
            (Self.bytes(["<smil><!-- ", [0xFF], " --></smil>"]), "line 1, column 12"),
            (Self.bytes(["<smil>&a", [0xE1], ";</smil>"]), "line 1, column 9"),
            (Self.bytes(["<smil xmlns:p", [0xE1], "=\"u\"/>"]), "line 1, column 14"),
            // Overlong "/", a surrogate, past U+10FFFF, a cut sequence, a lone continuation byte.
            (Self.bytes(["<smil a=\"", [0xC0, 0xAF], "\"/>"]), "line 1, column 10"),
            (Self.bytes(["<smil a=\"", [0xED, 0xA0, 0x80], "\"/>"]), "line 1, column 10"),
            (Self.bytes(["<smil a=\"", [0xF4, 0x90, 0x80, 0x80], "\"/>"]), "line 1, column 10"),
            (Self.bytes(["<smil/>\r\n\r\n<", [0xE2, 0x82]]), "line 3, column 2"),
            (Self.bytes(["<smil>é", [0x80], "</smil>"]), "line 1, column 8"),
        ]
        for (number, (data, place)) in cases.enumerated() {
            Self.expectError(Self.read(dir, "bad\(number).smil", data), file: "bad\(number).smil", place: place, message: "not UTF-8 (byte 0x")
        }
    }

    /// The page a SMIL file names is read through the same check: its error names the page.
    @Test func invalidUTF8InThePageIsAnErrorNamingThePage() {
        let dir = TempDir()
        defer { dir.remove() }
        dir.write("p.xhtml", data: Self.bytes(["<html><body>\n<sp", [0xE1], "n id=\"a\">apple</span></body></html>"]))
        Self.expectError(Self.read(dir, "t.smil", Data(Self.smil().utf8)), file: "p.xhtml", place: "line 2, column 4", message: "not UTF-8 (byte 0xE1)")
        dir.write("q.xhtml", data: Self.bytes(["<?x", [0xE1], " y?><html/>"]))
        Self.expectError(Self.read(dir, "u.smil", Data(Self.smil(page: "q.xhtml").utf8)), file: "q.xhtml", place: "line 1, column 4", message: "not UTF-8")
    }

    /// NUL and the other characters XML forbids, which are valid UTF-8.
    @Test func charactersXMLForbidsAreRefused() {
        let dir = TempDir()
        defer { dir.remove() }
        Self.expectError(Self.read(dir, "nul.smil", Self.bytes(["<smil>\n<bo", [0x00], "dy/></smil>"])), file: "nul.smil", place: "line 2, column 4", message: "U+0000, a character XML does not allow")
        Self.expectError(Self.read(dir, "c1.smil", Self.bytes(["<smil a=\"", [0x01], "\"/>"])), file: "c1.smil", place: "line 1, column 10", message: "U+0001")
        Self.expectError(Self.read(dir, "fffe.smil", Self.bytes(["<smil>", [0xEF, 0xBF, 0xBE], "</smil>"])), file: "fffe.smil", place: "line 1, column 7", message: "U+FFFE")
        Self.expectError(Self.read(dir, "u16.smil", Self.bytes([[0x3C, 0x00, 0x73, 0x00]])), file: "u16.smil", place: "line 1, column 1", message: "UTF-16 without a byte-order mark")
    }

    /// Entity declarations could expand a small file into gigabytes (nested: "billion laughs";
    /// one big entity used many times: quadratic) or read local files: a DOCTYPE with an
    /// internal subset is refused before parsing. An external DTD, never loaded, is fine.
    @Test func entityDeclarationsAreRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var laughs = #"<?xml version="1.0"?>"# + "\n<!DOCTYPE smil [\n <!ENTITY l0 \"ha\">\n"
        for level in 1...30 { laughs += " <!ENTITY l\(level) \"" + String(repeating: "&l\(level - 1);", count: 10) + "\">\n" }
        laughs += "]>\n<smil><body><par><text src=\"p.xhtml#&l30;\"/><audio clipBegin=\"0s\" clipEnd=\"1s\"/></par></body></smil>"
        let started = ContinuousClock.now
        Self.expectError(Self.read(dir, "laughs.smil", Data(laughs.utf8)), file: "laughs.smil", place: "line 2", message: "a DOCTYPE with declarations")
        let big = String(repeating: "x", count: 100_000)
        let quadratic = "<!-- a comment first -->\n<!DOCTYPE smil [<!ENTITY x \"\(big)\">]><smil>" + String(repeating: "&x;", count: 100_000) + "</smil>"
        Self.expectError(Self.read(dir, "quadratic.smil", Data(quadratic.utf8)), file: "quadratic.smil", place: "line 2", message: "a DOCTYPE with declarations")
        let external = "<!DOCTYPE smil [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><smil>&x;</smil>"
        Self.expectError(Self.read(dir, "external.smil", Data(external.utf8)), file: "external.smil", place: "line 1", message: "a DOCTYPE with declarations")
        // The same entities in the page.
        dir.write("p.xhtml", laughs.replacingOccurrences(of: "<smil>", with: "<html><span id=\"a\">&l30;</span>").replacingOccurrences(of: "</smil>", with: "</html>"))
        Self.expectError(Self.read(dir, "t.smil", Data(Self.smil().utf8)), file: "p.xhtml", place: "line 2", message: "a DOCTYPE with declarations")
        #expect(ContinuousClock.now - started < .seconds(5))

        // EPUB 2 pages declare the XHTML DTD: not loaded, the page reads (a bracket inside
        // its quoted identifiers is not an internal subset).
        dir.write(
            "e.xhtml",
            #"<?xml version="1.0" encoding="utf-8"?>"# + "\n"
                + #"<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd?[x]">"#
                + #"<html xmlns="http://www.w3.org/1999/xhtml"><body><p><span id="a">apple &amp; pear</span></p></body></html>"#)
        let imported = try Self.read(dir, "e.smil", Data(Self.smil(page: "e.xhtml").utf8)).get()
        #expect(imported.words.map(\.text) == ["apple & pear"] && imported.notes.isEmpty, "\(imported.words) \(imported.notes)")
    }

    @Test func deepNestingAndUnclosedTags() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let started = ContinuousClock.now
        let deep = "<smil>" + String(repeating: "<seq>", count: 100_000) + String(repeating: "</seq>", count: 100_000) + "</smil>"
        switch Self.read(dir, "deep.smil", Data(deep.utf8)) {
        case .success: Issue.record("100,000 levels accepted")
        case .failure(let error): #expect(error.place == "line 1" && !error.description.contains("\n"), "\(error)")
        }
        // Under the parser's own limit, over the readers' (the page's elements are counted too).
        let page = "<html><body>" + String(repeating: "<span>", count: 250) + "<span id=\"a\">x</span>" + String(repeating: "</span>", count: 250) + "</body></html>"
        dir.write("p.xhtml", page)
        switch Self.read(dir, "t.smil", Data(Self.smil().utf8)) {
        case .success(let imported): #expect(imported.words.map(\.text) == ["a"] || imported.words.map(\.text) == ["x"])
        case .failure(let error): #expect(error.file.hasSuffix("p.xhtml") && error.message.contains("nested deeper than 256"), "\(error)")
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        Self.expectError(Self.read(dir, "open.smil", Data("<smil><body><par>\n<text src=\"p.xhtml#a\"/>".utf8)), file: "open.smil", place: "line 2", message: "not well-formed XML")
        Self.expectError(Self.read(dir, "empty.smil", Data("   ".utf8)), file: "empty.smil", place: "line 1", message: "not SMIL")
        Self.expectError(Self.read(dir, "tiny.smil", Data("<a".utf8)), file: "tiny.smil", place: "line 1", message: "not SMIL")
    }

    /// Nested elements with ids, all named: the text collected for them is bounded.
    @Test func collectedTextIsBounded() {
        let dir = TempDir()
        defer { dir.remove() }
        let depth = 200
        var page = "<html><body>"
        for level in 0..<depth { page += "<span id=\"s\(level)\">" }
        page += String(repeating: "word ", count: 20_000) + String(repeating: "</span>", count: depth) + "</body></html>"
        dir.write("p.xhtml", page)
        var smil = "<smil><body>"
        for level in 0..<depth { smil += "<par><text src=\"p.xhtml#s\(level)\"/><audio clipBegin=\"\(level)s\" clipEnd=\"\(level)s\"/></par>" }
        smil += "</body></smil>"
        Self.expectError(Self.read(dir, "t.smil", Data(smil.utf8)), file: "p.xhtml", place: "line 1", message: "the elements the SMIL file names hold over 16 MiB of text")
    }

    /// Encodings: UTF-16 with its mark is transcoded (the declaration too) and reads the same
    /// words as UTF-8; any other declared encoding is refused, as is a lie about UTF-16.
    @Test func encodings() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let page = #"<?xml version="1.0" encoding="UTF-16"?>"# + "\n<html><body><span id=\"a\">naïve 🙂</span></body></html>"
        let smil = #"<?xml version='1.0' encoding='utf-16'?>"# + "\n" + Self.smil()
        func utf16(_ text: String, bigEndian: Bool) -> Data {
            var data = Data(bigEndian ? [0xFE, 0xFF] : [0xFF, 0xFE])
            for unit in text.utf16 { data.append(contentsOf: bigEndian ? [UInt8(unit >> 8), UInt8(unit & 0xFF)] : [UInt8(unit & 0xFF), UInt8(unit >> 8)]) }
            return data
        }
        for bigEndian in [false, true] {
            dir.write("p.xhtml", data: utf16(page, bigEndian: bigEndian))
            let imported = try Self.read(dir, "t.smil", utf16(smil, bigEndian: bigEndian)).get()
            #expect(imported.words == [WordTiming(index: 0, text: "naïve 🙂", startFrame: 0, endFrame: 48000)])
        }
        // A UTF-8 byte-order mark is fine.
        dir.write("p.xhtml", data: Data([0xEF, 0xBB, 0xBF]) + Data("<html><span id=\"a\">pear</span></html>".utf8))
        #expect(try Self.read(dir, "bom.smil", Data([0xEF, 0xBB, 0xBF]) + Data(Self.smil().utf8)).get().words.map(\.text) == ["pear"])

        var unpaired = utf16("<smil>", bigEndian: false)
        unpaired.append(contentsOf: [0x00, 0xD8, 0x41, 0x00])
        Self.expectError(Self.read(dir, "unpaired.smil", unpaired), file: "unpaired.smil", place: "line 1, column 7", message: "not UTF-16: an unpaired surrogate")
        Self.expectError(Self.read(dir, "odd.smil", utf16("<smil/>", bigEndian: true) + Data([0x00])), file: "odd.smil", place: nil, message: "UTF-16 with an odd number of bytes")
        let latin = Data(#"<?xml version="1.0" encoding="ISO-8859-1"?><smil/>"#.utf8)
        Self.expectError(Self.read(dir, "latin.smil", latin), file: "latin.smil", place: "line 1", message: "declares encoding 'ISO-8859-1': SMIL and XHTML files are UTF-8 or UTF-16")
        let lie = Data(#"<?xml version="1.0" encoding="UTF-16"?><smil/>"#.utf8)
        Self.expectError(Self.read(dir, "lie.smil", lie), file: "lie.smil", place: "line 1", message: "declares encoding 'UTF-16'")
        Self.expectError(Self.read(dir, "lie16.smil", utf16(#"<?xml version="1.0" encoding="UTF-8"?><smil/>"#, bigEndian: false)), file: "lie16.smil", place: "line 1", message: "declares encoding 'UTF-8' but is UTF-16")
    }

    /// A page that is not a regular file (a FIFO would block the reader for ever) is a note,
    /// as a missing page is; the timing file itself is refused.
    @Test func pagesAndFilesThatAreNotRegularFiles() throws {
        let dir = TempDir()
        defer { dir.remove() }
        #expect(mkfifo(dir.file("p.xhtml"), 0o600) == 0)
        let imported = try Self.read(dir, "t.smil", Data(Self.smil().utf8)).get()
        #expect(imported.words.map(\.text) == ["a"])
        #expect(imported.notes == ["\(dir.path)/p.xhtml: not a regular file (a device, pipe or socket); words are named by their ids"], "\(imported.notes)")
        #expect(mkfifo(dir.file("f.srt"), 0o600) == 0)
        #expect(throws: NarratorError(file: dir.file("f.srt"), "not a regular file (a device, pipe or socket)")) {
            try WordTimings.read(path: dir.file("f.srt"), rate: 48000)
        }
        // `../` in a page reference leaves the folder like any relative path; /dev/zero never ends.
        let zero = try Self.read(dir, "z.smil", Data(Self.smil(page: String(repeating: "../", count: 30) + "dev/zero").utf8)).get()
        #expect(zero.notes.count == 1 && zero.notes[0].contains("not a regular file"), "\(zero.notes)")
    }
}
