import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// The stretch fixture rendered and played through the private sound server, for the live
/// speed, long-pause and volume suites.
enum LiveStretchRuns {
    static func render(_ dir: TempDir, _ lesson: String, speed: String, name: String) throws -> [Int16] {
        let result = try run(Repo.narrator, ["render", lesson, "--chain", "x", "--speed", speed, "--output", dir.file(name)])
        try #require(result.status == 0, "\(result.stderr)")
        return try WAVFile(path: dir.file(name)).int16Samples
    }

    /// Plays chain `x` through the server; returns the events and the recording.
    static func play(_ dir: TempDir, _ lesson: String, _ extra: [String]) throws -> ([LivePlay.Event], Recording) {
        let server = try PulseTestServer()
        defer { server.stop() }
        let played = try server.runClient(
            Repo.narrator, ["play", lesson, "--chain", "x", "--output", "pulse", "--events", dir.file("events.jsonl")] + extra)
        try #require(played.status == 0, "\(played.stderr)\n\(server.logTail())")
        return (try LivePlay.events(dir.file("events.jsonl")), try server.recording())
    }

    /// What a control 1.6 s after frame 0 is heard (while the tone plays) does: the fixture
    /// played with `control`, its 1× render, the recording's first segment that is that render
    /// (it ends where the control is first heard), how many ms after the request that is, and
    /// the output's period in ms.
    struct Change {
        let events: [LivePlay.Event]
        let recording: Recording
        let plain: [Int16]
        let first: Alignment.Segment
        let departsMs: Double
        let periodMs: Double
    }

    static func change(_ dir: TempDir, control: String, _ extra: [String] = []) throws -> Change {
        let lesson = try StretchFixture.write(in: dir)
        let plain = try render(dir, lesson, speed: "1", name: "plain.wav")
        let (events, recording) = try play(dir, lesson, ["--controls", "1.6:" + control] + extra)
        let start = try #require(events.first { $0.type == "start" })
        let alignment = try #require(recording.locate(plain, channels: 2))
        let first = try #require(alignment.segments.first)
        let departs = Int64(recording.audibleTime(ofFrame: first.recordingEnd)) - (start.heard + 1_600_000_000)
        let periodMs = Double(try #require(start.fields["periodFrames"] as? Int)) / 48
        return Change(events: events, recording: recording, plain: plain, first: first, departsMs: Double(departs) / 1e6, periodMs: periodMs)
    }
}

/// Speed through the private PulseAudio server, measured on its recording: the audio is the
/// offline stretched render sample for sample, each word's cue is heard within 5 ms of where
/// an onset threshold finds its sound in the recording, a 440 Hz tone keeps its pitch, and a
/// change while playing is heard within a period, the rewind margin and the fade.
@Suite("Live speed", .serialized, .awakeCPUs, .requires(PulseTestServer.isAvailable, "needs pulseaudio, pulseaudio-utils, libasound2-plugins and python3"))
struct LiveSpeedTests {
    typealias Event = LivePlay.Event

    /// Every word's cue against the onsets found in the recording (the first onset is the
    /// `start` clip): the errors in ms, signed (positive: the cue came after its sound).
    static func wordErrors(_ events: [Event], _ recording: Recording) throws -> [Double] {
        let onsets = StretchFixture.onsets(recording.samples).dropFirst()
        let words = events.filter { $0.type == "word" }
        try #require(onsets.count == words.count, "onsets \(Array(onsets)), words \(words.count)")
        return zip(words, onsets).map { word, onset in Double(word.heard - Int64(recording.audibleTime(ofFrame: onset))) / 1e6 }
    }

    @Test(arguments: ["0.75", "1.5"])
    func aFixedSpeedIsTheStretchedRenderWithCuesOnTheWords(speed: String) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try StretchFixture.write(in: dir)
        let reference = try LiveStretchRuns.render(dir, lesson, speed: speed, name: "ref.wav")
        let (events, recording) = try LiveStretchRuns.play(dir, lesson, ["--speed", speed])
        let alignment = try #require(recording.locate(reference, channels: 2))
        #expect(alignment.isComplete && alignment.gaps.isEmpty, "the recording is the offline stretched render: \(alignment)")
        let errors = try Self.wordErrors(events, recording)
        for (k, error) in errors.enumerated() { #expect(abs(error) <= 5, "word \(k): cue \(error) ms from its sound") }
        // The tone: a second of 440 Hz at 1×, its middle measured.
        let la = try #require(StretchFixture.onsets(recording.samples).dropFirst(3).first)
        let length = Int(48_000 / Double(speed)!)
        let measured = StretchFixture.frequency(recording.samples, (la + 4_800)..<(la + length - 4_800))
        #expect(abs(measured - 440) <= 4.4, "the tone measures \(measured) Hz")
        print("live speed \(speed)× through PulseAudio: word cues \(errors.map { String(format: "%.2f", $0) }) ms from their onsets; tone \(String(format: "%.2f", measured)) Hz")
    }

    /// 1.5× asked for 1.6 s after frame 0 is heard, while the tone plays: the recording is the
    /// 1× render up to where the change is heard (its fade-out), which is within a period
    /// (15 ms here) and the fade of the request; the tone measures 440 Hz after it too; every
    /// word's cue within 5 ms of its sound.
    @Test func aChangeWhilePlayingIsHeardSoon() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let change = try LiveStretchRuns.change(dir, control: "speed=1.5", ["--verbose"])
        let (events, recording, first) = (change.events, change.recording, change.first)
        // The fade-out starts where the recording leaves the 1× render (within a frame or two:
        // the first faded samples may round to the same values).
        let latency = change.departsMs + 5
        print("speed change heard (fade-out done) \(String(format: "%.1f", latency)) ms after the request")
        #expect(latency > 0 && latency <= change.periodMs + 5, "heard \(latency) ms after the request, period \(change.periodMs) ms")
        // Its event says when the new speed is heard: where the 5 ms fade-out ends.
        let changed = try #require(events.first { $0.type == "speedChanged" }, "no speedChanged event")
        #expect(changed.fields["speed"] as? Double == 1.5)
        let fadeEnd = Int64(recording.audibleTime(ofFrame: first.recordingEnd + 240))
        #expect(abs(Double(changed.heard - fadeEnd) / 1e6) <= 0.5, "speedChanged heard \(Double(changed.heard - fadeEnd) / 1e6) ms from the fade-out's end")
        let errors = try Self.wordErrors(events, recording)
        for (k, error) in errors.enumerated() { #expect(abs(error) <= 5, "word \(k): cue \(error) ms from its sound") }
        let after = StretchFixture.frequency(recording.samples, (first.recordingEnd + 2_400)..<(first.recordingEnd + 12_000))
        #expect(abs(after - 440) <= 4.4, "the tone measures \(after) Hz at 1.5×")
    }
}

/// A pause longer than `--release-device-after` through the server: the stream is corked (the
/// server may suspend its sink) until the resume; the recording is the render with one gap
/// of silence, and every cue comes once.
@Suite("Live long pause", .serialized, .awakeCPUs, .requires(PulseTestServer.isAvailable, "needs pulseaudio, pulseaudio-utils, libasound2-plugins and python3"))
struct LiveLongPauseTests {
    @Test func aLongPauseCorksTheStreamUntilTheResume() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try StretchFixture.write(in: dir)
        let plain = try LiveStretchRuns.render(dir, lesson, speed: "1", name: "plain.wav")
        let server = try PulseTestServer()
        defer { server.stop() }
        let player = try server.startClient(
            Repo.narrator,
            ["play", lesson, "--chain", "x", "--output", "pulse", "--events", dir.file("events.jsonl"),
             "--controls", "0.45:pause,3:resume", "--release-device-after", "1"])
        func corked() throws -> String {
            let listed = try server.runClient("/usr/bin/pactl", ["list", "sink-inputs"])
            return listed.stdout.split(separator: "\n").first { $0.contains("Corked:") }.map { $0.trimmingCharacters(in: .whitespaces) } ?? "no stream"
        }
        // Timed from the pause as the events file says it was heard (a loaded machine can
        // take a while to start the player).
        let giveUp = Date().addingTimeInterval(20)
        while (try? LivePlay.events(dir.file("events.jsonl")))?.contains(where: { $0.type == "paused" }) != true && Date() < giveUp {
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect((try? LivePlay.events(dir.file("events.jsonl")))?.contains(where: { $0.type == "paused" }) == true, "the pause was not heard within 20 s")
        Thread.sleep(forTimeInterval: 0.3)
        let before = try corked()
        Thread.sleep(forTimeInterval: 1.4)
        let during = try corked()
        player.waitUntilExit()
        #expect(player.terminationStatus == 0, "\(server.logTail())")
        #expect(before == "Corked: no", "0.3 s into the pause: \(before)")
        #expect(during == "Corked: yes", "1.7 s into the pause: \(during)")
        let events = try LivePlay.events(dir.file("events.jsonl"))
        let sheet = try run(Repo.narrator, ["cues", lesson, "--chain", "x"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])
        let expected = try #require(object["cues"] as? [[String: Any]]).map { "\($0["type"]!) \($0["frame"]!)" }
        let cues = events.filter { ReceivedEvent(fields: $0.fields).isCue }
        #expect(cues.map { "\($0.type) \($0.frame ?? -1)" } == expected, "every cue once, in order")
        let recording = try server.recording()
        let paused = try #require(events.first { $0.type == "paused" }?.frame)
        // The render, faded out at the pause (in the first burst) and in at the resume: up to
        // the fade-out, and from the end of that burst's clip on (its first sound, the first
        // "two", is unique up to there), found bit for bit, the second after the pause.
        try #require(paused < 26_400 - 240, "paused in the first burst's sound: \(paused)")
        let later = 31_200
        let first = try #require(recording.locate(Array(plain[0..<(paused - 240) * 2]), channels: 2))
        #expect(first.isComplete && first.gaps.isEmpty, "\(first)")
        let second = try #require(recording.locate(Array(plain[later * 2..<plain.count]), channels: 2))
        #expect(second.isComplete && second.gaps.isEmpty, "\(second)")
        let gap = second.startFrame - (first.startFrame + first.referenceFrameCount) - (later - (paused - 240))
        #expect(gap >= 2 * 48_000, "silence for the pause's length: \(gap) frames")
    }
}

/// A volume change through the server, measured on the recording: the master gain to 0.5,
/// asked 1.6 s after frame 0 is heard, while the 440 Hz tone plays. The recording is the
/// render up to where the change is heard, within a period of the request; from there the
/// level only falls, over about 5 ms (a ramp of 1/480 of full scale a frame: no step, no
/// zipper), and is then the render at half, sample for sample within a step of rounding.
@Suite("Live volume", .serialized, .awakeCPUs, .requires(PulseTestServer.isAvailable, "needs pulseaudio, pulseaudio-utils, libasound2-plugins and python3"))
struct LiveVolumeTests {
    @Test func aVolumeChangeLandsWithinAPeriodRamped() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let change = try LiveStretchRuns.change(dir, control: "volume=master/0.5")
        let (recording, plain, first, latency, periodMs) = (change.recording, change.plain, change.first, change.departsMs, change.periodMs)
        print(String(format: "volume change heard %.1f ms after the request (period %.1f ms)", latency, periodMs))
        #expect(latency > 0 && latency <= periodMs, "heard \(latency) ms after the request, period \(periodMs) ms")

        // Left channel, from where the recording leaves the render: recording frame k is
        // render frame k + offset.
        let offset = first.referenceStart - first.recordingStart
        func recorded(_ k: Int) -> Double { Double(recording.samples[k * 2]) }
        func rendered(_ k: Int) -> Double { Double(plain[(k + offset) * 2]) }
        // The level: per 48-frame window (about a cycle of 440 Hz), recorded / rendered energy.
        func level(_ from: Int) -> Double {
            var num = 0.0
            var den = 0.0
            for k in from..<(from + 48) {
                num += recorded(k) * rendered(k)
                den += rendered(k) * rendered(k)
            }
            return num / den
        }
        let ramp = first.recordingEnd
        let levels = stride(from: ramp - 48, to: ramp + 960, by: 48).map(level)
        print("levels per ms from the change: \(levels.map { String(format: "%.3f", $0) })")
        #expect(abs(levels[0] - 1) < 0.01, "full level before the change: \(levels[0])")
        for (k, pair) in zip(levels, levels.dropFirst()).enumerated() {
            #expect(pair.1 <= pair.0 + 0.005, "window \(k): the level rose from \(pair.0) to \(pair.1)")
        }
        // A ramp, not a step: from full to half over 3 to 12 windows (ms).
        let down = try #require(levels.firstIndex { $0 < 0.51 }, "the level never reached half: \(levels)")
        let leaving = try #require(levels.firstIndex { $0 < 0.99 })
        #expect((3...12).contains(down - leaving), "from full to half in \(down - leaving) ms: \(levels)")
        // Half, 10 ms on: each sample the render's halved, within a step of rounding.
        let settled = ramp + 480
        let off = (settled..<(settled + 4_800)).filter { abs(recorded($0) - rendered($0) * 0.5) > 1 }
        #expect(off.isEmpty, "\(off.count) samples are not the render at half, the first at \(off.first.map { $0 - ramp } ?? 0) frames")
    }
}
