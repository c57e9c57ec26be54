public import SofaCore
public import SofaWire
internal import SofaClient
internal import SofaQL
internal import Foundation
internal import Logging

/// What one replication (one direction) is asked to do.
public struct ReplicationPlan: Sendable, Equatable {
    public var id: String
    public var source: ReplicationEndpoint
    public var target: ReplicationEndpoint
    public var continuous: Bool
    public var docIDs: [String]
    /// A query WHERE expression (N1QL, with or without the `WHERE`); "" = none.
    public var filter: String
    public var conflicts: ConflictPolicy
    /// "scope.collection" or "collection" on both sides; "" = the default collection.
    public var collection: String
    /// The user it runs as on this cluster and on another that shares its key ("" = the
    /// cluster), with that user's permissions at every call.
    public var owner = ""
    /// How a side of another cluster with its own key is reached: as a user of it.
    public var sourceAccess: RemoteAccess?
    public var targetAccess: RemoteAccess?
    /// A design document's JavaScript filter on the source ("ddoc/name"; "" = none), and its
    /// request's `query`.
    public var designFilter = ""
    public var queryParams: JSONObject = [:]
    /// The source sequence to start from when the checkpoint is not further (0: the beginning).
    public var since: UInt64 = 0

    public init(id: String, source: ReplicationEndpoint, target: ReplicationEndpoint, continuous: Bool,
                docIDs: [String], filter: String = "", conflicts: ConflictPolicy, collection: String = "") {
        self.collection = collection
        self.id = id
        self.source = source
        self.target = target
        self.continuous = continuous
        self.docIDs = docIDs
        self.filter = filter
        self.conflicts = conflicts
    }

    /// The query that keeps, of the documents `$ids`, those whose current revision on the source
    /// matches the filter: N1QL text, or (a Mango selector's) a JSON query.
    var filterQuery: (text: String, isN1QL: Bool)? {
        if let condition = ReplicationSpec.jsonCondition(of: filter) {
            var query: JSONObject = ["WHAT": [["._id"]], "WHERE": ["AND", ["ARRAY_CONTAINS()", ["$ids"], ["._id"]], condition]]
            if !collection.isEmpty, let named = try? CollectionName(parsing: collection) {
                query["FROM"] = [["SCOPE": .string(named.scope), "COLLECTION": .string(named.name)]]
            }
            return (JSON.object(query).compactString, false)
        }
        return n1qlFilterQuery.map { ($0, true) }
    }

    private var n1qlFilterQuery: String? {
        var expression = filter.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !expression.isEmpty else { return nil }
        if expression.uppercased().hasPrefix("WHERE ") { expression = String(expression.dropFirst(6)) }
        // A collection's alias is its name: an alias no document property is likely to have
        // keeps a filter on a property named like the collection meaning the property.
        let source = collection.isEmpty ? "_" : "\(collection) AS sofa_replication_source"
        return "SELECT META().id FROM \(source) WHERE ARRAY_CONTAINS($ids, META().id) AND (\(expression))"
    }
}

/// Runs one replication, source → target, with the proven protocol: read the source's changes
/// since the checkpoint (all leaves, deletions included); ask the target which revisions it lacks
/// (revs-diff); fetch those with their ancestry, cut at the first ancestor the target has (and at
/// `maxHistory`); copy the blobs they reference that the target lacks (once each); write them
/// with insert-with-history in bulk batches; resolve conflicts (`auto`); record the checkpoint on
/// both sides (every `checkpointInterval` while busy, and on catching up). A batch is transferred
/// in parts, a few at once, while the next batch of changes is read, so at most two batches are
/// in memory.
///
/// Transient failures (a peer down or unreachable) are retried with exponential backoff; a
/// replication that can never work (no such database, different versioning modes) fails.
final class Replication: Sendable {
    let plan: ReplicationPlan
    let connections: any PeerProvider
    let registry: ReplicationRegistry
    /// This run's number (see `ReplicationRegistry`).
    let run: UInt64
    let logger: Logger

    /// Changes per read (the next is read while parts of this one are transferred), in parts of
    /// `partSize`, `partsInFlight` at a time: what a failure can make the replicator send twice
    /// is at most what is in flight, one batch's worth. Many parts in flight keep the target's
    /// writer fed: it commits whatever has arrived as one transaction, so more waiting parts make
    /// fewer, larger commits (one fsync each).
    static let batchSize = 6000
    static let partSize = 500
    static let partsInFlight = 12
    static let checkpointInterval: Duration = .milliseconds(250)
    static let fetchWidth = 16
    static let maxHistory = 100
    static let longPollMs: UInt32 = 20_000
    /// One-shot replications give up after this many failed attempts in a row.
    static let oneShotAttempts = 6

    init(plan: ReplicationPlan, run: UInt64, connections: any PeerProvider, registry: ReplicationRegistry, logger: Logger) {
        self.plan = plan
        self.run = run
        self.connections = connections
        self.registry = registry
        var logger = logger
        logger[metadataKey: "replication"] = "\(plan.id.prefix(12))"
        self.logger = logger
    }

    /// Runs until done (one-shot), stopped (cancelled) or failed.
    func run() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await runOnce()
                await registry.update(plan.id, run: run) { $0.state = .completed }
                return
            } catch {
                if Task.isCancelled { return }
                failures += 1
                let permanent = Self.isPermanent(error)
                logger.warning("replication attempt failed", metadata: ["error": "\(error.message)", "permanent": "\(permanent)"])
                if permanent || (!plan.continuous && failures >= Self.oneShotAttempts) {
                    await registry.update(plan.id, run: run) {
                        $0.state = .failed
                        $0.lastError = error.message
                    }
                    return
                }
                await registry.update(plan.id, run: run) {
                    $0.state = .retrying
                    $0.lastError = error.message
                }
                // Backoff before reconnecting: 250 ms doubling up to 10 s.
                let delay = Duration.milliseconds(min(10_000, 250 << min(failures - 1, 6)))
                do { try await Task.sleep(for: delay) } catch { return }
            }
        }
    }

    static func isPermanent(_ error: SofaError) -> Bool {
        error.is(.notFound) || error.is(.invalidParameter) || error.is(.badDatabaseName) || error.is(.unsupported)
            || error.is(.invalidQuery)
    }

    private func runOnce() async throws(SofaError) {
        let source = try await connections.peer(plan.source, collection: plan.collection, owner: plan.owner, access: plan.sourceAccess)
        let target = try await connections.peer(plan.target, collection: plan.collection, owner: plan.owner, access: plan.targetAccess)
        let sourceInfo = try await Self.info(source, "source", plan.source)
        let targetInfo = try await Self.info(target, "target", plan.target)
        guard sourceInfo.versioning == targetInfo.versioning else {
            throw SofaError(.invalidParameter, "cannot replicate between databases of different versioning modes: source "
                            + "'\(plan.source)' uses \(sourceInfo.versioning.rawValue), target '\(plan.target)' uses "
                            + "\(targetInfo.versioning.rawValue)")
        }
        let peers = sourceInfo.versioning == .versionVectors
            ? PeerTranslation(sourcePeer: PeerTranslation.peerID(publicUUID: sourceInfo.publicUUID),
                              targetPeer: PeerTranslation.peerID(publicUUID: targetInfo.publicUUID))
            : .identity
        if let query = plan.filterQuery {
            // A filter that does not compile fails the replication at once.
            do {
                _ = try await source.query(query.text, isN1QL: query.isN1QL, parameters: ["ids": .array([])])
            } catch where error.is(.invalidQuery) || error.is(.invalidParameter) {
                throw SofaError(.invalidQuery, "the replication's filter is not a valid WHERE expression: \(error.message)")
            }
        }
        if !plan.designFilter.isEmpty {
            // A filter the source's design documents do not define fails the replication at once.
            do {
                _ = try await source.filter(plan.designFilter, documents: [], request: filterRequest)
            } catch where error.is(.notFound) || error.is(.invalidParameter) {
                throw SofaError(.notFound, "the replication's filter \(plan.designFilter) is not available on the source: \(error.message)")
            }
        }
        if !plan.collection.isEmpty {
            // Both sides must have the collection (an empty source would never notice the target lacks it).
            for (side, db) in [("source", source), ("target", target)] as [(String, any ReplicationPeer)] {
                do {
                    _ = try await db.changes(ChangesQuery(descending: true, limit: 1))
                } catch where error.is(.notFound) || error.is(.notOpen) {
                    throw SofaError(.notFound, "the \(side) database '\(db.name)' has no collection '\(plan.collection)': \(error.message)")
                }
            }
        }
        var checkpoint = try await Checkpoint.agreed(plan.id, source: source, target: target,
                                                     filter: try await filterDigest(source))
        checkpoint.start(atLeast: plan.since)
        await registry.update(plan.id, run: run) {
            $0.state = .running
            $0.checkpoint = checkpoint.sequence
            $0.lastError = ""
        }
        // The source sequence written to the target but not yet recorded by a checkpoint. Saving
        // one costs a write on each side, so it is saved at most every `checkpointInterval` while
        // busy, and whenever the replication catches up. Re-reading changes after a restart costs
        // little: the revs-diff keeps what the target has from being sent again.
        var unsaved: UInt64?
        var lastSave = ContinuousClock.now
        func saveCheckpoint(_ sequence: UInt64) async throws(SofaError) {
            try await checkpoint.save(sequence, source: source, target: target)
            unsaved = nil
            lastSave = ContinuousClock.now
            await registry.update(plan.id, run: run) { $0.checkpoint = sequence }
        }
        // Parts being transferred, oldest first: up to `partsInFlight` at once, finished in
        // order so the checkpoint only ever covers parts wholly written. As the oldest finishes
        // the next starts (from the next changes batch, read meanwhile), so storage on both sides
        // always has work: no pause between batches.
        var inFlight: [(last: UInt64, checked: Int, ids: [String], task: Task<Result<Written, SofaError>, Never>)] = []
        var inFlightIDs: [String: Int] = [:]
        defer { for part in inFlight { part.task.cancel() } }
        func finishOldest() async throws(SofaError) {
            let part = inFlight.removeFirst()
            for id in part.ids {
                if let count = inFlightIDs[id], count > 1 { inFlightIDs[id] = count - 1 } else { inFlightIDs[id] = nil }
            }
            let written = try await part.task.value.get()
            unsaved = part.last
            await registry.update(plan.id, run: run) {
                $0.docsChecked += UInt64(part.checked)
                $0.docsWritten += UInt64(written.revisions)
                $0.conflictsResolved += UInt64(written.resolved)
                $0.blobsTransferred += UInt64(written.blobs)
                $0.docWriteFailures += UInt64(written.failures)
                if let error = written.lastError { $0.lastError = error }
            }
            if ContinuousClock.now - lastSave >= Self.checkpointInterval { try await saveCheckpoint(part.last) }
        }
        var since = checkpoint.sequence
        var next = prefetch(source, since: since, wait: false)
        var queued: [ArraySlice<Change>] = []
        while true {
            if queued.isEmpty {
                let batch = try await next.value.get()
                try Task.checkCancellation(or: .shuttingDown)
                guard let last = batch.changes.map(\.sequence).max() else {
                    while !inFlight.isEmpty { try await finishOldest() }
                    if let sequence = unsaved { try await saveCheckpoint(sequence) }
                    guard plan.continuous else { return }
                    await registry.update(plan.id, run: run) { $0.state = .idle }
                    next = prefetch(source, since: since, wait: true)
                    continue
                }
                since = last
                next = prefetch(source, since: last, wait: false)
                await registry.update(plan.id, run: run) { $0.state = .running }
                // A batch lists each document once, in sequence order: each part ends at a
                // sequence below which everything is in it or in an earlier part.
                var changes = batch.changes
                if !changes.indices.dropFirst().allSatisfy({ changes[$0 - 1].sequence < changes[$0].sequence }) {
                    changes.sort { $0.sequence < $1.sequence }
                }
                queued = stride(from: 0, to: changes.count, by: Self.partSize).map {
                    changes[$0..<min(changes.count, $0 + Self.partSize)]
                }
            }
            let part = queued.removeFirst()
            let ids = part.map(\.id)
            // A document changed again since an earlier batch may be in a part still in
            // flight: that part finishes first, so one document's revisions are never written
            // (and its conflicts resolved) by two parts at once.
            while ids.contains(where: { inFlightIDs[$0] != nil }) { try await finishOldest() }
            for id in ids { inFlightIDs[id, default: 0] += 1 }
            inFlight.append((part.last?.sequence ?? since, part.count, ids, Task {
                do throws(SofaError) {
                    return .success(try await self.transferPart(part, source: source, target: target, peers: peers))
                } catch {
                    return .failure(error)
                }
            }))
            if inFlight.count >= Self.partsInFlight { try await finishOldest() }
        }
    }

    private static func info(_ db: any ReplicationPeer, _ side: String, _ endpoint: ReplicationEndpoint) async throws(SofaError) -> DatabaseInfo {
        do {
            return try await db.info()
        } catch where error.is(.notFound) || error.is(.notOpen) {
            throw SofaError(.notFound, "the \(side) database '\(endpoint)' does not exist: \(error.message)")
        }
    }

    private func prefetch(_ source: any ReplicationPeer, since: UInt64, wait: Bool) -> Task<Result<ChangesBatch, SofaError>, Never> {
        let query = ChangesQuery(since: since, limit: UInt32(Self.batchSize), includeBodies: true, allLeaves: true,
                                 includeDeleted: true,
                                 docIDs: plan.docIDs, waitMs: wait ? Self.longPollMs : 0)
        return Task {
            do throws(SofaError) { return .success(try await source.changes(query)) } catch { return .failure(error) }
        }
    }
}

extension Task where Success == Never, Failure == Never {
    static func checkCancellation(or code: SofaError.Code) throws(SofaError) {
        if Task.isCancelled { throw SofaError(code, "the replication was stopped") }
    }
}

extension Replication {
    /// The digest of the design filter's function as the source holds it now ("" without a
    /// design filter), recorded with the checkpoint (see `Checkpoint`).
    func filterDigest(_ source: any ReplicationPeer) async throws(SofaError) -> String {
        let parts = plan.designFilter.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return "" }
        let design = try await source.get(id: "_design/" + parts[0], rev: "", history: false)
        let function = JSON.tryParse(design.body)?["filters"]?[parts[1]]
        return ReplicationID.hexSHA1(function?.compactString ?? "")
    }
}
