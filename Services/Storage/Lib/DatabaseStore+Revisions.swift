internal import SofaRows
public import SofaQL
public import SofaCore

/// A revision with its ancestry, as a replicator writes it (no MVCC). Revision trees:
/// `history[0]` is the new revID, then its parent, grandparent… (generations descending by one).
/// Version vectors: `history[0]` is the whole vector in ASCII (the rest is ignored).
public struct RevisionInsertion: Sendable {
    public var id: String
    public var history: [String]
    public var deleted: Bool
    /// CouchDB's winner rule (see `RevisionInsert.winnerByRevID`): the branch is not a peer's.
    public var winnerByRevID = false
    let content: Content

    /// The body: parsed, or compact JSON bytes found to reference no blob (the service's fast path).
    enum Content: Sendable {
        case parsed(JSON)
        case compact([UInt8])
    }

    public init(id: String, history: [String], body: JSON, deleted: Bool = false) {
        self.init(id: id, history: history, content: .parsed(body), deleted: deleted)
    }

    init(id: String, history: [String], content: Content, deleted: Bool) {
        self.id = id
        self.history = history
        self.content = content
        self.deleted = deleted
    }
}

public struct InsertOutcome: Sendable, Equatable {
    public var id: String
    /// The inserted revision (for vectors, its current version).
    public var rev: String
    /// The document's sequence after the insert (unchanged when nothing was new).
    public var sequence: UInt64
    /// How many revisions of the history were new.
    public var added: Int
    /// Whether the revision made (or extended) a conflicting branch; the document is then
    /// flagged `conflicted`.
    public var conflict: Bool
}

/// One item of a bulk write.
public enum BulkOperation: Sendable {
    case write(DocumentWrite)
    case insert(RevisionInsertion)
}

public enum BulkOutcome: Sendable, Equatable {
    case written(WriteResult)
    case inserted(InsertOutcome)

    public var id: String {
        switch self {
        case .written(let r): r.id
        case .inserted(let r): r.id
        }
    }
}

/// Resolving a conflict: `winner` stays, `loser`'s branch is closed with a tombstone; with
/// `mergedBody` (or `mergedDeleted`) a new revision is written on top of the winner.
public struct ConflictResolutionRequest: Sendable {
    public var id: String
    public var winner: String
    public var loser: String
    public var mergedBody: JSON?
    public var mergedDeleted: Bool

    public init(id: String, winner: String, loser: String, mergedBody: JSON? = nil, mergedDeleted: Bool = false) {
        self.id = id
        self.winner = winner
        self.loser = loser
        self.mergedBody = mergedBody
        self.mergedDeleted = mergedDeleted
    }
}

extension DatabaseStore {
    /// The remote ID under which inserted (replicated) revisions are recorded in revision trees.
    static let replicationRemote: RevTree.RemoteID = 1

    public func insert(_ insertion: RevisionInsertion, in collection: CollectionName = .default) async throws(SofaError) -> InsertOutcome {
        try check(collection)
        return try await perform { (tx: Transaction) throws(SofaError) -> Result<InsertOutcome, SofaError> in
            try tx.insert(insertion, in: collection)
        }
    }

    /// Many writes in one transaction; each item gets its own result, and a refused item changes
    /// nothing while the others are written.
    public func bulk(_ operations: [BulkOperation], in collection: CollectionName = .default) async throws(SofaError) -> [Result<BulkOutcome, SofaError>] {
        try check(collection)
        return try await perform { (tx: Transaction) throws(SofaError) -> Result<[Result<BulkOutcome, SofaError>], SofaError> in
            var results: [Result<BulkOutcome, SofaError>] = []
            results.reserveCapacity(operations.count)
            for operation in operations {
                switch operation {
                case .write(let write):
                    if LocalDocuments.isLocal(write.id) {
                        results.append(.failure(.invalid("local document '\(write.id)' cannot be part of a bulk write")))
                    } else {
                        results.append(try tx.apply(write, in: collection).map(BulkOutcome.written))
                    }
                case .insert(let insertion):
                    results.append(try tx.insert(insertion, in: collection).map(BulkOutcome.inserted))
                }
            }
            return .success(results)
        }
    }

    /// Closes the losing branch and makes the winner (or a merged revision on top of it) current.
    public func resolveConflict(_ request: ConflictResolutionRequest, in collection: CollectionName = .default) async throws(SofaError) -> WriteResult {
        try check(collection)
        return try await perform { (tx: Transaction) throws(SofaError) -> Result<WriteResult, SofaError> in
            try tx.resolve(request, in: collection)
        }
    }
}

extension Transaction {
    func loadContent(_ id: String, _ collection: CollectionName) throws(SofaError) -> (DocumentRow?, DocumentContent?) {
        let row = try DocumentRow.load(db, collection, id)
        do throws(SofaError) {
            return (row, try row?.content(store.versioning))
        } catch {
            throw SofaError(.corruptRevisionData, "document '\(id)' has unreadable revisions: \(error.message)")
        }
    }

    func insert(_ insertion: RevisionInsertion, in collection: CollectionName) throws(SofaError) -> Result<InsertOutcome, SofaError> {
        let id = insertion.id
        guard DocumentID.isValid(id), !LocalDocuments.isLocal(id) else {
            return .failure(SofaError(.badDocID, "invalid document ID '\(id)' for an insert with history"))
        }
        guard let first = insertion.history.first else { return .failure(.invalid("document '\(id)': the history is empty")) }
        let hasAttachments: Bool
        let body: [UInt8]
        switch insertion.content {
        case .parsed(let json):
            switch checkBlobReferences(json, id: id) {
            case .success(let found): hasAttachments = found
            case .failure(let error): return .failure(error)
            }
            body = DatabaseStore.bodyBytes(json)
        case .compact(let bytes):
            (hasAttachments, body) = (false, bytes)
        }
        switch store.versioning {
        case .revisionTrees:
            var history: [RevID] = []
            for ascii in insertion.history {
                guard let revID = RevID.tryParse(ascii) else {
                    return .failure(SofaError(.badRevisionID, "document '\(id)': invalid revID '\(ascii)' in the history"))
                }
                history.append(revID)
            }
            for k in history.indices.dropFirst() where history[k].generation + 1 != history[k - 1].generation {
                return .failure(SofaError(.badRevisionID,
                    "document '\(id)': the history does not descend by one generation (\(history[k - 1]) → \(history[k]))"))
            }
            // A document the target does not have yet (the common case of a first replication)
            // is one INSERT of the tree its history makes, without reading first; a lone first
            // revision's columns are written straight.
            if history.count == 1 {
                let sequence = try nextSequence(collection)
                let columns = RevTree.firstRevisionColumns(history[0], body: body, deleted: insertion.deleted,
                                                           hasAttachments: hasAttachments, sequence: sequence,
                                                           remote: DatabaseStore.replicationRemote)
                if try store(columns, rev: history[0].ascii, sequence: sequence, id: id, in: collection, onlyIfAbsent: true,
                             referencesKnown: true) {
                    return .success(InsertOutcome(id: id, rev: first, sequence: sequence, added: 1, conflict: false))
                }
            }
            var fresh = RevTree()
            if history.count > 1, let result = try? fresh.insert(history: history, body: body, deleted: insertion.deleted,
                                              hasAttachments: hasAttachments, remote: DatabaseStore.replicationRemote,
                                              allowConflict: true) {
                var created = DocumentContent.tree(fresh)
                if let sequence = try saveIfAbsent(&created, id: id, in: collection) {
                    return .success(InsertOutcome(id: id, rev: first, sequence: sequence, added: result.added, conflict: false))
                }
            }
            let (row, content): (DocumentRow?, DocumentContent?)
            do throws(SofaError) { (row, content) = try loadContent(id, collection) } catch { return .failure(error) }
            var tree: RevTree
            if case .tree(let existing)? = content { tree = existing } else { tree = RevTree() }
            let result: RevTree.InsertResult
            do throws(SofaError) {
                result = try tree.insert(history: history, body: body, deleted: insertion.deleted, hasAttachments: hasAttachments,
                                         remote: insertion.winnerByRevID ? nil : DatabaseStore.replicationRemote,
                                         allowConflict: true)
            } catch {
                return .failure(error)
            }
            let conflict = tree.hasConflict && (tree[history[0]]?.isLeaf ?? false)
            var sequence = row?.sequence ?? 0
            if result.added > 0 {
                var updated = DocumentContent.tree(tree)
                sequence = try save(&updated, id: id, in: collection)
            }
            return .success(InsertOutcome(id: id, rev: first, sequence: sequence, added: result.added, conflict: conflict))
        case .versionVectors:
            let (row, content): (DocumentRow?, DocumentContent?)
            do throws(SofaError) { (row, content) = try loadContent(id, collection) } catch { return .failure(error) }
            guard let vector = VersionVector.tryParse(first), !vector.isEmpty else {
                return .failure(SofaError(.badRevisionID, "document '\(id)': invalid version vector '\(first)'"))
            }
            let incoming = VectorRevision(vector: vector, deleted: insertion.deleted, body: body)
            guard case .vector(var doc)? = content, let row else {
                var updated = DocumentContent.vector(VectorDocument(current: incoming))
                let sequence = try save(&updated, id: id, in: collection)
                return .success(InsertOutcome(id: id, rev: incoming.rev, sequence: sequence, added: 1, conflict: false))
            }
            switch vector.compare(to: doc.current.vector) {
            case .same, .older:
                return .success(InsertOutcome(id: id, rev: incoming.rev, sequence: row.sequence, added: 0, conflict: false))
            case .newer:
                doc.current = incoming
                doc.conflicts.removeAll { [.older, .same].contains($0.vector.compare(to: vector)) }
            case .conflicting:
                if doc.conflicts.contains(where: { [.newer, .same].contains($0.vector.compare(to: vector)) }) {
                    return .success(InsertOutcome(id: id, rev: incoming.rev, sequence: row.sequence, added: 0, conflict: true))
                }
                doc.conflicts.removeAll { $0.vector.compare(to: vector) == .older }
                doc.conflicts.append(incoming)
            }
            var updated = DocumentContent.vector(doc)
            let sequence = try save(&updated, id: id, in: collection)
            return .success(InsertOutcome(id: id, rev: incoming.rev, sequence: sequence, added: 1,
                                          conflict: doc.flags.contains(.conflicted)))
        }
    }

    func resolve(_ request: ConflictResolutionRequest, in collection: CollectionName) throws(SofaError) -> Result<WriteResult, SofaError> {
        let id = request.id
        let mergedHasAttachments: Bool
        switch checkBlobReferences(request.mergedBody, id: id) {
        case .success(let flag): mergedHasAttachments = flag
        case .failure(let error): return .failure(error)
        }
        let content: DocumentContent?
        do throws(SofaError) { (_, content) = try loadContent(id, collection) } catch { return .failure(error) }
        switch content {
        case nil:
            return .failure(.notFound("document '\(id)' not found"))
        case .tree(var tree)?:
            guard let winner = RevID.tryParse(request.winner), let loser = RevID.tryParse(request.loser) else {
                return .failure(SofaError(.badRevisionID, "document '\(id)': invalid revID in the resolution"))
            }
            do throws(SofaError) {
                try tree.resolveConflict(winning: winner, losing: loser, mergedBody: request.mergedBody,
                                         mergedDeleted: request.mergedDeleted, mergedHasAttachments: mergedHasAttachments)
            } catch {
                return .failure(error)
            }
            var updated = DocumentContent.tree(tree)
            let sequence = try save(&updated, id: id, in: collection)
            guard case .tree(let saved) = updated, let current = saved.current else {
                return .failure(SofaError(.assertionFailed, "document '\(id)' lost its revisions"))
            }
            return .success(WriteResult(id: id, rev: .revID(current.revID), sequence: sequence))
        case .vector(var doc)?:
            let all = [doc.current] + doc.conflicts
            guard let winner = all.first(where: { $0.rev == request.winner }),
                  let loser = all.first(where: { $0.rev == request.loser }), winner.rev != loser.rev else {
                return .failure(.notFound("document '\(id)': the resolution must name two of its revisions \(all.map(\.rev))"))
            }
            let vector = try winner.vector.merged(with: loser.vector).merged(with: doc.current.vector)
                .incremented(peer: Version.me)
            let body = request.mergedBody.map(DatabaseStore.bodyBytes) ?? (request.mergedDeleted ? Array("{}".utf8) : winner.body)
            let deleted = request.mergedBody == nil && !request.mergedDeleted ? winner.deleted : request.mergedDeleted
            doc.conflicts.removeAll { $0.rev == winner.rev || $0.rev == loser.rev }
            doc.current = VectorRevision(vector: vector, deleted: deleted, body: body)
            var updated = DocumentContent.vector(doc)
            let sequence = try save(&updated, id: id, in: collection)
            return .success(WriteResult(id: id, rev: .vector(vector), sequence: sequence))
        }
    }
}
