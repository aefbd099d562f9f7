import Foundation
import NarratorTestSupport
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// `narrator plot` end to end: the real CLI draws a sample chain; the SVG is parsed with
/// Foundation's XMLParser and checked against what the test reads on its own (the timing
/// files as plain JSON, `narrator cues`, the rendered WAV); the PNG is decoded by Python's
/// zlib, not by librsvg.
@Suite("plot")
struct PlotTests {
    static let lesson = Repo.path("Timings/lessons/sample.json")
    static let rate = 48000

    // MARK: - SVG

    @Test func everyWordOfTheTimingFilesAtItsFrame() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let sheet = try cueSheet(Self.lesson, ["--chain", "correct", "--seed", "7"])
        let svg = try plot(Self.lesson, ["--chain", "correct", "--seed", "7"], to: dir.file("correct.svg"))
        let geometry = try Geometry(svg, frames: sheet.frames, width: 1200)

        // The words, from the timing files read here as JSON, placed at their clip's start.
        var expected: [(text: String, start: Int, end: Int)] = []
        for (clip, file) in [("p1", "sight-words/part1.json"), ("p2", "sight-words/part2.json")] {
            let offset = try sheet.frame("clipStart", clip: clip)
            for word in try timingWords(Repo.path("Timings/lessons/" + file)) {
                expected.append((word.text, offset + word.start, offset + word.end))
            }
        }
        #expect(expected.count == 7)

        let words = svg.all { $0.attributes["data-type"] == "word" }
        try #require(words.count == expected.count)
        var lastLabelX = -1.0
        for (element, word) in zip(words, expected) {
            #expect(element.attributes["data-text"] == word.text)
            #expect(element.attributes["data-frame"] == String(word.start))
            #expect(element.attributes["data-end-frame"] == String(word.end))
            let start = try #require(element.first { $0.name == "line" && $0.attributes["class"] == "start" })
            let end = try #require(element.first { $0.name == "line" && $0.attributes["class"] == "end" })
            #expect(abs(try start.number("x1") - geometry.x(word.start)) < 0.001, "\(word.text) start")
            #expect(abs(try start.number("x2") - geometry.x(word.start)) < 0.001)
            #expect(abs(try end.number("x1") - geometry.x(word.end)) < 0.001, "\(word.text) end")
            let label = try #require(element.first { $0.name == "text" })
            #expect(label.text == word.text, "the label is the word, in full")
            let labelX = try label.number("x")
            #expect(abs(labelX - (geometry.x(word.start) + geometry.x(word.end)) / 2) < 0.001, "centred in its interval")
            #expect(labelX > lastLabelX, "in order")
            lastLabelX = labelX
        }
    }

    @Test(arguments: [
        ["--chain", "correct", "--seed", "7"],
        ["--chain", "correct", "--seed", "3", "--repeat", "2"],
        ["--activity", "sight-words", "--taps", "3:cat,4.5:see,9.5:hat", "--seed", "7"],
    ])
    func cueMarkersAreTheCueSheet(_ what: [String]) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = what[0] == "--activity" ? Repo.path("Timings/lessons/homer-sight-words.json") : Self.lesson
        let sheet = try cueSheet(lesson, what)
        let svg = try plot(lesson, what, to: dir.file("plot.svg"))
        let geometry = try Geometry(svg, frames: sheet.frames, width: 1200)

        // Each cue of `narrator cues` is one element with its frame and fields as data-*.
        func canonical(_ fields: [String: String]) -> String {
            fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        let fromSheet = sheet.cues.map { cue in
            canonical(Dictionary(uniqueKeysWithValues: cue.map { key, value in (kebab(key), value.description) }))
        }
        let elements = svg.all { $0.attributes["class"] == "cue" }
        let fromPlot = elements.map { element in
            canonical(
                element.attributes.filter { $0.key.hasPrefix("data-") && $0.key != "data-x" && $0.key != "data-end-x" }
                    .reduce(into: [:]) { $0[String($1.key.dropFirst("data-".count))] = $1.value })
        }
        #expect(fromPlot.count == fromSheet.count)
        #expect(fromPlot.sorted() == fromSheet.sorted())

        // Each marker is drawn where its frame is.
        for element in elements {
            let frame = try #require(Int(element.attributes["data-frame"] ?? ""))
            #expect(abs(try element.number("data-x") - geometry.x(frame)) < 0.001)
            let marker = try #require(element.first { $0.name == "line" })
            #expect(abs(try marker.number("x1") - geometry.x(frame)) < 0.001, "\(element.attributes)")
        }
        if what[0] == "--chain" {
            let pulses = elements.filter { $0.attributes["data-type"] == "pulse" }.map { $0.attributes["data-target"] ?? "" }
            #expect(pulses == Array(repeating: ["ticket-1", "checkbox"], count: what.contains("--repeat") ? 2 : 1).flatMap { $0 })
            let labels = svg.all { $0.name == "text" && $0.attributes["data-type"] == "pulse" }
            #expect(labels.map(\.text).prefix(2) == ["pulse ticket-1", "pulse checkbox"])
            #expect(labels.map { $0.attributes["data-frame"] } == elements.filter { $0.attributes["data-type"] == "pulse" }.map { $0.attributes["data-frame"] })
        } else {
            #expect(elements.contains { $0.attributes["data-type"] == "tap" && $0.attributes["data-answer"] == "see" })
        }
    }

    @Test func waveformIsTheRenderedAudioAndFlatInTheSilence() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let what = ["--chain", "correct", "--seed", "7"]
        let sheet = try cueSheet(Self.lesson, what)
        let svg = try plot(Self.lesson, what, to: dir.file("correct.svg"))
        let geometry = try Geometry(svg, frames: sheet.frames, width: 1200)
        let rendered = try run(Repo.narrator, ["render", Self.lesson] + what + ["--format", "f32", "--output", dir.file("correct.wav")])
        #expect(rendered.status == 0, "\(rendered.stderr)")
        let wav = try WAVFile(path: dir.file("correct.wav"))
        let samples = wav.floatSamples
        #expect(wav.frames == sheet.frames)

        let waveform = try #require(svg.first { $0.attributes["class"] == "waveform" })
        let mid = try waveform.number("data-mid")
        let half = try waveform.number("data-half")
        let paths = waveform.all { $0.attributes["class"] == "envelope" }.compactMap { $0.attributes["d"] }
        let columns = try envelopeColumns(paths.joined())
        #expect(columns.count == geometry.plotWidth, "one line per pixel column")

        // Column c holds the frames whose x falls in its pixel: f × width / frames in [c, c + 1).
        var silentColumns = 0
        var loudColumns = 0
        let silenceStart = try sheet.frame("clipEnd", clip: "p1")
        let silenceEnd = try sheet.frame("clipStart", clip: "p2")
        #expect(silenceEnd - silenceStart == 12000, "the chain's 0.25 s silence")
        for (index, column) in columns.enumerated() {
            let c = Int((column.x - geometry.left - 0.5).rounded())
            #expect(c == index)
            let from = (c * sheet.frames + geometry.plotWidth - 1) / geometry.plotWidth
            let to = ((c + 1) * sheet.frames + geometry.plotWidth - 1) / geometry.plotWidth
            var low: Float = .infinity
            var high: Float = -.infinity
            for sample in samples[(from * wav.channels)..<(to * wav.channels)] {
                low = min(low, sample)
                high = max(high, sample)
            }
            #expect(abs(column.top - (mid - Double(high) * half)) < 0.002, "column \(c) maximum")
            #expect(abs(column.bottom - (mid - Double(low) * half)) < 0.002, "column \(c) minimum")
            if from >= silenceStart && to <= silenceEnd {
                #expect(column.top == mid && column.bottom == mid, "flat in the silence")
                silentColumns += 1
            }
            if column.bottom - column.top > half * 0.2 { loudColumns += 1 }
        }
        #expect(silentColumns >= 60, "the 0.25 s gap spans about 70 columns")
        // Loud where each word is spoken: some column inside every word reaches 20 % of full scale.
        for word in svg.all({ $0.attributes["data-type"] == "word" }) {
            let start = try word.number("data-x")
            let end = try word.number("data-end-x")
            let inside = columns.filter { $0.x > start && $0.x < end }
            #expect(inside.contains { $0.bottom - $0.top > half * 0.2 }, "\(word.attributes["data-text"] ?? "")")
        }
        #expect(loudColumns > 200)
    }

    @Test func wordsThatAreXMLSyntaxStayText() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let words = ["Tom & Jerry", "<b>", "\"quoted\"", "it's", "a]]>b"]
        var labels = ""
        for (i, word) in words.enumerated() { labels += "\(0.1 + Double(i) * 0.7)\t\(0.6 + Double(i) * 0.7)\t\(word)\n" }
        dir.write("t.txt", labels)
        let audio = Repo.path("Audio/lessons/dictionary/apple.wav")
        let lesson = dir.write(
            "odd.json",
            #"{"sampleRate": 48000, "clips": {"a&b": {"file": "\#(audio)", "timings": "t.txt"}}, "chains": {"c<1>": [{"clip": "a&b"}, {"pulse": ["x\"y"]}]}}"#)
        let svg = try plot(lesson, ["--chain", "c<1>"], to: dir.file("odd.svg"))
        let found = svg.all { $0.attributes["data-type"] == "word" }
        #expect(found.map { $0.attributes["data-text"] ?? "" } == words)
        #expect(found.map { $0.first { $0.name == "text" }?.text ?? "" } == words)
        #expect(svg.first { $0.attributes["data-type"] == "clipStart" }?.attributes["data-clip"] == "a&b")
        #expect(svg.first { $0.attributes["data-type"] == "pulse" }?.attributes["data-target"] == "x\"y")
        #expect(svg.first { $0.attributes["data-type"] == "chainEnd" }?.attributes["data-chain"] == "c<1>")
    }

    // MARK: - PNG

    @Test func pngIsTheRequestedSizeWithBoundaryColumns() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let what = ["--chain", "correct", "--seed", "7", "--width", "900", "--height", "420"]
        let svg = try plot(Self.lesson, what, to: dir.file("correct.svg"))
        _ = try plot(Self.lesson, what, to: dir.file("correct.png"), parse: false)
        let sheet = try cueSheet(Self.lesson, ["--chain", "correct", "--seed", "7"])
        let geometry = try Geometry(svg, frames: sheet.frames, width: 900)

        let tier = try #require(svg.first { $0.attributes["data-tier"] == "words" })
        let row = Int(try tier.number("data-top")) + 3
        var probes: [(x: Int, y: Int)] = []
        var boundaries: [Int] = []
        for word in svg.all({ $0.attributes["data-type"] == "word" }) {
            for frame in [Int(word.attributes["data-frame"]!)!, Int(word.attributes["data-end-frame"]!)!] {
                // A 2 px line centred on x covers the whole pixel column floor(x).
                let column = Int(geometry.x(frame).rounded(.down))
                boundaries.append(column)
                probes.append((column, row))
            }
        }
        // Between two words, off any boundary: the tier's white.
        let between = (boundaries[1] + boundaries[2]) / 2
        probes.append((between, row))
        let png = try PNGPixels(path: dir.file("correct.png"), probes: probes)
        #expect(png.width == 900 && png.height == 420)
        for (probe, pixel) in zip(probes.dropLast(), png.pixels.dropLast()) {
            #expect(pixel == [0xd0, 0x1c, 0x1c, 0xff], "word boundary colour at column \(probe.x), row \(probe.y)")
        }
        #expect(png.pixels.last == [0xff, 0xff, 0xff, 0xff], "white between boundaries (column \(between))")
    }

    // MARK: - Bad input

    @Test func badInputGivesOneLineAndNoFile() throws {
        let dir = TempDir()
        let lessons = TempDir()
        defer {
            dir.remove()
            lessons.remove()
        }
        // Six music beds at once under a voice: six lanes in the clips tier.
        let audio = Repo.path("Audio/lessons/dictionary/apple.wav")
        let crowded = lessons.write(
            "crowded.json",
            #"{"sampleRate": 48000, "clips": {"m": {"file": "\#(audio)", "bus": "music"}, "v": {"file": "\#(audio)"}}, "chains": {"c": ["#
                + String(repeating: #"{"music": "m"}, "#, count: 6) + #"{"clip": "v"}]}}"#)
        let cases: [(arguments: [String], expect: String)] = [
            ([Self.lesson, "--chain", "nope", "--output", dir.file("a.svg")], "\(Self.lesson): chains.nope: unknown chain"),
            ([Self.lesson, "--chain", "correct", "--output", dir.file("a.jpg")], "\(dir.file("a.jpg")): cannot write '.jpg' (expected .svg or .png)"),
            ([dir.file("missing.json"), "--chain", "correct", "--output", dir.file("a.png")], "\(dir.file("missing.json")): no such file"),
            ([Self.lesson, "--chain", "correct", "--output", dir.file("no/such/folder/a.svg")], "\(dir.file("no/such/folder/a.svg")): cannot write: No such file or directory"),
            ([Self.lesson, "--chain", "correct", "--width", "50", "--output", dir.file("a.svg")], "--width must be between 400 and 10000"),
            ([crowded, "--chain", "c", "--height", "240", "--output", dir.file("a.png")], "--height: 240 px leaves no room for the waveform above 8 tier rows: give at least 314"),
        ]
        for (arguments, expect) in cases {
            let result = try run(Repo.narrator, ["plot"] + arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr.hasPrefix("narrator: ") && result.stderr.contains(expect), "\(result.stderr)")
            #expect(result.stderr.filter { $0 == "\n" }.count == 1, "one line: \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(dir.contents().isEmpty, "no file left: \(dir.contents())")
        }
    }

    // MARK: - Helpers

    /// `narrator cues` output, parsed here.
    struct Sheet: Decodable {
        let frames: Int
        let cues: [[String: Scalar]]

        /// The frame of the first cue of `type` for `clip`.
        func frame(_ type: String, clip: String) throws -> Int {
            let cue = cues.first { $0["type"]?.description == type && $0["clip"]?.description == clip }
            guard case .int(let frame)? = cue?["frame"] else { throw CocoaError(.fileReadCorruptFile) }
            return frame
        }
    }

    /// A cue field: JSONDecoder keeps true apart from 1.
    enum Scalar: Decodable, CustomStringConvertible {
        case bool(Bool), int(Int), string(String)

        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer()
            if let flag = try? value.decode(Bool.self) {
                self = .bool(flag)
            } else if let number = try? value.decode(Int.self) {
                self = .int(number)
            } else {
                self = .string(try value.decode(String.self))
            }
        }

        var description: String {
            switch self {
            case .bool(let flag): flag ? "true" : "false"
            case .int(let number): String(number)
            case .string(let text): text
            }
        }
    }

    func cueSheet(_ lesson: String, _ what: [String]) throws -> Sheet {
        let result = try run(Repo.narrator, ["cues", lesson] + what)
        try #require(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(Sheet.self, from: Data(result.stdout.utf8))
    }

    /// Runs `narrator plot` and parses the SVG it wrote.
    @discardableResult
    func plot(_ lesson: String, _ what: [String], to output: String, parse: Bool = true) throws -> Node {
        let result = try run(Repo.narrator, ["plot", lesson] + what + ["--output", output])
        try #require(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix(output + ": "))
        let data = try Data(contentsOf: URL(fileURLWithPath: output))
        guard parse else { return Node(name: "", attributes: [:]) }
        return try SVGTree.parse(data)
    }

    /// Words of a Narrator timing file, read as plain JSON; frames as docs/cli.md defines them:
    /// round(seconds × rate), halves away from zero.
    func timingWords(_ path: String) throws -> [(text: String, start: Int, end: Int)] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any]
        let words = try #require(object?["words"] as? [[String: Any]])
        return try words.map { word in
            let start = try #require(word["start"] as? Double)
            let end = try #require(word["end"] as? Double)
            return (try #require(word["text"] as? String), Int((start * Double(Self.rate)).rounded()), Int((end * Double(Self.rate)).rounded()))
        }
    }

    func kebab(_ key: String) -> String {
        key.reduce(into: "") { out, character in
            if character.isUppercase { out += "-" + character.lowercased() } else { out.append(character) }
        }
    }

    /// The envelope's paths, joined: one `M x top V bottom` per column.
    func envelopeColumns(_ d: String) throws -> [(x: Double, top: Double, bottom: Double)] {
        try d.split(separator: "M").map { part in
            let pieces = part.split(separator: "V")
            let head = pieces[0].split(separator: " ")
            guard pieces.count == 2, head.count == 2, let x = Double(head[0]), let top = Double(head[1]), let bottom = Double(pieces[1]) else {
                throw CocoaError(.fileReadCorruptFile)
            }
            return (x, top, bottom)
        }
    }

    /// The plot's horizontal scale, from its root's attributes, checked for sense.
    struct Geometry {
        let left: Double
        let plotWidth: Int
        let frames: Int

        init(_ svg: Node, frames: Int, width: Int) throws {
            #expect(svg.name == "svg")
            #expect(svg.attributes["width"] == String(width))
            #expect(svg.attributes["data-frames"] == String(frames), "the plot spans the whole schedule")
            left = try svg.number("data-plot-left")
            plotWidth = Int(try svg.number("data-plot-width"))
            self.frames = frames
            #expect(left > 0 && left + Double(plotWidth) <= Double(width) && plotWidth > width - 120)
        }

        /// The documented mapping: x = left + frame × plotWidth / frames.
        func x(_ frame: Int) -> Double { left + Double(frame) * Double(plotWidth) / Double(frames) }
    }
}

/// An XML element, as XMLParser reported it.
final class Node {
    let name: String
    let attributes: [String: String]
    var children: [Node] = []
    var text = ""

    init(name: String, attributes: [String: String]) {
        self.name = name
        self.attributes = attributes
    }

    /// This element and every one below it, in document order.
    func all(_ predicate: (Node) -> Bool) -> [Node] {
        var found: [Node] = []
        func visit(_ node: Node) {
            if predicate(node) { found.append(node) }
            node.children.forEach(visit)
        }
        visit(self)
        return found
    }

    func first(_ predicate: (Node) -> Bool) -> Node? { all(predicate).first }

    func number(_ attribute: String) throws -> Double {
        guard let value = attributes[attribute].flatMap(Double.init) else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSDebugDescriptionErrorKey: "\(name) has no number \(attribute)"])
        }
        return value
    }
}

final class SVGTree: NSObject, XMLParserDelegate {
    private var stack: [Node] = []
    private var root: Node?

    static func parse(_ data: Data) throws -> Node {
        let tree = SVGTree()
        let parser = XMLParser(data: data)
        parser.delegate = tree
        guard parser.parse(), let root = tree.root else {
            throw parser.parserError ?? CocoaError(.fileReadCorruptFile)
        }
        return root
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        let node = Node(name: elementName, attributes: attributes)
        stack.last?.children.append(node)
        if root == nil { root = node }
        stack.append(node)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        stack.removeLast()
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        stack.last?.text += string
    }
}

/// A PNG decoded by Python's zlib (independent of librsvg and cairo): its size, and the RGBA
/// of the pixels asked for. Checks the signature, every chunk's CRC, and that it is 8-bit RGBA
/// or RGB, not interlaced.
struct PNGPixels {
    let width: Int
    let height: Int
    let pixels: [[Int]]

    static let script = #"""
        import json, struct, sys, zlib
        data = open(sys.argv[1], "rb").read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG signature"
        pos, idat, ihdr = 8, b"", None
        while pos < len(data):
            length, kind = struct.unpack(">I4s", data[pos:pos + 8])
            body = data[pos + 8:pos + 8 + length]
            crc, = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
            assert zlib.crc32(kind + body) & 0xffffffff == crc, "bad CRC in " + kind.decode()
            if kind == b"IHDR": ihdr = struct.unpack(">IIBBBBB", body)
            if kind == b"IDAT": idat += body
            pos += 12 + length
            if kind == b"IEND": break
        width, height, depth, colour, _, _, interlace = ihdr
        assert depth == 8 and colour in (2, 6) and interlace == 0, ihdr
        bpp = 4 if colour == 6 else 3
        raw = zlib.decompress(idat)
        stride = width * bpp
        assert len(raw) == height * (stride + 1), "data size"
        rows, prev = [], bytearray(stride)
        for y in range(height):
            kind = raw[y * (stride + 1)]
            line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                if kind == 1: line[i] = (line[i] + a) & 255
                elif kind == 2: line[i] = (line[i] + b) & 255
                elif kind == 3: line[i] = (line[i] + (a + b) // 2) & 255
                elif kind == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
                else: assert kind == 0, "filter type"
            rows.append(line)
            prev = line
        probes = json.loads(sys.argv[2])
        pixels = [list(rows[y][x * bpp:(x + 1) * bpp]) + ([] if bpp == 4 else [255]) for x, y in probes]
        print(json.dumps({"width": width, "height": height, "pixels": pixels}))
        """#

    init(path: String, probes: [(x: Int, y: Int)]) throws {
        let probeList = "[" + probes.map { "[\($0.x),\($0.y)]" }.joined(separator: ",") + "]"
        let result = try runTool("python3", ["-c", Self.script, path, probeList])
        try #require(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        width = try #require(object["width"] as? Int)
        height = try #require(object["height"] as? Int)
        pixels = try #require(object["pixels"] as? [[Int]])
    }
}
