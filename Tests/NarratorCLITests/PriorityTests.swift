import Foundation
import NarratorTestSupport
import Testing

/// Announcements by priority through `narrator simulate --requests`, every pair of priorities
/// against the written rules, and the product documents' three cases.
@Suite("Priorities")
struct PriorityTests {
    static let lesson = SightWordsLesson.path
    static let priorities = ["important", "message", "text", "notification", "progress"]
    /// The table of docs/lessons.md, row = the new request, column = the one playing.
    static let rules: [String: [String]] = [
        "important": ["queue", "interrupt", "interrupt", "interrupt", "interrupt"],
        "message": ["queue", "queue", "interrupt", "interrupt", "interrupt"],
        "text": ["queue", "queue", "interrupt", "interrupt", "interrupt"],
        "notification": ["drop", "drop", "drop", "interrupt", "drop"],
        "progress": ["last", "last", "last", "interrupt", "last"],
    ]

    static func simulate(_ requests: String) throws -> [Simulated.Event] {
        let result = try run(Repo.narrator, ["simulate", lesson, "--requests", requests, "--seed", "1"])
        try #require(result.status == 0, "\(result.stderr)")
        return try result.stdout.split(separator: "\n").map { line in
            Simulated.Event(fields: try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]))
        }
    }

    @Test(arguments: priorities)
    func everyPairFollowsTheRules(playing: String) throws {
        let length = try SightWordsLesson.frames("try-again")
        let arrives = 12_000
        for (column, _) in Self.priorities.enumerated() where Self.priorities[column] == playing {
            for new in Self.priorities {
                let trace = try Self.simulate("0:\(playing):try-again,0.25:\(new):try-again")
                let a = Simulated.outcome(trace, "r1")
                let b = Simulated.outcome(trace, "r2")
                switch Self.rules[new]![column] {
                case "interrupt":
                    #expect(a == ["begin@0", "canceled@\(arrives)"], "\(new) over \(playing)")
                    #expect(b == ["begin@\(arrives)", "end@\(arrives + length)"], "\(new) over \(playing)")
                case "queue", "last":
                    #expect(a == ["begin@0", "end@\(length)"], "\(new) over \(playing)")
                    #expect(b == ["begin@\(length)", "end@\(2 * length)"], "\(new) over \(playing)")
                default:  // drop
                    #expect(a == ["begin@0", "end@\(length)"], "\(new) over \(playing)")
                    #expect(b == ["canceled@\(arrives)"], "\(new) over \(playing)")
                }
                // Every request exactly one terminal event.
                for id in ["r1", "r2"] {
                    #expect(trace.filter { ["end", "canceled"].contains($0.type) && $0["id"] == id }.count == 1)
                }
            }
        }
    }

    /// With `--interruptions resume-sentence` (or `resume-word`), every pair the table says
    /// *interrupt* changes: the interrupted request waits and, once the interrupter has ended,
    /// plays again from the start of the sentence (word) it was cut in, frames from the cue
    /// sheet; one `end` each. Every other pair gives the same trace as with cancel.
    @Test(arguments: priorities)
    func interruptionsThatResume(playing: String) throws {
        let see = try SightWordsLesson.frames("see-tap-see")  // the chain idle-see: the clip alone
        let tryAgain = try SightWordsLesson.frames("try-again")
        let arrives = 24_000  // 0.5 s: inside "tap" (20748..<38784), sentence "see tap see" (2400..<57132)
        let sheet = try run(Repo.narrator, ["cues", Self.lesson, "--chain", "idle-see"])
        let cues = try #require(try JSONSerialization.jsonObject(with: Data(sheet.stdout.utf8)) as? [String: Any])["cues"] as? [[String: Any]]
        func start(_ type: String) throws -> Int {
            try #require(cues?.last { $0["type"] as? String == type && ($0["frame"] as? Int ?? .max) <= arrives }?["frame"] as? Int)
        }
        let column = try #require(Self.priorities.firstIndex(of: playing))
        for new in Self.priorities {
            let script = "0:\(playing):idle-see,0.5:\(new):try-again"
            for (policy, resumeFrame) in [("resume-sentence", try start("sentence")), ("resume-word", try start("word"))] {
                let result = try run(Repo.narrator, ["simulate", Self.lesson, "--requests", script, "--seed", "1", "--interruptions", policy])
                try #require(result.status == 0, "\(result.stderr)")
                let trace = try result.stdout.split(separator: "\n").map { line in
                    Simulated.Event(fields: try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]))
                }
                func outcome(_ id: String) -> [String] {
                    trace.filter { ["begin", "end", "canceled", "interrupted", "resume"].contains($0.type) && $0["id"] == id }.map {
                        "\($0.type)@\($0.frame)" + (($0["resumeFrame"] ?? $0["from"]).map { " \($0)" } ?? "")
                    }
                }
                if Self.rules[new]![column] == "interrupt" {
                    let back = arrives + tryAgain
                    #expect(outcome("r1") == ["begin@0", "interrupted@\(arrives) \(resumeFrame)", "resume@\(back) \(resumeFrame)", "end@\(back + see - resumeFrame)"], "\(new) over \(playing), \(policy)")
                    #expect(outcome("r2") == ["begin@\(arrives)", "end@\(back)"], "\(new) over \(playing), \(policy)")
                    // The resumed part's words: from the resume frame on, again.
                    let words = trace.filter { $0.type == "word" && $0["clip"] == "see-tap-see" }.map(\.frame)
                    #expect(words.first { $0 >= back } == back, "the first word again where it resumes")
                } else {
                    let cancel = try run(Repo.narrator, ["simulate", Self.lesson, "--requests", script, "--seed", "1"])
                    #expect(cancel.stdout == result.stdout, "\(new) over \(playing): only interrupts change")
                }
                for id in ["r1", "r2"] {
                    #expect(trace.filter { ["end", "canceled"].contains($0.type) && $0["id"] == id }.count == 1, "\(new) over \(playing): one terminal for \(id)")
                }
            }
        }
    }

    /// What is heard when a text resumes from its word: the chain's render up to the
    /// interruption, the interrupter's whole render, then the chain's render from the word's
    /// start: sample for sample, assembled from the single chains' renders.
    @Test func resumedAudioIsTheChainFromTheWord() throws {
        let dir = TempDir()
        defer { dir.remove() }
        func render(_ arguments: [String], _ name: String) throws -> [Int16] {
            let result = try run(Repo.narrator, ["render", Self.lesson, "--seed", "1"] + arguments + ["--output", dir.file(name)])
            try #require(result.status == 0, "\(result.stderr)")
            return try WAVFile(path: dir.file(name)).int16Samples
        }
        let see = try render(["--chain", "idle-see"], "see.wav")
        let channels = try WAVFile(path: dir.file("see.wav")).channels
        let tryAgain = try render(["--chain", "try-again"], "try.wav")
        let mixed = try render(["--requests", "0:text:idle-see,0.5:text:try-again", "--interruptions", "resume-word"], "mixed.wav")
        let arrives = 24_000
        let word = 20_748  // "tap" in the cue sheet of idle-see
        let expected = Array(see[..<(arrives * channels)]) + tryAgain + Array(see[(word * channels)...])
        #expect(mixed.count == expected.count)
        #expect(mixed == expected)
    }

    /// Letter tracing: swiping to a new letter interrupts the previous letter's name.
    @Test func aNewLetterInterruptsThePrevious() throws {
        let trace = try Self.simulate("0:text:idle-see,0.5:text:idle-hat,0.9:text:try-again")
        #expect(Simulated.outcome(trace, "r1") == ["begin@0", "canceled@24000"])
        #expect(Simulated.outcome(trace, "r2") == ["begin@24000", "canceled@43200"])
        #expect(Simulated.outcome(trace, "r3").first == "begin@43200")
        // The first name's words stop where it was cut: none at or after 24000 from its clip.
        #expect(!trace.contains { $0.type == "word" && $0["clip"] == "see-tap-see" && $0.frame >= 24_000 })
    }

    /// Math: coin announcements queue, each heard whole, in order.
    @Test func coinAnnouncementsQueue() throws {
        let length = try SightWordsLesson.frames("try-again")
        let trace = try Self.simulate("0:message:try-again,0.1:message:try-again,0.2:message:try-again")
        #expect(Simulated.outcome(trace, "r1") == ["begin@0", "end@\(length)"])
        #expect(Simulated.outcome(trace, "r2") == ["begin@\(length)", "end@\(2 * length)"])
        #expect(Simulated.outcome(trace, "r3") == ["begin@\(2 * length)", "end@\(3 * length)"])
    }

    /// Progress reports arriving while one plays are dropped, but the last is spoken.
    @Test func progressKeepsOnlyTheLast() throws {
        let length = try SightWordsLesson.frames("try-again")
        let trace = try Self.simulate("0:progress:try-again,0.1:progress:try-again,0.2:progress:try-again,0.3:progress:try-again")
        #expect(Simulated.outcome(trace, "r2") == ["canceled@9600"])
        #expect(Simulated.outcome(trace, "r3") == ["canceled@14400"])
        #expect(Simulated.outcome(trace, "r4") == ["begin@\(length)", "end@\(2 * length)"])
    }

    /// Arrivals cancel what they outrank in the waiting line; the line plays most urgent first.
    @Test func waitingRequestsAreCanceledOrOrderedByRank() throws {
        let length = try SightWordsLesson.frames("try-again")
        // While an important plays, a text waits; a message arriving cancels it (message and
        // text cancel waiting text), and waits itself; a later text waits behind the message.
        let trace = try Self.simulate("0:important:try-again,0.1:text:try-again,0.2:message:try-again,0.3:text:try-again")
        #expect(Simulated.outcome(trace, "r2") == ["canceled@9600"])
        // The line plays most urgent first: the message, then the text.
        #expect(Simulated.outcome(trace, "r3") == ["begin@\(length)", "end@\(2 * length)"])
        #expect(Simulated.outcome(trace, "r4") == ["begin@\(2 * length)", "end@\(3 * length)"])

        // A later important passes a waiting message.
        let urgent = try Self.simulate("0:important:try-again,0.1:message:try-again,0.2:important:try-again")
        #expect(Simulated.outcome(urgent, "r3") == ["begin@\(length)", "end@\(2 * length)"])
        #expect(Simulated.outcome(urgent, "r2") == ["begin@\(2 * length)", "end@\(3 * length)"])

        let important = try Self.simulate("0:message:try-again,0.1:progress:try-again,0.3:important:try-again")
        #expect(Simulated.outcome(important, "r2") == ["canceled@14400"], "an important cancels waiting progress")
        #expect(Simulated.outcome(important, "r1") == ["begin@0", "canceled@14400"])
    }

    @Test func badRequestScriptIsOneLine() throws {
        let result = try run(Repo.narrator, ["simulate", Self.lesson, "--requests", "0:loud:try-again"])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("narrator: --requests: item 1 '0:loud:try-again': expected SECONDS:PRIORITY:CHAIN"))
    }
}
