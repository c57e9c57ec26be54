internal import SofaCore
internal import SofaWire
internal import SofaClient
internal import Logging

/// One part of a batch of a replication: revs-diff, fetch with bounded history, blobs, bulk
/// write, conflicts (see `Replication`).
extension Replication {
    /// The request object a design document's filter sees (CouchDB's replicator gives it the
    /// replication's `query_params` as `query`).
    var filterRequest: JSON {
        ["method": "GET", "query": .object(plan.queryParams),
         "userCtx": ["db": .string(plan.source.database), "name": plan.owner.isEmpty ? .null : .string(plan.owner), "roles": []]]
    }

    struct Written {
        var revisions = 0
        var resolved = 0
        var blobs = 0
        /// Revisions the target refused.
        var failures = 0
        var lastError: String?
    }

    /// A part of a batch: revs-diff, fetch, blobs, write, conflicts.
    func transferPart(_ changes: ArraySlice<Change>, source: any ReplicationPeer, target: any ReplicationPeer,
                      peers: PeerTranslation) async throws(SofaError) -> Written {
        var written = Written()
        // Purged and expired documents (no revision) are not replicated. Revisions are asked in
        // the target's terms; `original` maps them back to the source's.
        var original: [String: [String: String]] = [:]
        // (Changes are read by index and not copied: each holds four reference-counted parts.)
        var kept = changes.contains(where: { $0.rev.isEmpty }) ? ArraySlice(changes.filter { !$0.rev.isEmpty }) : changes
        if let query = plan.filterQuery {
            // Deletions pass (a target that never had the document gets a tombstone); live
            // documents pass when their current revision matches.
            let live = kept.filter { !$0.deleted }.map(\.id)
            var matching = Set<String>()
            if !live.isEmpty {
                let result = try await source.query(query.text, isN1QL: query.isN1QL, parameters: ["ids": .array(live.map(JSON.string))])
                for row in result { if case .string(let id)?? = row.first { matching.insert(id) } }
            }
            kept = ArraySlice(kept.filter { $0.deleted || matching.contains($0.id) })
        }
        if !plan.designFilter.isEmpty, !kept.isEmpty {
            // CouchDB's rule: every change (deletions too, `_deleted: true`) is shown to the filter.
            let passed = try await source.filter(plan.designFilter, documents: kept.map(\.shownDocument), request: filterRequest)
            kept = ArraySlice(zip(kept, passed).compactMap { $1 ? $0 : nil })
        }
        // Revision trees need no translation: the revs asked are the source's own.
        let asked = kept.map { change in
            let revs = change.leaves.isEmpty ? [change.rev] : change.leaves
            guard peers.active else { return RevsDiffEntry(id: change.id, revs: revs) }
            return RevsDiffEntry(id: change.id, revs: revs.map { rev in
                let translated = peers.toTarget(rev)
                original[change.id, default: [:]][translated] = rev
                return translated
            })
        }
        guard !asked.isEmpty else { return written }
        var missing = try await target.revsDiff(asked)
        if peers.active {
            missing = missing.map { entry in
                RevsDiffEntry(id: entry.id, revs: entry.revs.map { original[entry.id]?[$0] ?? $0 },
                              possibleAncestors: entry.possibleAncestors)
            }
        }
        guard !missing.isEmpty else { return written }
        // A first revision (generation 1, current) needs no read: its history is itself and the
        // changes batch carries its body.
        var revisions: [RevisionInsert] = []
        revisions.reserveCapacity(missing.count)
        var toFetch: [RevsDiffEntry] = []
        var position: [String: Int] = [:]
        position.reserveCapacity(changes.count)
        for index in changes.indices { position[changes[index].id] = index }
        for entry in missing {
            if !peers.active, let index = position[entry.id], !changes[index].deleted, !changes[index].body.isEmpty,
               changes[index].rev.utf8.starts(with: "1-".utf8), entry.revs.contains(changes[index].rev) {
                revisions.append(RevisionInsert(id: entry.id, history: [changes[index].rev], body: changes[index].body))
                if entry.revs.count > 1 {
                    var rest = entry
                    rest.revs.removeAll { $0 == changes[index].rev }
                    toFetch.append(rest)
                }
            } else {
                toFetch.append(entry)
            }
        }
        revisions += try await fetch(toFetch, from: source, peers: peers)
        if plan.conflicts == .couchdb {
            for index in revisions.indices { revisions[index].winnerByRevID = true }
        }
        written.blobs = try await copyBlobs(revisions, from: source, to: target)
        await registry.update(plan.id, run: run) { $0.revisionsSent += UInt64(revisions.count) }
        var results = try await target.bulk(revisions.map { .insert($0) })
        results = try await retryMissingBlobs(revisions, results, from: source, to: target)
        var conflicted: [String] = []
        for result in results {
            if let error = result.error {
                // A revision the target refuses (an impossible history, a bad body): logged and
                // reported; the rest of the batch is written.
                logger.warning("target refused a revision", metadata: ["doc": "\(result.id)", "error": "\(error.message)"])
                written.lastError = "document '\(result.id)': \(error.message)"
                written.failures += 1
            } else {
                written.revisions += 1
                if result.conflict && conflicted.last != result.id { conflicted.append(result.id) }
            }
        }
        // Version-vector conflicts are left as they are: resolving one writes a new version on
        // each side, which would conflict again.
        if plan.conflicts == .auto && !peers.active {
            for id in Set(conflicted).sorted() {
                written.resolved += try await resolve(id, on: target)
            }
            // A deletion wins: where the source's current revision is a deletion, live branches
            // the target still has are closed, and so are its other deleted leaves (no new
            // revision for those), so both sides show the same current tombstone.
            let brought = Set(missing.map(\.id))
            for index in changes.indices where changes[index].deleted && !changes[index].rev.isEmpty
                && brought.contains(changes[index].id) {
                written.resolved += try await deletionWins(changes[index].id, deletion: changes[index].rev, on: target)
            }
        }
        return written
    }

    /// The missing revisions with bodies and bounded ancestry, `fetchWidth` reads in flight.
    func fetch(_ missing: [RevsDiffEntry], from source: any ReplicationPeer,
               peers: PeerTranslation) async throws(SofaError) -> [RevisionInsert] {
        let wanted = missing.flatMap { entry in entry.revs.map { (entry.id, $0, Set(entry.possibleAncestors)) } }
        var results = [RevisionInsert?](repeating: nil, count: wanted.count)
        do {
            try await withThrowingTaskGroup(of: (Int, RevisionInsert?).self) { group in
                var nextIndex = 0
                func add(_ group: inout ThrowingTaskGroup<(Int, RevisionInsert?), any Error>) {
                    let index = nextIndex
                    let (id, rev, ancestors) = wanted[index]
                    nextIndex += 1
                    group.addTask {
                        (index, try await Self.fetchOne(id, rev, ancestors, from: source, peers: peers))
                    }
                }
                while nextIndex < wanted.count && nextIndex < Self.fetchWidth { add(&group) }
                while let (index, insert) = try await group.next() {
                    results[index] = insert
                    if nextIndex < wanted.count { add(&group) }
                }
            }
        } catch {
            throw (error as? SofaError) ?? SofaError(.unexpectedError, "fetching revisions failed: \(error)")
        }
        return results.compactMap { $0 }
    }

    /// One revision with its bounded ancestry; nil when it is gone since the changes were read
    /// (purged, compacted): the next changes batch says what became of it.
    static func fetchOne(_ id: String, _ rev: String, _ ancestors: Set<String>, from source: any ReplicationPeer,
                         peers: PeerTranslation) async throws(SofaError) -> RevisionInsert? {
        let doc: StoredDocument
        do {
            doc = try await source.get(id: id, rev: rev, history: true)
        } catch {
            if error.is(.notFound) { return nil }
            throw error
        }
        let history = bounded(doc.history, ancestors).map(peers.toTarget)
        return RevisionInsert(id: id, history: history, body: doc.body, deleted: doc.deleted)
    }

    /// The ancestry up to and including the first revision the target has, at most `maxHistory`.
    static func bounded(_ history: [String], _ ancestors: Set<String>) -> [String] {
        var result: [String] = []
        for rev in history.prefix(maxHistory) {
            result.append(rev)
            if result.count > 1 && ancestors.contains(rev) { break }
        }
        return result
    }

    /// Copies the blobs the revisions reference that the target lacks, each once; answers how many.
    func copyBlobs(_ revisions: [RevisionInsert], from source: any ReplicationPeer, to target: any ReplicationPeer) async throws(SofaError) -> Int {
        var digests = Set<String>()
        // A tombstone that keeps a body keeps its references too: the target checks them alike.
        for revision in revisions { digests.formUnion(BlobDigests.find(in: revision.body)) }
        var copied = 0
        for digest in digests.sorted() {
            guard await registry.needsBlob(plan.id, digest) else { continue }
            do {
                _ = try await target.blobInfo(digest)
            } catch where error.is(.notFound) {
                do {
                    try await target.putBlob(source.blobChunks(digest), expectedKey: digest)
                    copied += 1
                } catch where error.is(.notFound) {
                    // The source lacks it too: the target refuses the revision and says why.
                    continue
                }
            }
            await registry.blobCopied(plan.id, digest)
        }
        return copied
    }

    /// Writes again the revisions the target refused because a blob they reference is not there
    /// (a compaction on the target deleted it between its copy and the write: until the
    /// revision is written nothing references it), copying their blobs again first; up to two
    /// more times. Answers the results with those of the retries in place.
    func retryMissingBlobs(_ revisions: [RevisionInsert], _ results: [BulkItemResult], from source: any ReplicationPeer,
                           to target: any ReplicationPeer) async throws(SofaError) -> [BulkItemResult] {
        guard results.count == revisions.count else { return results }
        var results = results
        for _ in 0..<2 {
            let refused = results.indices.filter { index in
                guard let error = results[index].error, error.is(.notFound) else { return false }
                return !BlobDigests.find(in: revisions[index].body).isEmpty
            }
            guard !refused.isEmpty else { break }
            let again = refused.map { revisions[$0] }
            for digest in Set(again.flatMap { BlobDigests.find(in: $0.body) }).sorted() {
                await registry.forgetBlob(plan.id, digest)
            }
            _ = try await copyBlobs(again, from: source, to: target)
            let retried = try await target.bulk(again.map { .insert($0) })
            guard retried.count == refused.count else { break }
            for (index, result) in zip(refused, retried) { results[index] = result }
        }
        return results
    }

    /// Closes every other leaf of `id` in favour of the deletion `deletion`; answers how many
    /// live ones it closed.
    func deletionWins(_ id: String, deletion: String, on target: any ReplicationPeer) async throws(SofaError) -> Int {
        let leaves = try await target.openLeaves(id: id)
        guard leaves.first?.rev != deletion, leaves.contains(where: { $0.rev == deletion && $0.deleted }) else { return 0 }
        var closed = 0
        for leaf in leaves where leaf.rev != deletion {
            _ = try await target.resolve(id: id, winner: deletion, loser: leaf.rev)
            if !leaf.deleted { closed += 1 }
        }
        return closed
    }

    /// `auto`: closes every live leaf but the deterministic winner; answers how many it closed.
    func resolve(_ id: String, on target: any ReplicationPeer) async throws(SofaError) -> Int {
        let leaves = try await target.openLeaves(id: id)
        let live = leaves.filter { !$0.deleted }.map { ConflictRule.Leaf(rev: $0.rev, deleted: false) }
        guard live.count > 1, let winner = ConflictRule.winner(live) else { return 0 }
        var closed = 0
        for loser in live where loser.rev != winner.rev {
            _ = try await target.resolve(id: id, winner: winner.rev, loser: loser.rev)
            closed += 1
        }
        return closed
    }
}
