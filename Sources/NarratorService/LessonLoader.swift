import Foundation
import NarratorKit

#if canImport(Glibc)
    import Glibc
#endif

/// Loads and prepares lessons for the daemon in a child process (`narrator serve
/// --prepare-request`), so that nothing a file in the library holds can end the daemon.
///
/// Parsers refuse bad input with an error, but a trap anywhere under a lesson (a conversion
/// that overflows, a parser in a system library that crashes on bytes it should refuse, an
/// allocation of a size a header made up, a recursion too deep) would end whatever process it
/// happens in, and a Swift trap cannot be caught. So a lesson is first prepared by a child of
/// the daemon's own executable, with limits on its memory and CPU time: a `cues` request's
/// events are the child's output, read as the client takes them; a `play` request is prepared
/// again in the daemon (it needs the decoded audio) only once the child prepared the same
/// files without harm. A child that traps, is killed or takes too long is one `error` event.
///
/// (A file replaced between the child's reading and the daemon's, with something that traps,
/// could still reach the daemon's own reading of a `play`: the window is the time it takes to
/// prepare the lesson once.)
struct LessonLoader: Sendable {
    /// The program the child runs: this executable, which must be `narrator`.
    let executable: String
    let library: LessonLibrary

    /// The child's address space and CPU time: far above what a lesson needs (decoded audio
    /// and its cues), low enough that a runaway allocation fails at once rather than swapping.
    static let childMemoryLimit: rlim_t = 3 << 30
    static let childCPUSeconds: rlim_t = 120
    /// A child that writes nothing for this long, while its reader waits, is killed.
    static let idleLimit: Int64 = 60_000_000_000
    /// One whole preparation (the child's start to its end, a slow client's waits included)
    /// takes at most this long, whatever the child or the client does: a worker is never held
    /// longer. (`wallLimit` below; tests give a shorter one.)
    static let defaultWallLimit: Int64 = 20_000_000_000
    /// The child's exit status once it prepared the request (its last line is `finished`), and once
    /// it refused it (its last line is `error`).
    static let preparedStatus: Int32 = 0
    static let refusedStatus: Int32 = 3

    /// The wall-clock bound of one preparation, in nanoseconds.
    var wallLimit: Int64 = LessonLoader.defaultWallLimit
    /// The longest event line a child may write.
    static let maxLine = 1 << 20

    enum Outcome {
        /// The child ended normally: its last line, the request's terminal event (`finished` when
        /// `prepared`, told by the child's exit status, else `error`), not yet sent.
        case finished(terminal: String, prepared: Bool)
        /// `isCanceled` said so: the child was killed.
        case canceled
        /// The child crashed, was killed by its limits, or wrote something else.
        case failed(String)
    }

    /// Runs the child for `request` (the request message itself) to its end. The event lines
    /// it writes before its last go to `lines`, as they are read; `isCanceled` is asked every
    /// few milliseconds.
    func run(request: Data, lesson: String, isCanceled: () -> Bool, lines: ([String]) -> Void) -> Outcome {
        switch start(request: request, lesson: lesson) {
        case .failure(let problem): return .failed(problem.message)
        case .success(let child):
            while true {
                if let outcome = child.pump(isCanceled: isCanceled, canRead: { true }, lines: lines) { return outcome }
            }
        }
    }

    struct StartFailure: Error { let message: String }

    /// Starts the child for `request`: its output is read by `LoaderChild.pump`, which a worker
    /// may leave (the child waits, blocked on its full pipe) and another take up later.
    func start(request: Data, lesson: String) -> Result<LoaderChild, StartFailure> {
        // Both pipes close-on-exec from their creation: another worker's child, spawned
        // meanwhile, inherits neither (it also closes what it inherits first). Out of
        // descriptors (EMFILE), the request gets an error and the daemon goes on.
        var output: [Int32] = [0, 0], input: [Int32] = [0, 0]
        guard pipeCloseOnExec(&output) == 0 else { return .failure(StartFailure(message: "cannot start the lesson loader: \(String(cString: strerror(errno)))")) }
        let (readEnd, writeEnd) = (output[0], output[1])
        guard pipeCloseOnExec(&input) == 0 else {
            let problem = String(cString: strerror(errno))
            close(readEnd)
            close(writeEnd)
            return .failure(StartFailure(message: "cannot start the lesson loader: \(problem)"))
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The request goes to the child's input (not its arguments: no size limit of argv, and
        // not visible to other users in /proc/PID/cmdline).
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let arguments = [executable, "serve", "--library", library.root, "--prepare-request", "-"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        // A trap in the child ends it at once: no backtrace (the Swift runtime's takes seconds).
        var environment: [UnsafeMutablePointer<CChar>?] = [strdup("SWIFT_BACKTRACE=enable=no")]
        var entry = environ
        while let variable = entry.pointee {
            if strncmp(variable, "SWIFT_BACKTRACE=", 16) != 0 { environment.append(strdup(variable)) }
            entry += 1
        }
        environment.append(nil)
        defer { for pointer in environment { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, &argv, &environment)
        close(writeEnd)
        close(input[0])
        guard spawned == 0 else {
            close(readEnd)
            close(input[1])
            return .failure(StartFailure(message: "cannot start the lesson loader: \(String(cString: strerror(spawned)))"))
        }
        // The request is at most the message limit; a pipe holds 64 KiB, so it is written a
        // part at a time while the child reads (a child that does not read is killed).
        _ = fcntl(input[1], F_SETFL, O_NONBLOCK)
        return .success(LoaderChild(pid: pid, readEnd: readEnd, requestEnd: input[1], request: request, lesson: lesson, wallLimit: wallLimit))
    }

    /// `pipe2(fds, O_CLOEXEC)`: both ends close-on-exec from their creation, with no window
    /// in which another thread's spawn inherits them. (Glibc declares `pipe2` only under
    /// `_GNU_SOURCE`, which the Glibc module is not built with.)
    private func pipeCloseOnExec(_ fds: inout [Int32]) -> Int32 {
        fds.withUnsafeMutableBufferPointer { linuxPipe2($0.baseAddress!, O_CLOEXEC) }
    }

    // MARK: The child's side

    /// `narrator serve --prepare-request -`: prepares the request (read from the standard input
    /// to its end; `-` is the only argument the daemon gives) and writes its events' bodies, one
    /// per line: for `cues` every cue, then `finished`; for `play` only `finished`; for `library`
    /// a `program` event per chain and activity of each lesson, then `finished`; for the web
    /// server's picture (`PictureRoute`) `finished` with its real path; or one `error`. Paths
    /// in errors are the library's own. Returns the exit status: `preparedStatus` after `finished`,
    /// `refusedStatus` after `error`.
    static func child(library root: String, request argument: String) -> Int32 {
        // No client's socket, nor a listening one, lives on in the child.
        closeInherited()
        let request: String
        if argument == "-" {
            // At most the daemon's message limit arrives; a little over 1 MiB is read at most.
            var data = Data()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while data.count <= 1 << 20 {
                let count = read(0, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                data.append(contentsOf: buffer[0..<count])
            }
            request = String(decoding: data, as: UTF8.self)
        } else {
            request = argument
        }
        limit(RLIMIT_AS, childMemoryLimit)
        limit(RLIMIT_CPU, childCPUSeconds)
        limit(RLIMIT_CORE, 0)
        let out = FileHandle.standardOutput
        var text = ""
        func emit(_ line: EventLine) {
            text += line.body
            text += "\n"
            if text.utf8.count >= 65536 {
                out.write(Data(text.utf8))
                text = ""
            }
        }
        defer { out.write(Data(text.utf8)) }
        let library: LessonLibrary
        do throws(NarratorError) {
            library = try LessonLibrary(path: root)
        } catch {
            emit(.error("the lesson library cannot be read"))
            return refusedStatus
        }
        if let picture = PictureRoute.parse(request) {
            let answer = PictureRoute.answerInChild(lesson: picture.lesson, picture: picture.name, library: library)
            emit(answer.line)
            return answer.found ? preparedStatus : refusedStatus
        }
        let (_, parsed) = ServiceRequest.parse(Data(request.utf8))
        let lesson: String, program: Program, seed: UInt64, locale: String?, listing: Bool
        switch parsed {
        case .success(.cues(let name, let which, let number, let tag)): (lesson, program, seed, locale, listing) = (name, which, number, tag, true)
        case .success(.play(let name, let which, let number, let tag)): (lesson, program, seed, locale, listing) = (name, which, number, tag, false)
        case .success(.library):
            let listed = library.programs()
            for fields in listed.programs { emit(EventLine(.program, frame: nil, heard: nil, fields: fields)) }
            emit(EventLine(.finished, frame: nil, heard: nil, fields: [EventEncoder.Member("notLessons", .int(listed.notLessons))]))
            return preparedStatus
        case .success: return 2
        case .failure(let error):
            emit(.error(library.publicDescription(of: error)))
            return refusedStatus
        }
        let prepared: PreparedProgram
        let localesUsed: [EventEncoder.Member]
        do throws(NarratorError) {
            let loaded = try library.load(lesson, locale: locale)
            localesUsed = LessonLibrary.localesMember(of: loaded)
            prepared = try loaded.prepare(program, seed: seed)
        } catch {
            emit(.error(library.publicDescription(of: error)))
            return refusedStatus
        }
        if listing {
            for cue in prepared.cues { emit(EventLine(listed: cue)) }
        }
        let fields = [EventEncoder.Member("sampleRate", .int(prepared.schedule.sampleRate))] + localesUsed
        emit(EventLine(.finished, frame: prepared.schedule.frames, heard: nil, fields: fields))
        return preparedStatus
    }

    private static func limit(_ resource: __rlimit_resource, _ value: rlim_t) {
        var current = rlimit()
        let which = __rlimit_resource_t(resource.rawValue)
        guard getrlimit(which, &current) == 0 else { return }
        current.rlim_cur = min(value, current.rlim_max)
        setrlimit(which, &current)
    }

    /// Closes every descriptor above stderr.
    private static func closeInherited() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return }
        for name in names {
            if let fd = Int32(name), fd > 2 { close(fd) }
        }
    }

    /// This process's executable (the daemon's own `narrator`).
    static var currentExecutable: String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return CommandLine.arguments.first ?? "narrator" }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// glibc's `pipe2(2)`.
@_silgen_name("pipe2")
private func linuxPipe2(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32

/// A loader child and what has been read of its output. Used by one worker at a time (handed
/// from one to the next under the service's lock); `pump` reads until the child ends or the
/// client's backlog says to wait, and then returns nil: no worker waits on a client.
final class LoaderChild: @unchecked Sendable {
    let lesson: String
    let wallLimit: Int64
    private let pid: pid_t
    private let readEnd: Int32
    private var requestEnd: Int32
    private var unsent: Data
    private let started = MonotonicClock.now()
    private var lastOutput = MonotonicClock.now()
    private var pending = [UInt8]()
    private var lastLine: String?
    private var buffer = [UInt8](repeating: 0, count: 65536)
    private var ended = false

    init(pid: pid_t, readEnd: Int32, requestEnd: Int32, request: Data, lesson: String, wallLimit: Int64) {
        self.pid = pid
        self.readEnd = readEnd
        self.requestEnd = requestEnd
        unsent = request
        self.lesson = lesson
        self.wallLimit = wallLimit
    }

    deinit { end() }

    /// When the whole preparation must be over (the client's waits included).
    var deadline: Int64 { started + wallLimit }

    /// Kills the child (when it has not ended), reaps it and closes its pipes. Idempotent.
    func end() {
        guard !ended else { return }
        ended = true
        kill(pid, SIGKILL)
        reap()
        close(readEnd)
        if requestEnd >= 0 { close(requestEnd) }
    }

    private func sendRequest() {
        guard requestEnd >= 0 else { return }
        while !unsent.isEmpty {
            let count = unsent.withUnsafeBytes { write(requestEnd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN { return }
                break  // the child has gone: what it wrote says why
            }
            unsent = unsent.dropFirst(count)
        }
        close(requestEnd)
        requestEnd = -1
    }

    /// Reads the child's output, handing complete lines but its last to `lines`, while
    /// `canRead` allows (the client's backlog). The outcome once the child has ended or was
    /// stopped; nil when `canRead` said to wait: the child waits too (blocked on its pipe)
    /// until `pump` is called again.
    func pump(isCanceled: () -> Bool, canRead: () -> Bool, lines: ([String]) -> Void) -> LessonLoader.Outcome? {
        guard !ended else { return .failed("preparing lesson '\(lesson)' was stopped") }
        lastOutput = MonotonicClock.now()  // waited on the client, not on the child
        var tooLong = false
        reading: while true {
            sendRequest()
            if isCanceled() {
                end()
                return .canceled
            }
            if MonotonicClock.now() - started > wallLimit {
                end()
                return .failed("preparing lesson '\(lesson)' took over \(wallLimit / 1_000_000_000) s; it was stopped")
            }
            if MonotonicClock.now() - lastOutput > LessonLoader.idleLimit {
                end()
                return .failed("preparing lesson '\(lesson)' took too long; it was stopped")
            }
            guard canRead() else { return nil }
            var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 10)
            if ready < 0 && errno != EINTR { break }
            guard ready > 0 else { continue }
            let count = read(readEnd, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                break
            }
            if count == 0 { break }  // the child closed its output: it has ended
            lastOutput = MonotonicClock.now()
            pending += buffer[0..<count]
            var start = 0
            var complete: [String] = []
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                if let previous = lastLine { complete.append(previous) }
                lastLine = String(decoding: pending[start..<newline], as: UTF8.self)
                start = newline + 1
            }
            pending.removeFirst(start)
            if !complete.isEmpty { lines(complete) }
            if pending.count > LessonLoader.maxLine {
                tooLong = true
                kill(pid, SIGKILL)
                break reading
            }
        }
        let status = reap()
        ended = true
        close(readEnd)
        if requestEnd >= 0 {
            close(requestEnd)
            requestEnd = -1
        }
        if tooLong { return .failed("lesson '\(lesson)': the loader wrote an event over \(LessonLoader.maxLine) bytes") }
        if status.exited, status.code == LessonLoader.preparedStatus || status.code == LessonLoader.refusedStatus, pending.isEmpty, let terminal = lastLine {
            return .finished(terminal: terminal, prepared: status.code == LessonLoader.preparedStatus)
        }
        if let signal = status.signal {
            let name = [SIGILL: "SIGILL", SIGTRAP: "SIGTRAP", SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGABRT: "SIGABRT", SIGKILL: "SIGKILL",
                        SIGXCPU: "SIGXCPU", SIGFPE: "SIGFPE"][signal] ?? "signal \(signal)"
            return .failed(
                "lesson '\(lesson)' could not be loaded: reading it or a file it names crashed the loader (\(name)); "
                    + "run `narrator validate` on it")
        }
        return .failed("lesson '\(lesson)' could not be loaded: the loader ended with status \(status.code)")
    }

    /// Waits for the child; how it ended.
    @discardableResult
    private func reap() -> (exited: Bool, code: Int32, signal: Int32?) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return (false, -1, nil) }
        }
        let signal = status & 0x7f
        if signal == 0 { return (true, (status >> 8) & 0xff, nil) }
        return (false, -1, signal)
    }
}
