internal import SofaRows
internal import SofaQL
internal import SofaCore

extension DocumentRow {
    static func load(_ db: SQLiteConnection, _ collection: CollectionName, _ id: String) throws(SofaError) -> DocumentRow? {
        try load(db, table: collection.table, id: id, statement: StatementKey(kind: .loadDocument, table: collection.table))
    }

    /// The document's revisions; nil for a purged row.
    func content(_ versioning: Versioning) throws(SofaError) -> DocumentContent? {
        switch versioning {
        case .revisionTrees:
            return try revisionTree().map(DocumentContent.tree)
        case .versionVectors:
            if isPurged || version.isEmpty { return nil }
            return .vector(try VectorDocument(row: self))
        }
    }
}

/// A revision of a version-vector document.
struct VectorRevision: Sendable, Equatable {
    var vector: VersionVector
    var deleted: Bool
    var body: [UInt8]

    /// What clients see as the revID: the current version.
    var rev: String { vector.current?.ascii ?? "" }
}

/// A version-vector document: the current revision (columns `version`, `body`, flags) and the
/// conflicting revisions kept from remotes (column `extra`), as LiteCore keeps remote revisions.
/// Simplified: conflicts are a list, not per-remote. `extra` layout:
///
///     varint N, then N × (varint length, binary vector; byte flags 01 = deleted; varint length, body)
///
/// e.g. one live conflict `2@c0ffee` with body `{}`: `01 05 00 02 ee ff 83 06 00 02 7b 7d`.
struct VectorDocument: Sendable {
    var current: VectorRevision
    var conflicts: [VectorRevision]

    init(current: VectorRevision, conflicts: [VectorRevision] = []) {
        self.current = current
        self.conflicts = conflicts
    }

    init(row: DocumentRow) throws(SofaError) {
        let vector = try VersionVector(binary: row.version)
        current = VectorRevision(vector: vector, deleted: row.flags.contains(.deleted), body: row.body)
        conflicts = []
        var reader = ByteReader(row.extra)
        guard !row.extra.isEmpty else { return }
        let count = try reader.varint()
        for _ in 0..<count {
            let conflict = try VersionVector(binary: try reader.bytes(Int(try reader.varint())))
            let flags = try reader.byte()
            let body = try reader.bytes(Int(try reader.varint()))
            conflicts.append(VectorRevision(vector: conflict, deleted: flags & 1 != 0, body: body))
        }
        guard reader.atEnd else { throw SofaError(.corruptRevisionData, "trailing bytes after the conflicts") }
    }

    var extra: [UInt8] {
        guard !conflicts.isEmpty else { return [] }
        var out: [UInt8] = []
        appendVarint(UInt64(conflicts.count), to: &out)
        for conflict in conflicts {
            let vector = conflict.vector.binary
            appendVarint(UInt64(vector.count), to: &out)
            out += vector
            out.append(conflict.deleted ? 1 : 0)
            appendVarint(UInt64(conflict.body.count), to: &out)
            out += conflict.body
        }
        return out
    }

    var flags: DocumentFlags {
        var flags: DocumentFlags = []
        if current.deleted { flags.insert(.deleted) }
        if conflicts.contains(where: { !$0.deleted }) { flags.insert(.conflicted) }
        return flags
    }
}

enum DocumentContent {
    case tree(RevTree)
    case vector(VectorDocument)
}

func appendVarint(_ value: UInt64, to out: inout [UInt8]) {
    var v = value
    while v >= 0x80 {
        out.append(UInt8(truncatingIfNeeded: v) | 0x80)
        v >>= 7
    }
    out.append(UInt8(v))
}

struct ByteReader {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { position == bytes.count }

    mutating func byte() throws(SofaError) -> UInt8 {
        guard position < bytes.count else { throw SofaError(.corruptRevisionData, "truncated revision data") }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func varint() throws(SofaError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64 else { throw SofaError(.corruptRevisionData, "varint too long") }
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
        }
    }

    mutating func bytes(_ count: Int) throws(SofaError) -> [UInt8] {
        guard count >= 0, count <= bytes.count - position else {
            throw SofaError(.corruptRevisionData, "truncated revision data")
        }
        defer { position += count }
        return Array(bytes[position..<position + count])
    }
}

extension Transaction {
    /// Writes the document's row at a new sequence (expiration unchanged) and reports the change.
    @discardableResult
    func save(_ content: inout DocumentContent, id: String, in collection: CollectionName) throws(SofaError) -> UInt64 {
        try write(&content, id: id, in: collection, onlyIfAbsent: false)!
    }

    /// As `save`, for a document the caller believes new: the row is written only if the
    /// collection has none under `id` (not even a purged one). Returns nil, having changed
    /// nothing, when there is one.
    func saveIfAbsent(_ content: inout DocumentContent, id: String, in collection: CollectionName) throws(SofaError) -> UInt64? {
        try write(&content, id: id, in: collection, onlyIfAbsent: true)
    }

    private func write(_ content: inout DocumentContent, id: String, in collection: CollectionName,
                       onlyIfAbsent: Bool) throws(SofaError) -> UInt64? {
        let sequence = try nextSequence(collection)
        let columns: (version: [UInt8], body: [UInt8], extra: [UInt8], flags: DocumentFlags)
        let rev: String
        var saved = content
        switch saved {
        case .tree(var tree):
            let limit = store.revsLimit.load(ordering: .relaxed)
            if limit > 0, tree.count > limit { tree.prune(maxDepth: limit) }
            tree.markSaved(sequence: sequence)
            guard let c = tree.recordColumns(), let current = tree.current else {
                throw SofaError(.assertionFailed, "saving an empty revision tree for '\(id)'")
            }
            columns = c
            rev = current.revID.ascii
            saved = .tree(tree)
        case .vector(let doc):
            columns = (doc.current.vector.binary, doc.current.body, doc.extra, doc.flags)
            rev = doc.current.rev
        }
        guard try store(columns, rev: rev, sequence: sequence, id: id, in: collection, onlyIfAbsent: onlyIfAbsent) else {
            return nil
        }
        content = saved
        return sequence
    }

    /// Writes a row's columns at `sequence` (handed out by `nextSequence`, and given back when
    /// `onlyIfAbsent` finds a row: false is returned) and reports the change.
    /// `referencesKnown`: the caller has just checked the body's references, so the flag is exact.
    func store(_ columns: (version: [UInt8], body: [UInt8], extra: [UInt8], flags: DocumentFlags), rev: String,
               sequence: UInt64, id: String, in collection: CollectionName, onlyIfAbsent: Bool,
               referencesKnown: Bool = false) throws(SofaError) -> Bool {
        var columns = columns
        // The flag describes the current revision, whichever write made it current; its
        // references were checked when it was written.
        if !referencesKnown, !columns.flags.contains(.hasAttachments),
           !BlobReference.tolerantFind(inStored: columns.body).isEmpty {
            columns.flags.insert(.hasAttachments)
        }
        let bindings: [SQLiteValue] = [.text(id), .integer(Int64(sequence)), .integer(Int64(columns.flags.rawValue)),
                                       .blob(columns.version), .blob(columns.body), .blob(columns.extra)]
        if onlyIfAbsent {
            try db.run(StatementKey(kind: .insertNewDocument, table: collection.table), {
                """
                INSERT INTO \(collection.table) (key, sequence, flags, version, body, extra) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(key) DO NOTHING
                """
            }, bindings)
            guard db.changes == 1 else {
                returnSequence(collection)
                return false
            }
        } else {
            try db.run(StatementKey(kind: .saveDocument, table: collection.table), {
                """
                INSERT INTO \(collection.table) (key, sequence, flags, version, body, extra) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT(key) DO UPDATE SET sequence = excluded.sequence, flags = excluded.flags,
                    version = excluded.version, body = excluded.body, extra = excluded.extra
                """
            }, bindings)
        }
        changed(collection, Change(sequence: sequence, id: id, rev: rev, deleted: columns.flags.contains(.deleted)))
        return true
    }

    /// Replaces the document by a purged row at a new sequence (reported with an empty rev).
    @discardableResult
    func savePurged(id: String, in collection: CollectionName) throws(SofaError) -> UInt64 {
        let sequence = try nextSequence(collection)
        let flags: DocumentFlags = [.purged, .deleted]
        try db.run("""
            UPDATE \(collection.table) SET sequence = ?, flags = ?, version = x'', body = x'', extra = x'',
                expiration = NULL WHERE key = ?
            """, [.integer(Int64(sequence)), .integer(Int64(flags.rawValue)), .text(id)])
        changed(collection, Change(sequence: sequence, id: id, rev: "", deleted: true), purge: true)
        expirationsChanged = true
        return sequence
    }
}

/// A hot-path statement on one table: which statement, and the table it names (the key its
/// prepared statement is cached under).
struct StatementKey: Hashable, Sendable {
    enum Kind: UInt8 {
        case loadDocument, saveDocument, insertNewDocument
    }
    var kind: Kind
    var table: String
}
