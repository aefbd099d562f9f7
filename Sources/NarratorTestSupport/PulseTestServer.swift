import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// End-to-end live-playback tests: a private PulseAudio server whose only sink is a pipe sink
// (scripts/pulse-test-server.sh), a recorder that saves everything the sink plays together with
// when each piece arrived (scripts/fifo-recorder.py), and the analysis that turns that into
// "reference frame k was heard at CLOCK_MONOTONIC time t".

// MARK: - Server

/// Which sound server the live tests start: the one place that chooses. PulseAudio unless
/// `NARRATOR_TEST_SOUND_SERVER` says `pipewire` (PipeWire with its pulse server and WirePlumber,
/// scripts/pipewire-test-server.sh); the clients see the same `PULSE_SERVER`, ALSA devices and
/// recording either way.
public enum TestSoundServer: String, Sendable, CaseIterable {
    case pulseaudio
    case pipewire

    /// The variable that chooses.
    public static let variable = "NARRATOR_TEST_SOUND_SERVER"

    /// The chosen server: `.pulseaudio` when the variable is unset or empty, nil when it names
    /// neither (``PulseTestServer/missingRequirements`` then says so, and `init` throws).
    public static var selected: TestSoundServer? {
        let value = ProcessInfo.processInfo.environment[variable] ?? ""
        return value.isEmpty ? .pulseaudio : TestSoundServer(rawValue: value)
    }

    /// The script that starts, records and stops it.
    public var script: String {
        switch self {
        case .pulseaudio: Repo.path("scripts/pulse-test-server.sh")
        case .pipewire: Repo.path("scripts/pipewire-test-server.sh")
        }
    }

    /// The log of the daemon the clients talk to (in the server's directory).
    var serverLog: String {
        switch self {
        case .pulseaudio: "pulse.log"
        case .pipewire: "pipewire-pulse.log"
        }
    }

    /// Every daemon log the script writes, for error messages.
    var logs: [String] {
        switch self {
        case .pulseaudio: ["pulse.log"]
        case .pipewire: ["pipewire.log", "pipewire-pulse.log", "wireplumber.log"]
        }
    }
}

/// A private PulseAudio server (or PipeWire's pulse server, ``TestSoundServer``) with a pipe
/// sink, recording everything it plays.
///
/// `init` starts the daemon (`scripts/pulse-test-server.sh start`) in a fresh directory under
/// `/tmp` (`scripts/pipewire-test-server.sh start` when ``TestSoundServer/selected`` is PipeWire)
/// and the FIFO recorder beside it, and returns once the recorder is reading. Launch ALSA
/// clients (the `narrator` CLI, `aplay`) with ``environment``: their `default` device is this
/// server's sink. Afterwards ``recording(settle:)`` returns what was played, with the audible
/// clock fitted.
///
/// Every instance has its own directory, socket and daemon, so tests running in parallel each
/// start their own. `stop()` ends the daemon and the recorder; `deinit` calls it and removes the
/// directory unless `keepFiles` was set.
///
/// ```swift
/// let server = try PulseTestServer()
/// let player = try server.startClient(Repo.narrator, ["play", lesson, "--chain", "correct"])
/// player.waitUntilExit()
/// let recording = try server.recording()
/// let alignment = try #require(recording.locate(reference, channels: 2))
/// ```
///
/// Sendable: every stored property is immutable or lives in the `Mutex`.
public final class PulseTestServer: Sendable {
    /// The server's directory (≤ 90 plain characters, as the script requires): socket, FIFO,
    /// `pulse.log`, `recorder.log`, `rec.raw`, `rec.times.tsv`.
    public let directory: String
    /// The sink's sample rate.
    public let rate: Int
    /// The sink's channel count.
    public let channels: Int
    /// Which server this is.
    public let kind: TestSoundServer
    /// The process id of the daemon the clients talk to: pulseaudio, or pipewire-pulse (the
    /// PipeWire graph and WirePlumber run beside it; ``stop()`` ends them too).
    public let daemonPID: pid_t
    /// Only the variables the script wrote to `DIR/env` (`ALSA_CONFIG_PATH`, `PULSE_SERVER`,
    /// `PULSE_CLIENTCONFIG`, `PULSE_COOKIE`, `NARRATOR_PULSE_*`).
    public let clientVariables: [String: String]
    /// The environment for a client process: ``clientVariables`` over this process's own
    /// environment.
    public let environment: [String: String]

    /// The recording of everything the sink played: s16le, interleaved.
    public var rawPath: String { directory + "/rec.raw" }
    /// One line per read of the FIFO: `bytes_so_far<TAB>monotonic_ns`.
    public var timesPath: String { directory + "/rec.times.tsv" }
    /// The log of the daemon the clients talk to.
    public var logPath: String { directory + "/" + kind.serverLog }

    /// The selected server's script: `scripts/pulse-test-server.sh` or
    /// `scripts/pipewire-test-server.sh`.
    public static var script: String { (TestSoundServer.selected ?? .pulseaudio).script }

    private let keepFiles: Bool
    private let state: Mutex<State>

    private struct State {
        var recorder: Process?
        var stopped = false
    }

    /// Whether this machine has what the selected server needs: `pulseaudio` (or `pipewire`,
    /// `wireplumber`, `pw-metadata` and PipeWire's pulse module), `pactl` and `python3` on PATH
    /// and ALSA's pulse plugin (libasound2-plugins).
    public static var isAvailable: Bool { missingRequirements.isEmpty }

    /// What is missing for ``isAvailable``, by package, for a skip message.
    public static var missingRequirements: [String] {
        var missing: [String] = []
        switch TestSoundServer.selected {
        case .pulseaudio:
            if findExecutable("pulseaudio") == nil { missing.append("pulseaudio") }
        case .pipewire:
            if findExecutable("pipewire") == nil { missing.append("pipewire") }
            if findExecutable("wireplumber") == nil { missing.append("wireplumber") }
            if findExecutable("pw-metadata") == nil { missing.append("pipewire-bin (pw-metadata)") }
            if !libraryExists("pipewire-0.3/libpipewire-module-protocol-pulse.so") { missing.append("pipewire-pulse") }
        case nil:
            missing.append("\(TestSoundServer.variable) must be pulseaudio or pipewire (or unset)")
        }
        if findExecutable("pactl") == nil { missing.append("pulseaudio-utils (pactl)") }
        if findExecutable("python3") == nil { missing.append("python3") }
        if !libraryExists("alsa-lib/libasound_module_pcm_pulse.so") { missing.append("libasound2-plugins (ALSA pulse plugin)") }
        return missing
    }

    /// Whether `/usr/lib/*/path` or `/usr/lib/path` exists.
    private static func libraryExists(_ path: String) -> Bool {
        let libDirs = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? [])
            .map { "/usr/lib/\($0)" } + ["/usr/lib"]
        return libDirs.contains { FileManager.default.fileExists(atPath: "\($0)/\(path)") }
    }

    /// Whether this process may start a program at SCHED_FIFO (`chrt -f 10 true` succeeds):
    /// root alone is not enough where a container drops CAP_SYS_NICE or gives real-time
    /// threads no time.
    public static let realtimePermitted: Bool = {
        guard let chrt = findExecutable("chrt"), let result = try? run(chrt, ["-f", "10", "true"]) else { return false }
        return result.status == 0
    }()

    /// The full path of `name` on PATH, if any.
    public static func findExecutable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Starts a server and its recorder.
    ///
    /// - Parameters:
    ///   - rate: the sink's sample rate.
    ///   - channels: the sink's channel count.
    ///   - keepFiles: keep the directory (logs, recording) after `deinit`, to look at it.
    ///   - readyTimeout: how long to wait for the recorder to be reading the FIFO.
    /// - Throws: ``PulseTestServerError`` with the script's message and the tail of
    ///   `pulse.log` when the server or the recorder does not come up.
    public init(rate: Int = 48000, channels: Int = 2, keepFiles: Bool = false,
                readyTimeout: TimeInterval = 10) throws {
        precondition(rate > 0 && channels > 0, "rate and channels must be positive")
        guard let kind = TestSoundServer.selected else {
            throw PulseTestServerError("\(TestSoundServer.variable) must be pulseaudio or pipewire (or unset)")
        }
        let dir = try Self.makeDirectory()
        let start: ProcessResult
        do {
            start = try run("/bin/bash", [kind.script, "start", dir, String(rate), String(channels)])
        } catch {
            try? FileManager.default.removeItem(atPath: dir)
            throw PulseTestServerError("cannot run \(kind.script): \(error)")
        }
        guard start.status == 0 else {
            // The script has already stopped what it started and put the log tail on stderr.
            let message = start.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            if !keepFiles { try? FileManager.default.removeItem(atPath: dir) }
            throw PulseTestServerError("\(kind.script) start \(dir) failed (status \(start.status)):\n\(message)")
        }
        let pidText = (try? String(contentsOfFile: dir + "/pid", encoding: .utf8)) ?? ""
        let variables = Self.parseEnvFile(dir + "/env")
        directory = dir
        self.kind = kind
        self.rate = rate
        self.channels = channels
        self.keepFiles = keepFiles
        daemonPID = pid_t(pidText.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        clientVariables = variables
        environment = ProcessInfo.processInfo.environment.merging(variables) { _, new in new }
        state = Mutex(State())
        // From here on a throw runs deinit, which stops the daemon (and the recorder).
        guard daemonPID > 0, variables["PULSE_SERVER"] != nil, variables["ALSA_CONFIG_PATH"] != nil else {
            throw PulseTestServerError("\(kind.script) start left no usable \(dir)/pid or \(dir)/env\n\(logTail())")
        }
        try startRecorder(timeout: readyTimeout)
    }

    deinit {
        stop()
        if !keepFiles { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Whether the daemon still runs (it is checked to be this server's pulseaudio, so a reused
    /// process id does not count).
    public var isDaemonRunning: Bool {
        guard kill(daemonPID, 0) == 0,
              let status = try? String(contentsOfFile: "/proc/\(daemonPID)/status", encoding: .utf8),
              !status.contains("State:\tZ"),
              let environ = FileManager.default.contents(atPath: "/proc/\(daemonPID)/environ")
        else { return false }
        return environ.split(separator: 0).contains { Data($0) == Data("PULSE_RUNTIME_PATH=\(directory)/runtime".utf8) }
    }

    /// Kills the daemon with SIGKILL, as a crash would (the "server dies mid-playback" test).
    /// On PulseAudio the pipe sink's FIFO then reaches EOF and the recorder ends; on PipeWire
    /// only pipewire-pulse dies (the clients' server) and the graph's sink goes on recording
    /// silence. The recording stays.
    public func killDaemon() {
        guard isDaemonRunning else { return }
        _ = kill(daemonPID, SIGKILL)
    }

    /// Stops the daemons and the recorder (the script's `stop`). Idempotent; `deinit`
    /// calls it. The recording and the logs stay until `deinit`.
    public func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            _ = try? run("/bin/bash", [kind.script, "stop", directory])
            if let recorder = state.recorder {
                // The script has ended it (or it saw EOF); make sure, then reap it.
                let deadline = Date().addingTimeInterval(5)
                while recorder.isRunning && Date() < deadline { usleep(10_000) }
                if recorder.isRunning { _ = kill(recorder.processIdentifier, SIGKILL) }
                recorder.waitUntilExit()
            }
            state.recorder = nil
        }
    }

    /// What the sink has played so far.
    ///
    /// - Parameter settle: seconds to wait first, so that the recorder has read and written the
    ///   last blocks (it reads each within microseconds of the sink writing it; 0.1 s is ample).
    ///   Call it after the playback under test has ended.
    public func recording(settle: TimeInterval = 0.1) throws -> Recording {
        if settle > 0 { Thread.sleep(forTimeInterval: settle) }
        let recording = try Recording(rawFile: rawPath, timesFile: timesPath, rate: rate, channels: channels)
        HostStalls.check(recording.clock, what: "recording in \(URL(fileURLWithPath: rawPath).deletingLastPathComponent().path)")
        return recording
    }

    /// Launches `executable` as a client of this server (``environment``), stdin from
    /// /dev/null, stdout and stderr appended to `logFile` (default `DIR/clients.log`). The
    /// caller owns the process: wait for it, or signal it by its `processIdentifier`.
    public func startClient(_ executable: String, _ arguments: [String], logFile: String? = nil) throws -> Process {
        let logPath = logFile ?? directory + "/clients.log"
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        guard let log = FileHandle(forWritingAtPath: logPath) else {
            throw PulseTestServerError("cannot write \(logPath)")
        }
        defer { try? log.close() }  // the child has its own copy
        log.seekToEndOfFile()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = log
        process.standardError = log
        try process.run()
        return process
    }

    /// Runs `executable` as a client of this server (``environment``) and waits for it,
    /// capturing its output like ``run(_:_:cwd:)``.
    public func runClient(_ executable: String, _ arguments: [String]) throws -> ProcessResult {
        // `env -i` + the full environment: `run` itself has no environment parameter.
        try run("/usr/bin/env", ["-i"] + environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            + [executable] + arguments)
    }

    /// The last `lines` lines of the daemons' logs and `recorder.log`, for error messages.
    public func logTail(lines: Int = 30) -> String {
        var out = ""
        for name in kind.logs + ["recorder.log"] {
            guard let text = try? String(contentsOfFile: "\(directory)/\(name)", encoding: .utf8) else { continue }
            let tail = text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines)
            out += "--- \(directory)/\(name) (tail) ---\n" + tail.joined(separator: "\n") + "\n"
        }
        return out
    }

    // MARK: Private

    private func startRecorder(timeout: TimeInterval) throws {
        let logPath = directory + "/recorder.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        guard let log = FileHandle(forWritingAtPath: logPath) else {
            throw PulseTestServerError("cannot write \(logPath)")
        }
        let recorder = Process()
        recorder.executableURL = URL(fileURLWithPath: "/bin/bash")
        recorder.arguments = [kind.script, "record", directory, rawPath, timesPath]
        recorder.standardInput = FileHandle.nullDevice
        recorder.standardOutput = log
        recorder.standardError = log
        do {
            try recorder.run()
        } catch {
            try? log.close()
            throw PulseTestServerError("cannot start the recorder: \(error)")
        }
        try? log.close()
        state.withLock { $0.recorder = recorder }

        let ready = directory + "/recorder.ready"
        let deadline = Date().addingTimeInterval(timeout)
        while !FileManager.default.fileExists(atPath: ready) {
            guard recorder.isRunning else {
                throw PulseTestServerError(
                    "the recorder ended (status \(recorder.terminationStatus)) before it was ready\n\(logTail())")
            }
            guard Date() < deadline else {
                throw PulseTestServerError("the recorder was not ready within \(timeout) s\n\(logTail())")
            }
            usleep(5_000)
        }
    }

    /// A fresh `/tmp/nps.XXXXXX`: short and plain, as the script needs for the unix socket path
    /// and the module arguments.
    private static func makeDirectory() throws -> String {
        var template = Array("/tmp/nps.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw PulseTestServerError("mkdtemp /tmp/nps.XXXXXX: \(String(cString: strerror(errno)))")
        }
        return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The `export K=V` lines of `DIR/env` (values are written unquoted and plain).
    private static func parseEnvFile(_ path: String) -> [String: String] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
        var variables: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard line.hasPrefix("export "), let eq = line.firstIndex(of: "=") else { continue }
            let key = line[line.index(line.startIndex, offsetBy: 7)..<eq]
            variables[String(key)] = String(line[line.index(after: eq)...])
        }
        return variables
    }
}

/// Why a ``PulseTestServer`` or a ``Recording`` could not be made.
public struct PulseTestServerError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, with the logs' tails where they help.
    public let description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}

// MARK: - Recording and its audible clock

/// What the pipe sink played, and when each frame was heard.
///
/// Made by ``PulseTestServer/recording(settle:)`` from `rec.raw` and `rec.times.tsv`, or from
/// memory (for tests of the analysis itself). The clock is fitted at construction: see
/// ``AudibleClock`` for the model.
public struct Recording: Sendable {
    /// One read of the FIFO by the recorder: all bytes read so far, and the CLOCK_MONOTONIC time
    /// just after that read returned.
    public struct Read: Sendable, Equatable {
        /// Bytes read so far, this read included.
        public var bytes: Int
        /// CLOCK_MONOTONIC nanoseconds just after the read returned.
        public var nanoseconds: UInt64
        /// Memberwise.
        public init(bytes: Int, nanoseconds: UInt64) {
            self.bytes = bytes
            self.nanoseconds = nanoseconds
        }
    }

    /// Sample rate.
    public let rate: Int
    /// Channel count.
    public let channels: Int
    /// Interleaved s16 samples, whole frames only.
    public let samples: [Int16]
    /// The recorder's reads, in order.
    public let reads: [Read]
    /// The fitted audible clock.
    public let clock: AudibleClock

    /// Frames recorded.
    public var frames: Int { samples.count / channels }
    /// Bytes per frame in the FIFO (s16).
    public var bytesPerFrame: Int { channels * 2 }

    /// A recording from memory.
    ///
    /// - Parameters:
    ///   - samples: interleaved; a trailing partial frame is dropped.
    ///   - reads: `bytes` strictly increasing, `nanoseconds` never decreasing. At least a few
    ///     reads are needed to fit the clock.
    /// - Throws: ``PulseTestServerError`` when the reads are out of order or too few to fit.
    public init(rate: Int, channels: Int, samples: [Int16], reads: [Read]) throws {
        precondition(rate > 0 && channels > 0, "rate and channels must be positive")
        self.rate = rate
        self.channels = channels
        self.samples = samples.count % channels == 0 ? samples : Array(samples.prefix(samples.count - samples.count % channels))
        for i in reads.indices.dropFirst()
        where reads[i].bytes <= reads[i - 1].bytes || reads[i].nanoseconds < reads[i - 1].nanoseconds {
            throw PulseTestServerError(
                "read \(i) (\(reads[i].bytes) bytes at \(reads[i].nanoseconds) ns) does not follow read \(i - 1) "
                    + "(\(reads[i - 1].bytes) bytes at \(reads[i - 1].nanoseconds) ns)")
        }
        self.reads = reads
        clock = try AudibleClock(reads: reads, bytesPerFrame: channels * 2, rate: rate)
    }

    /// A recording from the recorder's files. Bytes past the last complete line of the times
    /// file are kept as samples (the recorder writes them before their line); a partial last
    /// line is ignored.
    public init(rawFile: String, timesFile: String, rate: Int, channels: Int) throws {
        guard let raw = FileManager.default.contents(atPath: rawFile) else {
            throw PulseTestServerError("cannot read \(rawFile)")
        }
        guard let timesData = FileManager.default.contents(atPath: timesFile) else {
            throw PulseTestServerError("cannot read \(timesFile)")
        }
        let sampleCount = raw.count / 2
        // One copy (minutes of audio are tens of millions of samples), then from little-endian.
        var samples = [Int16](unsafeUninitializedCapacity: sampleCount) { buffer, initialized in
            _ = raw.copyBytes(to: UnsafeMutableRawBufferPointer(buffer), count: sampleCount * 2)
            initialized = sampleCount
        }
        if 1.littleEndian != 1 {
            for i in samples.indices { samples[i] = Int16(littleEndian: samples[i]) }
        }
        var reads: [Read] = []
        let text = String(decoding: timesData, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()  // after the last "\n": empty, or a line still being written
        for (number, line) in lines.enumerated() {
            let fields = line.split(separator: "\t")
            guard fields.count == 2, let bytes = Int(fields[0]), let ns = UInt64(fields[1]) else {
                throw PulseTestServerError("\(timesFile): line \(number + 1): expected bytes<TAB>nanoseconds, got '\(line)'")
            }
            guard bytes <= raw.count else { break }
            reads.append(Read(bytes: bytes, nanoseconds: ns))
        }
        try self.init(rate: rate, channels: channels, samples: samples, reads: reads)
    }

    /// The CLOCK_MONOTONIC time, in nanoseconds, at which recording frame `k` was heard (see
    /// ``AudibleClock``). `k` may lie outside the recording: the clock is a line.
    public func audibleTime(ofFrame k: Int) -> UInt64 {
        UInt64(max(0, clock.nanoseconds(atFrame: Double(k)).rounded()))
    }

    /// The recording frame (fractional) heard at CLOCK_MONOTONIC time `nanoseconds`: the
    /// inverse of ``audibleTime(ofFrame:)``.
    public func frame(audibleAt nanoseconds: UInt64) -> Double {
        clock.frame(atNanoseconds: Double(nanoseconds))
    }

    /// Finds `reference` (the offline render of what was played, interleaved s16 with
    /// `channels` channels, which must be the recording's) in the recording. See ``Alignment``.
    ///
    /// - Returns: nil when the reference is empty or all digital silence, or when its first
    ///   sound (64 frames from its first non-zero frame) does not occur in the recording.
    public func locate(_ reference: [Int16], channels: Int) -> Alignment? {
        precondition(channels == self.channels, "the reference has \(channels) channels, the recording \(self.channels)")
        let whole = reference.count - reference.count % channels
        return reference.withUnsafeBufferPointer { ref in
            samples.withUnsafeBufferPointer { rec in
                Aligner(ref: UnsafeBufferPointer(rebasing: ref[0..<whole]), rec: rec, channels: channels).align()
            }
        }
    }
}

/// When each recording frame was heard, fitted from the recorder's read times.
///
/// **What is heard when.** module-pipe-sink with `use_system_clock_for_timing=yes` keeps a
/// timestamp `T`, the start of the time slot of the next byte it will write. When CLOCK_MONOTONIC
/// reaches `T` it wakes, renders the chunk for the slot `[T, T + B)` and writes it at once, so a
/// chunk's first byte reaches the FIFO at about its slot start and frame `o` of the chunk is heard
/// at `T + o / rate`. That is the ground truth this clock models: recording frame `k` is heard at
/// `origin + k × nanosecondsPerFrame`.
///
/// **What the recorder sees.** One line per read: all bytes so far, and the time just after the
/// read returned. The reader is only ever late, so for a read that starts with the first byte
/// of a wake-up's writes, `slotStart(startByte) ≤ readTime`. Not every read is such a read:
///
/// - One wake-up may write more than one chunk (PulseAudio 16's `process_render_use_timing`
///   keeps rendering while `T < now + block` and the chunks come out shorter than the maximum
///   request), and a write longer than the recorder's 4096-byte read is read in two. The bytes
///   after the first read of a wake-up were written up to a block *ahead* of their slot, so
///   those reads would lie a block (~21 ms) below the line. Observed: during `aplay` playback,
///   one wake-up in six wrote 7632 bytes, read as 4096 + 3536 bytes 0.1 ms apart.
/// - Two chunks of one wake-up are two write(2) calls, tens of microseconds apart (the second
///   is rendered in between), and a reader on another core often drains the first before the
///   second arrives: a short read, then the rest ~0.1 ms later, again a block early. Observed
///   in most `aplay` runs: a 3540-byte read, then a 4092-byte one 0.095 ms later, 18 ms early.
///   So the pipe being empty after a short read does not mean the next read starts a wake-up.
/// - So a read is used as a point `(startByte, readTime)` only when it came at least
///   ``freshReadGapNanoseconds`` (1 ms) after the read before it: the reader was blocked on an
///   empty pipe for that long, so the sink had gone back to sleep. Reads of one wake-up follow
///   each other within ~0.1 ms. (A sink block shorter than ~2 ms, i.e. a stream asking for a
///   latency that low, would leave few points.)
///
/// **The fit.** A least-squares line of read time on start frame over those points is refitted
/// three times without the points farther than `max(6 × 1.4826 × MAD, 0.25 ms)` from the median
/// residual: reader stalls (late by milliseconds) and the rare early point the rules above let
/// through (e.g. a reader descheduled between two reads of one wake-up). Then the lower
/// envelope: the two kept points lowest under that line are set aside, so that up to two bogus
/// early points that survived the trimming cannot pull the clock early, and the line is the
/// one under all the other kept points that lies closest to them on average (the edge of their
/// lower convex hull above their mean frame: the linear program "maximise Σ line(xᵢ) subject to
/// line(xᵢ) ≤ tᵢ"). Unlike least squares it rests on the points nearest the envelope only, so a
/// reader whose lateness changes with load cannot tilt it (on synthetic reads late by 0–1 ms,
/// uniformly, least squares missed the slope by up to 2.9 ppm, this by up to 1.6 ppm, and T0 by
/// a few microseconds). The clock is therefore late by the smallest sink-to-reader latency
/// (timer wake-up + pipe read, tens of microseconds), which no recording can reveal.
///
/// **Drift.** The sink's clock is CLOCK_MONOTONIC, but it advances `T` by each chunk's duration
/// in whole microseconds, rounded down: 1024-frame chunks (idle at 48 kHz: 21333.33 µs → 21333)
/// run 15.6 ppm fast, 1023-frame chunks (a stream asking for ~21 ms) 23.5 ppm, and the chunks
/// follow the client's writes: with `aplay --period-time=25000` each wake-up writes its 1200
/// frames as two chunks, 1023 + 177 frames (21312 + 3687 µs for 25 ms: 40 ppm fast). The slope
/// is fitted rather than nominal for that reason (measured: −22.7 ppm over 70 s of idle and
/// default `aplay` playback, whose chunks alternate between 1023 and 884/885 frames; −48 to
/// −64 ppm with 25 ms periods). A recording that switches between chunk sizes for long
/// stretches bends by up to a few ppm × its duration, which ``residualsMs`` shows; over those
/// 70 s the envelope stayed within 0.11 ms of the line. On a 3.5 s recording the fitted slope
/// scatters by ±20 ppm, i.e. ±35 µs at its ends.
public struct AudibleClock: Sendable {
    /// The residuals in milliseconds: read time minus the fitted slot start of the read's first
    /// byte, over every point the fit considered. The typical value is the sink-to-reader
    /// latency; the late tail is the reader's stalls (a loaded machine); negative values are
    /// the bogus early points the fit set aside.
    public struct Residuals: Sendable, CustomStringConvertible {
        /// The smallest (negative when there were bogus early points).
        public let min: Double
        /// The median: the typical sink-to-reader latency.
        public let p50: Double
        /// The 99th percentile (reader stalls show here).
        public let p99: Double
        /// The largest: the worst reader stall.
        public let max: Double
        /// Points considered.
        public let count: Int
        /// Points more than 0.25 ms below the envelope: reads that the rules took for the start
        /// of a wake-up but that were not (e.g. the reader stalled between two reads of one
        /// wake-up's writes), set aside by the fit.
        public let early: Int
        /// One line for test output.
        public var description: String {
            String(format: "p50 %.3f ms, p99 %.3f ms, max %.3f ms over %d reads (%d early, min %.3f ms)",
                   p50, p99, max, count, early, min)
        }
    }

    /// Sample rate.
    public let rate: Int
    /// CLOCK_MONOTONIC nanoseconds at which recording frame 0 was heard.
    public let originNanoseconds: Double
    /// Fitted nanoseconds per frame.
    public let nanosecondsPerFrame: Double
    /// Residual statistics (see ``Residuals``).
    public let residualsMs: Residuals
    /// Reads used as points (those taken to start a fresh wake-up), of ``readCount``.
    public let pointCount: Int
    /// Points the envelope was fitted under (after trimming, less the two lowest set aside).
    public let fittedPointCount: Int
    /// All reads.
    public let readCount: Int

    /// The fitted slope against the nominal `1e9 / rate` ns per frame, in parts per million
    /// (negative: the sink's clock runs fast).
    public var slopePPM: Double { (nanosecondsPerFrame * Double(rate) / 1e9 - 1) * 1e6 }

    /// When (fractional) recording frame `frame` was heard, in CLOCK_MONOTONIC nanoseconds.
    public func nanoseconds(atFrame frame: Double) -> Double { originNanoseconds + frame * nanosecondsPerFrame }

    /// Which (fractional) recording frame was heard at `nanoseconds`.
    public func frame(atNanoseconds nanoseconds: Double) -> Double { (nanoseconds - originNanoseconds) / nanosecondsPerFrame }

    /// A read counts as starting a fresh wake-up of the sink when it came at least this long
    /// after the previous read.
    public static let freshReadGapNanoseconds: UInt64 = 1_000_000

    /// Fits the clock to `reads` (see the type's documentation).
    public init(reads: [Recording.Read], bytesPerFrame: Int, rate: Int) throws {
        self.rate = rate
        readCount = reads.count
        // Points: x = start frame of the read, y = read time, relative to the first read.
        guard let t0 = reads.first?.nanoseconds else {
            throw PulseTestServerError("no reads recorded: cannot fit the audible clock")
        }
        var xs: [Double] = []
        var ys: [Double] = []
        for i in reads.indices.dropFirst() {
            // Read 0 has no read before it (and the recorder's backlog drop may have ended
            // inside a write): it is never a point.
            guard reads[i].nanoseconds - reads[i - 1].nanoseconds >= Self.freshReadGapNanoseconds else { continue }
            xs.append(Double(reads[i - 1].bytes) / Double(bytesPerFrame))
            ys.append(Double(reads[i].nanoseconds - t0))
        }
        guard xs.count >= 2, xs.first != xs.last else {
            throw PulseTestServerError("\(reads.count) reads (\(xs.count) usable) are too few to fit the audible clock")
        }
        pointCount = xs.count

        var keep = [Bool](repeating: true, count: xs.count)
        var (a, slope) = Self.leastSquares(xs, ys, keep)
        for _ in 0..<3 {
            let residuals = xs.indices.map { ys[$0] - (a + slope * xs[$0]) }
            let median = Self.percentile(residuals.sorted(), 50)
            let mad = Self.percentile(residuals.map { abs($0 - median) }.sorted(), 50)
            let tolerance = Swift.max(6 * 1.4826 * mad, 250_000)
            let next = residuals.map { abs($0 - median) <= tolerance }
            guard next.contains(true) else { break }
            keep = next
            (a, slope) = Self.leastSquares(xs, ys, keep)
        }
        // The lower envelope. Set aside the two kept points lowest under the trimmed
        // least-squares line (bogus early points, if any: up to two are harmless), then take the
        // line under all the others that lies closest to them on average: the lower convex hull's
        // edge above their mean x (the linear program "maximise Σ line(x_i) subject to
        // line(x_i) ≤ y_i"). Its error shrinks like 1/n, not 1/√n as least squares' does, and the
        // reader's lateness, which varies with load, cannot tilt it.
        var kept = xs.indices.filter { keep[$0] }.map { (x: xs[$0], r: ys[$0] - (a + slope * xs[$0])) }
        if kept.count > 8 {
            for lowest in kept.indices.sorted(by: { kept[$0].r < kept[$1].r }).prefix(2).sorted(by: >) {
                kept.remove(at: lowest)
            }
        }
        var hull: [(x: Double, r: Double)] = []  // kept is in x order (reads are)
        for point in kept {
            while hull.count >= 2 {
                let o = hull[hull.count - 2], p = hull[hull.count - 1]
                guard (p.x - o.x) * (point.r - o.r) - (p.r - o.r) * (point.x - o.x) <= 0 else { break }
                hull.removeLast()
            }
            hull.append(point)
        }
        let meanX = kept.reduce(0) { $0 + $1.x } / Double(kept.count)
        if let edge = hull.indices.dropLast().first(where: { hull[$0 + 1].x >= meanX }) {
            let p = hull[edge], q = hull[edge + 1]
            let ds = (q.r - p.r) / (q.x - p.x)
            a += p.r - ds * p.x
            slope += ds
        } else if let only = hull.first {
            a += only.r
        }
        fittedPointCount = kept.count
        nanosecondsPerFrame = slope
        originNanoseconds = Double(t0) + a

        let all = xs.indices.map { (ys[$0] - (a + slope * xs[$0])) / 1e6 }.sorted()
        residualsMs = Residuals(
            min: all.first!, p50: Self.percentile(all, 50), p99: Self.percentile(all, 99), max: all.last!,
            count: all.count, early: all.prefix { $0 < -0.25 }.count)
    }

    /// Intercept and slope of the least-squares line through the kept points (centred, so that
    /// nanosecond-sized numbers keep their precision).
    private static func leastSquares(_ xs: [Double], _ ys: [Double], _ keep: [Bool]) -> (Double, Double) {
        var n = 0.0, sx = 0.0, sy = 0.0
        for i in xs.indices where keep[i] {
            n += 1
            sx += xs[i]
            sy += ys[i]
        }
        let mx = sx / n, my = sy / n
        var sxy = 0.0, sxx = 0.0
        for i in xs.indices where keep[i] {
            sxy += (xs[i] - mx) * (ys[i] - my)
            sxx += (xs[i] - mx) * (xs[i] - mx)
        }
        let slope = sxx > 0 ? sxy / sxx : 0
        return (my - slope * mx, slope)
    }

    /// The `p`-th percentile of sorted values (``Percentile``'s nearest rank: a reported
    /// spread, not a checked bound).
    private static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        Percentile.nearestRank(p, sorted: sorted)
    }
}

// MARK: - Alignment

/// Where a reference render sits in a recording.
///
/// **Expected shape.** The recording is the reference, sample for sample (bit-exact s16),
/// preceded by the sink's silence, and possibly interrupted by inserted digital silence where
/// the player underran (e.g. a test stops it with SIGSTOP for 300 ms: the server plays zeros
/// meanwhile and then the rest continues with nothing lost or repeated). Observed with PulseAudio
/// 16: a stream's first frame lands on a sink chunk boundary (the sink mixes whole chunks), and
/// an underrun's silence is whole chunks too (`aplay` with a 100 ms buffer stopped for 300 ms:
/// 10 or 11 × 1023 frames).
///
/// **How it is found.** The first 64 frames from the reference's first non-zero frame are
/// looked for in the recording (a linear scan for their largest-magnitude sample, then a full
/// compare), and the reference is then matched forward greedily, frame by frame, for as long as
/// it agrees. At a mismatch: if the recording holds silence there, the next 64 reference frames
/// from the first non-zero frame on are looked for further on, and the zeros in between count
/// as an inserted gap; if it differs otherwise, a few frames later at the same offset are tried
/// (an altered sample), then fingerprints further ahead. Anything but inserted silence is an
/// ``issues`` entry and makes the alignment incomplete. Each step scans forward, so the whole
/// costs a few linear passes, not a quadratic search.
///
/// **Ambiguity.** The reference has digital silence of its own (between words, `silence`
/// items). When a gap falls inside such a stretch, the recording shows one longer run of zeros,
/// and which of its zeros belong to the reference cannot be known: any split is consistent. This
/// alignment resolves it deterministically, greedily: the reference's zeros stay right after the
/// sound before them and the gap is put at the end of the stretch (``Gap/referenceFrame`` is the
/// first non-zero frame after it). A cue inside such a stretch may legitimately have been heard
/// anywhere within the gap; ``ambiguousStretches`` lists them (with the recording frames they
/// may occupy) and ``recordingFrames(ofReferenceFrame:)`` gives the bounds. The same holds, by
/// nature, for leading silence (the recording cannot show when the stream started; it is placed
/// right before the first sound) and trailing silence (placed right after the last sound, with
/// the reference's end position included in its range).
public struct Alignment: Sendable, CustomStringConvertible {
    /// Reference frames `referenceStart..<referenceStart + length` are, bit for bit, recording
    /// frames `recordingStart..<recordingStart + length`.
    public struct Segment: Sendable, Equatable {
        /// The first reference frame.
        public let referenceStart: Int
        /// The recording frame it is.
        public let recordingStart: Int
        /// Frames.
        public let length: Int
        /// One past the last reference frame.
        public var referenceEnd: Int { referenceStart + length }
        /// One past the last recording frame.
        public var recordingEnd: Int { recordingStart + length }
        /// Memberwise.
        public init(referenceStart: Int, recordingStart: Int, length: Int) {
            self.referenceStart = referenceStart
            self.recordingStart = recordingStart
            self.length = length
        }
    }

    /// Silence inserted by the playback: `length` frames at `recordingStart`, before reference
    /// frame `referenceFrame` (a non-zero frame; see the ambiguity note on ``Alignment``).
    public struct Gap: Sendable, Equatable {
        /// The reference frame the silence comes before.
        public let referenceFrame: Int
        /// The silence's first recording frame.
        public let recordingStart: Int
        /// Its length in frames.
        public let length: Int
        /// Memberwise.
        public init(referenceFrame: Int, recordingStart: Int, length: Int) {
            self.referenceFrame = referenceFrame
            self.recordingStart = recordingStart
            self.length = length
        }
    }

    /// Reference positions whose recording frame is not determined: a stretch of reference
    /// silence that lies in a longer run of recording silence, `recordingFrames`. Reference
    /// position `referenceFrames.lowerBound + i` lies at some recording frame in
    /// `recordingFrames.lowerBound + i ... recordingFrames.upperBound - referenceFrames.count + i`.
    /// A trailing stretch includes the reference's end position (`referenceFrames.upperBound`
    /// is the reference's frame count + 1, `recordingFrames` one past the run).
    public struct AmbiguousStretch: Sendable, Equatable {
        /// The reference positions (silence; the trailing stretch also its end position).
        public let referenceFrames: Range<Int>
        /// The run of recording silence they lie in (the trailing stretch: one past it).
        public let recordingFrames: Range<Int>
        /// Memberwise.
        public init(referenceFrames: Range<Int>, recordingFrames: Range<Int>) {
            self.referenceFrames = referenceFrames
            self.recordingFrames = recordingFrames
        }

        /// The recording frames reference position `k` (in ``referenceFrames``) may occupy.
        public func bounds(ofReferenceFrame k: Int) -> ClosedRange<Int> {
            let i = k - referenceFrames.lowerBound
            return (recordingFrames.lowerBound + i)...(recordingFrames.upperBound - referenceFrames.count + i)
        }
    }

    /// The reference's length in frames.
    public let referenceFrameCount: Int
    /// The recording frame where reference frame 0 sits (as placed; see the ambiguity note).
    /// Negative if the recording started after it.
    public let startFrame: Int
    /// The matched stretches, in order.
    public let segments: [Segment]
    /// Inserted silences, in order.
    public let gaps: [Gap]
    /// Stretches of reference silence whose place is ambiguous (see ``Alignment``).
    public let ambiguousStretches: [AmbiguousStretch]
    /// What does not fit the expected shape: missing, altered, inserted (other than silence) or
    /// lost frames, a recording that ends early. Empty when ``isComplete``.
    public let issues: [String]

    /// The reference positions of ``ambiguousStretches``: cues there may legitimately be
    /// anywhere within their stretch's gap; exclude or relax them.
    public var ambiguousRanges: [Range<Int>] { ambiguousStretches.map(\.referenceFrames) }

    /// The whole reference was found, in order, with nothing missing or altered; only silence
    /// was inserted.
    public var isComplete: Bool { issues.isEmpty }

    /// The recording frame of reference position `k` (0…``referenceFrameCount``, the end
    /// position included), as placed: nil where that part of the reference was not found.
    public func recordingFrame(ofReferenceFrame k: Int) -> Int? {
        guard k >= 0, k <= referenceFrameCount, !segments.isEmpty else { return nil }
        // The last segment starting at or before k.
        var lo = 0, hi = segments.count
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if segments[mid].referenceStart <= k { lo = mid } else { hi = mid }
        }
        let segment = segments[lo]
        guard k >= segment.referenceStart else { return nil }
        if k < segment.referenceEnd || (k == referenceFrameCount && k == segment.referenceEnd) {
            return segment.recordingStart + (k - segment.referenceStart)
        }
        return nil
    }

    /// The recording frames reference position `k` may occupy: one frame, or the bounds an
    /// ambiguous stretch allows. Nil where that part of the reference was not found.
    public func recordingFrames(ofReferenceFrame k: Int) -> ClosedRange<Int>? {
        if let stretch = ambiguousStretches.first(where: { $0.referenceFrames.contains(k) }) {
            return stretch.bounds(ofReferenceFrame: k)
        }
        return recordingFrame(ofReferenceFrame: k).map { $0...$0 }
    }

    /// A summary for test failure messages: placement, gaps, ambiguous stretches, issues.
    public var description: String {
        var lines = ["reference (\(referenceFrameCount) frames) at recording frame \(startFrame): "
            + (isComplete ? "complete" : "INCOMPLETE") + ", \(segments.count) segment(s), \(gaps.count) gap(s)"]
        lines += gaps.map {
            "  gap of \($0.length) frames at recording frame \($0.recordingStart), before reference frame \($0.referenceFrame)"
        }
        lines += ambiguousStretches.map {
            "  ambiguous: reference \($0.referenceFrames) in recording silence \($0.recordingFrames)"
        }
        lines += issues.map { "  issue: \($0)" }
        return lines.joined(separator: "\n")
    }
}

/// The alignment algorithm over raw buffers (see ``Alignment``). All positions are frames.
private struct Aligner {
    let ref: UnsafeBufferPointer<Int16>
    let rec: UnsafeBufferPointer<Int16>
    let channels: Int
    let refFrames: Int
    let recFrames: Int
    /// Frames in a fingerprint.
    let fingerprint = 64

    init(ref: UnsafeBufferPointer<Int16>, rec: UnsafeBufferPointer<Int16>, channels: Int) {
        self.ref = ref
        self.rec = rec
        self.channels = channels
        refFrames = ref.count / channels
        recFrames = rec.count / channels
    }

    func align() -> Alignment? {
        guard refFrames > 0, recFrames > 0, let f0 = firstNonzeroRef(from: 0),
              let p = find(f0, from: 0)
        else { return nil }
        var issues: [String] = []
        var segments: [Alignment.Segment] = []
        var gaps: [Alignment.Gap] = []
        var stretches: [Alignment.AmbiguousStretch] = []

        // Leading silence: placed right before the first sound.
        var back = 0
        while back < f0, p - back - 1 >= 0, recZero(p - back - 1) { back += 1 }
        if back < f0 {
            issues.append("reference frames 0..<\(f0 - back) (silence) are missing: the recording "
                + (p - back == 0 ? "starts" : "holds sound") + " at frame \(p - back)")
        } else if f0 > 0 {
            var s = p - f0
            while s > 0, recZero(s - 1) { s -= 1 }
            if s < p - f0 { stretches.append(.init(referenceFrames: 0..<f0, recordingFrames: s..<p)) }
        }

        var refPos = f0 - back
        var recPos = p - back
        while true {
            let n = matchLength(refPos, recPos)
            if n > 0 { segments.append(.init(referenceStart: refPos, recordingStart: recPos, length: n)) }
            refPos += n
            recPos += n
            if refPos == refFrames { break }
            if recPos == recFrames {
                issues.append("the recording ends at frame \(recPos), at reference frame \(refPos) of \(refFrames)")
                break
            }
            guard let (q, r) = resync(refPos, recPos) else {
                if firstNonzeroRef(from: refPos) == nil {
                    issues.append(
                        "reference frames \(refPos)..<\(refFrames) (silence) do not match recording frame \(recPos) on (sound there)")
                } else {
                    issues.append("reference frames \(refPos)..<\(refFrames) not found in the recording after frame \(recPos)")
                }
                break
            }
            let expected = recPos + (q - refPos)
            if q == refPos, r > recPos, recAllZero(recPos..<r) {
                gaps.append(.init(referenceFrame: q, recordingStart: recPos, length: r - recPos))
                // The reference silence right before q (greedily matched already) is ambiguous.
                var z0 = q
                let segmentStart = segments.last?.referenceStart ?? 0
                while z0 > segmentStart, refZero(z0 - 1) { z0 -= 1 }
                if z0 < q {
                    stretches.append(.init(referenceFrames: z0..<q, recordingFrames: (recPos - (q - z0))..<r))
                }
            } else if r == expected {
                issues.append("recording frames \(recPos)..<\(r) differ from reference frames \(refPos)..<\(q)")
            } else if r < expected {
                issues.append(
                    "reference frames \(refPos)..<\(q) (\(q - refPos) frames) are \(r - recPos) frames in the recording "
                        + "(\(recPos)..<\(r)): \(expected - r) lost or altered")
            } else {
                issues.append(
                    "reference frames \(refPos)..<\(q) (\(q - refPos) frames) are \(r - recPos) frames in the recording "
                        + "(\(recPos)..<\(r)): \(r - expected) inserted, not all silence")
            }
            refPos = q
            recPos = r
        }

        // Trailing silence: placed right after the last sound.
        if let last = segments.last, last.referenceEnd == refFrames, let zl = lastNonzeroRef(), zl < refFrames - 1,
           last.referenceStart <= zl + 1 {
            let a = last.recordingStart + (zl + 1 - last.referenceStart)
            var b = last.recordingEnd
            while b < recFrames, recZero(b) { b += 1 }
            if b > last.recordingEnd {
                stretches.append(.init(referenceFrames: (zl + 1)..<(refFrames + 1), recordingFrames: a..<(b + 1)))
            }
        }

        // Belt and braces: a complete alignment tiles the reference.
        if issues.isEmpty {
            var next = 0
            for segment in segments where segment.referenceStart == next { next = segment.referenceEnd }
            if next != refFrames { issues.append("internal: the segments do not cover the reference (up to \(next))") }
        }
        return Alignment(referenceFrameCount: refFrames, startFrame: p - f0, segments: segments, gaps: gaps,
                         ambiguousStretches: stretches, issues: issues)
    }

    /// Where matching continues after a mismatch at (refPos, recPos): a reference frame `q` ≥
    /// refPos and the recording frame `r` ≥ recPos it sits at.
    private func resync(_ refPos: Int, _ recPos: Int) -> (Int, Int)? {
        if !recZero(recPos) {
            // An altered frame or a few: the same offset a little later.
            for d in 1...fingerprint where refPos + d < refFrames && recPos + d < recFrames {
                if matchLength(refPos + d, recPos + d, upTo: fingerprint) >= min(fingerprint, refFrames - refPos - d) {
                    return (refPos + d, recPos + d)
                }
            }
        }
        // Inserted silence (skip 0), or further ahead.
        for skip in [0, 1, fingerprint, 1024, 16384, 262_144, 4_194_304] where refPos + skip < refFrames {
            guard let q = firstNonzeroRef(from: refPos + skip) else { return nil }
            if let r = find(q, from: recPos) { return (q, r) }
        }
        return nil
    }

    private func refZero(_ f: Int) -> Bool {
        for i in (f * channels)..<((f + 1) * channels) where ref[i] != 0 { return false }
        return true
    }

    private func recZero(_ f: Int) -> Bool {
        for i in (f * channels)..<((f + 1) * channels) where rec[i] != 0 { return false }
        return true
    }

    private func recAllZero(_ frames: Range<Int>) -> Bool {
        for i in (frames.lowerBound * channels)..<(frames.upperBound * channels) where rec[i] != 0 { return false }
        return true
    }

    private func firstNonzeroRef(from f: Int) -> Int? {
        var i = f * channels
        while i < ref.count {
            if ref[i] != 0 { return i / channels }
            i += 1
        }
        return nil
    }

    private func lastNonzeroRef() -> Int? {
        var i = ref.count - 1
        while i >= 0 {
            if ref[i] != 0 { return i / channels }
            i -= 1
        }
        return nil
    }

    /// How many frames from reference frame `i` and recording frame `j` on are equal (at most
    /// `limit`), compared with memcmp a block at a time.
    private func matchLength(_ i: Int, _ j: Int, upTo limit: Int = .max) -> Int {
        let most = min(refFrames - i, recFrames - j, limit)
        guard most > 0 else { return 0 }
        let a = ref.baseAddress! + i * channels
        let b = rec.baseAddress! + j * channels
        var n = 0
        while n < most {
            let block = min(4096, most - n)
            if memcmp(a + n * channels, b + n * channels, block * channels * 2) == 0 {
                n += block
                continue
            }
            var k = n * channels
            while a[k] == b[k] { k += 1 }
            return k / channels
        }
        return n
    }

    /// The first recording frame ≥ `from` where the fingerprint of reference frames `q..<q+64`
    /// (fewer at the end) occurs: a scan for its largest-magnitude sample, then memcmp.
    private func find(_ q: Int, from: Int) -> Int? {
        let length = min(fingerprint, refFrames - q)
        let base = q * channels
        let count = length * channels
        var keyOffset = 0
        var best = -1
        for s in 0..<count where abs(Int(ref[base + s])) > best {
            best = abs(Int(ref[base + s]))
            keyOffset = s
        }
        let key = ref[base + keyOffset]
        let lastStart = recFrames - length
        guard from <= lastStart else { return nil }
        let pattern = ref.baseAddress! + base
        let recording = rec.baseAddress!
        var s = from * channels + keyOffset
        let end = lastStart * channels + keyOffset
        while s <= end {
            if recording[s] == key {
                let start = s - keyOffset
                if memcmp(pattern, recording + start, count * 2) == 0 { return start / channels }
            }
            s += channels
        }
        return nil
    }
}

extension Alignment {
    /// Finds `reference` in any capture of played samples (not only a pulse recording): the
    /// same analysis as ``Recording/locate(_:channels:)``.
    public static func locate(_ reference: [Int16], in played: [Int16], channels: Int) -> Alignment? {
        let whole = reference.count - reference.count % channels
        let playedWhole = played.count - played.count % channels
        return reference.withUnsafeBufferPointer { ref in
            played.withUnsafeBufferPointer { rec in
                Aligner(
                    ref: UnsafeBufferPointer(rebasing: ref[0..<whole]), rec: UnsafeBufferPointer(rebasing: rec[0..<playedWhole]),
                    channels: channels
                ).align()
            }
        }
    }
}
