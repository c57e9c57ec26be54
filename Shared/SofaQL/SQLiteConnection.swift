internal import CSQLite
public import SofaCore
public import Dispatch

/// One SQLite connection: storage's writer and reader, and a query worker's read-only
/// connection. It is opened, used and closed on one serial dispatch queue, which every call
/// checks; `Confined<SQLiteConnection>` is how it is held and reached from async code.
///
/// Every SQLite return code is checked at the call and becomes a `.sqlite` `SofaError` with
/// SQLite's message and (the start of) the SQL text. Statements are prepared once and cached.
public final class SQLiteConnection {
    /// How a connection is opened.
    public struct Options: Sendable {
        /// Opened `SQLITE_OPEN_READONLY` (else read-write, created when missing).
        public var readOnly = false
        /// `PRAGMA query_only=1`: the connection refuses to write even to a writable file.
        public var queryOnly = false
        /// Which statements the connection may prepare (none: every statement).
        public var authorizer: SQLiteAuthorizer?
        /// How many statements of `run`/`query` stay prepared; past it the cache is emptied
        /// (nil: no bound, for a fixed set of statements).
        public var statementCacheLimit: Int?
        /// How long a statement waits for a lock another connection holds before it fails with
        /// `SQLITE_BUSY`, in milliseconds.
        public var busyTimeoutMs: Int32

        public init(readOnly: Bool = false, queryOnly: Bool = false, authorizer: SQLiteAuthorizer? = nil,
                    statementCacheLimit: Int? = nil, busyTimeoutMs: Int32 = 5000) {
            self.readOnly = readOnly
            self.queryOnly = queryOnly
            self.authorizer = authorizer
            self.statementCacheLimit = statementCacheLimit
            self.busyTimeoutMs = busyTimeoutMs
        }

        /// Storage's writer: read-write, a fixed set of statements.
        public static let writer = Options()
        /// Storage's reader: a writable file it never writes to.
        public static let reader = Options(queryOnly: true)
        /// A query worker's: a read-only file, and only reading statements, over any query text.
        public static let queryWorker = Options(readOnly: true, queryOnly: true, authorizer: .readingOnly,
                                                statementCacheLimit: 200)
        /// A database a test builds in memory or in a temporary file, queried with any text.
        public static let scratch = Options(statementCacheLimit: 200)
    }

    let handle: OpaquePointer
    public let path: String
    /// How long a statement waits for another connection's lock now (`setBusyTimeout`).
    public private(set) var busyTimeoutMs: Int32
    /// The queue that opened the connection, the only one that may use it.
    public let queue: DispatchQueue
    private let statementCacheLimit: Int?
    private var statements: [String: SQLiteStatement] = [:]
    /// The statements of `run(_ key:…)`, one cache per key type (a `KeyedStatements<Key>`):
    /// measured, making an `AnyHashable` of each key (a dynamic cast, a box) was a tenth of
    /// sofa-http's document read.
    private var keyedStatements: [ObjectIdentifier: AnyObject] = [:]
    /// What `schema()` read last, by schema version (see `SQLiteConnection+Schema`).
    var schemaCache: QuerySchemaCache?

    /// SQLite set up once per process before its first connection: without memory statistics,
    /// which no part of Sofa reads and which make every allocation of every connection take one
    /// process-wide mutex (measured: two threads reading two connections at once waited on it,
    /// about one futex wake-up per document read).
    private static let configured: Void = { _ = sofa_sqlite_memory_statistics_off() }()

    /// Opens `path` on `queue` (the calling queue).
    public init(path: String, queue: DispatchQueue, options: Options) throws(SofaError) {
        dispatchPrecondition(condition: .onQueue(queue))
        Self.configured
        var handle: OpaquePointer?
        let flags = (options.readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &handle, flags, nil)
        guard rc == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw SofaError(.sqlite, rc, "cannot open \(path): \(message)")
        }
        self.handle = handle
        self.path = path
        self.queue = queue
        self.statementCacheLimit = options.statementCacheLimit
        self.busyTimeoutMs = options.busyTimeoutMs
        sqlite3_busy_timeout(handle, options.busyTimeoutMs)
        sqlite3_extended_result_codes(handle, 1)
        // Index expressions and index triggers call Sofa's query functions on every write.
        try CoreFunctions.registerAll(on: handle)
        if options.queryOnly { try execute("PRAGMA query_only=1") }
        options.authorizer?.install(on: handle)
    }

    deinit {
        statements.removeAll()
        keyedStatements.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ rc: Int32, _ sql: String) -> SofaError {
        SofaError(.sqlite, rc, "\(String(cString: sqlite3_errmsg(handle))) (in: \(sqlExcerpt(sql)))")
    }

    /// From now on, statements wait at most `milliseconds` for a lock another connection holds,
    /// then fail with `SQLITE_BUSY`.
    public func setBusyTimeout(_ milliseconds: Int32) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard milliseconds != busyTimeoutMs else { return }
        busyTimeoutMs = milliseconds
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Whether `error` is SQLite's "the file is locked by another connection" (`SQLITE_BUSY`,
    /// with any extended code), or a query's `.busy` made of it.
    public static func isLocked(_ error: SofaError) -> Bool {
        error.is(.busy) || (error.domain == .sqlite && error.code & 0xFF == SQLITE_BUSY)
    }

    /// Runs SQL with no results (may hold several statements).
    public func execute(_ sql: String) throws(SofaError) {
        dispatchPrecondition(condition: .onQueue(queue))
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw error(rc, sql) }
    }

    /// Prepares (once, then cached) and runs one statement with `bindings`, calling `row` for each
    /// result row.
    public func run(_ sql: String, _ bindings: [SQLiteValue] = [],
                    row: ((SQLiteRow) throws(SofaError) -> Void)? = nil) throws(SofaError) {
        try statement(sql).run(bindings, row: row)
    }

    /// As `run(_:_:row:)` for a statement of a hot path: cached under `key`, so its text is only
    /// built (by `sql`) the first time.
    public func run<Key: Hashable & Sendable>(_ key: Key, _ sql: () -> String, _ bindings: [SQLiteValue],
                                              row: ((SQLiteRow) throws(SofaError) -> Void)? = nil) throws(SofaError) {
        dispatchPrecondition(condition: .onQueue(queue))
        let cache: KeyedStatements<Key>
        if let existing = keyedStatements[ObjectIdentifier(Key.self)] {
            cache = unsafeDowncast(existing, to: KeyedStatements<Key>.self)  // stored under its key type only
        } else {
            cache = KeyedStatements<Key>()
            keyedStatements[ObjectIdentifier(Key.self)] = cache
        }
        if let cached = cache.statements[key] {
            try cached.run(bindings, row: row)
            return
        }
        let statement = try SQLiteStatement(self, sql())
        cache.statements[key] = statement
        try statement.run(bindings, row: row)
    }

    /// The keyed statements of one key type.
    private final class KeyedStatements<Key: Hashable> {
        var statements: [Key: SQLiteStatement] = [:]
    }

    /// The prepared statement for `sql`, from the cache or prepared now.
    func statement(_ sql: String) throws(SofaError) -> SQLiteStatement {
        dispatchPrecondition(condition: .onQueue(queue))
        if let cached = statements[sql] { return cached }
        let statement = try SQLiteStatement(self, sql)
        if let limit = statementCacheLimit, statements.count > limit { statements.removeAll() }
        statements[sql] = statement
        return statement
    }

    /// Whether a transaction is open (BEGIN was run and neither COMMIT nor ROLLBACK since).
    public var inTransaction: Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        return sqlite3_get_autocommit(handle) == 0
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int {
        dispatchPrecondition(condition: .onQueue(queue))
        return Int(sqlite3_changes(handle))
    }
}

/// The start of a statement's text, for an error message: a schema's DDL or a compiled query can
/// run to many kilobytes, and the message needs only enough to say which statement failed.
public func sqlExcerpt(_ sql: String, limit: Int = 200) -> String {
    sql.count <= limit ? sql : sql.prefix(limit) + "… (\(sql.utf8.count) bytes)"
}
