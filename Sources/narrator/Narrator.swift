import ArgumentParser
import Foundation
import NarratorAudioFile
import NarratorCore
import NarratorKit
import CQuietMPG123

@main
struct Narrator: ParsableCommand {
    // Every command names itself (`commandName`): without it ArgumentParser derives the name
    // from the type's with String(describing:), whose first protocol-conformance lookups scan
    // the binary's every conformance record (NIO and Hummingbird bring thousands), about a
    // millisecond per command at each start (docs/benchmarks.md, Process start).
    static let configuration = CommandConfiguration(
        commandName: "narrator",
        abstract: "Schedules and renders the narration of children's lessons, exact to the frame.",
        discussion: """
            Each command's --help says what it does, with an example (narrator render --help). \
            A first lesson, step by step: the README.

            Examples:
              narrator cues Timings/lessons/sample.json --chain correct --seed 7

              narrator render Timings/lessons/sample.json --chain correct --seed 7 \\
                --output correct.wav --cues correct.json
            """,
        version: NarratorVersion.current,
        subcommands: [Render.self, Play.self, Simulate.self, Cues.self, Inspect.self, Serve.self, Edit.self, Timings.self, Align.self, Merge.self, RenderAll.self, Synth.self, Validate.self, Plot.self, Pack.self, Touches.self])

    /// Usage errors, like bad input, exit with status 1 and one line, which points to the help
    /// of the command at fault (`narrator play --help`); --help and --version exit 0.
    static func main() {
        // Links the executable's quiet mpg123_new (CQuietMPG123: libmpg123 writes nothing on
        // stderr); the call itself does nothing.
        _ = narrator_quiet_mpg123_state()
        let arguments = Array(CommandLine.arguments.dropFirst())
        if let unknown = unknownCommand(in: arguments) {
            printError("\(unknown.message) (see '\(unknown.help)')")
            exit(withError: ExitCode(1))
        }
        let parsed: any ParsableCommand
        do {
            parsed = try parseAsRoot(arguments)
        } catch {
            fail(error, help: helpPointer(parsing: error))
        }
        var command = parsed
        do {
            // Commands that write files remove their partial output when a signal ends them;
            // play and serve handle their signals themselves (cancel, drain).
            if !(command is Play || command is Serve) { SignalCleanup.install() }
            try command.run()
        } catch {
            fail(error, help: (commandPath(of: type(of: parsed)) ?? ["narrator"]).joined(separator: " ") + " --help")
        }
    }

    /// Ends the process for `error`: its own exit for an `ExitCode` or a clean exit (help,
    /// version), else its first line on stderr with where to read more, and status 1.
    static func fail(_ error: any Error, help: String) -> Never {
        if let code = error as? ExitCode { exit(withError: code) }
        if exitCode(for: error) == .success { exit(withError: error) }
        var message = fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? "\(error)"
        if message.hasPrefix("Error: ") { message.removeFirst("Error: ".count) }
        printError("\(message) (see '\(help)')")
        exit(withError: ExitCode(1))
    }

    /// The help to point to for a parse error: the subcommand's that was being parsed, which
    /// the parser names in its full message ("See 'narrator play --help' for more information.").
    static func helpPointer(parsing error: any Error) -> String {
        for line in fullMessage(for: error).split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            guard text.hasPrefix("See '"), text.hasSuffix("' for more information.") else { continue }
            return String(text.dropFirst("See '".count).dropLast("' for more information.".count))
        }
        return "narrator --help"
    }

    /// A command name that is none of the commands: the first argument under a command that
    /// has subcommands (and no arguments of its own), when it is not an option, a subcommand or
    /// `help`. Its message names it and, when one is near (two edits at most, letter case
    /// aside, or it starts one), the command meant: "unknown command 'rendr': did you mean
    /// 'render'?"; `help` is that group's help, which lists them.
    static func unknownCommand(in arguments: [String]) -> (message: String, help: String)? {
        var command: any ParsableCommand.Type = Narrator.self
        var path = ["narrator"]
        var rest = arguments[...]
        while let word = rest.first {
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty, !word.hasPrefix("-") else { return nil }
            if word == "help" && path.count == 1 { return nil }
            if let next = subcommands.first(where: { $0._commandName == word }) {
                command = next
                path.append(word)
                rest = rest.dropFirst()
                continue
            }
            let names = subcommands.map { $0._commandName }
            let shown = (path.dropFirst() + [word]).joined(separator: " ")
            var message = "unknown command '\(shown)'"
            if let near = nearest(word, among: names) {
                message += ": did you mean '\((path.dropFirst() + [near]).joined(separator: " "))'?"
            }
            return (message, path.joined(separator: " ") + " --help")
        }
        return nil
    }

    /// The name in `names` nearest `word`: within two edits (one for a word of up to four
    /// letters), letter case aside, or that `word` starts (three letters at least); nil when
    /// none is, or two are equally near.
    static func nearest(_ word: String, among names: [String]) -> String? {
        let lowered = word.lowercased()
        if lowered.count >= 3 {
            let started = names.filter { $0.hasPrefix(lowered) }
            if started.count == 1 { return started[0] }
        }
        let scored = names.map { ($0, editDistance(Array(lowered), Array($0))) }.sorted { $0.1 < $1.1 }
        guard let best = scored.first, best.1 <= (lowered.count <= 4 ? 1 : 2) else { return nil }
        if scored.count > 1, scored[1].1 == best.1 { return nil }
        return best.0
    }

    /// Levenshtein distance with transpositions (optimal string alignment): "rnder" is one
    /// from "render", "redner" one too.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }

    /// The words that run `command`: ["narrator", "timings", "convert"]; nil when it is not one
    /// of ours.
    static func commandPath(of command: any ParsableCommand.Type, from root: any ParsableCommand.Type = Narrator.self) -> [String]? {
        let name = root._commandName
        if ObjectIdentifier(root) == ObjectIdentifier(command) { return [name] }
        for sub in root.configuration.subcommands {
            if let path = commandPath(of: command, from: sub) { return [name] + path }
        }
        return nil
    }
}

/// One line on stderr, whatever the message holds.
func printError(_ message: String) {
    let line = message.replacingOccurrences(of: "\r", with: "\\r").replacingOccurrences(of: "\n", with: "\\n")
    Output.write("narrator: \(line)\n", to: STDERR_FILENO)
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

    @Option(help: "For --requests: what an interrupt does to what it interrupts: cancel (the default), resume-sentence or resume-word (it waits, then plays again from that start).")
    var interruptions: InterruptionPolicy = .cancel

    @Option(help: "For --activity: the state that picks the intro's variant (e.g. first-use, return-use).")
    var state: String?

    @Option(help: "For --activity: stop the virtual clock here, in seconds (default: 20 s after the last tap, or 60 s).")
    var until: Double?

    @Option(help: "Seed for pool draws; the same seed gives the same picks. Random when omitted.")
    var seed: UInt64?

    @Option(help: "Play the chain this many times back to back in one session.")
    var `repeat`: Int = 1

    @Option(help: "The narration's locale, a BCP 47 tag (es, es-MX): each clip is that locale's, else its language's (es), else the lesson's default.")
    var locale: String?

    func validate() throws {
        guard (1...10_000).contains(`repeat`) else { throw ValidationError("--repeat must be between 1 and 10000, got \(`repeat`)") }
        guard [chain != nil, activity != nil, requests != nil].filter({ $0 }).count == 1 else {
            throw ValidationError("give one of --chain, --activity or --requests")
        }
        if activity == nil {
            if taps != nil { throw ValidationError("--taps goes with --activity") }
            if state != nil { throw ValidationError("--state goes with --activity") }
            if until != nil { throw ValidationError("--until goes with --activity") }
        }
        if chain == nil && `repeat` != 1 { throw ValidationError("--repeat goes with --chain") }
        if requests == nil && interruptions != .cancel { throw ValidationError("--interruptions goes with --requests") }
    }

    /// What the options name, for a lesson at `rate`. `live`: an activity without --taps is
    /// answered while it plays (otherwise it runs with no taps).
    func program(rate: Int, live: Bool = false) throws(NarratorError) -> Program {
        if let chain { return .chain(chain, repeats: `repeat`) }
        if let requests { return .requests(try RequestScript.parse(requests, rate: rate), interruptions: interruptions) }
        let scripted: [Tap]? = taps == nil && live ? nil : try TapScript.parse(taps ?? "", rate: rate)
        return .activity(activity!, taps: scripted, state: state)
    }

    /// --until in frames at `rate`.
    func untilFrame(rate: Int) throws(NarratorError) -> Int? {
        guard let until else { return nil }
        guard until >= 0, until <= 86400, let frames = Frames.from(seconds: until, rate: rate) else {
            throw NarratorError(file: "--until", "expected seconds between 0 and 86400 (a day), got \(until)")
        }
        return frames
    }

    /// Loads the lesson and prepares what the options name, through the public API.
    func prepare(seed fallback: UInt64? = nil, live: Bool = false) throws(NarratorError) -> PreparedProgram {
        let lesson = try loadLesson()
        let rate = lesson.lesson.sampleRate
        return try lesson.prepare(
            program(rate: rate, live: live), seed: seed ?? fallback ?? UInt64.random(in: .min ... .max),
            until: untilFrame(rate: rate))
    }

    /// The lesson, with --locale applied. A locale the lesson has nothing for plays the default's
    /// clips, and says so on stderr.
    func loadLesson() throws(NarratorError) -> NarratorLesson {
        if let locale, let problem = Lesson.localeTagProblem(locale) { throw NarratorError(file: "--locale", problem) }
        let lesson = try NarratorLesson(path: self.lesson, locale: locale)
        if let resolution = lesson.lesson.resolution, resolution.fellBack {
            Output.write("narrator: note: \(lesson.lesson.path): no narration in '\(resolution.requested)'\(lesson.lesson.locale.map { "; the default (\($0)) plays" } ?? "; the default plays")\n", to: STDERR_FILENO)
        }
        return lesson
    }

    /// The schedule of what the options name.
    func schedule() throws(NarratorError) -> Schedule { try prepare().schedule }
}

extension OutputFormat: ExpressibleByArgument {}

extension InterruptionPolicy: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument {
        case "cancel": self = .cancel
        case "resume-sentence": self = .resumeSentence
        case "resume-word": self = .resumeWord
        default: return nil
        }
    }

    public static var allValueStrings: [String] { ["cancel", "resume-sentence", "resume-word"] }
}

struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Render a chain to an audio file (.wav, .flac, .ogg, .opus or .mp3), and optionally its cue sheet.",
        discussion: """
            Clips play back to back with no gap; every offset is exact to the frame. The output \
            appears only once it is complete. Its extension chooses what is written: .wav, \
            .flac (lossless, 16-bit), .ogg (Vorbis), .opus (at 8, 12, 16, 24 or 48 kHz) or .mp3; \
            each decodes to exactly the rendered frames, so the cue sheet holds for all of them.

            Example:
              narrator render Timings/lessons/sample.json --chain correct \\
                --output correct.wav --cues correct.cues.json --seed 7
              narrator render Timings/lessons/sample.json --chain correct \\
                --output correct.opus --quality 0.6

            With --speed, the chain is stretched with its pitch kept (Sonic), and the cue sheet's \
            frames are where each cue is heard in the stretched audio.
            """)

    @OptionGroup var chainOptions: ChainOptions

    @Option(name: .shortAndLong, help: "The audio file to write; its extension chooses the format: .wav, .flac, .ogg (Vorbis), .opus or .mp3.")
    var output: String

    @Option(help: "Also write the cue sheet (JSON) here.")
    var cues: String?

    @Option(help: "Sample format of a .wav: s16 (16-bit integer, the default) or f32 (32-bit float). A .flac is 16-bit; lossy codecs take none.")
    var format: OutputFormat?

    @Option(help: "For .ogg, .opus and .mp3: from 0 (smallest file) to 1 (best sound); default libsndfile's for each codec (docs/formats.md lists sizes).")
    var quality: Double?

    @Option(help: "Playback speed, 0.5 to 2.0, pitch kept (with --chain).")
    var speed: Double = 1

    func validate() throws {
        guard speed.isFinite, TimeStretcher.speeds.contains(speed) else {
            throw ValidationError("--speed must be between 0.5 and 2.0, got \(speed)")
        }
        if speed != 1 && chainOptions.chain == nil {
            throw ValidationError("--speed goes with --chain")
        }
    }

    /// What --output, --format and --quality ask for, checked before the lesson is loaded:
    /// one line naming the file and the option.
    func checkOutput() throws(NarratorError) {
        func option<T>(_ name: String, _ check: () throws(NarratorError) -> T) throws(NarratorError) -> T {
            do throws(NarratorError) { return try check() } catch { throw NarratorError(file: output, place: name, error.message) }
        }
        let type = try option("--output") { () throws(NarratorError) in try AudioFileType(path: output) }
        if let format {
            try option("--format") { () throws(NarratorError) in
                if type.isLossy {
                    throw NarratorError(file: output, "\(type.name) takes no sample format (--format is for .wav, and s16 for .flac)")
                }
                try type.check(format: format, quality: nil, path: output)
            }
        }
        try option("--quality") { () throws(NarratorError) in try type.check(format: .s16, quality: quality, path: output) }
    }

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            try checkOutput()
            try Self.write(try chainOptions.prepare(), to: output, cues: cues, format: format ?? .s16, quality: quality, speed: speed)
        }
    }

    /// Renders `prepared` to `output` and its cue sheet to `cues` (render and render-all). The
    /// cue sheet is written first, beside its target; both files are moved into place only once
    /// both are complete, and neither is left when either fails.
    static func write(
        _ prepared: PreparedProgram, to output: String, cues: String?, format: OutputFormat = .s16, quality: Double?, speed: Double = 1
    ) throws(NarratorError) {
        var cueSheet: AtomicFile?
        if let cues {
            do throws(NarratorError) {
                let file = try AtomicFile(path: cues)
                try file.write(Data(prepared.cueSheet(speed: speed).utf8))
                cueSheet = file
            } catch {
                throw NarratorError(file: cues, "cannot write the cue sheet: \(error.message.replacingOccurrences(of: "cannot write: ", with: ""))")
            }
        }
        do throws(NarratorError) {
            try prepared.render(to: output, format: format, quality: quality, speed: speed)
            try cueSheet?.commit()
        } catch {
            cueSheet?.discard()
            if error.file == cues { AtomicFile.removeWritten(output) }
            throw error
        }
    }
}

struct Cues: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cues",
        abstract: "Print a chain's cue sheet (JSON) without rendering audio.",
        discussion: """
            Cues are sorted by frame at the lesson's sample rate: clipStart, word, clipEnd, pulse, \
            chainEnd.

            Example:
              narrator cues Timings/lessons/sample.json --chain correct \\
                --seed 7 --repeat 2
            """)

    @OptionGroup var chainOptions: ChainOptions

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            // Written as it is made: a sheet of millions of cues is never one string.
            let schedule = try chainOptions.schedule()
            var failed: Int32 = 0
            CueSheet.write(schedule) { piece in
                if failed == 0 { failed = Output.write(piece, to: STDOUT_FILENO) }
            }
            if failed != 0 { throw Output.failure("stdout", failed) }
        }
    }
}

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Print an audio file's format, rate, channels, frames, duration and loudness, and its word timings in frames.",
        discussion: """
            Loudness is EBU R 128 (libebur128): integrated loudness in LUFS, loudness range in \
            LU, true peak in dBTP; "n/a" for audio shorter than a 400 ms block (3 s for the \
            range), "-inf" for silence.

            Example:
              narrator inspect Audio/fixtures/sentence.wav \\
                --timings Timings/fixtures/sentence.txt
            """)

    @Argument(help: "An audio file libsndfile can read.")
    var file: String

    @Option(help: "A timing file (.json, .txt Audacity labels, .vtt) to show in frames at the file's rate.")
    var timings: String?

    func run() throws {
        try reportingErrors { () throws(NarratorError) in
            let info = try AudioFileInfo(path: file, loudness: true)
            var lines = [
                "file:        \(file)",
                "format:      \(info.format)",
                "sample rate: \(info.sampleRate) Hz",
                "channels:    \(info.channels)",
                "frames:      \(info.frames)",
                "duration:    \(String(format: "%.6f", Frames.seconds(info.frames, rate: info.sampleRate))) s",
            ]
            if let loudness = info.loudness {
                lines.append("loudness:    \(loudness.integratedText)\(loudness.integrated == nil ? "" : " integrated (EBU R 128)")")
                lines.append("range:       \(loudness.rangeText)")
                lines.append("true peak:   \(loudness.truePeakText)")
            }
            if let timings {
                let words = try WordTimings.load(path: timings, rate: info.sampleRate)
                if let late = words.first(where: { $0.endFrame > info.frames }) {
                    throw NarratorError(
                        file: timings, place: "word \(late.index) '\(late.text)'",
                        "ends at frame \(late.endFrame), past the end of \(file) (\(info.frames) frames)"
                            + WordTimings.millisecondsHint(words, audioFrames: info.frames, rate: info.sampleRate))
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
