internal import CSQLite
public import SofaCore


extension SQLValue {
    /// Binds the value, in this type's encoding, to parameter `index` (1-based) of a prepared
    /// statement. Errors carry SQLite's code and message and the statement's SQL.
    public func bind(to statement: OpaquePointer, at index: Int32) throws(SofaError) {
        let rc: Int32
        switch self {
        case .missing: rc = sqlite3_bind_null(statement, index)
        case .integer(let v): rc = sqlite3_bind_int64(statement, index, v)
        case .real(let v): rc = v.isFinite ? sqlite3_bind_double(statement, index, v) : sqlite3_bind_null(statement, index)
        case .text(let v): rc = SQLiteText.bind(statement, index, v)
        case .json(let v):
            let bytes = v.compactBytes()
            rc = bytes.withUnsafeBytes { sqlite3_bind_blob(statement, index, $0.baseAddress, Int32($0.count), transient) }
        }
        guard rc == SQLITE_OK else {
            let db = sqlite3_db_handle(statement)
            let sql = sqlite3_sql(statement).map { String(cString: $0) } ?? ""
            throw SofaError(.sqlite, rc, "cannot bind parameter \(index): \(String(cString: sqlite3_errmsg(db))) in \(sql)")
        }
    }

    /// The value of result column `column` (0-based) of a statement that has just stepped to a
    /// row, read in this type's encoding.
    public init(column: Int32, of statement: OpaquePointer) {
        self = SQLFunctions.value(sqlite3_column_value(statement, column))
    }
}
