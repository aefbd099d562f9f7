import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

extension Clients {
    /// Drives a page with `<narrator-player>` in headless Chromium (docs/component.md).
    static let player = Repo.path("Tests/clients/player_browser.py")
    static var haveAxe: Bool {
        (try? runTool("python3", ["-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('axe_selenium_python') is None)"]).status) == 0
    }
}

/// `<narrator-player>` (docs/component.md) in headless Chromium against a daemon playing through
/// the private sound server: the docs' example as a host app's page, an activity at named
/// moments checked pixel by pixel, a wrong tap, axe-core, reduced motion and the demo's layout.
@Suite("narrator-player component", .serialized)
struct NarratorPlayerTests {
    static var canBrowse: Bool {
        ReadAlongPageTests.canBrowse && Clients.haveAxe
    }

    typealias Event = [String: Any]

    /// The cue sheet `narrator cues` computes (the CLI, not the daemon nor the page).
    static func cueSheet(_ lesson: String, _ arguments: [String]) throws -> [Event] {
        let sheet = try run(Repo.narrator, ["cues", lesson] + arguments)
        try #require(sheet.status == 0, "\(sheet.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])
        return try #require(object["cues"] as? [Event])
    }

    /// `heard` (the host page's listener's events, in order) against `cues`: the same types in the
    /// same order, every member of each cue equal, frames shifted by `offset`.
    static func expectSame(_ heard: [Event], _ cues: [Event], offset: Int = 0, _ what: String) {
        func line(_ event: Event, _ keys: [String], shift: Int) -> String {
            keys.map { key in
                let value = event[key]
                if key == "frame" || key == "endFrame", let frame = value as? Int { return "\(key)=\(frame + shift)" }
                return "\(key)=\(value.map { "\($0)" } ?? "missing")"
            }.joined(separator: " ")
        }
        let expected = cues.map { line($0, $0.keys.sorted(), shift: offset) }
        let got = zip(heard, cues).map { line($0, $1.keys.sorted(), shift: 0) } + heard.dropFirst(cues.count).map { line($0, $0.keys.sorted(), shift: 0) }
        let first = Array(zip(got, expected)).firstIndex { $0.0 != $0.1 } ?? min(got.count, expected.count)
        #expect(got == expected, "\(what): \(got.count) events heard, \(expected.count) in the sheet; first difference at \(first): heard \(first < got.count ? got[first] : "nothing"), sheet \(first < expected.count ? expected[first] : "nothing")")
    }

    static func drive(_ arguments: [String]) throws -> [String: Any] {
        let driven = try runTool("python3", [Clients.player] + arguments)
        try #require(driven.status == 0, "\(driven.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(driven.stdout.utf8)) as? [String: Any])
        #expect(report["timedOut"] as? Bool != true, "the page did not get there: \(report["pending"] ?? "") \(report["final"] ?? "")")
        return report
    }

    static func detail(_ heard: [String: Any]) -> Event { heard["detail"] as? Event ?? [:] }

    /// The player's lesson (`PlayerLesson`) written into a library of its own (`also` adds to
    /// it), a daemon playing it through the private sound server, then `body`.
    static func withPlayerLesson(
        also: (TempDir) -> Void = { _ in },
        _ body: (_ dir: TempDir, _ lessons: String, _ made: PlayerLesson.Made, _ daemon: Daemon, _ server: PulseTestServer) throws -> Void
    ) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lessons = dir.file("lib")
        try FileManager.default.createDirectory(atPath: lessons, withIntermediateDirectories: true)
        let made = try PlayerLesson.write(in: lessons)
        also(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: lessons, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        try body(dir, lessons, made, daemon, server)
    }

    /// The HTML example of docs/component.md after `<!-- runnable: NAME -->`, with `daemon`'s
    /// address and token put in, written to `app/index.html` in `dir` (served from another
    /// origin, as an app's own page): its path.
    static func docExample(_ name: String, _ dir: TempDir, _ daemon: Daemon) throws -> String {
        let page = try String(contentsOfFile: Repo.path("docs/component.md"), encoding: .utf8)
        let marker = try #require(page.range(of: "<!-- runnable: \(name) -->"))
        let fence = try #require(page.range(of: "```html\n", range: marker.upperBound..<page.endIndex))
        let end = try #require(page.range(of: "\n```", range: fence.upperBound..<page.endIndex))
        var example = String(page[fence.upperBound..<end.lowerBound])
        #expect(example.contains("http://127.0.0.1:8700") && example.contains(#"token="TOKEN""#))
        example = example.replacingOccurrences(of: "http://127.0.0.1:8700", with: "http://127.0.0.1:\(daemon.port)")
            .replacingOccurrences(of: #"token="TOKEN""#, with: #"token="\#(daemon.token)""#)
        try FileManager.default.createDirectory(atPath: dir.file("app"), withIntermediateDirectories: true)
        return dir.write("app/index.html", example)
    }

    /// The docs' copy-paste example, taken from docs/component.md with the daemon's address and
    /// token put in, served from another origin (as an app's own page): its listener hears every
    /// cue of the chain in order, each as the CLI's cue sheet has it, between `start` and
    /// `finished`; its own listeners caption the words and move its pictures at their pulses.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets, axe-selenium-python and the private sound server"))
    func theDocsExampleHearsEveryCueOfItsChainInOrder() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: ReadAlongPageTests.library, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let file = try Self.docExample("player", dir, daemon)
        let cues = try Self.cueSheet(ReadAlongPageTests.library + "/sample.json", ["--chain", "correct", "--seed", "7"])
        let types = Set(cues.compactMap { $0["type"] as? String }).union(["start", "finished"]).sorted()
        let report = try Self.drive([file, dir.file("shots"), "--serve", "--record", types.joined(separator: ","), "--until", "P.view.state === 'ended'"])
        let heard = try #require(report["heard"] as? [[String: Any]])
        #expect(heard.first?["type"] as? String == "start" && heard.last?["type"] as? String == "finished", "\(heard.map { $0["type"] ?? "" })")
        Self.expectSame(heard.filter { !["start", "finished"].contains($0["type"] as? String ?? "") }.map(Self.detail), cues, "sample.json correct")
        // The element had drawn each word when its event came: the word lit is that word.
        for event in heard where event["type"] as? String == "word" {
            let detail = Self.detail(event)
            let shown = event["shown"] as? [String: Any] ?? [:]
            #expect(shown["current"] as? String == "\(detail["clip"] ?? "")/\(detail["index"] ?? "")", "\(shown)")
        }
        let final = try #require(report["final"] as? [String: Any])
        #expect(final["caption"] as? String == "The end", "\(final)")
        #expect(final["hostPictures"] as? [String] == ["ticket-1", "checkbox"], "\(final)")
        #expect((final["view"] as? [String: Any])?["error"] is NSNull, "\(final)")
    }

    /// An activity written here, on the demo page: screenshots at a word lit, a tile pulsing, a
    /// wrong tap and the end, each checked for the theme colour that must show in the box of what
    /// must show it (and nowhere else); the wrong tile, clicked with the mouse, gives a `tap`
    /// event with result `wrong` and then, frame for frame from the tap, the events of the
    /// wrong-answer feedback `narrator cues --taps` computes; the prompt chain's cues are the
    /// CLI's; axe-core finds no serious or critical violation while it plays and at its end.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets, axe-selenium-python and the private sound server"))
    func anActivityAtNamedMomentsAWrongTapAndAxe() throws {
        try Self.withPlayerLesson { dir, lessons, made, daemon, _ in
            let url = "http://127.0.0.1:\(daemon.port)/?lesson=player.json&activity=pick#token=\(daemon.token)"
            let types = ["start", "activityStart", "stepStart", "chainStart", "clipStart", "sentence", "word", "clipEnd", "pulse", "chainEnd",
                         "tap", "feedback", "feedbackEnd", "advance", "activityEnd", "finished", "stopped", "error", "idlePrompt"]
            let chainEnds = "heard.filter(h => h.type === 'chainEnd').length"
            let report = try Self.drive([
                url, dir.file("shots"), "--record", types.joined(separator: ","),
                "--shot", "word:P.view.current === 'ask/2'", "--shot", "pulse:R.querySelector('.tile.pulsing')",
                "--tap", "\(made.wrong):\(chainEnds) >= 1", "--shot", "wrong:R.querySelector('.tile.wrong')",
                "--tap", "red:heard.some(h => h.type === 'feedbackEnd')", "--tap", "blue:\(chainEnds) >= 4",
                "--shot", "end:P.view.state === 'ended'",
                "--axe", "playing:P.view.current !== null", "--axe", "end:P.view.state === 'ended'",
            ])
            let heard = try #require(report["heard"] as? [[String: Any]])
            let shots = try #require(report["shots"] as? [String: [String: Any]])
            func colors(_ shot: [String: Any], _ box: String) -> [String: Int] { (shot["colors"] as? [String: [String: Int]])?[box] ?? [:] }
            func area(_ box: Any?) -> Int {
                guard let b = box as? [Double], b.count == 4 else { return 0 }
                return Int((b[2] - b[0]) * (b[3] - b[1]))
            }
            for (name, shot) in shots {
                #expect(shot["steady"] as? Bool == true, "\(name): the element changed while it was shot")
                #expect((shot["bytes"] as? Int ?? .max) < 100_000, "\(name): \(shot["bytes"] ?? 0) bytes")
                for tile in shot["tiles"] as? [[String: Any]] ?? [] {
                    let box = tile["box"] as? [Double] ?? [0, 0, 0, 0]
                    #expect(box[2] - box[0] >= 64 && box[3] - box[1] >= 64, "\(name): tile \(tile["name"] ?? "") is \(box)")
                }
            }
            // A word lit: "red", the highlight over most of its box and nowhere but round it.
            let word = try #require(shots["word"])
            #expect(word["litText"] as? String == "red")
            #expect(colors(word, "lit")["highlight", default: 0] * 2 >= area(word["lit"]), "\(colors(word, "lit")) in \(area(word["lit"])) px")
            #expect(colors(word, "litRing")["highlight"] == colors(word, "all")["highlight"], "highlight outside the lit word: \(colors(word, "all"))")
            // A tile pulsing: the pulse colour round that tile only.
            let pulse = try #require(shots["pulse"])
            let pulsing = try #require((pulse["tiles"] as? [[String: Any]])?.first { $0["pulsing"] as? Bool == true }?["name"] as? String)
            #expect(pulsing == "red")
            #expect(colors(pulse, "ring:red")["pulse", default: 0] >= 400 && colors(pulse, "ring:red")["pulse"] == colors(pulse, "all")["pulse"], "\(colors(pulse, "all"))")
            // The wrong tap: that tile in the wrong colour, no other.
            let wrong = try #require(shots["wrong"])
            #expect(colors(wrong, "tile:" + made.wrong)["wrong", default: 0] * 2 >= area((wrong["tiles"] as? [[String: Any]])?.first { $0["name"] as? String == made.wrong }?["box"]))
            // (round it: the tile shakes)
            #expect(colors(wrong, "ring:" + made.wrong)["wrong"] == colors(wrong, "all")["wrong"], "\(colors(wrong, "all"))")
            // The end: the end panel, no word lit.
            let end = try #require(shots["end"])
            #expect(colors(end, "end")["end", default: 0] * 2 >= area(end["end"]), "\(colors(end, "end")) in \(area(end["end"]))")
            #expect(colors(end, "all")["highlight"] == 0)
            // The tiles: the step's choices (its answers when the lesson cannot give choices), with pictures when it has them.
            let tiles = (word["tiles"] as? [[String: Any]] ?? []).map { $0["name"] as? String ?? "" }
            #expect(tiles == made.firstTiles, "\(tiles)")
            if made.pictures {
                let alts = (word["tiles"] as? [[String: Any]] ?? []).map { $0["picture"] as? String ?? "" }
                #expect(alts == made.firstTiles.map { "a \($0) ball" }, "\(alts)")
            }

            // The prompt chain as the CLI schedules it, from the activity's chainStart.
            let events = heard.map(Self.detail)
            let promptStart = try #require(events.firstIndex { $0["type"] as? String == "chainStart" && $0["chain"] as? String == "ask" })
            let promptEnd = try #require(events.firstIndex { $0["type"] as? String == "chainEnd" && $0["chain"] as? String == "ask" })
            let offset = events[promptStart]["frame"] as? Int ?? -1
            Self.expectSame(Array(events[(promptStart + 1)...promptEnd]), try Self.cueSheet(lessons + "/player.json", ["--chain", "ask"]), offset: offset, "prompt")
            // The wrong tap, then its feedback, as `narrator cues --taps` computes them.
            let tap = try #require(events.firstIndex { $0["type"] as? String == "tap" })
            #expect(events[tap]["answer"] as? String == made.wrong && events[tap]["result"] as? String == "wrong", "\(events[tap])")
            #expect((heard[tap]["shown"] as? [String: Any])?["wrong"] as? [String] == [made.wrong], "\(heard[tap])")
            let feedbackEnd = try #require(events[tap...].firstIndex { $0["type"] as? String == "feedbackEnd" })
            let sheet = try Self.cueSheet(lessons + "/player.json", ["--activity", "pick", "--taps", "3:" + made.wrong])
            let sheetTap = try #require(sheet.firstIndex { $0["type"] as? String == "tap" })
            let sheetEnd = try #require(sheet[sheetTap...].firstIndex { $0["type"] as? String == "feedbackEnd" })
            let tapFrame = events[tap]["frame"] as? Int ?? -1
            Self.expectSame(
                Array(events[tap...feedbackEnd]), Array(sheet[sheetTap...sheetEnd]).map { cue in
                    var shifted = cue
                    for key in ["frame", "endFrame"] { if let f = cue[key] as? Int { shifted[key] = f - (sheet[sheetTap]["frame"] as? Int ?? 0) } }
                    return shifted
                }, offset: tapFrame, "wrong feedback")
            #expect(events[tap...feedbackEnd].contains { $0["type"] as? String == "word" && $0["clip"] as? String == "nope" }, "the feedback chain's words")
            // After it the wrong mark goes; the right answers end the activity.
            #expect(((heard[feedbackEnd]["shown"] as? [String: Any])?["wrong"] as? [String])?.isEmpty == true)
            let taps = events.filter { $0["type"] as? String == "tap" }.map { "\($0["answer"] ?? ""):\($0["result"] ?? "")" }
            #expect(taps == ["\(made.wrong):wrong", "red:correct", "blue:correct"], "\(taps)")
            #expect(events.last?["type"] as? String == "finished")

            let axe = try #require(report["axe"] as? [String: [[String: Any]]])
            #expect(Set(axe.keys) == ["playing", "end"])
            for (moment, violations) in axe {
                print("axe at \(moment): \(violations.map { "\($0["id"] ?? "") (\($0["impact"] ?? ""))" })")
                let bad = violations.filter { ["serious", "critical"].contains($0["impact"] as? String ?? "") }
                #expect(bad.isEmpty, "\(moment): \(bad)")
            }
            for name in ["word", "pulse", "wrong", "end"] {
                if let shot = shots[name] { try ReadAlongPageTests.keepForDocs(shot, as: "player-\(name).png") }
            }
        }
    }

    /// Every activity of the sample library, as the daemon's listing gives them, on the demo
    /// page: it starts; once a step has started, its tiles are that step's `choices` in their
    /// order; every tile the listing gives a picture for shows it, loaded, with its alt text.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets, axe-selenium-python and the private sound server"))
    func everySampleActivityShowsItsChoicesAndPictures() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: ReadAlongPageTests.library, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let listing = try Clients.run(daemon, unix: true, [#"{"id": 1, "op": "library"}"#])
        let activities = listing.events.filter { $0.type == "program" && $0.fields["activity"] is String }
        #expect(activities.count >= 10, "\(activities.count) activities listed")
        for program in activities {
            let lesson = try #require(program.fields["lesson"] as? String)
            let activity = try #require(program.fields["activity"] as? String)
            let steps = program.fields["steps"] as? [[String: Any]] ?? []
            let pictures = program.fields["pictures"] as? [String: [String: String]] ?? [:]
            let state = (program.fields["states"] as? [String])?.first.map { "&state=" + $0 } ?? ""
            let query = "lesson=\(lesson)&activity=\(activity)\(state)".addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? ""
            let url = "http://127.0.0.1:\(daemon.port)/?\(query)#token=\(daemon.token)"
            let started = steps.isEmpty ? "heard.some(h => h.type === 'start')" : "heard.some(h => h.type === 'stepStart')"
            let report = try Self.drive([url, dir.file("shots"), "--record", "start,stepStart,error", "--until", started, "--timeout", "20"])
            let final = try #require(report["final"] as? [String: Any])
            let shown = final["shown"] as? [String: Any] ?? [:]
            let what = "\(lesson) \(activity)"
            #expect((final["view"] as? [String: Any])?["error"] is NSNull, "\(what): \(final)")
            if let first = steps.first {
                #expect(shown["tiles"] as? [String] == first["choices"] as? [String], "\(what): tiles \(shown["tiles"] ?? "none"), choices \(first["choices"] ?? "none")")
            }
            let tiles = shown["tiles"] as? [String] ?? []
            let drawn = Dictionary((shown["pictures"] as? [[String: Any]] ?? []).map { ($0["target"] as? String ?? "", $0) }) { first, _ in first }
            for tile in tiles {
                guard let picture = pictures[tile] else { continue }
                let image = drawn[tile]
                #expect(image?["alt"] as? String == picture["alt"] && image?["loaded"] as? Bool == true, "\(what): tile \(tile): \(image ?? [:]), listed \(picture)")
            }
            print("\(what): tiles \(tiles), \(drawn.count) with pictures")
        }
    }

    /// The element's methods, called by the host page: pause() pauses (a `paused` event), resume()
    /// goes on, seek({clip, word}) jumps to the word's first frame (this file's timings: 1.05 s is
    /// frame 50,400) and its cue comes next, tap("red") answers the step, stop() stops.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets, axe-selenium-python and the private sound server"))
    func theHostDrivesItWithItsMethods() throws {
        try Self.withPlayerLesson { dir, lessons, made, daemon, _ in
            let url = "http://127.0.0.1:\(daemon.port)/?lesson=player.json&activity=pick#token=\(daemon.token)"
            let report = try Self.drive([
                url, dir.file("shots"), "--record", "start,word,paused,resumed,seeked,chainEnd,tap,stepStart,stopped,finished,error",
                "--call", "heard.some(h => h.type === 'word')::P.pause()",
                "--call", "heard.some(h => h.type === 'paused')::P.resume()",
                "--call", "heard.some(h => h.type === 'resumed')::P.seek({clip: 'ask', word: 3})",
                "--call", "heard.some(h => h.type === 'chainEnd')::P.tap('red')",
                "--call", "heard.some(h => h.type === 'stepStart' && h.detail.step === 1)::P.stop()",
                "--until", "P.view.state === 'stopped'",
            ])
            let events = try #require(report["heard"] as? [[String: Any]]).map(Self.detail)
            let types = events.map { $0["type"] as? String ?? "" }
            let paused = try #require(types.firstIndex(of: "paused"), "\(types)")
            let resumed = try #require(types.firstIndex(of: "resumed"), "\(types)")
            let seeked = try #require(types.firstIndex(of: "seeked"), "\(types)")
            #expect(paused < resumed && resumed < seeked, "\(types)")
            #expect(events[seeked]["frame"] as? Int == 50_400, "\(events[seeked])")
            let next = events[(seeked + 1)...].first { $0["type"] as? String == "word" }
            #expect(next?["clip"] as? String == "ask" && next?["index"] as? Int == 3 && next?["frame"] as? Int == 50_400, "\(next ?? [:])")
            let tap = try #require(events.first { $0["type"] as? String == "tap" })
            #expect(tap["answer"] as? String == "red" && tap["result"] as? String == "correct", "\(tap)")
            #expect(types.last == "stopped" && events.last?["reason"] as? String == "stopped", "\(events.last ?? [:])")
            #expect((report["final"] as? [String: Any]).flatMap { ($0["view"] as? [String: Any])?["state"] as? String } == "stopped")
        }
    }

    /// `locale="es"` (from the demo page's address): the words heard are the Spanish timing
    /// file's, each as `narrator cues --locale es` schedules it, and the element lays out those.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets, axe-selenium-python and the private sound server"))
    func aLocalePlaysItsOwnWords() throws {
        try Self.withPlayerLesson { dir, lessons, made, daemon, _ in
            let cues = try Self.cueSheet(lessons + "/player.json", ["--chain", "ask", "--locale", "es"])
            #expect(cues.filter { $0["type"] as? String == "word" }.map { $0["text"] as? String ?? "" } == ["Toca", "la", "bola", "roja."])
            let types = Set(cues.compactMap { $0["type"] as? String }).sorted()
            let url = "http://127.0.0.1:\(daemon.port)/?lesson=player.json&chain=ask&locale=es#token=\(daemon.token)"
            let report = try Self.drive([url, dir.file("shots"), "--record", types.joined(separator: ","), "--shot", "word:P.view.current === 'ask/2'"])
            Self.expectSame(try #require(report["heard"] as? [[String: Any]]).map(Self.detail), cues, "locale es")
            #expect((report["shots"] as? [String: [String: Any]])?["word"]?["litText"] as? String == "bola")
        }
    }

    /// Under prefers-reduced-motion a pulse is a static outline, not an animation; the demo page's
    /// menu, at 360×640 and 1280×800, leaves the player, its tiles and its controls on screen,
    /// nothing wider than the window, every tile and control at least 64 px each way.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets, axe-selenium-python and the private sound server"))
    func reducedMotionAndTheDemoLayout() throws {
        // A lesson that cannot be read, with a long name: the menu lists its problem, and still
        // leaves Start on screen.
        try Self.withPlayerLesson(also: { _ = $0.write("lib/" + String(repeating: "a-lesson-with-a-very-long-name-", count: 6) + ".json", #"{"sampleRate": 48000, "clips": {"#) }) { dir, lessons, made, daemon, _ in
            let url = "http://127.0.0.1:\(daemon.port)/?lesson=player.json&activity=pick#token=\(daemon.token)"
            let report = try Self.drive([url, dir.file("shots"), "--reduced-motion", "--record", "pulse", "--until", "heard.length > 0"])
            let pulse = try #require((report["heard"] as? [[String: Any]])?.first)
            let shown = (pulse["shown"] as? [String: Any])?["pulsing"] as? [[String: Any]] ?? []
            #expect(shown.count == 1 && shown.first?["animation"] as? String == "none" && shown.first?["outline"] as? String == "solid", "\(shown)")

            let layouts = try #require(try Self.drive([url, dir.file("layout"), "--layout", "360x640", "--layout", "1280x800"])["layouts"] as? [[String: Any]])
            #expect(layouts.count == 2)
            for layout in layouts {
                let size = layout["size"] as? String ?? ""
                let width = layout["width"] as? Double ?? 0
                let height = layout["height"] as? Double ?? 0
                func onScreen(_ box: [Double]) -> Bool { box[0] >= 0 && box[1] >= 0 && box[2] <= width && box[3] <= height }
                let start = layout["start"] as? [Double] ?? [0, 0, .infinity, .infinity]
                let toggle = layout["toggle"] as? [Double] ?? [0, 0, .infinity, .infinity]
                let tiles = layout["tiles"] as? [[Double]] ?? []
                #expect(onScreen(start) && onScreen(toggle), "\(size): Start \(start), play \(toggle)")
                #expect(!tiles.isEmpty && tiles.allSatisfy(onScreen), "\(size): tiles \(tiles)")
                #expect((layout["scrollWidth"] as? Double ?? .infinity) <= width, "\(size): \(layout["scrollWidth"] ?? "")")
                let options = layout["options"] as? [String] ?? []
                #expect(options.contains("activity pick") && options.contains { $0.hasPrefix("cannot be read: a-lesson-with") }, "\(size): \(options)")
                for box in tiles + [toggle] {
                    #expect(box[2] - box[0] >= 64 && box[3] - box[1] >= 64, "\(size): \(box)")
                }
            }
        }
    }

    // MARK: speed, volume, close

    /// The messages the page sent (the driver's wrapper of WebSocket.send, not the element)
    /// whose `op` is one of `ops`.
    static func sent(_ report: [String: Any], _ ops: Set<String>) -> [Event] {
        (report["sent"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? Event }.filter { ops.contains($0["op"] as? String ?? "") }
    }

    /// The words the host page received after timeline frame `from`: from the first to the last,
    /// the page's own clock (its listener's performance.now()) against the lesson's frames played
    /// at `speed`, in ms; the span at 1× too, to show the two apart.
    static func wordSpan(_ heard: [[String: Any]], after from: Int, upTo last: Int = .max, rate: Double = 48_000) throws -> (page: Double, frames: Int, words: Int) {
        let words = heard.filter { $0["type"] as? String == "word" && (detail($0)["frame"] as? Int ?? -1) > from && (detail($0)["frame"] as? Int ?? .max) <= last }
        try #require(words.count >= 3, "\(words.count) words after frame \(from)")
        let first = try #require(words.first), final = try #require(words.last)
        let page = (final["at"] as? Double ?? 0) - (first["at"] as? Double ?? 0)
        let frames = (detail(final)["frame"] as? Int ?? 0) - (detail(first)["frame"] as? Int ?? 0)
        return (page, frames, words.count)
    }

    /// The second example of docs/component.md, served from another origin: its 🐇 button,
    /// clicked at the first word, sends one `speed` 2 (nothing else sends one); the daemon's
    /// `speedChanged` (speed 2) comes before the next word, and from there to "red" the words
    /// reach the page's listener closer together by 2, on the page's own clock, against the
    /// frames of `narrator cues` (within 80 ms, where 1× would be 700 ms longer); the volume
    /// slider set to 0.5 sends the master's gain 0.5 and gives `volumechange`; ✕ at "red"
    /// stops the chain: `stopped`, then `closed`, and for 1.5 s after it no cue and no `finished`.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets, axe-selenium-python and the private sound server"))
    func theControlsExampleSpeedsUpSetsTheVolumeAndCloses() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: ReadAlongPageTests.library, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let file = try Self.docExample("player-controls", dir, daemon)
        let cues = try Self.cueSheet(ReadAlongPageTests.library + "/sample.json", ["--chain", "correct", "--seed", "7"])
        let red = try #require(cues.first { $0["type"] as? String == "word" && $0["text"] as? String == "red" }?["frame"] as? Int)
        let cueTypes = Set(cues.compactMap { $0["type"] as? String })
        let report = try Self.drive([
            file, dir.file("shots"), "--serve", "--record", (cueTypes.union(["start", "speedChanged", "volumechange", "closed", "stopped", "finished", "error"])).sorted().joined(separator: ","),
            "--call", "heard.some(h => h.type === 'word')::document.getElementById('faster').click()",
            "--call", "heard.some(h => h.type === 'speedChanged')::const v = document.getElementById('volume'); v.value = '0.5'; v.dispatchEvent(new Event('input'))",
            "--call", "heard.some(h => h.type === 'word' && h.detail.text === 'red')::document.getElementById('close').click()",
            "--until", "(() => { const c = heard.find(h => h.type === 'closed'); return !!c && performance.now() - c.at > 1500; })()",
        ])
        let heard = try #require(report["heard"] as? [[String: Any]])
        let types = heard.map { $0["type"] as? String ?? "" }
        // Speed: one message, 2; the daemon's speedChanged before the next word.
        #expect(Self.sent(report, ["speed"]).map { $0["speed"] as? Double } == [2], "\(Self.sent(report, ["speed"]))")
        let changed = try #require(heard.first { $0["type"] as? String == "speedChanged" }.map(Self.detail), "\(types)")
        #expect(changed["speed"] as? Double == 2, "\(changed)")
        let changeFrame = try #require(changed["frame"] as? Int)
        let span = try Self.wordSpan(heard, after: changeFrame, upTo: red)
        let expected = Double(span.frames) / 48 / 2
        print(String(format: "controls example: speed 2 from frame %d; %d words to 'red' %.0f ms apart on the page, %.0f ms at 2x, %.0f ms at 1x", changeFrame, span.words, span.page, expected, expected * 2))
        #expect(abs(span.page - expected) <= 80, "words \(span.page) ms apart on the page, \(expected) ms at 2×")
        // Volume: the master's gain, taken.
        #expect(Self.sent(report, ["volume"]).map { "\($0["bus"] ?? "")/\($0["gain"] ?? "")/\($0["muted"] ?? "")" } == ["master/0.5/0"], "\(Self.sent(report, ["volume"]))")
        let volume = try #require(heard.first { $0["type"] as? String == "volumechange" }.map(Self.detail), "\(types)")
        #expect(volume["volume"] as? Double == 0.5 && volume["muted"] as? Bool == false, "\(volume)")
        // Close: the chain stopped, then closed, nothing after.
        #expect(Self.sent(report, ["stop", "close"]).map { $0["op"] as? String } == ["stop"])
        let closed = try #require(types.firstIndex(of: "closed"), "\(types)")
        #expect(closed == types.count - 1 && types[closed - 1] == "stopped", "\(types)")
        #expect(Self.detail(heard[closed])["ended"] as? String == "stopped")
        #expect(!types.contains("finished") && !types.contains("chainEnd"), "\(types)")
        let final = try #require(report["final"] as? [String: Any])
        #expect((final["view"] as? [String: Any])?["state"] as? String == "closed" && final["status"] as? String == "closed", "\(final)")
        #expect(final["speed"] as? Double == 2 && final["volume"] as? Double == 0.5, "\(final)")
        #expect((report["warnings"] as? [String])?.isEmpty == true, "\(report["warnings"] ?? "")")
    }

    /// `volume` 0.5 set by the host at the prompt's second word, `muted` at its fifth, measured
    /// on what the private sound server played (the prompt is a steady sox tone at 0.3 of full
    /// scale): at full level up to the word the change was asked at, falling from after it and
    /// never rising, half (±3 %) from the fourth word to the fifth, silent from the sixth to the
    /// clip's end; the frames of the words and the clip's end are found in the recording by its
    /// audible clock from the daemon's `heard` times. The page sent the master's gain 0.5, then
    /// muted, and heard `volumechange` for each.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets, axe-selenium-python and the private sound server"))
    func aVolumeAndAMuteAreHeardOnTheSoundServer() throws {
        try Self.withPlayerLesson { dir, lessons, made, daemon, server in
            let url = "http://127.0.0.1:\(daemon.port)/?lesson=player.json&chain=ask#token=\(daemon.token)"
            let report = try Self.drive([
                url, dir.file("shots"), "--record", "start,clipStart,word,clipEnd,volumechange,finished,error",
                "--call", "heard.some(h => h.type === 'word' && h.detail.index === 1)::P.volume = 0.5",
                "--call", "heard.some(h => h.type === 'word' && h.detail.index === 4)::P.muted = true",
            ])
            let recording = try server.recording()
            let heard = try #require(report["heard"] as? [[String: Any]])
            let events = heard.map(Self.detail)
            let words = events.filter { $0["type"] as? String == "word" }
            try #require(words.count == ReadAlongLesson.words.count, "\(events.map { $0["type"] ?? "" })")
            let clipEnd = try #require(events.first { $0["type"] as? String == "clipEnd" })
            func at(_ event: Event) -> Int { Int(recording.frame(audibleAt: UInt64((event["heard"] as? NSNumber)?.int64Value ?? 0)).rounded()) }
            // Per 10 ms window of the left channel: its peak, over the tone's (sox's 0.3 of full
            // scale as played before the change: the median of those windows).
            let window = recording.rate / 100
            func peak(_ start: Int) -> Double {
                (start..<min(start + window, recording.frames)).reduce(0.0) { max($0, abs(Double(recording.samples[$1 * recording.channels]))) }
            }
            func peaks(_ from: Int, _ to: Int) -> [Double] {
                stride(from: from + window, to: to - 2 * window, by: window).map(peak)
            }
            let margin = window  // the audible clock's error, and a window
            let fullPeaks = peaks(at(words[0]) + margin, at(words[1]))
            let full = fullPeaks.sorted()[fullPeaks.count / 2]
            print(String(format: "volume: the tone peaks at %.0f (sox: 0.3 of full scale, %.0f)", full, 0.3 * 32_767))
            #expect(full > 0.1 * 32_767, "the tone is not heard: \(full)")
            func levels(_ from: Int, _ to: Int) -> [Double] { peaks(from, to).map { $0 / full } }
            let before = levels(at(words[0]) + margin, at(words[1]))
            let half = levels(at(words[3]) + margin, at(words[4]))
            let silent = levels(at(words[5]) + margin, at(clipEnd))
            let falling = levels(at(words[1]), at(words[3]) + margin)
            print("volume: levels before \(before.count) windows \(before.map { String(format: "%.3f", $0) }.prefix(4)); falling \(falling.map { String(format: "%.3f", $0) }.prefix(6)); half \(half.map { String(format: "%.3f", $0) }.prefix(4)); silent max \(silent.max() ?? -1)")
            #expect(before.count >= 20 && before.allSatisfy { abs($0 - 1) <= 0.03 }, "before: \(before)")
            #expect(half.count >= 40 && half.allSatisfy { abs($0 - 0.5) <= 0.015 }, "half: \(half)")
            #expect(silent.count >= 20 && silent.allSatisfy { $0 <= 0.005 }, "muted: \(silent)")
            for (k, pair) in zip(falling, falling.dropFirst()).enumerated() {
                #expect(pair.1 <= pair.0 + 0.01, "window \(k) after the second word: the level rose from \(pair.0) to \(pair.1)")
            }
            let sent = Self.sent(report, ["volume"]).map { "\($0["bus"] ?? "")/\($0["gain"] ?? "")/\($0["muted"] ?? "")" }
            #expect(sent == ["master/0.5/0", "master/0.5/1"], "\(sent)")
            let changes = heard.filter { $0["type"] as? String == "volumechange" }.map(Self.detail).map { "\($0["volume"] ?? "")/\($0["muted"] ?? "")" }
            #expect(changes == ["0.5/0", "0.5/1"], "\(changes)")
        }
    }

    /// Bad values of speed and volume, as attributes and as properties (speed "abc", "0", "100",
    /// 0, volume 1.5 and "-1"), set once the playback has started at `&speed=1.5` (the demo
    /// page's address): each is one console warning naming it, none is sent (the driver's own
    /// record of the WebSocket), no second `speedChanged`; the one `speed` sent, 1.5 at `start`,
    /// is heard: the words after its `speedChanged` reach the page 1.5 times closer together.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets, axe-selenium-python and the private sound server"))
    func badSpeedsAndVolumesAreWarnedOfAndNotSent() throws {
        try Self.withPlayerLesson { dir, lessons, made, daemon, _ in
            let url = "http://127.0.0.1:\(daemon.port)/?lesson=player.json&chain=ask&speed=1.5#token=\(daemon.token)"
            let report = try Self.drive([
                url, dir.file("shots"), "--record", "start,word,speedChanged,volumechange,finished,error",
                "--call", "heard.some(h => h.type === 'start')::P.setAttribute('speed', 'abc'); P.setAttribute('speed', '0'); P.setAttribute('speed', '100');"
                    + " P.speed = 0; P.volume = 1.5; P.setAttribute('volume', '-1')",
            ])
            let heard = try #require(report["heard"] as? [[String: Any]])
            let warnings = report["warnings"] as? [String] ?? []
            #expect(warnings.count == 6, "\(warnings)")
            for (warning, value) in zip(warnings, ["speed \"abc\"", "speed \"0\"", "speed \"100\"", "speed \"0\"", "volume \"1.5\"", "volume \"-1\""]) {
                #expect(warning.contains(value + " ignored"), "\(warning)")
            }
            let sent = Self.sent(report, ["speed", "volume"])
            #expect(sent.map { "\($0["op"] ?? "") \($0["speed"] ?? "")" } == ["speed 1.5"], "\(sent)")
            let changes = heard.filter { $0["type"] as? String == "speedChanged" }.map(Self.detail)
            #expect(changes.map { $0["speed"] as? Double } == [1.5], "\(changes)")
            let changeFrame = try #require(changes.first?["frame"] as? Int)
            let span = try Self.wordSpan(heard, after: changeFrame)
            let expected = Double(span.frames) / 48 / 1.5
            print(String(format: "bad values: speed 1.5 from frame %d; %d words %.0f ms apart on the page, %.0f ms at 1.5x, %.0f ms at 1x", changeFrame, span.words, span.page, expected, expected * 1.5))
            #expect(abs(span.page - expected) <= 80, "words \(span.page) ms apart on the page, \(expected) ms at 1.5×")
            let final = try #require(report["final"] as? [String: Any])
            #expect(final["speed"] as? Double == 1.5 && final["volume"] as? Double == 1, "\(final)")
            #expect(heard.last.map(Self.detail)?["type"] as? String == "finished")
        }
    }

    /// close() on an activity while its prompt plays: the daemon's close (a `tap` with result
    /// `close`, then `close`, `activityEnd` with reason `close`, `finished`), then the element's
    /// `closed`; for 1.5 s after it no cue (the prompt had words to come), state `closed`.
    @Test(.requires(canBrowse, "needs chromium, python3-websockets, axe-selenium-python and the private sound server"))
    func closeEndsAnActivityWithNoCueAfter() throws {
        try Self.withPlayerLesson { dir, lessons, made, daemon, _ in
            let url = "http://127.0.0.1:\(daemon.port)/?lesson=player.json&activity=pick#token=\(daemon.token)"
            let report = try Self.drive([
                url, dir.file("shots"), "--record", "start,clipStart,word,pulse,clipEnd,chainEnd,tap,close,activityEnd,closed,finished,stopped,error",
                "--call", "heard.some(h => h.type === 'word' && h.detail.index === 1)::P.close()",
                "--until", "(() => { const c = heard.find(h => h.type === 'closed'); return !!c && performance.now() - c.at > 1500; })()",
            ])
            let heard = try #require(report["heard"] as? [[String: Any]])
            let types = heard.map { $0["type"] as? String ?? "" }
            #expect(Self.sent(report, ["close", "stop"]).map { $0["op"] as? String } == ["close"])
            let tap = try #require(types.firstIndex(of: "tap"), "\(types)")
            #expect(Array(types[tap...]) == ["tap", "close", "activityEnd", "finished", "closed"], "\(types)")
            #expect(Self.detail(heard[tap])["result"] as? String == "close" && Self.detail(heard[tap + 2])["reason"] as? String == "close", "\(heard[tap...].map(Self.detail))")
            #expect(Self.detail(heard[tap + 4])["ended"] as? String == "finished")
            let words = heard.filter { $0["type"] as? String == "word" }.count
            #expect(words >= 2 && words < ReadAlongLesson.words.count, "\(words) words")
            #expect((report["final"] as? [String: Any]).flatMap { ($0["view"] as? [String: Any])?["state"] as? String } == "closed")
        }
    }
}

/// An activity written by these tests: a 2.4 s prompt whose words are this file's (it pulses
/// "red" first), a wrong-answer feedback with three words, two steps answered "red" and "blue".
/// When `narrator validate` takes step choices and pictures (docs/lessons.md), the first step
/// offers red, blue and green, each with a picture of a ball, and the wrong tap is "green"; else the
/// tiles are the answers and the wrong tap is "blue".
enum PlayerLesson {
    struct Made {
        let wrong: String
        let firstTiles: [String]
        let pictures: Bool
    }

    static func write(in folder: String) throws -> Made {
        try ReadAlongLesson.write(in: folder)
        try FileManager.default.removeItem(atPath: folder + "/made.json")
        let nope = try run("/usr/bin/env", ["sox", "-n", "-r", "48000", "-c", "2", "-b", "16", folder + "/nope.wav", "synth", "1.0", "sine", "220", "vol", "0.3"])
        try #require(nope.status == 0, "\(nope.stderr)")
        try "0.200000\t0.600000\tToca\n0.700000\t0.900000\tla\n1.000000\t1.400000\tbola\n1.500000\t2.000000\troja.\n".write(toFile: folder + "/ask-es.txt", atomically: true, encoding: .utf8)
        try "0.100000\t0.400000\tNo,\n0.450000\t0.700000\ttry\n0.750000\t0.950000\tagain.\n".write(toFile: folder + "/nope.txt", atomically: true, encoding: .utf8)
        // Balls in colours far from the theme's (more than 10 a channel), which the shots count.
        for (name, fill) in [("red", "#e03131"), ("blue", "#3b5bdb"), ("green", "#40c057")] {
            let svg = ##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><circle cx="5" cy="5" r="4" fill=""## + fill + ##""/></svg>"##
            try svg.write(toFile: folder + "/\(name).svg", atomically: true, encoding: .utf8)
        }
        func lesson(_ extra: Bool) -> String {
            let choices = extra ? #", "choices": ["red", "blue", "green"]"# : ""
            let pictures = extra
                ? #", "pictures": {"# + ["red", "blue", "green"].map { #""\#($0)": {"file": "\#($0).svg", "alt": "a \#($0) ball"}"# }.joined(separator: ", ") + "}"
                : ""
            return """
                {"sampleRate": 48000, "channels": 2\(pictures), "locale": "en",
                 "locales": {"es": {"clips": {"ask": {"file": "ask.wav", "timings": "ask-es.txt"}}}},
                 "clips": {"ask": {"file": "ask.wav", "timings": "ask.txt"}, "yes": {"file": "yes.wav", "timings": "yes.txt"},
                           "nope": {"file": "nope.wav", "timings": "nope.txt"}},
                 "chains": {"ask": [{"pulse": ["red"]}, {"clip": "ask"}], "right": [{"clip": "yes"}], "nope": [{"clip": "nope"}]},
                 "activities": {"pick": {"idleSeconds": 30, "steps": [
                   {"prompt": "ask", "answer": "red"\(choices), "correct": "right", "wrong": ["nope"]},
                   {"prompt": "ask", "answer": "blue", "correct": "right", "wrong": ["nope"]}]}}}
                """
        }
        try lesson(true).write(toFile: folder + "/player.json", atomically: true, encoding: .utf8)
        if try run(Repo.narrator, ["validate", folder + "/player.json"]).status == 0 {
            return Made(wrong: "green", firstTiles: ["red", "blue", "green"], pictures: true)
        }
        try lesson(false).write(toFile: folder + "/player.json", atomically: true, encoding: .utf8)
        let plain = try run(Repo.narrator, ["validate", folder + "/player.json"])
        try #require(plain.status == 0, "\(plain.stdout)\(plain.stderr)")
        return Made(wrong: "blue", firstTiles: ["red", "blue"], pictures: false)
    }
}
