internal import SofaQL
internal import SofaRows
public import SofaCore

/// A local document (`_local/ID`): not replicated, no history, not in the changes feed. Its revs
/// count `0-1`, `0-2`… as CouchDB's; deleting it removes it.
public struct LocalDocument: Sendable, Equatable {
    public var id: String
    public var rev: String
    public var body: [UInt8]
}

/// Local documents live in the database-wide key store `local` (one per database, whatever the
/// collection), keyed by their whole ID (`_local/…`); `version` holds the rev as ASCII.
extension LocalDocuments {
    static let table = "kv_local"

    static func refuse(_ id: String) throws(SofaError) {
        if isLocal(id) { throw .invalid("'\(id)' is a local document: use the local-document calls") }
    }

    /// Whether an all-docs query lists local documents (both bounds inside `_local/`, as
    /// CouchDB's `_local_docs`); the default store never holds such IDs.
    static func isListing(_ query: AllDocsQuery) -> Bool {
        isLocal(query.startKey) && isLocal(query.endKey)
    }

    static func generation(_ rev: String) -> UInt64? {
        guard rev.hasPrefix("0-"), let n = UInt64(rev.dropFirst(2)), n > 0 else { return nil }
        return n
    }
}

extension DatabaseStore {
    /// Writes (or, with `deleted`, removes) a local document with MVCC by its own revs: a new one
    /// needs no rev, an existing one its current rev. Returns the new rev (`0-0` after a delete).
    public func writeLocal(id: String, rev: String?, body: JSON, deleted: Bool) async throws(SofaError) -> String {
        guard LocalDocuments.isLocal(id), id.count > LocalDocuments.prefix.count else {
            throw .invalid("a local document ID is _local/ followed by a name, not '\(id)'")
        }
        try DocumentID.validate(id)
        if let rev, LocalDocuments.generation(rev) == nil {
            throw SofaError(.badRevisionID, "invalid local revision '\(rev)': local revisions are 0-1, 0-2…")
        }
        let bytes = Self.bodyBytes(body)
        return try await perform { (tx: Transaction) throws(SofaError) -> Result<String, SofaError> in
            var current: String?
            try tx.db.run("SELECT version FROM kv_local WHERE key = ?", [.text(id)]) {
                current = String(decoding: $0.blob(0), as: UTF8.self)
            }
            switch (current, rev) {
            case (nil, nil):
                if deleted { return .failure(.notFound("local document '\(id)' does not exist")) }
            case (nil, let given?):
                return .failure(.conflict("local document '\(id)' does not exist, so it has no revision \(given)"))
            case (let existing?, nil):
                return .failure(.conflict("local document '\(id)' exists (revision \(existing)); give its current _rev"))
            case (let existing?, let given?):
                guard existing == given else {
                    return .failure(.conflict("local document '\(id)': revision \(given) is not the current one (\(existing))"))
                }
            }
            if deleted {
                try tx.db.run("DELETE FROM kv_local WHERE key = ?", [.text(id)])
                return .success("0-0")
            }
            let next = "0-\((current.flatMap(LocalDocuments.generation) ?? 0) + 1)"
            try tx.db.run("""
                INSERT INTO kv_local (key, version, body) VALUES (?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET version = excluded.version, body = excluded.body
                """, [.text(id), .blob(Array(next.utf8)), .blob(bytes)])
            return .success(next)
        }
    }

    public func readLocal(id: String) async throws(SofaError) -> LocalDocument {
        try await read { (reader) throws(SofaError) -> LocalDocument in
            var result: LocalDocument?
            try reader.run("SELECT version, body FROM kv_local WHERE key = ?", [.text(id)]) { row in
                result = LocalDocument(id: id, rev: String(decoding: row.blob(0), as: UTF8.self), body: row.blob(1))
            }
            guard let result else { throw .notFound("local document '\(id)' not found") }
            return result
        }
    }

    /// Local documents in ID order between the query's bounds (inclusive), after `skip`, at most
    /// `limit` (0: no limit).
    public func localDocs(_ query: AllDocsQuery) async throws(SofaError) -> [LocalDocument] {
        let (low, high) = query.descending ? (query.endKey, query.startKey) : (query.startKey, query.endKey)
        let sql = "SELECT key, version, body FROM kv_local WHERE key >= ? AND key <= ? ORDER BY key "
            + (query.descending ? "DESC" : "ASC") + " LIMIT ? OFFSET ?"
        let bindings: [SQLiteValue] = [.text(low), .text(high), .integer(query.limit > 0 ? Int64(query.limit) : -1),
                                       .integer(Int64(query.skip))]
        return try await read { (reader) throws(SofaError) -> [LocalDocument] in
            var documents: [LocalDocument] = []
            try reader.run(sql, bindings) { row in
                documents.append(LocalDocument(id: row.text(0), rev: String(decoding: row.blob(1), as: UTF8.self),
                                               body: query.includeBodies ? row.blob(2) : []))
            }
            return documents
        }
    }

    // MARK: Raw key stores

    /// Raw key store names: 1…64 of `[a-z0-9_-]`, starting with a letter, other than the
    /// document stores `default` and `local`. `info` and `checkpoints` always exist.
    public static func validate(rawStore store: String) throws(SofaError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_-".utf8)
        guard !store.isEmpty, store.utf8.count <= 64, store.utf8.allSatisfy(allowed.contains),
              let first = store.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else {
            throw .invalid("invalid key store name '\(store)': use a lower-case letter, then a-z, 0-9, _ and -, at most 64")
        }
        guard store != "default", store != "local" else {
            throw .invalid("key store '\(store)' holds documents; use the document calls")
        }
    }

    public func rawPut(store: String, key: String, version: [UInt8], body: [UInt8]) async throws(SofaError) {
        try Self.validate(rawStore: store)
        guard !key.isEmpty else { throw .invalid("a raw key is not empty") }
        let table = CollectionName.table(forKeyStore: store)
        try await perform { (tx: Transaction) throws(SofaError) -> Result<Void, SofaError> in
            try tx.db.execute(Self.keyStoreDDL(store))
            try tx.db.run("""
                INSERT INTO \(table) (key, version, body) VALUES (?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET version = excluded.version, body = excluded.body
                """, [.text(key), .blob(version), .blob(body)])
            return .success(())
        }
    }

    public func rawGet(store: String, key: String) async throws(SofaError) -> (version: [UInt8], body: [UInt8]) {
        try Self.validate(rawStore: store)
        let table = CollectionName.tableName(forKeyStore: store)
        return try await read { (reader) throws(SofaError) -> ([UInt8], [UInt8]) in
            var exists = false
            try reader.run("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [.text(table)]) { _ in exists = true }
            var result: ([UInt8], [UInt8])?
            if exists {
                try reader.run("SELECT version, body FROM \"\(table)\" WHERE key = ?", [.text(key)]) { row in
                    result = (row.blob(0), row.blob(1))
                }
            }
            guard let result else { throw .notFound("no key '\(key)' in key store '\(store)'") }
            return result
        }
    }

    public func rawDelete(store: String, key: String) async throws(SofaError) {
        try Self.validate(rawStore: store)
        let table = CollectionName.table(forKeyStore: store)
        try await perform { (tx: Transaction) throws(SofaError) -> Result<Void, SofaError> in
            try tx.db.execute(Self.keyStoreDDL(store))
            try tx.db.run("DELETE FROM \(table) WHERE key = ?", [.text(key)])
            guard tx.db.changes > 0 else { return .failure(.notFound("no key '\(key)' in key store '\(store)'")) }
            return .success(())
        }
    }
}
