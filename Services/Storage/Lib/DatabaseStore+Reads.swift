public import SofaRows
public import SofaQL
public import SofaCore

extension DatabaseStore {
    /// The current revision of a document, or with `rev` that revision while its body is kept. A
    /// deleted document reads as not found unless `rev` names it. With `history`, the record
    /// carries the revision's ancestry.
    public func read(id: String, rev: DocumentVersion? = nil, history: Bool = false,
                     in collection: CollectionName = .default) async throws(SofaError) -> DocumentRecord {
        try LocalDocuments.refuse(id)
        try check(collection)
        return try await read(loadRecord(id: id, rev: rev, history: history, in: collection))
    }

    /// Reads the document's record on a reader (see `read(id:rev:history:in:)`).
    private func loadRecord(id: String, rev: DocumentVersion?, history: Bool,
                            in collection: CollectionName) -> @Sendable (SQLiteConnection) throws(SofaError) -> DocumentRecord {
        { (reader) throws(SofaError) -> DocumentRecord in
            let (row, content) = try self.loadForRead(reader, id, collection)
            return try Self.record(id: id, row: row, content: content, rev: rev, history: history)
        }
    }

    /// The same without a task (see `read(_:then:)`): `then` gets the record on a reader's queue.
    func read(id: String, rev: DocumentVersion?, history: Bool, in collection: CollectionName,
              then: @escaping @Sendable (Result<DocumentRecord, SofaError>) -> Void) {
        do throws(SofaError) {
            try LocalDocuments.refuse(id)
            try check(collection)
        } catch {
            return then(.failure(error))
        }
        read(loadRecord(id: id, rev: rev, history: history, in: collection), then: then)
    }

    /// Every leaf revision (live or deleted, current first) with its body.
    /// Every open leaf, the current one first; with `history`, each with its ancestry.
    public func openLeaves(id: String, history: Bool = false,
                           in collection: CollectionName = .default) async throws(SofaError) -> [DocumentRecord] {
        try check(collection)
        return try await read { (reader) throws(SofaError) -> [DocumentRecord] in
            let (row, content) = try self.loadForRead(reader, id, collection)
            switch content {
            case .tree(let tree):
                let current = tree.currentIndex
                let leaves = tree.revisions.indices.filter { tree.revisions[$0].isLeaf }
                    .sorted { a, b in a == current || (b != current && tree.revisions[a].revID > tree.revisions[b].revID) }
                return leaves.map { i in
                    let r = tree.revisions[i]
                    return DocumentRecord(id: id, rev: .revID(r.revID), body: r.body ?? [], deleted: r.isDeleted,
                                          sequence: r.sequence,
                                          history: history ? tree.history(of: r.revID).map(\.ascii) : [],
                                          conflicted: tree.hasConflict, expiration: row.expiration,
                                          hasAttachments: r.flags.contains(.hasAttachments))
                }
            case .vector(let doc):
                return ([doc.current] + doc.conflicts).map { r in
                    DocumentRecord(id: id, rev: .vector(r.vector), body: r.body, deleted: r.deleted, sequence: row.sequence,
                                   history: history ? [r.vector.ascii] : [],
                                   conflicted: row.flags.contains(.conflicted), expiration: row.expiration,
                                   hasAttachments: !BlobReference.tolerantFind(inStored: r.body).isEmpty)
                }
            }
        }
    }

    /// The revIDs of the live leaves that conflict with the current revision.
    public func conflicts(id: String, in collection: CollectionName = .default) async throws(SofaError) -> [String] {
        try check(collection)
        return try await read { (reader) throws(SofaError) -> [String] in
            let (_, content) = try self.loadForRead(reader, id, collection)
            switch content {
            case .tree(let tree): return tree.conflicts.map(\.revID.ascii)
            case .vector(let doc): return doc.conflicts.filter { !$0.deleted }.map(\.rev)
            }
        }
    }

    /// The row and revisions of an existing (not purged) document, on the reader.
    func loadForRead(_ reader: SQLiteConnection, _ id: String, _ collection: CollectionName) throws(SofaError) -> (DocumentRow, DocumentContent) {
        guard let row = try DocumentRow.load(reader, collection, id), let content = try row.content(versioning) else {
            throw DocumentRow.notFound(id)
        }
        return (row, content)
    }

    static func record(id: String, row: DocumentRow, content: DocumentContent, rev: DocumentVersion?,
                       history: Bool) throws(SofaError) -> DocumentRecord {
        switch content {
        case .tree(let tree):
            return try row.record(id: id, tree: tree, rev: rev, history: history)
        case .vector(let doc):
            var revision = doc.current
            if let rev {
                guard case .vector(let given) = rev else {
                    throw SofaError(.badRevisionID, "this database uses version vectors; \(rev) is a tree revID")
                }
                guard let found = ([doc.current] + doc.conflicts).first(where: { $0.vector.current == given.current }) else {
                    throw .notFound("document '\(id)' has no revision \(rev)")
                }
                revision = found
            } else if revision.deleted {
                throw .notFound("document '\(id)' is deleted (revision \(revision.rev))")
            }
            return DocumentRecord(id: id, rev: .vector(revision.vector), body: revision.body, deleted: revision.deleted,
                                  sequence: row.sequence, history: history ? [revision.vector.ascii] : [],
                                  conflicted: row.flags.contains(.conflicted), expiration: row.expiration,
                                  hasAttachments: !BlobReference.tolerantFind(inStored: revision.body).isEmpty)
        }
    }
}
