public import SofaCore

/// How a view reduces: rows' keys (`[key, docid]`) and values to a reduction, reductions to one
/// (`rereduce`), and a reduction as a query shows it (a builtin keeps more than it shows:
/// `_approx_count_distinct` its sketch).
public struct ViewReducer {
    public var reduce: (_ keys: [JSON], _ values: [JSON]) throws(SofaError) -> JSON
    public var rereduce: (_ reductions: [JSON]) throws(SofaError) -> JSON
    public var present: (_ reduction: JSON) -> JSON

    public init(reduce: @escaping (_ keys: [JSON], _ values: [JSON]) throws(SofaError) -> JSON,
                rereduce: @escaping (_ reductions: [JSON]) throws(SofaError) -> JSON,
                present: @escaping (_ reduction: JSON) -> JSON = { $0 }) {
        self.reduce = reduce
        self.rereduce = rereduce
        self.present = present
    }

    /// A builtin reduce (`_count`, `_sum`, `_stats`, `_approx_count_distinct`).
    public init(_ builtin: BuiltinReduce) {
        self.init(reduce: { (keys, values) throws(SofaError) in try builtin.reduce(keys: keys, values: values) },
                  rereduce: { (reductions) throws(SofaError) in try builtin.rereduce(reductions) },
                  present: { builtin.present($0) })
    }
}

/// Reductions stored per bucket of rows: the rows of a view's table in runs of 2^`bucketBits`
/// rowids (SQLite gives a new row the next rowid, so a bucket is a contiguous stretch of the
/// table), each bucket's reduction kept in `view_reduce_N(bucket, value)` until a row of it is
/// deleted or added (`apply` forgets it). The whole view's reduction is the rereduce of the
/// buckets' — read from the table only for the buckets that changed since.
extension ViewIndex {
    static let bucketBits: Int64 = 10

    static func reductionsTable(_ name: String) -> String { "view_reduce_" + tableSuffix(name) }

    func forgetReductions(of buckets: Set<Int64>) throws(SofaError) {
        guard !buckets.isEmpty else { return }
        let table = Self.reductionsTable(name)
        try connection.execute("CREATE TABLE IF NOT EXISTS \(table) (bucket INTEGER PRIMARY KEY, value TEXT)")
        for bucket in buckets { try connection.run("DELETE FROM \(table) WHERE bucket = ?", [.integer(bucket)]) }
    }

    /// The reduction of every row (not presented).
    func fullReduction(_ reducer: ViewReducer) throws(SofaError) -> JSON {
        let table = Self.reductionsTable(name)
        try connection.execute("CREATE TABLE IF NOT EXISTS \(table) (bucket INTEGER PRIMARY KEY, value TEXT)")
        // The buckets' stored reductions, and the buckets known to have no rows (SQL NULL).
        var stored: [Int64: JSON] = [:]
        var empty = Set<Int64>()
        try connection.run("SELECT bucket, value FROM \(table)") { row throws(SofaError) in
            if row.isNull(1) { empty.insert(row.integer(0)) } else { stored[row.integer(0)] = try JSON.parse(row.text(1)) }
        }
        var last: Int64 = -1
        try connection.run("SELECT max(rowid) FROM \(rows)") { row in if !row.isNull(0) { last = row.integer(0) >> Self.bucketBits } }
        var reductions: [JSON] = []
        var computed: [(bucket: Int64, reduction: JSON?)] = []
        if last >= 0 {
            for bucket in 0...last {
                if empty.contains(bucket) { continue }
                if let known = stored[bucket] {
                    reductions.append(known)
                    continue
                }
                var keys: [JSON] = []
                var values: [JSON] = []
                try connection.run("SELECT key, docid, value FROM \(rows) WHERE rowid >= ? AND rowid < ?",
                                   [.integer(bucket << Self.bucketBits), .integer((bucket + 1) << Self.bucketBits)]) { row throws(SofaError) in
                    keys.append([try JSON.parse(row.text(0)), .string(row.text(1))])
                    values.append(try JSON.parse(row.text(2)))
                }
                let reduction: JSON? = values.isEmpty ? Optional<JSON>.none : .some(try reducer.reduce(keys, values))
                if let reduction { reductions.append(reduction) }
                computed.append((bucket, reduction))
            }
        }
        // Kept for the next query; a query that only reads (another worker updating) keeps none.
        if !computed.isEmpty, (try? connection.execute("SAVEPOINT view_reduce")) != nil {
            do {
                for (bucket, reduction) in computed {
                    try connection.run("INSERT OR REPLACE INTO \(table) (bucket, value) VALUES (?, ?)",
                                       [.integer(bucket), reduction.map { SQLiteValue.text($0.canonicalString) } ?? SQLiteValue.null])
                }
                try connection.execute("RELEASE view_reduce")
            } catch {
                try? connection.execute("ROLLBACK TO view_reduce")
                try? connection.execute("RELEASE view_reduce")
            }
        }
        if reductions.isEmpty { return try reducer.reduce([], []) }
        return reductions.count == 1 ? reductions[0] : try reducer.rereduce(reductions)
    }
}
