import Foundation
import NarratorTestSupport
import Testing

/// What `narrator` says of an input file it cannot read: one line on stderr, naming the file,
/// and true to the cause (each errno in its own words; nothing from the libraries it uses).
@Suite struct AudioInputTests {
    func refusal(_ path: String) throws -> String {
        let result = try run(Repo.narrator, ["inspect", path])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 1, "exactly one line: \(result.stderr)")
        #expect(result.stderr.contains(path), "names the file: \(result.stderr)")
        return result.stderr
    }

    /// Bytes that begin like an MPEG frame: libsndfile hands them to libmpg123, which prints
    /// its notes, and then says the file "does not exist or is not a regular file".
    @Test func notMPEGAfterAllIsOneTrueLine() throws {
        let dir = TempDir()
        defer { dir.remove() }
        var rng = SystemRandomNumberGenerator()
        let noise = (0..<3000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        for (name, head) in [("mpegish.mp3", [0xFF, 0xFB, 0x90, 0x64]), ("mpegish.wav", [0xFF, 0xF3, 0x40, 0xC4])] as [(String, [UInt8])] {
            let path = dir.write(name, data: Data(head + noise))
            let message = try refusal(path)
            #expect(message.contains("not a readable audio file"), "\(message)")
            #expect(!message.contains("Illegal") && !message.contains("does not exist"), "\(message)")
        }
        let text = try refusal(dir.write("words.wav", data: Data("just some words\n".utf8)))
        #expect(text.contains("not a sound format libsndfile can read"), "\(text)")
    }

    @Test func eachErrnoInItsOwnWords() throws {
        let dir = TempDir()
        defer { dir.remove() }
        try FileManager.default.createSymbolicLink(atPath: dir.file("a.wav"), withDestinationPath: dir.file("b.wav"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("b.wav"), withDestinationPath: dir.file("a.wav"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("dangling.wav"), withDestinationPath: dir.file("gone.wav"))
        dir.write("plain.wav", "x")
        try FileManager.default.createDirectory(atPath: dir.file("folder.wav"), withIntermediateDirectories: false)
        let cases: [(String, String)] = [
            (dir.file("a.wav"), "loop of symbolic links"),
            (dir.file("dangling.wav"), "symbolic link to nothing"),
            (dir.file("missing.wav"), "no such file"),
            (dir.file("folder.wav"), "is a folder"),
            (dir.file("plain.wav/inside.wav"), "not a folder"),
            (dir.file(String(repeating: "n", count: 300) + ".wav"), "too long"),
        ]
        for (path, words) in cases {
            let message = try refusal(path)
            #expect(message.contains(words), "\(path): \(message)")
        }
        // Permission is not refused to root: only checked as another user.
        if getuid() != 0 {
            let locked = dir.write("locked.wav", "x")
            chmod(locked, 0)
            #expect(try refusal(locked).contains("permission denied"))
        }
    }
}
