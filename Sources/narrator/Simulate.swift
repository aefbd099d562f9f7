import ArgumentParser
import Foundation
import NarratorAudioFile
import NarratorCore

struct Simulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run an activity on a virtual clock and print its trace (JSON lines), exact to the frame.",
        discussion: """
            The trace holds every event with its "frame" (at the lesson's rate) and "type": \
            activityStart, stepStart, chainStart, the chains' cues (clipStart, word, pulse, \
            clipEnd, chainEnd), idlePrompt, tap, feedback, feedbackEnd, canceled, advance, close, \
            activityEnd, or stop when --until comes first. The same taps and seed give the same trace.

            Example:
              narrator simulate Timings/lessons/homer.json --activity sight-words \\
                --taps 3.2:the,9.0:wig,12.5:on --seed 7
            """)

    @Argument(help: "The lesson file (JSON).")
    var lesson: String

    @Option(help: "The activity, by its id in the lesson's \"activities\".")
    var activity: String?

    @Option(help: "Instead of an activity, announcements by priority: SECONDS:PRIORITY:CHAIN, comma-separated (priorities: important, message, text, notification, progress); ids are r1, r2, … in order.")
    var requests: String?

    @Option(help: "Taps as heard: SECONDS:ANSWER, comma-separated (replay and close are app requests).")
    var taps: String?

    @Option(help: "Seed for pool draws. Random when omitted.")
    var seed: UInt64?

    @Option(help: "Stop the virtual clock here, in seconds (default: 20 s after the last tap, or 60 s).")
    var until: Double?

    func validate() throws {
        guard (activity == nil) != (requests == nil) else {
            throw ValidationError("give either --activity or --requests")
        }
    }

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            let lesson = try Lesson.load(path: self.lesson)
            if let requests {
                let list = try RequestScript.parse(requests, rate: lesson.sampleRate)
                var chains: [String] = []
                for request in list where !chains.contains(request.chain) { chains.append(request.chain) }
                var draws = PoolDraws(seed: seed ?? UInt64.random(in: .min ... .max))
                let bank = try prepare(lesson, chains: chains)
                let trace = try Announcer { chain throws(NarratorError) in
                    try Scheduler.schedule(chain: chain, bank: bank, draws: &draws)
                }.run(list)
                print(trace.map(\.jsonLine).joined(separator: "\n"))
                return
            }
            let activity = try lesson.activity(self.activity!)
            let tapList = try TapScript.parse(taps ?? "", rate: lesson.sampleRate)
            let lastTap = tapList.map(\.frame).max()
            let untilFrame: Int
            if let until {
                guard let frames = Frames.from(seconds: until, rate: lesson.sampleRate), frames >= 0 else {
                    throw NarratorError(file: "--until", "expected seconds, got \(until)")
                }
                untilFrame = frames
            } else {
                untilFrame = (lastTap ?? 0) + 20 * lesson.sampleRate + (lastTap == nil ? 40 * lesson.sampleRate : 0)
            }
            let bank = try prepare(lesson, chains: activity.chainIDs)
            var draws = PoolDraws(seed: seed ?? UInt64.random(in: .min ... .max))
            let runner = ActivityRunner(activity: activity, sampleRate: lesson.sampleRate) { chain throws(NarratorError) in
                try Scheduler.schedule(chain: chain, bank: bank, draws: &draws)
            }
            let trace = try runner.run(taps: tapList, until: untilFrame)
            print(trace.map(\.jsonLine).joined(separator: "\n"))
        }
    }
}

/// The clips every one of `chains` can play, decoded once.
private func prepare(_ lesson: Lesson, chains: [String]) throws(NarratorError) -> ClipBank {
    var clipIDs: [String] = []
    for chain in chains {
        for id in try lesson.clipIDs(reachableFrom: chain) where !clipIDs.contains(id) { clipIDs.append(id) }
    }
    return try ClipBank.prepare(lesson: lesson, clipIDs: clipIDs, decoder: SndFileDecoder())
}

/// `--requests 0:text:letter-a,0.4:text:letter-b`: announcements in seconds as heard.
enum RequestScript {
    static func parse(_ script: String, rate: Int) throws(NarratorError) -> [AnnouncementRequest] {
        var requests: [AnnouncementRequest] = []
        for (index, item) in script.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let parts = item.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 3, let seconds = Double(parts[0]), seconds >= 0, let frame = Frames.from(seconds: seconds, rate: rate),
                let priority = Priority(rawValue: String(parts[1])), !parts[2].isEmpty
            else {
                throw NarratorError(
                    file: "--requests", place: "item \(index + 1) '\(item)'",
                    "expected SECONDS:PRIORITY:CHAIN, e.g. 0.5:text:letter-b (priorities: important, message, text, notification, progress)")
            }
            requests.append(AnnouncementRequest(frame: frame, id: "r\(index + 1)", chain: String(parts[2]), priority: priority))
        }
        return requests
    }
}

/// `--taps 3.2:the,9.0:wig`: taps in seconds as heard, converted to frames once, here.
enum TapScript {
    static func parse(_ script: String, rate: Int) throws(NarratorError) -> [Tap] {
        var taps: [Tap] = []
        for (index, item) in script.split(separator: ",", omittingEmptySubsequences: false).enumerated() where !script.isEmpty {
            let parts = item.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let seconds = Double(parts[0].trimmingCharacters(in: .whitespaces)), seconds >= 0,
                let frame = Frames.from(seconds: seconds, rate: rate), !parts[1].isEmpty
            else {
                throw NarratorError(file: "--taps", place: "item \(index + 1) '\(item)'", "expected SECONDS:ANSWER, e.g. 3.2:the")
            }
            taps.append(Tap(frame: frame, answer: String(parts[1])))
        }
        return taps
    }
}
