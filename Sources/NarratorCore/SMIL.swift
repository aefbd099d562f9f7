import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// SMIL timing: EPUB 3 Media Overlays and aeneas's SMIL output. Each `<par>` pairs a
/// `<text src="page.xhtml#id"/>` with an `<audio clipBegin=… clipEnd=…/>`; the word's text is
/// the element with that id in the XHTML file (read when it sits where `src` says, relative to
/// the SMIL file), else the id itself.
enum SMIL {
    static func parse(_ data: Data, path: String) throws(NarratorError) -> (entries: [WordTimings.Entry], notes: [String]) {
        let reader = ParReader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        let wellFormed = parser.parse()
        if let problem = reader.problem { throw NarratorError(file: path, place: reader.problemPlace, problem) }
        guard wellFormed else {
            throw NarratorError(file: path, place: "line \(parser.lineNumber)", "not well-formed XML")
        }
        guard reader.sawSMIL else { throw NarratorError(file: path, place: "line 1", "not SMIL: the root element is not <smil>") }

        var notes: [String] = []
        var pages: [String: [String: String]] = [:]
        var entries: [WordTimings.Entry] = []
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        for par in reader.pars {
            var text = par.fragment ?? ""
            if let page = par.page {
                if pages[page] == nil {
                    let url = folder.appendingPathComponent(page)
                    if let pageData = try? Data(contentsOf: url) {
                        pages[page] = TextsByID.read(pageData)
                        if pages[page]!.isEmpty { notes.append("\(url.path): no element with an id could be read; words are named by their ids") }
                    } else {
                        pages[page] = [:]
                        notes.append("\(url.path): not found; words are named by their ids")
                    }
                }
                if let fragment = par.fragment, let found = pages[page]?[fragment], !found.isEmpty { text = found }
            }
            entries.append(WordTimings.Entry(text: text, start: par.begin, end: par.end, place: "line \(par.line) '\(text)'"))
        }
        return (entries, notes)
    }

    /// A SMIL clock value in seconds: `hh:mm:ss.fff`, `mm:ss.fff`, or a timecount (`2.5s`,
    /// `1500ms`, `0.5min`, `1h`, or plain seconds).
    static func clock(_ value: String) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if text.contains(":") {
            let fields = text.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 2 || fields.count == 3, let seconds = Double(fields.last!), seconds >= 0, seconds < 60 else { return nil }
            let minutes = Int(fields[fields.count - 2])
            let hours = fields.count == 3 ? Int(fields[0]) : 0
            guard let minutes, let hours, minutes >= 0, minutes < 60 || fields.count == 2, hours >= 0 else { return nil }
            return Double(hours * 3600 + minutes * 60) + seconds
        }
        for (suffix, scale) in [("ms", 0.001), ("min", 60.0), ("h", 3600.0), ("s", 1.0)] where text.hasSuffix(suffix) {
            guard let number = Double(text.dropLast(suffix.count)), number >= 0 else { return nil }
            return number * scale
        }
        guard let number = Double(text), number >= 0 else { return nil }
        return number
    }

    /// SMIL for `words` and the XHTML page that holds their text (`page`, named relative to the
    /// SMIL file), with clip times in seconds to the microsecond: exact to the frame.
    static func write(_ words: [WordTiming], rate: Int, page: String, audio: String) -> (smil: String, xhtml: String) {
        func seconds(_ frame: Int) -> String { String(format: "%.6fs", Double(frame) / Double(rate)) }
        var smil = """
            <?xml version="1.0" encoding="UTF-8"?>
            <smil xmlns="http://www.w3.org/ns/SMIL" xmlns:epub="http://www.idpf.org/2007/ops" version="3.0">
              <body>
                <seq id="seq1" epub:textref="\(escape(page))">

            """
        var xhtml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">
              <head><title>\(escape(audio))</title></head>
              <body>
                <p>
            """
        for (number, word) in words.enumerated() {
            let id = String(format: "w%04d", number + 1)
            smil += """
                      <par id="par\(number + 1)">
                        <text src="\(escape(page))#\(id)"/>
                        <audio src="\(escape(audio))" clipBegin="\(seconds(word.startFrame))" clipEnd="\(seconds(word.endFrame))"/>
                      </par>

                """
            xhtml += (number == 0 ? "" : " ") + "<span id=\"\(id)\">\(escape(word.text))</span>"
        }
        smil += "    </seq>\n  </body>\n</smil>\n"
        xhtml += "</p>\n  </body>\n</html>\n"
        return (smil, xhtml)
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// Collects `<par>` elements: their text reference and audio clip.
    private final class ParReader: NSObject, XMLParserDelegate {
        struct Par {
            var page: String?
            var fragment: String?
            var begin: Double
            var end: Double
            var line: Int
        }
        var pars: [Par] = []
        var sawSMIL = false
        var problem: String?
        var problemPlace: String?
        private var current: (text: String?, audio: (begin: Double, end: Double)?, line: Int)?

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            let local = name.split(separator: ":").last.map(String.init) ?? name
            switch local {
            case "smil": sawSMIL = true
            case "par": current = (nil, nil, parser.lineNumber)
            case "text": current?.text = attributes["src"]
            case "audio":
                guard current != nil else { return }
                guard let beginText = attributes["clipBegin"], let endText = attributes["clipEnd"] else {
                    fail(parser, "<audio> needs clipBegin and clipEnd")
                    return
                }
                guard let begin = SMIL.clock(beginText), let end = SMIL.clock(endText) else {
                    fail(parser, "bad clock value in clipBegin='\(beginText)' clipEnd='\(endText)'")
                    return
                }
                current?.audio = (begin, end)
            default: break
            }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            let local = name.split(separator: ":").last.map(String.init) ?? name
            guard local == "par", let par = current else { return }
            current = nil
            guard let audio = par.audio else {
                fail(parser, "a <par> without <audio clipBegin clipEnd>", line: par.line)
                return
            }
            let parts = (par.text ?? "").split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
            let page = parts.first.flatMap { $0.isEmpty ? nil : String($0) }
            let fragment = parts.count == 2 ? String(parts[1]) : nil
            pars.append(Par(page: page, fragment: fragment, begin: audio.begin, end: audio.end, line: par.line))
        }

        private func fail(_ parser: XMLParser, _ message: String, line: Int? = nil) {
            if problem == nil {
                problem = message
                problemPlace = "line \(line ?? parser.lineNumber)"
            }
            parser.abortParsing()
        }
    }

    /// The text of every element with an id, in an XHTML page.
    private final class TextsByID: NSObject, XMLParserDelegate {
        private var open: [(id: String?, text: String)] = []
        private var found: [String: String] = [:]

        static func read(_ data: Data) -> [String: String] {
            let reader = TextsByID()
            let parser = XMLParser(data: data)
            parser.delegate = reader
            _ = parser.parse()
            return reader.found
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            open.append((attributes["id"], ""))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            for index in open.indices { open[index].text += string }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            guard let element = open.popLast() else { return }
            if let id = element.id { found[id] = element.text.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        }
    }
}
