public import SofaQL
public import SofaCore

public struct ChangesOptions: Sendable {
    public var since: UInt64
    public var descending: Bool
    /// 0 = no limit.
    public var limit: Int
    public var includeBodies: Bool
    public var allLeaves: Bool
    public var includeDeleted: Bool
    /// Empty = every document.
    public var docIDs: [String]

    public init(since: UInt64 = 0, descending: Bool = false, limit: Int = 0, includeBodies: Bool = false,
                allLeaves: Bool = false, includeDeleted: Bool = true, docIDs: [String] = []) {
        self.since = since
        self.descending = descending
        self.limit = limit
        self.includeBodies = includeBodies
        self.allLeaves = allLeaves
        self.includeDeleted = includeDeleted
        self.docIDs = docIDs
    }
}

/// A document in the changes feed, at its latest sequence. A purged or expired document has an
/// empty `rev` and `deleted` set (it counts as deleted for `includeDeleted`).
public struct ChangeEntry: Sendable, Equatable {
    public var sequence: UInt64
    public var id: String
    public var rev: String
    public var deleted: Bool
    public var body: [UInt8]
    public var leaves: [String]
}

public struct AllDocsOptions: Sendable {
    public var includeBodies: Bool
    public var includeDeleted: Bool
    /// 0 = no limit.
    public var limit: Int
    public var skip: Int
    public var descending: Bool
    /// Inclusive bounds in iteration order (with `descending`, `startKey` is the highest); nil = unbounded.
    public var startKey: String?
    public var endKey: String?

    public init(includeBodies: Bool = false, includeDeleted: Bool = false, limit: Int = 0, skip: Int = 0,
                descending: Bool = false, startKey: String? = nil, endKey: String? = nil) {
        self.includeBodies = includeBodies
        self.includeDeleted = includeDeleted
        self.limit = limit
        self.skip = skip
        self.descending = descending
        self.startKey = startKey
        self.endKey = endKey
    }
}

extension DatabaseStore {
    /// The collection's documents changed after `since`, each once at its latest sequence, and
    /// the collection's last sequence at the time of the read.
    public func changes(_ options: ChangesOptions = ChangesOptions(),
                        in collection: CollectionName = .default) async throws(SofaError) -> (changes: [ChangeEntry], lastSequence: UInt64) {
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
        return try await read { () throws(SofaError) -> ([ChangeEntry], UInt64) in
            var entries: [ChangeEntry] = []
            try self.reader.run(query, binds) { row throws(SofaError) in
                entries.append(try self.changeEntry(try DocumentRow(row), options))
            }
            var last: UInt64 = 0
            try self.reader.run("SELECT lastSeq FROM kvmeta WHERE name = ?", [.text(collection.keyStore)]) {
                last = UInt64($0.integer(0))
            }
            return (entries, last)
        }
    }

    private func changeEntry(_ row: DocumentRow, _ options: ChangesOptions) throws(SofaError) -> ChangeEntry {
        if row.isPurged || row.version.isEmpty {
            return ChangeEntry(sequence: row.sequence, id: row.key, rev: "", deleted: true, body: [], leaves: [])
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
        return ChangeEntry(sequence: row.sequence, id: row.key, rev: rev, deleted: row.flags.contains(.deleted),
                           body: options.includeBodies ? row.body : [], leaves: leaves)
    }

    /// Documents by ID (SQLite's binary order), current revisions; purged documents never appear.
    public func allDocs(_ options: AllDocsOptions = AllDocsOptions(),
                        in collection: CollectionName = .default) async throws(SofaError) -> [DocumentRecord] {
        try check(collection)
        var sql = "SELECT \(DocumentRow.columns) FROM \(collection.table) WHERE (flags & \(DocumentFlags.purged.rawValue)) = 0"
        var bindings: [SQLiteValue] = []
        if !options.includeDeleted { sql += " AND (flags & 1) = 0" }
        let (low, high) = options.descending ? (options.endKey, options.startKey) : (options.startKey, options.endKey)
        if let low {
            sql += " AND key >= ?"
            bindings.append(.text(low))
        }
        if let high {
            sql += " AND key <= ?"
            bindings.append(.text(high))
        }
        sql += " ORDER BY key \(options.descending ? "DESC" : "ASC") LIMIT ? OFFSET ?"
        bindings.append(.integer(options.limit > 0 ? Int64(options.limit) : -1))
        bindings.append(.integer(Int64(max(0, options.skip))))
        let query = sql
        let binds = bindings
        return try await read { () throws(SofaError) -> [DocumentRecord] in
            var records: [DocumentRecord] = []
            try self.reader.run(query, binds) { row throws(SofaError) in
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
