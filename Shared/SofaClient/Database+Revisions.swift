public import SofaCore
public import SofaWire

/// Replication's writes and conflict handling: insert with history, bulk writes, conflicts,
/// resolution, purge.
extension DocumentStore {
    /// Inserts a revision with its ancestry, as a replicator does: `history[0]` is the revision,
    /// then its parent, grandparent… (generations descending by one). No MVCC check: a revision
    /// that does not extend the current one makes a conflicting branch (`InsertResult.conflict`).
    /// `body` is sent raw: it must be a JSON object without `_id`, `_rev` or `_deleted`.
    @discardableResult
    /// `winnerByRevID`: CouchDB's rule for the winner (the best revision by revID, whichever
    /// branch came first), as an HTTP client's `new_edits=false` write has it; otherwise the
    /// revision is taken as a peer's (a branch conflicting with the live local line does not win).
    public func insert(id: String, history: [String], body: [UInt8], deleted: Bool = false,
                       winnerByRevID: Bool = false) async throws(SofaError) -> InsertResult {
        let reply = try await call(.insertRevision(RevisionInsert(id: id, history: history, body: body, deleted: deleted,
                                                                  winnerByRevID: winnerByRevID)))
        guard case .inserted(let result) = reply else { throw unexpected("insert") }
        return result
    }

    @discardableResult
    public func insert(id: String, history: [String], json: String, deleted: Bool = false) async throws(SofaError) -> InsertResult {
        try await insert(id: id, history: history, body: Array(json.utf8), deleted: deleted)
    }

    @discardableResult
    public func insert<T: Encodable>(_ value: T, id: String, history: [String], deleted: Bool = false) async throws(SofaError) -> InsertResult {
        try await insert(id: id, history: history, body: try encodeBody(value), deleted: deleted)
    }

    /// Many writes in one call and one transaction. The call fails only when the whole batch
    /// does (unknown database or collection, …); each item's own failure is in its result.
    public func bulk(_ items: [BulkItem]) async throws(SofaError) -> [BulkItemResult] {
        guard case .bulk(let results) = try await call(.bulkWrite(items)) else { throw unexpected("bulk") }
        return results
    }

    /// The open leaves that conflict with the current revision (empty when there is none).
    public func conflicts(id: String) async throws(SofaError) -> [String] {
        guard case .conflicts(let revs) = try await call(.conflicts(id: id)) else { throw unexpected("conflicts") }
        return revs
    }

    /// Resolves a conflict by choosing `winner`: `loser`'s branch is closed with a tombstone.
    /// Returns the revision that is current afterwards.
    @discardableResult
    public func resolve(id: String, winner: String, loser: String) async throws(SofaError) -> DocumentRevision {
        try await resolve(ConflictResolution(id: id, winner: winner, loser: loser))
    }

    /// Resolves a conflict with a merged body, written as `winner`'s child; `loser`'s branch is
    /// closed with a tombstone. `merged` nil writes a deletion.
    @discardableResult
    public func resolve(id: String, winner: String, loser: String, merged: [UInt8]?) async throws(SofaError) -> DocumentRevision {
        try await resolve(ConflictResolution(id: id, winner: winner, loser: loser, merge: true,
                                             mergedBody: merged ?? [], mergedDeleted: merged == nil))
    }

    @discardableResult
    public func resolve(id: String, winner: String, loser: String, merged json: String) async throws(SofaError) -> DocumentRevision {
        try await resolve(id: id, winner: winner, loser: loser, merged: Array(json.utf8))
    }

    @discardableResult
    public func resolve(_ resolution: ConflictResolution) async throws(SofaError) -> DocumentRevision {
        let reply = try await call(.resolveConflict(resolution))
        if case .document(let doc) = reply { return DocumentRevision(id: doc.id, rev: doc.rev, sequence: doc.sequence) }
        return try revision(reply, "resolve")
    }

    /// Removes a document and all its history (`rev` nil), or one leaf revision, as if it had
    /// never existed. Purges are not replicated.
    public func purge(id: String, rev: String? = nil) async throws(SofaError) {
        _ = try await call(.purge(id: id, rev: rev ?? ""))
    }
}

extension BulkItem {
    /// A put of raw JSON; `rev` nil creates the document.
    public static func put(id: String, json: String, rev: String? = nil, deleted: Bool = false) -> BulkItem {
        .put(id: id, rev: rev ?? "", body: Array(json.utf8), deleted: deleted)
    }

    /// An insert with history (see `DocumentStore.insert`).
    public static func insert(id: String, history: [String], json: String, deleted: Bool = false) -> BulkItem {
        .insert(RevisionInsert(id: id, history: history, body: Array(json.utf8), deleted: deleted))
    }
}
