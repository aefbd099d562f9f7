import Foundation
import NarratorCore
import Testing

/// A lesson's narration in several languages: one structure, the default's clips, and per
/// locale what a translation changes, resolved clip by clip (`es-MX` → `es` → the default).
@Suite("Lesson locales")
struct LocaleTests {
    static let clips = """
        "locale": "en",
        "clips": {
          "a": {"file": "en/a.wav", "timings": "en/a.json", "transcript": "Apple", "start": 0.5, "end": 2},
          "b": {"file": "en/b.wav", "timings": "en/b.json", "transcript": "Ball"},
          "c": {"file": "en/c.wav", "markers": "words", "transcript": "Cat"},
          "ding": {"file": "ding.wav", "bus": "sfx"}
        },
        "chains": {"all": [{"clip": "a"}, {"clip": "b"}, {"clip": "c"}, {"clip": "ding"}]}
        """

    func parse(_ locales: String, clips: String = LocaleTests.clips) throws(NarratorError) -> Lesson {
        let json = "{\"sampleRate\": 48000, \(clips)\(locales.isEmpty ? "" : ", \"locales\": \(locales)")}"
        return try Lesson.parse(Data(json.utf8), path: "/l/lesson.json", directory: URL(fileURLWithPath: "/l"))
    }

    static let spanish = """
        {"es": {"clips": {"a": {"file": "es/a.wav", "timings": "es/a.json", "transcript": "Manzana"},
                          "b": {"file": "es/b.wav"}}},
         "es-MX": {"clips": {"a": {"transcript": "Manzana roja"},
                             "c": {"file": "mx/c.wav", "markers": "words"}}}}
        """

    @Test func eachClipFallsBackFromRegionToLanguageToDefault() throws {
        let lesson = try parse(Self.spanish)
        let mx = try lesson.localized(to: "es-MX")
        // a: es's recording, with es-MX's transcript laid over it.
        #expect(mx.clips["a"]!.file == "/l/es/a.wav" && mx.clips["a"]!.timings == "/l/es/a.json")
        #expect(mx.clips["a"]!.transcript == "Manzana roja" && mx.clips["a"]!.key == "locales.es-MX.clips.a")
        // b: es's; c: es-MX's own; ding: the default's.
        #expect(mx.clips["b"]!.file == "/l/es/b.wav" && mx.clips["b"]!.key == "locales.es.clips.b")
        #expect(mx.clips["c"]!.file == "/l/mx/c.wav" && mx.clips["c"]!.markers == .words)
        #expect(mx.clips["ding"]! == lesson.clips["ding"]! && mx.clips["ding"]!.key == "clips.ding")
        #expect(mx.resolution?.requested == "es-MX" && mx.resolution?.used == ["es", "es-MX"] && mx.resolution?.fellBack == false)

        let es = try lesson.localized(to: "es")
        #expect(es.clips["a"]!.transcript == "Manzana" && es.clips["c"]! == lesson.clips["c"]!)
        // A region of es that the lesson does not have (es-AR) is es; tags ignore case.
        #expect(try lesson.localized(to: "es-AR").clips["a"]! == es.clips["a"]!)
        #expect(try lesson.localized(to: "ES-mx").clips["c"]!.file == "/l/mx/c.wav")
        // Structure is shared.
        #expect(mx.chains == lesson.chains && mx.sampleRate == lesson.sampleRate)
    }

    @Test func aNewRecordingKeepsNothingOfTheDefaultsButItsBus() throws {
        let lesson = try parse(Self.spanish)
        let b = try lesson.localized(to: "es").clips["b"]!
        // The default's timings, transcript and region time English words: not the Spanish file's.
        #expect(b.timings == nil && b.transcript == nil && b.start == nil && b.end == nil && b.bus == .voice)
        let a = try lesson.localized(to: "es").clips["a"]!
        #expect(a.start == nil && a.end == nil, "the default's region (0.5–2 s) was of the English file")
        // Without a file, what is given replaces, the rest stays.
        let only = try parse(#"{"fr": {"clips": {"a": {"transcript": "Pomme", "end": 1.5}}}}"#).localized(to: "fr").clips["a"]!
        #expect(only.file == "/l/en/a.wav" && only.timings == "/l/en/a.json" && only.start == 0.5 && only.end == 1.5)
        #expect(only.transcript == "Pomme")
    }

    @Test func aLocaleTheLessonLacksPlaysTheDefaultAndSaysSo() throws {
        let lesson = try parse(Self.spanish)
        let fr = try lesson.localized(to: "fr-CA")
        #expect(fr.clips == lesson.clips)
        #expect(fr.resolution?.fellBack == true && fr.resolution?.used == [])
        let british = try lesson.localized(to: "en-GB")
        #expect(british.clips == lesson.clips && british.resolution?.isDefault == true && british.resolution?.fellBack == false)
        // Without "locale", nothing is the default's language: every unknown tag falls back.
        let unnamed = try parse("", clips: Self.clips.replacingOccurrences(of: "\"locale\": \"en\",", with: ""))
        #expect(try unnamed.localized(to: "en").resolution?.fellBack == true)
    }

    @Test func untranslatedVoiceClipsAreListedPerLocale() throws {
        let lesson = try parse(Self.spanish)
        // es: c has no recording; b's recording has no timings nor transcript (the default's have).
        let es = lesson.untranslated(in: "es")
        #expect(es.files == ["c"] && es.timings == ["b"] && es.transcripts == ["b"])
        // es-MX records c (words from its markers), but no transcript for it.
        let mx = lesson.untranslated(in: "es-MX")
        #expect(mx.files == [] && mx.timings == ["b"] && mx.transcripts == ["b", "c"])
        // The sound effect is never listed; a locale with nothing lists every voice clip.
        #expect(lesson.untranslated(in: "de").files == ["a", "b", "c"])
        // The default's own language lacks nothing; a region of it records only what differs.
        let british = try parse(#"{"en-GB": {"clips": {"a": {"file": "gb/a.wav", "timings": "gb/a.json"}}}}"#)
        #expect(british.untranslated(in: "en-GB").files == [] && british.untranslated(in: "en").files == [])
        #expect(british.untranslated(in: "en-GB").transcripts == ["a"] && british.untranslated(in: "en-GB").timings == [])
    }

    @Test func localeTags() {
        for good in ["en", "es-MX", "zh-Hant-TW", "es-419", "sgn-BE-FR", "de-CH-1901", String(repeating: "a", count: 8) + "-x"] {
            #expect(Lesson.localeTagProblem(good) == nil, "\(good)")
        }
        let bad: [(String, String)] = [
            ("", "an empty locale tag"),
            ("es_MX", "subtags are joined by hyphens (es-MX)"),
            ("e", "'e' is not a locale tag"),
            ("1es", "'1es' is not a locale tag"),
            ("es--MX", "'es--MX' is not a locale tag"),
            ("es-", "'es-' is not a locale tag"),
            ("es-MXMXMXMXM", "'es-MXMXMXMXM' is not a locale tag"),
            ("es MX", "'es MX' is not a locale tag"),
            ("es-ÑÑ", "'es-ÑÑ' is not a locale tag"),
            ("../en", "'../en' is not a locale tag"),
            (String(repeating: "ab-", count: 12) + "ab", "38 bytes long, over the 35"),
        ]
        for (tag, expected) in bad {
            let problem = Lesson.localeTagProblem(tag)
            #expect(problem?.contains(expected) == true, "\(tag): \(problem ?? "accepted")")
        }
    }

    @Test func badLocalesAreOneErrorNamingTheKey() {
        let cases: [(String, String)] = [
            (#""es""#, "locales: expected an object"),
            (#"{"es_MX": {"clips": {}}}"#, "locales.es_MX: 'es_MX' is not a locale tag: subtags are joined by hyphens (es-MX)"),
            (#"{"es": {"clips": {}}, "ES": {"clips": {}}}"#, "locales.ES: the same locale as 'es' (tags ignore case)"),
            (#"{"EN": {"clips": {}}}"#, "locales.EN: the lesson's default locale (\"locale\": \"en\"): its narration is in \"clips\""),
            (#"{"es": {}}"#, "locales.es.clips: missing key"),
            (#"{"es": {"clips": []}}"#, "locales.es.clips: expected an object"),
            (#"{"es": {"clip": {}}}"#, "locales.es.clip: unknown key (expected one of: clips)"),
            (#"{"es": {"clips": {"zebra": {"file": "z.wav"}}}}"#, "locales.es.clips.zebra: unknown clip 'zebra' (the lesson has: a, b, c, ding)"),
            (#"{"es": {"clips": {"a": {"bus": "sfx"}}}}"#, "locales.es.clips.a.bus: unknown key (expected one of: end, file, markers, start, timings, transcript)"),
            (#"{"es": {"clips": {"a": {}}}}"#, "locales.es.clips.a: changes nothing"),
            (#"{"es": {"clips": {"a": "es/a.wav"}}}"#, "locales.es.clips.a: expected an object"),
            (#"{"es": {"clips": {"a": {"file": 5}}}}"#, "locales.es.clips.a.file: expected a string"),
            (#"{"es": {"clips": {"a": {"transcript": ["x"]}}}}"#, "locales.es.clips.a.transcript: expected a string"),
            (#"{"es": {"clips": {"a": {"start": "0"}}}}"#, "locales.es.clips.a.start: expected a number"),
            (#"{"es": {"clips": {"a": {"end": 1e300}}}}"#, "locales.es.clips.a.end: expected seconds between 0 and 86400"),
            (#"{"es": {"clips": {"a": {"markers": "sentences"}}}}"#, "locales.es.clips.a.markers: expected \"words\" or \"pulses\""),
            // Laid over the default: the region's end (2 s) before the new start.
            (#"{"es": {"clips": {"a": {"start": 3}}}}"#, "locales.es.clips.a: its region (after es) ends at 2 s, before its start at 3 s"),
            // Laid over es: es-MX's start after es's end.
            (#"{"es": {"clips": {"b": {"file": "b.wav", "end": 1}}}, "es-MX": {"clips": {"b": {"start": 1.5}}}}"#,
             "locales.es-MX.clips.b: its region (after es, then es-MX) ends at 1 s, before its start at 1.5 s"),
            (#"{"es": {"clips": {"a": {"markers": "words"}}}}"#, "locales.es.clips.a: a clip's words come from its markers or its timings, not both (after es)"),
            (#"{"es": {"clips": {"c": {"timings": "c.json"}}}}"#, "locales.es.clips.c: a clip's words come from its markers or its timings, not both (after es)"),
        ]
        for (json, expected) in cases {
            do {
                _ = try parse(json)
                Issue.record("accepted: \(json)")
            } catch {
                #expect(error.description.hasPrefix("/l/lesson.json: \(expected)"), "\(error.description)")
            }
        }
        let badDefault: [(String, String)] = [
            (#""locale": 5,"#, "locale: expected a string"),
            (#""locale": "english!","#, "locale: 'english!' is not a locale tag"),
        ]
        for (replacement, expected) in badDefault {
            do {
                _ = try parse("", clips: Self.clips.replacingOccurrences(of: "\"locale\": \"en\",", with: replacement))
                Issue.record("accepted: \(replacement)")
            } catch {
                #expect(error.description.hasPrefix("/l/lesson.json: \(expected)"), "\(error.description)")
            }
        }
    }

    @Test func aSpriteClipIsSharedByEveryLocale() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("narrator-locale-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data(#"{"src": ["fx.wav"], "sprite": {"pop": [0, 200]}}"#.utf8).write(to: dir.appendingPathComponent("fx.json"))
        let json = """
            {"sampleRate": 48000, "clips": {}, "sprites": {"fx": {"map": "fx.json", "file": "fx.wav"}}, "chains": {},
             "locales": {"es": {"clips": {"fx.pop": {"file": "pop.wav"}}}}}
            """
        do {
            _ = try Lesson.parse(Data(json.utf8), path: "/l/lesson.json", directory: dir)
            Issue.record("a sprite's clip was localized")
        } catch {
            #expect(error.description.hasPrefix("/l/lesson.json: locales.es.clips.fx.pop: clip 'fx.pop' comes from a sprite map, which every locale shares"), "\(error.description)")
        }
    }

    @Test func aBadTagAskedForIsAnError() throws {
        let lesson = try parse(Self.spanish)
        #expect(throws: NarratorError.self) { try lesson.localized(to: "es_MX") }
        #expect(throws: NarratorError.self) { try lesson.localized(to: "") }
    }
}
