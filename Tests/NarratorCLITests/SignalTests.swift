import Foundation
import NarratorTestSupport
import Testing

/// The executable owns signal handling: SIGINT and SIGTERM during a render remove every partial
/// file (the audio's and the cue sheet's) and exit with 128 + the signal (130, 143).
@Suite struct SignalTests {
    @Test(arguments: [SIGINT, SIGTERM])
    func interruptedRenderLeavesNothing(_ number: Int32) throws {
        let dir = TempDir()
        defer { dir.remove() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Repo.narrator)
        process.arguments = [
            "render", Repo.path("Timings/lessons/sample.json"), "--chain", "correct", "--repeat", "2000",
            "--output", dir.file("o.wav"), "--cues", dir.file("o.json"),
        ]
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Mid-render: both partial files exist and the audio's has grown.
        let deadline = Date().addingTimeInterval(30)
        func audioBytes() -> Int {
            guard let name = dir.contents().first(where: { $0.hasPrefix(".o.wav.partial-") }) else { return 0 }
            return ((try? FileManager.default.attributesOfItem(atPath: dir.file(name)))?[.size] as? Int) ?? 0
        }
        while audioBytes() < 1_000_000, process.isRunning, Date() < deadline { usleep(2000) }
        let during = dir.contents()
        #expect(during.contains { $0.hasPrefix(".o.wav.partial-") } && during.contains { $0.hasPrefix(".o.json.partial-") }, "\(during)")
        kill(process.processIdentifier, number)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 128 + number)
        #expect(dir.contents().isEmpty, "no output, no partial file: \(dir.contents())")
    }
}
