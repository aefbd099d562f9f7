import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// SMIL timing: EPUB 3 Media Overlays and aeneas's SMIL output. Each `<par>` pairs a
/// `<text src="page.xhtml#id"/>` with an `<audio clipBegin=… clipEnd=…/>`; the word's text is
/// the element with that id in the XHTML file (read when it sits where `src` says, relative to
/// the SMIL file), else the id itself.
///
/// Sentences: the words of one sentence element of the page (the nearest ancestor of a word's
/// element whose `class` has the token `sentence`, as in `<span class="sentence">`) are one
/// sentence; else the `<par>`s of one `<seq>` whose `epub:textref` names an element (`#id`)
/// are; else the words are split by their punctuation (`Sentences.group`).
enum SMIL {
    /// The deepest nesting of elements read (libxml2's own default limit): SMIL and XHTML
    /// pages nest a dozen deep.
    static let maxDepth = 256
    /// The most text collected for the elements the `<par>`s name, counted once per element
    /// it belongs to: nested elements with ids could otherwise repeat a page's text hundreds
    /// of times.
    static let maxCollectedText = 16 << 20

    static func parse(_ data: Data, path: String) throws(NarratorError) -> (entries: [WordTimings.Entry], notes: [String]) {
        let reader = ParReader()
        let parser = XMLInput.parser(for: try XMLInput.checked(data, path: path))
        parser.delegate = reader
        let wellFormed = parser.parse()
        if let problem = reader.problem { throw NarratorError(file: path, place: reader.problemPlace, problem) }
        // libxml2's recover mode lets some faults through with success: an error reported on the
        // way, or an element still open at the end (an unclosed tag), is not well-formed too.
        guard wellFormed, parser.parserError == nil, reader.depth == 0 else {
            throw NarratorError(file: path, place: "line \(parser.lineNumber)", "not well-formed XML")
        }
        guard reader.sawSMIL else { throw NarratorError(file: path, place: "line 1", "not SMIL: the root element is not <smil>") }

        var notes: [String] = []
        // Pages by the file they resolve to (`p.xhtml` and `./p.xhtml` are read once), and
        // what is wanted from each: the ids the pars name.
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        func file(of page: String) -> String {
            // `src` is a URL reference: `chapter%201.xhtml` names `chapter 1.xhtml`.
            folder.appendingPathComponent(page.removingPercentEncoding ?? page).standardizedFileURL.path
        }
        var pages: [String: [String: TextsByID.Found]] = [:]
        // Groups by what makes them: a page's sentence element, a `<seq>`.
        var groups: [String: Int] = [:]
        func group(_ key: String) -> Int {
            if let known = groups[key] { return known }
            groups[key] = groups.count
            return groups.count - 1
        }
        var wanted: [String: Set<String>] = [:]
        for par in reader.pars { if let page = par.page, let fragment = par.fragment { wanted[file(of: page), default: []].insert(fragment) } }
        var pageBytes = 0
        var unread = 0
        var entries: [WordTimings.Entry] = []
        for par in reader.pars {
            var text = par.fragment ?? ""
            var sentence = par.seq.map { group("seq \($0)") }
            if let file = par.page.map(file(of:)) {
                let page = file
                if pages[page] == nil {
                    pages[page] = [:]
                    switch Result(catching: { () throws(NarratorError) in try InputFile.read(path: file, limit: InputFile.timingLimit) }) {
                    case .failure(let error):
                        // A note per page, up to ten (a hostile file can name a million).
                        unread += 1
                        let reason = FileManager.default.fileExists(atPath: file) ? error.message : "not found"
                        if unread <= 10 { notes.append("\(file): \(reason); words are named by their ids") }
                    case .success(let pageData):
                        pageBytes += pageData.count
                        guard pageBytes <= InputFile.timingLimit else {
                            throw NarratorError(
                                file: path, place: "line \(par.line)", "the pages this file names add up to over \(InputFile.timingLimit >> 20) MiB")
                        }
                        // A page that is there but hostile (bad bytes, entities, depth) is an error.
                        pages[page] = try TextsByID.read(pageData, path: file, ids: wanted[page] ?? [])
                        if pages[page]!.isEmpty { notes.append("\(file): no element with an id could be read; words are named by their ids") }
                    }
                }
                if let fragment = par.fragment, let found = pages[page]?[fragment] {
                    if !found.text.isEmpty { text = found.text }
                    if let element = found.sentence { sentence = group("\(page)\u{0}\(element)") }
                }
            }
            entries.append(
                WordTimings.Entry(text: text, start: par.begin, end: par.end, place: "line \(par.line) \(WordTimings.shown(text))", group: sentence))
        }
        if unread > 10 { notes.append("\(path): \(unread - 10) more pages it names could not be read") }
        return (entries, notes)
    }

    /// A SMIL clock value in seconds: `hh:mm:ss.fff`, `mm:ss.fff`, or a timecount (`2.5s`,
    /// `1500ms`, `0.5min`, `1h`, or plain seconds). Fields are plain decimals (no sign,
    /// exponent, "inf" or "nan"); the arithmetic is in Double, so a clock of 10^30 hours is a
    /// number (refused later as beyond any audio), not an overflow.
    static func clock(_ value: String) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if text.contains(":") {
            let fields = text.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 2 || fields.count == 3, let seconds = WordTimings.plainNumber(fields.last!), seconds < 60,
                let minutes = WordTimings.digits(fields[fields.count - 2], count: 1...2), minutes < 60 || fields.count == 2
            else { return nil }
            guard fields.count == 3 else { return Double(minutes) * 60 + seconds }
            guard let hours = WordTimings.plainNumber(fields[0]), !fields[0].contains(".") else { return nil }
            return hours * 3600 + Double(minutes) * 60 + seconds
        }
        for (suffix, scale) in [("ms", 0.001), ("min", 60.0), ("h", 3600.0), ("s", 1.0)] where text.hasSuffix(suffix) {
            return WordTimings.plainNumber(text.dropLast(suffix.count)).map { $0 * scale }
        }
        return WordTimings.plainNumber(text[...])
    }

    /// SMIL for `words` and the XHTML page that holds their text (`page`, named relative to the
    /// SMIL file), with clip times in seconds to the microsecond: exact to the frame. Each of
    /// `sentences` (by the words' indexes) is a `<span class="sentence">` of the page, which
    /// `parse` reads back as the sentence.
    static func write(
        _ words: [WordTiming], rate: Int, page: String, audio: String, sentences: [SentenceTiming] = []
    ) -> (smil: String, xhtml: String) {
        func seconds(_ frame: Int) -> String { String(format: "%.6fs", Double(frame) / Double(rate)) }
        var smil = """
            <?xml version="1.0" encoding="UTF-8"?>
            <smil xmlns="http://www.w3.org/ns/SMIL" xmlns:epub="http://www.idpf.org/2007/ops" version="3.0">
              <body>
                <seq id="seq1" epub:textref="\(escape(reference(page)))">

            """
        var xhtml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">
              <head><title>\(escape(audio))</title></head>
              <body>
                <p>
            """
        var sentence = 0
        var inside: Int? = nil
        for (number, word) in words.enumerated() {
            let id = String(format: "w%04d", number + 1)
            // The sentence of this word, if any (both in order).
            while sentence < sentences.count, sentences[sentence].words.upperBound < word.index { sentence += 1 }
            let this = sentence < sentences.count && sentences[sentence].words.contains(word.index) ? sentence : nil
            smil += """
                      <par id="par\(number + 1)">
                        <text src="\(escape(reference(page)))#\(id)"/>
                        <audio src="\(escape(reference(audio)))" clipBegin="\(seconds(word.startFrame))" clipEnd="\(seconds(word.endFrame))"/>
                      </par>

                """
            if this != inside {
                if inside != nil { xhtml += "</span>" }
                xhtml += number == 0 ? "" : " "
                if this != nil { xhtml += "<span class=\"sentence\">" }
            } else if number > 0 {
                xhtml += " "
            }
            inside = this
            xhtml += "<span id=\"\(id)\">\(escape(word.text))</span>"
        }
        if inside != nil { xhtml += "</span>" }
        smil += "    </seq>\n  </body>\n</smil>\n"
        xhtml += "</p>\n  </body>\n</html>\n"
        return (smil, xhtml)
    }

    /// A file name as a relative URL reference (`src` is one, and the reader decodes it):
    /// `chapter 1%.xhtml` is `chapter%201%25.xhtml`.
    static func reference(_ name: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "#?;")
        return name.addingPercentEncoding(withAllowedCharacters: allowed) ?? name
    }

    /// Text for an attribute or element: markup escaped, and a character XML does not allow
    /// (a control character a JSON file can hold) written as U+FFFD, so that the file reads back.
    static func escape(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            default: out.append(XMLInput.isXMLCharacter(scalar.value) ? scalar : "\u{FFFD}")
            }
        }
        return String(out)
    }

    /// Collects `<par>` elements: their text reference and audio clip.
    private final class ParReader: NSObject, XMLParserDelegate {
        struct Par {
            var page: String?
            var fragment: String?
            var begin: Double
            var end: Double
            var line: Int
            /// The `<seq>` it is in (by its order in the file), when that names an element.
            var seq: Int?
        }
        var pars: [Par] = []
        /// Per open `<seq>`: its number when its `epub:textref` names an element (`#id`).
        private var seqs: [Int?] = []
        private var seqCount = 0
        var sawSMIL = false
        var problem: String?
        var problemPlace: String?
        private var current: (text: String?, audio: (begin: Double, end: Double)?, line: Int)?
        private(set) var depth = 0

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            depth += 1
            guard depth <= SMIL.maxDepth else { return fail(parser, "elements nested deeper than \(SMIL.maxDepth)") }
            let local = name.split(separator: ":").last.map(String.init) ?? name
            switch local {
            case "smil": sawSMIL = true
            case "seq":
                let textref = attributes.first { $0.key.split(separator: ":").last == "textref" }?.value ?? ""
                seqs.append(textref.contains("#") ? seqCount : nil)
                seqCount += 1
            case "par": current = (nil, nil, parser.lineNumber)
            case "text": current?.text = attributes["src"]
            case "audio":
                guard current != nil else { return }
                guard let beginText = attributes["clipBegin"], let endText = attributes["clipEnd"] else {
                    fail(parser, "<audio> needs clipBegin and clipEnd")
                    return
                }
                guard let begin = SMIL.clock(beginText), let end = SMIL.clock(endText) else {
                    fail(parser, "bad clock value in clipBegin=\(WordTimings.shown(beginText)) clipEnd=\(WordTimings.shown(endText))")
                    return
                }
                current?.audio = (begin, end)
            default: break
            }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            depth -= 1
            let local = name.split(separator: ":").last.map(String.init) ?? name
            if local == "seq" { _ = seqs.popLast() }
            guard local == "par", let par = current else { return }
            current = nil
            guard let audio = par.audio else {
                fail(parser, "a <par> without <audio clipBegin clipEnd>", line: par.line)
                return
            }
            let parts = (par.text ?? "").split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
            let page = parts.first.flatMap { $0.isEmpty ? nil : String($0) }
            let fragment = parts.count == 2 ? String(parts[1]) : nil
            pars.append(Par(page: page, fragment: fragment, begin: audio.begin, end: audio.end, line: par.line, seq: seqs.last ?? nil))
        }

        private func fail(_ parser: XMLParser, _ message: String, line: Int? = nil) {
            if problem == nil {
                problem = message
                problemPlace = "line \(line ?? parser.lineNumber)"
            }
            parser.abortParsing()
        }
    }

    /// The text of the elements with the wanted ids, in an XHTML page; words run together
    /// across inline elements, whitespace collapsed. With each, the sentence element it is in.
    fileprivate final class TextsByID: NSObject, XMLParserDelegate {
        struct Found {
            var text: String
            /// The nearest ancestor whose class has the token `sentence`, by its order in the page.
            var sentence: Int?
        }
        private let ids: Set<String>
        /// Per open element: whether it is a sentence element; and the open ones' numbers.
        private var isSentence: [Bool] = []
        private var sentences: [Int] = []
        private var sentenceCount = 0
        private var sentenceOf: [String: Int] = [:]
        /// Per open element: the index in `texts` it collects into, when it is wanted.
        private var open: [Int?] = []
        private var texts: [(id: String, text: String)] = []
        private var collecting: [Int] = []
        private var collected = 0
        private var found: [String: Found] = [:]
        private var problem: (message: String, line: Int)?

        private init(ids: Set<String>) { self.ids = ids }

        static func read(_ data: Data, path: String, ids: Set<String>) throws(NarratorError) -> [String: Found] {
            let reader = TextsByID(ids: ids)
            let parser = XMLInput.parser(for: try XMLInput.checked(data, path: path))
            parser.delegate = reader
            // A page that is not well-formed gives what was read before the fault.
            _ = parser.parse()
            if let problem = reader.problem { throw NarratorError(file: path, place: "line \(problem.line)", problem.message) }
            return reader.found
        }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            guard open.count < SMIL.maxDepth else { return fail(parser, "elements nested deeper than \(SMIL.maxDepth)") }
            if let id = attributes["id"], ids.contains(id), found[id] == nil {
                if sentenceOf[id] == nil, let sentence = sentences.last { sentenceOf[id] = sentence }
                texts.append((id, ""))
                collecting.append(texts.count - 1)
                open.append(texts.count - 1)
            } else {
                open.append(nil)
            }
            let sentence = attributes["class"]?.split(whereSeparator: \.isWhitespace).contains("sentence") ?? false
            isSentence.append(sentence)
            if sentence {
                sentences.append(sentenceCount)
                sentenceCount += 1
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !collecting.isEmpty else { return }
            collected += string.utf8.count * collecting.count
            guard collected <= SMIL.maxCollectedText else {
                return fail(parser, "the elements the SMIL file names hold over \(SMIL.maxCollectedText >> 20) MiB of text")
            }
            for index in collecting { texts[index].text += string }
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            if isSentence.popLast() == true { sentences.removeLast() }
            guard let element = open.popLast(), let index = element else { return }
            collecting.removeLast()
            let entry = texts[index]
            texts[index].text = ""
            if found[entry.id] == nil { found[entry.id] = Found(text: CueText.oneLine(entry.text), sentence: sentenceOf[entry.id]) }
        }

        private func fail(_ parser: XMLParser, _ message: String) {
            if problem == nil { problem = (message, parser.lineNumber) }
            parser.abortParsing()
        }
    }
}
