import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// What the narrator binary asks the loader to map at each start. librsvg, eSpeak NG and
/// libpulse are opened with dlopen by the commands that use them (Sources/CLazyLibrary); the
/// Makefile's builds take their headers from headers-only pkg-config files
/// (scripts/headers-only-pkgconfig.sh), so the binary must not name them, nor what they pull
/// in, as NEEDED. (A plain `swift build` links them: then there is nothing to check.)
@Suite struct LinkedLibrariesTests {
    static let headersOnly = ProcessInfo.processInfo.environment["PKG_CONFIG_PATH"]?.contains(".build-pkgconfig") == true

    @Test(.requires(headersOnly, "built with the headers-only pkg-config files (make)"))
    func theLazilyOpenedLibrariesAreNotLinked() throws {
        let result = try run("/usr/bin/readelf", ["--dynamic", Repo.narrator])
        try #require(result.status == 0, "readelf: \(result.stderr)")
        let needed = result.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line -> String? in
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
        #expect(needed.contains { $0.hasPrefix("libsndfile") }, "the list is read: \(needed)")
        let lazy = ["librsvg", "libespeak", "libpulse", "libcairo", "libglib", "libgobject", "libpango"]
        let linked = needed.filter { name in lazy.contains { name.hasPrefix($0) } }
        #expect(linked.isEmpty, "linked, though opened with dlopen: \(linked)")
    }
}
