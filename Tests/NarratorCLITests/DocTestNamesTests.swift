import Foundation
import NarratorTestSupport
import Testing

/// The docs name tests as evidence (`LivePlaybackTests`, `heldIdlePromptStillStartsOnTime`): a
/// test renamed or removed must not leave a doc pointing at nothing. Every backticked name in
/// README.md and docs/*.md that ends in `Tests` is a suite declared under Tests/, and, in README.md and docs/testing.md (the pages that name
/// test functions), every backticked lowerCamelCase name of four words or more that Sources/ never mentions (an API, a JSON field)
/// is a test function under Tests/.
@Suite struct DocTestNamesTests {
    static func markdown() throws -> [(page: String, text: String)] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: Repo.path("docs")).filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        return try (["README.md"] + docs.sorted()).map { ($0, try String(contentsOfFile: Repo.path($0), encoding: .utf8)) }
    }

    static func swiftSources(under folder: String) throws -> String {
        let root = Repo.path(folder)
        let files = try #require(FileManager.default.enumerator(atPath: root)).compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
        return try files.map { try String(contentsOfFile: root + "/" + $0, encoding: .utf8) }.joined(separator: "\n")
    }

    static func backticked(_ text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: "`([A-Za-z][A-Za-z0-9]*)(?:\\(\\))?`")
        let range = NSRange(text.startIndex..., in: text)
        return Set(regex.matches(in: text, range: range).compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } })
    }

    @Test func everyTestADocNamesExists() throws {
        let tests = try Self.swiftSources(under: "Tests")
        let sources = try Self.swiftSources(under: "Sources")
        var suites = 0, functions = 0
        for (page, text) in try Self.markdown() {
            for name in Self.backticked(text) {
                if name.hasSuffix("Tests"), name.first!.isUppercase {
                    suites += 1
                    let declared = ["struct", "final class", "class", "enum", "extension"].contains { tests.contains("\($0) \(name)") }
                    #expect(declared, "\(page) names the suite \(name), which Tests/ does not declare")
                } else if name.first!.isLowercase, name.filter(\.isUppercase).count >= 3, ["README.md", "docs/testing.md"].contains(page),
                    !sources.contains(name)
                {
                    functions += 1
                    #expect(tests.contains("func \(name)("), "\(page) names \(name), which is no test function under Tests/ (nor mentioned in Sources/)")
                }
            }
        }
        print("docs name \(suites) suites and \(functions) test functions")
        #expect(suites >= 10)
    }
}
