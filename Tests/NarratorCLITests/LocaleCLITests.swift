import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// The colors lesson's cue sheet, for the locale suites.
enum ColorsLesson {
    static let path = Repo.path("Timings/lessons/colors.json")

    struct Sheet {
        let frames: Int
        let cues: [[String: Any]]
        func frame(_ type: String, _ clip: String) -> Int? {
            cues.first { $0["type"] as? String == type && $0["clip"] as? String == clip }?["frame"] as? Int
        }
        func words(_ clip: String) -> [String] {
            cues.filter { $0["type"] as? String == "word" && $0["clip"] as? String == clip }.compactMap { $0["text"] as? String }
        }
    }

    static func cues(_ arguments: [String]) throws -> (Sheet, stderr: String) {
        let result = try run(Repo.narrator, ["cues", path, "--chain", "colors", "--seed", "1"] + arguments)
        try #require(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        return (Sheet(frames: try #require(object["frames"] as? Int), cues: try #require(object["cues"] as? [[String: Any]])), result.stderr)
    }
}

/// The two-language sample lesson (Timings/lessons/colors.json, made by
/// scripts/make-locale-fixtures.sh): `--locale` on the commands, `locale` in the daemon's
/// requests, and `validate`'s report of what each locale lacks. Clip lengths come from the WAV
/// headers, read by hand.
@Suite("Locales end to end")
struct LocaleCLITests {
    static let lesson = ColorsLesson.path

    /// A clip's length in frames, from its WAV header (the lesson is at the files' 24000 Hz).
    static func frames(_ locale: String, _ clip: String) throws -> Int {
        let wav = try WAVFile(path: Repo.path("Audio/lessons/colors/\(locale)/\(clip).wav"))
        try #require(wav.sampleRate == 24000 && wav.channels == 1)
        return wav.frames
    }

    /// Each locale's chain is its own clips back to back (es-MX: its praise, es's red and
    /// green), the silence between them unchanged; a locale the lesson lacks is the default's.
    @Test func cuesFollowTheLocaleClipByClip() throws {
        let expected: [(String?, [String: String])] = [
            (nil, ["red": "en", "green": "en", "praise": "en"]),
            ("es", ["red": "es", "green": "es", "praise": "es"]),
            ("es-MX", ["red": "es", "green": "es", "praise": "es-MX"]),
            ("es-419", ["red": "es", "green": "es", "praise": "es"]),
            ("fr", ["red": "en", "green": "en", "praise": "en"]),
        ]
        var gaps: Set<Int> = []
        var totals: [String: Int] = [:]
        for (locale, files) in expected {
            let (sheet, stderr) = try ColorsLesson.cues(locale.map { ["--locale", $0] } ?? [])
            let red = try Self.frames(files["red"]!, "red"), green = try Self.frames(files["green"]!, "green")
            let praise = try Self.frames(files["praise"]!, "praise")
            let name = locale ?? "default"
            #expect(sheet.frame("clipStart", "red") == 0, "\(name)")
            #expect(sheet.frame("clipEnd", "red") == red, "\(name)")
            let greenStart = try #require(sheet.frame("clipStart", "green"))
            gaps.insert(greenStart - red)
            #expect(sheet.frame("clipEnd", "green") == greenStart + green, "\(name)")
            #expect(sheet.frame("clipStart", "praise") == greenStart + green, "\(name)")
            #expect(sheet.frames == greenStart + green + praise, "\(name)")
            totals[name] = sheet.frames
            #expect(stderr == (locale == "fr" ? "narrator: note: \(Self.lesson): no narration in 'fr'; the default (en) plays\n" : ""), "\(name)")
        }
        #expect(gaps == [6000], "0.25 s of silence in every locale")
        #expect(Set(totals.values).count == 3, "default, es and es-MX differ: \(totals)")
        // The words are the locale's own timings.
        #expect(try ColorsLesson.cues(["--locale", "es-MX"]).0.words("praise") == ["Qué", "padre"])
        #expect(try ColorsLesson.cues(["--locale", "es"]).0.words("red") == ["Es", "rojo"])
        #expect(try ColorsLesson.cues([]).0.words("red") == ["This", "color", "is", "red"])
    }

    /// `render --locale` writes the locale's clips: as many frames as its cue sheet says.
    @Test func renderInALocale() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try run(Repo.narrator, ["render", Self.lesson, "--chain", "colors", "--locale", "es-MX", "--output", dir.file("mx.wav")])
        try #require(result.status == 0, "\(result.stderr)")
        let wav = try WAVFile(path: dir.file("mx.wav"))
        let sound = try Self.frames("es", "red") + Self.frames("es", "green") + Self.frames("es-MX", "praise")
        #expect(wav.frames == sound + 6000 && wav.sampleRate == 24000)
    }

    @Test func badLocalesAreOneLine() throws {
        for (tag, message) in [
            ("es_MX", "'es_MX' is not a locale tag: subtags are joined by hyphens (es-MX)"),
            ("", "an empty locale tag (expected a language tag such as en, es or es-MX)"),
        ] {
            for command in [["cues"], ["simulate"], ["render", "--output", "/nonexistent/x.wav"], ["plot", "--output", "/nonexistent/x.svg"]] {
                let result = try run(Repo.narrator, command + [Self.lesson, "--chain", "colors", "--locale", tag])
                #expect(result.status == 1 && result.stderr == "narrator: --locale: \(message)\n", "\(command): \(result.stderr)")
            }
        }
        // A lesson's own mistake in "locales": one line naming the file and the key path.
        let dir = TempDir()
        defer { dir.remove() }
        let text = try String(contentsOfFile: Self.lesson, encoding: .utf8)
        let broken = dir.write("colors.json", text.replacingOccurrences(of: #""praise": {"file": "../../Audio/lessons/colors/es-MX"#, with: #""prise": {"file": "../../Audio/lessons/colors/es-MX"#))
        let result = try run(Repo.narrator, ["cues", broken, "--chain", "colors", "--locale", "es"])
        #expect(result.status == 1 && result.stderr == "narrator: \(broken): locales.es-MX.clips.prise: unknown clip 'prise' (the lesson has: green, praise, red)\n", "\(result.stderr)")
    }

    /// A copy of the sample lesson in `dir`, its paths absolute, edited by `edit`.
    static func copy(in dir: TempDir, _ edit: (String) -> String) throws -> String {
        let text = try String(contentsOfFile: lesson, encoding: .utf8)
            .replacingOccurrences(of: "\"../../Audio/", with: "\"" + Repo.path("Audio") + "/")
            .replacingOccurrences(of: "\"colors/", with: "\"" + Repo.path("Timings/lessons/colors") + "/")
        return dir.write("lesson.json", edit(text))
    }

    /// Per locale, the voice clips that fall back: warnings listing them (the lesson still
    /// plays); a locale's own missing file is an error at its key path.
    @Test func validateListsWhatEachLocaleLacks() throws {
        let complete = try run(Repo.narrator, ["validate", Self.lesson])
        #expect(complete.status == 0 && complete.stdout.contains("0 errors, 0 warnings: 1 lesson, 7 audio files"), "\(complete.stdout)")

        let dir = TempDir()
        defer { dir.remove() }
        _ = try Self.copy(in: dir) { text in
            text.replacingOccurrences(of: #""green": {"file": "\#(Repo.path("Audio"))/lessons/colors/es/green.wav", "timings": "\#(Repo.path("Timings/lessons/colors"))/es/green.json", "transcript": "Es verde."},"#, with: "")
                .replacingOccurrences(of: #", "timings": "\#(Repo.path("Timings/lessons/colors"))/es/praise.json""#, with: "")
                .replacingOccurrences(of: #", "transcript": "¡Bien hecho!""#, with: "")
        }
        let result = try run(Repo.narrator, ["validate", "lesson.json"], cwd: dir.path)
        let lines = result.stdout.split(separator: "\n").filter { $0.hasPrefix("warning") || $0.hasPrefix("error") }
        #expect(lines == [
            "warning: lesson.json: locales.es: 'es' has no recording of 1 voice clip, which play the default (en)'s: green",
            "warning: lesson.json: locales.es: 'es' has no word timings for 1 clip it recorded (the default's have words): praise",
            "warning: lesson.json: locales.es: 'es' has no transcript for 1 clip it recorded (the default's have one): praise",
            "warning: lesson.json: locales.es-MX: 'es-MX' (through es-MX, es) has no recording of 1 voice clip, which play the default (en)'s: green",
        ], "\(result.stdout)")
        #expect(result.status == 0, "falling back is allowed")
        #expect(result.stdout.split(separator: "\n").contains { $0.split(separator: " ") == ["locale", "0", "4"] })

        // --locale: only that locale; one the lesson lacks lists every voice clip.
        let french = try run(Repo.narrator, ["validate", "--locale", "fr", "--json", "lesson.json"], cwd: dir.path)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(french.stdout.utf8)) as? [String: Any])
        let findings = try #require(report["findings"] as? [[String: Any]])
        #expect(findings.map { "\($0["check"]!) \($0["place"] ?? "-") \($0["message"]!)" } == [
            "locale - 'fr' has no recording of 3 voice clips, which play the default (en)'s: green, praise, red"
        ])

        // A locale's file that is not there, and its timings against its transcript.
        _ = try Self.copy(in: dir) { text in
            text.replacingOccurrences(of: "es/red.wav", with: "es/rouge.wav").replacingOccurrences(of: "\"Es verde.\"", with: "\"Es azul.\"")
        }
        let broken = try run(Repo.narrator, ["validate", "--locale", "es", "lesson.json"], cwd: dir.path)
        let errors = broken.stdout.split(separator: "\n").filter { $0.hasPrefix("error") }.sorted()
        #expect(errors == [
            "error: \(Repo.path("Audio"))/lessons/colors/es/rouge.wav: no such file (locales.es.clips.red)",
            "error: \(Repo.path("Timings/lessons/colors"))/es/green.json: locales.es.clips.green: word 1 of the transcript is 'azul', the timings say 'verde'",
        ], "\(broken.stdout)")
        #expect(broken.status == 1)
    }
}

extension LocaleCLITests {
    /// `pack` converts every locale's files and points the lesson's `locales` at them: each
    /// locale's cue sheet is the same after.
    @Test func packKeepsEveryLocale() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.file("library"), withIntermediateDirectories: true)
        let lesson = try Self.copy(in: dir) { $0 }
        try FileManager.default.moveItem(atPath: lesson, toPath: dir.file("library/colors.json"))
        let packed = try run(Repo.narrator, ["pack", dir.file("library"), "--to", dir.file("packed"), "--format", "flac", "--no-progress"])
        try #require(packed.status == 0, "\(packed.stderr)")
        #expect(packed.stdout.contains("7 audio files converted to FLAC"), "\(packed.stdout)")
        let new = try #require(FileManager.default.subpathsOfDirectory(atPath: dir.file("packed")).first { $0.hasSuffix("colors.json") })
        let text = try String(contentsOfFile: dir.file("packed/" + new), encoding: .utf8)
        #expect(text.contains("es-MX/praise.flac") && !text.contains(".wav"), "\(text)")
        for locale in [[], ["--locale", "es"], ["--locale", "es-MX"]] {
            let before = try run(Repo.narrator, ["cues", dir.file("library/colors.json"), "--chain", "colors"] + locale)
            let after = try run(Repo.narrator, ["cues", dir.file("packed/" + new), "--chain", "colors"] + locale)
            #expect(before.status == 0 && after.status == 0 && before.stdout == after.stdout, "\(locale): \(after.stderr)")
        }
    }
}

/// The daemon's `play` and `cues` take `locale`.
@Suite("Daemon locales", .requires(PulseTestServer.findExecutable("socat") != nil, "needs socat"))
struct DaemonLocaleTests {
    @Test func cuesInALocaleAreTheCommandsAndBadOnesAreOneError() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Repo.path("Timings/lessons"), arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let requests = [
            #"{"id": "mx", "op": "cues", "lesson": "colors.json", "chain": "colors", "locale": "es-MX"}"#,
            #"{"id": "default", "op": "cues", "lesson": "colors.json", "chain": "colors"}"#,
            #"{"id": "type", "op": "cues", "lesson": "colors.json", "chain": "colors", "locale": 5}"#,
            #"{"id": "tag", "op": "play", "lesson": "colors.json", "chain": "colors", "locale": "es_MX"}"#,
            #"{"id": "null", "op": "cues", "lesson": "colors.json", "chain": "colors", "locale": null}"#,
            #"{"id": "fr", "op": "cues", "lesson": "colors.json", "chain": "colors", "locale": "fr-CA"}"#,
            #"{"id": "es", "op": "cues", "lesson": "colors.json", "chain": "colors", "locale": "ES-es"}"#,
        ]
        let reply = try Clients.socat(daemon, input: requests.joined(separator: "\n") + "\n")
        let events = try ReceivedEvent.parse(reply.stdout)
        for (id, locale) in [("mx", ["--locale", "es-MX"]), ("default", [])] {
            let mine = events.filter { $0.id == id }
            let (sheet, _) = try ColorsLesson.cues(locale)
            #expect(mine.dropLast().map { "\($0.type)@\($0.frame ?? -1)" } == sheet.cues.map { "\($0["type"]!)@\($0["frame"]!)" }, "\(id)")
            #expect(mine.last?.type == "finished" && mine.last?.frame == sheet.frames, "\(id)")
        }
        func error(_ id: String) -> String? {
            events.first { $0.id == id && $0.type == "error" }?.fields["message"] as? String
        }
        // The listing's end says which of the lesson's locales changed its clips: none for a
        // language it does not have (the default plays), and no key without a locale.
        func locales(_ id: String) -> [String]? {
            events.last { $0.id == id && $0.type == "finished" }?.fields["locales"] as? [String]
        }
        #expect(locales("mx") == ["es-MX", "es"] && locales("es") == ["es"] && locales("fr") == [])
        #expect(events.last { $0.id == "default" && $0.type == "finished" }.map { $0.fields["locales"] == nil } == true)
        #expect(error("type") == "request: locale: expected a string")
        #expect(error("tag") == "request: locale: 'es_MX' is not a locale tag: subtags are joined by hyphens (es-MX)")
        #expect(error("null") == "request: locale: expected a string")
        #expect(daemon.stop() == 0)
    }

    /// A `play` tells the locales it used as a `cues` listing does, in its `finished`: the
    /// locales that changed its clips, most specific first; none for a language the lesson does
    /// not have; no key without a locale. (On the private PulseAudio server: the daemon has no
    /// virtual output, and ALSA's null device has no clock to place cues on. About 3 s.)
    @Test(.requires(PulseTestServer.isAvailable, "needs the PulseAudio test server"))
    func playTellsTheLocalesItUsed() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: Repo.path("Timings/lessons"), server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let requests = [
            #"{"id": "mx", "op": "play", "lesson": "colors.json", "chain": "colors", "locale": "es-mx"}"#,
            #"{"id": "fr", "op": "play", "lesson": "colors.json", "chain": "colors", "locale": "fr-CA"}"#,
            #"{"id": "default", "op": "play", "lesson": "colors.json", "chain": "colors"}"#,
        ]
        let reply = try Clients.socat(daemon, input: requests.joined(separator: "\n") + "\n")
        let events = try ReceivedEvent.parse(reply.stdout)
        func finished(_ id: String) -> ReceivedEvent? { events.last { $0.id == id && $0.isTerminal } }
        for id in ["mx", "fr", "default"] {
            #expect(finished(id)?.type == "finished" && finished(id)?.fields["playback"] is String, "\(id): \(finished(id)?.fields ?? [:]) \(daemon.stderr)")
        }
        #expect(finished("mx")?.fields["locales"] as? [String] == ["es-MX", "es"])
        #expect(finished("fr")?.fields["locales"] as? [String] == [])
        #expect(finished("default").map { $0.fields["locales"] == nil } == true)
        #expect(try EventSchema.problems(reply.stdout, as: "daemonLine") == nil)
        #expect(daemon.stop() == 0)
    }

    /// `play` with `locale` (tags ignore case) plays the locale's clips: its events are the
    /// cue sheet's, at the same frames. (On the private PulseAudio server: about 2.6 s.)
    @Test(.requires(PulseTestServer.isAvailable, "needs the PulseAudio test server"))
    func playInALocale() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: Repo.path("Timings/lessons"), server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let reply = try Clients.socat(daemon, input: #"{"id": "p", "op": "play", "lesson": "colors.json", "chain": "colors", "locale": "es-mx"}"# + "\n")
        let events = try ReceivedEvent.parse(reply.stdout)
        let (mx, _) = try ColorsLesson.cues(["--locale", "es-MX"])
        #expect(events.filter(\.isCue).map { "\($0.type)@\($0.frame ?? -1)" } == mx.cues.map { "\($0["type"]!)@\($0["frame"]!)" })
        #expect(events.last?.type == "finished", "\(events.last?.fields ?? [:]) \(daemon.stderr)")
    }
}
