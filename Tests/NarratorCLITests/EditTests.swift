import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `narrator edit`: the page in headless Chromium (drag, keys, Save, playback with the word
/// highlighted), Save's checks over HTTP, and each format written in its own format. The clip
/// is assembled to the frame: tone bursts where the words are, silence between.
@Suite("edit")
struct EditTests {
    static let rate = 48000
    /// Not a multiple of the page's width: a pixel is a fractional number of frames.
    static let frames = 96_017
    static let words: [(text: String, start: Int, end: Int)] = [
        ("one", 4800, 24000), ("two", 33600, 52800), ("three", 57600, 76800), ("four", 81600, 93600),
    ]

    /// A lesson with clip "w": the assembled audio and its timings as `timings` (a file name
    /// whose extension is the format), written by the test's own hand.
    static func lesson(_ dir: TempDir, timings: String) -> String {
        var samples = [Int16](repeating: 0, count: frames)
        for word in words {
            for frame in word.start..<word.end { samples[frame] = Int16(9000 * sin(Double(frame) * 2 * .pi * 440 / Double(rate))) }
        }
        _ = dir.write("w.wav", data: WAVFile.pcm16(samples, rate: rate))
        func seconds(_ frame: Int) -> String { String(format: "%.6f", Double(frame) / Double(rate)) }
        func stamp(_ frame: Int) -> String { String(format: "00:00:%06.3f", Double(frame) / Double(rate)) }
        let text: String
        switch URL(fileURLWithPath: timings).pathExtension {
        case "json":
            text = #"{"words": ["# + words.map { #"{"text": "\#($0.text)", "start": \#(seconds($0.start)), "end": \#(seconds($0.end))}"# }.joined(separator: ", ") + "]}"
        case "txt":
            text = words.map { "\(seconds($0.start))\t\(seconds($0.end))\t\($0.text)\n" }.joined()
        case "vtt":
            text = "WEBVTT\n\n" + words.enumerated().map { "\($0.offset + 1)\n\(stamp($0.element.start)) --> \(stamp($0.element.end))\n\($0.element.text)\n\n" }.joined()
        default:
            text = ""
        }
        _ = dir.write(timings, text)
        return dir.write(
            "lesson.json",
            #"{"sampleRate": 48000, "clips": {"w": {"file": "w.wav", "timings": "\#(timings)"}, "bare": {"file": "w.wav"}}, "chains": {"c": [{"clip": "w"}]}}"#)
    }

    /// `narrator edit` running; its page's address is the first line of its stdout.
    final class Editor {
        let process = Process()
        let url: String

        init(_ dir: TempDir, lesson: String, clip: String = "w", arguments: [String] = []) throws {
            let out = dir.file("edit.out")
            _ = FileManager.default.createFile(atPath: out, contents: nil)
            process.executableURL = URL(fileURLWithPath: Repo.narrator)
            process.arguments = ["edit", lesson, "--clip", clip, "--port", "0", "--no-open"] + arguments
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle(forWritingAtPath: out)
            process.standardError = FileHandle(forWritingAtPath: dir.write("edit.err", ""))
            try process.run()
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
                if let line = text.split(separator: "\n").first, text.contains("\n") {
                    url = String(line)
                    return
                }
                if !process.isRunning { break }
                usleep(20_000)
            }
            throw DaemonError("narrator edit did not come up: \((try? String(contentsOfFile: dir.file("edit.err"), encoding: .utf8)) ?? "")")
        }

        func stop() -> Int32 {
            if process.isRunning { kill(process.processIdentifier, SIGTERM) }
            process.waitUntilExit()
            return process.terminationStatus
        }

        deinit { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
    }

    /// POSTs each body to `/save`; each reply's status and text (through Python's urllib, not
    /// the code under test).
    static func post(_ url: String, _ bodies: [String]) throws -> [(status: Int, text: String)] {
        let script = """
            import json, sys, urllib.request, urllib.error
            out = []
            for body in json.loads(sys.argv[2]):
                request = urllib.request.Request(sys.argv[1] + "save", data=body.encode(), method="POST",
                                                 headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(request, timeout=20) as reply:
                        out.append([reply.status, reply.read().decode()])
                except urllib.error.HTTPError as error:
                    out.append([error.code, error.read().decode()])
            print(json.dumps(out))
            """
        let encoded = String(decoding: try JSONSerialization.data(withJSONObject: bodies), as: UTF8.self)
        let result = try runTool("python3", ["-c", script, url, encoded])
        try #require(result.status == 0, "\(result.stderr)")
        let replies = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[Any]])
        return replies.map { ($0[0] as? Int ?? 0, $0[1] as? String ?? "") }
    }

    static func body(_ words: [(text: String, start: Int, end: Int)]) -> String {
        #"{"words": ["# + words.map { #"{"text": "\#($0.text)", "start": \#($0.start), "end": \#($0.end)}"# }.joined(separator: ", ") + "]}"
    }

    /// Frames of a Narrator JSON timing file, read with Foundation's parser.
    static func jsonFrames(_ path: String) throws -> [(text: String, start: Int, end: Int)] {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let list = try #require(root["words"] as? [[String: Any]])
        return try list.map { word in
            let start = try #require(word["start"] as? Double)
            let end = try #require(word["end"] as? Double)
            return (word["text"] as? String ?? "", Int((start * Double(rate)).rounded()), Int((end * Double(rate)).rounded()))
        }
    }

    /// Drags the start of "two" 37 pixels right and moves the end of "three" 10 ms right with
    /// Shift+→, saves, and reads the file: it holds the frames those pixels and keys mean at the
    /// page's scale (frames per pixel = clip frames / waveform width), and nothing else moved.
    /// Then a click on "one" plays it with only it highlighted, and Shift+click plays "two" to
    /// "four" with the highlight moving from word to word.
    @Test(.requires(PulseTestServer.findExecutable("chromium") != nil, "needs chromium"))
    func dragSaveAndPlayInChromium() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = Self.lesson(dir, timings: "w.json")
        let editor = try Editor(dir, lesson: lesson)
        let driven = try runTool(
            "python3",
            [Repo.path("Tests/clients/edit_browser.py"), editor.url, "--drag", "1:start:37", "--key", "2:end:Shift+ArrowRight",
             "--play", "0", "--range", "1:3", "--timeout", "30"])
        #expect(editor.stop() == 0)
        try #require(driven.status == 0, "\(driven.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(driven.stdout.utf8)) as? [String: Any])
        let canvas = try #require(report["canvas"] as? [String: Any])
        let width = try #require(canvas["width"] as? Double)
        let grab = try #require(report["grab"] as? [String: Any])
        let moved = (grab["released"] as? Int ?? 0) - (grab["pressed"] as? Int ?? 0)
        #expect(moved == 37 && grab["frame"] as? Int == 33600, "\(grab)")
        let expectedStart = 33600 + Int((Double(moved) * Double(Self.frames) / width).rounded())
        let saved = try #require(report["saved"] as? [String])
        #expect(saved.first == "saved", "\(saved)")

        var expected = Self.words
        expected[1].start = expectedStart
        expected[2].end = 76800 + 480
        let written = try Self.jsonFrames(dir.file("w.json"))
        #expect(written.map(\.text) == expected.map(\.text))
        #expect(written.map(\.start) == expected.map(\.start), "page width \(width)")
        #expect(written.map(\.end) == expected.map(\.end))
        let key = try #require(report["key"] as? [String: Any])
        #expect(key["label"] as? String == "end of word 3 'three'")

        // A word: highlighted while it plays, alone, then not.
        let play = try #require(report["play"] as? [String: Any])
        let samples = try #require(play["samples"] as? [[Any]])
        let lit = samples.filter { $0[1] as? Int == 0 }
        #expect(lit.count >= 5, "\(samples)")
        #expect(samples.allSatisfy { $0[1] is NSNull || $0[1] as? Int == 0 }, "\(samples)")
        #expect(samples.allSatisfy { ($0[3] as? Int ?? 9) <= 1 }, "one word at a time: \(samples)")
        #expect(samples.last?[1] is NSNull, "no highlight once it has played")
        // 400 ms of audio: its highlight ends when it does (the page's clock advanced).
        let litFor = (lit.last?[0] as? Double ?? 0) - (lit.first?[0] as? Double ?? 0)
        #expect(litFor > 250 && litFor < 1000, "highlighted for \(litFor) ms")
        let clock = lit.first?[2] as? String ?? "?"
        #expect(lit.contains { $0[4] as? String == "block" }, "the playhead moves while it plays: \(samples)")

        // A range: the highlight goes from word to word, in order, and only over the range.
        let range = try #require(report["range"] as? [String: Any])
        let log = try #require(range["log"] as? [String])
        #expect(log.filter { $0.hasPrefix("word@") } == ["word@1", "word@2", "word@3"], "\(log)")
        #expect(log.contains("play@\(expectedStart)-93600"), "\(log)")
        print("edit in Chromium: page width \(width) px, drag 37 px → frame \(expectedStart); word lit \(litFor) ms on the \(clock) clock")
    }

    /// In a WebVTT file (milliseconds) a dragged boundary lands on the millisecond the file will
    /// hold, on the page as in the file.
    @Test(.requires(PulseTestServer.findExecutable("chromium") != nil, "needs chromium"))
    func dragInAMillisecondFormatSnapsToWhatItHolds() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let editor = try Editor(dir, lesson: Self.lesson(dir, timings: "w.vtt"))
        let driven = try runTool("python3", [Repo.path("Tests/clients/edit_browser.py"), editor.url, "--drag", "1:start:37", "--timeout", "30"])
        #expect(editor.stop() == 0)
        try #require(driven.status == 0, "\(driven.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(driven.stdout.utf8)) as? [String: Any])
        let width = try #require((report["canvas"] as? [String: Any])?["width"] as? Double)
        let grab = try #require(report["grab"] as? [String: Any])
        // 33600 + 37 px × 96017 / width frames, in whole milliseconds at 48 kHz.
        let millis = Int(((33600 + 37 * Double(Self.frames) / width) / 48).rounded())
        #expect(grab["after"] as? Int == millis * 48, "\(grab)")
        let text = try String(contentsOfFile: dir.file("w.vtt"), encoding: .utf8)
        #expect(text.contains(String(format: "00:00:%06.3f", Double(millis) / 1000)), "\(text)")
    }

    /// With an audio clock that never moves (an output that does not start) the page's own
    /// clock takes over: the word is still lit for as long as it lasts, then not; and with
    /// prefers-reduced-motion no playhead moves, only the word's highlight changes.
    @Test(.requires(PulseTestServer.findExecutable("chromium") != nil, "needs chromium"))
    func highlightWithoutAnAudioClockAndWithReducedMotion() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let editor = try Editor(dir, lesson: Self.lesson(dir, timings: "w.json"))
        let driven = try runTool(
            "python3",
            [Repo.path("Tests/clients/edit_browser.py"), editor.url, "--play", "1", "--reduced-motion", "--no-audio", "--frozen-audio-clock",
             "--timeout", "30"])
        #expect(editor.stop() == 0)
        try #require(driven.status == 0, "\(driven.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(driven.stdout.utf8)) as? [String: Any])
        let play = try #require(report["play"] as? [String: Any])
        let samples = try #require(play["samples"] as? [[Any]])
        let lit = samples.filter { $0[1] as? Int == 1 }
        #expect(samples.allSatisfy { $0[1] is NSNull || $0[1] as? Int == 1 } && samples.last?[1] is NSNull, "\(samples)")
        #expect(lit.contains { $0[2] as? String == "wall" }, "the page's clock took over: \(samples)")
        // "two" is 400 ms long.
        let litFor = (lit.last?[0] as? Double ?? 0) - (lit.first?[0] as? Double ?? 0)
        #expect(litFor > 250 && litFor < 1000, "highlighted for \(litFor) ms")
        #expect(samples.allSatisfy { $0[4] as? String == "none" }, "no playhead with reduced motion: \(samples)")
    }

    /// Save's checks: every bad body is a 400 with one line saying what is wrong, and the file
    /// is byte for byte what it was. Then a good one saves.
    @Test func badSavesAreRefusedAndLeaveTheFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = Self.lesson(dir, timings: "w.json")
        let before = try Data(contentsOf: URL(fileURLWithPath: dir.file("w.json")))
        let editor = try Editor(dir, lesson: lesson)
        defer { _ = editor.stop() }
        var w = Self.words
        func with(_ change: (inout [(text: String, start: Int, end: Int)]) -> Void) -> String {
            var copy = w
            change(&copy)
            return Self.body(copy)
        }
        let bad: [(body: String, says: String)] = [
            ("not json", "not valid JSON"),
            ("{}", "missing key"),
            (#"{"words": {}}"#, "expected an array"),
            (Self.body(Array(w.dropLast())), "holds 3 words; the clip has 4"),
            (with { $0[2].text = "tree" }, "word 2 of the clip is 'three'"),
            (with { $0[1].start = -1 }, "expected a whole number in 0...96017, got -1"),
            (with { $0[3].end = Self.frames + 1 }, "got 96018"),
            (Self.body(w).replacingOccurrences(of: "33600", with: "33600.5"), "got 33600.5"),
            (Self.body(w).replacingOccurrences(of: "33600", with: "1e300"), "expected a whole number"),
            (Self.body(w).replacingOccurrences(of: "33600", with: "18446744073709551616"), "expected a whole number"),
            (Self.body(w).replacingOccurrences(of: "33600", with: "\"33600\""), "expected a number"),
            (with { $0[1].start = 20000 }, "before the word before it ends (frame 24000)"),
            (with { $0[1].end = 30000 }, "ends (frame 30000) before it starts (frame 33600)"),
            (Self.body(w).replacingOccurrences(of: #""end": 24000}"#, with: #""end": 24000, "x": 1}"#), "unknown key"),
            (#"{"words": [], "more": 1}"#, "unknown key"),
        ]
        let replies = try Self.post(editor.url, bad.map(\.body))
        for ((body, says), reply) in zip(bad, replies) {
            #expect(reply.status == 400, "\(body): \(reply)")
            #expect(reply.text.contains(says) && reply.text.split(separator: "\n").count == 1, "\(body): \(reply.text)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.file("w.json"))) == before, "the file is untouched")

        w[0].end = 24001
        w[3].start = 93600  // a word may be empty
        let good = try Self.post(editor.url, [Self.body(w)])
        #expect(good.first?.status == 200, "\(good)")
        let written = try Self.jsonFrames(dir.file("w.json"))
        #expect(written.map(\.start) == w.map(\.start) && written.map(\.end) == w.map(\.end))

        // Not from the page: another origin, a text/plain body (what another site could send).
        let foreign = try runTool("python3", ["-c", """
            import sys, urllib.request, urllib.error
            for headers in ({"Content-Type": "application/json", "Origin": "http://evil.example"}, {"Content-Type": "text/plain"}):
                try:
                    urllib.request.urlopen(urllib.request.Request(sys.argv[1] + "save", data=sys.argv[2].encode(), method="POST", headers=headers), timeout=20)
                    print(200)
                except urllib.error.HTTPError as error:
                    print(error.code)
            """, editor.url, Self.body(w)])
        #expect(foreign.stdout.split(separator: "\n") == ["403", "415"], "\(foreign.stdout) \(foreign.stderr)")
        // Reading under another Host name (a site that rebinds its name to 127.0.0.1): refused.
        let rebound = try runTool("python3", ["-c", """
            import sys, urllib.request, urllib.error
            for path in ("clip.json", "audio.wav", ""):
                try:
                    urllib.request.urlopen(urllib.request.Request(sys.argv[1] + path, headers={"Host": "evil.example:80"}), timeout=20)
                    print(200)
                except urllib.error.HTTPError as error:
                    print(error.code)
            """, editor.url])
        #expect(rebound.stdout.split(separator: "\n") == ["403", "403", "403"], "\(rebound.stdout) \(rebound.stderr)")

        // Changed by something else since: Save refuses (409) rather than overwrite it.
        let theirs = try String(contentsOfFile: dir.file("w.json"), encoding: .utf8).replacingOccurrences(of: "\"one\"", with: "\"won\"") + "\n"
        _ = dir.write("w.json", theirs)
        let conflict = try Self.post(editor.url, [Self.body(w)])
        #expect(conflict.first?.status == 409 && conflict.first?.text.contains("changed on disk") == true, "\(conflict)")
        #expect(try String(contentsOfFile: dir.file("w.json"), encoding: .utf8) == theirs)
    }

    /// A timing file that is a symbolic link (to a link, to a file in another folder) is saved
    /// through: the links stay links and the file they lead to has the new words, written
    /// whole (no hidden file left beside either). A change made to that file by something else
    /// is seen through the link (409).
    @Test func aLinkedTimingFileIsSavedThroughTheLink() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = Self.lesson(dir, timings: "w.json")
        try FileManager.default.createDirectory(atPath: dir.file("shared"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: dir.file("w.json"), toPath: dir.file("shared/w.json"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("middle.json"), withDestinationPath: "shared/w.json")
        try FileManager.default.createSymbolicLink(atPath: dir.file("w.json"), withDestinationPath: "middle.json")
        let editor = try Editor(dir, lesson: lesson)
        defer { _ = editor.stop() }
        var w = Self.words
        w[1].start = 30000
        let saved = try Self.post(editor.url, [Self.body(w)])
        #expect(saved.first?.status == 200, "\(saved)")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dir.file("w.json")) == "middle.json")
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dir.file("middle.json")) == "shared/w.json")
        #expect(try Self.jsonFrames(dir.file("shared/w.json")).map(\.start) == w.map(\.start))
        let hidden = (try FileManager.default.contentsOfDirectory(atPath: dir.path) + FileManager.default.contentsOfDirectory(atPath: dir.file("shared")))
            .filter { $0.hasPrefix(".") }
        #expect(hidden.isEmpty, "\(hidden)")

        let theirs = try String(contentsOfFile: dir.file("shared/w.json"), encoding: .utf8).replacingOccurrences(of: "\"one\"", with: "\"won\"") + "\n"
        let replacement = dir.write("shared/other.json", theirs)
        #expect(rename(replacement, dir.file("shared/w.json")) == 0)
        let conflict = try Self.post(editor.url, [Self.body(w)])
        #expect(conflict.first?.status == 409, "\(conflict)")
        #expect(try String(contentsOfFile: dir.file("shared/w.json"), encoding: .utf8) == theirs)
    }

    /// Only a request to this server by a loopback name and this port is answered: the Host
    /// header is compared whole, not by its start.
    @Test func onlyAnExactLoopbackHostIsAnswered() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = Self.lesson(dir, timings: "w.json")
        let editor = try Editor(dir, lesson: lesson)
        defer { _ = editor.stop() }
        let port = try #require(URL(string: editor.url)?.port)
        let hosts: [(String, Int)] = [
            ("127.0.0.1:\(port)", 200), ("localhost:\(port)", 200), ("LocalHost:\(port)", 200), ("[::1]:\(port)", 200),
            ("127.0.0.1:\(port).evil.com", 403), ("localhost:\(port).evil.com", 403), ("127.0.0.1:\(port)0", 403),
            ("127.0.0.1:\(port + 1)", 403), ("127.0.0.1", 403), ("127.0.0.1.evil.com:\(port)", 403),
            ("user@127.0.0.1:\(port)", 403), ("localhost.:\(port)", 403), ("[::1]x:\(port)", 403), ("127.0.0.1:0\(port)", 403),
        ]
        let script = """
            import http.client, json, sys
            out = []
            for host in json.loads(sys.argv[2]):
                for method, path in (("GET", "/clip.json"), ("POST", "/save")):
                    connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=20)
                    connection.putrequest(method, path, skip_host=True)
                    connection.putheader("Host", host)
                    if method == "POST":
                        connection.putheader("Content-Type", "application/json")
                        connection.putheader("Content-Length", "2")
                    connection.endheaders(b"{}" if method == "POST" else None)
                    out.append(connection.getresponse().status)
                    connection.close()
            print(json.dumps(out))
            """
        let encoded = String(decoding: try JSONSerialization.data(withJSONObject: hosts.map(\.0)), as: UTF8.self)
        let result = try runTool("python3", ["-c", script, String(port), encoded])
        let statuses = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [Int], "\(result.stderr)")
        for (index, (host, status)) in hosts.enumerated() {
            // A save from an answered host is a bad request ({} has no words); from any other, refused.
            #expect(statuses[2 * index] == status, "GET with Host \(host): \(statuses[2 * index])")
            #expect(statuses[2 * index + 1] == (status == 200 ? 400 : 403), "POST with Host \(host): \(statuses[2 * index + 1])")
        }
    }

    /// `--max-connections 2`: a third connection is answered 503 (a line saying why) and closed;
    /// `--idle-timeout 0.3`: a connection that sends nothing, or nothing more after a request,
    /// is closed; with the held ones gone, a request is answered again.
    @Test func connectionsAreCappedAndIdleOnesClosed() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = Self.lesson(dir, timings: "w.json")
        let editor = try Editor(dir, lesson: lesson, arguments: ["--max-connections", "2", "--idle-timeout", "0.3"])
        defer { _ = editor.stop() }
        let port = try #require(URL(string: editor.url)?.port)
        let held = [DaemonLimitsTests.connectTCP(port), DaemonLimitsTests.connectTCP(port)]
        try #require(held.allSatisfy { $0 >= 0 })
        usleep(50_000)  // both accepted before the third
        let third = DaemonLimitsTests.connectTCP(port)
        try #require(third >= 0)
        let refused = String(decoding: try #require(DaemonLimitsTests.readToEnd(third), "the third connection was not closed"), as: UTF8.self)
        close(third)
        #expect(refused.hasPrefix("HTTP/1.1 503") && refused.contains("narrator edit holds 2 connections"), "\(refused)")
        // The two held ones send nothing: closed by the idle timeout, not by the test.
        for fd in held {
            #expect(DaemonLimitsTests.readToEnd(fd) == [], "a silent connection was not closed, or was sent something")
            close(fd)
        }
        // A request and then nothing: answered, then closed.
        let asking = DaemonLimitsTests.connectTCP(port)
        try #require(asking >= 0)
        defer { close(asking) }
        let request = Array("GET /clip.json HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { write(asking, $0.baseAddress, $0.count) }
        let answered = String(decoding: try #require(DaemonLimitsTests.readToEnd(asking), "a keep-alive connection left idle was not closed"), as: UTF8.self)
        #expect(answered.hasPrefix("HTTP/1.1 200"), "\(answered.prefix(200))")
    }

    /// A clip that is a region of its file: the page has the words the region holds whole, in
    /// the region's frames; the others stay where they are, and a word moved onto one is refused.
    @Test func aRegionEditsItsWordsAndKeepsTheOthers() throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = Self.lesson(dir, timings: "w.json")
        // 0.45 s to 1.7 s: frames 21600 to 81600; "one" (to 24000) is cut, "four" (from 81600) outside.
        let lesson = dir.write(
            "region.json",
            #"{"sampleRate": 48000, "clips": {"w": {"file": "w.wav", "timings": "w.json", "start": 0.45, "end": 1.7}}, "chains": {"c": [{"clip": "w"}]}}"#)
        let editor = try Editor(dir, lesson: lesson)
        defer { _ = editor.stop() }
        let got = try runTool("python3", ["-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1] + 'clip.json').read().decode())", editor.url])
        let clip = try #require(try JSONSerialization.jsonObject(with: Data(got.stdout.utf8)) as? [String: Any])
        #expect(clip["frames"] as? Int == 60000)
        let shown = try #require(clip["words"] as? [[String: Any]])
        #expect(shown.map { $0["text"] as? String ?? "" } == ["two", "three"])
        #expect(shown.map { $0["start"] as? Int ?? -1 } == [33600 - 21600, 57600 - 21600])

        let onto = try Self.post(editor.url, [Self.body([("two", 1000, 31200), ("three", 36000, 55200)])])
        #expect(onto.first?.status == 400 && onto.first?.text.contains("overlaps 'two'") == true, "\(onto)")
        let moved = try Self.post(editor.url, [Self.body([("two", 2400, 31200), ("three", 36000, 60000)])])
        #expect(moved.first?.status == 200, "\(moved)")
        let written = try Self.jsonFrames(dir.file("w.json"))
        #expect(written.map(\.start) == [4800, 24000, 57600, 81600] && written.map(\.end) == [24000, 52800, 81600, 93600], "\(written)")
    }

    /// Audacity labels are written back as Audacity labels, to the frame; WebVTT as WebVTT,
    /// to the millisecond it holds (the reply says where each boundary landed).
    @Test func otherFormatsAreSavedInTheirOwnFormat() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var w = Self.words
        w[1].start = 37153
        w[2].end = 77291

        let labels = Self.lesson(dir, timings: "w.txt")
        do {
            let editor = try Editor(dir, lesson: labels)
            defer { _ = editor.stop() }
            let reply = try Self.post(editor.url, [Self.body(w)])
            #expect(reply.first?.status == 200, "\(reply)")
            let lines = try String(contentsOfFile: dir.file("w.txt"), encoding: .utf8).split(separator: "\n")
            #expect(lines.count == 4)
            let read = lines.map { line -> (String, Int, Int) in
                let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
                return (String(fields[2]), Int((Double(fields[0])! * 48000).rounded()), Int((Double(fields[1])! * 48000).rounded()))
            }
            #expect(read.map(\.0) == w.map(\.text) && read.map(\.1) == w.map(\.start) && read.map(\.2) == w.map(\.end), "\(lines)")
        }

        let vtt = Self.lesson(dir, timings: "w.vtt")
        let editor = try Editor(dir, lesson: vtt)
        defer { _ = editor.stop() }
        let reply = try Self.post(editor.url, [Self.body(w)])
        #expect(reply.first?.status == 200, "\(reply)")
        let text = try String(contentsOfFile: dir.file("w.vtt"), encoding: .utf8)
        #expect(text.hasPrefix("WEBVTT\n"))
        // 37153 frames = 774.02 ms → 00:00:00.774; 77291 = 1610.23 ms → 00:00:01.610.
        #expect(text.contains("00:00:00.774") && text.contains("00:00:01.610"), "\(text)")
        #expect(!text.contains("00:00:00.700") && !text.contains("00:00:01.600"), "the old boundaries are gone: \(text)")
        let saved = try #require(try JSONSerialization.jsonObject(with: Data(reply[0].text.utf8)) as? [String: Any])
        let words = try #require(saved["words"] as? [[String: Any]])
        #expect(words[1]["start"] as? Int == 774 * 48 && words[2]["end"] as? Int == 1610 * 48, "\(words)")
    }

    /// What cannot be edited is said at start, in one line naming the file or the clip's key,
    /// and no page is served.
    @Test func uneditableClipsFailAtStart() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = Self.lesson(dir, timings: "w.json")
        let bare = try run(Repo.narrator, ["edit", lesson, "--clip", "bare", "--no-open"])
        #expect(bare.status == 1 && bare.stdout.isEmpty)
        #expect(bare.stderr == "narrator: \(lesson): clips.bare: has no timings file to edit (give it \"timings\")\n", "\(bare.stderr)")
        let unknown = try run(Repo.narrator, ["edit", lesson, "--clip", "nope", "--no-open"])
        #expect(unknown.status == 1 && unknown.stderr.contains("clips.nope: no such clip") && unknown.stderr.split(separator: "\n").count == 1)

        // A TextGrid reads, but is not written: refused before any page.
        _ = dir.write(
            "w.TextGrid",
            "File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\n0\n2\n<exists>\n1\n\"IntervalTier\"\n\"words\"\n0\n2\n1\n0.1\n0.5\n\"one\"\n")
        let grid = dir.write(
            "grid.json", #"{"sampleRate": 48000, "clips": {"w": {"file": "w.wav", "timings": "w.TextGrid"}}, "chains": {"c": [{"clip": "w"}]}}"#)
        let refused = try run(Repo.narrator, ["edit", grid, "--clip", "w", "--no-open"])
        #expect(refused.status == 1 && refused.stdout.isEmpty && refused.stderr.split(separator: "\n").count == 1, "\(refused.stderr)")
        #expect(refused.stderr.contains("w.TextGrid: textgrid cannot be saved in its own format") && refused.stderr.contains("timings convert"), "\(refused.stderr)")
    }
}
