import Foundation
import NarratorKit
import NarratorTestSupport
import Testing

/// A library installs no signal handler: rendering through NarratorKit leaves the process's
/// dispositions of SIGINT, SIGTERM and SIGHUP as the app set them.
@Suite struct SignalDispositionTests {
    /// The handler address and flags sigaction(2) reports for `number`.
    static func disposition(_ number: Int32) -> (handler: UInt, flags: Int32) {
        var action = sigaction()
        sigaction(number, nil, &action)
        return (unsafeBitCast(action.__sigaction_handler.sa_handler, to: UInt.self), action.sa_flags)
    }

    @Test func renderingLeavesSignalHandlingAlone() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // What an app might have set: SIGHUP ignored, the others as they are.
        let previousHangUp = signal(SIGHUP, SIG_IGN)
        defer { signal(SIGHUP, previousHangUp) }
        let signals = [SIGINT, SIGTERM, SIGHUP]
        let before = signals.map(Self.disposition)
        #expect(before[2].handler == unsafeBitCast(SIG_IGN, to: UInt.self), "the test's own setting is read back")

        let lesson = try NarratorLesson(path: Repo.path("Timings/lessons/sample.json"))
        let prepared = try lesson.prepare(.chain("correct"), seed: 7)
        try prepared.render(to: dir.file("out.wav"), format: .s16)
        #expect(dir.contents() == ["out.wav"])

        let after = signals.map(Self.disposition)
        for (index, number) in signals.enumerated() {
            #expect(after[index].handler == before[index].handler && after[index].flags == before[index].flags, "signal \(number)")
        }
    }
}
