public import SofaCore

/// One row a map function emitted for a document.
public struct ViewRow: Sendable, Equatable {
    public var id: String
    public var key: JSON
    public var value: JSON

    public init(id: String, key: JSON, value: JSON) {
        self.id = id
        self.key = key
        self.value = value
    }
}

/// A view query's options, as CouchDB names them (`startkey`, `endkey`, `key`, `keys`, …).
public struct ViewQueryOptions: Sendable {
    public var key: JSON?
    public var keys: [JSON]?
    public var startKey: JSON?
    public var endKey: JSON?
    public var startKeyDocID: String?
    public var endKeyDocID: String?
    public var inclusiveEnd = true
    public var descending = false
    public var limit: Int?
    public var skip = 0
    /// With a reduce function: false lists the rows instead.
    public var reduce = true
    public var group = false
    public var groupLevel: Int?
    /// The view collates keys raw (its `"options": {"collation": "raw"}`), as its index does.
    public var rawCollation = false

    public init() {}

    /// A key's bytes in the view's collation.
    func sortKey(_ key: JSON) -> [UInt8] { ViewSortKey.of(key, raw: rawCollation) }
}

/// What a view query answers: rows (with the view's row count and the offset of the first), or
/// reductions (one per group; key nil for the whole range).
public enum ViewResult: Sendable, Equatable {
    case rows(total: Int, offset: Int, rows: [ViewRow])
    case reduced([ViewGroup])
}

public struct ViewGroup: Sendable, Equatable {
    public var key: JSON?
    public var value: JSON

    public init(key: JSON?, value: JSON) {
        self.key = key
        self.value = value
    }
}

/// A view's persistent index, in a SQLite database of its own (views are not the storage
/// writer's): its rows ordered by CouchDB's collation of keys (as `ViewSortKey` bytes, which
/// SQLite compares as they are), then by document ID; the documents that have rows; and the last
/// sequence indexed. A new `signature` (the view's code changed) empties it.
///
/// Tables, for view `N` (a hash of its name): `view_meta(name, signature, last_seq, row_count)`,
/// `view_rows_N(sortkey, docid, key, value)` with indexes on `(sortkey, docid)` and `docid`, keys
/// and values as JSON text as emitted (an object's members in their order, as CouchDB shows
/// them); `view_reduce_N` (see `ViewIndex+Reduce`).
public final class ViewIndex {
    let connection: SQLiteConnection
    let rows: String
    public let name: String
    public private(set) var lastSequence: UInt64 = 0
    /// Offsets counted, by start key and direction, with the index's state they were counted in
    /// (its last sequence): counting the rows before a key reads them all.
    private var offsets: [[UInt8]: (sequence: Int64, offset: Int)] = [:]

    /// Keys are kept in CouchDB's raw collation (`ViewSortKey.raw`); queries say so with
    /// `ViewQueryOptions.rawCollation`. Part of the signature: an index changes collation only by
    /// being built again.
    public let rawCollation: Bool

    public init(connection: SQLiteConnection, name: String, signature: String, rawCollation: Bool = false) throws(SofaError) {
        self.connection = connection
        self.name = name
        self.rawCollation = rawCollation
        rows = "view_rows_" + Self.tableSuffix(name)
        try connection.execute("CREATE TABLE IF NOT EXISTS view_meta (name TEXT PRIMARY KEY, signature TEXT NOT NULL, "
                               + "last_seq INTEGER NOT NULL, row_count INTEGER NOT NULL DEFAULT 0)")
        var stored: (String, UInt64)?
        try connection.run("SELECT signature, last_seq FROM view_meta WHERE name = ?", [.text(name)]) { row in
            stored = (row.text(0), UInt64(row.integer(1)))
        }
        if let stored, stored.0 == signature {
            lastSequence = stored.1
        } else {
            try connection.execute("BEGIN IMMEDIATE")
            do {
                try connection.execute("DROP TABLE IF EXISTS \(rows)")
                try connection.execute("DROP TABLE IF EXISTS \(Self.reductionsTable(name))")
                try connection.run("INSERT INTO view_meta (name, signature, last_seq, row_count) VALUES (?, ?, 0, 0) "
                                   + "ON CONFLICT(name) DO UPDATE SET signature = excluded.signature, last_seq = 0, row_count = 0",
                                   [.text(name), .text(signature)])
                try connection.execute("COMMIT")
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS \(rows) (sortkey BLOB NOT NULL, docid TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL);
            CREATE INDEX IF NOT EXISTS \(rows)_key ON \(rows) (sortkey, docid);
            CREATE INDEX IF NOT EXISTS \(rows)_doc ON \(rows) (docid);
            """)
    }

    /// Replaces the rows of each document (none: the document is deleted or emits nothing) and
    /// records `sequence` as indexed, in one transaction. `fresh`: no document has rows yet (a
    /// first build), so there are none to remove first.
    /// (A savepoint: it may run inside `whileUpdating`'s transaction.)
    public func apply(_ documents: [(id: String, rows: [(key: JSON, value: JSON)])], through sequence: UInt64,
                      fresh: Bool = false) throws(SofaError) {
        try connection.execute("SAVEPOINT view_apply")
        do {
            var delta = 0
            // The stored reductions of the buckets whose rows change are forgotten.
            var touched = Set<Int64>()
            for document in documents {
                if !fresh {
                    try connection.run("DELETE FROM \(rows) WHERE docid = ? RETURNING rowid", [.text(document.id)]) { row in
                        touched.insert(row.integer(0) >> Self.bucketBits)
                        delta -= 1
                    }
                }
                for row in document.rows {
                    try connection.run("INSERT INTO \(rows) (sortkey, docid, key, value) VALUES (?, ?, ?, ?) RETURNING rowid",
                                       [.blob(ViewSortKey.of(row.key, raw: rawCollation)), .text(document.id), .text(row.key.compactString),
                                        .text(row.value.compactString)]) { touched.insert($0.integer(0) >> Self.bucketBits) }
                }
                delta += document.rows.count
            }
            try forgetReductions(of: touched)
            try connection.run("UPDATE view_meta SET last_seq = max(last_seq, ?), row_count = row_count + ? WHERE name = ?",
                               [.integer(Int64(sequence)), .integer(Int64(delta)), .text(name)])
            try connection.execute("RELEASE view_apply")
            lastSequence = max(lastSequence, sequence)
        } catch {
            try? connection.execute("ROLLBACK TO view_apply")
            try? connection.execute("RELEASE view_apply")
            throw error
        }
    }

    /// Runs an update (reading changes since `lastSequence`, mapping them, `apply`) holding the
    /// views file's write lock, with `lastSequence` read again first: another worker updating the
    /// same view at the same time waits, then goes on from where this one ended (never applies an
    /// older body over a newer one).
    public func whileUpdating<T>(_ body: () throws(SofaError) -> T) throws(SofaError) -> T {
        try connection.execute("BEGIN IMMEDIATE")
        do {
            try connection.run("SELECT last_seq FROM view_meta WHERE name = ?", [.text(name)]) { self.lastSequence = UInt64($0.integer(0)) }
            let result = try body()
            try connection.execute("COMMIT")
            return result
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The rows of `options`' range (or keys), or their reductions by `reduce`.
    /// `countsRows`: the reduce is `_count`, so an ungrouped reduction of a range is counted by
    /// SQLite without reading the rows. The ungrouped reduction of the whole view is made of the
    /// reductions stored per bucket of rows (`ViewIndex+Reduce`), only changed buckets read again.
    public func query(_ options: ViewQueryOptions, countsRows: Bool = false, reduce: ViewReducer? = nil) throws(SofaError) -> ViewResult {
        // Another worker may have brought the shared index further than this one knows: the
        // sequence answered (`update_seq`) and the offsets counted go by the file's.
        try connection.run("SELECT last_seq FROM view_meta WHERE name = ?", [.text(name)]) {
            self.lastSequence = UInt64($0.integer(0))
        }
        let ungrouped = options.reduce && !options.group && (options.groupLevel ?? 0) == 0 && options.keys == nil && options.key == nil
        if countsRows, reduce != nil, ungrouped {
            let count = try countRange(options)
            return .reduced(options.skip > 0 || options.limit == 0 ? [] : [ViewGroup(key: nil, value: .int(Int64(count)))])
        }
        if let reduce, ungrouped, options.startKey == nil, options.endKey == nil {
            let whole = reduce.present(try fullReduction(reduce))
            return .reduced(options.skip > 0 || options.limit == 0 ? [] : [ViewGroup(key: nil, value: whole)])
        }
        var selected: [ViewRow] = []
        if let keys = options.keys ?? options.key.map({ [$0] }) {
            for key in keys {
                var one = options
                (one.startKey, one.endKey, one.keys, one.key, one.inclusiveEnd) = (key, key, nil, nil, true)
                // Without a reduction, no more rows of a key than the whole answer can hold.
                let rowsMayShow = reduce == nil || !options.reduce ? options.limit.map { $0 + options.skip } : nil
                selected += try range(one, limit: rowsMayShow, skip: 0)
            }
        } else {
            selected = try range(options, limit: reduce == nil || !options.reduce ? options.limit : nil,
                                 skip: reduce == nil || !options.reduce ? options.skip : 0)
        }
        guard let reduce, options.reduce else {
            if options.keys != nil || options.key != nil {
                selected = Array(selected.dropFirst(options.skip).prefix(options.limit ?? .max))
            }
            return .rows(total: try count(), offset: try offset(options), rows: selected)
        }
        // `group_level=0` groups every row together, as no grouping does (its key is null).
        let groupAll = !options.group && (options.groupLevel ?? 0) == 0
        var groups: [ViewGroup] = []
        var start = selected.startIndex
        while start < selected.endIndex {
            let key: JSON? = groupAll ? Optional<JSON>.none : .some(Self.groupKey(selected[start].key, level: options.groupLevel))
            var end = start + 1
            while end < selected.endIndex,
                  key.map({ ViewCollation.compare(Self.groupKey(selected[end].key, level: options.groupLevel), $0, raw: options.rawCollation) == 0 }) ?? true {
                end += 1
            }
            let slice = selected[start..<end]
            let value = reduce.present(try reduce.reduce(slice.map { [$0.key, .string($0.id)] }, slice.map(\.value)))
            groups.append(ViewGroup(key: key, value: value))
            start = end
        }
        if groupAll && groups.isEmpty { groups = [ViewGroup(key: nil, value: reduce.present(try reduce.reduce([], [])))] }
        return .reduced(Array(groups.dropFirst(options.skip).prefix(options.limit ?? .max)))
    }

    /// A key cut to `level` elements (an array key) for `group_level`; other keys whole.
    static func groupKey(_ key: JSON, level: Int?) -> JSON {
        guard let level, case .array(let items) = key else { return key }
        return .array(Array(items.prefix(level)))
    }

    /// The rows between the options' bounds, in key order (then document ID), reversed when
    /// `descending` (its start key is then the highest).
    private func range(_ options: ViewQueryOptions, limit: Int?, skip: Int) throws(SofaError) -> [ViewRow] {
        var (clause, bindings) = Self.bounds(options)
        let order = options.descending ? "DESC" : "ASC"
        let sql = "SELECT key, docid, value FROM \(rows)" + clause + " ORDER BY sortkey \(order), docid \(order) LIMIT ? OFFSET ?"
        bindings += [.integer(Int64(limit ?? -1)), .integer(Int64(skip))]
        var result: [ViewRow] = []
        try connection.run(sql, bindings) { row throws(SofaError) in
            result.append(ViewRow(id: row.text(1), key: try JSON.parse(row.text(0)), value: try JSON.parse(row.text(2))))
        }
        return result
    }

    /// The rows between the options' bounds, counted by SQLite (a `_count` over a range reads no row).
    public func countRange(_ options: ViewQueryOptions) throws(SofaError) -> Int {
        let (clause, bindings) = Self.bounds(options)
        var total = 0
        try connection.run("SELECT COUNT(*) FROM \(rows)" + clause, bindings) { total = Int($0.integer(0)) }
        return total
    }

    /// The WHERE clause of the options' bounds (`startkey`, `endkey`, their document IDs,
    /// `inclusive_end`; reversed for `descending`), and its bindings.
    static func bounds(_ options: ViewQueryOptions) -> (String, [SQLiteValue]) {
        var conditions: [String] = []
        var bindings: [SQLiteValue] = []
        let (after, before) = options.descending ? ("<", ">") : (">", "<")
        if let start = options.startKey {
            if let id = options.startKeyDocID {
                conditions.append("(sortkey \(after) ? OR (sortkey = ? AND docid \(after)= ?))")
                bindings += [.blob(options.sortKey(start)), .blob(options.sortKey(start)), .text(id)]
            } else {
                conditions.append("sortkey \(after)= ?")
                bindings.append(.blob(options.sortKey(start)))
            }
        }
        if let end = options.endKey {
            if let id = options.endKeyDocID {
                conditions.append("(sortkey \(before) ? OR (sortkey = ? AND docid \(before)\(options.inclusiveEnd ? "=" : "") ?))")
                bindings += [.blob(options.sortKey(end)), .blob(options.sortKey(end)), .text(id)]
            } else {
                conditions.append("sortkey \(before)\(options.inclusiveEnd ? "=" : "") ?")
                bindings.append(.blob(options.sortKey(end)))
            }
        }
        return (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "), bindings)
    }

    /// Every row of the view (CouchDB's `total_rows`), as kept with the index.
    public func count() throws(SofaError) -> Int {
        var total = 0
        try connection.run("SELECT row_count FROM view_meta WHERE name = ?", [.text(name)]) { total = Int($0.integer(0)) }
        return total
    }

    /// How many rows come before the first one the options ask for (CouchDB's `offset`): those
    /// of lower keys, and with `startkey_docid` those of the start key with lower document IDs.
    private func offset(_ options: ViewQueryOptions) throws(SofaError) -> Int {
        guard let start = options.startKey ?? options.key ?? options.keys?.first else { return options.skip }
        // The index as it is now: `query` read its sequence from the file (another worker may
        // have updated it since this one looked).
        let sequence = Int64(lastSequence)
        let startID = options.startKey != nil ? options.startKeyDocID : nil
        let startKey = options.sortKey(start)
        // By the start key's bytes in the view's collation (objects with the same members in
        // another order are other keys); a sort key ends where it ends, so the ID follows it.
        var cacheKey = [options.descending ? 1 : 0] + startKey
        if let startID { cacheKey += [0xFF] + Array(startID.utf8) }
        if let known = offsets[cacheKey], known.sequence == sequence { return known.offset + options.skip }
        var before = 0
        let below = options.descending ? ">" : "<"
        var sql = "SELECT COUNT(*) FROM \(rows) WHERE sortkey \(below) ?"
        var bindings: [SQLiteValue] = [.blob(startKey)]
        if let startID {
            sql += " OR (sortkey = ? AND docid \(below) ?)"
            bindings += [.blob(startKey), .text(startID)]
        }
        try connection.run(sql, bindings) { before = Int($0.integer(0)) }
        if offsets.count > 1000 { offsets.removeAll() }
        offsets[cacheKey] = (sequence, before)
        return before + options.skip
    }

    static func tableSuffix(_ name: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return String(hash, radix: 16)
    }
}
