internal import SofaRows
public import SofaQL
public import SofaCore
internal import Foundation

/// Milliseconds since the Unix epoch, now.
func nowMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

extension DatabaseStore {
    /// Purges a whole document (`rev` nil) or one leaf revision. A whole purge leaves a purged row
    /// at a new sequence (the changes feed reports it with an empty rev); purging the last leaf
    /// purges the document. Returns the document's current rev afterwards ("" once purged) and
    /// the new sequence.
    public func purge(id: String, rev: String? = nil, in collection: CollectionName = .default) async throws(SofaError) -> (rev: String, sequence: UInt64) {
        try check(collection)
        return try await perform { (tx: Transaction) throws(SofaError) -> Result<(rev: String, sequence: UInt64), SofaError> in
            let content: DocumentContent?
            do throws(SofaError) { (_, content) = try tx.loadContent(id, collection) } catch { return .failure(error) }
            guard let content else { return .failure(.notFound("document '\(id)' not found")) }
            guard let rev else { return .success(("", try tx.savePurged(id: id, in: collection))) }
            switch content {
            case .tree(var tree):
                guard let revID = RevID.tryParse(rev) else { return .failure(SofaError(.badRevisionID, "invalid revID '\(rev)'")) }
                guard tree.purge(revID) > 0 else {
                    return .failure(.notFound("document '\(id)' has no leaf revision \(rev)"))
                }
                if tree.isEmpty { return .success(("", try tx.savePurged(id: id, in: collection))) }
                var updated = DocumentContent.tree(tree)
                let sequence = try tx.save(&updated, id: id, in: collection)
                return .success((tree.current?.revID.ascii ?? "", sequence))
            case .vector(var doc):
                if doc.current.rev == rev {
                    guard !doc.conflicts.isEmpty else { return .success(("", try tx.savePurged(id: id, in: collection))) }
                    doc.current = doc.conflicts.removeFirst()
                } else {
                    guard doc.conflicts.contains(where: { $0.rev == rev }) else {
                        return .failure(.notFound("document '\(id)' has no revision \(rev)"))
                    }
                    doc.conflicts.removeAll { $0.rev == rev }
                }
                var updated = DocumentContent.vector(doc)
                let sequence = try tx.save(&updated, id: id, in: collection)
                return .success((doc.current.rev, sequence))
            }
        }
    }

    // MARK: Expiration

    /// Sets (ms since the epoch) or, with 0, cancels a document's expiration. Not a change: no
    /// new sequence. A deleted document may expire too.
    public func setExpiration(id: String, _ expiration: Int64, in collection: CollectionName = .default) async throws(SofaError) {
        try check(collection)
        guard expiration >= 0 else { throw .invalid("an expiration is milliseconds since the epoch, not \(expiration)") }
        try await perform { (tx: Transaction) throws(SofaError) -> Result<Void, SofaError> in
            try tx.db.run("UPDATE \(collection.table) SET expiration = ? WHERE key = ? AND (flags & \(DocumentFlags.purged.rawValue)) = 0",
                          [expiration == 0 ? .null : .integer(expiration), .text(id)])
            guard tx.db.changes > 0 else { return .failure(.notFound("document '\(id)' not found")) }
            tx.expirationsChanged = true
            return .success(())
        }
    }

    /// A document's expiration; 0 for none, and for a document that does not exist (as LiteCore
    /// answers: c4DatabaseTest "Database Expired").
    public func expiration(id: String, in collection: CollectionName = .default) async throws(SofaError) -> Int64 {
        try check(collection)
        return try await read { (reader) throws(SofaError) -> Int64 in
            guard let row = try DocumentRow.load(reader, collection, id), !row.isPurged else { return 0 }
            return row.expiration ?? 0
        }
    }

    /// The earliest expiration in the collection; 0 for none.
    public func nextExpiration(in collection: CollectionName = .default) async throws(SofaError) -> Int64 {
        try check(collection)
        return try await read { (reader) throws(SofaError) -> Int64 in
            var next: Int64 = 0
            try reader.run("SELECT min(expiration) FROM \(collection.table) WHERE expiration IS NOT NULL") { row in
                if !row.isNull(0) { next = row.integer(0) }
            }
            return next
        }
    }

    /// On the writer queue: schedules the purge of expired documents at the earliest expiration of
    /// any collection (replacing the previous schedule).
    func rescheduleExpiry(_ writer: SQLiteConnection) {
        guard !isClosed else { return }
        var next: Int64?
        var unread = false
        for collection in liveCollections {
            do {
                try writer.run("SELECT min(expiration) FROM \(collection.table) WHERE expiration IS NOT NULL") { row in
                    if !row.isNull(0) { next = min(next ?? .max, row.integer(0)) }
                }
            } catch {
                unread = true
            }
        }
        // A table that could not be read (the file busy a moment, say): asked again shortly, so
        // that a document due never waits for another write to be purged.
        if unread { retryExpirySchedule() }
        // Each schedule bumps the generation; an older timer that fires finds it changed and does nothing.
        let generation = expiryGeneration.withLock { value -> UInt64 in
            value += 1
            return value
        }
        guard let next else { return }
        let delay = max(0, next - clock())
        writerQueue.asyncAfter(deadline: .now() + .milliseconds(Int(min(delay, Int64(Int32.max))))) { [weak self] in
            guard let self, !self.isClosed, self.expiryGeneration.withLock({ $0 }) == generation else { return }
            self.enqueue(PendingWork(
                run: { (tx: Transaction) throws(SofaError) -> @Sendable () -> Void in
                    try tx.purgeExpired()
                    return {}
                },
                fail: { [weak self] _ in self?.retryExpirySchedule() }))
        }
    }

    /// Schedules the purge of expired documents again a little later (the last try could not
    /// read or write).
    func retryExpirySchedule() {
        writerQueue.asyncAfter(deadline: .now() + .milliseconds(200)) { [weak self] in
            guard let self, !self.isClosed else { return }
            self.writer.async { connection in self.rescheduleExpiry(connection) }
        }
    }

    // MARK: Compaction

    /// Prunes every revision tree to `maxRevTreeDepth` (or the database's revs limit when that is
    /// lower), drops the bodies of non-leaf revisions, then checkpoints the WAL and VACUUMs.
    /// Returns how many revisions were pruned.
    @discardableResult
    public func compact() async throws(SofaError) -> Int {
        try await compactWithBlobs().pruned
    }

    /// As `compact()`, and also deletes the blob files no kept revision references (see
    /// `removeUnreferencedBlobs`). Returns both counts.
    public func compactWithBlobs() async throws(SofaError) -> (pruned: Int, blobsRemoved: Int) {
        let limit = revsLimit.load(ordering: .relaxed)
        let depth = limit > 0 ? min(limit, maxRevTreeDepth) : maxRevTreeDepth
        let (pruned, blobsRemoved) = try await perform { (tx: Transaction) throws(SofaError) -> Result<(Int, Int), SofaError> in
            let pruned = try tx.pruneTrees(maxDepth: depth)
            return .success((pruned, try tx.store.removeUnreferencedBlobs(tx)))
        }
        try await writer.run { (writer) throws(SofaError) in
            try writer.execute("PRAGMA wal_checkpoint(TRUNCATE); VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
        }
        return (pruned, blobsRemoved)
    }
}

extension Transaction {
    /// Prunes every revision tree and drops the bodies of non-leaf revisions (unless not
    /// `dropBodies`); 0 for version vectors.
    func pruneTrees(maxDepth depth: Int, dropBodies: Bool = true) throws(SofaError) -> Int {
        guard store.versioning == .revisionTrees else { return 0 }
        var pruned = 0
        for collection in store.liveCollections {
            var rows: [(String, [UInt8], [UInt8])] = []
            try db.run("SELECT key, body, extra FROM \(collection.table) WHERE length(extra) > 0") { row in
                rows.append((row.text(0), row.blob(1), row.blob(2)))
            }
            for (key, body, extra) in rows {
                guard var tree = RevTree.tryDecode(extra, currentBody: body) else { continue }
                pruned += tree.prune(maxDepth: depth)
                if dropBodies { tree.removeNonLeafBodies() }
                guard let columns = tree.recordColumns(), columns.extra != extra else { continue }
                try db.run("UPDATE \(collection.table) SET extra = ? WHERE key = ?", [.blob(columns.extra), .text(key)])
            }
        }
        return pruned
    }
}

extension Transaction {
    /// Purges every document whose expiration has passed, in every collection.
    func purgeExpired() throws(SofaError) {
        let now = store.clock()
        for collection in store.liveCollections {
            var keys: [String] = []
            try db.run("SELECT key FROM \(collection.table) WHERE expiration IS NOT NULL AND expiration <= ?",
                       [.integer(now)]) { keys.append($0.text(0)) }
            for key in keys { try savePurged(id: key, in: collection) }
        }
        expirationsChanged = true
    }
}
