import Foundation

/// Where the package's files are, for tests: found from this file's own path, so tests run
/// from any working directory.
public enum Repo {
    public static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }

    /// The `narrator` executable built beside the running test bundle.
    public static var narrator: String {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("narrator").path
    }
}

/// A fresh folder under the system temp dir, removed by `remove()`.
public struct TempDir: Sendable {
    public let url: URL
    public var path: String { url.path }

    public init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("narrator-test-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func file(_ name: String) -> String { url.appendingPathComponent(name).path }

    @discardableResult
    public func write(_ name: String, _ text: String) -> String {
        let path = file(name)
        try? FileManager.default.createDirectory(
            at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        return path
    }

    @discardableResult
    public func write(_ name: String, data: Data) -> String {
        let path = file(name)
        _ = FileManager.default.createFile(atPath: path, contents: data)
        return path
    }

    /// A lesson of one clip, `clip`, that sox makes from nothing (`sox -n -r 48000 -c CHANNELS
    /// -b 16 CLIP.wav synth …`), played by `chain`; 48 kHz stereo. Returns the lesson's path.
    public func soxLesson(clip: String, chain: String, channels: Int = 1, synth: [String]) throws -> String {
        let audio = file("\(clip).wav")
        let made = try runTool("sox", ["-n", "-r", "48000", "-c", String(channels), "-b", "16", audio, "synth"] + synth)
        guard made.status == 0 else { throw SoxFailure(description: "sox: \(made.stderr)") }
        return write(
            "\(clip).json",
            #"{"sampleRate": 48000, "channels": 2, "clips": {"\#(clip)": {"file": "\#(audio)"}}, "chains": {"\#(chain)": [{"clip": "\#(clip)"}]}}"#)
    }

    public struct SoxFailure: Error, CustomStringConvertible {
        public let description: String
    }

    public func contents() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    public func remove() { try? FileManager.default.removeItem(at: url) }
}

extension TempDir {
    /// A folder that looks like the repository's root (its top-level entries linked), so that
    /// each example runs "from the repo root" against the sample library while the files it
    /// writes land in the folder, not in the checkout.
    public static func repoLookalike() throws -> TempDir {
        let dir = TempDir()
        for entry in try FileManager.default.contentsOfDirectory(atPath: Repo.root.path) where ![".build", ".git"].contains(entry) {
            try FileManager.default.createSymbolicLink(atPath: dir.file(entry), withDestinationPath: Repo.path(entry))
        }
        return dir
    }
}

/// What a finished process said.
public struct ProcessResult: Sendable {
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

/// Runs `executable` with `arguments` and waits for it.
public func run(_ executable: String, _ arguments: [String], cwd: String? = nil) throws -> ProcessResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let cwd { process.currentDirectoryURL = URL(fileURLWithPath: cwd) }
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    // Read both pipes to the end before waiting, so a chatty child cannot block.
    let group = DispatchGroup()
    nonisolated(unsafe) var errData = Data()
    group.enter()
    DispatchQueue.global().async {
        errData = err.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return ProcessResult(
        status: process.terminationStatus,
        stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// Runs a program found on PATH.
public func runTool(_ name: String, _ arguments: [String]) throws -> ProcessResult {
    try run("/usr/bin/env", [name] + arguments)
}

/// Ground truth written by scripts/make-fixtures.py from the audio it assembled.
public struct TruthWords: Decodable, Sendable {
    public struct Word: Decodable, Sendable {
        public let text: String
        public let startFrame: Int
        public let endFrame: Int
    }
    public let sampleRate: Int
    public let frames: Int
    public let words: [Word]

    public init(path: String) throws {
        self = try JSONDecoder().decode(TruthWords.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// Finds sounds in samples without any knowledge of the schedule: a sound starts at a
/// non-zero sample that follows at least `minGap` exact zeros (or the start), and ends after
/// its last non-zero sample before such a run. Fixture words are separated by digital silence.
public func soundSpans(_ samples: [Float], channels: Int = 1, minGap: Int = 200) -> [Range<Int>] {
    let frames = samples.count / channels
    func silent(_ f: Int) -> Bool {
        for c in 0..<channels where samples[f * channels + c] != 0 { return false }
        return true
    }
    var spans: [Range<Int>] = []
    var start: Int?
    var lastSound = -1
    var zeros = minGap
    for f in 0..<frames {
        if silent(f) {
            zeros += 1
            if let s = start, zeros >= minGap {
                spans.append(s..<(lastSound + 1))
                start = nil
            }
        } else {
            if start == nil { start = f }
            lastSound = f
            zeros = 0
        }
    }
    if let s = start { spans.append(s..<(lastSound + 1)) }
    return spans
}

/// Everything readable from `path` until its end (a FIFO: until its writer closes), with
/// open(2) and read(2); empty when it cannot be opened.
public func readAll(_ path: String) -> Data {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return Data() }
    defer { close(descriptor) }
    var data = Data()
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            data.append(contentsOf: chunk[0..<count])
        } else if count == 0 || errno != EINTR {
            return data
        }
    }
}
