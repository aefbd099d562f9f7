import Foundation
import NarratorTestSupport
import Testing

/// An activity's music bed (issue 30.1): one voice on the music bus from the activity's first
/// frame through its waits to its end, looped sample-exactly, ducked under the voice, faded
/// out after the end. The ground truth is the fixture's own samples (`MusicBedFixture`, written
/// sample by sample), tiled over the loop region here.
@Suite("Music bed")
struct MusicBedTests {
    static func render(_ fixture: MusicBedFixture, _ arguments: [String]) throws -> [Int16] {
        let out = fixture.dir.file("out-\(arguments.joined().hashValue).wav")
        let result = try run(Repo.narrator, ["render", fixture.path, "--output", out] + arguments)
        try #require(result.status == 0, "\(result.stderr)")
        let wav = try WAVFile(path: out)
        try #require(wav.channels == 1 && wav.sampleRate == 48000)
        return wav.int16Samples
    }

    static func simulate(_ fixture: MusicBedFixture, _ arguments: [String]) throws -> [Simulated.Event] {
        let result = try run(Repo.narrator, ["simulate", fixture.path] + arguments)
        try #require(result.status == 0, "\(result.stderr)")
        return try result.stdout.split(separator: "\n").map { line in
            Simulated.Event(fields: try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]))
        }
    }

    /// The noise bed under activity `a`, closed at 5 s: before the voice and from where the
    /// ducking has released (0.3 s after it) to the close, every frame is the bed's, its loop
    /// tiled (wraps at 2.5 s and 4.5 s); under the voice, voice + bed × −12 dB; after the
    /// close, the bed fading out over 0.25 s; then the render ends.
    @Test func theBedPlaysThroughTheWaitLoopedToTheFrame() throws {
        let fixture = MusicBedFixture()
        defer { fixture.dir.remove() }
        Self.expectNoiseBed(try Self.render(fixture, ["--activity", "a", "--taps", "5:close"]), fixture, end: 240_000)
    }

    /// The lesson's bed (the same noise bed, `"music"` at the top) under chain `pause` played
    /// on its own: 5 s, its voice at 1 s, as activity `a` closed at 5 s. The same frames: the
    /// bed tiled from frame 0, ducked under the voice, faded out over 0.25 s after the chain's
    /// end; with `--repeat 2` it plays on across the second pass (no restart) to its end.
    @Test func theLessonsBedPlaysUnderAChainPlayedAlone() throws {
        let fixture = MusicBedFixture(lessonMusic: MusicBedFixture.noiseBed)
        defer { fixture.dir.remove() }
        Self.expectNoiseBed(try Self.render(fixture, ["--chain", "pause"]), fixture, end: 240_000)
        let twice = try Self.render(fixture, ["--chain", "pause", "--repeat", "2"])
        #expect(twice.count == 480_000 + 12_000)
        // The second pass's voice at 6 s; from its release to the end, the bed tiled on.
        let wrong = (331_200..<480_000).first { twice[$0] != MusicBedFixture.looped(fixture.noise, at: $0) }
        #expect(wrong == nil, "second pass: frame \(wrong ?? -1) is not the bed's")
    }

    /// `out` is the noise bed from frame 0 under the fixture's voice at 1 s, until `end`, then
    /// fading out over 0.25 s (ground truth: the fixture's samples, tiled over the loop).
    static func expectNoiseBed(_ out: [Int16], _ fixture: MusicBedFixture, end close: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        let fade = 12_000
        #expect(out.count == close + fade, "the render lasts until the fade-out's end", sourceLocation: sourceLocation)
        guard out.count == close + fade else { return }
        func expectBed(_ range: Range<Int>, _ what: String) {
            let wrong = range.first { out[$0] != MusicBedFixture.looped(fixture.noise, at: $0) }
            #expect(
                wrong == nil,
                "\(what): frame \(wrong ?? -1) is \(wrong.map { out[$0] } ?? 0), the bed's \(wrong.map { MusicBedFixture.looped(fixture.noise, at: $0) } ?? 0)",
                sourceLocation: sourceLocation)
        }
        let voice = MusicBedFixture.voiceAt
        expectBed(0..<voice.lowerBound, "before the voice")
        let released = voice.upperBound + 14_400
        expectBed(released..<close, "through the wait, across two loops")
        // The loop points themselves: the frame after the region's end is its start.
        for wrap in [120_000, 216_000] {
            #expect(out[wrap - 1] == fixture.noise[119_999] && out[wrap] == fixture.noise[24_000], "wrap at \(wrap)", sourceLocation: sourceLocation)
        }
        // Ducked: after the 50 ms attack, the voice over the bed at −12 dB (within rounding).
        let gain: Double = pow(10, -12.0 / 20)
        let ducked = (voice.lowerBound + 2400)..<voice.upperBound
        var worst = 0.0
        for frame in ducked {
            let want: Double = Double(fixture.voice[frame - voice.lowerBound]) + Double(fixture.noise[frame]) * gain
            worst = max(worst, abs(Double(out[frame]) - want))
        }
        #expect(worst <= 1.0, "under the voice: \(worst) from voice + ducked bed", sourceLocation: sourceLocation)
        // Between, the music climbs back: lower than the bed right after the voice.
        let after = voice.upperBound..<(voice.upperBound + 4800)
        let level: Double = after.map { abs(Double(out[$0])) }.reduce(0, +)
        let bedLevel: Double = after.map { abs(Double(MusicBedFixture.looped(fixture.noise, at: $0))) }.reduce(0, +)
        #expect(level < bedLevel * 0.6, "still ducked after the voice", sourceLocation: sourceLocation)
        // The fade-out: frame k of it at (fade − k) / fade.
        var fadeWorst = 0.0
        for k in 0..<fade {
            let bed = Double(MusicBedFixture.looped(fixture.noise, at: close + k))
            let want: Double = bed * Double(fade - k) / Double(fade)
            fadeWorst = max(fadeWorst, abs(Double(out[close + k]) - want))
        }
        #expect(fadeWorst <= 1.0, "fade-out: \(fadeWorst) from the linear fade", sourceLocation: sourceLocation)
    }

    /// A chain played alone over the lesson's bed: `musicStart` first, at frame 0, a
    /// `musicLoop` at each wrap, `chainEnd` at the chain's end, then `musicStop` (faded) last,
    /// 0.25 s later. Played (on the virtual output, paused half a second), the line that ends
    /// playback is the bed's stop, after the chain's end.
    @Test func aChainsTraceSaysWhenTheLessonsBedStartsLoopsAndStops() throws {
        let fixture = MusicBedFixture(lessonMusic: MusicBedFixture.noiseBed)
        defer { fixture.dir.remove() }
        let trace = try Self.simulate(fixture, ["--chain", "pause"])
        #expect(trace.first?.type == "musicStart" && trace.first?.frame == 0 && trace.first?["clip"] == "noise")
        let music = trace.filter { $0.type.hasPrefix("music") }.map { "\($0.type)@\($0.frame):\($0["loop"] ?? $0["reason"] ?? "")" }
        #expect(music == ["musicStart@0:", "musicLoop@120000:1", "musicLoop@216000:2", "musicStop@252000:faded"])
        #expect(trace.suffix(2).map { "\($0.type)@\($0.frame)" } == ["chainEnd@240000", "musicStop@252000"])
        #expect(zip(trace, trace.dropFirst()).allSatisfy { $0.frame <= $1.frame }, "in frame order")
        let played = try Self.simulate(fixture, ["--chain", "pause", "--controls", "1:pause,1.5:resume"])
        let finals = played.filter { $0.fields["final"] as? Bool == true }.map(\.type)
        #expect(finals == ["musicStop"] && played.last?.type == "musicStop")
        #expect(played.contains { $0.type == "paused" } && played.contains { $0.type == "resumed" })
    }

    /// The daemon prepares a chain with the lesson's bed under it: `cues` of chain `item`
    /// gives `musicStart` first, the chain's cues and `chainEnd` at 1 s, then `musicStop`
    /// (faded) 0.25 s later, then `finished`, each line fitting the daemon's event schema.
    /// (Its `play` of the chain, heard on a sound server: DaemonLiveTests.)
    @Test(.requires(PulseTestServer.findExecutable("socat") != nil, "needs socat (Makefile APT_PACKAGES)"))
    func theDaemonLaysTheLessonsBedUnderAChain() throws {
        let fixture = MusicBedFixture(lessonMusic: MusicBedFixture.noiseBed)
        defer { fixture.dir.remove() }
        let daemon = try Daemon(dir: fixture.dir, library: fixture.dir.path, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let raw = try Clients.socat(daemon, input: #"{"id": 1, "op": "cues", "lesson": "bed.json", "chain": "item"}"# + "\n")
        let events = try ReceivedEvent.parse(raw.stdout).map { "\($0.type)@\($0.frame ?? -1)" }
        #expect(
            events == ["musicStart@0", "clipStart@0", "clipEnd@48000", "chainEnd@48000", "musicStop@60000", "finished@60000"],
            "\(raw.stdout) \(raw.stderr)")
        #expect(try EventSchema.problems(raw.stdout, as: "daemonLine") == nil)
    }

    /// The lesson's bed plays under an activity with no bed of its own (`c`); an activity's own
    /// bed wins (`a` plays only its noise, `b` only its tone).
    @Test func anActivitysOwnBedWinsOverTheLessons() throws {
        let fixture = MusicBedFixture(lessonMusic: #"{"clip": "tone", "loop": {"start": 0.5, "end": 2.5}, "fadeOut": 0.25}"#)
        defer { fixture.dir.remove() }
        func beds(_ activity: String) throws -> [String] {
            try Self.simulate(fixture, ["--activity", activity, "--taps", "5:close"]).filter { $0.type == "musicStart" }.map { $0["clip"] ?? "" }
        }
        #expect(try beds("c") == ["tone"])
        #expect(try beds("a") == ["noise"])
        #expect(try beds("b") == ["tone"])
        // `c` over the lesson's tone bed: the tone tiled before the voice, faded after the close.
        let out = try Self.render(fixture, ["--activity", "c", "--taps", "5:close"])
        #expect(out.count == 240_000 + 12_000)
        let wrong = (0..<48_000).first { out[$0] != MusicBedFixture.looped(fixture.tone, at: $0) }
        let wrongLater = (86_400..<240_000).first { out[$0] != MusicBedFixture.looped(fixture.tone, at: $0) }
        #expect(wrong == nil && wrongLater == nil, "frame \(wrong ?? wrongLater ?? -1) is not the tone bed's")
    }

    /// A chain's own `{"music"}` item and the lesson's bed both play: the item from the chain's
    /// start, cut at its end (1 s), as documented; the bed from frame 0, on past the chain's
    /// end and fading out. Both are music (no voice ducks them): their sum, to the sample.
    @Test func aChainsMusicItemPlaysOverTheLessonsBed() throws {
        let fixture = MusicBedFixture(lessonMusic: MusicBedFixture.noiseBed)
        defer { fixture.dir.remove() }
        let out = try Self.render(fixture, ["--chain", "item"])
        #expect(out.count == 48_000 + 12_000)
        let sum = (0..<48_000).first { Int(out[$0]) != Int(fixture.tone[$0]) + Int(fixture.noise[$0]) }
        #expect(sum == nil, "frame \(sum ?? -1): not tone + bed")
        var fadeWorst = 0.0
        for k in 0..<12_000 {
            let want = Double(fixture.noise[48_000 + k]) * Double(12_000 - k) / 12_000
            fadeWorst = max(fadeWorst, abs(Double(out[48_000 + k]) - want))
        }
        #expect(fadeWorst <= 1.0, "after the chain's end only the bed, fading out: \(fadeWorst)")
        let trace = try Self.simulate(fixture, ["--chain", "item"])
        let order = trace.filter { $0.type != "musicLoop" }.map { "\($0.type)@\($0.frame)" }
        #expect(order == ["musicStart@0", "clipStart@0", "clipEnd@48000", "chainEnd@48000", "musicStop@60000"])
    }

    /// A loop region continuous at its seam stays click-free: across each wrap of the tone bed
    /// the largest step between two frames is no larger than the tone's own largest step. (The
    /// check itself finds a seam one frame off: a loop tiled at 2.5 s + 7 frames steps further.)
    @Test func aContinuousLoopRegionLoopsWithoutAClick() throws {
        let fixture = MusicBedFixture()
        defer { fixture.dir.remove() }
        let out = try Self.render(fixture, ["--activity", "b", "--until", "7"])
        let tone = fixture.tone.map(Int.init)
        let ownStep = zip(tone, tone.dropFirst()).map { abs($0 - $1) }.max()!
        for wrap in [120_000, 216_000, 312_000] {
            let steps = ((wrap - 100)..<(wrap + 100)).map { abs(Int(out[$0]) - Int(out[$0 - 1])) }
            #expect(steps.max()! <= ownStep, "seam at \(wrap): step \(steps.max()!), the tone's own \(ownStep)")
            // The tone itself on both sides, tiled to the frame (not silence, which has no step).
            let tiled = ((wrap - 100)..<(wrap + 100)).allSatisfy { out[$0] == MusicBedFixture.looped(fixture.tone, at: $0) }
            #expect(tiled && steps.max()! > ownStep / 2, "seam at \(wrap): not the tone's frames")
        }
        let offByOne = abs(tone[24_000 + 7] - tone[119_999])
        #expect(offByOne > ownStep, "a misplaced seam would show (\(offByOne) vs \(ownStep))")
        // `--until` stops the run at 7 s: the bed fades out over the default 0.5 s after it.
        #expect(out.count == 336_000 + 24_000)
    }

    /// The trace: `musicStart` right after `activityStart`, a `musicLoop` at each wrap,
    /// `musicStop` (faded) last, at the fade-out's end, after `activityEnd`.
    @Test func theTraceSaysWhenTheBedStartsLoopsAndStops() throws {
        let fixture = MusicBedFixture()
        defer { fixture.dir.remove() }
        let trace = try Self.simulate(fixture, ["--activity", "a", "--taps", "5:close"])
        #expect(trace.prefix(2).map(\.type) == ["activityStart", "musicStart"])
        #expect(trace[1].frame == 0 && trace[1]["clip"] == "noise")
        let music = trace.filter { $0.type.hasPrefix("music") }.map { "\($0.type)@\($0.frame):\($0["loop"] ?? $0["reason"] ?? "")" }
        #expect(music == ["musicStart@0:", "musicLoop@120000:1", "musicLoop@216000:2", "musicStop@252000:faded"])
        #expect(trace.last?.type == "musicStop")
        #expect(trace.dropLast().last?.type == "activityEnd" && trace.dropLast().last?.frame == 240_000)
        #expect(zip(trace, trace.dropFirst()).allSatisfy { $0.frame <= $1.frame }, "in frame order")
        // Played (on the virtual output, paused half a second): the line that ends playback is
        // the bed's stop, after the activity's end.
        let played = try Self.simulate(fixture, ["--activity", "a", "--taps", "5:close", "--controls", "1:pause,1.5:resume"])
        let finals = played.filter { $0.fields["final"] as? Bool == true }.map(\.type)
        #expect(finals == ["musicStop"] && played.last?.type == "musicStop")
    }

    /// A bed that does not loop stops with its clip (`clip ended`) and the activity goes on;
    /// the render is the clip then silence.
    @Test func aBedThatDoesNotLoopEndsWithItsClip() throws {
        let fixture = MusicBedFixture(music: #"{"clip": "noise", "loop": false}"#)
        defer { fixture.dir.remove() }
        let trace = try Self.simulate(fixture, ["--activity", "a", "--taps", "5:close"])
        let music = trace.filter { $0.type.hasPrefix("music") }.map { "\($0.type)@\($0.frame):\($0["reason"] ?? "")" }
        #expect(music == ["musicStart@0:", "musicStop@144000:clip ended"])
        #expect(trace.last?.type == "activityEnd")
        let out = try Self.render(fixture, ["--activity", "a", "--taps", "5:close"])
        #expect(out.count == 240_000)
        let same = out[86_400..<144_000].elementsEqual(fixture.noise[86_400..<144_000])
        let silent = out[144_000...].allSatisfy { $0 == 0 }
        #expect(same, "the clip, once")
        #expect(silent, "then silence")
    }

    /// A bad `music` is one line naming the lesson and the key, exit status 1.
    @Test(arguments: [
        (#""nope""#, "activities.a.music.clip", "unknown clip 'nope'"),
        (#"{"clip": "noise", "loop": {"start": 0.5, "end": 4}}"#, "activities.a.music.loop.end", "past the end of clip 'noise'"),
        (#"{"clip": "noise", "loop": {"start": 2, "end": 1}}"#, "activities.a.music.loop.end", "the loop ends after it starts"),
        (#"{"clip": "noise", "loop": {"start": 1, "end": 1.5}}"#, "activities.a.music.loop.end", "a loop lasts at least 1 s"),
        (#"{"clip": "noise", "loop": {"start": 1e300, "end": 2}}"#, "activities.a.music.loop.start", "expected seconds between 0 and 86400"),
        (#"{"clip": "noise", "fadeOut": -1}"#, "activities.a.music.fadeOut", "a fade lasts between 0 and 10 seconds"),
        (#"{"clip": "noise", "fadeIn": 1e308}"#, "activities.a.music.fadeIn", "a fade lasts between 0 and 10 seconds"),
        (#"{"clip": "noise", "loop": "yes"}"#, "activities.a.music.loop", "expected true, false or"),
        (#"{"clip": "noise", "lop": true}"#, "activities.a.music.lop", "unknown key"),
        (#"{"loop": true}"#, "activities.a.music", "clip"),
    ])
    func aBadMusicSpecNamesItsKey(music: String, place: String, message: String) throws {
        let fixture = MusicBedFixture(music: music)
        defer { fixture.dir.remove() }
        for command in ["simulate", "render"] {
            var arguments = [command, fixture.path, "--activity", "a"]
            if command == "render" { arguments += ["--output", fixture.dir.file("out.wav")] }
            let result = try run(Repo.narrator, arguments)
            #expect(result.status == 1, "\(command): \(result.stderr)")
            #expect(result.stderr.hasPrefix("narrator: \(fixture.path): \(place)"), "\(command): \(result.stderr)")
            #expect(result.stderr.contains(message) && result.stderr.filter { $0 == "\n" }.count == 1, "\(command): \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: fixture.dir.file("out.wav")))
        }
    }

    /// A bad lesson-level `music` is one line naming the lesson and the key (`music…`), exit
    /// status 1, for a chain played alone and for an activity without a bed of its own; one
    /// with its own bed does not play the lesson's and is not stopped by it.
    @Test(arguments: [
        (#""nope""#, "music.clip", "unknown clip 'nope'"),
        (#"{"clip": "noise", "loop": {"start": 0.5, "end": 4}}"#, "music.loop.end", "past the end of clip 'noise'"),
        (#""voice""#, "music", "clip 'voice' lasts 0.5 s: a loop lasts at least 1 s"),
        (#"{"clip": "noise", "loop": {"start": 2, "end": 2}}"#, "music.loop.end", "the loop ends after it starts"),
        (#"{"clip": "noise", "lop": true}"#, "music.lop", "unknown key"),
    ])
    func aBadLessonMusicSpecNamesItsKey(music: String, place: String, message: String) throws {
        let fixture = MusicBedFixture(lessonMusic: music)
        defer { fixture.dir.remove() }
        let parses = !message.contains("after it starts") && !message.contains("unknown key")
        for program in [["--chain", "say"], ["--activity", "c"]] {
            for command in ["simulate", "render"] {
                var arguments = [command, fixture.path] + program
                if command == "render" { arguments += ["--output", fixture.dir.file("out.wav")] }
                let result = try run(Repo.narrator, arguments)
                #expect(result.status == 1, "\(arguments): \(result.stderr)")
                #expect(result.stderr.hasPrefix("narrator: \(fixture.path): \(place): "), "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains(message) && result.stderr.filter { $0 == "\n" }.count == 1, "\(arguments): \(result.stderr)")
                #expect(!FileManager.default.fileExists(atPath: fixture.dir.file("out.wav")))
            }
        }
        if parses {
            let own = try run(Repo.narrator, ["simulate", fixture.path, "--activity", "a"])
            #expect(own.status == 0, "activity a has its own bed: \(own.stderr)")
        }
    }

    /// A bed plays under at most a day of a chain (at most 86 400 `musicLoop`s, as under an
    /// activity): a session of 25 hours over a bed is one line naming `music`, exit status 1,
    /// with no file left; the same session a day long plays: loops at 2 s, 3 s, … to the
    /// day's last second (86 398 of them).
    @Test func aBedUnderAChainLastsAtMostADay() throws {
        let fixture = MusicBedFixture()
        defer { fixture.dir.remove() }
        let lesson = fixture.dir.write(
            "long.json",
            #"{"sampleRate": 8000, "music": {"clip": "noise", "loop": {"start": 1, "end": 2}, "fadeOut": 0}, "clips": {"noise": {"file": "noise.wav"}}, "chains": {"hour": [{"silence": 3600}]}}"#)
        let out = fixture.dir.file("long.wav")
        let refused = try run(Repo.narrator, ["render", lesson, "--chain", "hour", "--repeat", "25", "--output", out])
        #expect(refused.status == 1 && refused.stderr.filter { $0 == "\n" }.count == 1, "\(refused.stderr)")
        #expect(refused.stderr.hasPrefix("narrator: \(lesson): music: a music bed plays under at most a day (86400 s) of a chain; this session lasts 90000 s"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        let day = try run(Repo.narrator, ["cues", lesson, "--chain", "hour", "--repeat", "24"])
        #expect(day.status == 0, "\(day.stderr)")
        let loops = day.stdout.split(separator: "\n").filter { $0.contains(#""type":"musicLoop""#) }
        #expect(loops.count == 86_398 && loops.last?.contains(#""frame":691192000"#) == true, "\(loops.last ?? "")")
    }

    /// `narrator validate` checks every bed's loop against its clip as it plays (simulate,
    /// render, play and the daemon do), an activity's and the lesson's: one line naming the
    /// lesson file and the key, exit status 1. Past the clip's end (3 s), a start not before
    /// the end, shorter than 1 s, a whole-clip loop of a 0.5 s clip; a good loop passes.
    @Test(arguments: [
        (#"{"clip": "noise", "loop": {"start": 0.5, "end": 4}}"#, "loop.end", "the loop ends at 4 s, past the end of clip 'noise' (3 s)"),
        (#"{"clip": "noise", "loop": {"start": 2, "end": 1}}"#, "loop.end", "the loop ends after it starts (start 2 s, end 1 s)"),
        (#"{"clip": "noise", "loop": {"start": 2, "end": 2}}"#, "loop.end", "the loop ends after it starts (start 2 s, end 2 s)"),
        (#"{"clip": "noise", "loop": {"start": 1, "end": 1.5}}"#, "loop.end", "a loop lasts at least 1 s, got 0.5 s"),
        (#""voice""#, "", "clip 'voice' lasts 0.5 s: a loop lasts at least 1 s (loop a longer clip, or \"loop\": false)"),
        (#"{"clip": "noise", "loop": {"start": 0.5, "end": 3}}"#, "", ""),
    ])
    func validateChecksEveryBedsLoopAgainstItsClip(music: String, key: String, message: String) throws {
        for lessonLevel in [false, true] {
            let fixture = lessonLevel ? MusicBedFixture(lessonMusic: music) : MusicBedFixture(music: music)
            defer { fixture.dir.remove() }
            let place = (lessonLevel ? "music" : "activities.a.music") + (key.isEmpty ? "" : ".\(key)")
            let result = try run(Repo.narrator, ["validate", fixture.path], cwd: fixture.dir.path)
            let errors = result.stdout.split(separator: "\n").filter { $0.hasPrefix("error: ") }
            if message.isEmpty {
                #expect(result.status == 0 && errors.isEmpty, "\(result.stdout)\(result.stderr)")
                continue
            }
            #expect(result.status == 1, "\(result.stdout)\(result.stderr)")
            #expect(errors == ["error: bed.json: \(place): \(message)"], "\(result.stdout)")
        }
    }

    /// The hat shop's music plays through the whole activity: from frame 0, looped over its
    /// 1–5 s (whole cycles of its tones and tremolo), through the welcome, faded out after it;
    /// its welcome chains no longer start the music themselves.
    @Test func theHatShopMusicPlaysThroughTheWholeActivity() throws {
        let result = try run(Repo.narrator, ["simulate", Repo.path("Timings/lessons/homer-hat-shop.json"), "--activity", "hat-shop", "--state", "first-use"])
        try #require(result.status == 0, "\(result.stderr)")
        let trace = try result.stdout.split(separator: "\n").map { line in
            Simulated.Event(fields: try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]))
        }
        let end = try #require(trace.first { $0.type == "activityEnd" }).frame
        let music = trace.filter { $0.type.hasPrefix("music") }.map { "\($0.type)@\($0.frame)" }
        #expect(music == ["musicStart@0", "musicLoop@240000", "musicStop@\(end + 24_000)"])
        #expect(!trace.contains { $0.type == "clipStart" && $0["clip"] == "music" }, "the chains do not start it")
        // `validate` counts the bed as playing its clip.
        let checked = try run(Repo.narrator, ["validate", Repo.path("Timings/lessons/homer-hat-shop.json")])
        #expect(checked.status == 0 && !checked.stdout.contains("clips.music: no chain plays this clip"), "\(checked.stdout)")
    }
}
