import Foundation
import NarratorTestSupport
import Testing

@testable import NarratorCore
@testable import NarratorEngine

/// Words with markup characters through every format Narrator writes and back; what the SRT
/// reader takes for markup and what it keeps.
@Suite struct CueTextTests {
    /// Words a narration can hold that look like markup to one reader or another.
    static let texts = [
        "<Jerry>", "a<b", "x > y", "Tom & Jerry", "&amp;", "&lt;i&gt;", "\"quoted\"", "'single'", "<i>", "</b>", "<br>",
        "<font color=\"red\">", "{\\an8}", "{y:i}", "{curly}", "&#60;", "AT&T;", "naïve", "日本語", "🙂", "-->", "1",
    ]

    static func words(_ texts: [String]) -> [WordTiming] {
        texts.enumerated().map { WordTiming(index: $0, text: $1, startFrame: $0 * 4800, endFrame: $0 * 4800 + 2400) }
    }

    @Test(arguments: ["srt", "vtt", "json", "txt", "smil"])
    func markupCharactersRoundTrip(ext: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let path = dir.file("out." + ext)
        try WordTimings.write(Self.words(Self.texts), rate: 48000, to: path)
        let back = try WordTimings.read(path: path, rate: 48000)
        #expect(back.words.map(\.text) == Self.texts)
        #expect(back.words == Self.words(Self.texts))
    }

    /// SMIL names its page by a URL reference: a file name with `%`, `#` or a space reads back.
    @Test func smilPageNamesAreURLReferences() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for name in ["a%41 b#c.smil", "50%.smil", "naïve?.smil"] {
            let path = dir.file(name)
            try WordTimings.write(Self.words(["one", "two"]), rate: 48000, to: path)
            let back = try WordTimings.read(path: path, rate: 48000)
            #expect(back.words.map(\.text) == ["one", "two"] && back.notes.isEmpty, "\(name): \(back.notes)")
        }
    }

    /// What the SRT writer puts in the file: references for what players read as markup.
    @Test func srtWriterEscapesMarkup() {
        let srt = SubRip.write(Self.words(["<Jerry> & {\\an8}{y:i}{ok}", "two\nlines\n\nhere"]), rate: 48000)
        #expect(srt == "1\n00:00:00,000 --> 00:00:00,050\n&lt;Jerry&gt; &amp; &#123;\\an8}&#123;y:i}{ok}\n\n2\n00:00:00,100 --> 00:00:00,150\ntwo lines here\n\n")
    }

    /// Files written by other tools: SubRip's formatting tags and override blocks go, any other
    /// `<` stays, references are decoded once.
    @Test func srtReaderStripsOnlyFormatting() throws {
        let cues: [(String, String)] = [
            ("<i>it</i>", "it"),
            ("<B>bold</B> <u>under</u> <s>struck</s>", "bold under struck"),
            ("<font color=\"#ff0000\" face='Arial'>red</font>", "red"),
            ("{\\an8}top", "top"),
            ("{\\pos(10,20)}{\\c&H00FF00&}green", "green"),
            ("a<br>b<br/>c<BR />d", "a b c d"),
            ("<Jerry>", "<Jerry>"),
            ("x < y > z", "x < y > z"),
            ("<ii>not a tag</ii>", "<ii>not a tag</ii>"),
            ("<i", "<i"),
            ("&lt;Jerry&gt; &amp;lt; &quot;q&quot; &apos;a&apos; &#60;&#x3E; &#X3c;", "<Jerry> &lt; \"q\" 'a' <> <"),
            ("AT&T & Co; &unknown; &#0; &#xD800; &#1114112; &#; &", "AT&T & Co; &unknown; &#0; &#xD800; &#1114112; &#; &"),
            ("{curly} {y:i}", "{curly} {y:i}"),
            ("&lt;i&gt;shown&lt;/i&gt;", "<i>shown</i>"),
        ]
        var srt = ""
        for (number, (text, _)) in cues.enumerated() {
            srt += "\(number + 1)\n00:00:\(String(format: "%02d", number)),000 --> 00:00:\(String(format: "%02d", number)),500\n\(text)\n\n"
        }
        let words = try WordTimings.parse(Data(srt.utf8), path: "t.srt", rate: 48000)
        #expect(words.map(\.text) == cues.map(\.1))
    }

    /// The same references in WebVTT cue text, where `<` always opens a tag.
    @Test func webVTTDecodesReferences() throws {
        let vtt = "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n<v Jerry>&lt;Jerry&gt; &#38; &quot;Tom&quot;</v>\n"
        #expect(try WordTimings.parse(Data(vtt.utf8), path: "t.vtt", rate: 48000).map(\.text) == ["<Jerry> & \"Tom\""])
    }
}

@Suite struct TextEncodingTests {
    /// A text timing file that is not UTF-8 names the first bad byte's line and column.
    @Test func invalidUTF8IsPlaced() {
        var data = Data("1\n00:00:00,000 --> 00:00:01,000\nna".utf8)
        data.append(0xEF)
        data.append(contentsOf: Array("ve\n".utf8))
        #expect(throws: NarratorError(file: "t.srt", place: "line 3, column 3", "not UTF-8 (byte 0xEF): timing files are UTF-8, or UTF-16 with its byte-order mark")) {
            try WordTimings.parse(data, path: "t.srt", rate: 48000)
        }
    }
}
