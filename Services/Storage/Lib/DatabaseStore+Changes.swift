public import SofaRows
public import SofaQL
public import SofaCore

extension DatabaseStore {
    /// The collection's documents changed after `since`, each once at its latest sequence, and
    /// the collection's last sequence at the time of the read. `waitMs` is not storage's: it
    /// answers at once.
    public func changes(_ options: ChangesQuery = ChangesQuery(),
                        in collection: CollectionName = .default) async throws(SofaError) -> ChangesBatch {
        try check(collection)
        var sql = "SELECT \(DocumentRow.columns) FROM \(collection.table) WHERE sequence > ?"
        var bindings: [SQLiteValue] = [.integer(Int64(clamping: options.since))]
        if !options.includeDeleted { sql += " AND (flags & 1) = 0" }
        if !options.docIDs.isEmpty {
            sql += " AND key IN (SELECT value FROM json_each(?))"
            bindings.append(.text(JSON.array(options.docIDs.map(JSON.string)).compactString))
        }
        sql += " ORDER BY sequence \(options.descending ? "DESC" : "ASC") LIMIT ?"
        bindings.append(.integer(options.limit > 0 ? Int64(options.limit) : -1))
        let query = sql
        let binds = bindings
        return try await read { (reader) throws(SofaError) -> ChangesBatch in
            var entries: [Change] = []
            try reader.run(query, binds) { row throws(SofaError) in
                entries.append(try self.changeEntry(try DocumentRow(row), options))
            }
            var last: UInt64 = 0
            try reader.run("SELECT lastSeq FROM kvmeta WHERE name = ?", [.text(collection.keyStore)]) {
                last = UInt64($0.integer(0))
            }
            return ChangesBatch(changes: entries, lastSequence: last)
        }
    }

    private func changeEntry(_ row: DocumentRow, _ options: ChangesQuery) throws(SofaError) -> Change {
        if row.isPurged || row.version.isEmpty {
            return Change(sequence: row.sequence, id: row.key, rev: "", deleted: true, body: [], leaves: [])
        }
        let rev = try DocumentVersion(binary: row.version).ascii
        var leaves: [String] = []
        if options.allLeaves, versioning == .revisionTrees, row.extra.first == 1 {
            // A tree of one revision (its encoding starts with the count): the current one is
            // the only leaf, no need to decode it.
            leaves = [rev]
        } else if options.allLeaves, let content = try row.content(versioning) {
            switch content {
            case .tree(let tree):
                leaves = [rev] + tree.leaves.map(\.revID.ascii).filter { $0 != rev }.sorted().reversed()
            case .vector(let doc):
                leaves = ([doc.current] + doc.conflicts).map(\.rev)
            }
        }
        return Change(sequence: row.sequence, id: row.key, rev: rev, deleted: row.flags.contains(.deleted),
                           body: options.includeBodies ? row.body : [], leaves: leaves)
    }

    /// Documents by ID (SQLite's binary order), current revisions; purged documents never appear.
    public func allDocs(_ options: AllDocsQuery = AllDocsQuery(),
                        in collection: CollectionName = .default) async throws(SofaError) -> [DocumentRecord] {
        try check(collection)
        var sql = "SELECT \(DocumentRow.columns) FROM \(collection.table) WHERE (flags & \(DocumentFlags.purged.rawValue)) = 0"
        var bindings: [SQLiteValue] = []
        if !options.includeDeleted { sql += " AND (flags & 1) = 0" }
        let (low, high) = options.descending ? (options.endKey, options.startKey) : (options.startKey, options.endKey)
        if !low.isEmpty {
            sql += " AND key >= ?"
            bindings.append(.text(low))
        }
        if !high.isEmpty {
            sql += " AND key <= ?"
            bindings.append(.text(high))
        }
        sql += " ORDER BY key \(options.descending ? "DESC" : "ASC") LIMIT ? OFFSET ?"
        bindings.append(.integer(options.limit > 0 ? Int64(options.limit) : -1))
        bindings.append(.integer(Int64(options.skip)))
        let query = sql
        let binds = bindings
        return try await read { (reader) throws(SofaError) -> [DocumentRecord] in
            var records: [DocumentRecord] = []
            try reader.run(query, binds) { row throws(SofaError) in
                let doc = try DocumentRow(row)
                records.append(DocumentRecord(id: doc.key, rev: try DocumentVersion(binary: doc.version),
                                              body: options.includeBodies ? doc.body : [],
                                              deleted: doc.flags.contains(.deleted), sequence: doc.sequence,
                                              conflicted: doc.flags.contains(.conflicted), expiration: doc.expiration,
                                              hasAttachments: doc.flags.contains(.hasAttachments)))
            }
            return records
        }
    }
}
