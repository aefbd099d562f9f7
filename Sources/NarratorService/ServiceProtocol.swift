import Foundation
import NarratorKit

/// One request of the daemon's protocol: a JSON object on one line (Unix socket) or in one
/// text message (WebSocket). docs/daemon.md is its specification.
enum ServiceRequest: Sendable {
    /// Plays a chain (`repeats` times) or an activity (answered by `tap` requests) on the
    /// daemon's device.
    /// `locale`: the narration's locale (a BCP 47 tag), nil for the lesson's default.
    case play(lesson: String, program: Program, seed: UInt64, locale: String?)
    /// A chain's or an activity's cue schedule, without playing it.
    case cues(lesson: String, program: Program, seed: UInt64, locale: String?)
    /// The library's lessons and what each can play: a `program` event per chain and activity.
    case library
    /// For an activity this connection plays: the child tapped (an answer, a sound's name,
    /// `replay`, `close`).
    case tap(target: RequestID, answer: String)
    /// Ends a request of this connection: a playback stops (`stopped`), a subscription ends.
    case stop(target: RequestID)
    /// Every event of one playback, from any client: `p3`, or `next` for the next to begin.
    case subscribe(playback: String)
    /// Controls a playback of this connection: pause, resume, seek, say a word, speed.
    case control(target: RequestID, Control)
    /// Sets a bus's (or the master's) gain and/or mute for this connection's playbacks, the
    /// ones playing and the ones to come.
    case volume(target: MixGains.Target, gain: Float?, muted: Bool?)

    enum Control: Sendable, Equatable {
        case pause
        case resume(Playback.ResumePoint)
        case seek(Playback.Position)
        case say(clip: String, word: Int, then: Playback.AfterWord)
        case speed(Double)
    }

    static let operations = ["play", "cues", "library", "tap", "replay", "close", "stop", "subscribe", "pause", "resume", "seek", "say", "speed", "volume"]

    /// The largest numeric id, in magnitude: whole numbers a JSON client holds exactly (2^53 − 1,
    /// JavaScript's safe integers).
    static let maxNumericID = 9_007_199_254_740_991
    /// The longest `answer` a tap may carry, in bytes.
    static let maxAnswerBytes = 256

    /// Parses one message. The id comes back even when the rest is wrong, so that the error
    /// event can name its request.
    static func parse(_ data: Data) -> (id: RequestID?, result: Result<ServiceRequest, NarratorError>) {
        let value: JSONValue
        do {
            value = try JSONValue.parse(data, file: "request", maxDepth: NarratorService.maxRequestDepth)
        } catch {
            return (nil, .failure(error))
        }
        let root = JSONCursor(value, file: "request")
        guard case .object(let members) = value else { return (nil, .failure(root.fail("expected a JSON object"))) }
        let id: RequestID
        switch members["id"] {
        case .string(let text)?: id = .string(text)
        case .number(let number)?:
            guard let whole = JSONCursor.exactInteger(number), abs(whole) <= maxNumericID else {
                return (nil, .failure(NarratorError(file: "request", place: "id", "expected a string or a whole number (at most \(maxNumericID) in magnitude)")))
            }
            id = .number(whole)
        case nil: return (nil, .failure(NarratorError(file: "request", place: "id", "missing key (every request needs an id: a string or a whole number)")))
        default: return (nil, .failure(NarratorError(file: "request", place: "id", "expected a string or a whole number")))
        }
        do throws(NarratorError) {
            return (id, .success(try parse(root)))
        } catch {
            return (id, .failure(error))
        }
    }

    private static func parse(_ root: JSONCursor) throws(NarratorError) -> ServiceRequest {
        let fields = try root.object()
        let opCursor = try fields.required("op", in: root)
        let op = try opCursor.string()
        func allow(_ keys: Set<String>) throws(NarratorError) {
            _ = try root.object(allowing: keys.union(["id", "op"]))
        }
        func target() throws(NarratorError) -> RequestID {
            let cursor = try fields.required("request", in: root)
            switch cursor.value {
            case .string(let text): return .string(text)
            case .number(let number) where JSONCursor.exactInteger(number).map({ abs($0) <= maxNumericID }) == true:
                return .number(Int(number))
            default: throw cursor.fail("expected the id of a request of this connection")
            }
        }
        switch op {
        case "play", "cues":
            try allow(["lesson", "chain", "repeat", "activity", "state", "seed", "locale"])
            let lesson = try fields.required("lesson", in: root).string()
            let locale = try fields["locale"].map { cursor throws(NarratorError) in
                let tag = try cursor.string()
                if let problem = Lesson.localeTagProblem(tag) { throw cursor.fail(problem) }
                return tag
            }
            let seed = try fields["seed"].map { cursor throws(NarratorError) in UInt64(try cursor.integer(in: 0...Int(Int32.max))) } ?? 0
            let program: Program
            switch (fields["chain"], fields["activity"]) {
            case (let chain?, nil):
                if fields["state"] != nil { throw NarratorError(file: "request", place: "state", "only for an activity") }
                program = .chain(try chain.string(), repeats: try fields["repeat"]?.integer(in: 1...1000) ?? 1)
            case (nil, let activity?):
                if fields["repeat"] != nil { throw NarratorError(file: "request", place: "repeat", "only for a chain") }
                program = .activity(try activity.string(), taps: nil, state: try fields["state"]?.string())
            case (.some, .some):
                throw NarratorError(file: "request", place: "activity", "give a chain or an activity, not both")
            case (nil, nil):
                throw NarratorError(file: "request", place: "chain", "missing key (give a chain or an activity)")
            }
            return op == "play"
                ? .play(lesson: lesson, program: program, seed: seed, locale: locale)
                : .cues(lesson: lesson, program: program, seed: seed, locale: locale)
        case "library":
            try allow([])
            return .library
        case "tap":
            try allow(["request", "answer"])
            let answer = try fields.required("answer", in: root).string()
            // An answer is a word or a sound's name: a long one is a mistake, kept nowhere.
            guard answer.utf8.count <= Self.maxAnswerBytes else {
                throw NarratorError(file: "request", place: "answer", "at most \(Self.maxAnswerBytes) bytes, got \(answer.utf8.count)")
            }
            return .tap(target: try target(), answer: answer)
        case "replay", "close":
            try allow(["request"])
            return .tap(target: try target(), answer: op == "replay" ? Tap.replay : Tap.close)
        case "stop":
            try allow(["request"])
            return .stop(target: try target())
        case "subscribe":
            try allow(["playback"])
            return .subscribe(playback: try fields.required("playback", in: root).string())
        case "pause":
            try allow(["request"])
            return .control(target: try target(), .pause)
        case "resume":
            try allow(["request", "from"])
            let point: Playback.ResumePoint
            switch try fields["from"]?.string() ?? "paused" {
            case "paused": point = .pausedFrame
            case "word": point = .wordStart
            case "sentence": point = .sentenceStart
            default: throw NarratorError(file: "request", place: "from", "expected \"paused\", \"word\" or \"sentence\"")
            }
            return .control(target: try target(), .resume(point))
        case "seek":
            try allow(["request", "frame", "clip", "word", "sentence"])
            let position: Playback.Position
            switch (fields["frame"], fields["clip"], fields["word"], fields["sentence"]) {
            case (let frame?, nil, nil, nil): position = .frame(try frame.integer(in: 0...Int(Int32.max)))
            case (nil, let clip?, nil, nil): position = .clip(try clip.string())
            case (nil, let clip?, let word?, nil): position = .word(clip: try clip.string(), index: try word.integer(in: 0...100_000))
            case (nil, let clip?, nil, let sentence?): position = .sentence(clip: try clip.string(), index: try sentence.integer(in: 0...100_000))
            default: throw NarratorError(file: "request", place: "frame", "give a frame, a clip, or a clip and a word or a sentence")
            }
            return .control(target: try target(), .seek(position))
        case "say":
            try allow(["request", "clip", "word", "then"])
            let then: Playback.AfterWord
            switch try fields["then"]?.string() ?? "pause" {
            case "pause": then = .pauseWhereItWas
            case "resume": then = .resumeWhereItWas
            case "stay": then = .pauseAtEnd
            default: throw NarratorError(file: "request", place: "then", "expected \"pause\", \"resume\" or \"stay\"")
            }
            return .control(
                target: try target(),
                .say(clip: try fields.required("clip", in: root).string(), word: try fields.required("word", in: root).integer(in: 0...100_000), then: then))
        case "speed":
            try allow(["request", "speed"])
            let cursor = try fields.required("speed", in: root)
            guard case .number(let speed) = cursor.value, speed >= 0.5, speed <= 2 else {
                throw cursor.fail("expected a speed from 0.5 to 2 (1: as recorded)")
            }
            return .control(target: try target(), .speed(speed))
        case "volume":
            try allow(["bus", "gain", "muted"])
            let busCursor = try fields.required("bus", in: root)
            guard let bus = MixGains.Target(rawValue: try busCursor.string()) else {
                throw busCursor.fail("expected \"voice\", \"sfx\", \"music\" or \"master\"")
            }
            let gain = try fields["gain"].map { cursor throws(NarratorError) -> Float in
                guard case .number(let value) = cursor.value, value >= 0, value <= Double(MixGains.maximum) else {
                    throw cursor.fail("expected a gain from 0 to \(Int(MixGains.maximum)) (a factor: 1 leaves the level alone)")
                }
                return Float(value)
            }
            let muted = try fields["muted"].map { cursor throws(NarratorError) -> Bool in
                guard case .bool(let value) = cursor.value else { throw cursor.fail("expected true or false") }
                return value
            }
            if gain == nil && muted == nil { throw NarratorError(file: "request", place: "gain", "give a gain, muted, or both") }
            return .volume(target: bus, gain: gain, muted: muted)
        default:
            throw opCursor.fail("unknown op '\(op)' (expected one of: \(operations.joined(separator: ", ")))")
        }
    }
}

/// A request's id as the client wrote it: events carry it back unchanged.
enum RequestID: Hashable, Sendable, CustomStringConvertible {
    case string(String)
    case number(Int)

    var json: String {
        switch self {
        case .number(let number): "\(number)"
        case .string(let text): EventEncoder.quoted(text)
        }
    }

    var description: String {
        switch self {
        case .number(let number): "\(number)"
        case .string(let text): text
        }
    }
}

/// An event line's members after the request id, as the daemon sends it: every line is
/// `{"id":…,` (spliced in per recipient: a playback's events go to its owner and to each
/// subscriber, once encoded) then the body. The members are `EventEncoder`'s, the one encoder
/// of events (docs/events.md); the daemon's envelope is `id`, and `playback` on a playback's
/// events.
struct EventLine: Sendable {
    /// The members after `"id":…,`, with the closing brace.
    let body: String

    /// An event that is not a cue: `finished`, `stopped` or `error`.
    init(_ kind: EventEncoder.Kind, frame: Int?, heard: Int64?, fields: [EventEncoder.Member] = []) {
        var out: [UInt8] = []
        EventEncoder.append(kind, frame: frame, heard: heard, fields, to: &out)
        body = Self.body(out)
    }

    /// A playback's event, with the playback's name; `message` and `reason` as in
    /// `PlaybackEvent.appendJSON`.
    init(_ event: PlaybackEvent, playback: String, message: String? = nil, reason: String? = nil) {
        var out: [UInt8] = []
        event.appendJSON([EventEncoder.Member("playback", .string(playback))], message: message, reason: reason, to: &out)
        body = Self.body(out)
    }

    /// A cue of a listing (`cues`): neither heard nor delivered.
    init(listed cue: Cue) {
        var out: [UInt8] = []
        EventEncoder.appendCue(cue, [EventEncoder.Member("heard", .null), EventEncoder.Member("delivered", .null)], to: &out)
        body = Self.body(out)
    }

    /// A body as encoded elsewhere (a loader child's line).
    init(body: String) { self.body = body }

    /// An object's bytes without the opening brace.
    private static func body(_ object: [UInt8]) -> String {
        String(decoding: object.dropFirst(), as: UTF8.self)
    }

    static func error(_ message: String, fields: [EventEncoder.Member] = []) -> EventLine {
        EventLine(.error, frame: nil, heard: nil, fields: fields + [EventEncoder.Member("message", .string(message))])
    }

    /// The start of every line for request `id` (null when the request had none readable),
    /// which `body` follows.
    static func head(for id: RequestID?) -> String {
        "{\"id\":" + (id?.json ?? "null") + ","
    }
}
