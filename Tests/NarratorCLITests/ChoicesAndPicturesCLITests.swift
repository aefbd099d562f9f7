import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Steps' choices and lessons' pictures through the commands: the daemon's `library` listing
/// (read back through its socket), the pictures served by `serve --web`, `validate`, `pack`,
/// and a wrong choice tapped in `simulate`.
@Suite("Choices and pictures (daemon, validate, pack, simulate)")
struct ChoicesAndPicturesCLITests {
    static let needs: Bool = PulseTestServer.findExecutable("ffmpeg") != nil && PulseTestServer.findExecutable("sox") != nil
        && PulseTestServer.findExecutable("socat") != nil

    /// A library in `dir/lib`: `tiles.json`, whose activity `pick` shows choices with pictures
    /// (a PNG and a WebP made by ffmpeg, SVGs written here), a picture linked out of the
    /// library, one over 2 MiB, one no name uses; `link.json`, a link to a lesson outside.
    struct Library {
        let root: String
        /// The picture files by name, as written.
        let files: [String: String]
    }

    static func library(_ dir: TempDir) throws -> Library {
        let root = dir.file("lib")
        try FileManager.default.createDirectory(atPath: root + "/p", withIntermediateDirectories: true)
        let sox = try runTool("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", root + "/a.wav", "synth", "0.5", "sine", "440", "vol", "0.5"])
        try #require(sox.status == 0, "sox: \(sox.stderr)")
        for (name, codec) in [("see.png", "png"), ("hat.webp", "libwebp")] {
            let made = try runTool("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "color=c=red:s=8x8", "-frames:v", "1", "-c:v", codec, root + "/p/" + name])
            try #require(made.status == 0, "ffmpeg: \(made.stderr)")
        }
        _ = dir.write("lib/p/the.svg", #"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 8"><rect width="8" height="8" fill="blue"/></svg>"#)
        _ = dir.write("lib/p/cat.svg", #"<svg xmlns="http://www.w3.org/2000/svg"><circle r="4"/></svg>"#)
        _ = dir.write("lib/p/big.svg", "<svg/>" + String(repeating: " ", count: 2 << 20))
        let secret = dir.write("secret.svg", "<svg><!-- outside the library --></svg>")
        try FileManager.default.createSymbolicLink(atPath: root + "/p/out.svg", withDestinationPath: secret)
        let lesson = """
            {"sampleRate": 48000, "clips": {"a": {"file": "a.wav"}},
             "chains": {"p": [{"clip": "a"}], "c": [{"clip": "a"}, {"pulse": ["ticket"]}], "w": [{"clip": "a"}]},
             "activities": {"pick": {"sounds": {"cat": "w"}, "steps": [
               {"prompt": "p", "answer": "see", "choices": ["the", "see", "hat é"], "idle": {"chain": "w", "pulse": ["tile-see"]}, "correct": "c", "wrong": ["w"]},
               {"answer": "hat é", "correct": "c", "wrong": ["w"]}]}},
             "pictures": {
               "see": {"file": "p/see.png", "alt": "an eye"}, "hat é": {"file": "p/hat.webp", "alt": "a hat"},
               "the": {"file": "p/the.svg", "alt": "the word the"}, "cat": {"file": "p/cat.svg", "alt": "a cat"},
               "tile-see": {"file": "p/the.svg", "alt": "the see tile"},
               "out": {"file": "p/out.svg", "alt": "x"}, "big": {"file": "p/big.svg", "alt": "x"}}}
            """
        _ = dir.write("lib/tiles.json", lesson)
        // A lesson outside the library, with a picture of its own, and a link to it inside.
        _ = dir.write("outside.json", #"{"sampleRate": 48000, "clips": {}, "chains": {}, "pictures": {"see": {"file": "secret.svg", "alt": "x"}}}"#)
        try FileManager.default.createSymbolicLink(atPath: root + "/link.json", withDestinationPath: dir.file("outside.json"))
        return Library(root: root, files: ["see": root + "/p/see.png", "hat é": root + "/p/hat.webp", "the": root + "/p/the.svg", "cat": root + "/p/cat.svg"])
    }

    /// An HTTP/1.1 GET of `target` as written (no client normalizes `..` away): status,
    /// headers (lowercased names) and body.
    static func get(_ port: Int, _ target: String) throws -> (status: Int, headers: [String: String], body: [UInt8]) {
        let fd = DaemonLimitsTests.connectTCP(port)
        try #require(fd >= 0)
        defer { close(fd) }
        let request = Array("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let raw = try #require(DaemonLimitsTests.readToEnd(fd), "no answer to GET \(target)")
        let end = try #require((0..<max(0, raw.count - 3)).first { raw[$0..<($0 + 4)].elementsEqual([13, 10, 13, 10]) }, "\(raw.count) bytes")
        let head = String(decoding: raw[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers, Array(raw[(end + 4)...]))
    }

    static func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    /// The listing read back through the socket: each step's answer and choices, the pictures
    /// of the names the activity uses with their percent-encoded URLs, and the lines valid
    /// against docs/events.schema.json.
    @Test(.requires(needs, "needs ffmpeg, sox and socat (Makefile APT_PACKAGES)"))
    func listingGivesStepsAndPictures() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = try Self.library(dir)
        let daemon = try Daemon(dir: dir, library: library.root, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let reply = try Clients.run(daemon, unix: true, [#"{"id": 1, "op": "library"}"#])
        #expect(reply.status == 0, "\(reply.stderr)")
        let pick = try #require(reply.events.first { $0.fields["activity"] as? String == "pick" })
        let steps = try #require(pick.fields["steps"] as? [[String: Any]], "\(pick.fields)")
        #expect(steps.map { $0["answer"] as? String } == ["see", "hat é"])
        #expect(steps.map { $0["choices"] as? [String] } == [["the", "see", "hat é"], ["hat é"]])
        #expect(steps.allSatisfy { $0.count == 2 })
        let pictures = try #require(pick.fields["pictures"] as? [String: [String: String]], "\(pick.fields)")
        #expect(
            pictures == [
                "see": ["url": "pictures/tiles.json/see", "alt": "an eye"],
                "hat é": ["url": "pictures/tiles.json/hat%20%C3%A9", "alt": "a hat"],
                "the": ["url": "pictures/tiles.json/the", "alt": "the word the"],
                "cat": ["url": "pictures/tiles.json/cat", "alt": "a cat"],
                "tile-see": ["url": "pictures/tiles.json/tile-see", "alt": "the see tile"],
            ], "out and big: no name of the activity; ticket and replay: no picture")
        #expect(pick.fields["answers"] as? [String] == ["see", "hat é"] && pick.fields["pulseAnswers"] as? [String: String] == ["tile-see": "see"])
        let raw = try Clients.socat(daemon, input: #"{"id": 1, "op": "library"}"# + "\n")
        #expect(raw.stdout.contains(#""steps":[{"answer":"see","choices":["the","see","hat é"]},{"answer":"hat é","choices":["hat é"]}]"#), "\(raw.stdout)")
        #expect(try EventSchema.problems(raw.stdout, as: "daemonLine") == nil)
    }

    /// 1000 steps of 24 choices of 64 characters (1.6 MB of text): the listing gives the
    /// steps that fit its 256 KiB, 1600 bytes each (163), says how many it left out, and stays
    /// one line under the loader's 1 MiB.
    @Test(.requires(PulseTestServer.findExecutable("socat") != nil, "needs socat (Makefile APT_PACKAGES)"))
    func listedStepsAreBounded() throws {
        let dir = TempDir()
        defer { dir.remove() }
        func word(_ step: Int, _ choice: Int) -> String { String(format: "%06d-%02d-", step, choice) + String(repeating: "x", count: 54) }
        let steps = (0..<1000).map { step in
            let choices = (0..<24).map { "\"\(word(step, $0))\"" }.joined(separator: ", ")
            return #"{"answer": ""# + word(step, 0) + #"", "choices": ["# + choices + #"], "correct": "c", "wrong": ["c"]}"#
        }
        _ = dir.write("lib/many.json", #"{"sampleRate": 48000, "clips": {}, "chains": {"c": [{"silence": 0.1}]}, "activities": {"x": {"steps": ["# + steps.joined(separator: ",\n") + "]}}}")
        let daemon = try Daemon(dir: dir, library: dir.file("lib"), arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let raw = try Clients.socat(daemon, input: #"{"id": 1, "op": "library"}"# + "\n")
        let line = try #require(raw.stdout.split(separator: "\n").first { $0.contains(#""activity":"x""#) })
        #expect(line.utf8.count < 1 << 20)
        let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let listed = try #require(event["steps"] as? [[String: Any]])
        #expect(listed.count == (256 * 1024) / (64 + 24 * 64) && event["stepsLeftOut"] as? Int == 1000 - listed.count)
        #expect(listed.last?["answer"] as? String == word(listed.count - 1, 0))
        #expect(try EventSchema.problems(raw.stdout, as: "daemonLine") == nil)
    }

    /// `GET /pictures/LESSON/NAME`: the file's bytes and its type by its bytes; 404 for what
    /// is not there (or is outside, by its name), 403 for a picture linked out, 413 over 2 MiB.
    @Test(.requires(needs, "needs ffmpeg, sox and socat (Makefile APT_PACKAGES)"))
    func picturesServedWithinTheLibrary() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = try Self.library(dir)
        let daemon = try Daemon(dir: dir, library: library.root, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let types = ["see": "image/png", "hat é": "image/webp", "the": "image/svg+xml", "cat": "image/svg+xml"]
        for (name, path) in library.files {
            let answer = try Self.get(daemon.port, "/pictures/tiles.json/" + name.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz-"))!)
            #expect(answer.status == 200, "\(name): \(String(decoding: answer.body, as: UTF8.self))")
            #expect(answer.body == (try Self.bytes(path)), "\(name)")
            #expect(answer.headers["content-type"] == types[name], "\(name): \(answer.headers)")
            #expect(answer.headers["cache-control"] == "no-cache" && answer.headers["x-content-type-options"] == "nosniff", "\(answer.headers)")
            let policy = answer.headers["content-security-policy"]
            #expect(policy == (types[name] == "image/svg+xml" ? "sandbox; default-src 'none'; style-src 'unsafe-inline'" : nil), "\(name)")
        }
        // The PNG and the WebP are what ffmpeg wrote: their own magic bytes.
        #expect(try Self.get(daemon.port, "/pictures/tiles.json/see").body.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        let webp = try Self.get(daemon.port, "/pictures/tiles.json/hat%20%C3%A9").body
        #expect(webp.starts(with: Array("RIFF".utf8)) && Array(webp[8..<12]) == Array("WEBP".utf8))

        let refused: [(String, Int)] = [
            ("/pictures/tiles.json/nope", 404),
            ("/pictures/none.json/see", 404),
            ("/pictures/tiles.json/out", 403),  // a link out of the library
            ("/pictures/tiles.json/big", 413),
            ("/pictures/link.json/see", 404),  // a lesson linked in from outside
            ("/pictures/../outside.json/see", 404),
            ("/pictures/%2e%2e/see", 404),
            ("/pictures/%2E%2E%2Foutside.json/see", 404),
            ("/pictures/tiles.json/%2e%2e", 404),
            ("/pictures/tiles.json/../../secret.svg", 404),
            ("/pictures/tiles.json", 404),
        ]
        let secret = try Self.bytes(dir.file("secret.svg"))
        for (target, status) in refused {
            let answer = try Self.get(daemon.port, target)
            #expect(answer.status == status, "\(target): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
            #expect(!answer.body.isEmpty && answer.headers["content-type"] == "text/plain; charset=utf-8" || answer.status == 404, "\(target)")
            #expect(answer.body.firstRange(of: secret) == nil, "\(target) gave the file outside")
            #expect(!String(decoding: answer.body, as: UTF8.self).contains(dir.path), "\(target) named where the library lives")
        }
        // The daemon is still there.
        #expect(try Self.get(daemon.port, "/pictures/tiles.json/cat").status == 200)
    }

    /// Every picture the sample library's listing names is served, the bytes of its file; the
    /// sight words list their tiles.
    @Test(.requires(PulseTestServer.findExecutable("socat") != nil, "needs socat (Makefile APT_PACKAGES)"))
    func sampleLibraryListsAndServesItsPictures() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let root = Repo.path("Timings/lessons")
        let daemon = try Daemon(dir: dir, library: root, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let reply = try Clients.run(daemon, unix: true, [#"{"id": 1, "op": "library"}"#])
        let programs = reply.events.filter { $0.type == "program" }
        let sightWords = try #require(programs.first { $0.fields["activity"] as? String == "sight-words" })
        #expect((sightWords.fields["steps"] as? [[String: Any]])?.map { $0["choices"] as? [String] } == [["see", "the", "hat"], ["see", "the", "hat"]])
        // What each lesson file says of its pictures, read here from its JSON.
        var served = 0
        for program in programs {
            let lesson = try #require(program.fields["lesson"] as? String)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: root + "/" + lesson))) as? [String: Any])
            let declared = (object["pictures"] as? [String: [String: String]]) ?? [:]
            for (name, picture) in (program.fields["pictures"] as? [String: [String: String]]) ?? [:] {
                let entry = try #require(declared[name], "\(lesson): \(name) is not in its pictures")
                #expect(picture["alt"] == entry["alt"])
                let answer = try Self.get(daemon.port, "/" + (picture["url"] ?? ""))
                let file = try Self.bytes(root + "/" + entry["file"]!)
                #expect(answer.status == 200 && answer.body == file, "\(lesson): \(name)")
                #expect(answer.headers["content-type"] == "image/svg+xml")
                served += 1
            }
        }
        #expect(served >= 20, "\(served) pictures listed")
        let hatShop = try #require(programs.first { $0.fields["activity"] as? String == "hat-shop" })
        #expect(((hatShop.fields["pictures"] as? [String: Any]) ?? [:]).keys.sorted() == ["cat", "hats", "mirror", "portraits"])
    }

    /// `validate`: each bad picture one finding naming its key; a picture no name uses, a warning.
    @Test(.requires(needs, "needs ffmpeg, sox and socat (Makefile APT_PACKAGES)"))
    func validateChecksEveryPicture() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = try Self.library(dir)
        _ = dir.write("lib/p/text.png", "not a picture\n")
        var lesson = try String(contentsOfFile: library.root + "/tiles.json", encoding: .utf8)
        lesson = lesson.replacingOccurrences(
            of: #""big": {"file": "p/big.svg", "alt": "x"}"#,
            with: #""big": {"file": "p/big.svg", "alt": "x"}, "text": {"file": "p/text.png", "alt": "x"}, "gone": {"file": "p/gone.svg", "alt": "x"}"#)
        let path = dir.write("lib/tiles.json", lesson)
        let result = try run(Repo.narrator, ["validate", path, "--json"])
        #expect(result.status == 1)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        let findings = ((report["findings"] as? [[String: Any]]) ?? []).filter { ($0["place"] as? String)?.hasPrefix("pictures.") == true }
        let seen = Set(findings.map { "\($0["severity"]!) \($0["check"]!) \($0["place"]!)" })
        #expect(
            seen == [
                "error picture pictures.out.file", "error picture pictures.big.file", "error picture pictures.text.file", "error missing pictures.gone.file",
                "warning picture pictures.out", "warning picture pictures.big", "warning picture pictures.text", "warning picture pictures.gone",
            ], "\(findings)")
        let text = findings.first { $0["place"] as? String == "pictures.text.file" }?["message"] as? String
        #expect(text == "'p/text.png': not an SVG, PNG or WebP image (by its first bytes, whatever its name says)")
        // A choice that is not the answer's is a lesson error naming the key.
        _ = dir.write("lib/tiles.json", lesson.replacingOccurrences(of: #""choices": ["the", "see", "hat é"]"#, with: #""choices": ["the", "hat é"]"#))
        let bad = try run(Repo.narrator, ["validate", path])
        #expect(bad.status == 1 && bad.stdout.contains("activities.pick.steps[0].choices: answer 'see' is not one of the choices"), "\(bad.stdout)\(bad.stderr)")
    }

    /// `pack` ships a lesson's pictures as they are, beside it; a picture that is not one is
    /// refused before anything is written, naming its key.
    @Test(.requires(needs, "needs ffmpeg, sox and socat (Makefile APT_PACKAGES)"))
    func packShipsThePictures() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = try Self.library(dir)
        var lesson = try String(contentsOfFile: library.root + "/tiles.json", encoding: .utf8)
        lesson = lesson.replacingOccurrences(
            of: #""out": {"file": "p/out.svg", "alt": "x"}, "big": {"file": "p/big.svg", "alt": "x"}"#, with: #""spare": {"file": "p/cat.svg", "alt": "x"}"#)
        #expect(!lesson.contains("big.svg"))
        _ = dir.write("lib/tiles.json", lesson)
        try FileManager.default.removeItem(atPath: library.root + "/link.json")
        let packed = try run(Repo.narrator, ["pack", library.root, "--to", dir.file("packed"), "--format", "flac", "--no-progress"])
        #expect(packed.status == 0, "\(packed.stderr)")
        for (name, path) in library.files {
            let copy = dir.file("packed/" + String(path.dropFirst(library.root.count + 1)))
            #expect(try Self.bytes(copy) == (try Self.bytes(path)), "\(name)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.file("packed/p/big.svg")), "only what a lesson names is shipped")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir.file("packed/tiles.json")))) as? [String: Any])
        #expect((object["pictures"] as? [String: [String: String]])?["hat é"] == ["file": "p/hat.webp", "alt": "a hat"])
        // A text file named .png is not shipped as a picture.
        _ = dir.write("lib/p/see.png", "not a picture\n")
        let refused = try run(Repo.narrator, ["pack", library.root, "--to", dir.file("packed2"), "--format", "flac", "--no-progress"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("tiles.json: pictures.see.file: '") && refused.stderr.contains("is not a picture, so it is not packed"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("packed2/tiles.json")))
    }

    /// A tap on a choice that is not the answer is a wrong answer: `tap` with `result` wrong,
    /// then the first wrong-answer feedback (try-again), whose clip plays its whole length.
    @Test func wrongChoiceTappedIsAWrongAnswer() throws {
        let result = try run(Repo.narrator, ["simulate", SightWordsLesson.path, "--activity", "sight-words", "--taps", "9:the,12:see", "--seed", "7"])
        #expect(result.status == 0, "\(result.stderr)")
        let trace = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let tapFrame = 9 * SightWordsLesson.rate
        let tap = try #require(trace.first { $0["type"] as? String == "tap" && $0["answer"] as? String == "the" })
        #expect(tap["result"] as? String == "wrong" && tap["frame"] as? Int == tapFrame && tap["step"] as? Int == 0)
        let feedback = try #require(trace.first { $0["type"] as? String == "feedback" && $0["frame"] as? Int == tapFrame })
        #expect(feedback["kind"] as? String == "wrong")
        #expect(trace.contains { $0["type"] as? String == "chainStart" && $0["chain"] as? String == "try-again" && $0["frame"] as? Int == tapFrame })
        let end = try #require(trace.first { $0["type"] as? String == "clipEnd" && $0["clip"] as? String == "try-again" })
        #expect(end["frame"] as? Int == tapFrame + (try SightWordsLesson.frames("try-again")))
        let right = try #require(trace.first { $0["type"] as? String == "tap" && $0["answer"] as? String == "see" })
        #expect(right["result"] as? String == "correct")
    }
}
