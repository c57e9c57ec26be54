public import SofaCore
import SofaWire

/// Reading a collection in order: one batch of the changes feed, and all-docs.
///
/// Live changes (an `AsyncSequence` of batches, `changes(since:)` without a limit, and document
/// observers) are not here: they belong to the live-changes work, in `Database+LiveChanges.swift`.
extension DocumentStore {
    /// One batch of the changes feed, polled: each document once, at its latest sequence, newer
    /// than `since` (ascending) or, `descending`, the newest first. `limit` 0 = no limit.
    /// Purged and expired documents appear with an empty `rev`. `ChangesBatch.lastSequence` is
    /// the collection's last sequence when the batch was read.
    public func changes(since: UInt64, limit: Int, descending: Bool = false, includeBodies: Bool = false,
                        allLeaves: Bool = false, includeDeleted: Bool = true,
                        docIDs: [String] = []) async throws(SofaError) -> ChangesBatch {
        try await changes(ChangesQuery(since: since, descending: descending, limit: UInt32(clamping: max(0, limit)),
                                       includeBodies: includeBodies, allLeaves: allLeaves,
                                       includeDeleted: includeDeleted, docIDs: docIDs))
    }

    public func changes(_ query: ChangesQuery) async throws(SofaError) -> ChangesBatch {
        guard case .changes(let batch) = try await call(.changes(query)) else { throw unexpected("changes") }
        return batch
    }

    /// Documents in ID order (`descending`: reversed), between `startKey` and `endKey`
    /// (inclusive; nil = unbounded), after skipping `skip`, at most `limit` (0 = no limit).
    /// Without `includeBodies`, `Document.body` is empty.
    public func allDocs(limit: Int = 0, skip: Int = 0, descending: Bool = false, startKey: String? = nil,
                        endKey: String? = nil, includeBodies: Bool = false,
                        includeDeleted: Bool = false) async throws(SofaError) -> [Document] {
        try await allDocs(AllDocsQuery(includeBodies: includeBodies, includeDeleted: includeDeleted,
                                       limit: UInt32(clamping: max(0, limit)), skip: UInt32(clamping: max(0, skip)),
                                       descending: descending, startKey: startKey ?? "", endKey: endKey ?? ""))
    }

    public func allDocs(_ query: AllDocsQuery) async throws(SofaError) -> [Document] {
        guard case .documents(let docs) = try await call(.allDocs(query)) else { throw unexpected("allDocs") }
        return docs
    }
}
