import Foundation
import NarratorCore
import NarratorLive
import Synchronization

/// The daemon's touch log (`narrator serve --touches FILE`): every touch it hears (a word tapped
/// to be said, an answer, a sound, a replay, a close) becomes a row of an SQLite file whose
/// schema docs/touches.md documents, for an app's own analytics to read.
///
/// `record` never waits on the disk: it puts the touch in a queue of `capacity` and returns
/// (a full queue drops the touch and counts it). One writer thread of its own, at normal
/// priority, commits what the queue holds (WAL journal, synchronous=NORMAL): everything
/// waiting (up to `batch`) in one transaction, then calls each touch's `committed` callback.
/// The daemon answers a touch's request from that callback, so a touch it has answered as
/// logged is in the file already: a process killed then loses only touches not yet answered,
/// and leaves the file whole. After SIGTERM (`finish`) the queue is written out first.
public final class TouchLog: Sendable {
    /// What a touch was.
    public enum Kind: String, Sendable, CaseIterable {
        /// A word tapped to be said (`say`).
        case say
        /// An answer to an activity (its result: correct, wrong or ignored).
        case answer
        /// A sound's name tapped in an activity.
        case sound
        /// The popup's buttons (`replay`, `close`).
        case replay, close
    }

    /// What was playing: the same for every touch of one playback.
    public struct Source: Sendable, Equatable {
        public let lesson: String
        public let chain: String?
        public let activity: String?
        /// The daemon's name for the playback (`p3`).
        public let playback: String

        public init(lesson: String, chain: String?, activity: String?, playback: String) {
            self.lesson = lesson
            self.chain = chain
            self.activity = activity
            self.playback = playback
        }
    }

    /// One row.
    public struct Touch: Sendable {
        public var kind: Kind
        public var source: Source
        /// When the daemon heard it: milliseconds since 1970-01-01 UTC.
        public var timeMs: Int64
        /// The word said (`say`): its clip, its index in the clip's timings and its text.
        public var clip: String?
        public var wordIndex: Int?
        public var wordText: String?
        /// A tap's answer (or sound's name, `replay`, `close`) and what the activity made of it:
        /// the `result` of its `tap` event, and the step answered.
        public var answer: String?
        public var result: String?
        public var step: Int?
        /// Where on the playback's timeline (frames at the lesson's rate): the word's start, or
        /// the frame the tap was heard at.
        public var frame: Int?

        public init(
            _ kind: Kind, source: Source, timeMs: Int64 = TouchLog.nowMs(), clip: String? = nil, wordIndex: Int? = nil, wordText: String? = nil,
            answer: String? = nil, result: String? = nil, step: Int? = nil, frame: Int? = nil
        ) {
            self.kind = kind
            self.source = source
            self.timeMs = timeMs
            self.clip = clip
            self.wordIndex = wordIndex
            self.wordText = wordText
            self.answer = answer
            self.result = result
            self.step = step
            self.frame = frame
        }
    }

    /// The schema this code writes and reads (`PRAGMA user_version`).
    public static let schemaVersion: Int64 = 1
    /// `PRAGMA application_id` of a touch log: "NTCH". A file without it is not one.
    public static let applicationID: Int64 = 0x4E54_4348
    /// Touches waiting for the writer, at most: a flood beyond it is dropped (and counted), so
    /// no client can grow the daemon through its touches. The writer commits one in tens of
    /// microseconds (docs/touches.md), so it is empty but for a burst.
    public static let capacity = 1024
    /// Touches committed in one transaction at most.
    public static let batch = 256

    /// The tables and indexes of schema 1, as `sqlite3 FILE .schema` prints them (docs/touches.md
    /// shows the same text, and a test holds the two together).
    public static let schema = """
        CREATE TABLE touches (
          id INTEGER PRIMARY KEY,
          time_ms INTEGER NOT NULL,
          run_ms INTEGER NOT NULL,
          kind TEXT NOT NULL CHECK (kind IN ('say', 'answer', 'sound', 'replay', 'close')),
          lesson TEXT NOT NULL,
          chain TEXT,
          activity TEXT,
          playback TEXT NOT NULL,
          clip TEXT,
          word_index INTEGER,
          word_text TEXT,
          answer TEXT,
          result TEXT,
          step INTEGER,
          frame INTEGER
        );
        CREATE INDEX touches_kind_time ON touches (kind, time_ms);
        CREATE INDEX touches_lesson_kind_time ON touches (lesson, kind, time_ms);
        """

    /// What the writer has done: rows written, touches dropped (queue full, or after `finish`),
    /// failed (SQLite refused the insert: disk full, file removed…) and waiting now.
    public struct Counts: Sendable, Equatable {
        public var written = 0
        public var dropped = 0
        public var failed = 0
        public var waiting = 0
    }

    public let path: String
    /// When this log was opened (milliseconds since 1970, UTC): every row's `run_ms`, so that
    /// a playback's name (`p3`, counted from each start) and it name one playback.
    public let runMs: Int64

    /// Called once by the writer after the touch's transaction: true when it was committed,
    /// false when SQLite refused it (or the log closed first).
    public typealias Committed = @Sendable (Bool) -> Void

    private struct Slot {
        var touch: Touch
        var committed: Committed?
    }

    private struct Queue {
        var slots: [Slot?] = Array(repeating: nil, count: TouchLog.capacity)
        var head = 0
        var count = 0
        var counts = Counts()
        var finishing = false
    }

    private let queue = Mutex(Queue())
    /// One signal per touch queued, and one at `finish`.
    private let queued = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let report: @Sendable (String) -> Void

    /// Opens (or creates) the touch log at `path` and starts its writer. A file that exists
    /// and is not a touch log (another database, a text file, a newer schema) is refused
    /// before anything is written to it. `report` gets a line now and then from the writer
    /// (touches dropped or failed); it must not block for long.
    public init(path: String, report: @escaping @Sendable (String) -> Void) throws(NarratorError) {
        self.path = path
        self.report = report
        runMs = Self.nowMs()
        let connection = try SQLiteConnection(path: path, readOnly: false, create: true)
        switch try Self.kind(of: connection) {
        case .touchLog: break
        case .empty:
            try connection.execute(
                "BEGIN IMMEDIATE; PRAGMA application_id = \(Self.applicationID); PRAGMA user_version = \(Self.schemaVersion); \(Self.schema) COMMIT;")
        }
        // WAL: a writer killed mid-transaction leaves the file as it was at its last commit,
        // and readers (the report, an app) never block it. synchronous=NORMAL: a commit is in
        // the kernel's hands when it returns, which a killed process cannot undo; only a
        // power cut may lose the last commits (never the file). The WAL is copied back into the
        // database by the writer after it has answered (`checkpointIfDue`), not in a commit:
        // no touch's answer waits for that copy and its fsync.
        try connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0;")
        let writer = Writer(
            connection: connection,
            insert: try connection.prepare(
                """
                INSERT INTO touches (time_ms, run_ms, kind, lesson, chain, activity, playback, clip, word_index, word_text, answer, result, step, frame)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
                """))
        ThreadPolicy.normal.startThread(named: "narrator-touches") { [self] _ in write(with: writer) }
    }

    /// Queues `touch` for the writer, without waiting: false when it was dropped (the queue
    /// full, or the log finishing; `committed` is then never called). Safe from any thread,
    /// under any lock: it takes only its own, for a few instructions. `committed` is called on
    /// the writer's thread, with none of the log's locks held, right after the transaction
    /// that held the touch: it may take the caller's locks.
    @discardableResult
    public func record(_ touch: Touch, committed: Committed? = nil) -> Bool {
        let taken = queue.withLock { queue in
            guard !queue.finishing, queue.count < Self.capacity else {
                queue.counts.dropped += 1
                return false
            }
            queue.slots[(queue.head + queue.count) % Self.capacity] = Slot(touch: touch, committed: committed)
            queue.count += 1
            return true
        }
        if taken { queued.signal() }
        return taken
    }

    public var counts: Counts {
        queue.withLock { queue in
            var counts = queue.counts
            counts.waiting = queue.count
            return counts
        }
    }

    /// Writes what is queued, then closes the file: waits at most `limit` (a touch still
    /// queued then is lost, as if killed). Touches recorded afterwards are dropped.
    public func finish(within limit: Duration = .seconds(2)) {
        let first = queue.withLock { queue in
            defer { queue.finishing = true }
            return !queue.finishing
        }
        if first { queued.signal() }
        let (seconds, attoseconds) = limit.components
        if ended.wait(timeout: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))) == .success {
            ended.signal()
        }
        let counts = self.counts
        if counts.dropped > 0 || counts.failed > 0 || counts.waiting > 0 {
            report("touches: \(counts.written) written to \(path), \(counts.dropped) dropped, \(counts.failed) failed, \(counts.waiting) not written")
        }
    }

    /// Milliseconds since 1970-01-01 UTC, now.
    public static func nowMs() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    // MARK: The writer

    /// The connection and its insert, used by the writer thread alone once the init has
    /// handed them over.
    private final class Writer: @unchecked Sendable {
        let connection: SQLiteConnection
        private(set) var insert: SQLiteConnection.Statement?
        /// Rows committed since the WAL was last copied back.
        var sinceCheckpoint = 0

        init(connection: SQLiteConnection, insert: SQLiteConnection.Statement) {
            self.connection = connection
            self.insert = insert
        }

        /// The statement first: a connection closed with one alive stays open (and its WAL file
        /// with it) until the statement goes.
        func close() {
            insert = nil
            connection.close()
        }
    }

    /// The writer thread: what the queue holds (up to `batch`) in one transaction, taken out of
    /// the queue once committed. Every second at most, a line says how many touches were
    /// dropped or failed since.
    private func write(with writer: Writer) {
        var told = Counts()
        var toldAt = MonotonicClock.now()
        var lastFailure: String?
        while true {
            _ = queued.wait(timeout: .now() + .seconds(1))
            while true {
                let touches = waiting()
                if touches.isEmpty { break }
                let problem = insert(touches.map(\.touch), with: writer)
                queue.withLock { queue in
                    for _ in touches {
                        queue.slots[queue.head] = nil
                        queue.head = (queue.head + 1) % Self.capacity
                    }
                    queue.count -= touches.count
                    if problem == nil { queue.counts.written += touches.count } else { queue.counts.failed += touches.count }
                }
                if let problem { lastFailure = problem }
                // Committed (or refused): only now is each touch's request answered.
                for slot in touches { slot.committed?(problem == nil) }
                if problem == nil { checkpointIfDue(with: writer, after: touches.count) }
            }
            let (counts, finishing) = queue.withLock { ($0.counts, $0.finishing) }
            let now = MonotonicClock.now()
            if (counts.dropped > told.dropped || counts.failed > told.failed) && (now - toldAt >= 1_000_000_000 || finishing) {
                var line = "touches: \(counts.dropped - told.dropped) dropped (the queue of \(Self.capacity) was full), \(counts.failed - told.failed) failed"
                if let lastFailure, counts.failed > told.failed { line += " (\(lastFailure))" }
                report(line)
                (told, toldAt) = (counts, now)
            }
            if finishing, queue.withLock({ $0.count == 0 }) { break }
        }
        writer.close()
        ended.signal()
    }

    /// Rows committed between two checkpoints: SQLite's own automatic one comes at 1000 pages
    /// of WAL, a few thousand rows.
    static let checkpointRows = 2048

    /// Copies the WAL back into the database once `checkpointRows` have been committed since the
    /// last time (PASSIVE: a reader is never waited for; what it holds is copied next time).
    private func checkpointIfDue(with writer: Writer, after rows: Int) {
        writer.sinceCheckpoint += rows
        guard writer.sinceCheckpoint >= Self.checkpointRows else { return }
        writer.sinceCheckpoint = 0
        try? writer.connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
    }

    /// The oldest touches queued, up to `batch`, left in the queue (they count against its
    /// capacity until committed).
    private func waiting() -> [Slot] {
        queue.withLock { queue in
            (0..<min(queue.count, Self.batch)).compactMap { queue.slots[(queue.head + $0) % Self.capacity] }
        }
    }

    /// Inserts `touches` in one transaction; the problem when SQLite refused it (then none is
    /// in the file).
    private func insert(_ touches: [Touch], with writer: Writer) -> String? {
        guard let insert = writer.insert else { return "the log is closed" }
        do throws(NarratorError) {
            if touches.count > 1 { try writer.connection.execute("BEGIN IMMEDIATE") }
            for touch in touches { try self.insert(touch, with: insert) }
            if touches.count > 1 { try writer.connection.execute("COMMIT") }
            return nil
        } catch {
            if touches.count > 1 { try? writer.connection.execute("ROLLBACK") }
            return error.message
        }
    }

    private func insert(_ touch: Touch, with insert: SQLiteConnection.Statement) throws(NarratorError) {
        defer { insert.reset() }
        insert.bind(1, Int(touch.timeMs))
        insert.bind(2, Int(runMs))
        insert.bind(3, touch.kind.rawValue)
        insert.bind(4, touch.source.lesson)
        insert.bind(5, touch.source.chain)
        insert.bind(6, touch.source.activity)
        insert.bind(7, touch.source.playback)
        insert.bind(8, touch.clip)
        insert.bind(9, touch.wordIndex)
        insert.bind(10, touch.wordText)
        insert.bind(11, touch.answer)
        insert.bind(12, touch.result)
        insert.bind(13, touch.step)
        insert.bind(14, touch.frame)
        _ = try insert.step()
    }

    // MARK: What a file is

    enum FileKind {
        /// A new or empty database: no table, no application id.
        case empty
        /// A touch log of this schema.
        case touchLog
    }

    /// Whether `connection`'s file is a touch log this code reads, or empty; otherwise the
    /// reason it is neither.
    static func kind(of connection: SQLiteConnection) throws(NarratorError) -> FileKind {
        let application = try connection.integer("PRAGMA application_id") ?? 0
        let version = try connection.integer("PRAGMA user_version") ?? 0
        let objects = try connection.integer("SELECT count(*) FROM sqlite_master") ?? 0
        if application == applicationID {
            if version == schemaVersion { return .touchLog }
            if version > schemaVersion {
                throw NarratorError(file: connection.path, "a touch log of schema \(version), newer than this narrator's (\(schemaVersion)): use a newer narrator, or another file")
            }
            throw NarratorError(file: connection.path, "a touch log of unknown schema \(version) (this narrator's is \(schemaVersion))")
        }
        if application == 0 && objects == 0 { return .empty }
        throw NarratorError(
            file: connection.path,
            "not a touch log (an SQLite database with \(objects) tables and indexes, application_id \(application), not narrator's \(applicationID)); give a new file or one that narrator serve --touches wrote")
    }
}

extension TouchLog.Touch {
    /// The touch an activity's `tap` event stands for (`fields`: its `answer`, `result` and
    /// `step`), heard at `frame`: a replay, a close, a sound's name, or an answer.
    public static func tap(fields: [String: Cue.Field], frame: Int, source: TouchLog.Source) -> TouchLog.Touch {
        func string(_ key: String) -> String? { if case .string(let value)? = fields[key] { value } else { nil } }
        let answer = string("answer")
        let result = string("result")
        let step: Int? = if case .int(let value)? = fields["step"] { value } else { nil }
        let kind: TouchLog.Kind =
            switch (answer, result) {
            case (Tap.replay?, _): .replay
            case (Tap.close?, _): .close
            case (_, "sound"?): .sound
            default: .answer
            }
        return TouchLog.Touch(kind, source: source, answer: answer, result: result, step: step, frame: frame)
    }
}
