import Foundation
import NarratorTestSupport
import NarratorTestTraits
import Testing

/// What the narrator binary asks the loader to map at each start. librsvg, eSpeak NG and
/// libpulse are opened with dlopen by the commands that use them (Sources/CLazyLibrary); no
/// target takes their headers through pkg-config (SwiftPM would link the pkg-config module's
/// libraries), so any build, a plain `swift build -c release` included, must not name them, nor
/// what they pull in, as NEEDED.
@Suite struct LinkedLibrariesTests {
    @Test func theLazilyOpenedLibrariesAreNotLinked() throws {
        let result = try run("/usr/bin/readelf", ["--dynamic", Repo.narrator])
        try #require(result.status == 0, "readelf: \(result.stderr)")
        let needed = result.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }.compactMap { line -> String? in
            guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
            return String(line[line.index(after: open)..<close])
        }
        #expect(needed.contains { $0.hasPrefix("libsndfile") }, "the list is read: \(needed)")
        let lazy = ["librsvg", "libespeak", "libpulse", "libcairo", "libglib", "libgobject", "libgio", "libpango"]
        let linked = needed.filter { name in lazy.contains { name.hasPrefix($0) } }
        #expect(linked.isEmpty, "linked, though opened with dlopen: \(linked)")
    }

    /// Sources/CRsvgLoader/include/rsvg_api.h declares librsvg's, cairo's and GLib's types and
    /// functions itself (their headers need pkg-config). Ground truth is the system's headers:
    /// compiled with them, a prototype that differs fails to compile; and the layouts and
    /// values the Swift code relies on, printed once from the system's types and once from the
    /// header's own, must be the same.
    @Test(.requires(PulseTestServer.findExecutable("gcc") != nil, "needs gcc"))
    func theLibrsvgDeclarationsMatchTheSystemHeaders() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let source = dir.write(
            "check.c",
            """
            #ifdef SYSTEM
            #include <librsvg/rsvg.h>
            #include <cairo.h>
            #define NARRATOR_RSVG_SYSTEM_HEADERS
            #endif
            #include "rsvg_api.h"
            #include <stddef.h>
            #include <stdio.h>
            int main(void) {
                printf("GError %zu %zu %zu %zu\\n", sizeof(GError), offsetof(GError, domain), offsetof(GError, code),
                       offsetof(GError, message));
                printf("RsvgRectangle %zu %zu %zu %zu %zu\\n", sizeof(RsvgRectangle), offsetof(RsvgRectangle, x),
                       offsetof(RsvgRectangle, y), offsetof(RsvgRectangle, width), offsetof(RsvgRectangle, height));
                printf("cairo %d %d %d %zu %zu\\n", (int)CAIRO_FORMAT_ARGB32, (int)CAIRO_STATUS_SUCCESS,
                       (int)CAIRO_STATUS_WRITE_ERROR, sizeof(cairo_format_t), sizeof(cairo_status_t));
                printf("glib %zu %zu %zu %d\\n", sizeof(gboolean), sizeof(guint8), sizeof(gsize), (gsize)-1 > 0);
                return 0;
            }
            """)
        let include = Repo.path("Sources/CRsvgLoader/include")
        let cflags = try runTool("pkg-config", ["--cflags", "librsvg-2.0"])
        try #require(cflags.status == 0, "pkg-config librsvg-2.0: \(cflags.stderr)")
        var printed: [String] = []
        for (name, flags) in [("system", ["-DSYSTEM"] + cflags.stdout.split(separator: " ").map { String($0).trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }), ("own", [])] {
            let binary = dir.file("check-\(name)")
            let built = try runTool("gcc", ["-std=c11", "-Wall", "-Werror", "-I", include] + flags + ["-o", binary, source])
            try #require(built.status == 0, "\(name) headers: \(built.stderr)")
            let output = try run(binary, [])
            try #require(output.status == 0)
            printed.append(output.stdout)
        }
        #expect(printed[0].contains("cairo 0 0 "), "the system's values are read: \(printed[0])")
        #expect(printed[1] == printed[0])
    }
}
