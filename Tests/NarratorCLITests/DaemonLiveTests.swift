import Foundation
import NarratorKit
import NarratorOutputs
import NarratorTestSupport
import NarratorTestTraits
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `narrator serve` playing through real libasound into the private PulseAudio server, with
/// real clients: Python's websockets, socat, headless Chromium. The recorder's timestamps of
/// what the sink played are the ground truth of when each frame was heard. The CPUs are kept
/// awake, as in LivePlaybackTests.
@Suite(
    "Daemon, live", .serialized, .awakeCPUs,
    .requires(PulseTestServer.isAvailable && Clients.havePythonWebSockets && PulseTestServer.findExecutable("socat") != nil,
             "needs pulseaudio, socat and python3 websockets"))
struct DaemonLiveTests {
    static let play = #"{"id": "a", "op": "play", "lesson": "live.json", "chain": "live", "seed": 7, "repeat": 2}"#

    /// How many cues `play` has: the cue sheet's count.
    static func cueCount(_ dir: TempDir) throws -> Int {
        let sheet = try run(Repo.narrator, ["cues", dir.file("live.json")] + LivePlay.chainArguments)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])
        return try #require(object["cues"] as? [[String: Any]]).count
    }

    /// The live lesson (`LivePlay.liveLesson`) in `dir` (the daemon's library), and its render.
    static func lessonAndReference(_ dir: TempDir) throws -> [Int16] {
        _ = try LivePlay.liveLesson(dir)
        return try LivePlay.reference(dir, lesson: dir.file("live.json"))
    }

    /// Per cue event: received (or the daemon's `heard`) minus when its frame was heard.
    static func lateness(_ events: [ReceivedEvent], recording: Recording, alignment: Alignment, of time: (ReceivedEvent) -> Int64?) throws -> [Int64] {
        var result: [Int64] = []
        for event in events where event.isCue {
            let frame = try #require(event.frame)
            let range = try #require(alignment.recordingFrames(ofReferenceFrame: frame), "frame \(frame)")
            guard range.count == 1, let at = time(event) else { continue }
            result.append(at - Int64(recording.audibleTime(ofFrame: range.lowerBound)))
        }
        return result
    }

    static func describe(_ errors: [Int64]) -> String {
        "\(Spread(absoluteNanoseconds: errors)) cues"
    }

    @Test(arguments: OutputKind.devices) func webSocketClientGetsEachCueWhenHeard(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let reference = try Self.lessonAndReference(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: dir.path, server: server, arguments: ["--output", output.rawValue])
        defer { daemon.stop() }
        let result = try Clients.run(daemon, [Self.play])
        #expect(result.status == 0, "\(result.stderr) \(daemon.stderr)")
        let recording = try server.recording()
        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        #expect(alignment.isComplete && alignment.gaps.isEmpty, "\(alignment)")
        let events = result.events
        #expect(events.first?.type == "start" && events.filter(\.isTerminal).map(\.type) == ["finished"])
        // Each event as docs/events.schema.json says, without what the client added (`received`).
        let lines = try events.map { event in
            String(decoding: try JSONSerialization.data(withJSONObject: event.fields.filter { $0.key != "received" }), as: UTF8.self)
        }
        let problems = try EventSchema.problems(lines.joined(separator: "\n"), as: "daemonLine")
        #expect(problems == nil, "\(problems ?? "")")
        let sheet = try run(Repo.narrator, ["cues", dir.file("live.json")] + LivePlay.chainArguments)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])
        let expected = try #require(object["cues"] as? [[String: Any]]).map { "\($0["type"]!)@\($0["frame"]!)" }
        #expect(events.filter { $0.isCue }.map { "\($0.type)@\($0.frame ?? -1)" } == expected)

        let stamped = try Self.lateness(events, recording: recording, alignment: alignment) { $0.heard }
        let received = try Self.lateness(events, recording: recording, alignment: alignment) { $0.received }
        print("daemon over WebSocket: heard stamp vs heard \(Self.describe(stamped)); received by the Python client vs heard \(Self.describe(received))")
        #expect(stamped.count >= 20)
        let allowance = LivePlay.wander(output)
        #expect(Spread(absoluteNanoseconds: stamped).exceeds(p99: 2 + allowance, max: 5 + allowance) == nil, "\(Self.describe(stamped))")
        #expect(received.allSatisfy { $0 >= -LivePlay.resolution }, "no cue reaches the client before it is heard")
        #expect(Spread(absoluteNanoseconds: received).exceeds(p99: 5 + allowance, max: .infinity) == nil, "\(Self.describe(received))")
    }

    /// Stamp minus when the frame was heard (the recording), for frame 0 and per cue whose
    /// frame the recording pins down.
    static func stampErrors(
        begin: Int64?, cues: [(frame: Int, stamp: Int64)], recording: Recording, alignment: Alignment
    ) throws -> (begin: Int64, cues: [Int64]) {
        let first = try #require(alignment.recordingFrames(ofReferenceFrame: 0), "frame 0 not found")
        try #require(first.count == 1, "frame 0 is ambiguous in the recording: the test lesson must start with sound")
        let beginStamp = try #require(begin, "no begin stamp")
        var errors: [Int64] = []
        for (frame, stamp) in cues {
            guard let range = alignment.recordingFrames(ofReferenceFrame: frame), range.count == 1 else { continue }
            errors.append(stamp - Int64(recording.audibleTime(ofFrame: range.lowerBound)))
        }
        return (beginStamp - Int64(recording.audibleTime(ofFrame: first.lowerBound)), errors)
    }

    /// The daemon's `start` event's `heard` is when frame 0 was heard, and each cue's `heard` when its
    /// frame was heard (not when it was delivered, which `delivered` says, no earlier), both
    /// against the pipe sink's recording.
    @Test(arguments: OutputKind.devices) func beginAndCueStampsAreWhenTheirFramesAreHeard(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let reference = try Self.lessonAndReference(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: dir.path, server: server, arguments: ["--output", output.rawValue])
        defer { daemon.stop() }
        let result = try Clients.run(daemon, unix: true, [Self.play])
        #expect(result.status == 0, "\(result.stderr) \(daemon.stderr)")
        let recording = try server.recording()
        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        #expect(alignment.isComplete && alignment.gaps.isEmpty, "\(alignment)")
        let begin = try #require(result.events.first { $0.type == "start" })
        let cues = result.events.filter { $0.isCue }
        for cue in cues {
            let delivered = (cue.fields["delivered"] as? NSNumber)?.int64Value
            #expect(delivered != nil && delivered! >= cue.heard!, "\(cue.fields)")
        }
        let (beginError, errors) = try Self.stampErrors(
            begin: begin.heard, cues: cues.map { ($0.frame!, $0.heard!) }, recording: recording, alignment: alignment)
        print(String(format: "daemon stamps vs the recording: begin %+.3f ms; cues ", Double(beginError) / 1e6) + Self.describe(errors))
        if ProcessInfo.processInfo.environment["NARRATOR_TEST_VERBOSE"] != nil {
            print(result.events.filter { !$0.isCue }.map { "\($0.type) \($0.fields)" }, errors.map { Double($0) / 1e6 })
            let delivered = try Self.lateness(result.events, recording: recording, alignment: alignment) { ($0.fields["delivered"] as? NSNumber)?.int64Value }
            print("delivered vs heard:", delivered.map { Double($0) / 1e6 }, "clock fit \(recording.clock.residualsMs), \(recording.clock.slopePPM) ppm")
        }
        let allowance = LivePlay.wander(output)
        #expect(beginError >= -1_000_000 && beginError <= 1_000_000 + Int64(allowance * 1e6), "begin.heard is \(Double(beginError) / 1e6) ms from when frame 0 was heard")
        #expect(errors.count >= 20)
        // The same bounds as the stamps had as delivery times: the recording's own clock, on
        // a loaded machine, wanders by a millisecond or two (measured 0.1-0.5 ms idle, up to
        // 1.7 ms at load 16). That a stamp is the frame's time and not the delivery's is
        // proved on the device double (CueStampTests), whose clock does not wander.
        #expect(Spread(absoluteNanoseconds: errors).exceeds(p99: 2 + allowance, max: 5 + allowance) == nil, "\(Self.describe(errors))")
    }

    /// The same for `narrator play`'s events: the start event's `heard` (frame 0's) and each
    /// cue's `heard`, with `delivered` no earlier.
    @Test func playEventsStampWhenFramesAreHeard() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let reference = try Self.lessonAndReference(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let played = try server.runClient(
            Repo.narrator, ["play", dir.file("live.json")] + LivePlay.chainArguments + ["--events", dir.file("events.jsonl")])
        #expect(played.status == 0, "\(played.stderr)\n\(server.logTail())")
        let recording = try server.recording()
        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        #expect(alignment.isComplete && alignment.gaps.isEmpty, "\(alignment)")
        let events = try LivePlay.events(dir.file("events.jsonl"))
        let start = try #require(events.first { $0.type == "start" })
        let cues = events.filter { $0.type != "start" && $0.frame != nil }
        for cue in cues {
            let delivered = (cue.fields["delivered"] as? NSNumber)?.int64Value
            #expect(delivered != nil && delivered! >= cue.heard, "\(cue.fields)")
        }
        let (beginError, errors) = try Self.stampErrors(
            begin: (start.fields["heard"] as? NSNumber)?.int64Value, cues: cues.map { ($0.frame!, $0.heard) },
            recording: recording, alignment: alignment)
        print(String(format: "narrator play stamps vs the recording: frame 0 %+.3f ms; cues ", Double(beginError) / 1e6) + Self.describe(errors))
        #expect(abs(beginError) <= 1_000_000, "the start event's heard is \(Double(beginError) / 1e6) ms from when frame 0 was heard")
        #expect(errors.count >= 20)
        #expect(Spread(absoluteNanoseconds: errors).exceeds(p99: 2, max: 5) == nil, "\(Self.describe(errors))")
    }

    /// The third client: the Swift API itself, in this process, through the same sound server.
    @Test(arguments: OutputKind.devices) func swiftAPIGetsEachCueWhenHeard(output kind: OutputKind) async throws {
        let dir = TempDir()
        defer { dir.remove() }
        let reference = try Self.lessonAndReference(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        // libasound reads its configuration at each open: this process's next PCM is the server's.
        let saved = server.clientVariables.keys.map { ($0, ProcessInfo.processInfo.environment[$0]) }
        for (key, value) in server.clientVariables { setenv(key, value, 1) }
        defer { for (key, value) in saved { if let value { setenv(key, value, 1) } else { unsetenv(key) } } }
        let lesson = try NarratorLesson(path: dir.file("live.json"))
        let prepared = try lesson.prepare(.chain("live", repeats: 2), seed: 7)
        let output = try Outputs.open(kind, rate: prepared.schedule.sampleRate, channels: prepared.schedule.channels, latencyMs: 50)
        let playback = prepared.play(on: output)
        var events: [ReceivedEvent] = []
        for await event in playback.events {
            guard case .cue(let cue, _, let at) = event else { continue }
            events.append(ReceivedEvent(fields: ["type": cue.type, "frame": cue.frame, "received": NSNumber(value: at)]))
        }
        #expect(playback.waitUntilFinished() == .finished)
        let recording = try server.recording()
        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        #expect(events.map { "\($0.type)@\($0.frame ?? -1)" } == prepared.cues.map { "\($0.type)@\($0.frame)" })
        let lateness = try Self.lateness(events, recording: recording, alignment: alignment) { $0.received }
        print("Swift API (AsyncSequence) vs heard: \(Self.describe(lateness))")
        if ProcessInfo.processInfo.environment["NARRATOR_TEST_VERBOSE"] != nil { print(lateness.map { Double($0) / 1e6 }) }
        #expect(lateness.count >= 20)
        let allowance = LivePlay.wander(kind)
        #expect(Spread(absoluteNanoseconds: lateness).exceeds(p99: 2 + allowance, max: 5 + allowance) == nil, "\(Self.describe(lateness))")
    }

    /// 50 clients subscribed to one playback (started by another over WebSocket): each gets
    /// every event once, in time. (`make bench` measures the same in a release build, over both
    /// transports.)
    @Test(arguments: OutputKind.devices) func fiftySubscribersGetEveryCueInTime(output: OutputKind) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let reference = try Self.lessonAndReference(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: dir.path, server: server, arguments: ["--output", output.rawValue])
        defer { daemon.stop() }
        // 5 processes of 10 clients each: one Python loop for all 50 would queue their messages
        // behind one another and measure itself.
        var loads: [(DaemonClient, String)] = []
        for group in 0..<5 {
            let ready = dir.file("subscribed-\(group)")
            loads.append((try DaemonClient(["load", "--unix", daemon.socket, "--clients", "10", "--first", "\(group * 10)", "--ready", ready]), ready))
        }
        let deadline = Date().addingTimeInterval(30)
        while !loads.allSatisfy({ FileManager.default.fileExists(atPath: $0.1) }) && Date() < deadline { usleep(20_000) }
        try #require(loads.allSatisfy { FileManager.default.fileExists(atPath: $0.1) }, "the 50 clients did not subscribe")
        let owner = try Clients.run(daemon, [Self.play])
        var subscribed: [ReceivedEvent] = []
        for (load, _) in loads {
            let (status, events) = try load.finish()
            #expect(status == 0)
            subscribed += events
        }
        #expect(owner.status == 0, "\(owner.stderr)")
        let recording = try server.recording()
        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")

        let ownerCues = owner.events.filter { $0.isCue }.map { "\($0.type)@\($0.frame ?? -1)" }
        var lateness: [Int64] = []
        var sharedFrames = false
        for client in 0..<50 {
            let mine = subscribed.filter { ($0.fields["client"] as? Int) == client }
            #expect(mine.first?.type == "start" && mine.filter(\.isTerminal).map(\.type) == ["finished"], "client \(client)")
            #expect(mine.filter { $0.isCue }.map { "\($0.type)@\($0.frame ?? -1)" } == ownerCues, "client \(client)")
            lateness += try Self.lateness(mine, recording: recording, alignment: alignment) { $0.received }
            // The cues of one moment (a clip's end, the next one's start, its first word) reach
            // the client in one write: the reads that completed them were one.
            let reads = Dictionary(grouping: mine.filter { $0.isCue }, by: { $0.frame ?? -1 }).mapValues { Set($0.map(\.received)) }
            #expect(reads.values.allSatisfy { $0.count == 1 }, "client \(client): cues of one frame came in separate reads")
            sharedFrames = sharedFrames || reads.count < mine.filter { $0.isCue }.count
        }
        #expect(sharedFrames, "the chain has no frame with several cues: the check above proves nothing")
        print("50 subscribers on the Unix socket, received vs heard: \(Self.describe(lateness))")
        #expect(lateness.count >= 50 * 20)
        #expect(lateness.allSatisfy { $0 >= -LivePlay.resolution })
        // A debug build (SwiftNIO unoptimised) on two shared cores, so the bound is what a
        // read-along could not hide, two 60 Hz display frames; measured here with the CPUs
        // awake: p50 1.6–5.3 ms, p99 6.4–19.5 ms. The goal itself (p99 ≤ 2 ms) is
        // `make bench`'s, in a release build.
        #expect(Spread(absoluteNanoseconds: lateness).exceeds(p99: 33, max: .infinity) == nil, "\(Self.describe(lateness))")
    }

    /// Killing one client mid-chain cancels its playback only; garbage from another on the
    /// socket meanwhile changes nothing.
    // The tests below are about the daemon's requests and connections, not about where the
    // audio goes: they run on the default output only.

    @Test func killedClientCancelsOnlyItsOwnPlayback() throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = try Self.lessonAndReference(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: dir.path, server: server)
        defer { daemon.stop() }
        // B plays and a watcher subscribes to the next playback: A's.
        let other = try DaemonClient(["run", "--unix", daemon.socket, Self.play.replacingOccurrences(of: "\"a\"", with: "\"b\"")])
        // The watcher subscribes once B has begun, so that the next playback is A's.
        usleep(2_000_000)
        let watcher = try DaemonClient(["run", "--unix", daemon.socket, #"{"id": "w", "op": "subscribe", "playback": "next"}"#])
        usleep(700_000)
        let victim = try DaemonClient(["run", "--ws", daemon.url, "--token", daemon.token, Self.play])
        // Killed mid-chain, once its playback plays (killed while its lesson was still being
        // prepared, it would never start, and the watcher would wait for a next playback).
        try #require(victim.waitFor("start", within: 30), "the victim's playback did not start")
        usleep(1_000_000)
        victim.kill()
        var noise = Data((0..<4096).map { _ in UInt8.random(in: 0...255) })
        noise += Data("\n{\"id\": \"still-here\", \"op\": \"cues\", \"lesson\": \"live.json\", \"chain\": \"live\"}\n".utf8)
        let garbage = try NarratorTestSupport.run(
            "/bin/sh", ["-c", "socat -t 30 - UNIX-CONNECT:\"$2\" < \"$1\"", "sh", dir.write("noise.bin", data: noise), daemon.socket])
        #expect(try ReceivedEvent.parse(garbage.stdout).last?.id == "still-here", "the garbage connection stayed up")

        let watched = try watcher.finish().events
        #expect(watched.first?.type == "start", "\(watched.map(\.fields))")
        #expect(watched.last?.type == "stopped" && watched.last?.fields["reason"] as? String == "client disconnected", "\(watched.last?.fields ?? [:])")
        let (otherStatus, survivor) = try other.finish()
        #expect(otherStatus == 0)
        #expect(survivor.filter(\.isTerminal).map(\.type) == ["finished"], "B played to its end")
        #expect(survivor.filter { $0.isCue }.count == (try Self.cueCount(dir)))
        #expect(daemon.stop() == 0)
    }

    /// A client waiting on a playback when the daemon stops: SIGTERM ends the request with
    /// "stopped" (daemon stopping); after a crash and a restart, the client reconnects and
    /// its request plays in full.
    @Test func daemonRestartedWhileAClientWaits() throws {
        let dir = TempDir()
        defer { dir.remove() }
        _ = try Self.lessonAndReference(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: dir.path, server: server)
        defer { daemon.stop() }

        let polite = try DaemonClient(["run", "--unix", daemon.socket, Self.play])
        usleep(1_500_000)
        let stopped = Date()
        #expect(daemon.stop() == 0)
        #expect(Date().timeIntervalSince(stopped) < 3, "stopped within 3 s")
        let (politeStatus, politeEvents) = try polite.finish()
        #expect(politeStatus == 0)
        #expect(politeEvents.filter(\.isTerminal).map(\.type) == ["stopped"])
        #expect(politeEvents.last?.fields["reason"] as? String == "daemon stopping")

        try daemon.start()
        let patient = try DaemonClient(["run", "--unix", daemon.socket, "--expect-restart", "--retry", "20", Self.play])
        usleep(1_500_000)
        daemon.crash()
        usleep(500_000)
        try daemon.start()
        let (patientStatus, patientEvents) = try patient.finish()
        #expect(patientStatus == 0)
        // A connection attempt can land on the dying daemon's socket and be closed at once:
        // the client tries again; what counts is the last reconnection.
        let marks = patientEvents.compactMap { $0.fields["client"] as? String }
        #expect(marks.first == "closed" && marks.last == "reconnected", "\(marks); stderr: \(daemon.stderr)")
        let lastReconnect = try #require(patientEvents.lastIndex { $0.fields["client"] as? String == "reconnected" })
        let afterRestart = patientEvents[lastReconnect...]
        #expect(afterRestart.filter { $0.isCue }.count == (try Self.cueCount(dir)), "\(afterRestart.map(\.type))")
        #expect(afterRestart.filter(\.isTerminal).map(\.type) == ["finished"])
    }

    /// Controls over the Unix socket while a chain plays through the sound server, measured on
    /// the recording: a pause on "can" is silence from its `paused` moment to its `resumed`
    /// one; resuming from the word's start plays the render from exactly that frame; a seek
    /// back to the first sentence's first word plays the render from exactly there. Every
    /// control gets one `finished`.
    @Test func pauseResumeAndSeekAreHeardWhereTheEventsSay() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let reference = try Self.lessonAndReference(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: dir.path, server: server, arguments: ["--output", "pulse"])
        defer { daemon.stop() }
        let play = #"{"id": "a", "op": "play", "lesson": "live.json", "chain": "live", "seed": 7}"#
        let client = try DaemonClient([
            "run", "--unix", daemon.socket,
            "--when", "type=word,text=can", "0", #"{"id": "pause", "op": "pause", "request": "a"}"#,
            "--when", "type=paused", "700", #"{"id": "resume", "op": "resume", "request": "a", "from": "word"}"#,
            "--when", "type=word,text=red", "0", #"{"id": "seek", "op": "seek", "request": "a", "clip": "p1", "word": 0}"#,
            play,
        ])
        let (status, events) = try client.finish()
        #expect(status == 0, "\(daemon.stderr)")
        let lines = try events.filter { $0.fields["client"] == nil }.map { event in
            String(decoding: try JSONSerialization.data(withJSONObject: event.fields.filter { $0.key != "received" }), as: UTF8.self)
        }
        let problems = try EventSchema.problems(lines.joined(separator: "\n"), as: "daemonLine")
        #expect(problems == nil, "\(problems ?? "")")
        let terminals = Dictionary(events.filter(\.isTerminal).map { ($0.id, $0.type) }, uniquingKeysWith: { a, b in a + "," + b })
        #expect(terminals == ["a": "finished", "pause": "finished", "resume": "finished", "seek": "finished"], "\(terminals)")
        #expect(!events.contains { $0.type == "underrun" }, "the output never ran dry")
        func first(_ type: String) throws -> ReceivedEvent { try #require(events.first { $0.type == type }, "no \(type)") }
        let paused = try first("paused")
        let resumed = try first("resumed")
        let seeked = try #require(events.last { $0.type == "seeked" }, "no seek")
        let can = try #require(events.first { $0.type == "word" && $0.fields["text"] as? String == "can" })
        let firstWord = try #require(events.first { $0.type == "word" && $0.fields["clip"] as? String == "p1" })
        #expect(resumed.frame == can.frame, "resumed from the word's start")
        #expect(seeked.frame == firstWord.frame)
        let sent = events.filter { $0.fields["client"] as? String == "sent" }.compactMap { ($0.fields["sent"] as? NSNumber)?.int64Value }
        try #require(sent.count == 3)
        guard case .some(let period) = events.first?.fields["periodFrames"] as? Int else { Issue.record("no periodFrames"); return }
        let pausedHeard = try #require(paused.heard)
        let resumedHeard = try #require(resumed.heard)
        let seekHeard = try #require(seeked.heard)
        let latency = [pausedHeard - sent[0], resumedHeard - sent[1], seekHeard - sent[2]].map { Double($0) / 1e6 }
        print(String(format: "daemon controls, request to heard: pause %.2f ms, resume %.2f ms, seek %.2f ms (period %.1f ms)", latency[0], latency[1], latency[2], Double(period) / 48))
        // The sound server asks for audio about once a period: within that, the rewind margin
        // (a period), the fade (5 ms), and 15 ms for the trip from the client.
        let bound = 2 * Double(period) / 48 + 20
        #expect(latency.allSatisfy { $0 >= 0 && $0 <= bound }, "\(latency) ms, bound \(bound)")
        // The pause itself: silent within a period and the fade of the client's request (the
        // sink's block, a fifth of the latency, is all that cannot be taken back).
        #expect(latency[0] <= Double(period) / 48 + 5, "pause heard \(latency[0]) ms after the request, period \(Double(period) / 48) ms")

        let recording = try server.recording()
        let fade = 240
        func recordingFrame(_ heard: Int64) -> Int { Int(recording.frame(audibleAt: UInt64(heard)).rounded()) }
        // Silence while paused (6 frames of slack at each end for the clock's fit).
        let silentFrom = recordingFrame(pausedHeard) + 6
        let silentTo = recordingFrame(resumedHeard) - 6
        #expect(silentTo - silentFrom > 30_000, "paused for 700 ms")
        let loud = (silentFrom..<silentTo).filter { recording.samples[$0 * 2] != 0 || recording.samples[$0 * 2 + 1] != 0 }
        #expect(loud.isEmpty, "silence while paused: \(loud.count) frames are not, from \((loud.first ?? 0) - silentFrom) to \((loud.last ?? 0) - silentFrom) of \(silentTo - silentFrom)")
        // After the fade-in, the render from the frame asked for, exactly, found where the
        // event said it would be heard.
        func playsFrom(_ heard: Int64, referenceFrame: Int) -> Bool {
            let want = Array(reference[((referenceFrame + fade) * 2)..<((referenceFrame + fade + 24_000) * 2)])
            let at = recordingFrame(heard) + fade
            let found = (-4800...4800).first { shift in
                let start = (at + shift) * 2
                return start >= 0 && start + want.count <= recording.samples.count && recording.samples[start..<(start + want.count)].elementsEqual(want)
            }
            print("render from \(referenceFrame) found at \(found.map(String.init) ?? "nowhere") frames from where its event says")
            if found == nil {
                let anywhere = stride(from: 0, to: recording.frames - 24_000, by: 1).first { start in
                    recording.samples[start * 2] == want[0] && recording.samples[(start * 2)..<(start * 2 + 200)].elementsEqual(want[0..<200])
                }
                print("  anywhere: \(anywhere.map { String($0 - at) } ?? "nowhere")")
                for shift in -4...4 {
                    let start = (at + shift) * 2
                    if let bad = (0..<want.count).first(where: { recording.samples[start + $0] != want[$0] }) {
                        print("  shift \(shift): first difference at frame \(bad / 2): \(recording.samples[start + bad]) vs \(want[bad])")
                    }
                }
                // What was heard there instead: the reference frame of the recording's content.
                for probe in [at, at + 2400, at + 12_000] {
                    let heardThere = Array(recording.samples[(probe * 2)..<(probe * 2 + 400)])
                    let source = stride(from: 0, to: reference.count / 2 - 200, by: 1).first { k in
                        reference[k * 2] == heardThere[0] && reference[(k * 2)..<(k * 2 + 400)].elementsEqual(heardThere)
                    }
                    print("  recording at \(probe - at) from there is reference frame \(source.map(String.init) ?? "none") (wanted \(referenceFrame + fade + probe - at))")
                }
            }
            // The recording's clock is fitted to its reads, and the daemon's stamps agree with
            // it within p99 0.05–0.13 ms from run to run (the daemon bench): ±6 frames (0.125 ms).
            return found.map { abs($0) <= 6 } ?? false
        }
        #expect(playsFrom(resumedHeard, referenceFrame: try #require(can.frame)), "after the resume: the render from the word's start")
        #expect(playsFrom(seekHeard, referenceFrame: try #require(firstWord.frame)), "after the seek: the render from the first word")
    }

    /// The read-along page's controls in headless Chromium: Pause pauses (no word red while
    /// paused), a tap on the last word says it (red while heard) and pauses again where it was,
    /// Play goes on, the music slider sets the connection's music gain, the speed menu slows the
    /// rest to 0.75×; every control gets its `finished`, and the popup plays to its end.
    @Test(.requires(PulseTestServer.findExecutable("chromium") != nil, "needs chromium"))
    func browserControlsPauseSayAWordAndVolume() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = Repo.path("Timings/lessons")
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: library, server: server)
        defer { daemon.stop() }
        let driven = try runTool("python3", [Clients.browser, "http://127.0.0.1:\(daemon.port)/read-along.html?lesson=picture-dictionary.json&activity=word-popup#token=\(daemon.token)", dir.file("shots"), "--timeout", "30", "--controls"])
        try #require(driven.status == 0, "\(driven.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(driven.stdout.utf8)) as? [String: Any])
        #expect(report["states"] as? [String] == ["paused", "paused", "playing", "ended"], "\(report)")
        let said = try #require(report["said"] as? String)
        let log = try #require(report["log"] as? [String])
        // The said word: a jump to its start, its cue, a jump back, the pause again.
        let sheet = try run(Repo.narrator, ["cues", library + "/picture-dictionary.json", "--activity", "word-popup"])
        try #require(sheet.status == 0, "\(sheet.stderr)")
        let cues = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])["cues"] as? [[String: Any]]
        let parts = said.split(separator: "/")
        let word = try #require(cues?.first { $0["type"] as? String == "word" && $0["clip"] as? String == String(parts[0]) && "\($0["index"] ?? "")" == String(parts[1]) })
        let wordFrame = try #require(word["frame"] as? Int)
        let firstPause = try #require(log.firstIndex { $0.hasPrefix("paused@") })
        let after = Array(log[(firstPause + 1)...])
        let jump = try #require(after.firstIndex { $0 == "seeked@\(wordFrame)" }, "\(log)")
        #expect(after[jump...].contains("word@\(wordFrame)"), "\(log)")
        #expect(after.filter { $0.hasPrefix("paused@") }.first == log[firstPause], "paused again where it was: \(log)")
        let replies = try #require(report["replies"] as? [String: String])
        #expect(replies.values.allSatisfy { $0 == "finished" } && replies.count >= 5, "\(replies)")
        #expect(report["speedReply"] as? String == "finished", "the speed menu's request: \(report)")
        #expect(report["pausedRed"] is NSNull, "no word red while paused")
        #expect(!(report["sayRed"] is NSNull), "the said word is red while heard")
    }

    /// The read-along page in headless Chromium: screenshots while the definition plays show
    /// the word being heard, and only it, in red.
    @Test(.requires(PulseTestServer.findExecutable("chromium") != nil, "needs chromium"))
    func browserHighlightsTheWordBeingHeard() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = Repo.path("Timings/lessons")
        let rendered = try run(Repo.narrator, ["render", library + "/picture-dictionary.json", "--activity", "word-popup", "--output", dir.file("popup.wav")])
        try #require(rendered.status == 0, "\(rendered.stderr)")
        let reference = try WAVFile(path: dir.file("popup.wav")).int16Samples
        // Ground truth for the words: the timing file itself (seconds → frames at 48 kHz).
        let timings = try String(contentsOfFile: library + "/dictionary/apple.txt", encoding: .utf8)
        let starts = timings.split(separator: "\n").map { Int((Double($0.split(separator: "\t")[0])! * 48000).rounded()) }

        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: dir, library: library, server: server)
        defer { daemon.stop() }
        let driven = try runTool("python3", [Clients.browser, "http://127.0.0.1:\(daemon.port)/read-along.html?lesson=picture-dictionary.json&activity=word-popup#token=\(daemon.token)", dir.file("shots"), "--timeout", "30"])
        try #require(driven.status == 0, "\(driven.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(driven.stdout.utf8)) as? [String: Any])
        let recording = try server.recording()
        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        #expect(alignment.isComplete && alignment.gaps.isEmpty)
        func heard(_ frame: Int) throws -> Int64 {
            Int64(recording.audibleTime(ofFrame: try #require(alignment.recordingFrames(ofReferenceFrame: frame)).lowerBound))
        }
        let words = try #require(report["words"] as? [[String: Any]])
        #expect(words.map { $0["text"] as? String ?? "" } == ["apple", "A", "round", "fruit", "that", "grows", "on", "trees."])
        // Word k is red from when its first frame is heard until word k+1's is (the last: until
        // the clip ends).
        var spans: [(word: Int, from: Int64, to: Int64)] = []
        for (k, start) in starts.enumerated() {
            spans.append((k, try heard(start), try heard(k + 1 < starts.count ? starts[k + 1] : reference.count / 2 - 1)))
        }
        let shots = try #require(report["shots"] as? [[String: Any]])
        var checked = Set<Int>()
        var clear = 0
        for shot in shots {
            let t0 = (shot["t0"] as? NSNumber)?.int64Value ?? 0
            let t1 = (shot["t1"] as? NSNumber)?.int64Value ?? 0
            // Only shots taken wholly inside one word's span, with 30 ms for the page to
            // receive the event and draw it.
            guard let span = spans.first(where: { $0.from + 30_000_000 <= t0 && t1 <= $0.to }) else { continue }
            let red = try #require(shot["red"] as? [Double], "\(shot["file"] ?? "") shows no red word while '\(words[span.word]["text"]!)' is heard")
            let box = try #require(words[span.word]["box"] as? [Double])
            let inside = red[0] >= box[0] - 2 && red[1] >= box[1] - 2 && red[2] <= box[2] + 2 && red[3] <= box[3] + 2
            #expect(inside, "\(shot["file"] ?? ""): red \(red), while '\(words[span.word]["text"]!)' at \(box) is heard")
            checked.insert(span.word)
            clear += 1
        }
        print("read-along in Chromium: \(shots.count) screenshots, \(clear) wholly inside a word, words \(checked.sorted())")
        #expect(checked.count >= 6, "screenshots caught \(checked.sorted())")
        #expect(report["replayed"] as? String == "playing")
        let closed = try #require(report["closed"] as? [String: Any])
        #expect(closed["state"] as? String == "closed" && closed["display"] as? String == "none" && closed["red"] is NSNull)
    }

    /// The lesson's music bed under a chain the daemon plays (issue 30.1): the sink hears the
    /// offline render of the chain over the bed (whose samples MusicBedTests checks against
    /// the fixture's noise, tiled over the loop), whole and without a gap; the events are the
    /// bed's start, the chain's cues with the bed's loops among them, `chainEnd`, the bed's
    /// `musicStop` 0.25 s later, then `finished`.
    @Test func aLessonsBedPlaysUnderAChainTheDaemonPlays() throws {
        let fixture = MusicBedFixture(channels: 2, lessonMusic: MusicBedFixture.noiseBed)
        defer { fixture.dir.remove() }
        let rendered = try run(Repo.narrator, ["render", fixture.path, "--chain", "pause", "--output", fixture.dir.file("reference.wav")])
        try #require(rendered.status == 0, "\(rendered.stderr)")
        let reference = try WAVFile(path: fixture.dir.file("reference.wav")).int16Samples
        try #require(reference.count == 2 * (240_000 + 12_000))
        let server = try PulseTestServer()
        defer { server.stop() }
        let daemon = try Daemon(dir: fixture.dir, library: fixture.dir.path, server: server, arguments: ["--output", OutputKind.pulse.rawValue])
        defer { daemon.stop() }
        let result = try Clients.run(daemon, unix: true, [#"{"id": "b", "op": "play", "lesson": "bed.json", "chain": "pause"}"#])
        #expect(result.status == 0, "\(result.stderr) \(daemon.stderr)")
        let cues = result.events.filter(\.isCue).map { "\($0.type)@\($0.frame ?? -1)" }
        #expect(cues == ["musicStart@0", "clipStart@48000", "clipEnd@72000", "musicLoop@120000", "musicLoop@216000", "chainEnd@240000", "musicStop@252000"])
        #expect(result.events.last?.type == "finished")
        let recording = try server.recording()
        let alignment = try #require(recording.locate(reference, channels: 2), "\(server.logTail())")
        #expect(alignment.isComplete && alignment.gaps.isEmpty, "\(alignment)")
    }
}
