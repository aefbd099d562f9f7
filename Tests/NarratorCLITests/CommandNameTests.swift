import ArgumentParser
import Testing
@testable import narrator

/// Every command names itself. Without `commandName`, ArgumentParser derives the name from the
/// type's with String(describing:), whose first protocol-conformance lookups scan every
/// conformance record in the binary at each start (docs/benchmarks.md, Process start).
@Suite struct CommandNameTests {
    @Test func everyCommandNamesItself() {
        var unnamed: [String] = []
        var seen = 0
        func visit(_ command: any ParsableCommand.Type, path: String) {
            seen += 1
            let name = command.configuration.commandName
            if name == nil { unnamed.append(path + " > " + String(reflecting: command)) }
            for sub in command.configuration.subcommands {
                visit(sub, path: path + " " + (name ?? "?"))
            }
        }
        visit(Narrator.self, path: "")
        #expect(seen > 15, "the walk reached \(seen) commands")
        #expect(unnamed.isEmpty, "commands without commandName: \(unnamed)")
    }
}
