/// A lesson file: the clips it names, the pools that draw among them and the chains that
/// play them back to back. Parsed and validated as a whole before any audio is touched.
public struct Lesson: Sendable {
    /// The lesson file's path, as given: the name used in error messages.
    public let path: String
    /// The folder that clip and timing paths are relative to (absolute when the lesson was
    /// loaded from disk).
    public let folder: String
    public let sampleRate: Int
    /// Output channels; nil means "the largest channel count among the chain's clips".
    public let channels: Int?
    /// The clips by id: the default locale's, or those of the locale the lesson was resolved
    /// for (`localized(to:)`).
    public internal(set) var clips: [String: ClipSpec]
    public let pools: [String: Pool]
    public let chains: [String: [ChainItem]]
    public let activities: [String: Activity]
    /// How music is lowered under the voice.
    public let ducking: Ducking
    /// The integrated loudness (LUFS, EBU R 128) each bus's clips are brought to when they load
    /// (`"loudness"`); a bus not named keeps its clips' own levels.
    public var loudness: [Bus: Double] = [:]
    /// Clips some chain plays as a `music` item: they play on the music bus, whatever theirs.
    public var musicItemClips: Set<String> = []
    /// The language `clips` speak (`"locale"`, a BCP 47 tag), when the lesson names it.
    public var locale: String? = nil
    /// What each other locale changes, clip by clip (`"locales"`), by tag as written.
    public internal(set) var locales: [String: [String: ClipOverride]] = [:]
    /// The tags of `locales` by their lowercased spelling (tags ignore case), made once.
    public internal(set) var localeTags: [String: String] = [:]
    /// Set by `localized(to:)`: the locale asked for and the tags that supplied its clips.
    public var resolution: LocaleResolution? = nil
    /// The pictures of choices, answers, tap sounds and pulse targets (`"pictures"`), by name.
    public internal(set) var pictures: [String: Picture] = [:]
    /// A music bed for the whole lesson (`"music"`, the spec of an activity's): under every
    /// chain played on its own, and under every activity that has no bed of its own.
    public var music: Activity.Music? = nil

    /// The bus clip `id` plays on, for its loudness: `music` when a chain plays it as a music
    /// item, else its own.
    public func loudnessBus(of id: String) -> Bus {
        musicItemClips.contains(id) ? .music : clips[id]?.bus ?? .voice
    }

    public struct ClipSpec: Sendable, Equatable {
        public let id: String
        /// Path of the audio file, resolved against the lesson's folder.
        public let file: String
        /// Path of the word-timing file, resolved likewise.
        public let timings: String?
        /// Region of the file, in seconds of the file's own time.
        public let start: Double?
        public let end: Double?
        /// The bus it plays on: `voice` (the default) ducks `music`.
        public let bus: Bus
        /// What the audio file's own cue markers are: the clip's words, or pulses.
        public var markers: MarkerUse? = nil
        /// What the clip says, for `narrator validate` to check the timings' words against.
        public var transcript: String? = nil
        /// The sprite map the clip comes from (`"sprites"`), resolved, and the sprite's name in it.
        public var spriteMap: String? = nil
        public var spriteName: String? = nil
        /// The locale whose `"locales"` entry last changed the clip; nil for the default's.
        public var locale: String? = nil
        /// The clip's key path in the lesson: `clips.ID`, or `locales.TAG.clips.ID` for a
        /// locale's version of it.
        public var key: String { locale.map { "locales.\($0).clips.\(id)" } ?? "clips.\(id)" }
        /// Where a problem with the clip's region is: the sprite in its map, or the lesson key.
        public func regionPlace(lesson: String, key: String) -> (file: String, place: String) {
            if let spriteMap, let spriteName { return (spriteMap, "sprite.\(spriteName)") }
            return (lesson, "\(self.key).\(key)")
        }
    }

    /// What a clip's cue markers (WAV `cue ` points and their `labl` labels) mean.
    public enum MarkerUse: String, Sendable, Equatable {
        /// Each labelled marker starts a word, which ends at the next marker.
        case words
        /// Each labelled marker is a pulse of the target it names.
        case pulses
    }

    /// What a clip is, for the mix: narration, a sound effect, or music kept under the voice.
    public enum Bus: String, Sendable, Equatable, Hashable, CaseIterable {
        case voice, sfx, music
    }

    /// The loudness targets a lesson may ask for, in LUFS: from the absolute gate of
    /// BS.1770 (−70) to full scale.
    public static let loudnessTargets: ClosedRange<Double> = -70...0

    /// Music under the voice: lowered by `gain` (a factor, from decibels) with linear ramps
    /// that start at a voice clip's first frame (`attackFrames` down) and at the frame after
    /// its last (`releaseFrames` back up).
    public struct Ducking: Sendable, Equatable {
        public let gain: Float
        public let attackFrames: Int
        public let releaseFrames: Int

        /// −12 dB, 50 ms down, 300 ms back up.
        public static func standard(rate: Int) -> Ducking {
            Ducking(gain: Float(Decibels.factor(-12)), attackFrames: Frames.from(seconds: 0.05, rate: rate)!,
                    releaseFrames: Frames.from(seconds: 0.3, rate: rate)!)
        }

        public init(gain: Float, attackFrames: Int, releaseFrames: Int) {
            self.gain = gain
            self.attackFrames = max(1, attackFrames)
            self.releaseFrames = max(1, releaseFrames)
        }
    }

    public struct Pool: Sendable, Equatable {
        public let id: String
        public let clips: [String]
        /// A draw never repeats any of the pool's last `noRepeat` picks (clamped so that a
        /// pick is always possible: at most `clips.count - 1`).
        public let noRepeat: Int
    }

    public enum ChainItem: Sendable, Equatable {
        case clip(String)
        case pool(String)
        case silence(frames: Int)
        case pulse(targets: [String])
        /// A clip started under what follows: it does not hold the chain back, and is cut where
        /// the chain ends.
        case music(String)
    }

    /// The keys each object of a lesson may have (made once: a chain of a million items checks
    /// a million objects against them).
    enum Keys {
        static let lesson: Set<String> = [
            "sampleRate", "channels", "clips", "sprites", "pools", "chains", "activities", "ducking", "loudness", "locale", "locales",
            "pictures", "music",
        ]
        static let clip: Set<String> = ["file", "timings", "start", "end", "bus", "markers", "transcript"]
        /// A locale's entry in `"locales"`, and what it may change in a clip (not its bus: a
        /// clip plays on the same bus in every language).
        static let locale: Set<String> = ["clips"]
        static let clipOverride: Set<String> = ["file", "timings", "start", "end", "markers", "transcript"]
        static let sprites: Set<String> = ["map", "file", "bus"]
        static let pool: Set<String> = ["clips", "noRepeat"]
        static let ducking: Set<String> = ["gain", "attack", "release"]
        static let item: Set<String> = ["clip", "pool", "silence", "pulse", "music"]
        static let activity: Set<String> = ["intro", "steps", "final", "taps", "idleSeconds", "sounds", "polyphony", "music"]
        static let music: Set<String> = ["clip", "loop", "fadeIn", "fadeOut"]
        static let loop: Set<String> = ["start", "end"]
        static let picture: Set<String> = ["file", "alt"]
        static let step: Set<String> = ["prompt", "answer", "choices", "idle", "idleSeconds", "correct", "wrong"]
        static let feedback: Set<String> = ["chain", "pulse"]
    }

    /// The longest silence item, in seconds.
    public static let maxSilenceSeconds: Double = 3600

    /// The most clips a lesson may define (the Picture Dictionary's 350 words, many times
    /// over). Chains and pulse targets are read in linear time at any length; a lesson's clips
    /// are each prepared, looked up and drawn from pools, which for a million distinct clips
    /// took 12 s and 847 MiB, so their number is capped instead (docs/limits.md).
    public static let maxClips = 100_000

    /// The lowest rate a lesson may have: 8000 Hz, telephone speech, the lowest rate of every
    /// format narration is recorded or packed in (Opus and MP3 have none lower). A rate under
    /// it is a digit dropped (4800 for 48000), never meant: refused with that said, rather than
    /// rendered at a rate that muffles every clip (and warned of nine times over).
    public static let minimumSampleRate = 8000

    /// Why `rate` (under `minimumSampleRate`) is refused, with the rate meant when a digit
    /// dropped gives a usual one.
    static func lowRateProblem(_ rate: Int) -> String {
        let usual = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000]
        let meant = usual.contains(rate * 10) ? " (\(rate * 10)?)" : ""
        return "\(rate) Hz is under \(minimumSampleRate) Hz, the lowest rate narration is made at: almost certainly a typo\(meant)"
    }

    /// Parses lesson JSON; `folder` is where relative paths start, `files` where sprite maps
    /// are read from.
    public static func parse(_ bytes: [UInt8], path: String, folder: String, files: some LessonFiles) throws(NarratorError) -> Lesson {
        let root = JSONCursor(try JSONValue.parse(bytes, file: path), file: path)
        let top = try root.object(allowing: Keys.lesson)
        let sampleRate = try top.required("sampleRate", in: root).integer(in: 1000...768_000)
        guard sampleRate >= minimumSampleRate else {
            throw NarratorError(file: path, place: "sampleRate", Self.lowRateProblem(sampleRate))
        }
        let channels = try top["channels"].map { c throws(NarratorError) in try c.integer(in: 1...32) }

        // Resolved once per distinct path: a million clips of one file resolve it once.
        var resolved: [String: String] = [:]
        func resolve(_ relative: String) -> String {
            if relative.hasPrefix("/") { return relative }
            if let path = resolved[relative] { return path }
            let path = Paths.join(folder, relative)
            resolved[relative] = path
            return path
        }

        var clips: [String: ClipSpec] = [:]
        let clipsCursor = try top.required("clips", in: root)
        let clipEntries = try clipsCursor.object()
        guard clipEntries.count <= maxClips else {
            throw clipsCursor.fail("\(clipEntries.count) clips, over the \(maxClips) a lesson may define")
        }
        for (id, entry) in clipEntries {
            let fields = try entry.object(allowing: Keys.clip)
            let bus = try fields["bus"].map { c throws(NarratorError) in try parseBus(c) } ?? .voice
            let file = try fields.required("file", in: entry).string()
            let timings = try fields["timings"].map { c throws(NarratorError) in try c.string() }
            let start = try fields["start"].map { c throws(NarratorError) in try regionSeconds(c) }
            let end = try fields["end"].map { c throws(NarratorError) in try regionSeconds(c) }
            if let end, end <= (start ?? 0) { throw fields["end"]!.fail("must be after start") }
            var markers: MarkerUse?
            if let markersCursor = fields["markers"] {
                guard let use = MarkerUse(rawValue: try markersCursor.string()) else {
                    throw markersCursor.fail("expected \"words\" or \"pulses\"")
                }
                if use == .words, timings != nil { throw markersCursor.fail("a clip's words come from its markers or its timings, not both") }
                markers = use
            }
            let transcript = try fields["transcript"].map { c throws(NarratorError) in try c.string() }
            clips[id] = ClipSpec(
                id: id, file: resolve(file), timings: timings.map(resolve), start: start, end: end, bus: bus,
                markers: markers, transcript: transcript)
        }

        if let spritesCursor = top["sprites"] {
            for (prefix, entry) in try spritesCursor.object() {
                let fields = try entry.object(allowing: Keys.sprites)
                let mapCursor = try fields.required("map", in: entry)
                let map = try SpriteMap.load(path: resolve(try mapCursor.string()), files: files)
                let file: String
                if let fileCursor = fields["file"] { file = resolve(try fileCursor.string()) } else { file = try map.audioFile(files: files) }
                let bus = try fields["bus"].map { c throws(NarratorError) in try parseBus(c) } ?? .sfx
                for sprite in map.sprites {
                    let id = "\(prefix).\(sprite.name)"
                    if clips[id] != nil { throw entry.fail("sprite clip '\(id)' is also in \"clips\"") }
                    clips[id] = ClipSpec(
                        id: id, file: file, timings: nil, start: sprite.start, end: sprite.end, bus: bus, spriteMap: map.path,
                        spriteName: sprite.name)
                }
            }
        }

        var pools: [String: Pool] = [:]
        if let poolsCursor = top["pools"] {
            for (id, entry) in try poolsCursor.object() {
                let fields = try entry.object(allowing: Keys.pool)
                let members = try fields.required("clips", in: entry)
                let items = try members.array()
                var ids: [String] = []
                ids.reserveCapacity(items.count)
                var listed: Set<String> = []
                for member in items {
                    let clip = try member.string()
                    guard listed.insert(clip).inserted else { throw member.fail("clip '\(clip)' listed twice") }
                    ids.append(clip)
                }
                if ids.isEmpty { throw members.fail("empty pool: it needs at least one clip") }
                let noRepeat = try fields["noRepeat"]?.integer(in: 0...1_000_000) ?? 1
                pools[id] = Pool(id: id, clips: ids, noRepeat: min(noRepeat, ids.count - 1))
            }
        }

        var chains: [String: [ChainItem]] = [:]
        var musicItemClips: Set<String> = []
        for (id, entry) in try top.required("chains", in: root).object() {
            let cursors = try entry.array()
            var items: [ChainItem] = []
            items.reserveCapacity(cursors.count)
            for itemCursor in cursors {
                items.append(try parseItem(itemCursor, rate: sampleRate))
            }
            for case .music(let clip) in items { musicItemClips.insert(clip) }
            chains[id] = items
        }

        var ducking = Ducking.standard(rate: sampleRate)
        if let duckingCursor = top["ducking"] {
            let fields = try duckingCursor.object(allowing: Keys.ducking)
            let standard = ducking
            func seconds(_ key: String, _ fallback: Int) throws(NarratorError) -> Int {
                guard let cursor = fields[key] else { return fallback }
                let value = try cursor.number()
                guard value > 0, value <= 10, let frames = Frames.from(seconds: value, rate: sampleRate) else {
                    throw cursor.fail("a ramp lasts between 0 and 10 seconds")
                }
                return frames
            }
            var gain = standard.gain
            if let gainCursor = fields["gain"] {
                let decibels = try gainCursor.number()
                guard decibels <= 0, decibels >= -96 else { throw gainCursor.fail("gain in dB between -96 and 0") }
                gain = Float(Decibels.factor(decibels))
            }
            ducking = Ducking(
                gain: gain, attackFrames: try seconds("attack", standard.attackFrames),
                releaseFrames: try seconds("release", standard.releaseFrames))
        }

        let loudness = try top["loudness"].map { c throws(NarratorError) in try parseLoudness(c) } ?? [:]
        let (locale, locales, localeTags) = try parseLocales(top, clips: clips, resolve: resolve)

        var activities: [String: Activity] = [:]
        if let activitiesCursor = top["activities"] {
            for (id, entry) in try activitiesCursor.object() {
                let activity = try Activity.parse(entry, id: id, rate: sampleRate)
                if let music = activity.music { musicItemClips.insert(music.clip) }
                activities[id] = activity
            }
        }

        let pictures = try top["pictures"].map { c throws(NarratorError) in try Picture.parse(c, resolve: resolve) } ?? [:]
        let music = try top["music"].map { c throws(NarratorError) in try Activity.music(c, rate: sampleRate) }
        if let music { musicItemClips.insert(music.clip) }

        var lesson = Lesson(
            path: path, folder: folder, sampleRate: sampleRate, channels: channels,
            clips: clips, pools: pools, chains: chains, activities: activities, ducking: ducking, loudness: loudness,
            musicItemClips: musicItemClips, locale: locale, locales: locales, localeTags: localeTags, pictures: pictures)
        lesson.music = music
        return lesson
    }

    /// The longest a clip's region may reach into its file, in seconds (a day).
    public static let maxRegionSeconds: Double = 86400

    /// A clip region's `start` or `end`: seconds in 0...maxRegionSeconds.
    static func regionSeconds(_ cursor: JSONCursor) throws(NarratorError) -> Double {
        let seconds = try cursor.number()
        guard seconds >= 0, seconds <= maxRegionSeconds else {
            throw cursor.fail("expected seconds between 0 and \(Int(maxRegionSeconds)) (a day), got \(JSONCursor.describe(seconds))")
        }
        return seconds
    }

    /// `"loudness"`: one target in LUFS for every bus, or an object of targets by bus.
    private static func parseLoudness(_ cursor: JSONCursor) throws(NarratorError) -> [Bus: Double] {
        func target(_ cursor: JSONCursor) throws(NarratorError) -> Double {
            let lufs = try cursor.number()
            guard loudnessTargets.contains(lufs) else {
                throw cursor.fail(
                    "a loudness target is between \(Int(loudnessTargets.lowerBound)) and \(Int(loudnessTargets.upperBound)) LUFS, got \(JSONCursor.describe(lufs))")
            }
            return lufs
        }
        if case .number = cursor.value {
            let lufs = try target(cursor)
            return Dictionary(uniqueKeysWithValues: Bus.allCases.map { ($0, lufs) })
        }
        guard case .object = cursor.value else {
            throw cursor.fail("expected a target in LUFS, or an object of targets by bus (voice, sfx, music)")
        }
        var targets: [Bus: Double] = [:]
        for (name, value) in try cursor.object(allowing: Set(Bus.allCases.map { $0.rawValue })) {
            targets[Bus(rawValue: name)!] = try target(value)
        }
        return targets
    }

    private static func parseBus(_ cursor: JSONCursor) throws(NarratorError) -> Bus {
        guard let bus = Bus(rawValue: try cursor.string()) else { throw cursor.fail("expected \"voice\", \"sfx\" or \"music\"") }
        return bus
    }

    private static func parseItem(_ cursor: JSONCursor, rate: Int) throws(NarratorError) -> ChainItem {
        let fields = try cursor.object(allowing: Keys.item)
        guard fields.count == 1, let (key, value) = fields.first else {
            throw cursor.fail("a chain item has exactly one of: clip, pool, silence, pulse, music")
        }
        switch key {
        case "clip":
            return .clip(try value.string())
        case "music":
            return .music(try value.string())
        case "pool":
            return .pool(try value.string())
        case "silence":
            let seconds = try value.number()
            guard seconds >= 0, seconds <= maxSilenceSeconds, let frames = Frames.from(seconds: seconds, rate: rate) else {
                throw value.fail("silence must be between 0 and \(Int(maxSilenceSeconds)) seconds")
            }
            return .silence(frames: frames)
        default:
            let targetCursors = try value.array()
            var targets: [String] = []
            targets.reserveCapacity(targetCursors.count)
            for target in targetCursors { targets.append(try target.string()) }
            if targets.isEmpty { throw value.fail("a pulse names at least one target") }
            return .pulse(targets: targets)
        }
    }

    /// The chain `id`, or an error naming the lesson and the missing key.
    public func chain(_ id: String) throws(NarratorError) -> [ChainItem] {
        guard let chain = chains[id] else {
            throw NarratorError(file: path, place: "chains.\(id)", "unknown chain \(known("chains", chains.keys))")
        }
        return chain
    }

    /// The activity `id`, with every chain it names checked to exist: an unknown one is named
    /// by its key path (`activities.x.steps[1].correct`).
    public func activity(_ id: String) throws(NarratorError) -> Activity {
        guard let activity = activities[id] else {
            throw NarratorError(file: path, place: "activities.\(id)", "unknown activity \(known("activities", activities.keys))")
        }
        if let (chain, place) = activity.firstChain(where: { chains[$0] == nil }) {
            throw NarratorError(file: path, place: "activities.\(id).\(place)", "unknown chain '\(chain)' \(known("chains", chains.keys))")
        }
        _ = try bed(for: activity)
        return activity
    }

    /// Every music bed the lesson writes, with its key: the lesson's (`music`), then each
    /// activity's own (`activities.ID.music`), by key.
    public var beds: [(music: Activity.Music, place: String)] {
        (music.map { [($0, "music")] } ?? [])
            + sortedNames(activities.keys).compactMap { id in activities[id]!.music.map { ($0, "activities.\(id).music") } }
    }

    /// The music bed that plays under `activity` (its own `music`, else the lesson's: an
    /// activity's own bed wins), or under a chain played on its own (nil: the lesson's), with
    /// the key it is written at (`activities.ID.music` or `music`); nil when there is none. Its
    /// clip is checked to exist: an unknown one is an error naming `KEY.clip`.
    public func bed(for activity: Activity?) throws(NarratorError) -> (music: Activity.Music, place: String)? {
        let found: (music: Activity.Music, place: String)
        if let activity, let own = activity.music {
            found = (own, "activities.\(activity.id).music")
        } else if let music {
            found = (music, "music")
        } else {
            return nil
        }
        guard clips[found.music.clip] != nil else {
            throw NarratorError(file: path, place: "\(found.place).clip", "unknown clip '\(found.music.clip)' \(known("clips", clips.keys))")
        }
        return found
    }

    /// What the lesson has of a kind, for a message about a name it does not have: "(the
    /// lesson has: a, b)", or "(the lesson has no pools)".
    public func known(_ kind: String, _ names: some Collection<String>) -> String {
        names.isEmpty ? "(the lesson has no \(kind))" : "(the lesson has: \(Self.list(names)))"
    }

    /// Names for a one-line message: sorted, at most 20, then how many more.
    public static func list(_ names: some Collection<String>) -> String {
        if names.isEmpty { return "none" }
        let shown = sortedNames(names).prefix(20).joined(separator: ", ")
        return names.count > 20 ? "\(shown) and \(names.count - 20) more" : shown
    }

    /// Every clip chain `id` can play: its clips and all members of its pools, in chain order.
    /// This is where references are checked: a chain that names an unknown clip or pool, or a
    /// pool that names an unknown clip, is an error naming the lesson key. (Parsing checks only
    /// shape, so a lesson under construction still loads and its complete chains play.)
    public func clipIDs(reachableFrom id: String) throws(NarratorError) -> [String] {
        let items = try chain(id)
        var seen: Set<String> = []
        var ids: [String] = []
        var poolsSeen: Set<String> = []
        func add(_ clip: String, place: @autoclosure () -> String) throws(NarratorError) {
            guard clips[clip] != nil else { throw NarratorError(file: path, place: place(), "unknown clip '\(clip)' \(known("clips", clips.keys))") }
            if seen.insert(clip).inserted { ids.append(clip) }
        }
        for (index, item) in items.enumerated() {
            switch item {
            case .clip(let clip):
                try add(clip, place: "chains.\(id)[\(index)].clip")
            case .music(let clip):
                try add(clip, place: "chains.\(id)[\(index)].music")
            case .pool(let poolID):
                guard let pool = pools[poolID] else {
                    throw NarratorError(file: path, place: "chains.\(id)[\(index)].pool", "unknown pool '\(poolID)' \(known("pools", pools.keys))")
                }
                // A pool drawn from a million times is checked once.
                guard poolsSeen.insert(poolID).inserted else { continue }
                for (member, clip) in pool.clips.enumerated() {
                    try add(clip, place: "pools.\(poolID).clips[\(member)]")
                }
            case .silence, .pulse:
                break
            }
        }
        return ids
    }
}
