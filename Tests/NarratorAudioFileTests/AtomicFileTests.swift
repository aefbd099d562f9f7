import Foundation
import Synchronization
import NarratorCore
import NarratorTestSupport
import Testing

@testable import NarratorAudioFile

/// The one owner of atomic output: a file appears complete under its name or not at all, its
/// hidden partial file is listed for the executable's signal cleanup while it exists, and
/// every writer (sound, timings, plots, cue sheets) goes through it.
@Suite(.serialized) struct AtomicFileTests {
    @Test func appearsOnlyWhenCommittedAndReplacesWhole() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let target = dir.write("t.json", "old contents, longer than the new")
        let file = try AtomicFile(path: target)
        try file.write(Data("new".utf8))
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "old contents, longer than the new")
        #expect(PartialFiles.listed.contains(file.temporaryPath))
        #expect(dir.contents().sorted() == [URL(fileURLWithPath: file.temporaryPath).lastPathComponent, "t.json"].sorted())
        try file.commit()
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "new")
        #expect(dir.contents() == ["t.json"])
        #expect(!PartialFiles.listed.contains(file.temporaryPath))
    }

    /// A FIFO (like /dev/null or /dev/stdout, not a regular file) is written in place: it is
    /// still a FIFO afterwards (a rename would have put a file there), its reader gets the
    /// bytes, and `removeWritten` leaves it.
    @Test func aFIFOIsWrittenInPlaceNeverReplaced() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let fifo = dir.file("pipe")
        try #require(mkfifo(fifo, 0o600) == 0)
        let received = Mutex<Data?>(nil)
        let reader = Thread { received.withLock { $0 = readAll(fifo) } }
        reader.start()
        #expect(AtomicFile.isSpecial(fifo) && !AtomicFile.isSpecial(dir.path) && !AtomicFile.isSpecial(dir.file("none")))
        try AtomicFile.write("through the pipe", to: fifo)
        // (Were the FIFO replaced, its reader would wait forever: the test gives up after 10 s.)
        let end = Date().addingTimeInterval(10)
        while received.withLock({ $0 }) == nil && Date() < end { Thread.sleep(forTimeInterval: 0.01) }
        #expect(received.withLock { $0 } == Data("through the pipe".utf8))
        AtomicFile.removeWritten(fifo)
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "still a FIFO")
        #expect(dir.contents() == ["pipe"], "no hidden file left beside it")
    }

    @Test func failureAndDiscardLeaveNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        do {
            try AtomicFile.write("x", to: dir.file("no/such/folder/t.txt"))
            Issue.record("wrote into a missing folder")
        } catch {
            #expect(error.file == dir.file("no/such/folder/t.txt"))
            #expect(error.message == "cannot write: No such file or directory")
        }
        let dropped = try AtomicFile(path: dir.file("d.txt"))
        try dropped.write(Data("abc".utf8))
        dropped.discard()
        #expect(dir.contents().isEmpty)
        #expect(!PartialFiles.listed.contains(dropped.temporaryPath))
        do {
            let forgotten = try AtomicFile(path: dir.file("f.txt"))
            try forgotten.write(Data("abc".utf8))
        }
        #expect(dir.contents().isEmpty, "deinit without commit removes the partial file")
        // The target is a folder: the rename fails, the partial file goes.
        try FileManager.default.createDirectory(atPath: dir.file("folder"), withIntermediateDirectories: false)
        dir.write("folder/inside", "x")
        #expect(throws: NarratorError.self) { try AtomicFile.write("x", to: dir.file("folder")) }
        #expect(dir.contents() == ["folder"])
    }

    /// `removeAll` (what the executable's signal handler calls) removes every partial file.
    @Test func registryRemovesEveryPartialFile() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let files = try (0..<5).map { index in try AtomicFile(path: dir.file("f\(index).txt")) }
        let sound = try SoundFileWriter(path: dir.file("s.wav"), sampleRate: 8000, channels: 1, format: .s16)
        #expect(dir.contents().count == 6)
        PartialFiles.removeAll()
        #expect(dir.contents().isEmpty)
        withExtendedLifetime((files, sound)) {}
    }

    /// Timing files (two for SMIL) and plots are written through it: nothing is left beside
    /// them, and a failure leaves no partial file.
    @Test func timingFilesAreAtomic() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let words = [WordTiming(index: 0, text: "hi", startFrame: 0, endFrame: 4800)]
        try WordTimings.write(words, rate: 48000, to: dir.file("w.smil"))
        #expect(dir.contents().sorted() == ["w.smil", "w.xhtml"])
        #expect(throws: NarratorError.self) { try WordTimings.write(words, rate: 48000, to: dir.file("none/w.vtt")) }
        #expect(dir.contents().sorted() == ["w.smil", "w.xhtml"])
    }
}
