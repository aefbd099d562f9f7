import Foundation
import NarratorKit

/// The folder of lesson files the daemon may open. A request names a lesson by its path
/// relative to the folder; anything that resolves outside it (an absolute path, `..`, a
/// symbolic link that leads out) is refused.
public struct LessonLibrary: Sendable {
    /// The folder's real path, without a trailing slash.
    let root: String

    init(path: String) throws(NarratorError) {
        guard let real = Self.realPath(path) else {
            throw NarratorError(file: path, "the lesson library is not a readable folder")
        }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: real, isDirectory: &isFolder), isFolder.boolValue else {
            throw NarratorError(file: path, "the lesson library is not a folder")
        }
        root = real
    }

    /// The lesson's real path inside the library.
    func resolve(_ name: String) throws(NarratorError) -> String {
        // Refused by its name alone, whether or not such a file exists: an absolute path, a
        // `..` step, a NUL.
        let steps = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !name.isEmpty, !name.hasPrefix("/"), !name.contains("\0"), !steps.contains("..") else {
            throw NarratorError(file: "request", place: "lesson", "'\(name)' is outside the lesson library")
        }
        guard let real = Self.realPath(root + "/" + name) else {
            throw NarratorError(file: "request", place: "lesson", "no lesson '\(name)' in the library")
        }
        // A symbolic link inside that leads out. Compared byte for byte.
        guard real.utf8.starts(with: (root == "/" ? "/" : root + "/").utf8) else {
            throw NarratorError(file: "request", place: "lesson", "'\(name)' is outside the lesson library")
        }
        return real
    }

    /// The largest lesson file read: lessons are small (the audio is in files they name).
    static let maxLessonBytes = 16 << 20

    /// The lesson `name`, with `locale` applied (nil: the lesson's default).
    func load(_ name: String, locale: String? = nil) throws(NarratorError) -> NarratorLesson {
        let path = try resolve(name)
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw NarratorError(file: name, "not a regular file")
        }
        guard info.st_size <= Self.maxLessonBytes else {
            throw NarratorError(file: name, "\(info.st_size) bytes, over the \(Self.maxLessonBytes >> 20) MiB a lesson file may have")
        }
        return try NarratorLesson(path: path, locale: locale)
    }

    /// What a `finished` event says of the locale a request asked for (`cues` and `play`): with
    /// a `locale`, `locales`, the lesson's locales that changed its clips, most specific first
    /// (`[]`: the default plays, the lesson has nothing in that language); without, nothing.
    static func localesMember(of lesson: NarratorLesson) -> [EventEncoder.Member] {
        guard let resolution = lesson.lesson.resolution else { return [] }
        return [EventEncoder.Member("locales", .strings(resolution.used.reversed()))]
    }

    /// The most lesson files `programs()` reads.
    static let maxListedLessons = 1000

    /// The most bytes (UTF-8, keys and values) of one program's `texts`, and of its
    /// `pulseAnswers`: an event line stays far under the loader's `maxLine` (1 MiB) even with
    /// every character escaped.
    static let maxProgramMapBytes = 64 << 10
    /// The most bytes of `texts` all the programs of one lesson carry: a lesson of many chains
    /// that play one long transcript does not make a listing of gigabytes.
    static let maxLessonTextBytes = 1 << 20

    /// What the library holds, for a client's menu (the `library` request): for each `.json`
    /// file at the library's top level, in byte order of its name (at most `maxListedLessons`),
    /// the members of one `program` event per chain (`lesson`, `chain`) and per activity
    /// (`lesson`, `activity`, `answers` its steps' answers in step order, once each, `sounds`
    /// and `states` its tap sounds' and intro states' names, sorted, `pulseAnswers`), chains and
    /// activities sorted by name, each with `texts` when it plays clips that have them; or one
    /// event with `lesson` and `problem` (why it cannot be read) for a file that is not a lesson
    /// or leads out of the library. A `.json` file that is plainly something else (a JSON
    /// object naming none of a lesson's own members: a timing file, a cue sheet, a manifest) is
    /// not listed: `notLessons` counts them. Run by a loader child: a lesson file is read here.
    func programs() -> (programs: [[EventEncoder.Member]], notLessons: Int) {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            .prefix(Self.maxListedLessons)
        var events: [[EventEncoder.Member]] = []
        var notLessons = 0
        for name in names {
            // Only a file inside the library is looked into (a link that leads out is listed
            // with its problem, as any request for it is refused).
            if let path = try? resolve(name), Self.isPlainlyNotALesson(path) {
                notLessons += 1
                continue
            }
            let lessonMember = EventEncoder.Member("lesson", .string(name))
            let lesson: Lesson
            do throws(NarratorError) {
                lesson = try load(name).lesson
            } catch {
                events.append([lessonMember, EventEncoder.Member("problem", .string(publicDescription(of: error)))])
                continue
            }
            events += Self.programs(of: lesson, named: name) { Self.pictureURL(lesson: name, name: $0) }
        }
        return (events, notLessons)
    }

    /// The `program` events of `lesson`, listed as `name` (as `programs()` describes them):
    /// one per chain and one per activity, sorted by name. `pictureURL`: where the page finds a
    /// picture of the lesson, by its name (the daemon's `pictures/LESSON/NAME`; `pack --web`'s
    /// file in the pack). `narrator pack --web` writes the same events into its manifest.
    public static func programs(of lesson: Lesson, named name: String, pictureURL: (String) -> String) -> [[EventEncoder.Member]] {
        var events: [[EventEncoder.Member]] = []
        let lessonMember = EventEncoder.Member("lesson", .string(name))
        var textBudget = Self.maxLessonTextBytes
        func textsMember(_ chains: some Sequence<String>) -> [EventEncoder.Member] {
            let texts = Self.texts(of: chains, in: lesson, budget: &textBudget)
            return texts.isEmpty ? [] : [EventEncoder.Member("texts", .stringMap(texts))]
        }
        for chain in lesson.chains.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            events.append([lessonMember, EventEncoder.Member("chain", .string(chain))] + textsMember([chain]))
        }
        for id in lesson.activities.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            guard let activity = lesson.activities[id] else { continue }
            var answers: [String] = []
            var seen: Set<String> = []
            for step in activity.steps where seen.insert(step.answer).inserted { answers.append(step.answer) }
            let (steps, stepsLeftOut) = Self.steps(of: activity)
            let pictures = Self.pictures(of: activity, in: lesson, pictureURL: pictureURL)
            events.append(
                [
                    lessonMember, EventEncoder.Member("activity", .string(id)),
                    EventEncoder.Member("answers", .strings(answers)),
                    EventEncoder.Member("pulseAnswers", .stringMap(Self.pulseAnswers(of: activity))),
                    EventEncoder.Member("sounds", .strings(activity.sounds.keys.sorted())),
                    EventEncoder.Member("states", .strings(activity.intro.keys.sorted())),
                    EventEncoder.Member("steps", .array(steps)),
                ] + (pictures.isEmpty ? [] : [EventEncoder.Member("pictures", .object(pictures))])
                    + (stepsLeftOut > 0 ? [EventEncoder.Member("stepsLeftOut", .int(stepsLeftOut))] : [])
                    + textsMember(activity.chainIDs))
        }
        return events
    }

    /// The members only a lesson has at its top level.
    static let lessonMembers: Set<String> = ["clips", "chains", "pools", "activities", "sprites", "locales"]

    /// Whether the file at `path` is a JSON object none of whose top-level members a lesson has
    /// (a timing file's `words`, a cue sheet's `cues`). A file that is not JSON, or too large,
    /// or that cannot be read, is not plainly anything: it is listed with its problem, since it
    /// may be a lesson with a mistake in it.
    static func isPlainlyNotALesson(_ path: String) -> Bool {
        guard let data = try? InputFile.read(path: path, limit: InputFile.documentLimit),
            let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [String: Any]
        else { return false }
        return lessonMembers.isDisjoint(with: object.keys)
    }

    /// Which answer's tile a pulse target is, for a client that shows answers as tiles (the
    /// read-along page): the lesson format links a target to an answer only through a step, so
    /// each target a step's hints pulse (its `idle` feedback's and its `wrong` feedbacks'
    /// `pulse`) is that step's answer's tile (`tile-see` of the step answered `see`). Not listed:
    /// a target that is itself an answer or a tap sound (its own tile), one that steps with
    /// different answers pulse (it could be either), and targets pulsed only by chains or by
    /// `correct` feedback (a reward, such as a ticket, not a hint). At most
    /// `maxProgramMapBytes`, in step order.
    static func pulseAnswers(of activity: Activity) -> [String: String] {
        var own = Set(activity.sounds.keys)
        for step in activity.steps { own.insert(step.answer) }
        var links: [String: String] = [:]
        var ambiguous: Set<String> = []
        var bytes = 0
        for step in activity.steps {
            for feedback in (step.idle.map { [$0] } ?? []) + step.wrong {
                for target in feedback.pulse where !own.contains(target) && !ambiguous.contains(target) {
                    if let linked = links[target] {
                        if linked != step.answer { ambiguous.insert(target) }
                        continue
                    }
                    let size = target.utf8.count + step.answer.utf8.count
                    guard bytes + size <= maxProgramMapBytes else { continue }
                    bytes += size
                    links[target] = step.answer
                }
            }
        }
        for target in ambiguous { links[target] = nil }
        return links
    }

    /// The most bytes (UTF-8 of answers and choices) of one program's `steps`: an activity of
    /// 100,000 steps of 24 choices would be 150 MiB of listing. The steps after those that
    /// fit are left out, and `stepsLeftOut` says how many.
    static let maxProgramStepBytes = 256 << 10

    /// An activity's steps for the listing, in step order: `{"answer", "choices"}` each (the
    /// choices `[answer]` when the lesson gives none), as many as fit `maxProgramStepBytes`,
    /// and how many did not.
    static func steps(of activity: Activity) -> (steps: [EventEncoder.Value], leftOut: Int) {
        var steps: [EventEncoder.Value] = []
        var bytes = 0
        for (index, step) in activity.steps.enumerated() {
            let size = step.answer.utf8.count + step.choices.reduce(0) { $0 + $1.utf8.count }
            guard bytes + size <= maxProgramStepBytes else { return (steps, activity.steps.count - index) }
            bytes += size
            steps.append(.object(["answer": .string(step.answer), "choices": .strings(step.choices)]))
        }
        return (steps, 0)
    }

    /// The pictures of an activity for the listing: for each name it uses (choices, answers,
    /// tap sounds, pulse targets: `Lesson.pictureNames(of:)`) that the lesson gives a picture
    /// for, `{"alt", "url"}`, the URL relative to the page (`pictures/LESSON/NAME`, each
    /// percent-encoded), where the daemon's web server serves it. At most
    /// `maxProgramMapBytes` of names, texts and URLs, in byte order of the names.
    static func pictures(of activity: Activity, in lesson: Lesson, pictureURL: (String) -> String) -> [String: EventEncoder.Value] {
        var pictures: [String: EventEncoder.Value] = [:]
        var bytes = 0
        let names = lesson.pictureNames(of: activity).filter { lesson.pictures[$0] != nil }
        for name in names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let url = pictureURL(name)
            let alt = lesson.pictures[name]!.alt
            let size = name.utf8.count + url.utf8.count + alt.utf8.count
            guard bytes + size <= maxProgramMapBytes else { continue }
            bytes += size
            pictures[name] = .object(["alt": .string(alt), "url": .string(url)])
        }
        return pictures
    }

    /// Where the web server serves the picture `name` of lesson `lesson`, relative to its page.
    static func pictureURL(lesson: String, name: String) -> String {
        "pictures/" + percentEncoded(lesson) + "/" + percentEncoded(name)
    }

    /// `text` with every byte but RFC 3986's unreserved characters (letters, digits, `-._~`)
    /// percent-encoded: a `/` or `?` in a name stays in its URL step.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// What the clips `chains` play say when they have no words to show: clip id → transcript,
    /// for each voice or effect clip (drawn from a pool too, not a `music` item) with a
    /// `transcript` and neither `timings` nor word markers. In byte order of the ids, at most
    /// `maxProgramMapBytes` and at most what is left of `budget` (spent here); a clip that does
    /// not fit is left out.
    static func texts(of chains: some Sequence<String>, in lesson: Lesson, budget: inout Int) -> [String: String] {
        var clips: Set<String> = []
        for chain in chains {
            for item in lesson.chains[chain] ?? [] {
                switch item {
                case .clip(let id): clips.insert(id)
                case .pool(let id): clips.formUnion(lesson.pools[id]?.clips ?? [])
                case .silence, .pulse, .music: break
                }
            }
        }
        var texts: [String: String] = [:]
        var bytes = 0
        for id in clips.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            guard let clip = lesson.clips[id], clip.timings == nil, clip.markers != .words,
                let transcript = clip.transcript, !transcript.allSatisfy(\.isWhitespace)
            else { continue }
            let size = id.utf8.count + transcript.utf8.count
            guard bytes + size <= maxProgramMapBytes, size <= budget else { continue }
            bytes += size
            budget -= size
            texts[id] = transcript
        }
        return texts
    }

    /// `error` as a client may read it: files inside the library by their path in it, any other
    /// absolute path by its last component only (`…/name`). Clients never learn where the
    /// library or anything else lives on the host.
    func publicDescription(of error: NarratorError) -> String {
        NarratorError(file: publicPath(error.file), place: error.place.map(scrub), scrub(error.message)).description
    }

    /// A path as a client may see it: the library itself is `.`, a path inside it is relative
    /// to it, any other absolute path is its last component only.
    func publicPath(_ path: String) -> String {
        if path == root { return "." }
        let prefix = root == "/" ? "/" : root + "/"
        if path.hasPrefix(prefix) { return String(path.dropFirst(prefix.count)) }
        if path.hasPrefix("/") { return "…/" + (path.split(separator: "/").last.map(String.init) ?? "") }
        return path
    }

    /// Characters that end a path in a message.
    private static let pathEnds: Set<Character> = ["'", "\"", "`", ")", "]", ",", ";"]
    /// Characters after which a `/` starts a path.
    private static let pathStarts: Set<Character> = ["'", "\"", "`", "(", "[", "=", ":"]
    /// Quotes: a path that starts right after one runs to the same quote, spaces included.
    private static let quotes: Set<Character> = ["'", "\"", "`"]

    /// `text` with every absolute path in it made public (`publicPath`, one path at a time, so
    /// that the library's prefix is removed only where a path starts with it: never from a
    /// sibling such as `/srv/narrator-audio` of `/srv/narrator`). A path starts at a `/` that
    /// begins the text or follows a space, a quote, a bracket, `=` or `:`. One that starts
    /// after a quote runs to the same quote, spaces included (`'/home/Jane Doe/a.wav'`);
    /// another runs to the next quote, bracket, comma or semicolon, or to a space, unless what
    /// follows that space up to the next one holds a `/` (the rest of a path whose folder has a
    /// space: `/home/Jane Doe/lib/a.wav`), or the path so far ends with `:` (Narrator's
    /// `file: message`). A path that holds spaces and is none of these, such as a last
    /// component `my file.wav` outside any quote, shows only words of its last component.
    /// The library's path met elsewhere (inside a word) becomes `.` when it ends there or is
    /// followed by `/` or an end of path.
    func scrub(_ text: String) -> String {
        let characters = Array(text)
        let rootCharacters = Array(root)
        // Whether the text at `index` is the library's path, then a `/`, a space, an end of
        // path or the end.
        func startsWithRoot(at index: Int) -> Bool {
            guard index + rootCharacters.count <= characters.count,
                characters[index..<(index + rootCharacters.count)].elementsEqual(rootCharacters)
            else { return false }
            guard index + rootCharacters.count < characters.count else { return true }
            let after = characters[index + rootCharacters.count]
            return after == "/" || after.isWhitespace || Self.pathEnds.contains(after)
        }
        var out = ""
        // The path being read, appended to in place (a copy per character would make a long
        // path quadratic).
        var path = ""
        var inPath = false
        var closing: Character?
        var previous: Character = " "
        var index = 0
        // Whether the word after the whitespace at `index` (up to the next whitespace or end of
        // a path) holds a `/`. Each character is looked at here at most once more than in the
        // loop below: a word looked over is then read as part of the path or skipped past.
        func continuesPath(after index: Int) -> Bool {
            var next = index + 1
            while next < characters.count {
                let character = characters[next]
                if character.isWhitespace || Self.pathEnds.contains(character) { return false }
                if character == "/" { return true }
                next += 1
            }
            return false
        }
        while index < characters.count {
            let character = characters[index]
            if inPath {
                let ends: Bool
                if let closing {
                    ends = character == closing || character == "\n"
                } else if character.isWhitespace {
                    ends = path.hasSuffix(":") || character == "\n" || !continuesPath(after: index)
                } else {
                    ends = Self.pathEnds.contains(character)
                }
                if ends {
                    out += publicPath(path)
                    out.append(character)
                    inPath = false
                } else {
                    path.append(character)
                }
            } else if character == "/" && (previous.isWhitespace || Self.pathStarts.contains(previous)) {
                inPath = true
                closing = Self.quotes.contains(previous) ? previous : nil
                // The library's own path, read whole (spaces and all) where it is followed by
                // the end of a path.
                if root != "/", startsWithRoot(at: index) {
                    path = root
                    index += rootCharacters.count
                    previous = rootCharacters.last!
                    continue
                }
                path = "/"
            } else {
                out.append(character)
            }
            previous = character
            index += 1
        }
        if inPath { out += publicPath(path) }
        return root == "/" ? out : Self.replaceBounded(root, in: out)
    }

    /// `text` with `root` replaced by `.` wherever it is followed by `/`, an end of path or the
    /// end of the text.
    private static func replaceBounded(_ root: String, in text: String) -> String {
        var out = ""
        var rest = text[...]
        while let range = rest.range(of: root) {
            let after = rest[range.upperBound...].first
            out += rest[..<range.lowerBound]
            if after == nil || after == "/" || after!.isWhitespace || pathEnds.contains(after!) {
                out += "."
            } else {
                out += rest[range]
            }
            rest = rest[range.upperBound...]
        }
        return out + rest
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
