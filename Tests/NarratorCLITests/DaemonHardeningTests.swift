import Foundation
import NarratorTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `narrator serve` against what should not take it down or make it grow: lessons whose files
/// are malformed in ways that have crashed parsers, a storm of clients that send a request and
/// leave, and errors that must not tell clients where things live on the host.
@Suite("Daemon hardening", .serialized)
struct DaemonHardeningTests {
    /// A library in `dir`: the sample lesson (its paths absolute, so that it loads from here),
    /// and lessons each of whose one clip names a poisoned timings file, made here.
    static func poisonedLibrary(_ dir: TempDir) throws -> (library: String, poisoned: [String]) {
        let library = dir.file("library")
        try FileManager.default.createDirectory(atPath: library + "/timings", withIntermediateDirectories: true)
        let sample = try String(contentsOfFile: Repo.path("Timings/lessons/sample.json"), encoding: .utf8)
            .replacingOccurrences(of: "\"../../Audio/", with: "\"" + Repo.path("Audio") + "/")
            .replacingOccurrences(of: "\"timings\": \"", with: "\"timings\": \"" + Repo.path("Timings/lessons") + "/")
        dir.write("library/sample.json", sample)
        let audio = Repo.path("Audio/fixtures/sentence.wav")
        var textGrid = try String(contentsOfFile: Repo.path("Timings/fixtures/formats/sentence.short.TextGrid"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // Tier count, then an interval count, far beyond any integer.
        textGrid[6] = "1e30"
        dir.write("library/timings/tiers.TextGrid", textGrid.joined(separator: "\n"))
        textGrid[6] = "1"
        textGrid[11] = "18446744073709551616"
        dir.write("library/timings/intervals.TextGrid", textGrid.joined(separator: "\n"))
        // Invalid UTF-8 in an element name, an attribute name and a processing instruction.
        let smil = try Data(contentsOf: URL(fileURLWithPath: Repo.path("Timings/fixtures/formats/sentence.aeneas.smil")))
        func poisoned(_ text: String, _ bad: [UInt8], at marker: String) -> Data {
            let head = Data(text.utf8)
            let range = head.range(of: Data(marker.utf8))!
            var data = head
            data.replaceSubrange(range, with: Data(marker.utf8.prefix(3)) + Data(bad) + Data(marker.utf8.dropFirst(3)))
            return data
        }
        let smilText = String(decoding: smil, as: UTF8.self)
        _ = dir.write("library/timings/element.smil", data: poisoned(smilText, [0xe1], at: "<audio"))
        _ = dir.write("library/timings/attribute.smil", data: poisoned(smilText, [0xe1, 0x80], at: "clipBegin"))
        _ = dir.write("library/timings/instruction.smil", data: Data("<?p".utf8) + Data([0xe1]) + Data(" x?>\n".utf8) + smil)
        var poisoned: [String] = []
        for timings in ["tiers.TextGrid", "intervals.TextGrid", "element.smil", "attribute.smil", "instruction.smil"] {
            let name = "bad-" + timings.replacingOccurrences(of: ".", with: "-") + ".json"
            dir.write(
                "library/" + name,
                #"{"sampleRate": 48000, "channels": 2, "clips": {"w": {"file": "\#(audio)", "timings": "timings/\#(timings)"}}, "chains": {"c": [{"clip": "w"}]}}"#)
            poisoned.append(name)
        }
        // Nesting deep enough to exhaust a recursive parser's stack.
        dir.write("library/bad-deep.json", String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000))
        poisoned.append("bad-deep.json")
        // Too big to be a lesson (read whole, it would be 17 MiB of daemon memory per request),
        // and a FIFO, which a reader would wait on for ever.
        dir.write("library/bad-huge.json", "{\"sampleRate\": 48000" + String(repeating: " ", count: 17 << 20) + "}")
        poisoned.append("bad-huge.json")
        #expect(mkfifo(library + "/bad-fifo.json", 0o600) == 0)
        poisoned.append("bad-fifo.json")
        return (library, poisoned)
    }

    /// Every poisoned lesson, asked for its cues and played, is one `error` event for that
    /// request; a client subscribed meanwhile on another connection keeps its connection and is
    /// answered after, and the daemon exits normally.
    @Test func poisonedLessonsAreErrorsAndOtherClientsNoticeNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (library, poisoned) = try Self.poisonedLibrary(dir)
        let daemon = try Daemon(dir: dir, library: library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let bystander = try SocketClient(daemon.socket)
        bystander.send(#"{"id": "w", "op": "subscribe", "playback": "next"}"#)
        let attacker = try SocketClient(daemon.socket)
        for (index, lesson) in poisoned.enumerated() {
            for op in ["cues", "play"] {
                attacker.send(#"{"id": "\#(op)-\#(index)", "op": "\#(op)", "lesson": "\#(lesson)", "chain": "c"}"#)
                let events = try #require(attacker.events { $0.isTerminal }, "\(op) \(lesson): no answer; daemon: \(daemon.stderr)")
                let last = try #require(events.last)
                let message = last.fields["message"] as? String ?? ""
                #expect(last.type == "error" && last.id == "\(op)-\(index)", "\(op) \(lesson): \(last.fields)")
                #expect(!message.contains(dir.path), "\(message)")
                print("\(op) \(lesson): \(message)")
            }
        }
        #expect(daemon.process.isRunning, "the daemon died: \(daemon.stderr)")
        // The bystander's connection is still up: it is answered on it.
        bystander.send(#"{"id": "after", "op": "cues", "lesson": "sample.json", "chain": "correct"}"#)
        let answer = try #require(bystander.events { $0.id == "after" && $0.isTerminal }, "the bystander was dropped")
        #expect(answer.last?.type == "finished", "\(answer.last?.fields ?? [:])")
        #expect(!answer.contains { $0.id == "w" && $0.isTerminal }, "the subscription ended: \(answer.map(\.fields))")
        #expect(daemon.stop() == 0)
    }

    /// Errors name lessons and their files by their path inside the library, on both transports:
    /// never the library's absolute path, nor any other, though the folders' names hold spaces
    /// (a home folder named after its owner).
    @Test func errorsNeverShowHostPaths() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let home = "Jane Doe"
        let library = dir.file("\(home)/library")
        try FileManager.default.createDirectory(atPath: library + "/sub", withIntermediateDirectories: true)
        let audio = Repo.path("Audio/fixtures/sentence.wav")
        dir.write("\(home)/library/sub/missing-audio.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "nowhere/a.wav"}}, "chains": {"c": [{"clip": "a"}]}}"#)
        dir.write("\(home)/library/sub/outside.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "\#(dir.path)/\#(home)/else where/b.wav"}}, "chains": {"c": [{"clip": "a"}]}}"#)
        dir.write("\(home)/library/sub/bad-timings.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "\#(audio)", "timings": "t.json"}}, "chains": {"c": [{"clip": "a"}]}}"#)
        dir.write("\(home)/library/sub/t.json", "{not json")
        dir.write("\(home)/library/broken.json", "{\"sampleRate\": ")
        // A folder beside the library whose name starts with the library's: its path must not
        // lose the library's prefix and show the rest.
        try FileManager.default.createDirectory(atPath: library + "-x/secret", withIntermediateDirectories: true)
        dir.write("\(home)/library-x/secret/x.wav", "not a wav")
        dir.write("\(home)/library/sibling.json", #"{"sampleRate": 48000, "clips": {"a": {"file": "\#(library)-x/secret/x.wav"}}, "chains": {"c": [{"clip": "a"}]}}"#)
        let daemon = try Daemon(dir: dir, library: library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let requests = [
            #"{"id": "chain", "op": "cues", "lesson": "sub/missing-audio.json", "chain": "nope"}"#,
            #"{"id": "activity", "op": "play", "lesson": "sub/missing-audio.json", "activity": "nope"}"#,
            #"{"id": "audio", "op": "cues", "lesson": "sub/missing-audio.json", "chain": "c"}"#,
            #"{"id": "audio-play", "op": "play", "lesson": "sub/missing-audio.json", "chain": "c"}"#,
            #"{"id": "outside", "op": "cues", "lesson": "sub/outside.json", "chain": "c"}"#,
            #"{"id": "timings", "op": "cues", "lesson": "sub/bad-timings.json", "chain": "c"}"#,
            #"{"id": "broken", "op": "play", "lesson": "broken.json", "chain": "c"}"#,
            #"{"id": "absent", "op": "cues", "lesson": "sub/none.json", "chain": "c"}"#,
            #"{"id": "sibling", "op": "cues", "lesson": "sibling.json", "chain": "c"}"#,
        ]
        var transports: [(String, [ReceivedEvent])] = []
        let socket = try SocketClient(daemon.socket)
        var overSocket: [ReceivedEvent] = []
        for request in requests {
            socket.send(request)
            overSocket += try #require(socket.events { $0.isTerminal })
        }
        transports.append(("unix", overSocket))
        if Clients.havePythonWebSockets {
            let result = try Clients.run(daemon, requests)
            transports.append(("websocket", result.events))
        }
        for (transport, events) in transports {
            let errors = Dictionary(events.filter { $0.type == "error" }.map { ($0.id, $0.fields["message"] as? String ?? "") }, uniquingKeysWith: { a, _ in a })
            #expect(errors.count == requests.count, "\(transport): \(errors)")
            for (id, message) in errors {
                #expect(!message.contains(dir.path) && !message.contains(library) && !message.contains(Repo.path("")), "\(transport) \(id): \(message)")
                #expect(!message.contains("/tmp") && !message.contains("/work"), "\(transport) \(id): \(message)")
                #expect(!message.contains("Jane") && !message.contains("Doe"), "\(transport) \(id): \(message)")
            }
            #expect(errors["chain"]?.hasPrefix("sub/missing-audio.json: ") == true, "\(errors["chain"] ?? "")")
            #expect(errors["chain"]?.contains("nope") == true)
            #expect(errors["activity"]?.hasPrefix("sub/missing-audio.json: ") == true, "\(errors["activity"] ?? "")")
            #expect(errors["audio"]?.contains("sub/nowhere/a.wav") == true, "\(errors["audio"] ?? "")")
            #expect(errors["audio-play"]?.contains("sub/nowhere/a.wav") == true, "\(errors["audio-play"] ?? "")")
            #expect(errors["outside"]?.contains("b.wav") == true, "\(errors["outside"] ?? "")")
            #expect(errors["timings"]?.contains("sub/t.json") == true, "\(errors["timings"] ?? "")")
            #expect(errors["broken"]?.hasPrefix("broken.json: ") == true, "\(errors["broken"] ?? "")")
            let sibling = errors["sibling"] ?? ""
            #expect(sibling.contains("…/x.wav") && !sibling.contains("secret") && !sibling.contains("-x"), "\(sibling)")
            print("\(transport): \(errors.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: " | "))")
        }
    }

    /// A request nested 33 deep is refused by the parser's limit for requests (32), naming the
    /// place; the connection stays and answers a request at 32 levels (an unknown member).
    @Test func requestNestingLimit() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Repo.path("Timings/lessons"), arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let client = try SocketClient(daemon.socket)
        // The object is level 1 and `[` at column 35 level 2: the 31 inside it reach 33 at column 66.
        let inner = String(repeating: "[", count: 31) + String(repeating: "]", count: 31)
        client.send(#"{"id": "deep", "op": "cues", "x": [\#(inner)]}"#)
        let deep = client.events(timeout: 10) { $0.type == "error" }
        let message = deep?.last?.fields["message"] as? String ?? ""
        #expect(message == "request: line 1, column 66: not valid JSON: nested deeper than 32 levels", "\(message)")
        client.send(#"{"id": "ok", "op": "cues", "x": \#(inner)}"#)
        let ok = client.events(timeout: 10) { $0.isTerminal }
        let answer = ok?.last?.fields["message"] as? String ?? ""
        #expect(ok?.last?.id == "ok" && !answer.contains("nested"), "\(answer)")
    }
}
