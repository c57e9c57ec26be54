internal import CSQLite
public import SofaCore
public import Foundation
internal import Synchronization

private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A flag that stops a running query from another thread (its client went away): the query
/// ends with a `.cancelled` error at SQLite's next progress check.
public final class QueryInterrupt: Sendable {
    private let flag = Atomic<Bool>(false)
    public init() {}
    public func interrupt() { flag.store(true, ordering: .releasing) }
    public var isInterrupted: Bool { flag.load(ordering: .acquiring) }
}

/// What SQLite's progress handler checks while a query runs.
private final class ProgressCheck {
    let deadline: UInt64
    let interrupt: QueryInterrupt?
    init(deadline: UInt64, interrupt: QueryInterrupt?) {
        self.deadline = deadline
        self.interrupt = interrupt
    }
}

/// A connection that runs compiled queries: read-only for a worker (opened `SQLITE_OPEN_READONLY`,
/// `query_only`, and an authorizer that refuses anything but reading), writable only for tests
/// that build a database in memory.
///
/// Not thread-safe: one connection per worker thread or queue, used by one caller at a time.
public final class QueryConnection: @unchecked Sendable {  // safe: one caller at a time (a worker's serial request loop)
    let handle: OpaquePointer
    public let path: String
    private var statements: [String: OpaquePointer] = [:]
    private var cachedSchema: (version: Int64, indexes: [IndexRecord])?

    /// Opens `path`. `readOnly` connections can never change the database.
    public init(path: String, readOnly: Bool) throws(SofaError) {
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw SofaError(.sqlite, rc, "cannot open \(path): \(message)")
        }
        self.handle = handle
        self.path = path
        sqlite3_busy_timeout(handle, 5000)
        sqlite3_extended_result_codes(handle, 1)
        try CoreFunctions.registerAll(on: handle)
        if readOnly {
            try execute("PRAGMA query_only=1")
            sqlite3_set_authorizer(handle, { _, action, arg1, _, _, _ in
                switch action {
                case SQLITE_SELECT, SQLITE_READ, SQLITE_FUNCTION, SQLITE_RECURSIVE: return SQLITE_OK
                case SQLITE_PRAGMA:
                    // Only the schema version (which says when to re-read the index list) and the
                    // data version (which FTS5 reads).
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

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    private func error(_ rc: Int32, _ sql: String) -> SofaError {
        SofaError(.sqlite, rc, "\(String(cString: sqlite3_errmsg(handle))) (in: \(sqlExcerpt(sql)))")
    }

    /// Runs SQL with no results (tests and set-up only; a read-only connection refuses writes).
    public func execute(_ sql: String) throws(SofaError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql) }
    }

    private func prepare(_ sql: String) throws(SofaError) -> OpaquePointer {
        if let cached = statements[sql] { return cached }
        var prepared: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard rc == SQLITE_OK, let prepared else {
            throw SofaError(.invalidQuery, "\(String(cString: sqlite3_errmsg(handle))) (in: \(sqlExcerpt(sql)))")
        }
        if statements.count > 200 {
            for statement in statements.values { sqlite3_finalize(statement) }
            statements.removeAll()
        }
        statements[sql] = prepared
        return prepared
    }

    /// Binds SQL values (in `SQLValue`'s encoding) and steps through the rows, calling `row` with
    /// each row's columns decoded to JSON (nil = MISSING). `deadline` (monotonic nanoseconds, 0 =
    /// none) interrupts a long query with a timeout error.
    public func query(_ sql: String, _ values: [SQLValue], deadline: UInt64 = 0,
                      row: ([JSON?]) throws(SofaError) -> Void) throws(SofaError) {
        try steps(sql, values, deadline: deadline) { (columns) throws(SofaError) -> Bool in
            try row(columns)
            return true
        }
    }

    /// `query`, where `row` answers whether to go on (false stops early).
    public func steps(_ sql: String, _ values: [SQLValue], deadline: UInt64 = 0, interrupt: QueryInterrupt? = nil,
                      row: ([JSON?]) throws(SofaError) -> Bool) throws(SofaError) {
        let statement = try prepare(sql)
        guard sqlite3_stmt_readonly(statement) != 0 else {
            throw SofaError(.invalidQuery, "a query cannot modify the database")
        }
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            sqlite3_progress_handler(handle, 0, nil, nil)
        }
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            let rc: Int32
            switch value {
            case .missing: rc = sqlite3_bind_null(statement, position)
            case .integer(let v): rc = sqlite3_bind_int64(statement, position, v)
            case .real(let v): rc = sqlite3_bind_double(statement, position, v)
            case .text(let v): rc = sqlite3_bind_text(statement, position, v, -1, transient)
            case .json(let v):
                let bytes = v.compactBytes()
                rc = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), transient) }
            }
            guard rc == SQLITE_OK else { throw error(rc, sql) }
        }
        let check = ProgressCheck(deadline: deadline, interrupt: interrupt)
        if deadline > 0 || interrupt != nil {
            sqlite3_progress_handler(handle, 1000, { context in
                let check = Unmanaged<ProgressCheck>.fromOpaque(context!).takeUnretainedValue()
                if check.interrupt?.isInterrupted == true { return 1 }
                return check.deadline > 0 && DispatchTime.now().uptimeNanoseconds > check.deadline ? 1 : 0
            }, Unmanaged.passUnretained(check).toOpaque())
        }
        defer { withExtendedLifetime(check) {} }
        let columnCount = Int(sqlite3_column_count(statement))
        var values = [JSON?](repeating: nil, count: columnCount)
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return }
            if rc == SQLITE_INTERRUPT {
                if interrupt?.isInterrupted == true { throw SofaError(.cancelled, "the query was cancelled") }
                throw SofaError(.timeout, "the query ran past its deadline")
            }
            if interrupt?.isInterrupted == true { throw SofaError(.cancelled, "the query was cancelled") }
            guard rc == SQLITE_ROW else {
                throw SofaError(.invalidQuery, "\(String(cString: sqlite3_errmsg(handle))) (in: \(sqlExcerpt(sql)))")
            }
            for i in 0..<columnCount { values[i] = Self.column(statement, Int32(i)) }
            if try !row(values) { return }
        }
    }

    /// A result column decoded from the SQL encoding.
    static func column(_ statement: OpaquePointer, _ i: Int32) -> JSON? {
        switch sqlite3_column_type(statement, i) {
        case SQLITE_INTEGER: return .int(sqlite3_column_int64(statement, i))
        case SQLITE_FLOAT: return .double(sqlite3_column_double(statement, i))
        case SQLITE_TEXT:
            guard let text = sqlite3_column_text(statement, i) else { return .string("") }
            let count = Int(sqlite3_column_bytes(statement, i))
            return .string(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, i))
            guard count > 0, let bytes = sqlite3_column_blob(statement, i) else { return .null }
            return JSON.tryParse(UnsafeRawBufferPointer(start: bytes, count: count)) ?? .null
        default: return nil
        }
    }

    /// Runs a compiled query.
    public func run(_ compiled: CompiledQuery, parameters: JSONObject = [:], deadline: UInt64 = 0,
                    row: ([JSON?]) throws(SofaError) -> Void) throws(SofaError) {
        try query(compiled.sql, compiled.values(parameters: parameters), deadline: deadline, row: row)
    }

    /// One page of a compiled query's rows: after skipping `skip` rows, up to `maxRows` rows (0 =
    /// no row limit) and about `maxBytes` of JSON; `more` says whether rows remain after the page.
    /// Only the page is ever held in memory.
    public func page(_ compiled: CompiledQuery, parameters: JSONObject = [:], deadline: UInt64 = 0,
                     interrupt: QueryInterrupt? = nil,
                     skip: UInt64, maxRows: Int, maxBytes: Int) throws(SofaError) -> (rows: [[JSON?]], more: Bool) {
        var rows: [[JSON?]] = []
        var skipped: UInt64 = 0
        var bytes = 0
        var more = false
        try steps(compiled.sql, compiled.values(parameters: parameters), deadline: deadline,
                  interrupt: interrupt) { (row) throws(SofaError) -> Bool in
            if skipped < skip {
                skipped += 1
                return true
            }
            if (maxRows > 0 && rows.count >= maxRows) || bytes >= maxBytes {
                more = true
                return false
            }
            for column in row { bytes += column.map { $0.compactBytes().count } ?? 1 }
            rows.append(row)
            return true
        }
        return (rows, more)
    }

    /// SQLite's plan for a compiled query, one line per step.
    public func explain(_ compiled: CompiledQuery) throws(SofaError) -> String {
        var lines: [String] = []
        try query("EXPLAIN QUERY PLAN " + compiled.sql, compiled.values(parameters: [:])) { row throws(SofaError) in
            let id = row[0]?.intValue ?? 0, parent = row[1]?.intValue ?? 0
            lines.append("\(id)|\(parent)|\(row[3]?.stringValue ?? "")")
        }
        return lines.joined(separator: "\n")
    }

    // MARK: Schema

    /// What the compiler needs to know about this database, re-read when the schema changes.
    public func schema() throws(SofaError) -> QuerySchema {
        var version: Int64 = 0
        try query("PRAGMA schema_version", []) { row throws(SofaError) in version = row[0]?.intValue ?? 0 }
        if cachedSchema?.version != version {
            var tables = Set<String>()
            try query("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'kv\\_%' ESCAPE '\\'", []) { row throws(SofaError) in
                if let name = row[0]?.stringValue { tables.insert(name) }
            }
            var indexes: [IndexRecord] = []
            try query("SELECT name, type, keyStore, expression, indexTableName FROM indexes", []) { row throws(SofaError) in
                if let record = IndexRecord(row: row) { indexes.append(record) }
            }
            cachedSchema = (version, indexes)
            tableNames = tables
        }
        let tables = tableNames
        let indexes = cachedSchema?.indexes ?? []
        return QuerySchema(
            hasCollection: { tables.contains($0.tableName) },
            fullTextTable: { collection, name in
                indexes.first { $0.keyStore == collection.keyStore && $0.name == name && $0.kind == .fullText }
                    .map { FullTextIndexTable(table: $0.table, language: $0.language, columns: $0.columnPaths) }
            },
            arrayIndexes: { collection in
                indexes.filter { $0.keyStore == collection.keyStore && $0.kind == .array && !$0.arraySegments.isEmpty }
                    .map { ArrayIndexTables(segments: $0.arraySegments, tables: $0.arrayTables) }
            })
    }

    private var tableNames: Set<String> = []

    /// The `PRAGMA schema_version`, which changes whenever an index or collection does.
    public func schemaVersion() throws(SofaError) -> Int64 {
        var version: Int64 = 0
        try query("PRAGMA schema_version", []) { row throws(SofaError) in version = row[0]?.intValue ?? 0 }
        return version
    }
}

extension QueryConnection {
    /// Adds `core_blob(dict)` for `BLOB(path)`: the contents of the blob a `{"@type":"blob",
    /// "digest":"sha1-…"}` dictionary references, as base64 text (how JSON carries data).
    /// `read` gives a digest's content (decrypted, checked against the digest), nil when the
    /// digest is malformed or the database lacks that blob. MISSING for anything that is not
    /// such a reference or whose blob is absent.
    public func enableBlobs(read: @escaping @Sendable (_ digest: String) throws(SofaError) -> [UInt8]?) throws(SofaError) {
        let function = SQLFunction("core_blob", arity: 1, deterministic: false) { args throws(SofaError) in
            guard case .json(.object(let dict)) = args[0], let digest = dict["digest"]?.stringValue,
                  let data = try read(digest) else { return .missing }
            if let length = dict["length"]?.intValue, Int64(data.count) != length {
                throw SofaError(.corruptData, "BLOB(): blob \(digest) has \(data.count) bytes, the document says \(length)")
            }
            return .text(Data(data).base64EncodedString())
        }
        try SQLFunctions.register([function], on: handle)
    }
}

/// The start of a statement's text, for an error message: a schema's DDL or a compiled query can
/// run to many kilobytes, and the message needs only enough to say which statement failed.
public func sqlExcerpt(_ sql: String, limit: Int = 200) -> String {
    sql.count <= limit ? sql : sql.prefix(limit) + "… (\(sql.utf8.count) bytes)"
}
