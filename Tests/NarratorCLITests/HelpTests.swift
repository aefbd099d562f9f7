import Foundation
import NarratorKit
import NarratorTestSupport
import Testing

/// What `narrator` says about itself: its version, where a usage error sends you, and the
/// examples of every subcommand's help, each run as written.
@Suite struct HelpTests {
    /// Runs narrator with `variables` set (`run` takes no environment: `env` sets them).
    static func narrator(_ arguments: [String], variables: [String: String] = [:], cwd: String? = nil) throws -> ProcessResult {
        try run("/usr/bin/env", variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + [Repo.narrator] + arguments, cwd: cwd)
    }

    /// The help as a person reads it on an 80-column terminal (a pipe gets the same width
    /// unless COLUMNS says otherwise).
    static func help(_ command: [String]) throws -> String {
        let result = try narrator(command + ["--help"], variables: ["COLUMNS": "80"])
        try #require(result.status == 0, "\(command) --help: \(result.stderr)")
        return result.stdout
    }

    // MARK: --version

    /// One line, the version CHANGELOG.md's newest release heading names.
    @Test func versionIsTheChangelogs() throws {
        let result = try Self.narrator(["--version"])
        #expect(result.status == 0 && result.stderr.isEmpty)
        #expect(result.stdout == NarratorVersion.current + "\n")
        #expect(NarratorVersion.current.split(separator: ".").map { Int($0) != nil } == [true, true, true], "MAJOR.MINOR.PATCH")
        let changelog = try String(contentsOfFile: Repo.path("CHANGELOG.md"), encoding: .utf8)
        let newest = try #require(changelog.split(separator: "\n").first { $0.hasPrefix("## ") })
        #expect(newest.contains(NarratorVersion.current), "CHANGELOG.md's newest heading: \(newest)")
    }

    // MARK: Usage errors

    /// A usage error names the help of the command that was being parsed: one line, exit 1.
    @Test func usageErrorsPointToTheSubcommandsHelp() throws {
        let lesson = Repo.path("Timings/lessons/sample.json")
        let cases: [(arguments: [String], says: String, help: String)] = [
            (["play", lesson, "--chain", "correct", "--speed", "3"], "--speed must be between 0.5 and 2.0, got 3.0", "narrator play --help"),
            (["render", lesson, "--chain", "correct"], "Missing expected argument '--output <output>'", "narrator render --help"),
            (["cues"], "Missing expected argument '<lesson>'", "narrator cues --help"),
            (["simulate", lesson, "--chain", "correct", "--until", "3"], "--until goes with --activity", "narrator simulate --help"),
            (["serve", "--latency", "1"], "--latency must be between 5 and 2000 ms, got 1", "narrator serve --help"),
            (["serve", "--wake-ahead", "20001"], "--wake-ahead must be between 0 and 20000 microseconds, got 20001", "narrator serve --help"),
            (["timings", "convert", "in.txt"], "Missing expected argument '<output>'", "narrator timings convert --help"),
            (["validate"], "Missing expected argument '<paths> ...'", "narrator validate --help"),
            (["plot", lesson, "--chain", "correct", "--output", "x.svg", "--frobnicate"], "Unknown option '--frobnicate'", "narrator plot --help"),
            (["pack", Repo.path("Timings/lessons")], "Missing expected argument '--to <to>'", "narrator pack --help"),
            (["frobnicate"], "unknown command 'frobnicate'", "narrator --help"),
            // A command misspelt: its name, and the command it is nearest to.
            (["rendr", "x"], "unknown command 'rendr': did you mean 'render'?", "narrator --help"),
            (["Validate", "."], "unknown command 'Validate': did you mean 'validate'?", "narrator --help"),
            (["sinth", "hi"], "unknown command 'sinth': did you mean 'synth'?", "narrator --help"),
            (["timings", "convrt", "a.txt", "b.json"], "unknown command 'timings convrt': did you mean 'timings convert'?", "narrator timings --help"),
            // A number out of range is echoed.
            (["synth", "hi", "--output", "x.wav", "--timings", "x.json", "--rate", "4410"], "--rate must be between 8000 and 384000, got 4410", "narrator synth --help"),
            (["timings", "convert", "a.txt", "b.json", "--rate", "0"], "--rate must be between 8000 and 384000, got 0", "narrator timings convert --help"),
            (["edit", lesson, "--clip", "x", "--port", "70000"], "--port must be between 0 and 65535, got 70000", "narrator edit --help"),
            (["cues", lesson, "--chain", "correct", "--repeat", "0"], "--repeat must be between 1 and 10000, got 0", "narrator cues --help"),
            (["plot", lesson, "--chain", "correct", "--output", "x.svg", "--width", "5"], "--width must be between", "narrator plot --help"),
        ]
        for (arguments, says, help) in cases {
            let result = try Self.narrator(arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stdout.isEmpty, "\(arguments)")
            if says.hasSuffix("between") {
                #expect(result.stderr.hasPrefix("narrator: \(says)") && result.stderr.contains(", got 5 (see '\(help)')\n"), "\(arguments): \(result.stderr)")
            } else {
                #expect(result.stderr == "narrator: \(says) (see '\(help)')\n", "\(arguments): \(result.stderr)")
            }
        }
        // A real command and `help` are not misspellings.
        #expect(try Self.narrator(["help", "render"]).status == 0)
    }

    // MARK: Help examples

    /// A subcommand's help: the path that runs it and its text.
    struct Page {
        let command: [String]
        let text: String
    }

    /// Every command's help, from `narrator --help` down its SUBCOMMANDS lists (the `help`
    /// command aside), so that a new subcommand is covered without naming it here.
    static func pages() throws -> [Page] {
        var pages: [Page] = []
        var queue: [[String]] = [[]]
        while !queue.isEmpty {
            let command = queue.removeFirst()
            let text = try help(command)
            pages.append(Page(command: command, text: text))
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            guard let start = lines.firstIndex(of: "SUBCOMMANDS:") else { continue }
            for line in lines[(start + 1)...] {
                // "  name   abstract": a name at two spaces; deeper lines continue an abstract.
                guard line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first,
                    name != "See", name != "help"
                else { continue }
                queue.append(command + [String(name)])
            }
        }
        return pages
    }

    /// The example commands in a help text: each line that starts "  narrator " before USAGE,
    /// with the lines it continues onto (a trailing backslash, the next line indented four).
    /// Text right after a command, with no blank line between, is that command wrapped in the
    /// middle: an issue, as is a continuation that is not indented as one.
    static func examples(in page: Page) -> [String] {
        var commands: [String] = []
        var pending: String?
        var justEnded = false
        func take(_ text: String) {
            if text.hasSuffix("\\") {
                pending = String(text.dropLast())
            } else {
                commands.append(text)
                pending = nil
                justEnded = true
            }
        }
        for line in page.text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("USAGE:") { break }
            let text = line.trimmingCharacters(in: .whitespaces)
            if let command = pending {
                guard line.hasPrefix("    "), !line.hasPrefix("     ") else {
                    Issue.record("\(page.command): '\(command)\\' goes on onto '\(line)', not a continuation indented four spaces")
                    pending = nil
                    continue
                }
                take(command + " " + text)
            } else if line.hasPrefix("  narrator ") {
                take(text)
            } else if text.isEmpty {
                justEnded = false
            } else if justEnded {
                Issue.record("\(page.command): the example '\(commands.last!)' is wrapped mid-command onto '\(line)'")
                justEnded = false
            }
        }
        if let pending { Issue.record("\(page.command): the example '\(pending)' ends in a backslash") }
        return commands
    }

    /// Words as a shell splits them: spaces between, double or single quotes around a word
    /// with spaces (the examples use no other shell syntax).
    static func words(_ command: String) throws -> [String] {
        var words: [String] = []
        var word = ""
        var quote: Character?
        var inWord = false
        for character in command {
            if let open = quote {
                if character == open { quote = nil } else { word.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
            } else if character == " " {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else {
                let shell = "$`|&;<>*?\\".contains(character)
                try #require(!shell, "shell syntax '\(character)' in '\(command)'")
                word.append(character)
                inWord = true
            }
        }
        try #require(quote == nil, "an unclosed quote in '\(command)'")
        if inWord { words.append(word) }
        return words
    }

    /// Every example of every subcommand's help runs from the repository's root and exits 0:
    /// `play` on a private sound server, `serve` until it says where it listens, then SIGTERM.
    @Test(.timeLimit(.minutes(5))) func everyHelpExampleRuns() throws {
        let pages = try Self.pages()
        #expect(pages.count >= 12, "narrator, its subcommands and timings convert: \(pages.map(\.command))")
        var ran: [String] = []
        var server: PulseTestServer?
        for page in pages {
            let commands = Self.examples(in: page)
            // Every command that does something (not a group such as `timings`) shows one, and
            // so does `narrator --help`, a newcomer's first page.
            if page.command.isEmpty || !page.text.contains("SUBCOMMANDS:") {
                #expect(!commands.isEmpty, "\(page.command): no example in its help")
            }
            for command in commands {
                let words = try Self.words(command)
                try #require(words.first == "narrator" && words.count > 1, "\(command)")
                let arguments = Array(words.dropFirst())
                let dir = try TempDir.repoLookalike()
                defer { dir.remove() }
                // Its own runtime folder: `serve`'s default socket is not the user's.
                var variables = ["XDG_RUNTIME_DIR": dir.path]
                if arguments.first == "play" {
                    if server == nil {
                        try #require(PulseTestServer.isAvailable, "play's example needs \(PulseTestServer.missingRequirements)")
                        server = try PulseTestServer()
                    }
                    variables.merge(server!.clientVariables) { _, new in new }
                }
                if arguments.first == "serve" {
                    try Self.serveUntilListening(arguments, variables: variables, cwd: dir.path, command: command)
                } else if arguments.first == "edit" {
                    // No browser from a test: the page's address on stdout is enough.
                    try Self.serveUntilListening(arguments + ["--no-open"], variables: variables, cwd: dir.path, command: command)
                } else {
                    let result = try Self.narrator(arguments, variables: variables, cwd: dir.path)
                    #expect(result.status == 0, "\(command): exit \(result.status): \(result.stderr)")
                }
                ran.append(arguments.first!)
            }
        }
        server?.stop()
        #expect(Set(ran) == Set(pages.compactMap(\.command.first)), "every subcommand's examples ran: \(ran)")
    }

    /// `serve` (or `edit`) as its example says: up until its stdout says where WebSocket (or the
    /// page) listens, then SIGTERM, and exit status 0.
    static func serveUntilListening(_ arguments: [String], variables: [String: String], cwd: String, command: String) throws {
        let out = cwd + "/serve.out"
        let err = cwd + "/serve.err"
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" } + [Repo.narrator] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: cwd)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: out)
        process.standardError = FileHandle(forWritingAtPath: err)
        try process.run()
        let deadline = Date().addingTimeInterval(60)
        var listening = false
        while !listening, process.isRunning, Date() < deadline {
            let lines = ((try? String(contentsOfFile: out, encoding: .utf8)) ?? "").split(separator: "\n")
            listening = lines.contains { line in
                ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])?["port"] is Int
                    || line.hasPrefix("http://127.0.0.1:")
            }
            if !listening { usleep(20_000) }
        }
        let said = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        #expect(listening, "\(command): never said where it listens: \(said)")
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(command): exit \(process.terminationStatus): \(said)")
    }
}
