internal import CSQLite
public import SofaCore
internal import Foundation
internal import SofaQL

/// `sqlite3_destructor_type` SQLITE_TRANSIENT: SQLite copies bound bytes before the call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One SQLite connection. It is opened, used and closed on one serial dispatch queue (the
/// database's writer or reader queue), which every call checks.
final class SQLiteConnection {
    private let handle: OpaquePointer
    let path: String
    private let queue: DispatchQueue
    private var statements: [String: OpaquePointer] = [:]
    private var keyedStatements: [StatementKey: OpaquePointer] = [:]

    init(path: String, queue: DispatchQueue) throws(SofaError) {
        dispatchPrecondition(condition: .onQueue(queue))
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw SofaError(.sqlite, rc, "cannot open \(path): \(message)")
        }
        self.handle = handle
        self.path = path
        self.queue = queue
        sqlite3_busy_timeout(handle, 5000)
        sqlite3_extended_result_codes(handle, 1)
        // Index expressions and index triggers call Sofa's query functions on every write.
        try CoreFunctions.registerAll(on: handle)
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        for statement in keyedStatements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    private func error(_ rc: Int32, _ sql: String) -> SofaError {
        SofaError(.sqlite, rc, "\(String(cString: sqlite3_errmsg(handle))) (in: \(sqlExcerpt(sql)))")
    }

    /// Runs SQL with no results (may hold several statements).
    func execute(_ sql: String) throws(SofaError) {
        dispatchPrecondition(condition: .onQueue(queue))
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql) }
    }

    /// Prepares (once, then cached) and runs one statement with `bindings`, calling `row` for each
    /// result row.
    func run(_ sql: String, _ bindings: [SQLiteValue] = [], row: ((SQLiteRow) throws(SofaError) -> Void)? = nil) throws(SofaError) {
        dispatchPrecondition(condition: .onQueue(queue))
        let statement: OpaquePointer
        if let cached = statements[sql] {
            statement = cached
        } else {
            statement = try prepare(sql)
            statements[sql] = statement
        }
        try run(statement, sql, bindings, row: row)
    }

    /// As `run(_:_:row:)` for a statement of the per-document hot path: cached under `key`, so its
    /// text is only built (by `sql`) the first time.
    func run(_ key: StatementKey, _ sql: () -> String, _ bindings: [SQLiteValue],
             row: ((SQLiteRow) throws(SofaError) -> Void)? = nil) throws(SofaError) {
        dispatchPrecondition(condition: .onQueue(queue))
        if let cached = keyedStatements[key] {
            try run(cached, sql(), bindings, row: row)
            return
        }
        let text = sql()
        let statement = try prepare(text)
        keyedStatements[key] = statement
        try run(statement, text, bindings, row: row)
    }

    private func prepare(_ sql: String) throws(SofaError) -> OpaquePointer {
        var prepared: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard rc == SQLITE_OK, let prepared else { throw error(rc, sql) }
        return prepared
    }

    private func run(_ statement: OpaquePointer, _ sql: @autoclosure () -> String, _ bindings: [SQLiteValue],
                     row: ((SQLiteRow) throws(SofaError) -> Void)?) throws(SofaError) {
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        for (index, value) in bindings.enumerated() {
            let position = Int32(index + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(statement, position)
            case .integer(let v): rc = sqlite3_bind_int64(statement, position, v)
            case .text(let v): rc = sqlite3_bind_text(statement, position, v, -1, transient)
            case .blob(let v):
                rc = v.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(v.count), transient) }
            }
            guard rc == SQLITE_OK else { throw error(rc, sql()) }
        }
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw error(rc, sql()) }
            try row?(SQLiteRow(statement: statement))
        }
    }

    var changes: Int { Int(sqlite3_changes(handle)) }
}

/// A hot-path statement on one table: which statement, and the table it names.
struct StatementKey: Hashable {
    enum Kind: UInt8 {
        case loadDocument, saveDocument, insertNewDocument
    }
    var kind: Kind
    var table: String
}

enum SQLiteValue {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])
}

/// The current row of a statement, valid only inside the row callback.
struct SQLiteRow {
    let statement: OpaquePointer

    func integer(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(statement, column) == SQLITE_NULL }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, column) else { return "" }
        return String(cString: pointer)
    }

    func blob(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }
}
