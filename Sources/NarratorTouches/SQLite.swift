import CSQLite
import NarratorCore

/// One SQLite connection, used by one thread at a time (the touch log's writer, or the report),
/// and the few calls the touch log makes. Every failure is a `NarratorError` naming the file.
final class SQLiteConnection {
    let path: String
    private var handle: OpaquePointer?

    /// Opens `path` read-write (created when `create`), or read-only.
    init(path: String, readOnly: Bool, create: Bool = false) throws(NarratorError) {
        self.path = path
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)
        var opened: OpaquePointer?
        let status = sqlite3_open_v2(path, &opened, flags, nil)
        handle = opened
        guard status == SQLITE_OK else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_close_v2(opened)
            handle = nil
            throw NarratorError(file: path, Self.explained(message, status: status))
        }
        // Another process (an app reading the log) may hold a lock for a moment.
        sqlite3_busy_timeout(opened, 1000)
    }

    deinit { close() }

    func close() {
        sqlite3_close_v2(handle)
        handle = nil
    }

    /// SQLite's words for the failures a user meets, made plainer.
    private static func explained(_ message: String, status: Int32) -> String {
        switch status & 0xff {
        case SQLITE_NOTADB: "not an SQLite database (\(message))"
        case SQLITE_CANTOPEN: "cannot open (\(message))"
        default: message
        }
    }

    private func failure(_ status: Int32, _ doing: String) -> NarratorError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
        return NarratorError(file: path, "\(doing): \(Self.explained(message, status: status))")
    }

    /// Runs statements that return nothing.
    func execute(_ sql: String) throws(NarratorError) {
        let status = sqlite3_exec(handle, sql, nil, nil, nil)
        guard status == SQLITE_OK else { throw failure(status, "SQLite") }
    }

    func prepare(_ sql: String) throws(NarratorError) -> Statement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else { throw failure(status, "SQLite") }
        return Statement(connection: self, statement: statement)
    }

    /// The first column of the first row of `sql` as an integer (a pragma's value).
    func integer(_ sql: String) throws(NarratorError) -> Int64? {
        let statement = try prepare(sql)
        guard try statement.step() else { return nil }
        return statement.int64(0)
    }

    /// A statement prepared once and run many times (`reset` between runs).
    final class Statement {
        private let connection: SQLiteConnection
        private let statement: OpaquePointer

        fileprivate init(connection: SQLiteConnection, statement: OpaquePointer) {
            self.connection = connection
            self.statement = statement
        }

        deinit { sqlite3_finalize(statement) }

        /// SQLite copies the text (SQLITE_TRANSIENT, which Swift cannot spell as a macro).
        private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

        /// Binds parameter `index` (from 1): text, a whole number, or NULL.
        func bind(_ index: Int32, _ value: String?) {
            // The length given: a NUL inside the text (JSON allows one in an answer) is kept.
            if let value { sqlite3_bind_text(statement, index, value, Int32(value.utf8.count), Self.transient) } else { sqlite3_bind_null(statement, index) }
        }

        func bind(_ index: Int32, _ value: Int?) {
            if let value { sqlite3_bind_int64(statement, index, Int64(value)) } else { sqlite3_bind_null(statement, index) }
        }

        /// One step: true while there is a row to read, false once done.
        func step() throws(NarratorError) -> Bool {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            case let status:
                sqlite3_reset(statement)
                throw connection.failure(status, "SQLite")
            }
        }

        /// Ready to run again, parameters cleared.
        func reset() {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }

        func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

        func text(_ column: Int32) -> String? {
            guard let bytes = sqlite3_column_text(statement, column) else { return nil }
            return String(decoding: UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
        }
    }
}
