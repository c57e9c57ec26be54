internal import CSQLite
public import SofaCore
internal import Dispatch
internal import Synchronization

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

/// Running compiled queries. A query's statement must only read; a statement SQLite cannot
/// prepare or run is `.invalidQuery` (with SQLite's message and the SQL), as the query's text is
/// where the fault lies, except a file locked by another connection past the wait, which is
/// `.busy`.
extension SQLiteConnection {
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
        let statement: SQLiteStatement
        do {
            statement = try self.statement(sql)
        } catch where Self.isLocked(error) {
            throw Self.locked(error)
        } catch {
            throw SofaError(.invalidQuery, error.message)
        }
        guard statement.isReadOnly else {
            throw SofaError(.invalidQuery, "a query cannot modify the database")
        }
        defer {
            statement.reset()
            sqlite3_progress_handler(handle, 0, nil, nil)
        }
        for (index, value) in values.enumerated() { try statement.bind(value, at: Int32(index + 1)) }
        let check = ProgressCheck(deadline: deadline, interrupt: interrupt)
        if deadline > 0 || interrupt != nil {
            sqlite3_progress_handler(handle, 1000, { context in
                let check = Unmanaged<ProgressCheck>.fromOpaque(context!).takeUnretainedValue()
                if check.interrupt?.isInterrupted == true { return 1 }
                return check.deadline > 0 && DispatchTime.now().uptimeNanoseconds > check.deadline ? 1 : 0
            }, Unmanaged.passUnretained(check).toOpaque())
        }
        defer { withExtendedLifetime(check) {} }
        let columnCount = statement.columnCount
        var values = [JSON?](repeating: nil, count: columnCount)
        while true {
            let more: Bool
            do {
                more = try statement.step()
            } catch where error.code == SQLITE_INTERRUPT {
                if interrupt?.isInterrupted == true { throw SofaError(.cancelled, "the query was cancelled") }
                throw SofaError(.timeout, "the query ran past its deadline")
            } catch where Self.isLocked(error) {
                throw Self.locked(error)
            } catch {
                if interrupt?.isInterrupted == true { throw SofaError(.cancelled, "the query was cancelled") }
                throw SofaError(.invalidQuery, error.message)
            }
            guard more else { return }
            if interrupt?.isInterrupted == true { throw SofaError(.cancelled, "the query was cancelled") }
            let current = SQLiteRow(statement: statement.handle)
            for i in 0..<columnCount { values[i] = current.json(Int32(i)) }
            if try !row(values) { return }
        }
    }

    /// A query that found the file locked longer than it may wait: `.busy`, not a fault of the
    /// query's text.
    static func locked(_ error: SofaError) -> SofaError {
        SofaError(.busy, "the database file is locked by another connection; try again (\(error.message))")
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
}
