import Foundation
import NarratorTestSupport
import Testing

/// A suite or test trait that keeps every CPU awake (``AwakeCPUs``) while it runs: for the
/// tests that time cue delivery against what was heard.
public struct AwakeCPUsTrait: SuiteTrait, TestTrait, TestScoping {
    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        let cpus = AwakeCPUs()
        defer { cpus.release() }
        for problem in cpus.problems {
            FileHandle.standardError.write(Data("\(test.name): \(problem); timing is measured with that CPU left to idle\n".utf8))
        }
        try await function()
    }
}

extension Trait where Self == AwakeCPUsTrait {
    /// Keeps every CPU awake while the suite or test runs (see ``AwakeCPUs``).
    public static var awakeCPUs: Self { Self() }
}
