import Foundation
import NarratorTestSupport
import Testing

/// What a test needs from the machine (a program, a Python module, the private sound server).
///
/// Outside `make test` a missing requirement skips the test, as `.enabled(if:)` does. Under
/// `make test`, which sets `NARRATOR_NO_SKIPS=1` after `make deps` installed everything a test
/// can need, a missing requirement **fails** the test, naming what is missing: a skip there
/// means a check that did not run. The only exceptions are the cases of ``AllowedSkip``, the
/// allow-list docs/testing.md documents: what `make deps` cannot give.
public struct RequirementTrait: TestTrait, SuiteTrait {
    let met: @Sendable () -> Bool
    let comment: Comment
    let allowed: AllowedSkip?
    let sourceLocation: SourceLocation

    /// Each test of a suite checks it for itself, so that a failure names the test.
    public var isRecursive: Bool { true }

    public var comments: [Comment] { [comment] }

    /// Whether a missing requirement fails rather than skips (`NARRATOR_NO_SKIPS=1`).
    public static var skipsFail: Bool { ProcessInfo.processInfo.environment["NARRATOR_NO_SKIPS"] == "1" }

    public func prepare(for test: Test) async throws {
        try await Self.check(met(), comment: comment, allowed: allowed, skipsFail: Self.skipsFail, sourceLocation: sourceLocation, test: test)
    }

    /// The decision, apart so that a test can show it: nothing when met; a skip when skips are
    /// allowed here; else ``Missing``, which fails the test.
    public static func check(
        _ met: Bool, comment: Comment, allowed: AllowedSkip?, skipsFail: Bool, sourceLocation: SourceLocation, test: Test
    ) async throws {
        if met { return }
        if !skipsFail || allowed != nil {
            // ConditionTrait's own skip (Swift Testing reports it as skipped, with the comment).
            try await ConditionTrait.enabled(if: false, comment, sourceLocation: sourceLocation).prepare(for: test)
        }
        throw Missing(test: test.name, what: comment.rawValue)
    }

    /// A requirement missing under `make test`.
    public struct Missing: Error, CustomStringConvertible {
        public let test: String
        public let what: String
        public var description: String {
            "\(test) \(what), and under make test (NARRATOR_NO_SKIPS=1) a skip fails: `make deps` installs it; "
                + "a requirement it cannot install belongs in AllowedSkip (docs/testing.md)"
        }
    }
}

/// The allow-list: requirements that `make deps` cannot meet, so that `make test` may skip the
/// tests that need them (docs/testing.md, "Skips").
public enum AllowedSkip: String, Sendable, CaseIterable {
    /// Setting SCHED_FIFO on another process's threads needs root: `make test` run through sudo
    /// for its installs runs the tests as the user.
    case root
    /// `chrt -f 10 true` fails: a container or a user without RLIMIT_RTPRIO.
    case realtimeScheduling
}

extension Trait where Self == RequirementTrait {
    /// Runs the test only when `condition` holds; a skip under `make test` fails unless
    /// `allowed` names the allow-list's entry for it.
    public static func requires(
        _ condition: @autoclosure @escaping @Sendable () -> Bool, _ comment: Comment, allowed: AllowedSkip? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> Self {
        Self(met: condition, comment: comment, allowed: allowed, sourceLocation: sourceLocation)
    }
}
