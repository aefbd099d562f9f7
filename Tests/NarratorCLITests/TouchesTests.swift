import Foundation
import NarratorTestSupport
import NarratorTestTraits
import NarratorTouches
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `narrator serve --touches FILE` and `narrator touches FILE` (docs/touches.md): every touch a
/// row of an SQLite file, read back with the sqlite3 command-line tool (SQLite's own reading,
/// not this code's), the report checked against counts made from what the test sent, and the
/// file whole after a SIGKILL in the middle of a burst of 10,000 touches. The daemon plays
/// into a file in real time (`--output file`): no sound server.
@Suite(.serialized, .requires(PulseTestServer.findExecutable("sqlite3") != nil, "needs the sqlite3 command-line tool (make deps)"))
struct TouchesTests {
    static let library = Repo.path("Timings/lessons")

    static func daemon(_ dir: TempDir, touches: String) throws -> Daemon {
        try Daemon(dir: dir, library: library, arguments: ["--output", "file", "--device", dir.file("heard-\(UUID().uuidString.prefix(8)).wav"), "--touches", touches])
    }

    /// A daemon logging to `touches.sqlite` in `dir`, and a client that plays the picture
    /// dictionary's popup (request "play"), once it has started.
    static func popup(in dir: TempDir) throws -> (Daemon, Conversation, String) {
        let file = dir.file("touches.sqlite")
        let daemon = try Self.daemon(dir, touches: file)
        let talk = try Conversation(daemon.socket)
        talk.send(#"{"id":"play","op":"play","lesson":"picture-dictionary.json","activity":"word-popup"}"#)
        _ = try talk.wait("the popup's start") { $0.id == "play" && $0.type == "start" }
        return (daemon, talk, file)
    }

    /// `sqlite3 FILE SQL`: its rows, columns split at tabs (NULL reads as empty).
    static func sqlite(_ file: String, _ sql: String) throws -> [[String]] {
        let result = try runTool("sqlite3", ["-batch", "-separator", "\t", file, sql])
        try #require(result.status == 0, "sqlite3 \(file) '\(sql)': \(result.stderr)")
        return result.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    static func count(_ file: String) throws -> Int {
        Int(try sqlite(file, "SELECT count(*) FROM touches").first?.first ?? "") ?? -1
    }

    /// The words of a timing file (start, end, text per line), read here without the code.
    static func words(of timings: String) throws -> [String] {
        try String(contentsOfFile: timings, encoding: .utf8).split(separator: "\n").map { String($0.split(separator: "\t")[2]) }
    }

    /// `narrator touches ARGUMENTS --json`, parsed.
    static func report(_ arguments: [String]) throws -> [String: Any] {
        let result = try run(Repo.narrator, ["touches"] + arguments + ["--json"])
        try #require(result.status == 0, "narrator touches \(arguments): \(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    // MARK: A scripted session

    /// The picture dictionary's popup as a child uses it: an answer the intro ignores, words
    /// tapped to be said (the popup going on after each), replay and close. Every touch is a
    /// row as sent (the word's text from its timing file), each tap with the result and frame
    /// its `tap` event told the client; the report lists the words most touched, counted from
    /// what was sent.
    @Test(.timeLimit(.minutes(3))) func theDictionarySessionIsLoggedAndReported() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let (daemon, talk, file) = try Self.popup(in: dir)
        func touch(_ id: String, _ request: String, answer: String) throws {
            #expect(try talk.ask(#"{"id":"\#(id)",\#(request),"request":"play"}"#, id: id).type == "finished")
            _ = try talk.wait("the tap event of \(answer)") { $0.id == "play" && $0.type == "tap" && $0.fields["answer"] as? String == answer }
        }
        try touch("t1", #""op":"tap","answer":"banana""#, answer: "banana")
        // By index in apple.txt: fruit four times, apple three, trees twice, A once.
        let said = [3, 0, 3, 7, 0, 3, 1, 7, 0, 3]
        for (n, index) in said.enumerated() {
            let end = try talk.ask(#"{"id":"say\#(n)","op":"say","request":"play","clip":"apple","word":\#(index),"then":"resume"}"#, id: "say\(n)")
            #expect(end.type == "finished", "say \(index): \(end.fields)")
        }
        try touch("t2", #""op":"replay""#, answer: "replay")
        try touch("t3", #""op":"close""#, answer: "close")
        #expect(try talk.wait("the popup's end") { $0.id == "play" && $0.isTerminal }.type == "finished")
        #expect(daemon.stop() == 0)
        let after = Int64(Date().timeIntervalSince1970 * 1000)

        // What SQLite reads, row by row, against what was sent and what the client was told.
        let words = try Self.words(of: Repo.path("Timings/lessons/dictionary/apple.txt"))
        let taps = talk.events.filter { $0.id == "play" && $0.type == "tap" }
        #expect(taps.map { $0.fields["answer"] as? String } == ["banana", "replay", "close"])
        #expect(taps.first?.fields["result"] as? String == "ignored")
        let rows = taps.map { tap -> [String] in
            let answer = tap.fields["answer"] as? String ?? ""
            return [["replay", "close"].contains(answer) ? answer : "answer", "", "", "", answer, tap.fields["result"] as? String ?? ""]
        }
        let expected = rows.prefix(1) + said.map { ["say", "apple", "\($0)", words[$0], "", ""] } + rows.suffix(2)
        #expect(try Self.sqlite(file, "SELECT kind, clip, word_index, word_text, answer, result FROM touches ORDER BY id") == Array(expected))
        let common = try Self.sqlite(file, "SELECT DISTINCT lesson, chain, activity, playback, run_ms FROM touches")
        #expect(common.count == 1 && common.first?.prefix(4) == ["picture-dictionary.json", "", "word-popup", "p1"], "\(common)")
        let times = try Self.sqlite(file, "SELECT min(time_ms), max(time_ms), min(run_ms) FROM touches").first ?? []
        let (first, last, runMs) = (Int64(times[0]) ?? 0, Int64(times[1]) ?? 0, Int64(times[2]) ?? 0)
        #expect(before <= runMs && runMs <= first && first <= last && last <= after, "\(times) within \(before)…\(after)")
        // The taps' frames are those their events gave.
        let tapFrames = try Self.sqlite(file, "SELECT frame FROM touches WHERE kind != 'say' ORDER BY id").map { Int($0[0]) }
        #expect(tapFrames == taps.map(\.frame))

        // The report: the words, most touched first, counted from `said`.
        // A word as heard: "trees." is listed as "trees", "A" as "a".
        var counts: [String: Int] = [:]
        for index in said { counts[words[index].lowercased().trimmingCharacters(in: .punctuationCharacters), default: 0] += 1 }
        let ranked = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        let report = try Self.report([file, "--lesson", "picture-dictionary.json"])
        #expect(report["touches"] as? Int == said.count + taps.count)
        let listed = (report["words"] as? [[String: Any]] ?? []).map { ($0["text"] as? String ?? "", $0["touches"] as? Int ?? 0) }
        #expect(listed.map(\.0) == ranked.map(\.key) && listed.map(\.1) == ranked.map(\.value), "\(listed)")
        #expect((report["wrongAnswers"] as? [Any])?.isEmpty == true)
        #expect((try Self.report([file, "--lesson", "sample.json"])["touches"] as? Int) == 0)
        // As text: the heading, then "4  fruit" first.
        let text = try run(Repo.narrator, ["touches", file])
        #expect(text.status == 0)
        let lines = text.stdout.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        #expect(lines.first == "\(said.count + taps.count) touches in \(file)")
        #expect(lines.contains("4 fruit") && lines.contains("1 a"), "\(text.stdout)")
    }

    /// The sight-words activity answered wrong, then right, at both steps: the answers most
    /// often wrong, each beside the answers its step had, as the test counts them from what it
    /// tapped and the lesson's right answers; `--since` and `--limit` filter.
    @Test(.timeLimit(.minutes(3))) func wrongAnswersAreCountedPerStep() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let file = dir.file("touches.sqlite")
        let daemon = try Self.daemon(dir, touches: file)
        let talk = try Conversation(daemon.socket)
        talk.send(#"{"id":"play","op":"play","lesson":"homer-sight-words.json","activity":"sight-words","seed":7}"#)
        _ = try talk.wait("the activity's start") { $0.id == "play" && $0.type == "start" }
        let lesson = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.library + "/homer-sight-words.json"))) as? [String: Any])
        let steps = try #require(((lesson["activities"] as? [String: Any])?["sight-words"] as? [String: Any])?["steps"] as? [[String: Any]])
        let right = steps.map { $0["answer"] as? String ?? "" }
        let script = [["sea", "saw", right[0]], ["cat", right[1]]]
        var n = 0
        for (step, answers) in script.enumerated() {
            if step > 0 { _ = try talk.wait("step \(step)'s start") { $0.type == "stepStart" && $0.fields["step"] as? Int == step } }
            for answer in answers {
                n += 1
                #expect(try talk.ask(#"{"id":"a\#(n)","op":"tap","request":"play","answer":"\#(answer)"}"#, id: "a\(n)").type == "finished")
                let heard = try talk.wait("the tap event of \(answer)") { $0.type == "tap" && $0.fields["answer"] as? String == answer }
                #expect(heard.fields["result"] as? String == (answer == right[step] ? "correct" : "wrong"), "\(heard.fields)")
            }
        }
        _ = try talk.wait("the activity's end") { $0.id == "play" && $0.isTerminal }
        #expect(daemon.stop() == 0)

        let rows = try Self.sqlite(file, "SELECT kind, answer, result, step FROM touches ORDER BY id")
        let expectedRows = script.enumerated().flatMap { step, answers in
            answers.map { ["answer", $0, $0 == right[step] ? "correct" : "wrong", "\(step)"] }
        }
        #expect(rows == expectedRows)
        // Counted here: each wrong answer once, beside its step's answers.
        var expected: [(answer: String, step: Int, wrong: Int, answers: Int)] = []
        for (step, answers) in script.enumerated() {
            for answer in answers where answer != right[step] { expected.append((answer, step, 1, answers.count)) }
        }
        expected.sort { ($0.wrong, $0.answers) != ($1.wrong, $1.answers) ? ($0.wrong, $0.answers) > ($1.wrong, $1.answers) : ($0.step, $0.answer) < ($1.step, $1.answer) }
        func listed(_ report: [String: Any]) -> [String] {
            (report["wrongAnswers"] as? [[String: Any]] ?? []).map {
                "\($0["answer"] ?? "") \($0["step"] ?? "") \($0["wrong"] ?? "") \($0["answers"] ?? "") \($0["lesson"] ?? "") \($0["activity"] ?? "")"
            }
        }
        let all = expected.map { "\($0.answer) \($0.step) \($0.wrong) \($0.answers) homer-sight-words.json sight-words" }
        #expect(listed(try Self.report([file])) == all)
        #expect(listed(try Self.report([file, "--limit", "1"])) == Array(all.prefix(1)))
        #expect(listed(try Self.report([file, "--since", "2000-01-01"])) == all)
        let tomorrow = ISO8601DateFormatter().string(from: Date().addingTimeInterval(86400))
        let later = try Self.report([file, "--since", tomorrow])
        #expect(later["touches"] as? Int == 0 && listed(later).isEmpty)
    }

    // MARK: Killed mid-write

    /// 10,000 touches (`say`) in windows of 250 (under the queue's 1024: none is dropped), the
    /// daemon killed with SIGKILL once half are answered, in the middle of three windows sent
    /// at once: SQLite
    /// finds the file whole, with no more rows than were sent and at least as many as the
    /// client had been answered `"logged":true` (counted here, as the answers came) — an
    /// answered touch is never lost. Restarted on the same file, the daemon appends.
    @Test(.timeLimit(.minutes(5))) func aKilledDaemonLosesNoAnsweredTouchAndARestartAppends() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (daemon, talk, file) = try Self.popup(in: dir)
        let burst = 10_000, window = 250
        var sent = 0, answered = 0
        func say(_ n: Int) -> String { #"{"id":\#(n),"op":"say","request":"play","clip":"apple","word":\#(n % 8)}"# }
        func isAnswer(_ event: ReceivedEvent) -> Bool { event.type == "finished" && Int(event.id) != nil }
        while sent < burst / 2 {
            talk.send((sent..<sent + window).map(say).joined(separator: "\n"))
            sent += window
            answered += try talk.count(window, "a window's answers", isAnswer)
        }
        // Three windows go out at once (750, still under the queue's 1024), and the kill comes
        // once half of one is answered: the rest is being taken, written and answered.
        talk.send((sent..<sent + 3 * window).map(say).joined(separator: "\n"))
        sent += 3 * window
        answered += try talk.count(window / 2, "half a window's answers", isAnswer)
        daemon.crash()

        let answers = talk.events.filter(isAnswer)
        let logged = answers.filter { $0.fields["logged"] as? Bool == true }.count
        #expect(answers.count == answered && answers.allSatisfy { $0.fields["logged"] is Bool }, "every answer says whether its touch is logged")
        #expect(try Self.sqlite(file, "PRAGMA integrity_check") == [["ok"]])
        let rows = try Self.count(file)
        print("killed with \(answered) of \(sent) touches answered (\(logged) logged): \(rows) rows")
        #expect(rows <= sent)
        #expect(rows >= logged, "a touch answered as logged was lost")
        // Nothing was dropped and the writer was free: an answer not logged means a commit
        // slower than the daemon waits (1 s), which a loaded machine may see once in a while.
        #expect(logged >= answered * 9 / 10, "\(answered - logged) of \(answered) answered without their touch committed")
        #expect(try Self.sqlite(file, "SELECT count(*) FROM touches WHERE id > \(rows)") == [["0"]], "ids 1…\(rows), none skipped")

        // Again on the same file: it appends after the last row.
        try daemon.start()
        let again = try Conversation(daemon.socket)
        again.send(#"{"id":"play","op":"play","lesson":"picture-dictionary.json","activity":"word-popup"}"#)
        _ = try again.wait("the popup's start again") { $0.id == "play" && $0.type == "start" }
        for n in 0..<5 { #expect(try again.ask(say(n), id: "\(n)").type == "finished") }
        #expect(daemon.stop() == 0)
        #expect(try Self.sqlite(file, "PRAGMA integrity_check") == [["ok"]])
        #expect(try Self.count(file) == rows + 5)
        let runs = try Self.sqlite(file, "SELECT run_ms, count(*), min(id) FROM touches GROUP BY run_ms ORDER BY run_ms")
        #expect(runs.count == 2 && runs.last?[1] == "5" && runs.last?[2] == "\(rows + 1)", "\(runs)")
    }

    // MARK: Floods

    /// A client that floods says as fast as it can: every one is answered (a touch dropped at
    /// once, `"logged":false`), the daemon's threads and memory stay as they were, and after
    /// SIGTERM every touch is a row or counted as dropped on stderr, none unaccounted for.
    @Test(.timeLimit(.minutes(5))) func aFloodIsBoundedAndEveryTouchAccountedFor() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (daemon, talk, file) = try Self.popup(in: dir)
        let size = try #require(ProcessSize(pid: daemon.process.processIdentifier))
        let flood = 10_000
        talk.send((0..<flood).map { #"{"id":\#($0),"op":"say","request":"play","clip":"apple","word":\#($0 % 8)}"# }.joined(separator: "\n"))
        #expect(try talk.count(flood, "the flood's answers") { $0.type == "finished" && Int($0.id) != nil } == flood)
        let flooded = try #require(ProcessSize(pid: daemon.process.processIdentifier))
        print("daemon before the flood: \(size.threads) threads, \(size.rssKiB) KiB; after: \(flooded.threads) threads, \(flooded.rssKiB) KiB (peak \(flooded.peakKiB))")
        #expect(flooded.threads == size.threads)
        #expect(flooded.rssKiB - size.rssKiB < 64 * 1024, "the queue holds 1024 touches at most")
        #expect(daemon.stop() == 0)
        let rows = try Self.count(file)
        // "touches: W written to FILE, D dropped, F failed, N not written", when any was lost.
        let summary = daemon.stderr.split(separator: "\n").last { $0.contains("touches: ") && $0.contains(" written to ") }
        var dropped = 0
        if let summary {
            let pattern = try NSRegularExpression(pattern: "touches: ([0-9]+) written to .*, ([0-9]+) dropped, ([0-9]+) failed, ([0-9]+) not written")
            let text = String(summary)
            let match = try #require(pattern.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)), "\(summary)")
            let numbers = (1...4).map { Int((text as NSString).substring(with: match.range(at: $0))) ?? -1 }
            #expect(numbers[0] == rows && numbers[2] == 0 && numbers[3] == 0, "\(summary)")
            dropped = numbers[1]
        }
        print("flood of \(flood): \(rows) rows, \(dropped) dropped")
        #expect(rows + dropped == flood, "\(daemon.stderr)")
        // Every touch answered as logged is a row; every one dropped was answered not logged.
        let logged = talk.events.filter { Int($0.id) != nil && $0.type == "finished" && $0.fields["logged"] as? Bool == true }.count
        #expect(rows >= logged && flood - logged >= dropped, "\(logged) answered as logged")
    }

    /// The writer held up (another process holds the database's write lock): what arrives
    /// meanwhile waits in the queue up to its 1024, the rest is dropped at once and counted;
    /// the lock released, the queue is written out. `record` never waits; each touch taken is
    /// called back once, after its transaction, and a dropped one never.
    @Test(.timeLimit(.minutes(2))) func aFullQueueDropsAndCounts() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let file = dir.file("touches.sqlite")
        let lines = LockedLines()
        let log = try TouchLog(path: file) { lines.append($0) }
        let source = TouchLog.Source(lesson: "l.json", chain: "c", activity: nil, playback: "p1")
        let alone = monotonicNanoseconds()
        let first = Tally()
        #expect(log.record(TouchLog.Touch(.say, source: source, clip: "a", wordIndex: 0, wordText: "first"), committed: first.add))
        while first.calls < 1 { usleep(100) }
        let committedAlone = monotonicNanoseconds() - alone
        let rowsThen = try Self.count(file)
        #expect(first.committed == 1 && log.counts.written == 1 && rowsThen == 1, "called back once the row is in the file")
        let holder = try LockHolder(file)
        let start = monotonicNanoseconds()
        let tries = 3000
        var taken = 0
        let tally = Tally()
        for n in 0..<tries where log.record(TouchLog.Touch(.say, source: source, clip: "a", wordIndex: n % 8, wordText: "w\(n)"), committed: tally.add) { taken += 1 }
        let took = monotonicNanoseconds() - start
        print("\(tries) records while the writer waits: \(taken) taken, \(Double(took) / 1e6) ms")
        // The queue's capacity, the one being written (which waits for the lock) included.
        #expect(taken == TouchLog.capacity, "\(taken)")
        #expect(log.counts.dropped == tries - taken)
        #expect(took < 1_000_000_000, "record waited on the disk")
        #expect(tally.calls == 0, "called back while nothing could be committed")
        try holder.release()
        let released = monotonicNanoseconds()
        log.finish(within: .seconds(60))
        print("a touch alone committed \(Double(committedAlone) / 1e6) ms after record; the full queue written out \(Double(monotonicNanoseconds() - released) / 1e6) ms after the lock went")
        let counts = log.counts
        #expect(counts.waiting == 0)
        #expect(counts.written + counts.failed == 1 + taken && counts.dropped == tries - taken)
        // Each touch taken called back once, as it went; a dropped one never.
        #expect(tally.calls == taken && tally.committed == counts.written - 1, "\(tally.calls) calls, \(tally.committed) committed")
        #expect(try Self.count(file) == counts.written, "the rows: those written")
        #expect(lines.all.contains { $0.contains("dropped") }, "\(lines.all)")
    }

    /// A touch's request is answered only once its touch is in the file. With another process
    /// holding the log's write lock, a tap and a say are heard at once (the `tap` event goes out
    /// to the client) but not answered; the lock released, both are answered `"logged":true`,
    /// and the sqlite3 tool finds their rows as the answers come. Held for longer than the
    /// daemon waits (1 s), a say is answered anyway, once, `"logged":false`. (Before, every
    /// touch was answered at once, whatever the file.)
    @Test(.timeLimit(.minutes(2))) func aTouchIsAnsweredOnlyOnceItIsInTheFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let (daemon, talk, file) = try Self.popup(in: dir)
        func answer(_ id: String) -> (ReceivedEvent) -> Bool { { $0.id == id && $0.isTerminal } }
        func logged(_ event: ReceivedEvent) -> Bool? { event.fields["logged"] as? Bool }

        var holder = try LockHolder(file)
        talk.send(#"{"id":"t1","op":"tap","request":"play","answer":"banana"}"#)
        talk.send(#"{"id":"s1","op":"say","request":"play","clip":"apple","word":3,"then":"resume"}"#)
        let sent = monotonicNanoseconds()
        let early = talk.within(0.3) { $0.id == "s1" && $0.isTerminal }
        #expect(early.isEmpty, "answered before the touch could be committed: \(early.map(\.fields))")
        _ = try talk.wait("the tap event, while the log is locked") { $0.id == "play" && $0.type == "tap" }
        try holder.release()
        let released = monotonicNanoseconds()
        var answered = 0
        for id in ["t1", "s1"] {
            let end = try talk.wait("the answer to \(id)", answer(id))
            answered += 1
            #expect(end.type == "finished" && logged(end) == true, "\(id): \(end.fields)")
            #expect(try Self.count(file) >= answered, "\(id) answered before its row was in the file")
        }
        print("answers held \(Double(released - sent) / 1e6) ms while the log was locked, given once it was free")
        #expect(try Self.sqlite(file, "SELECT kind, answer, word_index FROM touches ORDER BY kind") == [["answer", "banana", ""], ["say", "", "3"]])

        holder = try LockHolder(file)
        let asked = monotonicNanoseconds()
        let late = try talk.ask(#"{"id":"s2","op":"say","request":"play","clip":"apple","word":0,"then":"resume"}"#, id: "s2")
        let waited = Double(monotonicNanoseconds() - asked) / 1e9
        #expect(late.type == "finished" && logged(late) == false, "\(late.fields)")
        #expect(waited >= 0.9 && waited < 10, "answered after \(waited) s; the daemon waits 1 s")
        try holder.release()
        #expect(talk.within(0.5) { $0.id == "s2" }.isEmpty, "s2 answered twice")
        #expect(try talk.ask(#"{"id":"s3","op":"say","request":"play","clip":"apple","word":1,"then":"resume"}"#, id: "s3").fields["logged"] as? Bool == true)
        // s2 may have been written after its answer; it was not promised.
        #expect(try Self.sqlite(file, "SELECT count(*) FROM touches WHERE word_index = 1") == [["1"]])
        #expect(daemon.stop() == 0)
    }

    /// What waiting for the commit adds to a touch's answer: 20 taps, then 300 says, one at a
    /// time, each sent once the last was answered, to a daemon with a touch log and to one
    /// without; every answer of the first `"logged":true`, and its row in the file. The figures
    /// go in docs/touches.md (a tap's answer with a log waits for the activity to hear it).
    @Test(.timeLimit(.minutes(3))) func aTouchAloneIsAnsweredOnceCommitted() throws {
        let says = 300
        let taps = 20
        var figures: [String: (p50: Double, p99: Double)] = [:]
        for logging in [true, false] {
            let dir = TempDir()
            defer { dir.remove() }
            let file = dir.file("touches.sqlite")
            let daemon = try Daemon(dir: dir, library: Self.library, arguments: ["--output", "file", "--device", dir.file("heard.wav")] + (logging ? ["--touches", file] : []))
            let talk = try Conversation(daemon.socket)
            talk.send(#"{"id":"play","op":"play","lesson":"picture-dictionary.json","activity":"word-popup"}"#)
            _ = try talk.wait("the popup's start") { $0.id == "play" && $0.type == "start" }
            var times: [Double] = []
            var logged = 0
            // The taps first, while the popup plays: a say without `then` leaves it paused, and
            // a tap is heard (and answered as logged) only once it plays again.
            var tapTimes: [Double] = []
            for n in 0..<taps {
                let start = monotonicNanoseconds()
                let end = try talk.ask(#"{"id":"t\#(n)","op":"tap","request":"play","answer":"banana"}"#, id: "t\(n)")
                tapTimes.append(Double(monotonicNanoseconds() - start) / 1e6)
                #expect(end.type == "finished", "\(end.fields)")
                if end.fields["logged"] as? Bool == true { logged += 1 }
            }
            for n in 0..<says {
                let start = monotonicNanoseconds()
                let end = try talk.ask(#"{"id":\#(n),"op":"say","request":"play","clip":"apple","word":\#(n % 8)}"#, id: "\(n)")
                times.append(Double(monotonicNanoseconds() - start) / 1e6)
                #expect(end.type == "finished")
                if end.fields["logged"] as? Bool == true { logged += 1 }
            }
            #expect(daemon.stop() == 0)
            times.sort()
            tapTimes.sort()
            figures[logging ? "log" : "none"] = (times[says / 2], times[says * 99 / 100])
            figures[logging ? "tap log" : "tap none"] = (tapTimes[taps / 2], tapTimes[taps - 1])
            if logging {
                #expect(logged == says + taps, "\(says + taps - logged) answered without their touch committed")
                #expect(try Self.count(file) == says + taps)
            } else {
                #expect(logged == 0, "no log, nothing logged")
            }
        }
        let (log, none) = (figures["log"]!, figures["none"]!)
        let format = { (value: Double) in value.formatted(.number.precision(.fractionLength(2))) }
        print("a say answered, with a touch log: p50 \(format(log.p50)) ms, p99 \(format(log.p99)) ms; without: p50 \(format(none.p50)) ms, p99 \(format(none.p99)) ms")
        let (tapLog, tapNone) = (figures["tap log"]!, figures["tap none"]!)
        print("a tap answered, with a touch log: median \(format(tapLog.p50)) ms, most \(format(tapLog.p99)) ms; without: median \(format(tapNone.p50)) ms, most \(format(tapNone.p99)) ms")
    }

    // MARK: Errors

    /// A file that is not a touch log is refused, by `serve --touches` before it listens and by
    /// `touches`, in one line naming it, exit 1, the file untouched; a bad `--since` or
    /// `--limit` likewise.
    /// Spellings of one word in different timing files ("Trees.", "trees", "TREES,") are one
    /// word in the report; "it’s" with a curly apostrophe is "it's". Rows written with the
    /// sqlite3 tool into a copy of the sample log.
    @Test func spellingsOfAWordAreOneWord() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let file = dir.file("touches.sqlite")
        try FileManager.default.copyItem(atPath: Repo.path("Timings/touches/picture-dictionary.sqlite"), toPath: file)
        let before = try Self.report([file, "--limit", "100"])
        let trees = (before["words"] as? [[String: Any]] ?? []).first { $0["text"] as? String == "trees" }?["touches"] as? Int ?? 0
        var inserts: [String] = []
        for (text, times) in [("Trees.", 3), ("TREES,", 2), ("it’s", 1), ("It''s", 1)] {
            for _ in 0..<times {
                inserts.append("INSERT INTO touches (time_ms, run_ms, kind, lesson, playback, clip, word_index, word_text) VALUES (1, 1, 'say', 'x.json', 'p', 'c', 0, '\(text)');")
            }
        }
        _ = try Self.sqlite(file, inserts.joined())
        let report = try Self.report([file, "--limit", "100"])
        let listed = Dictionary(uniqueKeysWithValues: (report["words"] as? [[String: Any]] ?? []).map { ($0["text"] as? String ?? "", $0["touches"] as? Int ?? 0) })
        #expect(listed["trees"] == trees + 5 && listed["it's"] == 2, "\(listed)")
        #expect(listed.keys.allSatisfy { $0 == $0.lowercased() && !$0.hasSuffix(".") && !$0.hasSuffix(",") }, "\(listed)")
    }

    @Test func filesThatAreNotTouchLogsAreRefused() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let text = dir.write("notes.sqlite", "not a database, a note\n" + String(repeating: "x", count: 2000))
        let other = dir.file("other.sqlite")
        _ = try Self.sqlite(other, "CREATE TABLE scores (id INTEGER PRIMARY KEY, points INTEGER); INSERT INTO scores (points) VALUES (3)")
        let newer = dir.file("newer.sqlite")
        _ = try Self.sqlite(newer, "PRAGMA application_id = \(TouchLog.applicationID); PRAGMA user_version = 9; CREATE TABLE touches (id INTEGER PRIMARY KEY)")
        let empty = dir.write("empty.sqlite", "")
        let cases: [(file: String, says: String)] = [
            (text, "not an SQLite database"),
            (other, "not a touch log"),
            (newer, "a touch log of schema 9, newer than this narrator's (1)"),
        ]
        for (file, says) in cases {
            let before = try Data(contentsOf: URL(fileURLWithPath: file))
            let serve = try run(Repo.narrator, ["serve", "--library", Self.library, "--socket", dir.file("s.sock"), "--touches", file])
            #expect(serve.status == 1 && serve.stdout.isEmpty, "serve --touches \(file): \(serve.stdout)")
            #expect(serve.stderr.hasPrefix("narrator: \(file): ") && serve.stderr.contains(says) && serve.stderr.split(separator: "\n").count == 1, "\(serve.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.file("s.sock")), "refused before it listens")
            let report = try run(Repo.narrator, ["touches", file])
            #expect(report.status == 1 && report.stdout.isEmpty)
            #expect(report.stderr.hasPrefix("narrator: \(file): ") && report.stderr.contains(says) && report.stderr.split(separator: "\n").count == 1, "\(report.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before, "\(file) was changed")
        }
        let missing = dir.file("missing.sqlite")
        let usage: [(arguments: [String], says: String)] = [
            ([missing], "narrator: \(missing): no such file"),
            ([empty], "narrator: \(empty): not a touch log"),
            ([other, "--since", "yesterday"], "narrator: --since: 'yesterday' is not a date"),
            ([other, "--since", "2026-13-40"], "narrator: --since: '2026-13-40' is not a date"),
            ([other, "--limit", "0"], "--limit must be between 1 and 10000, got 0"),
        ]
        for (arguments, says) in usage {
            let result = try run(Repo.narrator, ["touches"] + arguments)
            #expect(result.status == 1 && result.stdout.isEmpty, "\(arguments): \(result.stdout)")
            #expect(result.stderr.contains(says) && result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "touches creates nothing")
        #expect(try Data(contentsOf: URL(fileURLWithPath: empty)).isEmpty)
    }

    /// A new log is what docs/touches.md says: its schema (as sqlite3 prints it) is the page's,
    /// its version, application id and journal mode; the sample of the help's example is one,
    /// and the page shows its report as `narrator touches` prints it.
    @Test func aNewLogIsTheDocumentedSchema() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let file = dir.file("new.sqlite")
        let log = try TouchLog(path: file) { _ in }
        log.finish()
        let schema = try runTool("sqlite3", [file, ".schema"]).stdout
        #expect(schema == TouchLog.schema + "\n")
        let page = try String(contentsOfFile: Repo.path("docs/touches.md"), encoding: .utf8)
        #expect(page.contains("```sql\n" + schema + "```"), "docs/touches.md shows the schema as sqlite3 prints it")
        #expect(try Self.sqlite(file, "PRAGMA user_version; PRAGMA application_id; PRAGMA journal_mode") == [["1"], ["\(TouchLog.applicationID)"], ["wal"]])
        let sample = Repo.path(Self.sample)
        #expect(try runTool("sqlite3", [sample, ".schema"]).stdout == schema)
        #expect(try Self.sqlite(sample, "PRAGMA user_version; PRAGMA application_id; PRAGMA journal_mode") == [["1"], ["\(TouchLog.applicationID)"], ["delete"]])
        // The page's report of the sample is today's.
        let report = try run(Repo.narrator, ["touches", Self.sample, "--lesson", "picture-dictionary.json"], cwd: Repo.root.path)
        #expect(report.status == 0 && report.stdout.hasPrefix("15 touches in \(Self.sample)"))
        #expect(page.contains("```\n" + report.stdout + "```"), "docs/touches.md shows what narrator touches prints of the sample")
    }

    /// The touch log of the help's example (docs/touches.md says how it was made).
    static let sample = "Timings/touches/picture-dictionary.sqlite"
}

/// A client's conversation with the daemon: every event it was sent kept, in order.
final class Conversation {
    let client: SocketClient
    private(set) var events: [ReceivedEvent] = []
    private var counted = 0

    init(_ socket: String) throws { client = try SocketClient(socket) }

    func send(_ lines: String) { client.send(lines) }

    /// The first event that `match` takes, among those received or to come (30 s at most).
    func wait(_ what: String, _ match: (ReceivedEvent) -> Bool) throws -> ReceivedEvent {
        if let found = events.first(where: match) { return found }
        guard let more = client.events(timeout: 30, until: match) else {
            throw DaemonError("no \(what) within 30 s; last events: \(events.suffix(5).map(\.fields))")
        }
        events += more
        return more.last!
    }

    /// Sends `request` and waits for its terminal event (its id is `id`).
    func ask(_ request: String, id: String) throws -> ReceivedEvent {
        send(request)
        return try wait("answer to \(id)") { $0.id == id && $0.isTerminal }
    }

    /// The events that come within `seconds`, until one that `match` takes (kept, like all).
    func within(_ seconds: TimeInterval, _ match: (ReceivedEvent) -> Bool) -> [ReceivedEvent] {
        var came: [ReceivedEvent] = []
        _ = client.events(timeout: seconds) { came.append($0); return match($0) }
        events += came
        return came.filter(match)
    }

    /// Waits for `number` more events that `match` takes (from where the last count ended).
    func count(_ number: Int, _ what: String, _ match: @escaping (ReceivedEvent) -> Bool) throws -> Int {
        var found = events[counted...].filter(match).count
        while found < number {
            guard let more = client.events(timeout: 60, until: match) else { throw DaemonError("\(found) of \(number) \(what) within 60 s") }
            events += more
            found += 1
        }
        counted = events.count
        return found
    }
}

/// Another process holding a database's write lock: `sqlite3` in a transaction (BEGIN
/// IMMEDIATE) until `release`. It returns once the lock is held (a second sqlite3 finds the
/// file locked).
final class LockHolder {
    private let process = Process()
    private let input = Pipe()

    init(_ file: String) throws {
        process.executableURL = URL(fileURLWithPath: try #require(PulseTestServer.findExecutable("sqlite3")))
        process.arguments = [file]
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data(".timeout 10000\nBEGIN IMMEDIATE;\n".utf8))
        let deadline = Date().addingTimeInterval(10)
        while try runTool("sqlite3", [file, "BEGIN IMMEDIATE; ROLLBACK;"]).status == 0 {
            guard Date() < deadline else { throw DaemonError("sqlite3 did not take the write lock of \(file)") }
            usleep(5000)
        }
    }

    func release() throws {
        input.fileHandleForWriting.write(Data("COMMIT;\n".utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    deinit { if process.isRunning { process.terminate() } }
}

/// How often a touch log called back, and with how many commits.
final class Tally: @unchecked Sendable {
    private let lock = NSLock()
    private var counts = (calls: 0, committed: 0)
    func add(_ committed: Bool) { lock.withLock { counts.calls += 1; if committed { counts.committed += 1 } } }
    var calls: Int { lock.withLock { counts.calls } }
    var committed: Int { lock.withLock { counts.committed } }
}

/// Lines a writer thread reports, read by the test.
final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
