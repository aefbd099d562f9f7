import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// The daemon's `library` listing, and the read-along page (docs/read-along.md) in headless
/// Chromium: a lesson of the sample library laid out clip by clip as it is heard, an activity
/// answered with its tiles, a lesson written here, and every program of the sample library.
@Suite("Read-along page", .serialized)
struct ReadAlongPageTests {
    static let library = Repo.path("Timings/lessons")
    static var canBrowse: Bool {
        PulseTestServer.findExecutable("chromium") != nil && Clients.havePythonWebSockets && PulseTestServer.isAvailable && PulseTestServer.findExecutable("sox") != nil
    }

    /// What a lesson file declares, read here from its JSON (not by Narrator's parser).
    struct Declared: Equatable, CustomStringConvertible {
        var chains: [String]
        var activities: [String: [String]]
        var description: String { "chains \(chains), activities \(activities)" }

        init(path: String) throws {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
            chains = ((object["chains"] as? [String: Any]) ?? [:]).keys.sorted()
            var activities: [String: [String]] = [:]
            for (id, value) in (object["activities"] as? [String: Any]) ?? [:] {
                var answers: [String] = []
                for step in ((value as? [String: Any])?["steps"] as? [[String: Any]]) ?? [] {
                    if let answer = step["answer"] as? String, !answers.contains(answer) { answers.append(answer) }
                }
                activities[id] = answers
            }
            self.activities = activities
        }

        init(events: [ReceivedEvent]) {
            chains = events.compactMap { $0.fields["chain"] as? String }
            var activities: [String: [String]] = [:]
            for event in events {
                if let id = event.fields["activity"] as? String { activities[id] = event.fields["answers"] as? [String] ?? ["(none)"] }
            }
            self.activities = activities
        }
    }

    @Test func libraryListsEveryChainAndActivityOfEveryLesson() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let reply = try Clients.run(daemon, unix: true, [#"{"id": 1, "op": "library"}"#, #"{"id": 2, "op": "library", "lesson": "math.json"}"#])
        #expect(reply.status == 0, "\(reply.stderr)")
        let listing = reply.events.filter { $0.id == "1" }
        #expect(listing.last?.type == "finished" && listing.filter(\.isTerminal).count == 1)
        let programs = listing.filter { $0.type == "program" }
        #expect(programs.allSatisfy { $0.frame == nil && $0.fields["heard"] is NSNull })
        let lessons = try FileManager.default.contentsOfDirectory(atPath: Self.library).filter { $0.hasSuffix(".json") }.sorted()
        #expect(Array(Set(programs.compactMap { $0.fields["lesson"] as? String })).sorted() == lessons)
        for lesson in lessons {
            let declared = try Declared(path: Self.library + "/" + lesson)
            let listed = Declared(events: programs.filter { $0.fields["lesson"] as? String == lesson })
            #expect(listed == declared, "\(lesson)")
        }
        let hatShop = try #require(programs.first { $0.fields["activity"] as? String == "hat-shop" })
        #expect(hatShop.fields["sounds"] as? [String] == ["cat", "hats"] && hatShop.fields["states"] as? [String] == ["first-use", "return-use"])
        // The sight words' hints pulse tile-see and tile-hat, the tiles of their steps' answers.
        let sightWords = try #require(programs.first { $0.fields["activity"] as? String == "sight-words" })
        #expect(sightWords.fields["pulseAnswers"] as? [String: String] == ["tile-see": "see", "tile-hat": "hat"], "\(sightWords.fields)")
        // A key the op does not take: one error naming it.
        let refused = reply.events.filter { $0.id == "2" }
        #expect(refused.count == 1 && refused.first?.type == "error", "\(refused.map(\.fields))")
        #expect((refused.first?.fields["message"] as? String)?.contains("lesson: unknown key") == true, "\(refused.map(\.fields))")
        // The lines as sent, against the schema.
        let raw = try Clients.socat(daemon, input: #"{"id": 1, "op": "library"}"# + "\n")
        #expect(raw.stdout.split(separator: "\n").count == listing.count)
        #expect(try EventSchema.problems(raw.stdout, as: "daemonLine") == nil)
    }

    /// A library with a lesson, a file that is not a lesson, a broken one and a link that leads
    /// out: the lessons are listed, the broken one and the link are each one `problem` naming it
    /// by its path in the library, and nothing about where the library lives; the file that is
    /// plainly not a lesson is not listed, only counted (`notLessons`).
    @Test func libraryNamesWhatCannotBeRead() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lessons = dir.file("lib")
        try FileManager.default.createDirectory(atPath: lessons, withIntermediateDirectories: true)
        try ReadAlongLesson.write(in: lessons)
        _ = dir.write("lib/notes.json", #"{"hello": 1}"#)
        _ = dir.write("lib/broken.json", #"{"sampleRate": 48000, "clips": {"#)
        _ = dir.write("outside.json", #"{}"#)
        try FileManager.default.createSymbolicLink(atPath: lessons + "/link.json", withDestinationPath: dir.file("outside.json"))
        let daemon = try Daemon(dir: dir, library: lessons, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let reply = try Clients.run(daemon, unix: true, [#"{"id": "l", "op": "library"}"#])
        let programs = reply.events.filter { $0.type == "program" }
        #expect(programs.map { $0.fields["lesson"] as? String ?? "" } == ["broken.json", "link.json", "made.json", "made.json", "made.json"])
        #expect(reply.events.last?.type == "finished" && reply.events.last?.fields["notLessons"] as? Int == 1, "\(reply.events.last?.fields ?? [:])")
        let problems = Dictionary(uniqueKeysWithValues: programs.compactMap { event in
            (event.fields["problem"] as? String).map { (event.fields["lesson"] as? String ?? "", $0) }
        })
        #expect(Set(problems.keys) == ["broken.json", "link.json"], "\(problems)")
        #expect(problems["link.json"]?.contains("outside the lesson library") == true, "\(problems)")
        #expect(problems["broken.json"]?.hasPrefix("broken.json") == true, "\(problems)")
        #expect(!problems.values.contains { $0.contains(dir.path) }, "\(problems)")
        let made = programs.filter { $0.fields["lesson"] as? String == "made.json" }
        #expect(made.compactMap { $0.fields["chain"] as? String } == ["ask", "right"])
        #expect(made.first { $0.fields["activity"] != nil }?.fields["answers"] as? [String] == ["red"])
        #expect(reply.events.last?.type == "finished")
    }

    /// The listing links hint targets to answers and gives the transcripts of clips without
    /// words, for the lesson written here (ground truth: what the test wrote): `tile-red` and
    /// `tile-blue` are the tiles of the steps whose hints pulse them; `both`, pulsed by both
    /// steps' hints, `star`, pulsed by a right answer's feedback, and `blue`, an answer's own
    /// name, are not linked; only the clip with a transcript and no timings has a text.
    @Test func libraryLinksHintTargetsAndGivesTexts() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lessons = dir.file("lib")
        try FileManager.default.createDirectory(atPath: lessons, withIntermediateDirectories: true)
        try HintLesson.write(in: lessons)
        let daemon = try Daemon(dir: dir, library: lessons, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let reply = try Clients.run(daemon, unix: true, [#"{"id": "l", "op": "library"}"#])
        #expect(reply.status == 0 && reply.events.last?.type == "finished", "\(reply.stderr)")
        let programs = reply.events.filter { $0.type == "program" }
        func program(_ key: String, _ name: String) -> ReceivedEvent? { programs.first { $0.fields[key] as? String == name } }
        let pick = try #require(program("activity", "pick"))
        #expect(pick.fields["pulseAnswers"] as? [String: String] == ["tile-red": "red", "tile-blue": "blue"], "\(pick.fields)")
        #expect(pick.fields["texts"] as? [String: String] == ["hint": HintLesson.transcript], "\(pick.fields)")
        #expect(program("chain", "hint")?.fields["texts"] as? [String: String] == ["hint": HintLesson.transcript])
        #expect(program("chain", "ask").map { $0.fields["texts"] == nil } == true)
        #expect(program("chain", "right").map { $0.fields["texts"] == nil } == true)
        let raw = try Clients.socat(daemon, input: #"{"id": 1, "op": "library"}"# + "\n")
        #expect(try EventSchema.problems(raw.stdout, as: "daemonLine") == nil)
    }

    /// A lesson made to swell the listing: 40 chains that each play one clip with a 40 KiB
    /// transcript of control characters (6 bytes each once escaped), a chain of 100 clips with
    /// 1 KiB ones, and a hint that pulses 20,000 targets. The listing still ends with `finished`,
    /// every line parses and stays under the loader's 1 MiB, one program's `texts` and
    /// `pulseAnswers` hold at most 64 KiB, and the lesson's `texts` at most 1 MiB in all.
    @Test func libraryListingStaysBoundedWithLongTranscripts() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lessons = dir.file("lib")
        try FileManager.default.createDirectory(atPath: lessons, withIntermediateDirectories: true)
        let tone = try run("/usr/bin/env", ["sox", "-n", "-r", "48000", "-c", "1", "-b", "16", lessons + "/t.wav", "synth", "0.1", "sine", "330"])
        try #require(tone.status == 0, "\(tone.stderr)")
        let long = String(repeating: "\\u0001", count: 40 << 10)
        let short = String(repeating: "\\u0002", count: 1 << 10)
        var clips = [#""long": {"file": "t.wav", "transcript": "\#(long)"}"#]
        var chains: [String] = []
        for n in 0..<40 { chains.append(#""c\#(n)": [{"clip": "long"}]"#) }
        for n in 0..<100 { clips.append(#""s\#(n)": {"file": "t.wav", "transcript": "\#(short)"}"#) }
        chains.append(#""b-many": ["# + (0..<100).map { #"{"clip": "s\#($0)"}"# }.joined(separator: ", ") + "]")
        let targets = (0..<20_000).map { #""t\#($0)""# }.joined(separator: ", ")
        let lesson = """
            {"sampleRate": 48000, "clips": {\(clips.joined(separator: ", "))}, "chains": {\(chains.joined(separator: ", "))},
             "activities": {"a": {"steps": [{"answer": "x", "idle": {"chain": "c0", "pulse": [\(targets)]}, "correct": "c1", "wrong": ["c2"]}]}}}
            """
        try lesson.write(toFile: lessons + "/big.json", atomically: true, encoding: .utf8)
        let daemon = try Daemon(dir: dir, library: lessons, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let raw = try Clients.socat(daemon, input: #"{"id": 1, "op": "library"}"# + "\n")
        let lines = raw.stdout.split(separator: "\n")
        #expect(lines.allSatisfy { $0.utf8.count < 1 << 20 }, "\(lines.map(\.utf8.count).max() ?? 0) bytes")
        let events = try ReceivedEvent.parse(raw.stdout)
        #expect(events.last?.type == "finished" && events.filter { $0.type == "program" }.count == 42, "\(events.last?.fields ?? [:])")
        func bytes(_ map: [String: String]) -> Int { map.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count } }
        var lessonTexts = 0
        for event in events where event.type == "program" {
            let texts = event.fields["texts"] as? [String: String] ?? [:]
            #expect(bytes(texts) <= 64 << 10, "\(event.fields["chain"] ?? event.fields["activity"] ?? "")")
            lessonTexts += bytes(texts)
        }
        #expect(lessonTexts <= 1 << 20 && lessonTexts >= 1 << 19, "\(lessonTexts)")
        // Programs in byte order of their names: b-many, then c0, c1, c10 … c9. The chain of
        // short clips gets, in byte order of their ids, what fits in 64 KiB; then as many long
        // transcripts (4 + 40 Ki bytes each) as fit in the rest of the lesson's 1 MiB.
        var left = 64 << 10
        var expected: [String] = []
        for id in (0..<100).map({ "s\($0)" }).sorted() where id.utf8.count + 1024 <= left {
            expected.append(id)
            left -= id.utf8.count + 1024
        }
        let many = try #require(events.first { $0.fields["chain"] as? String == "b-many" })
        let fitted = (many.fields["texts"] as? [String: String] ?? [:]).keys.sorted()
        #expect(expected.count < 100 && fitted == expected, "\(fitted.count) \(expected.count)")
        let chainsWithText = events.filter { ($0.fields["chain"] as? String)?.hasPrefix("c") == true && $0.fields["texts"] != nil }
        #expect(chainsWithText.count == ((1 << 20) - (64 << 10) + left) / (4 + (40 << 10)), "\(chainsWithText.count)")
        let hints = try #require(events.first { $0.fields["activity"] as? String == "a" }?.fields["pulseAnswers"] as? [String: String])
        #expect(bytes(hints) <= 64 << 10 && hints.count > 5000 && Set(hints.values) == ["x"], "\(hints.count)")
    }

    // MARK: The page in Chromium

    /// The read-along page's address with the daemon's token (`/` is the component's demo).
    static func page(_ daemon: Daemon) -> String { "http://127.0.0.1:\(daemon.port)/read-along.html#token=\(daemon.token)" }

    /// One program watched on the page: each playback event as the page received it, with what
    /// the page showed once it had handled it.
    struct Watched {
        let snapshots: [[String: Any]]
        let shots: [String: [String: Any]]
        let final: [String: Any]

        /// The snapshots of the playback's own events.
        var playback: [[String: Any]] {
            let name = snapshots.first { ($0["event"] as? [String: Any])?["type"] as? String == "start" }.flatMap { ($0["event"] as? [String: Any])?["id"] as? String }
            return snapshots.filter { ($0["event"] as? [String: Any])?["id"] as? String == name }
        }

        static func type(_ snapshot: [String: Any]) -> String { (snapshot["event"] as? [String: Any])?["type"] as? String ?? "" }
        static func event(_ snapshot: [String: Any]) -> [String: Any] { snapshot["event"] as? [String: Any] ?? [:] }
    }

    static func watch(_ daemon: Daemon, query: String, shots: URL, _ options: [String]) throws -> Watched {
        let url = "http://127.0.0.1:\(daemon.port)/read-along.html?\(query)#token=\(daemon.token)"
        let driven = try runTool("python3", [Clients.browser, url, shots.path, "--timeout", "30", "--scenario"] + options)
        try #require(driven.status == 0, "\(driven.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(driven.stdout.utf8)) as? [String: Any])
        #expect(report["timedOut"] as? Bool == false, "the page did not get there: \(report["pending"] ?? "")")
        return Watched(
            snapshots: report["snapshots"] as? [[String: Any]] ?? [], shots: report["shots"] as? [String: [String: Any]] ?? [:],
            final: report["final"] as? [String: Any] ?? [:])
    }

    /// What holds at every word and sentence, whatever the lesson: the word highlighted is the
    /// one whose cue came last, alone; the sentence highlighted is the last sentence cue's (and
    /// the live region says it); a clip's text is on the page only once its clipStart has come.
    static func expectFollows(_ watched: Watched, _ what: String) {
        var started: [String] = []
        var lastSentence: (key: String, text: String)?
        for snapshot in watched.playback {
            let event = Watched.event(snapshot)
            let type = Watched.type(snapshot)
            if type == "clipStart", let clip = event["clip"] as? String { started.append(clip) }
            let blocks = snapshot["blocks"] as? [String] ?? []
            #expect(blocks.allSatisfy { started.contains($0) }, "\(what): \(blocks) laid out when only \(started) had started")
            // At most the clip being heard and the one before.
            #expect(blocks.count <= 2, "\(what): \(blocks)")
            if type == "sentence", let clip = event["clip"] as? String, let index = event["index"] as? Int {
                lastSentence = ("\(clip)/\(index)", event["text"] as? String ?? "")
            }
            if type == "clipEnd" { lastSentence = nil }
            if type == "word", let clip = event["clip"] as? String, let index = event["index"] as? Int {
                #expect(snapshot["current"] as? String == "\(clip)/\(index)", "\(what): after word \(clip)/\(index) the page shows \(snapshot["current"] ?? "none")")
                #expect(snapshot["heard"] as? [String] == ["\(clip)/\(index)"], "\(what): \(snapshot["heard"] ?? "")")
                #expect((snapshot["words"] as? [String])?.contains("\(clip)/\(index)") == true)
                if let lastSentence {
                    #expect(snapshot["sentence"] as? String == lastSentence.key && snapshot["now"] as? String == lastSentence.text, "\(what): \(snapshot)")
                }
            }
        }
    }

    /// The picture-dictionary popup (the default address's program): the definition's words
    /// laid out when its clip starts, each red as its cue comes, its sentence highlighted.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets and the private sound server"))
    func dictionaryPopupFollowsTheWords() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: Self.library, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let shots = URL(fileURLWithPath: dir.file("shots"))
        let watched = try Self.watch(daemon, query: "lesson=picture-dictionary.json&activity=word-popup", shots: shots, ["--shot", "word:readAlong.current === 'apple/3'"])
        // The timing file is the ground truth for the words.
        let timings = try String(contentsOfFile: Self.library + "/dictionary/apple.txt", encoding: .utf8)
        let texts = timings.split(separator: "\n").map { String($0.split(separator: "\t")[2]) }
        let words = watched.playback.filter { Watched.type($0) == "word" }
        #expect(words.map { Watched.event($0)["text"] as? String ?? "" } == texts)
        // The whole definition is on the page from its clipStart, before its first word.
        let clipStart = try #require(watched.playback.first { Watched.type($0) == "clipStart" })
        #expect(clipStart["words"] as? [String] == texts.indices.map { "apple/\($0)" })
        #expect(watched.playback.first.map { Watched.type($0) } == "start" && (watched.playback.first?["blocks"] as? [String]) == [])
        Self.expectFollows(watched, "popup")
        let shot = try #require(watched.shots["word"])
        #expect(!(shot["red"] is NSNull) && shot["current"] as? String == "apple/3", "\(shot)")
        let final = watched.final
        #expect(final["state"] as? String == "ended" && final["error"] is NSNull, "\(final)")
        let labels = (final["words"] as? [[String: Any]] ?? []).map { "\($0["tag"] ?? "") \($0["label"] ?? "")" }
        #expect(labels.first == "BUTTON Say “apple”", "every word a button with a label: \(labels)")
        #expect(final["live"] as? String == "polite")
        try Self.keepForDocs(shot, as: "read-along-popup.png")
    }

    /// The sight-words activity: the right answer's tile, tapped once the prompt has ended,
    /// gives the activity's `correct` tap and feedback; the next step's idle prompt pulses its
    /// answer's tile (its target is `tile-hat`), animated, when its pulse cue comes; clips the activity's own schedule does
    /// not reach are laid out too.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets and the private sound server"))
    func sightWordsAnswerTileAndPulses() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: Self.library, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let shots = URL(fileURLWithPath: dir.file("shots"))
        let watched = try Self.watch(
            daemon, query: "lesson=homer-sight-words.json&activity=sight-words", shots: shots,
            ["--tap", "see:chainEnd", "--shot", "pulse:document.querySelector('.tile.pulsing')", "--until", "readAlong.pulses.length > 0"])
        let playback = watched.playback
        // The activity took "see" as the right answer: the next step starts.
        #expect(playback.contains { Watched.type($0) == "stepStart" && Watched.event($0)["answer"] as? String == "hat" }, "the answer tile's tap was not taken")
        Self.expectTap("see", in: playback)
        // The pulse: its tile pulses (animated) from the snapshot of its cue: the answer's tile
        // for a target a step's hints pulse (the lesson's idle and wrong feedback: tile-see and
        // tile-hat), else the tile named by the target.
        let pulse = try #require(playback.first { Watched.type($0) == "pulse" })
        let target = try #require(Watched.event(pulse)["target"] as? String)
        let tile = ["tile-see": "see", "tile-hat": "hat"][target] ?? target
        let pulsing = pulse["pulsing"] as? [[String: Any]] ?? []
        #expect(pulsing.map { $0["target"] as? String ?? "" } == [tile] && pulsing.first?["animation"] as? String == "pulse", "\(target): \(pulsing)")
        // Before its cue nothing pulses.
        let firstPulsing = playback.firstIndex { !($0["pulsing"] as? [[String: Any]] ?? []).isEmpty }
        #expect(firstPulsing == playback.firstIndex { Watched.type($0) == "pulse" })
        // The feedback's second sentence (clip p2) was not in the activity's own schedule: its words come from the chains'.
        let p2 = try #require(playback.first { Watched.type($0) == "clipStart" && Watched.event($0)["clip"] as? String == "p2" })
        #expect((p2["words"] as? [String] ?? []).filter { $0.hasPrefix("p2/") }.count == 4, "\(p2)")
        Self.expectFollows(watched, "sight-words")
        let tiles = watched.final["tiles"] as? [[String: Any]] ?? []
        #expect(tiles.filter { $0["button"] as? Bool == true }.map { $0["name"] as? String ?? "" } == ["see", "hat"], "\(tiles)")
        #expect(watched.final["error"] is NSNull)
        let shot = try #require(watched.shots["pulse"])
        #expect((shot["pulsing"] as? [String])?.isEmpty == false)
        try Self.keepForDocs(shot, as: "read-along-activity.png")
    }

    /// A lesson written here (its words and their times are this test's): the answer tile,
    /// pulsed by its own name, reached and pressed with the keyboard (Enter), under
    /// prefers-reduced-motion: a static outline, no animation; both sentences highlighted in
    /// turn.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets and the private sound server"))
    func lessonMadeHereWithKeyboardAndReducedMotion() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lessons = dir.file("lib")
        try FileManager.default.createDirectory(atPath: lessons, withIntermediateDirectories: true)
        try ReadAlongLesson.write(in: lessons)
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: lessons, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let shots = URL(fileURLWithPath: dir.file("shots"))
        let watched = try Self.watch(
            daemon, query: "lesson=made.json&activity=pick", shots: shots,
            ["--reduced-motion", "--keyboard", "--tap", "red:chainEnd", "--shot", "pulse:document.querySelector('.tile.pulsing')",
             "--until", "readAlong.taps.length > 0 && readAlong.playing === null"])
        let playback = watched.playback
        let words = playback.filter { Watched.type($0) == "word" }.map { Watched.event($0)["text"] as? String ?? "" }
        #expect(Array(words.prefix(ReadAlongLesson.words.count)) == ReadAlongLesson.words.map(\.text), "\(words)")
        let sentences = playback.filter { Watched.type($0) == "sentence" }.map { Watched.event($0)["text"] as? String ?? "" }
        #expect(Array(sentences.prefix(2)) == ["Pick the red ball.", "Tap it."], "\(sentences)")
        Self.expectFollows(watched, "made.json")
        // The pulse of "red" pulses the answer tile "red": an outline, not an animation.
        let pulse = try #require(playback.first { Watched.type($0) == "pulse" })
        #expect(Watched.event(pulse)["target"] as? String == "red")
        let pulsing = pulse["pulsing"] as? [[String: Any]] ?? []
        #expect(pulsing.count == 1 && pulsing.first?["animation"] as? String == "none" && pulsing.first?["outline"] as? String == "solid", "\(pulsing)")
        #expect(playback.contains { Watched.type($0) == "advance" }, "the step answered, the activity advances")
        Self.expectTap("red", in: playback)
        #expect(watched.final["state"] as? String == "ended" && watched.final["error"] is NSNull, "\(watched.final)")
        let tiles = watched.final["tiles"] as? [[String: Any]] ?? []
        #expect(tiles.map { "\($0["name"] ?? "") \($0["label"] ?? "")" } == ["red Answer red"], "\(tiles)")
        print("read-along screenshot: \(watched.shots["pulse"]?["file"] ?? "none")")
    }

    /// A lesson whose idle prompt pulses `tile-red`, a target named unlike its answer `red`,
    /// and says a clip with a transcript but no timings: the pulse pulses the answer tile `red`
    /// (no second tile), and the clip's transcript is laid out at its clipStart, highlighted
    /// while it plays and no longer once its clipEnd comes.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets and the private sound server"))
    func hintPulsesItsAnswerTileAndATranscriptShows() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lessons = dir.file("lib")
        try FileManager.default.createDirectory(atPath: lessons, withIntermediateDirectories: true)
        try HintLesson.write(in: lessons)
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: lessons, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let shots = URL(fileURLWithPath: dir.file("shots"))
        let watched = try Self.watch(
            daemon, query: "lesson=hints.json&activity=pick", shots: shots,
            ["--shot", "hint:document.querySelector('.transcript.reading')",
             "--until", "window.__snapshots.some(s => s.event.type === 'clipEnd' && s.event.clip === 'hint')"])
        let playback = watched.playback
        Self.expectFollows(watched, "hints.json")
        // The idle prompt's pulse of tile-red pulses the answer tile red, and nothing else.
        let pulse = try #require(playback.first { Watched.type($0) == "pulse" && Watched.event($0)["target"] as? String == "tile-red" })
        let pulsing = (pulse["pulsing"] as? [[String: Any]] ?? []).map { $0["target"] as? String ?? "" }
        #expect(pulsing == ["red"], "\(pulsing)")
        let tiles = (watched.final["tiles"] as? [[String: Any]] ?? []).map { "\($0["name"] ?? "") \($0["button"] as? Bool == true ? "button" : "image")" }
        #expect(tiles == ["red button", "blue button", "both image"], "\(tiles)")
        // The clip without timings: its transcript, from its clipStart to its clipEnd.
        let start = try #require(playback.firstIndex { Watched.type($0) == "clipStart" && Watched.event($0)["clip"] as? String == "hint" })
        let end = try #require(playback.firstIndex { Watched.type($0) == "clipEnd" && Watched.event($0)["clip"] as? String == "hint" })
        func shown(_ snapshot: [String: Any]) -> [String] {
            (snapshot["transcripts"] as? [[String: Any]] ?? []).map { "\($0["clip"] ?? "") \($0["text"] ?? "") \($0["reading"] as? Bool == true)" }
        }
        #expect(playback[..<start].allSatisfy { shown($0).isEmpty }, "a transcript before its clip started")
        for snapshot in playback[start..<end] {
            #expect(shown(snapshot) == ["hint \(HintLesson.transcript) true"], "\(shown(snapshot))")
        }
        #expect(shown(playback[end]) == ["hint \(HintLesson.transcript) false"], "\(shown(playback[end]))")
        #expect(playback[start]["now"] as? String == HintLesson.transcript)
        #expect(watched.shots["hint"] != nil && watched.final["error"] is NSNull, "\(watched.final)")
    }

    /// `serve --library .` on the README's first-lesson layout (a lesson beside its clips'
    /// timing files, and a cue sheet): the listing names the lesson's programs only, and its
    /// `finished` says how many .json files were not lessons; a lesson with a mistake is still
    /// listed with its problem. The page opens on its menu, playing nothing, and however long a
    /// problem is, Start stays in a 1200 px window.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets and the private sound server"))
    func aFolderOfTimingsListsItsLessonsOnlyAndThePageWaitsOnItsMenu() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = dir.file("my-lesson")
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        var clips: [String] = []
        for (name, text) in [("find", "Find the cat."), ("tap", "Tap the cat."), ("yes", "Yes, that is the cat.")] {
            let made = try run(Repo.narrator, ["synth", text, "--output", library + "/\(name).wav", "--timings", library + "/\(name).json"])
            try #require(made.status == 0, "\(made.stderr)")
            clips.append(#""\#(name)": {"file": "\#(name).wav", "timings": "\#(name).json"}"#)
        }
        dir.write(
            "my-lesson/lesson.json",
            #"{"sampleRate": 48000, "channels": 1, "clips": {"# + clips.joined(separator: ", ")
                + #"}, "chains": {"question": [{"clip": "find"}], "right": [{"clip": "yes"}]}, "activities": {"find-the-cat": {"steps": [{"prompt": "question", "answer": "cat", "idle": "question", "wrong": ["question"], "correct": "right"}]}}}"#)
        let cues = try run(Repo.narrator, ["render", library + "/lesson.json", "--chain", "right", "--output", library + "/right.wav", "--cues", library + "/right.cues.json"])
        try #require(cues.status == 0, "\(cues.stderr)")
        // A lesson with a mistake (cut short), and a long name: listed, with its problem.
        dir.write("my-lesson/" + String(repeating: "a-lesson-with-a-very-long-name-", count: 6) + ".json", #"{"sampleRate": 48000, "clips": {"x": {"file": "x.wav"}}, "chains": {"c": [{"clip": "x"}]"#)
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: library, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let reply = try Clients.run(daemon, unix: true, [#"{"id": "l", "op": "library"}"#])
        let programs = reply.events.filter { $0.type == "program" }
        #expect(Set(programs.compactMap { $0.fields["lesson"] as? String }).count == 2, "\(programs.map(\.fields))")
        #expect(programs.filter { $0.fields["lesson"] as? String == "lesson.json" }.count == 3)
        #expect(programs.filter { $0.fields["problem"] != nil }.count == 1)
        #expect(reply.events.last?.type == "finished" && reply.events.last?.fields["notLessons"] as? Int == 4, "\(reply.events.last?.fields ?? [:])")
        let driven = try runTool("python3", [Clients.browser, Self.page(daemon), dir.file("menu"), "--timeout", "30", "--menu"])
        try #require(driven.status == 0, "\(driven.stderr)")
        let shown = try #require(try JSONSerialization.jsonObject(with: Data(driven.stdout.utf8)) as? [String: Any])
        #expect(shown["state"] as? String == "choosing" && shown["playing"] is NSNull && shown["program"] is NSNull, "\(shown)")
        #expect(shown["menuValue"] as? String == "")
        let start = try #require(shown["start"] as? [String: Double])
        let width = try #require(shown["width"] as? Double)
        #expect((start["right"] ?? .infinity) <= width && (start["bottom"] ?? .infinity) <= 120, "Start at \(start) in a window \(width) wide")
        let options = try #require(shown["options"] as? [[String: Any]])
        #expect(!options.contains { ($0["text"] as? String ?? "").contains("find.json") }, "\(options)")
    }

    /// Every chain and activity of every sample lesson, opened on the page by its address:
    /// each plays without an error, and a program with words shows the words of its first clip
    /// with words, only clips that have started.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets and the private sound server"))
    func everyProgramOfTheSampleLibraryPlaysOnThePage() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: Self.library, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let driven = try runTool("python3", [Clients.browser, Self.page(daemon), dir.file("every"), "--timeout", "30", "--every"])
        try #require(driven.status == 0, "\(driven.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(driven.stdout.utf8)) as? [String: Any])
        let programs = try #require(report["programs"] as? [[String: Any]])
        var expected = 0
        for lesson in try FileManager.default.contentsOfDirectory(atPath: Self.library) where lesson.hasSuffix(".json") {
            let declared = try Declared(path: Self.library + "/" + lesson)
            expected += declared.chains.count + declared.activities.count
        }
        #expect(programs.count == expected, "the page's menu has \(programs.count) programs, the lessons declare \(expected)")
        for shown in programs {
            let listed = shown["listed"] as? [String: Any] ?? [:]
            let name = "\(listed["lesson"] ?? "") \(listed["chain"] ?? listed["activity"] ?? "")"
            #expect(["playing", "ended", "closed"].contains(shown["state"] as? String ?? ""), "\(name): \(shown)")
            #expect(shown["error"] is NSNull, "\(name): \(shown)")
            let clips = shown["clips"] as? [String] ?? []
            let blocks = shown["blocks"] as? [String] ?? []
            #expect(blocks.allSatisfy { clips.contains($0) }, "\(name): laid out \(blocks), started \(clips)")
            if (shown["bookWords"] as? Int ?? 0) > 0, shown["state"] as? String == "playing" {
                #expect((shown["words"] as? Int ?? 0) > 0, "\(name): no words shown")
            }
        }
    }

    /// The activity's `tap` cue for `answer`, `correct`, and its `feedback`, as the page
    /// received them: always, even when the answer's plan took over late (`lateSwitch`), when
    /// they come at the switch.
    static func expectTap(_ answer: String, in playback: [[String: Any]]) {
        let tap = playback.first { Watched.type($0) == "tap" }
        #expect(tap != nil, "no tap cue (late switch: \(playback.contains { Watched.type($0) == "lateSwitch" }))")
        if let tap {
            #expect(Watched.event(tap)["answer"] as? String == answer && Watched.event(tap)["result"] as? String == "correct", "\(Watched.event(tap))")
        }
        #expect(playback.contains { Watched.type($0) == "feedback" })
    }

    /// Copies a screenshot for the docs page when asked to (NARRATOR_DOC_SHOTS=1), if small.
    static func keepForDocs(_ shot: [String: Any], as name: String) throws {
        guard let file = shot["file"] as? String else { return }
        print("read-along screenshot: \(file)")
        guard ProcessInfo.processInfo.environment["NARRATOR_DOC_SHOTS"] == "1" else { return }
        let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
        guard size < 100_000 else { return }
        let target = Repo.path("docs/images/" + name)
        try? FileManager.default.createDirectory(atPath: Repo.path("docs/images"), withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: target)
        try FileManager.default.copyItem(atPath: file, toPath: target)
    }
}

/// A small lesson written by the tests: a 2.4 s tone with six words in two sentences (times
/// chosen here), a chain that pulses the answer "red" and asks, an activity with one step
/// (answered: a short tone, "Yes!", then the activity advances).
enum ReadAlongLesson {
    static let words: [(start: Double, end: Double, text: String)] = [
        (0.10, 0.40, "Pick"), (0.45, 0.65, "the"), (0.70, 1.00, "red"), (1.05, 1.40, "ball."), (1.60, 1.90, "Tap"), (1.95, 2.30, "it."),
    ]

    static func write(in folder: String) throws {
        let tone = try run("/usr/bin/env", ["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", folder + "/ask.wav", "synth", "2.4", "sine", "330", "vol", "0.3"])
        try #require(tone.status == 0, "\(tone.stderr)")
        let yes = try run("/usr/bin/env", ["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", folder + "/yes.wav", "synth", "0.8", "sine", "660", "vol", "0.3"])
        try #require(yes.status == 0, "\(yes.stderr)")
        let labels = words.map { String(format: "%.6f\t%.6f\t%@", $0.start, $0.end, $0.text) }.joined(separator: "\n") + "\n"
        try labels.write(toFile: folder + "/ask.txt", atomically: true, encoding: .utf8)
        try "0.100000\t0.600000\tYes!\n".write(toFile: folder + "/yes.txt", atomically: true, encoding: .utf8)
        let lesson = """
            {
              "sampleRate": 48000,
              "channels": 2,
              "clips": {
                "ask": {"file": "ask.wav", "timings": "ask.txt"},
                "yes": {"file": "yes.wav", "timings": "yes.txt"}
              },
              "chains": {
                "ask": [{"pulse": ["red"]}, {"clip": "ask"}],
                "right": [{"clip": "yes"}]
              },
              "activities": {
                "pick": {"idleSeconds": 5.0, "steps": [
                  {"prompt": "ask", "answer": "red", "correct": "right", "wrong": ["ask"]}
                ]}
              }
            }
            """
        try lesson.write(toFile: folder + "/made.json", atomically: true, encoding: .utf8)
    }
}

/// A lesson written by the tests for hints and transcripts: a prompt with words (the 2.4 s tone
/// of `ReadAlongLesson`), a hint clip with a transcript and no timings, two steps whose idle
/// prompts pulse `tile-red` and `tile-blue` (and `both`, in each), a right answer's feedback
/// that pulses `star`, and a wrong answer's that pulses `blue` (an answer's own name).
enum HintLesson {
    static let transcript = "Find the “red” ball, then the blue one — voilà."

    static func write(in folder: String) throws {
        try ReadAlongLesson.write(in: folder)
        let hint = try run("/usr/bin/env", ["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", folder + "/hint.wav", "synth", "1.2", "sine", "440", "vol", "0.3"])
        try #require(hint.status == 0, "\(hint.stderr)")
        try FileManager.default.removeItem(atPath: folder + "/made.json")
        let lesson = """
            {
              "sampleRate": 48000,
              "channels": 2,
              "clips": {
                "ask": {"file": "ask.wav", "timings": "ask.txt"},
                "hint": {"file": "hint.wav", "transcript": "\(transcript)"},
                "yes": {"file": "yes.wav", "timings": "yes.txt", "transcript": "Yes!"}
              },
              "chains": {
                "ask": [{"clip": "ask"}],
                "hint": [{"clip": "hint"}],
                "right": [{"clip": "yes"}]
              },
              "activities": {
                "pick": {"idleSeconds": 0.3, "steps": [
                  {"prompt": "ask", "answer": "red", "idle": {"chain": "hint", "pulse": ["tile-red", "both"]},
                   "correct": {"chain": "right", "pulse": ["star"]}, "wrong": [{"chain": "hint", "pulse": ["blue"]}]},
                  {"answer": "blue", "idle": {"chain": "hint", "pulse": ["tile-blue", "both"]},
                   "correct": "right", "wrong": [{"chain": "hint", "pulse": ["tile-blue"]}]}
                ]}
              }
            }
            """
        try lesson.write(toFile: folder + "/hints.json", atomically: true, encoding: .utf8)
    }
}
