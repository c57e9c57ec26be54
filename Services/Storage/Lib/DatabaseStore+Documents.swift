internal import SofaRows
public import SofaQL
public import SofaCore
internal import Foundation

/// A write as storage receives it: the body already parsed and stripped of `_id`/`_rev`/`_deleted`.
public struct DocumentWrite: Sendable {
    public var id: String
    /// The revision this one replaces (a RevID, or a vector's current version); nil for a new
    /// document (or a re-created deleted one).
    public var parent: DocumentVersion?
    /// The parsed body; nil when the service took it from bytes already compact and found no
    /// "digest" key in them, so that it references no blob and is never needed as a tree.
    public let body: JSON?
    public var deleted: Bool
    /// The body written both ways when the write is made — by the request's task, so the single
    /// writer only hashes and stores: canonical (for the revID) and compact (what is stored).
    public let canonicalBody: [UInt8]
    public let compactBody: [UInt8]
    /// The revID this write makes in a revision-tree database when `parent` (or nothing, for a new
    /// document) is the current revision — worked out here too, off the writer.
    let expectedRevID: RevID?

    /// `compactBody`, when given, must be `body.compactBytes()` (e.g. the bytes the body was
    /// parsed from, when `JSON.parseNotingCompact` found them compact): it is not written again.
    public init(id: String, parent: DocumentVersion?, body: JSON, deleted: Bool, compactBody: [UInt8]? = nil) {
        self.id = id
        self.parent = parent
        self.body = body
        self.deleted = deleted
        self.canonicalBody = body.canonicalBytes()
        self.compactBody = compactBody ?? body.compactBytes()
        self.expectedRevID = Self.revID(parent: parent, deleted: deleted, canonicalBody: canonicalBody)
    }

    /// A write whose body arrived as compact JSON (`compactBody`) that references no blob, with its
    /// canonical form worked out from the bytes (`JSON.scanCompactObject`).
    init(id: String, parent: DocumentVersion?, compactBody: [UInt8], canonicalBody: [UInt8], deleted: Bool) {
        self.id = id
        self.parent = parent
        self.body = nil
        self.deleted = deleted
        self.canonicalBody = canonicalBody
        self.compactBody = compactBody
        self.expectedRevID = Self.revID(parent: parent, deleted: deleted, canonicalBody: canonicalBody)
    }

    private static func revID(parent: DocumentVersion?, deleted: Bool, canonicalBody: [UInt8]) -> RevID? {
        switch parent {
        case nil: return RevID.generate(parent: nil, deleted: deleted, canonicalBody: canonicalBody)
        case .revID(let p)? where p.canHaveChild: return RevID.generate(parent: p, deleted: deleted, canonicalBody: canonicalBody)
        default: return nil
        }
    }

    /// The revID of this write on top of `parent` (nil: a new document).
    func revID(on parent: RevID?) -> RevID {
        if let expectedRevID, parent == self.parent?.revIDValue { return expectedRevID }
        return RevID.generate(parent: parent, deleted: deleted, canonicalBody: canonicalBody)
    }

    public init(id: String, parent: RevID?, body: JSON, deleted: Bool) {
        self.init(id: id, parent: parent.map(DocumentVersion.revID), body: body, deleted: deleted)
    }
}

public struct WriteResult: Sendable, Equatable {
    public var id: String
    /// The new revision; for a version-vector database, the whole new vector (its `ascii` is the
    /// current version, what clients see as the revID).
    public var rev: DocumentVersion
    public var sequence: UInt64
}

extension DatabaseStore {
    /// Creates, updates or deletes a document with MVCC; `_local/` IDs are local documents.
    public func write(_ write: DocumentWrite, in collection: CollectionName = .default) async throws(SofaError) -> WriteResult {
        try LocalDocuments.refuse(write.id)
        try check(collection)
        return try await perform { (tx: Transaction) throws(SofaError) -> Result<WriteResult, SofaError> in
            try tx.apply(write, in: collection)
        }
    }

    /// The bytes of a body as stored.
    static func bodyBytes(_ body: JSON) -> [UInt8] { body.compactBytes() }
}

extension Transaction {
    /// MVCC: a new document needs no parent; an existing live one must name its current revision,
    /// or (revision trees) another live leaf, whose branch the new revision continues (how a
    /// conflict is resolved: the losing leaves are deleted or merged, as in CouchDB and LiteCore);
    /// a deleted one may be re-created without a parent (the new revision follows the tombstone).
    func apply(_ write: DocumentWrite, in collection: CollectionName) throws(SofaError) -> Result<WriteResult, SofaError> {
        if write.parent == nil, !write.deleted, let created = try create(write, in: collection) { return .success(created) }
        let row = try DocumentRow.load(db, collection, write.id)
        let content: DocumentContent?
        do throws(SofaError) {
            content = try row?.content(store.versioning)
        } catch {
            return .failure(SofaError(.corruptRevisionData, "document '\(write.id)' has unreadable revisions: \(error.message)"))
        }
        switch (write.parent, store.versioning) {
        case (.vector?, .revisionTrees):
            return .failure(SofaError(.badRevisionID, "database '\(store.name)' uses revision trees; \(write.parent!) is a version"))
        case (.revID?, .versionVectors):
            return .failure(SofaError(.badRevisionID, "database '\(store.name)' uses version vectors; \(write.parent!) is a tree revID"))
        default: break
        }
        let current: (rev: DocumentVersion, deleted: Bool)?
        switch content {
        case .tree(let tree)?: current = tree.current.map { (.revID($0.revID), $0.isDeleted) }
        case .vector(let doc)?: current = (.vector(doc.current.vector), doc.current.deleted)
        case nil: current = nil
        }
        switch (current, write.parent) {
        case (nil, nil):
            if write.deleted { return .failure(.notFound("document '\(write.id)' does not exist")) }
        case (nil, let given?):
            return .failure(.revisionOfMissingDocument(write.id, revision: given.ascii))
        case (let existing?, nil):
            guard existing.deleted else {
                return .failure(.conflict("document '\(write.id)' exists (revision \(existing.rev)); give its current _rev to update it"))
            }
            if write.deleted { return .failure(.notFound("document '\(write.id)' is already deleted")) }
        case (let existing?, let given?):
            guard existing.rev.ascii == given.ascii || Self.isLiveLeaf(given, of: content) else {
                return .failure(.conflict("document '\(write.id)': revision \(given) is not the current one (\(existing.rev))"))
            }
        }
        let hasAttachments: Bool
        switch checkBlobReferences(write.body, id: write.id) {
        case .success(let found): hasAttachments = found
        case .failure(let error): return .failure(error)
        }
        var updated: DocumentContent
        let rev: DocumentVersion
        switch content {
        case .tree(var tree)?:
            var parent = tree.current!.revID
            if case .revID(let given)? = write.parent { parent = given }
            guard parent.canHaveChild else {
                return .failure(SofaError(.badRevisionID, "document '\(write.id)' has reached the highest generation"))
            }
            let revID = write.revID(on: parent)
            try tree.insert(revID, parent: parent, body: write.compactBody, deleted: write.deleted,
                            hasAttachments: hasAttachments)
            updated = .tree(tree)
            rev = .revID(revID)
        case .vector(var doc)?:
            let vector = try doc.current.vector.incremented(peer: Version.me)
            doc.current = VectorRevision(vector: vector, deleted: write.deleted, body: write.compactBody)
            updated = .vector(doc)
            rev = .vector(vector)
        case nil:
            switch store.versioning {
            case .revisionTrees:
                (updated, rev) = try Self.firstRevision(write, versioning: .revisionTrees, hasAttachments: hasAttachments)
            case .versionVectors:
                (updated, rev) = try Self.firstRevision(write, versioning: .versionVectors, hasAttachments: hasAttachments)
            }
        }
        let sequence = try save(&updated, id: write.id, in: collection)
        return .success(WriteResult(id: write.id, rev: rev, sequence: sequence))
    }

    /// Whether `rev` names a leaf of the document's tree that is not deleted (a conflicting one).
    private static func isLiveLeaf(_ rev: DocumentVersion, of content: DocumentContent?) -> Bool {
        guard case .revID(let revID) = rev, case .tree(let tree)? = content, let revision = tree[revID] else { return false }
        return revision.isLeaf && !revision.isDeleted
    }

    /// A new document's first revision.
    private static func firstRevision(_ write: DocumentWrite, versioning: Versioning,
                                      hasAttachments: Bool) throws(SofaError) -> (DocumentContent, DocumentVersion) {
        switch versioning {
        case .revisionTrees:
            var tree = RevTree()
            let revID = write.revID(on: nil)
            try tree.insert(revID, parent: nil, body: write.compactBody, deleted: write.deleted, hasAttachments: hasAttachments)
            return (.tree(tree), .revID(revID))
        case .versionVectors:
            let vector = try VersionVector([try Version(generation: 1, peer: Version.me)])
            return (.vector(VectorDocument(current: VectorRevision(vector: vector, deleted: write.deleted, body: write.compactBody))),
                    .vector(vector))
        }
    }

    /// The common case of a write without a parent — a document that does not exist yet — in one
    /// statement instead of a read and a write. Returns nil, having changed nothing, when the
    /// collection has a row under the ID (or the body's blob references are refused): `apply`'s
    /// full path then decides, with its errors in their order.
    private func create(_ write: DocumentWrite, in collection: CollectionName) throws(SofaError) -> WriteResult? {
        guard case .success(let hasAttachments) = checkBlobReferences(write.body, id: write.id) else { return nil }
        if store.versioning == .revisionTrees {
            let revID = write.revID(on: nil)
            let sequence = try nextSequence(collection)
            let columns = RevTree.firstRevisionColumns(revID, body: write.compactBody, deleted: write.deleted,
                                                       hasAttachments: hasAttachments, sequence: sequence)
            guard try self.store(columns, rev: revID.ascii, sequence: sequence, id: write.id, in: collection,
                                 onlyIfAbsent: true, referencesKnown: true) else { return nil }
            return WriteResult(id: write.id, rev: .revID(revID), sequence: sequence)
        }
        var (content, rev) = try Self.firstRevision(write, versioning: store.versioning, hasAttachments: hasAttachments)
        guard let sequence = try saveIfAbsent(&content, id: write.id, in: collection) else { return nil }
        return WriteResult(id: write.id, rev: rev, sequence: sequence)
    }
}

extension DocumentVersion {
    var revIDValue: RevID? {
        if case .revID(let revID) = self { return revID }
        return nil
    }
}
