import Foundation
import NarratorTestSupport
import Testing

/// An input a fuzz target once crashed or hung on: Tests/Fixtures/fuzz-crashes/<target>/<file>.
struct FuzzCrashInput: Sendable, CustomTestStringConvertible {
    let target: String
    let path: String
    var testDescription: String { "\(target)/\(URL(fileURLWithPath: path).lastPathComponent)" }

    static let folder = Repo.path("Tests/Fixtures/fuzz-crashes")

    /// The target folders, and every file in them; throws when the folder cannot be listed.
    static func listed() throws -> [FuzzCrashInput] {
        let files = FileManager.default
        return try files.contentsOfDirectory(atPath: folder).sorted().flatMap { target in
            let sub = folder + "/" + target
            return try files.contentsOfDirectory(atPath: sub).sorted().map { FuzzCrashInput(target: target, path: sub + "/" + $0) }
        }
    }

    /// The test's arguments, found when the tests are discovered (which cannot fail a test):
    /// an unreadable folder gives none, and `theSavedInputsAreFound` fails instead.
    static func all() -> [FuzzCrashInput] { (try? listed()) ?? [] }

    /// The saved inputs when this was written: a folder moved or emptied fails
    /// `theSavedInputsAreFound` rather than leaving the replay with zero cases.
    static let knownCount = 10
}

/// Every input `make fuzz` found a trap, a sanitizer error or a hang with (docs/fuzzing.md),
/// run again through the same parser entry point as the fuzz target: `narrator-fuzz TARGET
/// FILE`, the ordinary build of the fuzz executable, in a process of its own so that a trap
/// fails this test naming the input instead of ending the suite. The parser must answer with a
/// `NarratorError` (exit 0, "rejected: …") or accept the input, within a minute.
@Suite struct FuzzRegressionTests {
    static var fuzzer: String {
        URL(fileURLWithPath: Repo.narrator).deletingLastPathComponent().appendingPathComponent("narrator-fuzz").path
    }

    /// A folder named after no target would never be replayed.
    @Test func everyFolderNamesATarget() throws {
        let listed = try run(Self.fuzzer, ["--list"])
        #expect(listed.status == 0, "\(listed.stderr)")
        let targets = Set(listed.stdout.split(separator: "\n").map(String.init))
        #expect(targets.contains("textgrid") && targets.contains("request") && targets.count == 15, "\(targets)")
        let folders = try FileManager.default.contentsOfDirectory(atPath: FuzzCrashInput.folder)
        #expect(!folders.isEmpty, "\(FuzzCrashInput.folder) is empty")
        for folder in folders {
            #expect(targets.contains(folder), "Tests/Fixtures/fuzz-crashes/\(folder) is not a fuzz target")
        }
    }

    /// The replay below has as many cases as there are saved inputs: none if the folder moved.
    @Test func theSavedInputsAreFound() throws {
        let inputs = try FuzzCrashInput.listed()
        #expect(inputs.count >= FuzzCrashInput.knownCount, "\(inputs.count) inputs in \(FuzzCrashInput.folder)")
        #expect(FuzzCrashInput.all().count == inputs.count)
    }

    @Test(arguments: FuzzCrashInput.all())
    func crashInputIsAnsweredNotTrapped(_ input: FuzzCrashInput) throws {
        let result = try runTool("timeout", ["60", Self.fuzzer, input.target, input.path])
        #expect(result.status != 124, "\(input.testDescription): still running after 60 s")
        // A trap ends the process by a signal, which `timeout` passes on: status 4 (SIGILL), 5 (SIGTRAP), 6…
        #expect(
            result.status == 0,
            "\(input.testDescription): ended with status or signal \(result.status) instead of an answer\n\(result.stderr.suffix(3000))")
        if result.status == 0 {
            #expect(
                result.stdout.hasPrefix("\(input.path): accepted: ") || result.stdout.hasPrefix("\(input.path): rejected: "),
                "\(result.stdout)")
        }
    }
}
