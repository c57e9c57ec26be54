internal import CSQLite
public import SofaCore


/// One prepared statement of a `SQLiteConnection`, finalized when the connection's cache lets it
/// go. Used only on the connection's queue, through the connection.
final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String
    private unowned let connection: SQLiteConnection

    init(_ connection: SQLiteConnection, _ sql: String) throws(SofaError) {
        var prepared: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard rc == SQLITE_OK, let prepared else { throw connection.error(rc, sql) }
        self.handle = prepared
        self.sql = sql
        self.connection = connection
    }

    deinit { sqlite3_finalize(handle) }

    /// Whether the statement leaves the database as it is.
    var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

    var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// Binds, steps through every row (calling `row` for each) and resets.
    func run(_ bindings: [SQLiteValue], row: ((SQLiteRow) throws(SofaError) -> Void)?) throws(SofaError) {
        defer { reset() }
        for (index, value) in bindings.enumerated() { try bind(value, at: Int32(index + 1)) }
        while try step() {
            try row?(SQLiteRow(statement: handle))
        }
    }

    /// Binds `value` to parameter `index` (1-based).
    func bind(_ value: SQLiteValue, at index: Int32) throws(SofaError) {
        let rc: Int32
        switch value {
        case .null: rc = sqlite3_bind_null(handle, index)
        case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
        case .real(let v): rc = sqlite3_bind_double(handle, index, v)
        case .text(let v): rc = SQLiteText.bind(handle, index, v)
        case .blob(let v):
            rc = v.withUnsafeBytes {
                sqlite3_bind_blob(handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(v.count), transient)
            }
        }
        guard rc == SQLITE_OK else { throw connection.error(rc, sql) }
    }

    /// Binds a query's value in `SQLValue`'s encoding (MISSING as NULL, JSON containers as
    /// their compact text in a blob).
    func bind(_ value: SQLValue, at index: Int32) throws(SofaError) {
        switch value {
        case .missing: try bind(SQLiteValue.null, at: index)
        case .integer(let v): try bind(SQLiteValue.integer(v), at: index)
        case .real(let v): try bind(SQLiteValue.real(v), at: index)
        case .text(let v): try bind(SQLiteValue.text(v), at: index)
        case .json(let v): try bind(SQLiteValue.blob(v.compactBytes()), at: index)
        }
    }

    /// Steps: true at a row, false when done; SQLite's error (with its code) otherwise.
    func step() throws(SofaError) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        throw connection.error(rc, sql)
    }

    /// Ready to run again, with no value bound.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }
}

/// A value bound to a statement's parameter.
public enum SQLiteValue: Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

/// The current row of a statement, valid only inside the row callback.
public struct SQLiteRow {
    let statement: OpaquePointer

    public func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    public func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    public func text(_ column: Int32) -> String { SQLiteText.column(statement, column) }

    public func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The column decoded from a query's SQL encoding: numbers and text as they are, a blob as
    /// JSON (null when it is not JSON), NULL as MISSING (nil).
    public func json(_ column: Int32) -> JSON? {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT: return .double(sqlite3_column_double(statement, column))
        case SQLITE_TEXT: return .string(SQLiteText.column(statement, column))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return .null }
            return JSON.tryParse(UnsafeRawBufferPointer(start: bytes, count: count)) ?? .null
        default: return nil
        }
    }
}

/// Which statements a connection lets through SQLite's authorizer.
public enum SQLiteAuthorizer: Sendable {
    /// Reading only: SELECT, reads, functions and recursive CTEs; of the pragmas only
    /// `schema_version` (when to re-read the index list) and `data_version` (which FTS5 reads);
    /// and BEGIN/COMMIT/ROLLBACK, which on a connection that cannot write only hold one read
    /// snapshot across several queries (a worker's batch).
    case readingOnly

    func install(on handle: OpaquePointer) {
        switch self {
        case .readingOnly:
            sqlite3_set_authorizer(handle, { _, action, arg1, _, _, _ in
                switch action {
                case SQLITE_SELECT, SQLITE_READ, SQLITE_FUNCTION, SQLITE_RECURSIVE, SQLITE_TRANSACTION: return SQLITE_OK
                case SQLITE_PRAGMA:
                    let name = arg1.map { String(cString: $0) }
                    return name == "schema_version" || name == "data_version" ? SQLITE_OK : SQLITE_DENY
                case SQLITE_UPDATE:
                    // Declaring a virtual table's columns (json_each, FTS5) reports an update of
                    // sqlite_master; nothing is written (the file is open read-only).
                    return arg1.map { String(cString: $0) } == "sqlite_master" ? SQLITE_OK : SQLITE_DENY
                default:
                    return SQLITE_DENY
                }
            }, nil)
        }
    }
}
