import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// End-to-end live-playback tests: a private PulseAudio server whose only sink is a pipe sink
// (scripts/pulse-test-server.sh), a recorder that saves everything the sink plays together with
// when each piece arrived (scripts/fifo-recorder.py), and the analysis that turns that into
// "reference frame k was heard at CLOCK_MONOTONIC time t": the recording (Recording.swift), its
// clock (AudibleClock.swift) and where a reference sits in it (Alignment.swift).

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
