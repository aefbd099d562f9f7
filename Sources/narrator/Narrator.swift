import ArgumentParser
import Foundation
import NarratorAudioFile
import NarratorCore

@main
struct Narrator: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "narrator",
        abstract: "Schedules and renders the narration of children's lessons, exact to the frame.",
        subcommands: [Render.self, Play.self, Simulate.self, Cues.self, Inspect.self])

    /// Usage errors, like bad input, exit with status 1 and one line; --help exits 0.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let code as ExitCode {
            exit(withError: code)
        } catch {
            if exitCode(for: error) == .success { exit(withError: error) }
            var message = fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
            if message.hasPrefix("Error: ") { message.removeFirst("Error: ".count) }
            printError("\(message) (see 'narrator --help')")
            exit(withError: ExitCode(1))
        }
    }
}

/// One line on stderr, whatever the message holds.
func printError(_ message: String) {
    let line = message.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
    FileHandle.standardError.write(Data("narrator: \(line)\n".utf8))
}

/// Runs `body`; a `NarratorError` becomes one line on stderr and exit status 1.
func reportingErrors(_ body: () throws(NarratorError) -> Void) throws {
    do {
        try body()
    } catch {
        printError(error.description)
        throw ExitCode(1)
    }
}

/// What to lay out: a chain, an activity run from scripted taps, or announcements by priority.
/// Shared by render, play, cues and simulate, so that each works on all three.
struct ChainOptions: ParsableArguments {
    @Argument(help: "The lesson file (JSON).")
    var lesson: String

    @Option(help: "The chain to play, by its id in the lesson's \"chains\".")
    var chain: String?

    @Option(help: "Instead of a chain, an activity, by its id in the lesson's \"activities\", run with --taps.")
    var activity: String?

    @Option(help: "Taps as heard, for --activity: SECONDS:ANSWER, comma-separated (replay and close are app requests).")
    var taps: String?

    @Option(help: "Instead of a chain, announcements by priority: SECONDS:PRIORITY:CHAIN, comma-separated (important, message, text, notification, progress); ids are r1, r2, … in order.")
    var requests: String?

    @Option(help: "For --activity: the state that picks the intro's variant (e.g. first-use, return-use).")
    var state: String?

    @Option(help: "For --activity: stop the virtual clock here, in seconds (default: 20 s after the last tap, or 60 s).")
    var until: Double?

    @Option(help: "Seed for pool draws; the same seed gives the same picks. Random when omitted.")
    var seed: UInt64?

    @Option(help: "Play the chain this many times back to back in one session.")
    var `repeat`: Int = 1

    func validate() throws {
        guard (1...10_000).contains(`repeat`) else { throw ValidationError("--repeat must be between 1 and 10000") }
        guard [chain != nil, activity != nil, requests != nil].filter({ $0 }).count == 1 else {
            throw ValidationError("give one of --chain, --activity or --requests")
        }
        if activity == nil {
            if taps != nil { throw ValidationError("--taps goes with --activity") }
            if state != nil { throw ValidationError("--state goes with --activity") }
            if until != nil { throw ValidationError("--until goes with --activity") }
        }
        if chain == nil && `repeat` != 1 { throw ValidationError("--repeat goes with --chain") }
    }

    /// Loads the lesson, decodes what can play and lays it out (`seed` when --seed is absent).
    func schedule(seed fallback: UInt64? = nil) throws(NarratorError) -> Schedule {
        let lesson = try Lesson.load(path: self.lesson)
        let seed = self.seed ?? fallback ?? UInt64.random(in: .min ... .max)
        var draws = PoolDraws(seed: seed)
        if let chain {
            let bank = try ClipBank.prepare(lesson: lesson, chain: chain, decoder: SndFileDecoder())
            return try Scheduler.schedule(chain: chain, repeats: `repeat`, bank: bank, draws: &draws)
        }
        if let requests {
            let list = try RequestScript.parse(requests, rate: lesson.sampleRate)
            let bank = try prepare(lesson, chains: list.map(\.chain))
            return try Announcer { chain throws(NarratorError) in
                try Scheduler.schedule(chain: chain, bank: bank, draws: &draws)
            }.run(list).schedule
        }
        let planner = try activityPlanner(lesson: lesson, seed: seed)
        return try planner.plan(taps: try TapScript.parse(taps ?? "", rate: lesson.sampleRate))
    }

    /// Plans an activity run from taps, afresh each time from the same seed, so that a plan
    /// with one more tap is the same as the last one up to that tap.
    /// `live`: taps will come while it plays, so the plan runs until the activity ends.
    func activityPlanner(lesson given: Lesson? = nil, seed: UInt64? = nil, live: Bool = false) throws(NarratorError) -> ActivityPlanner {
        let lesson: Lesson
        if let given { lesson = given } else { lesson = try Lesson.load(path: self.lesson) }
        let activity = try lesson.activity(self.activity!)
        let tapFrames = try TapScript.parse(taps ?? "", rate: lesson.sampleRate).map(\.frame)
        let untilFrame: Int
        if let until {
            guard until >= 0, until <= 86400, let frames = Frames.from(seconds: until, rate: lesson.sampleRate) else {
                throw NarratorError(file: "--until", "expected seconds between 0 and 86400 (a day), got \(until)")
            }
            untilFrame = frames
        } else if live {
            untilFrame = 86400 * lesson.sampleRate
        } else {
            untilFrame = (tapFrames.max() ?? 40 * lesson.sampleRate) + 20 * lesson.sampleRate
        }
        // Everything in memory: a plan that changes while it plays seeks, and streams cannot.
        let bank = try prepare(lesson, chains: activity.chainIDs, decoder: SndFileDecoder(streamAboveSeconds: nil))
        return ActivityPlanner(
            activity: activity, bank: bank, seed: seed ?? self.seed ?? UInt64.random(in: .min ... .max), until: untilFrame,
            state: state)
    }

    /// The clips every one of `chains` can play, decoded once.
    private func prepare(
        _ lesson: Lesson, chains: [String], decoder: SndFileDecoder = SndFileDecoder()
    ) throws(NarratorError) -> ClipBank {
        var clipIDs: [String] = []
        for chain in chains {
            for id in try lesson.clipIDs(reachableFrom: chain) where !clipIDs.contains(id) { clipIDs.append(id) }
        }
        return try ClipBank.prepare(lesson: lesson, clipIDs: clipIDs, decoder: decoder)
    }
}

/// An activity's plan from taps: `ActivityRunner` with fresh pool draws from one seed.
struct ActivityPlanner {
    let activity: Activity
    let bank: ClipBank
    let seed: UInt64
    let until: Int
    let state: String?

    func plan(taps: [Tap]) throws(NarratorError) -> Schedule {
        var draws = PoolDraws(seed: seed)
        let bank = bank
        return try ActivityRunner(activity: activity, sampleRate: bank.lesson.sampleRate) { chain throws(NarratorError) in
            try Scheduler.schedule(chain: chain, bank: bank, draws: &draws)
        }.run(taps: taps, until: until, state: state).schedule
    }
}

extension OutputFormat: ExpressibleByArgument {}

struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Render a chain to an audio file, and optionally its cue sheet.",
        discussion: """
            Clips play back to back with no gap; every offset is exact to the frame. The output \
            appears only once it is complete.

            Example:
              narrator render Timings/lessons/sample.json --chain correct --output correct.wav \\
                --cues correct.cues.json --seed 7
            """)

    @OptionGroup var chainOptions: ChainOptions

    @Option(name: .shortAndLong, help: "The audio file to write (WAV).")
    var output: String

    @Option(help: "Also write the cue sheet (JSON) here.")
    var cues: String?

    @Option(help: "Sample format: s16 (16-bit integer) or f32 (32-bit float).")
    var format: OutputFormat = .s16

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            let schedule = try chainOptions.schedule()
            // The cue sheet is written first, beside its target; both files are moved into
            // place only once both are complete, and neither is left when either fails.
            var pendingCues: (partial: String, final: String)?
            if let cues {
                let url = URL(fileURLWithPath: cues)
                let partial = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).partial-\(getpid())").path
                guard FileManager.default.createFile(atPath: partial, contents: Data(CueSheet.json(schedule).utf8)) else {
                    throw NarratorError(file: cues, "cannot write the cue sheet: \(FileProblem.describe(path: url.deletingLastPathComponent().path))")
                }
                pendingCues = (partial, cues)
            }
            do throws(NarratorError) {
                try OfflineRenderer.render(schedule, to: output, format: format)
            } catch {
                if let pendingCues { unlink(pendingCues.partial) }
                throw error
            }
            if let pendingCues, rename(pendingCues.partial, pendingCues.final) != 0 {
                unlink(pendingCues.partial)
                unlink(output)
                throw NarratorError(file: pendingCues.final, "cannot move the cue sheet into place: \(String(cString: strerror(errno)))")
            }
        }
    }
}

struct Cues: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a chain's cue sheet (JSON) without rendering audio.",
        discussion: """
            Cues are sorted by frame at the lesson's sample rate: clipStart, word, clipEnd, pulse, \
            chainEnd.

            Example:
              narrator cues Timings/lessons/sample.json --chain correct --seed 7 --repeat 2
            """)

    @OptionGroup var chainOptions: ChainOptions

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            print(CueSheet.json(try chainOptions.schedule()), terminator: "")
        }
    }
}

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print an audio file's format, rate, channels, frames and duration, and its word timings in frames.",
        discussion: """
            Example:
              narrator inspect Audio/fixtures/sentence.wav --timings Timings/fixtures/sentence.txt
            """)

    @Argument(help: "An audio file libsndfile can read.")
    var file: String

    @Option(help: "A timing file (.json, .txt Audacity labels, .vtt) to show in frames at the file's rate.")
    var timings: String?

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            let info = try AudioFileInfo(path: file)
            var lines = [
                "file:        \(file)",
                "format:      \(info.format)",
                "sample rate: \(info.sampleRate) Hz",
                "channels:    \(info.channels)",
                "frames:      \(info.frames)",
                "duration:    \(String(format: "%.6f", Frames.seconds(info.frames, rate: info.sampleRate))) s",
            ]
            if let timings {
                let words = try WordTimings.load(path: timings, rate: info.sampleRate)
                if let late = words.first(where: { $0.endFrame > info.frames }) {
                    throw NarratorError(
                        file: timings, place: "word \(late.index) '\(late.text)'",
                        "ends at frame \(late.endFrame), past the end of \(file) (\(info.frames) frames)")
                }
                lines.append("words:       \(words.count) (frames at \(info.sampleRate) Hz; end is exclusive)")
                lines.append("  index      start        end  text")
                for word in words {
                    lines.append(
                        "  " + pad(word.index, 5) + pad(word.startFrame, 11) + pad(word.endFrame, 11) + "  " + word.text)
                }
            }
            print(lines.joined(separator: "\n"))
        }
    }

    private func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
