public import SofaCore

/// The views file's upkeep: which indexes it holds, and removing those no view needs.
extension ViewIndex {
    /// One index the views file holds.
    public struct Stored: Sendable, Equatable {
        /// "design/view".
        public var name: String
        public var signature: String
        public var lastSequence: UInt64
        public var rowCount: Int
    }

    /// Every index the file holds.
    public static func stored(on connection: SQLiteConnection) throws(SofaError) -> [Stored] {
        var exists = false
        try connection.run("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'view_meta'") { _ in exists = true }
        guard exists else { return [] }
        var found: [Stored] = []
        try connection.run("SELECT name, signature, last_seq, row_count FROM view_meta ORDER BY name") { row in
            found.append(Stored(name: row.text(0), signature: row.text(1), lastSequence: UInt64(row.integer(2)),
                                rowCount: Int(row.integer(3))))
        }
        return found
    }

    /// Removes an index (its rows and its record), in one transaction.
    public static func drop(_ name: String, on connection: SQLiteConnection) throws(SofaError) {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            try connection.execute("DROP TABLE IF EXISTS view_rows_\(tableSuffix(name))")
            try connection.execute("DROP TABLE IF EXISTS \(reductionsTable(name))")
            try connection.run("DELETE FROM view_meta WHERE name = ?", [.text(name)])
            try connection.execute("COMMIT")
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }
}

extension ViewIndex {
    /// Rewrites the views file to its smallest (SQLite's VACUUM).
    public static func compact(on connection: SQLiteConnection) throws(SofaError) {
        try connection.execute("VACUUM")
    }
}
