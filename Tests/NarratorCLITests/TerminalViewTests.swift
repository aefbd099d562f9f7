import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// `narrator play` on a terminal, as a person sees it: the program runs in a tmux pane (a real
/// terminal emulator on a pseudo-terminal, of a chosen size), its audio goes to the private
/// PulseAudio server, keys are typed with `send-keys` and the screen is read with
/// `capture-pane` after each step.
@Suite(
    "Terminal view", .serialized,
    .requires(PulseTestServer.isAvailable && PulseTestServer.findExecutable("tmux") != nil, "needs the PulseAudio test server and tmux"))
struct TerminalViewTests {
    /// A tmux server of its own (its own socket) with one pane running `script`.
    final class Pane {
        let socket: String
        let tmux: String
        private(set) var width: Int

        init(_ dir: TempDir, width: Int, height: Int, script: String) throws {
            tmux = try #require(PulseTestServer.findExecutable("tmux"))
            socket = dir.file("tmux.sock")
            self.width = width
            // Spawned and waited for here, its output to /dev/null: the tmux client forks the
            // server and exits, and Foundation's Process, waiting for it, was seen to hang.
            let arguments = [tmux, "-S", socket, "-f", "/dev/null", "new-session", "-d", "-x", String(width), "-y", String(height), "-s", "view", "bash '\(script)'"]
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            for fd: Int32 in 0...2 { posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0) }
            var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
            defer { for pointer in argv { free(pointer) } }
            // With no signal blocked and default handlers: a spawned process inherits the
            // spawning thread's mask, and a tmux server with SIGCHLD and SIGTERM blocked never
            // notices its pane ending nor its kill-server.
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            var none = sigset_t()
            sigemptyset(&none)
            var all = sigset_t()
            sigfillset(&all)
            posix_spawnattr_setsigmask(&attributes, &none)
            posix_spawnattr_setsigdefault(&attributes, &all)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
            var pid: pid_t = 0
            try #require(posix_spawn(&pid, tmux, &actions, &attributes, &argv, environ) == 0)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            try #require(status == 0, "tmux new-session: status \(status)")
        }

        /// The screen, one string per row, trailing blanks removed.
        func screen() throws -> [String] {
            let captured = try run(tmux, ["-S", socket, "capture-pane", "-p", "-t", "view"])
            return captured.stdout.split(separator: "\n", omittingEmptySubsequences: false).map {
                String($0.reversed().drop { $0 == " " }.reversed())
            }
        }

        /// Types `text` as it is (no key names).
        func type(_ text: String) throws { _ = try run(tmux, ["-S", socket, "send-keys", "-t", "view", "-l", text]) }
        /// Presses a key by its tmux name (Enter, BSpace).
        func press(_ key: String) throws { _ = try run(tmux, ["-S", socket, "send-keys", "-t", "view", key]) }

        /// Makes the terminal `columns` wide (the program gets SIGWINCH).
        func resize(_ columns: Int) throws {
            _ = try run(tmux, ["-S", socket, "resize-window", "-t", "view", "-x", String(columns)])
            width = columns
        }

        func close() { _ = try? run(tmux, ["-S", socket, "kill-server"]) }
    }

    /// A lesson whose prompt is seven words long, whose idle wait is 4 s of nothing and whose
    /// right answer "zebra" plays 1.7 s of words; a tap while narration plays is an answer too
    /// (so that a slow test still answers).
    static func lesson(_ dir: TempDir) throws -> String {
        let tone = dir.file("tone.wav")
        let made = try runTool("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "0.3", "sine", "440", "vol", "0.5"])
        try #require(made.status == 0, "\(made.stderr)")
        let audio = Repo.path("Audio/lessons")
        let timings = Repo.path("Timings/lessons")
        return dir.write(
            "view.json",
            """
            {"sampleRate": 48000, "channels": 2,
             "clips": {"tone": {"file": "\(tone)"},
                       "p1": {"file": "\(audio)/sight-words/part1.wav", "timings": "\(timings)/sight-words/part1.json"},
                       "p2": {"file": "\(audio)/sight-words/part2.wav", "timings": "\(timings)/sight-words/part2.json"}},
             "chains": {"prompt": [{"clip": "p1"}, {"clip": "p2"}], "idle": [{"clip": "tone"}], "yes": [{"clip": "p2"}], "no": [{"clip": "tone"}]},
             "activities": {"a": {"idleSeconds": 4.0, "taps": "interrupt", "steps": [{"prompt": "prompt", "answer": "zebra", "idle": "idle", "correct": "yes", "wrong": ["no"]}]}}}
            """)
    }

    /// A script for the pane: the terminal's settings before and after `narrator` with
    /// `arguments` (and its exit status) into files, then it waits to be looked at.
    static func script(_ dir: TempDir, server: PulseTestServer, arguments: [String]) -> String {
        let exports = server.clientVariables.sorted { $0.key < $1.key }.map { "export \($0.key)='\($0.value)'" }
        let command = ([Repo.narrator] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return dir.write(
            "run.sh",
            (exports + [
                "stty -g > '\(dir.file("before"))'", command, "echo $? > '\(dir.file("status"))'",
                "stty -g > '\(dir.file("after"))'", "sleep 60",
            ]).joined(separator: "\n") + "\n")
    }

    /// The status lines on `screen` (those that start with the clock).
    static func statusLines(_ screen: [String]) -> [String] { screen.filter { $0.hasPrefix("[") } }

    /// The clock the status line shows, in seconds, and the total after it if any.
    static func clock(_ line: String) -> (seconds: Double, total: Double?)? {
        guard let close = line.firstIndex(of: "]") else { return nil }
        let parts = line[line.index(after: line.startIndex)..<close].replacingOccurrences(of: " s", with: "")
            .split(separator: "/").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard let first = parts.first, let seconds = first else { return nil }
        return (seconds, parts.count > 1 ? parts[1] : nil)
    }

    /// The events written so far. Only the last line, while it has no newline yet, may be
    /// unfinished and is left out; any other line that is not a JSON object is a failure.
    static func events(_ path: String) -> [LivePlay.Event] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()  // after the last newline: empty, or a line being written
        return lines.compactMap { line in
            guard let fields = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
                Issue.record("\(path): not an event line: \(line)")
                return nil
            }
            return LivePlay.Event(fields: fields)
        }
    }

    /// Runs `narrator` with `arguments(lesson, eventsFile)` in a pane `width` × `height` (the
    /// lesson from `makeLesson`, its audio to a private PulseAudio server), then `body` with
    /// the pane, the events file and the run's folder; everything is removed after.
    static func inPane(
        width: Int, height: Int, lesson makeLesson: (TempDir) throws -> String = lesson,
        arguments: (_ lesson: String, _ events: String) -> [String],
        _ body: (_ pane: Pane, _ events: String, _ dir: TempDir) throws -> Void
    ) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let lesson = try makeLesson(dir)
        let server = try PulseTestServer()
        defer { server.stop() }
        let events = dir.file("events.jsonl")
        let pane = try Pane(dir, width: width, height: height, script: script(dir, server: server, arguments: arguments(lesson, events)))
        defer { pane.close() }
        try body(pane, events, dir)
    }

    static func waitFor(_ timeout: TimeInterval, _ condition: () throws -> Bool) rethrows -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return try condition()
    }

    /// An activity answered at the terminal: the clock runs while the audio plays with no key
    /// pressed, between cues too (the idle wait), and agrees with the audio clock; there is
    /// no total (the activity's length depends on the answers); typing shows only in the
    /// view's own answer field, never echoed; Backspace edits; Enter sends the answer, which
    /// is taken; every line fits the 40 columns, and one status line is ever on the screen;
    /// the terminal's settings are as before once `narrator` has exited.
    @Test func activityAnsweredAtTheTerminal() throws {
        try Self.inPane(width: 40, height: 12, arguments: { lesson, events in ["play", lesson, "--activity", "a", "--events", events] }) { pane, events, dir in
            func check(_ screen: [String], _ step: String) {
                #expect(Self.statusLines(screen).count == 1, "\(step): \(screen)")
                for line in screen { #expect(line.count < pane.width, "\(step): \(line)") }
            }
            func cue(_ type: String, _ chain: String? = nil) -> LivePlay.Event? {
                Self.events(events).first { $0.type == type && (chain == nil || $0.fields["chain"] as? String == chain) }
            }
            /// The screen and the clock shown on it, and when it was read (monotonic ns).
            /// `spread`: half the time the capture took (s), the uncertainty of `at`.
            func shot(_ step: String) throws -> (screen: [String], shown: Double, at: Int64, spread: Double) {
                let before = monotonicNanoseconds()
                let screen = try pane.screen()
                let after = monotonicNanoseconds()
                check(screen, step)
                let clock = try #require(Self.clock(Self.statusLines(screen).first ?? ""), "\(step): \(screen)")
                #expect(clock.total == nil, "no total for an activity answered live: \(screen)")
                return (screen, clock.seconds, before / 2 + after / 2, Double(after - before) / 2e9)
            }

            // While the prompt plays: the screen moves on by itself, with the time.
            #expect(Self.waitFor(10) { cue("word") != nil })
            Thread.sleep(forTimeInterval: 0.3)
            let first = try shot("prompt")
            Thread.sleep(forTimeInterval: 0.8)
            let second = try shot("prompt")
            let elapsed = Double(second.at - first.at) / 1e9
            // Within a redraw (0.1 s) and the display's rounding (0.05 s) each, and how long the
            // captures took.
            #expect(abs(second.shown - first.shown - elapsed) <= 0.3 + first.spread + second.spread, "\(elapsed) s apart: \(first.screen) then \(second.screen)")
            #expect(second.screen != first.screen)
            #expect(!second.screen.joined().contains("515") && !second.screen.joined().contains("86400"))

            // The idle wait: no cue for 4 s, and the clock still runs with the audio clock (the
            // prompt's end heard at its stamp).
            #expect(Self.waitFor(10) { cue("chainEnd", "prompt") != nil })
            let promptEnd = try #require(cue("chainEnd", "prompt"))
            let endFrame = try #require(promptEnd.frame)
            Thread.sleep(forTimeInterval: 0.4)
            var seen: [(shown: Double, heard: Double, spread: Double)] = []
            for _ in 0..<3 {
                let shot = try shot("idle wait")
                seen.append((shot.shown, Double(endFrame) / 48000 + Double(shot.at - promptEnd.heard) / 1e9, shot.spread))
                Thread.sleep(forTimeInterval: 0.4)
            }
            #expect(cue("idlePrompt") == nil, "the test must look within the idle wait")
            for (shown, heard, spread) in seen { #expect(abs(shown - heard) <= 0.2 + spread, "shown \(shown) s, heard \(heard) s: \(seen)") }
            #expect(seen[2].shown - seen[0].shown >= 0.6, "\(seen)")

            // Narrower while it plays: the next redraws fit the new width, and nothing is left of
            // the wider line (one status line on the screen).
            try pane.resize(28)
            Thread.sleep(forTimeInterval: 0.4)
            let narrow = try shot("narrower")
            #expect(narrow.screen.contains { $0.hasPrefix("[") && $0.count >= 20 }, "\(narrow.screen)")
            try pane.resize(40)

            // Typing: shown in the answer field only; Backspace removes a character.
            try pane.type("zebx")
            try pane.press("BSpace")
            try pane.type("r")
            #expect(Self.waitFor(2) { (try? pane.screen())?.contains { $0.hasSuffix("› zebr") } ?? false }, "\((try? pane.screen()) ?? [])")
            let typing = try pane.screen()
            check(typing, "typing")
            #expect(typing.filter { $0.contains("zeb") }.count == 1 && !typing.joined().contains("zebx"), "\(typing)")
            try pane.type("a")
            try pane.press("Enter")
            #expect(Self.waitFor(5) { cue("tap") != nil })
            let tap = try #require(cue("tap"))
            #expect(tap.fields["answer"] as? String == "zebra" && tap.fields["result"] as? String == "correct", "\(tap.fields)")
            #expect(Self.waitFor(2) { (try? pane.screen())?.contains { $0.contains("tap zebra: correct") } ?? false }, "\((try? pane.screen()) ?? [])")
            let answered = try pane.screen()
            check(answered, "answered")
            #expect(!answered.contains { $0.contains("›") } && !answered.contains { $0.trimmingCharacters(in: .whitespaces) == "zebra" }, "\(answered)")

            // The activity ends by itself; the terminal is as it was.
            #expect(Self.waitFor(10) { FileManager.default.fileExists(atPath: dir.file("after")) })
            let end = try pane.screen()
            check(end, "end")
            #expect((try? String(contentsOfFile: dir.file("status"), encoding: .utf8)) == "0\n", "\(end)")
            let before = try String(contentsOfFile: dir.file("before"), encoding: .utf8)
            #expect(before.count > 10 && (try? String(contentsOfFile: dir.file("after"), encoding: .utf8)) == before)
            #expect(Self.events(events).last?.type == "activityEnd")
        }
    }

    /// Ctrl-C while an answer is being typed: playback is canceled (status 130, "canceled" on
    /// the status line), and the terminal's settings are put back.
    @Test func ctrlCPutsTheTerminalBack() throws {
        try Self.inPane(width: 60, height: 8, arguments: { lesson, events in ["play", lesson, "--activity", "a", "--events", events] }) { pane, events, dir in
            #expect(Self.waitFor(10) { Self.events(events).contains { $0.type == "word" } })
            try pane.type("ze")
            #expect(Self.waitFor(2) { (try? pane.screen())?.contains { $0.hasSuffix("› ze") } ?? false }, "\((try? pane.screen()) ?? [])")
            try pane.press("C-c")
            #expect(Self.waitFor(10) { FileManager.default.fileExists(atPath: dir.file("after")) })
            let screen = try pane.screen()
            #expect(Self.statusLines(screen).count == 1 && Self.statusLines(screen)[0].contains("canceled"), "\(screen)")
            #expect((try? String(contentsOfFile: dir.file("status"), encoding: .utf8)) == "130\n")
            let before = try String(contentsOfFile: dir.file("before"), encoding: .utf8)
            #expect(before.count > 10 && (try? String(contentsOfFile: dir.file("after"), encoding: .utf8)) == before)
            #expect(Self.events(events).last?.type == "stopped")
        }
    }

    /// A chain on a narrow terminal: its real length as the total (the last cue's frame),
    /// the words cut to fit around the one being heard, one status line at a time.
    @Test func chainOnANarrowTerminal() throws {
        try Self.inPane(width: 32, height: 8, arguments: { lesson, events in ["play", lesson, "--chain", "prompt", "--events", events] }) { pane, events, dir in
            var screens: [[String]] = []
            while !FileManager.default.fileExists(atPath: dir.file("after")), screens.count < 200 {
                screens.append(try pane.screen())
                Thread.sleep(forTimeInterval: 0.05)
            }
            screens.append(try pane.screen())
            #expect((try? String(contentsOfFile: dir.file("status"), encoding: .utf8)) == "0\n")
            let last = try #require(Self.events(events).last)
            let total = Double(try #require(last.frame)) / 48000
            var words = Set<String>()
            for screen in screens where !Self.statusLines(screen).isEmpty {
                #expect(Self.statusLines(screen).count == 1, "\(screen)")
                for line in screen { #expect(line.count < 32, "\(line)") }
                let status = Self.statusLines(screen)[0]
                let clock = try #require(Self.clock(status))
                #expect(clock.total.map { abs($0 - total) < 0.051 } == true, "total \(total) s: \(status)")
                #expect(clock.seconds <= total + 0.05)
                for word in ["I", "can", "see", "the", "big", "red", "hat"] where status.split(separator: " ").contains(Substring(word)) { words.insert(word) }
            }
            #expect(words.count >= 5, "the words went by: \(words)")
            #expect(screens.count >= 20, "watched it play")
        }
    }

    /// Keys on a chain: space pauses (the clock stands, the view says so); + while paused is
    /// heard with the resume (1.25×, shown then); → goes to the next word (its cue frame, from
    /// the events file); − while playing goes back to 1× (shown once heard); and the chain
    /// still ends well.
    @Test func keysPauseResumeAndSkipAWord() throws {
        try Self.inPane(width: 60, height: 8, arguments: { lesson, events in ["play", lesson, "--chain", "prompt", "--events", events] }) { pane, events, dir in
            func waitFor(_ type: String, after count: Int = 0) -> [LivePlay.Event] {
                for _ in 0..<200 {
                    let seen = Self.events(events)
                    if seen.dropFirst(count).contains(where: { $0.type == type }) { return seen }
                    Thread.sleep(forTimeInterval: 0.05)
                }
                Issue.record("no \(type) event")
                return Self.events(events)
            }
            _ = waitFor("word")
            try pane.type(" ")
            let paused = waitFor("paused")
            Thread.sleep(forTimeInterval: 0.2)
            let first = Self.statusLines(try pane.screen())
            Thread.sleep(forTimeInterval: 0.4)
            let second = Self.statusLines(try pane.screen())
            #expect(first.first?.contains("paused") == true, "\(first)")
            #expect(first == second, "the clock stands while paused: \(first) then \(second)")
            try pane.type("+")
            Thread.sleep(forTimeInterval: 0.2)
            try pane.type(" ")
            let resumed = waitFor("resumed", after: paused.count)
            let faster = resumed.dropFirst(paused.count).filter { $0.type == "speedChanged" }
            #expect(faster.map { $0.fields["speed"] as? Double } == [1.25], "the speed is heard with the resume")
            #expect(Self.waitFor(2) { (try? pane.screen())?.contains { $0.contains("speed 1.25×") } ?? false }, "\((try? pane.screen()) ?? [])")
            try pane.press("Right")
            let moved = waitFor("seeked", after: resumed.count)
            try pane.type("-")
            let slower = waitFor("speedChanged", after: moved.count)
            #expect(slower.last { $0.type == "speedChanged" }?.fields["speed"] as? Double == 1)
            #expect(Self.waitFor(2) { (try? pane.screen())?.contains { $0.contains("speed 1×") } ?? false }, "\((try? pane.screen()) ?? [])")
            while !FileManager.default.fileExists(atPath: dir.file("after")) { Thread.sleep(forTimeInterval: 0.05) }
            #expect((try? String(contentsOfFile: dir.file("status"), encoding: .utf8)) == "0\n")
            let all = Self.events(events)
            let seek = try #require(moved.last { $0.type == "seeked" })
            // → lands on the start of the first word after the frame heard when it was pressed:
            // a word's frame, later than every word delivered before it.
            let wordsBefore = all.prefix { $0.type != "seeked" }.filter { $0.type == "word" }.compactMap(\.frame)
            let wordFrames = Set(all.filter { $0.type == "word" }.compactMap(\.frame))
            #expect(wordFrames.contains(try #require(seek.frame)) && (wordsBefore.max() ?? 0) < seek.frame!, "\(seek.fields)")
            #expect(all.last?.type == "chainEnd")
        }
    }

    /// ← and → move the highlight among the clip's words, each shown once under its own clip's
    /// name (the line used to add the words heard again: `p2  the big the big see`, a p1 word
    /// under p2); m says what it did.
    @Test func arrowsMoveTheHighlightAndMuteSaysSo() throws {
        try Self.inPane(width: 80, height: 8, arguments: { lesson, events in ["play", lesson, "--chain", "prompt", "--events", events] }) { pane, events, dir in
            var texts: [String: Set<String>] = [:]
            for (clip, file) in [("p1", "part1"), ("p2", "part2")] {
                let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Repo.path("Timings/lessons/sight-words/\(file).json"))))
                let words = try #require((object as? [String: Any])?["words"] as? [[String: Any]])
                texts[clip] = Set(words.compactMap { $0["text"] as? String })
            }
            func seen(_ type: String, atLeast count: Int) -> Bool {
                Self.waitFor(10) { Self.events(events).filter { $0.type == type }.count >= count }
            }
            // Into p2 (p1 has three words), then back twice.
            #expect(seen("word", atLeast: 5))
            try pane.press("Left")
            #expect(seen("seeked", atLeast: 1))
            Thread.sleep(forTimeInterval: 0.15)
            try pane.press("Left")
            #expect(seen("seeked", atLeast: 2))
            for _ in 0..<4 {
                Thread.sleep(forTimeInterval: 0.2)
                let line = try #require(Self.statusLines(try pane.screen()).first)
                let rest = line.split(separator: "] ", maxSplits: 1).last.map(String.init) ?? ""
                let parts = rest.components(separatedBy: "  ").filter { !$0.isEmpty }
                guard parts.count >= 2, let clip = texts[parts[0]] else { continue }
                let shown = parts[1].split(separator: " ").map(String.init).filter { $0 != "…" }
                #expect(Set(shown).count == shown.count, "a word shown twice: \(line)")
                #expect(shown.allSatisfy { clip.contains($0) }, "a word of another clip under \(parts[0]): \(line)")
            }
            try pane.type("m")
            #expect(Self.waitFor(2) { (try? pane.screen())?.contains { $0.contains("music muted") } ?? false }, "\((try? pane.screen()) ?? [])")
            try pane.type("m")
            #expect(Self.waitFor(2) { (try? pane.screen())?.contains { $0.contains("music on") } ?? false }, "\((try? pane.screen()) ?? [])")
        }
    }

    /// An activity answered at the terminal says it waits for an answer before a key is
    /// pressed, and space (with nothing typed) pauses and resumes it, as on a chain.
    @Test func anActivityAsksForItsAnswerAndSpacePauses() throws {
        try Self.inPane(width: 80, height: 8, arguments: { lesson, events in ["play", lesson, "--activity", "a", "--events", events] }) { pane, events, dir in
            #expect(Self.waitFor(10) { Self.events(events).contains { $0.type == "word" } })
            #expect(Self.waitFor(2) { (try? pane.screen())?.contains { $0.contains("type an answer") } ?? false }, "\((try? pane.screen()) ?? [])")
            try pane.type(" ")
            #expect(Self.waitFor(5) { Self.events(events).contains { $0.type == "paused" } }, "space did not pause")
            try pane.type(" ")
            #expect(Self.waitFor(5) { Self.events(events).contains { $0.type == "resumed" } }, "space did not resume")
            try pane.type("zebra")
            try pane.press("Enter")
            #expect(Self.waitFor(10) { Self.events(events).contains { $0.type == "tap" && $0.fields["answer"] as? String == "zebra" } })
            try pane.type("close")
            try pane.press("Enter")
            #expect(Self.waitFor(15) { FileManager.default.fileExists(atPath: dir.file("after")) })
        }
    }

    /// `--speed 2` from the first frame: no event says the speed, and between cues the clock
    /// still runs at two seconds a second. A 3 s tone has no cue between its start and its end.
    @Test func clockRunsAtTheSpeedGivenAtStart() throws {
        let tone = { (dir: TempDir) in try dir.soxLesson(clip: "long", chain: "long", synth: ["3", "sine", "440", "vol", "0.5"]) }
        try Self.inPane(width: 60, height: 8, lesson: tone, arguments: { lesson, events in ["play", lesson, "--chain", "long", "--speed", "2", "--events", events] }) { pane, events, dir in
            #expect(Self.waitFor(10) { Self.events(events).contains { $0.type == "clipStart" } })
            let start = try #require(Self.events(events).first { $0.type == "clipStart" })
            let startFrame = try #require(start.frame)
            var seen: [(shown: Double, heard: Double, spread: Double)] = []
            for pause in [0.3, 0.5] {
                Thread.sleep(forTimeInterval: pause)
                let before = monotonicNanoseconds()
                let screen = try pane.screen()
                let after = monotonicNanoseconds()
                let clock = try #require(Self.clock(Self.statusLines(screen).first ?? ""), "\(screen)")
                // The timeline heard at the capture: from the tone's start, two frames a frame.
                let at = before / 2 + after / 2
                seen.append((clock.seconds, Double(startFrame) / 48000 + 2 * Double(at - start.heard) / 1e9, Double(after - before) / 1e9))
            }
            #expect(!Self.events(events).contains { $0.type == "clipEnd" }, "the test must look before the tone's end")
            // Within a redraw (0.1 s of wall time, 0.2 s of timeline) and the display's rounding.
            for (shown, heard, spread) in seen { #expect(abs(shown - heard) <= 0.3 + spread, "shown \(shown) s, heard \(heard) s: \(seen)") }
            #expect(seen[1].shown - seen[0].shown >= 0.8, "0.5 s apart at 2×: \(seen)")
            #expect(Self.waitFor(10) { FileManager.default.fileExists(atPath: dir.file("after")) })
            #expect((try? String(contentsOfFile: dir.file("status"), encoding: .utf8)) == "0\n")
        }
    }
}
