import Foundation
import NarratorTestSupport
import Testing

@testable import NarratorService

/// What the daemon's clients may read of a path: `LessonLibrary.scrub` on the messages the
/// loader and the outputs write, for a library and other folders whose paths hold spaces.
@Suite("public paths")
struct PublicPathTests {
    @Test func pathsWithSpacesAreScrubbedWhole() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let library = dir.file("Jane Doe/my lib")
        try FileManager.default.createDirectory(atPath: library, withIntermediateDirectories: true)
        let scrubbed = try LessonLibrary(path: library)
        let root = scrubbed.root
        let cases: [(String, String)] = [
            ("\(root)/sub dir/tone.wav: cannot open", "sub dir/tone.wav: cannot open"),
            ("cannot open \(root)/tone.wav: no such file", "cannot open tone.wav: no such file"),
            ("a.json: clips.a: '\(root)/a b/c.wav' is too short", "a.json: clips.a: 'a b/c.wav' is too short"),
            ("/home/Jane Doe/secret stuff/b.wav: not a sound file", "…/b.wav: not a sound file"),
            ("file=\"/home/Jane Doe/x y.wav\", then", "file=\"…/x y.wav\", then"),
            ("(/srv/Jane Doe/lib/x.wav)", "(…/x.wav)"),
            ("\(root)/a.wav and \(root)/b.wav", "a.wav and b.wav"),
            ("\(root)-x/Jane Doe/x.wav: bad", "…/x.wav: bad"),
            ("\(root)", "."),
        ]
        for (message, expected) in cases {
            let got = scrubbed.scrub(message)
            #expect(got == expected, "\(message)")
            #expect(!got.contains("Jane") && !got.contains("Doe") && !got.contains(dir.path), "\(got)")
        }
    }
}
