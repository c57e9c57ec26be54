public import SofaCore
internal import Foundation

/// A write as storage receives it: the body already parsed and stripped of `_id`/`_rev`/`_deleted`.
public struct DocumentWrite: Sendable {
    public var id: String
    /// The revision this one replaces; nil for a new document (or a re-created deleted one).
    public var parent: RevID?
    public var body: JSON
    public var deleted: Bool

    public init(id: String, parent: RevID?, body: JSON, deleted: Bool) {
        self.id = id
        self.parent = parent
        self.body = body
        self.deleted = deleted
    }
}

public struct WriteResult: Sendable, Equatable {
    public var id: String
    public var rev: RevID
    public var sequence: UInt64
}

public struct DocumentRecord: Sendable, Equatable {
    public var id: String
    public var rev: RevID
    /// The body as compact JSON.
    public var body: [UInt8]
    public var deleted: Bool
    public var sequence: UInt64
}

extension DatabaseStore {
    /// MVCC: a new document needs no parent; an existing live one must name its current revision;
    /// a deleted one may be re-created without a parent (the new revision follows the tombstone).
    func apply(_ write: DocumentWrite, lastSequence: inout Int64) throws(SofaError) -> Result<WriteResult, SofaError> {
        var current: (rev: RevID, flags: DocumentFlags)?
        var corrupt = false
        try writer.run("SELECT version, flags FROM kv_default WHERE key = ?", [.text(write.id)]) { row in
            if let rev = RevID.tryParse(binary: row.blob(0)), let split = try? Record.splitFlagsColumn(row.integer(1)) {
                current = (rev, split.flags)
            } else {
                corrupt = true
            }
        }
        if corrupt {
            return .failure(SofaError(.corruptRevisionData, "document '\(write.id)' has an unreadable revision"))
        }
        let parent: RevID?
        switch (current, write.parent) {
        case (nil, nil):
            if write.deleted { return .failure(.notFound("document '\(write.id)' does not exist")) }
            parent = nil
        case (nil, let given?):
            return .failure(.conflict("document '\(write.id)' does not exist, so it has no revision \(given)"))
        case (let existing?, nil):
            guard existing.flags.contains(.deleted) else {
                return .failure(.conflict("document '\(write.id)' exists (revision \(existing.rev)); give its current _rev to update it"))
            }
            if write.deleted { return .failure(.notFound("document '\(write.id)' is already deleted")) }
            parent = existing.rev
        case (let existing?, let given?):
            guard existing.rev == given else {
                return .failure(.conflict("document '\(write.id)': revision \(given) is not the current one (\(existing.rev))"))
            }
            parent = existing.rev
        }
        if let parent, !parent.canHaveChild {
            return .failure(SofaError(.badRevisionID, "document '\(write.id)' has reached the highest generation"))
        }
        let rev = RevID.generate(parent: parent, deleted: write.deleted, body: write.body)  // an empty object is `{}`
        lastSequence += 1
        var flags: DocumentFlags = []
        if write.deleted { flags.insert(.deleted) }
        let record = Record(key: write.id, flags: flags)
        try writer.run("""
            INSERT INTO kv_default (key, sequence, flags, version, body, extra, expiration) VALUES (?, ?, ?, ?, ?, NULL, NULL)
            ON CONFLICT(key) DO UPDATE SET sequence = excluded.sequence, flags = excluded.flags,
                version = excluded.version, body = excluded.body, extra = NULL
            """, [.text(write.id), .integer(lastSequence), .integer(record.flagsColumn), .blob(rev.binary),
                  .blob(write.body.compactBytes())])
        return .success(WriteResult(id: write.id, rev: rev, sequence: UInt64(lastSequence)))
    }

    /// The current revision of a document (or, given `rev`, that revision if it is the current one:
    /// older revisions are not kept yet). A deleted document reads as not found unless `rev` names it.
    public func read(id: String, rev: RevID?) async throws(SofaError) -> DocumentRecord {
        let result: Result<DocumentRecord, SofaError> = await withCheckedContinuation { continuation in
            readerQueue.async {
                continuation.resume(returning: Result { () throws(SofaError) -> DocumentRecord in
                    try self.readNow(id: id, rev: rev)
                })
            }
        }
        return try result.get()
    }

    private func readNow(id: String, rev: RevID?) throws(SofaError) -> DocumentRecord {
        var record: DocumentRecord?
        var corrupt = false
        try reader.run("SELECT version, flags, body, sequence FROM kv_default WHERE key = ?", [.text(id)]) { row in
            guard let current = RevID.tryParse(binary: row.blob(0)),
                  let flags = try? Record.splitFlagsColumn(row.integer(1)).flags else {
                corrupt = true
                return
            }
            record = DocumentRecord(id: id, rev: current, body: row.blob(2), deleted: flags.contains(.deleted),
                                    sequence: UInt64(row.integer(3)))
        }
        if corrupt { throw SofaError(.corruptRevisionData, "document '\(id)' has an unreadable revision") }
        guard let record else { throw .notFound("document '\(id)' not found") }
        if let rev {
            guard rev == record.rev else { throw .notFound("document '\(id)' has no revision \(rev) (current: \(record.rev))") }
            return record
        }
        if record.deleted { throw .notFound("document '\(id)' is deleted (revision \(record.rev))") }
        return record
    }

    /// How many live documents and the last sequence.
    public func info() async throws(SofaError) -> (documents: Int, lastSequence: UInt64) {
        let result: Result<(Int, UInt64), SofaError> = await withCheckedContinuation { continuation in
            readerQueue.async {
                continuation.resume(returning: Result { () throws(SofaError) -> (Int, UInt64) in
                    var count = 0
                    var sequence: UInt64 = 0
                    try self.reader.run("SELECT count(*) FROM kv_default WHERE (flags & 1) = 0") { count = Int($0.integer(0)) }
                    try self.reader.run("SELECT lastSeq FROM kvmeta WHERE name = 'default'") { sequence = UInt64($0.integer(0)) }
                    return (count, sequence)
                })
            }
        }
        return try result.get()
    }
}
