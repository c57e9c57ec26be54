public import SofaQL
public import SofaCore

// A document's row in a database file, as sofa-storage writes it and every reader of the file
// (storage's readers, the gateway's direct reads) reads it back.

extension DocumentFlags {
    /// Storage's own flag (never set by SofaCore): the row of a purged or expired document, kept
    /// so the changes feed can report the purge at its sequence. Its version, body and extra are
    /// empty and `deleted` is set too, so LiteCore-style readers (`flags & 1 = 0`) skip it; reads
    /// answer not found and a new write starts a new document.
    public static let purged = DocumentFlags(rawValue: 0x8000)
}

/// Local documents (`_local/…`) are kept apart from a collection's rows (see storage's
/// `LocalDocuments.table`).
public enum LocalDocuments {
    public static let prefix = "_local/"

    public static func isLocal(_ id: String) -> Bool { id.hasPrefix(prefix) }
}

/// One row of a collection's table.
public struct DocumentRow: Sendable {
    public var key: String
    public var sequence: UInt64
    public var flags: DocumentFlags
    public var version: [UInt8]
    public var body: [UInt8]
    public var extra: [UInt8]
    public var expiration: Int64?

    public var isPurged: Bool { flags.contains(.purged) }

    public static let columns = "key, sequence, flags, version, body, extra, expiration"

    /// Reads a row selected with `columns`.
    public init(_ row: SQLiteRow) throws(SofaError) {
        key = row.text(0)
        sequence = UInt64(max(0, row.integer(1)))
        flags = try Record.splitFlagsColumn(row.integer(2)).flags
        version = row.blob(3)
        body = row.blob(4)
        extra = row.blob(5)
        expiration = row.isNull(6) ? nil : row.integer(6)
    }

    /// The row of document `id` in `table`, read with the statement cached under `statement`.
    public static func load(_ db: SQLiteConnection, table: String, id: String,
                            statement: some Hashable & Sendable) throws(SofaError) -> DocumentRow? {
        var result: DocumentRow?
        try db.run(statement, { "SELECT \(columns) FROM \(table) WHERE key = ?" }, [.text(id)]) { row throws(SofaError) in
            result = try DocumentRow(row)
        }
        return result
    }

    /// The revisions of a row of a revision-tree database; nil for a purged row.
    public func revisionTree() throws(SofaError) -> RevTree? {
        if isPurged || version.isEmpty { return nil }
        if extra.isEmpty {
            // A row written before trees were kept: one revision, the current one.
            var tree = RevTree()
            try tree.insert(try RevID(binary: version), parent: nil, body: body, deleted: flags.contains(.deleted),
                            hasAttachments: flags.contains(.hasAttachments))
            tree.markSaved(sequence: sequence)
            return tree
        }
        return try RevTree(encoded: extra, currentBody: body)
    }

    /// What a read of document `id` answers from its revision tree (this row's): the current
    /// revision, or `rev`; with `history`, its ancestry.
    public func record(id: String, tree: RevTree, rev: DocumentVersion?, history: Bool) throws(SofaError) -> DocumentRecord {
        guard let current = tree.current else { throw Self.notFound(id) }
        var revision = current
        if let rev {
            guard case .revID(let revID) = rev else {
                throw SofaError(.badRevisionID, "this database uses revision trees; \(rev) is a version")
            }
            guard let found = tree[revID] else { throw .notFound("document '\(id)' has no revision \(revID)") }
            guard found.body != nil || found.isDeleted else {
                throw .notFound("document '\(id)': the body of revision \(revID) is no longer kept")
            }
            revision = found
        } else if current.isDeleted {
            throw .notFound("document '\(id)' is deleted (revision \(current.revID))")
        }
        return DocumentRecord(id: id, rev: .revID(revision.revID), body: revision.body ?? Array("{}".utf8),
                              deleted: revision.isDeleted,
                              sequence: revision.revID == current.revID ? sequence : revision.sequence,
                              history: history ? tree.history(of: revision.revID).map(\.ascii) : [],
                              conflicted: tree.hasConflict, expiration: expiration,
                              hasAttachments: revision.flags.contains(.hasAttachments))
    }

    /// The body of revision `rev` (a revID's ASCII) of document `id` when this row's tree keeps it
    /// and it is not a deletion; nil otherwise (a version vector's row included).
    public func body(ofLiveRevision rev: String, id: String) -> [UInt8]? {
        guard let version = try? DocumentVersion.parse(ascii: rev), case .revID = version, let tree = try? revisionTree(),
              let record = try? record(id: id, tree: tree, rev: version, history: false), !record.deleted else { return nil }
        return record.body
    }

    /// What a read of the current revision of document `id` answers, from this row's columns
    /// alone: its version, body and flags are the current revision's, as the tree's writer set them
    /// (`RevTree.recordColumns`). Nil when the tree must be read after all: a deleted, purged or
    /// body-less row. Decoding the tree was a quarter of a direct read's time in the gateway.
    public func currentRecord(id: String) -> DocumentRecord? {
        guard !isPurged, !flags.contains(.deleted), !body.isEmpty, let revID = RevID.tryParse(binary: version) else { return nil }
        return DocumentRecord(id: id, rev: .revID(revID), body: body, deleted: false, sequence: sequence,
                              conflicted: flags.contains(.conflicted), expiration: expiration,
                              hasAttachments: flags.contains(.hasAttachments))
    }

    /// Why a read of `id` finds nothing when its row is missing or purged.
    public static func notFound(_ id: String) -> SofaError { .notFound("document '\(id)' not found") }
}

/// A revision as the engine reads it: its version typed (a parent for the next write) and its
/// expiration; `stored` is what a reader is answered.
public struct DocumentRecord: Sendable, Equatable {
    public var id: String
    public var rev: DocumentVersion
    /// The body as compact JSON.
    public var body: [UInt8]
    public var deleted: Bool
    public var sequence: UInt64
    /// When asked for: the ancestry, newest first, starting with `rev` (revision trees); the whole
    /// vector as its only element (version vectors).
    public var history: [String] = []
    public var conflicted: Bool = false
    /// ms since the epoch; nil for none.
    public var expiration: Int64? = nil
    /// The revision references a blob (LiteCore's hasAttachments flag).
    public var hasAttachments: Bool = false

    public init(id: String, rev: DocumentVersion, body: [UInt8], deleted: Bool, sequence: UInt64, history: [String] = [],
                conflicted: Bool = false, expiration: Int64? = nil, hasAttachments: Bool = false) {
        (self.id, self.rev, self.body, self.deleted, self.sequence) = (id, rev, body, deleted, sequence)
        (self.history, self.conflicted, self.expiration, self.hasAttachments) = (history, conflicted, expiration, hasAttachments)
    }
}

extension DocumentRecord {
    /// The record as readers see it: the revision as text, without the expiration.
    public var stored: StoredDocument {
        StoredDocument(id: id, rev: rev.ascii, body: body, deleted: deleted, sequence: sequence, history: history,
                       conflicted: conflicted, hasAttachments: hasAttachments)
    }
}
