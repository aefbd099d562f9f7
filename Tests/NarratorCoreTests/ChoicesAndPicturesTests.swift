import Foundation
import NarratorCore
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// A step's `choices` and a lesson's `pictures` (docs/lessons.md#choices-and-pictures): one
/// clear error per mistake, naming the key, and picture files read by their bytes, inside
/// their folder, at most 2 MiB.
@Suite("Choices and pictures")
struct ChoicesAndPicturesTests {
    func parse(steps: String = #"[{"answer": "see", "correct": "c", "wrong": ["w"]}]"#, extra: String = "", sounds: String = "{}") throws(NarratorError) -> Lesson {
        let json = """
            {"sampleRate": 48000, "clips": {"a": {"file": "a.wav"}, "m": {"file": "m.wav", "markers": "pulses"}},
             "chains": {"c": [{"clip": "a"}, {"pulse": ["ticket"]}], "w": [{"clip": "a"}], "marked": [{"clip": "m"}]},
             "activities": {"x": {"steps": \(steps), "sounds": \(sounds)}}\(extra)}
            """
        return try Lesson.parse(Data(json.utf8), path: "/l/lesson.json", directory: URL(fileURLWithPath: "/l"))
    }

    func expectError(_ expected: String, _ make: () throws(NarratorError) -> Lesson) {
        do {
            _ = try make()
            Issue.record("no error, expected \(expected)")
        } catch {
            #expect(error.description.hasPrefix("/l/lesson.json: \(expected)"), "\(error.description)")
        }
    }

    @Test func choicesKeepTheirOrderAndDefaultToTheAnswer() throws {
        let lesson = try parse(steps: #"[{"answer": "see", "choices": ["the", "see", "hat"], "correct": "c", "wrong": ["w"]}, {"answer": "hat", "correct": "c", "wrong": ["w"]}]"#)
        let steps = try lesson.activity("x").steps
        #expect(steps[0].choices == ["the", "see", "hat"])
        #expect(steps[1].choices == ["hat"], "no choices: the answer's tile alone")
    }

    @Test func badChoicesNameTheKey() {
        let long = String(repeating: "é", count: 65)
        let cases: [(String, String)] = [
            (#"["the", "hat"]"#, "activities.x.steps[0].choices: answer 'see' is not one of the choices (hat, the)"),
            (#"["see", "the", "see"]"#, "activities.x.steps[0].choices[2]: choice 'see' listed twice"),
            (#"[]"#, "activities.x.steps[0].choices: no choices"),
            ("[" + (0..<25).map { "\"w\($0)\"" }.joined(separator: ", ") + "]", "activities.x.steps[0].choices: 25 choices, over the 24 a step may show"),
            (#"["see", 5]"#, "activities.x.steps[0].choices[1]: expected a string"),
            (#"["see", ""]"#, "activities.x.steps[0].choices[1]: a choice is the text of a tile: it cannot be empty or only white space"),
            (#"["see", " "]"#, "activities.x.steps[0].choices[1]: a choice is the text of a tile"),
            ("[\"see\", \"\(long)\"]", "activities.x.steps[0].choices[1]: a choice of 65 characters, over the 64 a tile may show"),
            (#""see""#, "activities.x.steps[0].choices: expected an array"),
        ]
        for (choices, expected) in cases {
            expectError(expected) { () throws(NarratorError) in
                try parse(steps: #"[{"answer": "see", "choices": "# + choices + #", "correct": "c", "wrong": ["w"]}]"#)
            }
        }
        // 24 choices of 64 characters each are fine.
        let most = "[\"see\", " + (1..<24).map { "\"\(String(repeating: "x", count: 62))\($0 < 10 ? "0" : "")\($0)\"" }.joined(separator: ", ") + "]"
        #expect(throws: Never.self) { try parse(steps: #"[{"answer": "see", "choices": "# + most + #", "correct": "c", "wrong": ["w"]}]"#) }
    }

    @Test func badPicturesNameTheKey() {
        let alt = String(repeating: "a", count: 201)
        let cases: [(String, String)] = [
            (#"{"see": {"file": "see.svg"}}"#, "pictures.see.alt: missing key"),
            (#"{"see": {"alt": "an eye"}}"#, "pictures.see.file: missing key"),
            (#"{"see": {"file": "see.svg", "alt": ""}}"#, "pictures.see.alt: the alternative text says what the picture shows"),
            (#"{"see": {"file": "see.svg", "alt": "  "}}"#, "pictures.see.alt: the alternative text says what the picture shows"),
            ("{\"see\": {\"file\": \"see.svg\", \"alt\": \"\(alt)\"}}", "pictures.see.alt: 201 characters, over the 200 an alternative text may have"),
            (#"{"see": {"file": "see.svg", "alt": 3}}"#, "pictures.see.alt: expected a string"),
            (#"{"see": {"file": "/etc/see.svg", "alt": "x"}}"#, "pictures.see.file: '/etc/see.svg' is an absolute path"),
            (#"{"see": {"file": "", "alt": "x"}}"#, "pictures.see.file: expected the picture's path"),
            (#"{"see": {"file": "see.svg", "alt": "x", "width": 3}}"#, "pictures.see.width: unknown key"),
            (#"{"..": {"file": "see.svg", "alt": "x"}}"#, "pictures...: a picture is named by its choice"),
            (#"{"see": "see.svg"}"#, "pictures.see: expected an object"),
            (#"["see.svg"]"#, "pictures: expected an object"),
        ]
        for (pictures, expected) in cases {
            expectError(expected) { () throws(NarratorError) in try parse(extra: #", "pictures": "# + pictures) }
        }
    }

    /// The names a picture may be for: choices, answers, sounds, replay and close, pulse
    /// targets of feedback and of the activity's chains; a chain with pulse markers takes any.
    @Test func pictureNames() throws {
        let lesson = try parse(
            steps: #"[{"answer": "see", "choices": ["see", "the"], "idle": {"chain": "w", "pulse": ["tile-see"]}, "correct": "c", "wrong": ["w"]}]"#,
            extra: #", "pictures": {"see": {"file": "p/see.svg", "alt": "an eye"}, "spare": {"file": "p/s.svg", "alt": "s"}}"#, sounds: #"{"cat": "w"}"#)
        let activity = try lesson.activity("x")
        #expect(lesson.pictureNames(of: activity) == ["see", "the", "tile-see", "cat", "replay", "close", "ticket"])
        let see = try #require(lesson.pictures["see"])
        #expect(see.name == "see" && see.file == "/l/p/see.svg" && see.written == "p/see.svg" && see.alt == "an eye" && see.key == "pictures.see")
        // The lesson's own chain `marked` plays a clip whose pulses are markers: any name.
        #expect(lesson.pictureNames.contains("spare"))
        let plain = try parse(extra: #", "pictures": {"spare": {"file": "p/s.svg", "alt": "s"}}"#)
        #expect(!plain.pictureNames(of: try plain.activity("x")).contains("spare"))
    }

    // MARK: Picture files

    /// PNG and WebP made by ffmpeg, SVG written here: known by their bytes, whatever their names.
    @Test(.requires(PulseTestServer.findExecutable("ffmpeg") != nil, "needs ffmpeg (Makefile APT_PACKAGES)"))
    func kindsByTheirBytes() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let png = try Self.ffmpegImage(dir, "made.png", codec: "png")
        let webp = try Self.ffmpegImage(dir, "made.webp", codec: "libwebp")
        // A PNG named .svg is a PNG; a text file named .png is nothing.
        let misnamed = dir.write("really-png.svg", data: try Data(contentsOf: URL(fileURLWithPath: png)))
        let text = dir.write("text.png", "hello, not a picture\n")
        let svg = dir.write("d.svg", "\u{FEFF}  <?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>")
        let folder = try #require(RealPath.resolve(dir.path))
        #expect(try PictureFile.read(path: png, inside: folder).kind == .png)
        #expect(try PictureFile.read(path: webp, inside: folder).kind == .webp)
        #expect(try PictureFile.read(path: misnamed, inside: folder).kind == .png)
        #expect(try PictureFile.read(path: svg, inside: folder).kind == .svg)
        #expect(PictureFile.Kind.svg.contentType == "image/svg+xml" && PictureFile.Kind.webp.contentType == "image/webp")
        #expect(throws: NarratorError.self) { try PictureFile.read(path: text, inside: folder) }
        do { _ = try PictureFile.read(path: text, inside: folder) } catch {
            #expect(error.description == "\(text): not an SVG, PNG or WebP image (by its first bytes, whatever its name says)")
        }
        #expect(PictureFile.kind(of: Array("<svgx/>".utf8)) == nil && PictureFile.kind(of: Array("<html><svg>".utf8)) == .svg)
        #expect(PictureFile.kind(of: Array("RIFF\0\0\0\0WAVE".utf8)) == nil, "a WAV is RIFF too")
    }

    static func ffmpegImage(_ dir: TempDir, _ name: String, codec: String) throws -> String {
        let path = dir.file(name)
        let result = try runTool("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "color=c=red:s=8x8", "-frames:v", "1", "-c:v", codec, path])
        try #require(result.status == 0, "ffmpeg: \(result.stderr)")
        return path
    }

    @Test func refusalsSayWhy() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let folder = try #require(RealPath.resolve(dir.file("lib")))
        try FileManager.default.createDirectory(atPath: folder + "/p", withIntermediateDirectories: true)
        let outside = dir.write("outside.svg", "<svg/>")
        let svg = dir.write("lib/p/in.svg", "<svg/>")
        try FileManager.default.createSymbolicLink(atPath: folder + "/p/out.svg", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: folder + "/p/in-link.svg", withDestinationPath: "in.svg")
        // Exactly the cap is read; a byte more is refused as too large.
        let most = dir.write("lib/p/most.svg", "<svg/>" + String(repeating: " ", count: PictureFile.maxBytes - 6))
        let over = dir.write("lib/p/over.svg", "<svg/>" + String(repeating: " ", count: PictureFile.maxBytes - 5))
        let empty = dir.write("lib/p/empty.svg", "")

        func problem(_ path: String) -> PictureFile.Problem? {
            if case .failure(let refusal) = PictureFile.load(path: path, inside: folder) { return refusal.problem }
            return nil
        }
        #expect(problem(svg) == nil && problem(folder + "/p/in-link.svg") == nil && problem(most) == nil)
        #expect(try PictureFile.read(path: most, inside: folder).bytes.count == PictureFile.maxBytes)
        #expect(problem(folder + "/p/out.svg") == .outside)
        #expect(problem(outside) == .outside)
        #expect(problem(folder + "/p/../../outside.svg") == .outside)
        #expect(problem(over) == .tooLarge)
        #expect(problem(empty) == .unusable && problem(folder + "/p/gone.svg") == .unusable && problem(folder + "/p") == .unusable)
        do { _ = try PictureFile.read(path: over, inside: folder) } catch {
            #expect(error.description == "\(over): \(PictureFile.maxBytes + 1) bytes, over the 2 MiB a picture may have")
        }
        do { _ = try PictureFile.read(path: folder + "/p/out.svg", inside: folder) } catch {
            #expect(error.description.hasPrefix("\(folder)/p/out.svg: leads outside \(folder), the folder a picture must stay in"), "\(error)")
        }
    }
}
