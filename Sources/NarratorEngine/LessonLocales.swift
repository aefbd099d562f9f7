/// A lesson's narration in several languages (docs/lessons.md, "Locales"): one structure
/// (chains, pools, activities, sprites), the default locale's clips in `"clips"`, and per
/// locale only what a translation changes, clip by clip. A locale is applied when the lesson
/// loads; everything after (schedules, cues, renders, playback) sees ordinary clips.
extension Lesson {
    /// What one locale changes in one clip. A new `file` is a new recording: the clip's timings,
    /// region, markers and transcript are then the override's own (none where it gives none),
    /// never the default's, which time other words. Without `file`, each field given replaces
    /// the one it inherits and the rest stay.
    public struct ClipOverride: Sendable, Equatable {
        public var file: String?
        public var timings: String?
        public var start: Double?
        public var end: Double?
        public var markers: MarkerUse?
        public var transcript: String?
    }

    /// How a requested locale was resolved.
    public struct LocaleResolution: Sendable, Equatable {
        /// The tag asked for, as given.
        public let requested: String
        /// The lesson's locales that changed its clips, most general first (`es`, `es-MX`):
        /// the order they are laid over the default.
        public let used: [String]
        /// The request names the default locale's language (`en-GB` of an `en` lesson).
        public let isDefault: Bool

        /// Nothing in the lesson is in the requested language: every clip is the default's.
        public var fellBack: Bool { used.isEmpty && !isDefault }
    }

    /// The longest locale tag accepted (RFC 5646 advises room for 35 characters).
    public static let maxLocaleTagLength = 35

    /// Why `tag` is not a locale tag (BCP 47 in shape: a language of 2 to 8 letters, then
    /// subtags of 1 to 8 letters or digits, joined by hyphens, at most 35 characters); nil
    /// when it is one.
    public static func localeTagProblem(_ tag: String) -> String? {
        let shown = tag.count > 40 ? String(tag.prefix(40)) + "…" : tag
        guard !tag.isEmpty else { return "an empty locale tag (expected a language tag such as en, es or es-MX)" }
        guard tag.utf8.count <= maxLocaleTagLength else {
            return "'\(shown)' is \(tag.utf8.count) bytes long, over the \(maxLocaleTagLength) a locale tag may have"
        }
        if tag.contains("_") {
            return "'\(shown)' is not a locale tag: subtags are joined by hyphens (\(String(tag.map { $0 == "_" ? "-" : $0 })))"
        }
        let subtags = tag.split(separator: "-", omittingEmptySubsequences: false)
        func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") }
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        let language = subtags[0].utf8
        let wellFormed =
            (2...8).contains(language.count) && language.allSatisfy(isLetter)
            && subtags.dropFirst().allSatisfy { subtag in
                (1...8).contains(subtag.utf8.count) && subtag.utf8.allSatisfy { isLetter($0) || isDigit($0) }
            }
        guard wellFormed else {
            return "'\(shown)' is not a locale tag (expected a language of 2 to 8 letters, then subtags of 1 to 8 letters or digits joined by hyphens: en, es, es-MX, zh-Hant-TW)"
        }
        return nil
    }

    /// The tags `tag` falls back through, most specific first, lowercased: `es-MX-x` → `es-mx-x`,
    /// `es-mx`, `es` (tags ignore case).
    static func fallbacks(of tag: String) -> [String] {
        var subtags = tag.asciiLowercased().split(separator: "-").map(String.init)
        var tags: [String] = []
        while !subtags.isEmpty {
            tags.append(subtags.joined(separator: "-"))
            subtags.removeLast()
        }
        return tags
    }

    /// The lesson's locales that apply to `tag`, as the lesson spells them, most general first.
    /// Its length is the tag's subtags at most: it looks each fallback up in `localeTags`, so
    /// resolving every locale of a lesson is linear in their number.
    public func localeChain(for tag: String) -> [String] { Self.localeChain(for: tag, byLowercase: localeTags) }

    /// `byLowercase`: the lesson's locale tags by their lowercased spelling.
    static func localeChain(for tag: String, byLowercase: [String: String]) -> [String] {
        fallbacks(of: tag).reversed().compactMap { byLowercase[$0] }
    }

    /// The lesson with the clips of locale `tag`: for each clip, the default's, then what each
    /// locale of `tag`'s fallbacks changes (`es`, then `es-MX`). A tag the lesson has nothing
    /// for gives the default's clips (`resolution` says so).
    public func localized(to tag: String) throws(NarratorError) -> Lesson {
        if let problem = Self.localeTagProblem(tag) { throw NarratorError(file: path, place: "locale", problem) }
        let chain = localeChain(for: tag)
        var lesson = self
        for locale in chain {
            for (id, override) in locales[locale]! {
                lesson.clips[id] = lesson.clips[id]!.applying(override, locale: locale)
            }
        }
        let isDefault = self.locale.map { Self.fallbacks(of: $0).last == Self.fallbacks(of: tag).last } ?? false
        lesson.resolution = LocaleResolution(requested: tag, used: chain, isDefault: isDefault)
        return lesson
    }

    /// The voice clips of `"clips"` whose file, with `tag` applied, is still the default's:
    /// what a translation into `tag` has yet to record (none for a tag of the default's own
    /// language: `en-GB` of an `en` lesson); and of those it recorded, the ones without
    /// timings or a transcript where the default's have them. (Sound effects, music and
    /// sprites are shared by every locale.)
    public func untranslated(in tag: String) -> (files: [String], timings: [String], transcripts: [String]) {
        let chain = localeChain(for: tag)
        let defaultLanguage = locale.map { Self.fallbacks(of: $0).last == Self.fallbacks(of: tag).last } ?? false
        var files: [String] = [], timings: [String] = [], transcripts: [String] = []
        for id in sortedNames(clips.keys) where clips[id]!.spriteMap == nil && loudnessBus(of: id) == .voice {
            let spec = clips[id]!
            guard let ownFile = chain.last(where: { locales[$0]?[id]?.file != nil }) else {
                if !defaultLanguage { files.append(id) }
                continue
            }
            var localized = spec
            for locale in chain.drop(while: { $0 != ownFile }) {
                if let override = locales[locale]?[id] { localized = localized.applying(override, locale: locale) }
            }
            let defaultHasWords = spec.timings != nil || spec.markers == .words
            if defaultHasWords, localized.timings == nil, localized.markers != .words { timings.append(id) }
            if spec.transcript != nil, localized.transcript == nil { transcripts.append(id) }
        }
        return (files, timings, transcripts)
    }

    /// `"locale"` and `"locales"`, checked against the clips they change.
    static func parseLocales(
        _ top: JSONCursor.Members, clips: [String: ClipSpec], resolve: (String) -> String
    ) throws(NarratorError) -> (String?, [String: [String: ClipOverride]], [String: String]) {
        var defaultLocale: String?
        if let cursor = top["locale"] {
            let tag = try cursor.string()
            if let problem = localeTagProblem(tag) { throw cursor.fail(problem) }
            defaultLocale = tag
        }
        guard let localesCursor = top["locales"] else { return (defaultLocale, [:], [:]) }
        var locales: [String: [String: ClipOverride]] = [:]
        var cursors: [String: [String: JSONCursor]] = [:]
        var spelled: [String: String] = [:]
        for (tag, entry) in try localesCursor.object() {
            if let problem = localeTagProblem(tag) { throw entry.fail(problem) }
            if let other = spelled[tag.asciiLowercased()] { throw entry.fail("the same locale as '\(other)' (tags ignore case)") }
            if let defaultLocale, tag.asciiLowercased() == defaultLocale.asciiLowercased() {
                throw entry.fail("the lesson's default locale (\"locale\": \"\(defaultLocale)\"): its narration is in \"clips\"")
            }
            spelled[tag.asciiLowercased()] = tag
            let fields = try entry.object(allowing: Keys.locale)
            var overrides: [String: ClipOverride] = [:]
            for (id, overrideCursor) in try fields.required("clips", in: entry).object() {
                guard let spec = clips[id] else {
                    let known = clips.isEmpty ? "(the lesson has no clips)" : "(the lesson has: \(list(clips.keys)))"
                    throw overrideCursor.fail("unknown clip '\(id)' \(known)")
                }
                if spec.spriteMap != nil {
                    throw overrideCursor.fail("clip '\(id)' comes from a sprite map, which every locale shares; give the locale its own clip in \"clips\"")
                }
                overrides[id] = try parseOverride(overrideCursor, resolve: resolve)
                cursors[tag, default: [:]][id] = overrideCursor
            }
            locales[tag] = overrides
        }
        // Each locale laid over its fallbacks, as it will load: every clip it changes must still
        // be a clip (a region that ends after it starts; words from markers or timings).
        for tag in sortedNames(locales.keys) {
            let chain = localeChain(for: tag, byLowercase: spelled)
            for (id, place) in cursors[tag] ?? [:] {
                var spec = clips[id]!
                for locale in chain { if let override = locales[locale]![id] { spec = spec.applying(override, locale: locale) } }
                if let end = spec.end, end <= (spec.start ?? 0) {
                    throw place.fail("its region (after \(chain.joined(separator: ", then "))) ends at \(JSONCursor.describe(end)) s, before its start at \(JSONCursor.describe(spec.start ?? 0)) s")
                }
                if spec.markers == .words, spec.timings != nil {
                    throw place.fail("a clip's words come from its markers or its timings, not both (after \(chain.joined(separator: ", then ")))")
                }
            }
        }
        return (defaultLocale, locales, spelled)
    }

    private static func parseOverride(_ cursor: JSONCursor, resolve: (String) -> String) throws(NarratorError) -> ClipOverride {
        let fields = try cursor.object(allowing: Keys.clipOverride)
        if fields.isEmpty {
            throw cursor.fail("changes nothing (give one or more of: \(sortedNames(Keys.clipOverride).joined(separator: ", ")))")
        }
        var override = ClipOverride()
        override.file = try fields["file"].map { c throws(NarratorError) in resolve(try c.string()) }
        override.timings = try fields["timings"].map { c throws(NarratorError) in resolve(try c.string()) }
        override.start = try fields["start"].map { c throws(NarratorError) in try regionSeconds(c) }
        override.end = try fields["end"].map { c throws(NarratorError) in try regionSeconds(c) }
        if let markersCursor = fields["markers"] {
            guard let use = MarkerUse(rawValue: try markersCursor.string()) else { throw markersCursor.fail("expected \"words\" or \"pulses\"") }
            override.markers = use
        }
        override.transcript = try fields["transcript"].map { c throws(NarratorError) in try c.string() }
        return override
    }
}

extension Lesson.ClipSpec {
    /// The clip as `locale` changes it (`Lesson.ClipOverride`).
    func applying(_ override: Lesson.ClipOverride, locale: String) -> Lesson.ClipSpec {
        var spec: Lesson.ClipSpec
        if let file = override.file {
            spec = Lesson.ClipSpec(
                id: id, file: file, timings: override.timings, start: override.start, end: override.end, bus: bus,
                markers: override.markers, transcript: override.transcript)
        } else {
            spec = Lesson.ClipSpec(
                id: id, file: file, timings: override.timings ?? timings, start: override.start ?? start, end: override.end ?? end,
                bus: bus, markers: override.markers ?? markers, transcript: override.transcript ?? transcript)
        }
        spec.locale = locale
        return spec
    }
}
