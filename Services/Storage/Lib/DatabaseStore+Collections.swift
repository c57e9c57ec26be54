public import SofaQL
public import SofaCore
internal import Foundation

/// A database's counters and identity, as `info` reports them.
public struct DatabaseStats: Sendable, Equatable {
    /// Live documents of the collection asked about.
    public var documents: Int
    /// Its deleted documents (not purged ones).
    public var deleted = 0
    /// The last sequence of the collection asked about.
    public var lastSequence: UInt64
    /// Every committed document change of the database, purges and expirations included.
    public var updateSequence: UInt64
    public var purgeCount: UInt64
    public var fileBytes: UInt64
    public var walBytes: UInt64
    public var publicUUID: String
    public var privateUUID: String
    public var versioning: Versioning
    public var collections: Int
    /// The revs limit set (`setRevsLimit`); 0: none.
    public var revsLimit = 0
}

extension DatabaseStore {
    /// Creates a collection; one that exists is left as it is, as LiteCore's and Couchbase Lite's
    /// `createCollection` answers with the existing collection (`_default._default` included).
    /// A collection deleted before comes back empty and keeps counting sequences from its old last one.
    public func createCollection(_ collection: CollectionName) async throws(SofaError) {
        let exists: @Sendable () -> Bool = { self.collections.withLock { $0[collection.keyStore] } == .live }
        if exists() { return }
        try await perform { (tx: Transaction) throws(SofaError) -> Result<Void, SofaError> in
            if exists() { return .success(()) }
            try tx.db.execute(Self.keyStoreDDL(collection.keyStore))
            try tx.db.run("INSERT OR IGNORE INTO kvmeta (name, lastSeq) VALUES (?, 0)", [.text(collection.keyStore)])
            tx.afterCommit.append { self.collections.withLock { $0[collection.keyStore] = .live } }
            return .success(())
        }
    }

    /// Deletes a collection and its documents; `_default._default` cannot be deleted. Its
    /// `kvmeta` row stays, so a re-created collection keeps counting sequences.
    public func deleteCollection(_ collection: CollectionName) async throws(SofaError) {
        guard !collection.isDefault else {
            throw .invalid("the default collection _default._default cannot be deleted")
        }
        try check(collection)
        try await perform { (tx: Transaction) throws(SofaError) -> Result<Void, SofaError> in
            try Self.dropIndexes(of: collection, tx.db)
            try tx.db.execute("DROP TABLE IF EXISTS \(collection.table)")
            try tx.db.run("INSERT OR IGNORE INTO kvmeta (name, lastSeq) VALUES (?, 0)", [.text(collection.keyStore)])
            tx.afterCommit.append { self.collections.withLock { $0[collection.keyStore] = .deleted } }
            tx.expirationsChanged = true
            return .success(())
        }
    }

    /// Live collections as "scope.collection", sorted.
    public func listCollections() -> [String] {
        liveCollections.map(\.description)
    }

    /// Counters of the database; `documents` and `lastSequence` are those of `collection`.
    public func info(_ collection: CollectionName = .default) async throws(SofaError) -> DatabaseStats {
        try check(collection)
        let count = liveCollections.count
        var stats = try await read { (reader) throws(SofaError) -> DatabaseStats in
            var stats = DatabaseStats(documents: 0, lastSequence: 0, updateSequence: 0, purgeCount: 0, fileBytes: 0,
                                      walBytes: 0, publicUUID: "", privateUUID: "", versioning: self.versioning,
                                      collections: count)
            // One pass: live documents, and tombstones (a purged document keeps no version).
            try reader.run("SELECT count(*) FILTER (WHERE (flags & 1) = 0), count(*) FILTER (WHERE (flags & 1) = 1 AND length(version) > 0) "
                           + "FROM \(collection.table)") {
                stats.documents = Int($0.integer(0))
                stats.deleted = Int($0.integer(1))
            }
            try reader.run("SELECT lastSeq, purgeCnt FROM kvmeta WHERE name = ?", [.text(collection.keyStore)]) {
                stats.lastSequence = UInt64($0.integer(0))
                stats.purgeCount = UInt64($0.integer(1))
            }
            try reader.run("SELECT key, sequence, body FROM kv_info WHERE key IN ('updateSequence', 'publicUUID', 'privateUUID')") { row in
                switch row.text(0) {
                case "updateSequence": stats.updateSequence = UInt64(row.integer(1))
                case "publicUUID": stats.publicUUID = uuidString(row.blob(2))
                default: stats.privateUUID = uuidString(row.blob(2))
                }
            }
            return stats
        }
        let file = directory.appendingPathComponent("db.sqlite3").path
        stats.fileBytes = fileSize(file)
        stats.walBytes = fileSize(file + "-wal")
        stats.revsLimit = revsLimit.load(ordering: .relaxed)
        return stats
    }
}

func fileSize(_ path: String) -> UInt64 {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.uint64Value ?? 0
}
