public import SofaCore
import SofaWire
internal import SofaBus

/// The live changes feed: an `AsyncSequence` of change batches, each with the documents
/// committed since the previous one.
///
/// It is pulled, not pushed: each `next()` long-polls the gateway ("anything after sequence N?"),
/// which answers at once when there is, and otherwise waits for storage's commit notice. So a
/// slow consumer only polls later, never makes storage or the gateway buffer for it, and never
/// misses a change: the next poll starts from the last sequence it saw. While the cluster is
/// unreachable the sequence keeps retrying (every 200 ms) until the task is cancelled.
public struct LiveChanges: AsyncSequence, Sendable {
    public typealias Element = ChangesBatch

    let client: SofaClient
    let database: String
    let collection: String
    let since: UInt64
    let query: ChangesQuery

    public func makeAsyncIterator() -> Iterator {
        Iterator(source: self, since: since)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let source: LiveChanges
        /// The last sequence delivered (or the starting point).
        public private(set) var since: UInt64

        public mutating func next() async throws -> ChangesBatch? {
            while !Task.isCancelled {
                var query = source.query
                query.since = since
                let request = Request(database: source.database, collection: source.collection, operation: .changes(query))
                let response = await source.client.send(request, timeout: .milliseconds(Int(query.waitMs) + 10_000))
                switch response.outcome {
                case .success(.changes(let batch)):
                    guard let newest = batch.changes.map(\.sequence).max() else { continue }
                    since = Swift.max(since, newest)
                    return batch
                case .success:
                    throw SofaError(.unexpectedError, "the gateway answered a changes poll with something else")
                case .failure(let error) where error.is(.unavailable) || error.is(.timeout) || error.is(.shuttingDown):
                    try await Task.sleep(for: .milliseconds(200))
                case .failure(let error):
                    throw error
                }
            }
            return nil
        }
    }
}

extension DocumentStore {
    /// Changes committed after `since`, as they happen (see `LiveChanges`). `batchLimit` caps
    /// one batch; `docIDs` filters; `includeBodies` adds each current body.
    /// `allLeaves`: each change lists its document's open leaves (more than one: a conflict).
    public func liveChanges(since: UInt64 = 0, includeBodies: Bool = false, includeDeleted: Bool = true,
                            docIDs: [String] = [], batchLimit: Int = 1000, pollMs: UInt32 = 15_000,
                            allLeaves: Bool = false) -> LiveChanges {
        LiveChanges(client: client, database: databaseName, collection: collectionPath, since: since,
                    query: ChangesQuery(since: since, limit: UInt32(clamping: max(1, batchLimit)),
                                        includeBodies: includeBodies, allLeaves: allLeaves, includeDeleted: includeDeleted, docIDs: docIDs,
                                        waitMs: max(1, pollMs)))
    }

    /// Every new revision of one document (including its deletion, purge or expiration), as it
    /// is committed, after `since`.
    public func observe(id: String, since: UInt64 = 0, includeBodies: Bool = false) -> LiveChanges {
        liveChanges(since: since, includeBodies: includeBodies, docIDs: [id])
    }
}
