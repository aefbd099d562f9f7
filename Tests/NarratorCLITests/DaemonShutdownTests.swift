import Foundation
import NarratorTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// How long the daemon takes to end on SIGTERM: a bound in wall time, so the suite runs in the
/// live phase of `make test`, alone (the Makefile's LIVE_TESTS), not beside the parallel suites.
@Suite("Daemon shutdown", .serialized)
struct DaemonShutdownTests {
    /// A lesson of 100,000 locales (5 MB, inside the lesson size limit) loads in time linear in
    /// its size: before, each locale built a dictionary of all of them (10⁴ locales took 13.7 s
    /// in a release build, 10⁵ did not finish) and the `library` listing failed for every
    /// client. Listed and its cues given, each request with one terminal event; then SIGTERM
    /// while a worker is busy with it ends the daemon within 2 s, the busy request with one
    /// terminal event.
    @Test func aLessonOfManyLocalesLoadsAndTheDaemonStillStops() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = dir.file("library")
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        let tone = library + "/tone.wav"
        let made = try runTool("sox", ["-n", "-r", "48000", "-c", "1", "-b", "16", tone, "synth", "30", "sine", "440", "vol", "0.1"])
        try #require(made.status == 0, "\(made.stderr)")
        var locales: [String] = []
        for i in 0..<100_000 {
            let letters = (0..<3).map { k in String(UnicodeScalar(UInt8(97 + (i / [1, 26, 676][k]) % 26))) }.joined()
            locales.append(#""\#(letters)-x\#(i)": {"clips": {"a": {"file": "tone.wav"}}}"#)
        }
        dir.write(
            "library/many.json",
            #"{"sampleRate": 48000, "clips": {"a": {"file": "tone.wav"}}, "chains": {"c": [{"clip": "a"}]}, "locales": {"# + locales.joined(separator: ", ") + "}}")
        let daemon = try Daemon(dir: dir, library: library, arguments: ["--output", "alsa", "--device", "null"])
        defer { daemon.stop() }
        let client = try SocketClient(daemon.socket)
        client.send(#"{"id": "list", "op": "library"}"#)
        let listing = try #require(client.events(timeout: 120) { $0.id == "list" && $0.isTerminal }, "no listing: \(daemon.stderr)")
        #expect(listing.last?.type == "finished" && listing.contains { ($0.fields["lesson"] as? String) == "many.json" || "\($0.fields)".contains("many.json") },
                "\(listing.map(\.fields))")
        client.send(#"{"id": "cues", "op": "cues", "lesson": "many.json", "chain": "c", "locale": "aaa-x0"}"#)
        let cues = try #require(client.events(timeout: 120) { $0.id == "cues" && $0.isTerminal }, "no cues: \(daemon.stderr)")
        #expect(cues.last?.type == "finished", "\(cues.last?.fields ?? [:])")
        // A long listing of it, unread, holds a worker with a loader child: SIGTERM then.
        client.send(#"{"id": "long", "op": "cues", "lesson": "many.json", "chain": "c", "repeat": 1000}"#)
        usleep(300_000)
        let asked = Date()
        #expect(daemon.stop() == 0)
        let seconds = Date().timeIntervalSince(asked)
        print(String(format: "SIGTERM to exit with a worker busy: %.2f s", seconds))
        #expect(seconds < 2, "the daemon took \(seconds) s to stop")
        let rest = client.events(timeout: 5) { $0.id == "long" && $0.isTerminal }
        #expect(rest?.filter { $0.id == "long" && $0.isTerminal }.count == 1, "\(rest?.map(\.fields) ?? [])")
    }
}
