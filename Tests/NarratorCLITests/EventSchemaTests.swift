import Foundation
import NarratorCore
@testable import NarratorLive
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// Real output, without a sound card, against docs/events.schema.json (checked by
/// python3-jsonschema, not by the encoder): cue sheets, `simulate` traces, the daemon's replies
/// over its Unix socket, the loader child's lines, `narrator play`'s line on a device without a
/// clock, and a playback's events of every kind as `PlaybackEvent.jsonLine` writes them. The
/// live suites check what `play` writes while it plays (LivePlaybackTests).
@Suite("Event schema", .requires(EventSchema.available, "needs python3-jsonschema"))
struct EventSchemaTests {
    static let lessons = Repo.path("Timings/lessons")

    static func expectValid(_ text: String, as definition: String, document: Bool = false, _ what: String) throws {
        #expect(!text.isEmpty, "\(what): no output")
        let problems = try EventSchema.problems(text, as: definition, document: document)
        #expect(problems == nil, "\(what):\n\(problems ?? "")")
    }

    /// The `type`s in JSON lines.
    static func types(_ text: String) -> Set<String> {
        Set(text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["type"] as? String
        })
    }

    static let programs: [[String]] = [
        ["homer-sight-words.json", "--activity", "sight-words", "--seed", "3", "--taps", "5:cat,9:see,20:hat"],
        ["homer-sight-words.json", "--activity", "sight-words", "--until", "30"],
        ["homer-hat-shop.json", "--activity", "hat-shop", "--state", "first-use", "--taps", "1:cat,1.1:hats,1.2:cat"],
        ["homer-discover.json", "--activity", "matching", "--taps", "3:photo-2,5:photo-1,9:photo-2,13:photo-3,17:photo-4"],
        // Taps ignored ("taps": "ignore", the default): during the prompt, wrong-answer feedback
        // and the right answer's feedback, each with its reason.
        ["homer-discover.json", "--activity", "matching", "--taps", "0.5:photo-1,3:photo-2,3.2:photo-1,5:photo-1,5.2:photo-2,9:photo-2"],
        ["picture-dictionary.json", "--activity", "word-popup", "--taps", "2:replay,3:close"],
        ["ibcs.json", "--seed", "1", "--requests", "0:text:letter-a,0.6:text:letter-b,1.0:message:info,1.2:text:letter-c"],
        ["sample.json", "--chain", "correct", "--seed", "7", "--repeat", "2"],
    ]

    @Test func cueSheetsAndTracesMatchTheSchema() throws {
        var seen: Set<String> = []
        for program in Self.programs {
            let lesson = Self.lessons + "/" + program[0]
            let sheet = try run(Repo.narrator, ["cues", lesson] + program.dropFirst())
            #expect(sheet.status == 0, "\(sheet.stderr)")
            try Self.expectValid(sheet.stdout, as: "cueSheet", document: true, "cues \(program)")
            let trace = try run(Repo.narrator, ["simulate", lesson] + program.dropFirst())
            #expect(trace.status == 0, "\(trace.stderr)")
            try Self.expectValid(trace.stdout, as: "cueLine", "simulate \(program)")
            seen.formUnion(Self.types(trace.stdout))
        }
        // The traces hold every kind a chain, an activity and announcements write.
        let kinds: Set<String> = [
            "clipStart", "clipEnd", "sentence", "word", "pulse", "chainEnd", "activityStart", "variant", "stepStart", "chainStart", "tap", "feedback",
            "feedbackEnd", "sound", "soundCut", "idlePrompt", "advance", "close", "activityEnd", "stop", "canceled", "request", "begin", "end",
            "musicStart", "musicLoop", "musicStop",
        ]
        #expect(kinds.subtracting(seen).isEmpty, "not produced: \(kinds.subtracting(seen))")
        // A cue's kind is never the name of one of the other events: one switch on `type`.
        #expect(seen.isDisjoint(with: EventEncoder.Kind.allCases.map(\.rawValue)))

        let dir = TempDir()
        defer { dir.remove() }
        let rendered = try run(
            Repo.narrator, ["render", Self.lessons + "/sample.json", "--chain", "correct", "--output", dir.file("o.wav"), "--cues", dir.file("o.json")])
        #expect(rendered.status == 0, "\(rendered.stderr)")
        try Self.expectValid(try String(contentsOfFile: dir.file("o.json"), encoding: .utf8), as: "cueSheet", document: true, "render --cues")
    }

    /// Every kind of reply the daemon gives without playing: cues listings (a chain, an
    /// activity), errors (bad JSON, an unknown op, a stop or tap of nothing, a play on a
    /// device without a clock), a subscription stopped, a stop's own answer.
    @Test(.requires(PulseTestServer.findExecutable("socat") != nil, "needs socat"))
    func daemonRepliesMatchTheSchema() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let daemon = try Daemon(dir: dir, library: Self.lessons, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let requests = [
            #"{"id": 1, "op": "cues", "lesson": "sample.json", "chain": "correct", "seed": 7}"#,
            #"{"id": "a", "op": "cues", "lesson": "homer-sight-words.json", "activity": "sight-words"}"#,
            "not json",
            #"{"id": 2, "op": "dance"}"#,
            #"{"id": 3, "op": "stop", "request": 99}"#,
            #"{"id": 4, "op": "tap", "request": 99, "answer": "cat"}"#,
            #"{"id": "s", "op": "subscribe", "playback": "next"}"#,
            #"{"id": 5, "op": "stop", "request": "s"}"#,
            #"{"id": 6, "op": "play", "lesson": "sample.json", "chain": "correct"}"#,
        ]
        let reply = try Clients.socat(daemon, input: requests.joined(separator: "\n") + "\n")
        try Self.expectValid(reply.stdout, as: "daemonLine", "daemon replies")
        let events = try ReceivedEvent.parse(reply.stdout)
        let terminal = Dictionary(events.filter(\.isTerminal).map { ($0.id, $0.type) }, uniquingKeysWith: { a, _ in a })
        #expect(terminal == ["1": "finished", "a": "finished", "null": "error", "2": "error", "3": "error", "4": "error", "s": "stopped", "5": "finished", "6": "error"])
        #expect(events.contains { $0.id == "6" && $0.fields["code"] as? String == "ETIME" }, "\(reply.stdout.suffix(500))")
        #expect(events.filter(\.isCue).count > 20)
    }

    /// The loader child's lines, as the daemon forwards them (after its `{"id":…,`).
    @Test func loaderLinesMatchTheSchema() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for request in [
            #"{"id": 1, "op": "cues", "lesson": "homer-hat-shop.json", "activity": "hat-shop", "state": "first-use"}"#,
            #"{"id": 1, "op": "play", "lesson": "sample.json", "chain": "correct"}"#,
            #"{"id": 1, "op": "cues", "lesson": "sample.json", "chain": "nope"}"#,
        ] {
            let file = dir.write("request.json", request)
            let child = try run("/bin/sh", ["-c", "\"$1\" serve --library \"$2\" --prepare-request - < \"$3\"", "sh", Repo.narrator, Self.lessons, file])
            let lines = child.stdout.split(separator: "\n").map { #"{"id":1,"# + $0 }.joined(separator: "\n")
            try Self.expectValid(lines, as: "daemonLine", "loader for \(request)")
        }
    }

    /// `narrator play` on ALSA's null device: one `error` line, with the CLI's envelope.
    @Test func playLineWithoutASoundCard() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let result = try run(
            Repo.narrator, ["play", Self.lessons + "/sample.json", "--chain", "correct", "--output", "alsa", "--device", "null", "--events", dir.file("e.jsonl")])
        #expect(result.status == 1)
        let lines = try String(contentsOfFile: dir.file("e.jsonl"), encoding: .utf8)
        try Self.expectValid(lines, as: "playLine", "play --device null")
        #expect(Self.types(lines) == ["error"])
    }

    /// A playback's events of every kind, as the Swift API, `narrator play` and the daemon
    /// encode them (the kinds a device without a clock cannot give here: start, underrun …).
    @Test func playbackEventsOfEveryKindMatchTheSchema() throws {
        let output = NegotiatedOutput(device: "hw:0", sampleRate: 48000, channels: 2, format: .s16, periodFrames: 600, bufferFrames: 2400)
        let start = StartInfo(
            output: output, measuredDelayFrames: 2966, realtime: false, startTime: 1_000, firstWriteTime: 2_000, firstFrameHeardTime: 63_000_000)
        let events: [PlaybackEvent] = [
            .start(start),
            .cue(Cue(frame: 48731, kind: .sentence(clip: "p1", index: 0, text: "I \"quoted\"\n it.", endFrame: 103930)), at: 90_000_000, delivered: 90_030_000),
            .cue(Cue(frame: 48731, kind: .word(clip: "p1", index: 0, text: "I \"quoted\"\n", endFrame: 63620)), at: 90_000_000, delivered: 90_040_000),
            .cue(Cue(frame: 0, kind: .clipStart(clip: "gb", pool: "congrats")), at: 63_000_000, delivered: 63_050_000),
            .cue(Cue(frame: 5, kind: .activity(type: .tap, fields: ["answer": .string("see"), "result": .string("correct"), "step": .int(0)])), at: 1, delivered: 2),
            .underrun(count: 2, at: 3),
            .lateSwitch(wanted: 100, switched: 700, at: 4),
            .streamProblem(NarratorError(file: "a.flac", place: "frame 9", "truncated"), at: 5),
            .paused(frame: 70_000, at: 8),
            .seeked(from: 70_000, to: 48731, at: 9),
            .resumed(frame: 48731, at: 10),
            .speedChanged(speed: 0.75, frame: 50_000, at: 11),
            .canceled(frame: 800, at: 6),
            .error(.deviceLost(device: "hw:0", code: "ENODEV", reason: "unplugged"), frame: 900, at: 7),
        ]
        try Self.expectValid(events.map(\.jsonLine).joined(separator: "\n"), as: "event", "PlaybackEvent.jsonLine")
        let play = events.enumerated().map { k, event in
            event.jsonLine([EventEncoder.Member("t", .double(Double(k) / 3))] + (k == 2 ? [EventEncoder.Member("final", .bool(true))] : []))
        }
        try Self.expectValid(play.joined(separator: "\n"), as: "playLine", "with narrator play's envelope")
        let daemon = events.map { event in
            #"{"id":"r1","# + event.jsonLine([EventEncoder.Member("playback", .string("p1"))], reason: "stopped").dropFirst()
        }
        try Self.expectValid(daemon.joined(separator: "\n"), as: "daemonLine", "with the daemon's envelope")
        #expect(Self.types(events.map(\.jsonLine).joined(separator: "\n")) == ["start", "sentence", "word", "clipStart", "tap", "underrun", "lateSwitch", "streamProblem", "paused", "seeked", "resumed", "speedChanged", "stopped", "error"])
    }

    /// The schema refuses what the old encoders wrote and what a misnamed field would be: a
    /// test that validates is a test that can fail.
    @Test func misnamedFieldsAreRefused() throws {
        let good = #"{"clip":"sfx","delivered":3161997920739,"frame":0,"heard":3161997879739,"t":0.129123,"type":"clipStart"}"#
        #expect(try EventSchema.problems(good, as: "playLine") == nil)
        for bad in [
            #"{"clip":"sfx","delivered":3161997920739,"frame":0,"clock":3161997879739,"t":0.129123,"type":"clipStart"}"#,  // 0.x play: clock
            #"{"clip":"sfx","deliverd":3161997920739,"frame":0,"heard":3161997879739,"t":0.129123,"type":"clipStart"}"#,
            #"{"clip":"sfx","delivered":3161997920739,"frame":0,"heard":3161997879739,"type":"clipStart"}"#,  // no t
            #"{"clip":"p1","delivered":1,"endframe":9,"frame":0,"heard":1,"index":0,"t":0,"text":"I","type":"word"}"#,
            #"{"clip":"p1","delivered":1,"frame":0,"heard":1,"index":0,"t":0,"text":"I see.","type":"sentence"}"#,  // no endFrame
            #"{"clip":"p1","delivered":1,"endFrame":9,"frame":0,"heard":1,"index":-1,"t":0,"text":"I see.","type":"sentence"}"#,
            #"{"frame":0,"heard":1,"t":0,"type":"canceled"}"#,  // 0.x terminal canceled
        ] {
            #expect(try EventSchema.problems(bad, as: "playLine") != nil, "\(bad)")
        }
        for bad in [
            #"{"id":1,"event":"end","frame":null,"heard":10648031094850}"#,  // 0.x daemon
            #"{"id":1,"event":"cue","frame":0,"heard":1,"delivered":2,"playback":"p1","clip":"a","type":"clipStart"}"#,
            #"{"id":1,"device":"default","type":"begin","frame":0,"heard":1,"latencyMs":45.792,"playback":"p1","sampleRate":48000}"#,
            #"{"frame":null,"heard":1,"type":"finished"}"#,  // no id
        ] {
            #expect(try EventSchema.problems(bad, as: "daemonLine") != nil, "\(bad)")
        }
        // An ignored tap says why; a tap taken has no reason.
        #expect(try EventSchema.problems(#"{"answer":"see","frame":9,"reason":"narration playing","result":"ignored","type":"tap"}"#, as: "cueLine") == nil)
        for bad in [
            #"{"answer":"see","frame":9,"result":"ignored","type":"tap"}"#,
            #"{"answer":"see","frame":9,"reason":"narration playing","result":"correct","type":"tap"}"#,
            #"{"answer":"see","frame":9,"reason":"busy","result":"ignored","type":"tap"}"#,
        ] {
            #expect(try EventSchema.problems(bad, as: "cueLine") != nil, "\(bad)")
        }
    }
}
