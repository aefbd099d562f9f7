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

    /// MPEG files libmpg123 reads with complaints: a LAME-tagged file cut in half (its Xing
    /// tag announces more), a free-format file and a tagged one with bytes of another kind in
    /// the middle ("Illegal Audio-MPEG-Header", "Trying to resync"). Every command that reads
    /// them says one line, Narrator's; `validate` only its findings.
    @Test func libmpg123SaysNothingOnStderr() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let tone = dir.file("tone.wav")
        #expect(try runTool("sox", ["-n", "-r", "44100", "-c", "1", "-b", "16", tone, "synth", "2", "sine", "440"]).status == 0)
        #expect(try runTool("lame", ["--quiet", tone, dir.file("tagged.mp3")]).status == 0)
        #expect(try runTool("lame", ["--quiet", "--freeformat", "-b", "320", tone, dir.file("free.mp3")]).status == 0)
        let tagged = try Data(contentsOf: URL(fileURLWithPath: dir.file("tagged.mp3")))
        let free = try Data(contentsOf: URL(fileURLWithPath: dir.file("free.mp3")))
        let files = [
            ("half.mp3", tagged.prefix(tagged.count / 2)),
            ("free-cut.mp3", free.prefix(3000) + Data(repeating: 0x78, count: 2000) + free.dropFirst(3000)),
            ("tagged-cut.mp3", tagged.prefix(3000) + Data(repeating: 0x78, count: 2000) + tagged.dropFirst(3000)),
        ]
        for (name, bytes) in files {
            let path = dir.write(name, data: Data(bytes))
            let lesson = dir.write(
                name + ".json", #"{"sampleRate": 44100, "clips": {"a": {"file": "\#(name)"}}, "chains": {"c": [{"clip": "a"}]}}"#)
            for command in [["render", lesson, "--chain", "c", "--output", dir.file("out.wav")], ["cues", lesson, "--chain", "c"], ["inspect", path]] {
                let result = try run(Repo.narrator, command)
                let lines = result.stderr.split(separator: "\n")
                #expect(result.status == 1 && lines.count == 1 && lines.allSatisfy { $0.hasPrefix("narrator: ") }, "\(command): \(result.stderr)")
                #expect(result.stderr.contains(name), "\(command): \(result.stderr)")
            }
        }
        let validated = try run(Repo.narrator, ["validate", dir.path])
        let lines = validated.stderr.split(separator: "\n")
        #expect(lines.allSatisfy { $0.hasPrefix("narrator: ") }, "\(validated.stderr)")
        #expect(!validated.stdout.contains("Note:") && !validated.stdout.contains("Warning:") && !validated.stdout.contains("libmpg123"), "\(validated.stdout)")
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

    /// A FIFO (with no writer), a device or a folder where a lesson, a sprite map or an audio
    /// file should be: refused in one line at once, never read (a FIFO would block the open
    /// itself; `/dev/zero` never ends).
    @Test func pipesAndDevicesAreRefusedAtOnce() throws {
        let dir = TempDir()
        defer { dir.remove() }
        for name in ["pipe.wav", "pipe.json", "map-pipe.json"] { #expect(mkfifo(dir.file(name), 0o644) == 0) }
        try FileManager.default.createSymbolicLink(atPath: dir.file("zero.json"), withDestinationPath: "/dev/zero")
        try FileManager.default.createSymbolicLink(atPath: dir.file("zero.wav"), withDestinationPath: "/dev/zero")
        let start = Date()
        for audio in ["pipe.wav", "zero.wav"] {
            #expect(try refusal(dir.file(audio)).contains("not a regular file"))
        }
        for lesson in ["pipe.json", "zero.json"] {
            let result = try run(Repo.narrator, ["cues", dir.file(lesson), "--chain", "c"])
            #expect(result.status == 1)
            #expect(result.stderr == "narrator: \(dir.file(lesson)): not a regular file (a device, pipe or socket)\n", "\(result.stderr)")
        }
        let namesPipe = dir.write(
            "names-pipe.json", #"{"sampleRate": 8000, "clips": {"a": {"file": "pipe.wav"}}, "chains": {"c": [{"clip": "a"}]}}"#)
        let audio = try run(Repo.narrator, ["cues", namesPipe, "--chain", "c"])
        #expect(audio.status == 1)
        #expect(audio.stderr.hasSuffix("pipe.wav: not a regular file (a device, pipe or socket) (clips.a)\n"), "\(audio.stderr)")
        #expect(audio.stderr.split(separator: "\n").count == 1)
        let namesMap = dir.write(
            "names-map.json",
            #"{"sampleRate": 8000, "clips": {}, "sprites": {"s": {"map": "map-pipe.json"}}, "chains": {"c": [{"silence": 0.1}]}}"#)
        let map = try run(Repo.narrator, ["cues", namesMap, "--chain", "c"])
        #expect(map.status == 1)
        #expect(map.stderr.contains("map-pipe.json: not a regular file (a device, pipe or socket)"), "\(map.stderr)")
        #expect(map.stderr.split(separator: "\n").count == 1)
        #expect(Date().timeIntervalSince(start) < 30, "nothing waited on a pipe")
    }

    /// Output that cannot be written (a full disk: /dev/full) is one line and status 1, not a
    /// trap inside Foundation's FileHandle.
    @Test func unwritableOutputIsOneLine() throws {
        let lesson = Repo.path("Timings/lessons/sample.json")
        let result = try run("/bin/sh", ["-c", "exec '\(Repo.narrator)' cues '\(lesson)' --chain correct --seed 1 > /dev/full"])
        #expect(result.status == 1)
        #expect(result.stderr == "narrator: stdout: cannot be written (No space left on device)\n", "\(result.stderr)")
    }

    /// A file that begins with one MPEG frame header and goes on with anything else is not
    /// handed to libsndfile (and libmpg123): frames of a real MP3 follow each other.
    @Test func oneFrameHeaderIsNotAnMP3() throws {
        let dir = TempDir()
        defer { dir.remove() }
        // 0xFFFB9064: MPEG 1 layer III, 128 kbit/s, 44.1 kHz, no padding: 417-byte frames.
        var bytes = [UInt8](repeating: 0x55, count: 4000)
        bytes.replaceSubrange(0..<4, with: [0xFF, 0xFB, 0x90, 0x64])
        let message = try refusal(dir.write("one-header.mp3", data: Data(bytes)))
        #expect(message.contains("not a sound format libsndfile can read"), "\(message)")
    }
}
