internal import SofaQL
public import SofaCore
internal import Synchronization

/// A database's revs limit (CouchDB's `_revs_limit`): how many revisions of each document's
/// history it keeps. Unset, a history is kept whole until compaction prunes it to the server's
/// `MAX_REV_TREE_DEPTH`. Set, every write of a revision tree prunes it to the limit, as CouchDB
/// stems on update, and setting it prunes what the database holds already (a document's history
/// read afterwards is at most that long). Kept in the `info` key store, so it outlives a restart.
extension DatabaseStore {
    /// The `info` key the limit is stored under, as decimal text.
    static let revsLimitKey = "revsLimit"

    /// The limit stored in the database (0: none), read on `connection` as the database opens.
    static func storedRevsLimit(_ connection: SQLiteConnection) throws(SofaError) -> Int {
        var limit = 0
        try connection.run("SELECT body FROM kv_info WHERE key = ?", [.text(revsLimitKey)]) { row in
            limit = Int(String(decoding: row.blob(0), as: UTF8.self)) ?? 0
        }
        return max(0, limit)
    }

    /// Sets the limit (at least 1) and prunes every revision tree to it, in one transaction;
    /// returns how many revisions were pruned. Bodies of non-leaf revisions stay (compaction's
    /// work); revisions a tree keeps for its own reasons (a remote's current one) stay too.
    @discardableResult
    public func setRevsLimit(_ limit: Int) async throws(SofaError) -> Int {
        guard limit >= 1, limit <= Int(Int32.max) else {
            throw SofaError(.invalidParameter, "the revs limit must be a positive integer, not \(limit)")
        }
        let previous = revsLimit.load(ordering: .relaxed)
        do {
            return try await perform { (tx: Transaction) throws(SofaError) -> Result<Int, SofaError> in
                try tx.db.run("""
                    INSERT INTO kv_info (key, body) VALUES (?, ?)
                    ON CONFLICT(key) DO UPDATE SET body = excluded.body
                    """, [.text(Self.revsLimitKey), .blob(Array(String(limit).utf8))])
                // Writes after this one in the same commit prune to the new limit too.
                self.revsLimit.store(limit, ordering: .relaxed)
                return .success(try tx.pruneTrees(maxDepth: limit, dropBodies: false))
            }
        } catch {
            revsLimit.store(previous, ordering: .relaxed)
            throw error
        }
    }
}
