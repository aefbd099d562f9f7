import Foundation
import NarratorTestSupport
import Testing

/// `simulate --controls`: the controls on the virtual output, exact and repeatable. The frames
/// they must land on come from `narrator cues` (the cue sheet), the moments from the script.
@Suite("Control scripts")
struct ControlScriptTests {
    static let lesson = Repo.path("Timings/lessons/sample.json")
    static let chain = ["--chain", "correct", "--seed", "7"]

    static func lines(_ output: String) throws -> [[String: Any]] {
        try output.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    @Test func pauseResumeFromTheWordAndSayAWord() throws {
        let sheet = try run(Repo.narrator, ["cues", Self.lesson] + Self.chain)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])
        let cues = try #require(object["cues"] as? [[String: Any]])
        func word(_ clip: String, _ index: Int) throws -> Int {
            try #require(cues.first { $0["type"] as? String == "word" && $0["clip"] as? String == clip && $0["index"] as? Int == index }?["frame"] as? Int)
        }
        let result = try run(Repo.narrator, ["simulate", Self.lesson] + Self.chain + ["--controls", "1.2:pause,2:resume=word,3.5:say=p2/3,3.9:mute=music"])
        #expect(result.status == 0, "\(result.stderr)")
        let events = try Self.lines(result.stdout)
        let again = try run(Repo.narrator, ["simulate", Self.lesson] + Self.chain + ["--controls", "1.2:pause,2:resume=word,3.5:say=p2/3,3.9:mute=music"])
        #expect(again.stdout == result.stdout, "the same script gives the same events")
        func first(_ type: String) throws -> [String: Any] { try #require(events.first { $0["type"] as? String == type }, "no \(type)") }
        let paused = try first("paused")
        let resumed = try first("resumed")
        let pausedFrame = try #require(paused["frame"] as? Int)
        // Heard within a period (10 ms), the rewind margin and the fade (5 ms each) of 1.2 s.
        let pausedAt = try #require(paused["t"] as? Double)
        #expect(pausedAt >= 1.2 && pausedAt <= 1.221, "paused at \(pausedAt)")
        // Resumed from the start of the word heard when paused: the last word cue at or
        // before the paused frame in the cue sheet.
        let wordStart = try #require(cues.last { $0["type"] as? String == "word" && ($0["frame"] as? Int ?? .max) <= pausedFrame }?["frame"] as? Int)
        #expect(resumed["frame"] as? Int == wordStart)
        // The said word: a jump to it, its cue, a jump back.
        let seeks = events.filter { $0["type"] as? String == "seeked" }.map { ($0["from"] as? Int ?? -1, $0["frame"] as? Int ?? -1) }
        let hat = try word("p2", 3)
        #expect(seeks.count == 3 && seeks[1].1 == hat, "\(seeks)")
        let afterSay = try #require(events.firstIndex { $0["type"] as? String == "seeked" && $0["frame"] as? Int == hat })
        #expect(events[afterSay + 1]["type"] as? String == "word" && events[afterSay + 1]["frame"] as? Int == hat)
        #expect(events.last?["type"] as? String == "chainEnd" && events.last?["final"] as? Bool == true)
        let times = events.compactMap { $0["t"] as? Double }
        #expect(times == times.sorted(), "events in the order heard")
        #expect(try EventSchema.problems(result.stdout, as: "playLine") == nil)
    }

    /// A resume sent while a word is said from a pause is not lost: after the word, playback
    /// goes back to where it was paused and goes on from there to the end (it used to go back
    /// and stay paused). Every word cue from the paused frame on comes after the word said.
    @Test func aResumeWhileAWordIsSaidCarriesOnAfterIt() throws {
        let result = try run(Repo.narrator, ["simulate", Self.lesson] + Self.chain + ["--controls", "1.2:pause,1.5:say=p2/3,1.6:resume"])
        #expect(result.status == 0, "\(result.stderr)")
        let events = try Self.lines(result.stdout)
        let pausedFrame = try #require(events.first { $0["type"] as? String == "paused" }?["frame"] as? Int)
        let seeks = events.filter { $0["type"] as? String == "seeked" }.map { ($0["from"] as? Int ?? -1, $0["frame"] as? Int ?? -1) }
        #expect(seeks.count == 2 && seeks.last?.1 == pausedFrame, "\(seeks)")
        #expect(events.count { $0["type"] as? String == "paused" } == 1, "no pause after the word")
        #expect(!events.contains { $0["type"] as? String == "stopped" })
        #expect(events.last?["type"] as? String == "chainEnd" && events.last?["final"] as? Bool == true, "\(events.suffix(2))")
        let back = try #require(events.lastIndex { $0["type"] as? String == "seeked" })
        let sheet = try run(Repo.narrator, ["cues", Self.lesson] + Self.chain)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])
        let laterWords = try #require(object["cues"] as? [[String: Any]]).filter { $0["type"] as? String == "word" && ($0["frame"] as? Int ?? -1) > pausedFrame }
        let heardAfter = events[back...].filter { $0["type"] as? String == "word" }
        #expect(heardAfter.map { $0["frame"] as? Int } == laterWords.map { $0["frame"] as? Int })
    }

    /// A script that leaves playback paused ends there at once: `stopped` at the paused frame.
    @Test func aScriptEndingPausedStopsThere() throws {
        let started = Date()
        let result = try run(Repo.narrator, ["simulate", Self.lesson] + Self.chain + ["--controls", "1:pause"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 10)
        let events = try Self.lines(result.stdout)
        let paused = try #require(events.first { $0["type"] as? String == "paused" })
        #expect(events.last?["type"] as? String == "stopped" && events.last?["frame"] as? Int == paused["frame"] as? Int, "\(events.suffix(2))")
    }

    /// `speed=1.5` a second in: every cue still comes once, in order; the words after the change
    /// are heard 1/1.5 as far apart as the cue sheet's frames say (within a frame: each is
    /// rounded to an output frame), those before it as far apart as at 1× (to the microsecond).
    @Test func aSpeedChangeSpacesTheWordsByTheSpeed() throws {
        let sheet = try run(Repo.narrator, ["cues", Self.lesson] + Self.chain)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])
        let cues = try #require(object["cues"] as? [[String: Any]])
        let rate = Double(try #require(object["sampleRate"] as? Int))
        let result = try run(Repo.narrator, ["simulate", Self.lesson] + Self.chain + ["--controls", "1:speed=1.5"])
        #expect(result.status == 0, "\(result.stderr)")
        let events = try Self.lines(result.stdout)
        let changed = events.filter { $0["type"] as? String == "speedChanged" }
        #expect(changed.count == 1 && changed.first?["speed"] as? Double == 1.5, "one speedChanged: \(changed)")
        // The cues: every event whose type is no event kind's (start, paused, speedChanged …).
        let heardCues = events.filter { ReceivedEvent(fields: $0).isCue }
        #expect(heardCues.map { "\($0["type"]!)@\($0["frame"]!)" } == cues.map { "\($0["type"]!)@\($0["frame"]!)" }, "every cue once, in order")
        let words = events.filter { $0["type"] as? String == "word" }.map { ($0["frame"] as! Int, $0["t"] as! Double) }
        var checked = (before: 0, after: 0)
        for (a, b) in zip(words, words.dropFirst()) {
            let gap = Double(b.0 - a.0) / rate
            if b.1 < 1 {
                #expect(abs((b.1 - a.1) - gap) < 2e-6, "words at \(a.0), \(b.0) before the change")
                checked.before += 1
            } else if a.1 > 1.03 {
                #expect(abs((b.1 - a.1) - gap / 1.5) < 1 / rate + 2e-6, "words at \(a.0), \(b.0) at 1.5x: \(b.1 - a.1) s apart")
                checked.after += 1
            }
        }
        #expect(checked.after >= 3, "\(checked)")
    }

    /// A lesson whose chain has a 40 s music bed (streamed: over 30 s) seeks, says a word,
    /// resumes from a word and changes speed like any other (issue 28.3b: it printed "this
    /// playback streams long files and cannot move"), the same on every run.
    @Test func aLessonWithALongMusicBedMoves() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let bed = dir.file("bed.wav")
        let made = try runTool("sox", ["-n", "-r", "48000", "-c", "2", "-b", "16", bed, "synth", "40", "sine", "220", "vol", "0.2"])
        try #require(made.status == 0, "\(made.stderr)")
        let clips = Repo.path("Audio/lessons")
        let lesson = dir.write(
            "l.json",
            """
            {"sampleRate": 48000, "channels": 2, "ducking": {"gain": -12},
             "clips": {"p1": {"file": "\(clips)/sight-words/part1.wav", "timings": "\(Repo.path("Timings/lessons/sight-words/part1.json"))"},
                       "bed": {"file": "\(bed)", "bus": "music"}},
             "chains": {"c": [{"music": "bed"}, {"silence": 1}, {"clip": "p1"}, {"silence": 0.5}, {"clip": "p1"}, {"silence": 1}]}}
            """)
        let seek = try run(Repo.narrator, ["simulate", lesson, "--chain", "c", "--controls", "1.5:seek=0.2"])
        #expect(seek.status == 0, "\(seek.stderr)")
        #expect(!seek.stderr.contains("cannot move"))
        let events = try Self.lines(seek.stdout)
        let seeked = try #require(events.first { $0["type"] as? String == "seeked" }, "\(seek.stdout)")
        #expect(seeked["frame"] as? Int == 9600)
        // Heard within a period (10 ms), the rewind margin and the fade (5 ms each) of 1.5 s,
        // as in memory: the rings are refilled while the output plays what it holds
        // (measured: 1.507 s; it was 1.541 when the wait filled the output with silence).
        let at = try #require(seeked["t"] as? Double)
        #expect(at >= 1.5 && at <= 1.521, "seeked at \(at)")
        // Every word of the cue sheet comes again after the seek, and the chain ends.
        let sheet = try run(Repo.narrator, ["cues", lesson, "--chain", "c"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])
        let sheetWords = try #require(object["cues"] as? [[String: Any]]).filter { $0["type"] as? String == "word" }.compactMap { $0["frame"] as? Int }
        let seekIndex = try #require(events.firstIndex { $0["type"] as? String == "seeked" })
        let wordsAfter = events[seekIndex...].filter { $0["type"] as? String == "word" }.compactMap { $0["frame"] as? Int }
        #expect(!sheetWords.isEmpty && wordsAfter == sheetWords)
        #expect(events.last?["type"] as? String == "chainEnd")
        let again = try run(Repo.narrator, ["simulate", lesson, "--chain", "c", "--controls", "1.5:seek=0.2"])
        #expect(again.stdout == seek.stdout, "the same script gives the same events")
        let more = try run(
            Repo.narrator, ["simulate", lesson, "--chain", "c", "--controls", "1.3:pause,1.6:resume=word,2.2:say=p1/1,2.5:speed=1.5"])
        #expect(more.status == 0, "\(more.stderr)")
        let types = try Self.lines(more.stdout).compactMap { $0["type"] as? String }
        #expect(types.contains("resumed") && types.contains("speedChanged") && types.filter { $0 == "seeked" }.count >= 3, "\(types)")
        #expect(types.last == "chainEnd")
    }

    @Test func badScriptsAreOneLineErrors() throws {
        let cases: [(String, String)] = [
            ("1:dance", "--controls: item 1 '1:dance': expected SECONDS:CONTROL"),
            ("x:pause", "--controls: item 1 'x:pause': expected SECONDS:CONTROL"),
            ("-1:pause", "--controls: item 1 '-1:pause'"),
            ("1e30:pause", "--controls: item 1 '1e30:pause'"),
            ("1:volume=music/9", "a gain from 0 to 4"),
            ("1:mute=drums", "expected a bus"),
            ("1:say=p2/99999999", "an index from 0 to 100000"),
            ("1:speed=3", "a speed from 0.5 to 2"),
            ("1:speed=nan", "a speed from 0.5 to 2"),
            ("1:speed", "speed=SPEED (BUS"),
            ("3601:pause", "simulate plays at most an hour"),
            ("0.5:say=nope/1", "--controls: '0.5:say=nope/1': no word 1 of clip 'nope'"),
        ]
        for (script, expected) in cases {
            let result = try run(Repo.narrator, ["simulate", Self.lesson] + Self.chain + ["--controls=" + script])
            #expect(result.status == 1, "\(script)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines.first?.contains(expected) == true, "\(script): \(result.stderr)")
        }
    }
}

/// The example in docs/controls.md, run as written (its `narrator` is the built one).
@Suite("Docs: controls example")
struct ControlsDocExampleTests {
    @Test func theSimulateExampleRuns() throws {
        let doc = try String(contentsOfFile: Repo.path("docs/controls.md"), encoding: .utf8)
        // The sh block's command, its continuation lines joined.
        let block = try #require(doc.components(separatedBy: "```sh\n").dropFirst().first?.components(separatedBy: "```").first)
        let command = block.replacingOccurrences(of: "\\\n", with: " ")
        let words = command.split(whereSeparator: \.isWhitespace).map(String.init)
        try #require(words.first == "narrator", "\(words)")
        let result = try run(Repo.narrator, Array(words.dropFirst()), cwd: Repo.path(""))
        #expect(result.status == 0, "\(result.stderr)")
        let types = result.stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["type"] as? String
        }
        for type in ["paused", "seeked", "resumed", "word", "chainEnd"] { #expect(types.contains(type), "\(type) in \(types)") }
    }
}
