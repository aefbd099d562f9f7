import Foundation
import NarratorCore
import NarratorTestSupport
import Synchronization
import Testing

/// Batch work over a library runs on every core (`parallelMap`), and gives what a sequential
/// run gives: `NARRATOR_JOBS=1` runs it item by item, in order, on one thread.
@Suite struct BatchParallelTests {
    /// Results in the items' order whatever order they finish in, never more at once than
    /// the workers asked for.
    @Test func parallelMapKeepsOrderAndBound() {
        let running = Mutex(0), most = Mutex(0)
        let items = Array(0..<64)
        let results = parallelMap(items, workers: 3) { item -> Int in
            running.withLock { $0 += 1; let now = $0; most.withLock { $0 = max($0, now) } }
            usleep(useconds_t((item * 7919) % 5 * 1000))  // finish out of order
            running.withLock { $0 -= 1 }
            return item * item
        }
        #expect(results == items.map { $0 * $0 })
        #expect(most.withLock { $0 } <= 3)
        #expect(parallelMap([Int](), workers: 4) { $0 } == [])
    }

    /// `validate --json` and `pack` of the sample library: the same report, and the same packed
    /// bytes, with one worker and with every core (FLAC: an Ogg stream's serial number is
    /// random, so Vorbis and Opus files differ from run to run whatever the order).
    @Test func validateAndPackMatchASequentialRun() throws {
        let library = Repo.path("Timings/lessons")
        func validate(_ jobs: String?) throws -> String {
            let result = try run("/usr/bin/env", (jobs.map { ["NARRATOR_JOBS=\($0)"] } ?? []) + [Repo.narrator, "validate", library, "--json", "--no-progress"])
            try #require(result.status == 0 || result.status == 1, "\(result.stderr)")
            return result.stdout.replacingOccurrences(of: #""seconds" *: *[0-9.e-]+"#, with: "", options: .regularExpression)
        }
        #expect(try validate("1") == validate(nil))

        let dir = TempDir()
        defer { dir.remove() }
        func pack(_ jobs: String?, _ out: String) throws -> String {
            let result = try run(
                "/usr/bin/env", (jobs.map { ["NARRATOR_JOBS=\($0)"] } ?? []) + [Repo.narrator, "pack", library, "--to", dir.file(out), "--format", "flac", "--no-progress"])
            try #require(result.status == 0, "\(result.stderr)")
            return result.stdout.replacingOccurrences(of: dir.file(out), with: "OUT")
        }
        #expect(try pack("1", "one") == pack(nil, "all"))
        let one = FileManager.default.enumerator(atPath: dir.file("one"))!.allObjects.compactMap { $0 as? String }.sorted()
        let all = FileManager.default.enumerator(atPath: dir.file("all"))!.allObjects.compactMap { $0 as? String }.sorted()
        #expect(one == all && !one.isEmpty)
        for name in one where !name.hasSuffix("/") {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: dir.file("one/" + name), isDirectory: &isFolder), !isFolder.boolValue else { continue }
            #expect(FileManager.default.contentsEqual(atPath: dir.file("one/" + name), andPath: dir.file("all/" + name)), "\(name)")
        }
    }
}
