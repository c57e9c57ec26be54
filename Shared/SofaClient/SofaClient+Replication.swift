public import SofaCore
public import SofaWire

/// One-shot (until caught up, then stop) or continuous (follow the source's changes until stopped).
public enum ReplicationMode: Sendable, Equatable {
    case oneShot, continuous
}

/// Which documents a replication copies.
public struct ReplicationFilter: Sendable, Equatable {
    public var docIDs: [String]
    /// A query WHERE expression (N1QL); "" = none.
    public var expression: String
    /// A design document's JavaScript filter, "ddoc/name" (`filters.name` of `_design/ddoc` on
    /// the source), run by the source's query workers; "" = none. `queryParams` is the `query`
    /// of the request object it is given.
    public var design: String
    public var queryParams: JSONObject

    public init(docIDs: [String] = [], expression: String = "", design: String = "", queryParams: JSONObject = [:]) {
        self.docIDs = docIDs
        self.expression = expression
        self.design = design
        self.queryParams = queryParams
    }

    public static let none = ReplicationFilter()
    public static func docIDs(_ ids: [String]) -> ReplicationFilter { ReplicationFilter(docIDs: ids) }
    public static func query(_ expression: String) -> ReplicationFilter { ReplicationFilter(expression: expression) }
    public static func design(_ name: String, queryParams: JSONObject = [:]) -> ReplicationFilter {
        ReplicationFilter(design: name, queryParams: queryParams)
    }
}

extension SofaClient {
    /// Starts a replication run by this cluster's sofa-replicator. `source` and `target` are a
    /// database of this cluster ("db") or of another one ("tcp://host:port/db"); `direction`
    /// `.both` starts two replications (source → target and target → source). `collection`
    /// ("scope.collection", "" = the default one) is replicated to the same collection.
    ///
    /// ```swift
    /// let handle = try await client.replicate(from: "app", to: "tcp://10.0.0.2:7420/app", mode: .continuous)
    /// for try await status in handle.updates() { print(status.state, status.docsWritten) }
    /// ```
    ///
    /// A side on another cluster with a key of its own is reached as a user of it: `sourceAccess`
    /// or `targetAccess` names that cluster's public key and the user's name and password there
    /// (the replicator keeps them with the replication's record; no read returns them). `since`
    /// skips the source's changes up to that sequence (CouchDB's `since_seq`; a replication of
    /// its own, with its own checkpoint).
    public func replicate(from source: String, to target: String, direction: ReplicationDirection = .push,
                          mode: ReplicationMode = .oneShot, filter: ReplicationFilter = .none,
                          conflicts: ConflictPolicy = .auto, collection: String = "",
                          sourceAccess: RemoteAccess? = nil, targetAccess: RemoteAccess? = nil,
                          since: UInt64 = 0) async throws(SofaError) -> ReplicationHandle {
        let spec = ReplicationSpec(source: source, target: target, direction: direction, continuous: mode == .continuous,
                                   docIDs: filter.docIDs, filter: filter.expression, conflicts: conflicts,
                                   collection: collection, sourceAccess: sourceAccess, targetAccess: targetAccess,
                                   designFilter: filter.design, queryParams: filter.queryParams, since: since)
        guard case .replications(let started) = try await call(.startReplication(spec)) else { throw unexpected("startReplication") }
        return ReplicationHandle(client: self, initial: started)
    }

    /// Every replication the cluster's replicator runs or ran since it started.
    public func replications() async throws(SofaError) -> [ReplicationStatus] {
        guard case .replications(let list) = try await call(.listReplications()) else { throw unexpected("listReplications") }
        return list
    }

    /// One replication's status; with `afterVersion` and `wait`, waits (up to `wait`) for a
    /// status newer than that version.
    public func replicationStatus(_ id: String, afterVersion: UInt64 = 0, wait: Duration = .zero) async throws(SofaError) -> ReplicationStatus {
        let waitMs = UInt32(clamping: wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000)
        guard case .replications(let list) = try await call(.listReplications(id: id, afterVersion: afterVersion, waitMs: waitMs),
                                                            timeout: timeout + wait),
              let status = list.first else {
            throw unexpected("listReplications")
        }
        return status
    }

    /// Stops a replication (a no-op for one that has ended).
    public func stopReplication(_ id: String) async throws(SofaError) {
        _ = try await call(.stopReplication(id: id))
    }
}

/// A started replication (two for `.both`): its IDs, its status updates, and `stop()`.
public struct ReplicationHandle: Sendable {
    public let client: SofaClient
    /// The statuses answered at the start, one per replication.
    public let initial: [ReplicationStatus]
    public var ids: [String] { initial.map(\.id) }

    /// The current status of each replication.
    public func status() async throws(SofaError) -> [ReplicationStatus] {
        var result: [ReplicationStatus] = []
        for id in ids { result.append(try await client.replicationStatus(id)) }
        return result
    }

    /// How long `updates()` keeps asking while the replicator (or the gateway) does not answer,
    /// e.g. while it restarts: the replications are recorded, so a restarted replicator resumes
    /// them and answers again.
    public static let unreachablePatience: Duration = .seconds(60)

    /// The status of `id` newer than `version` (waiting up to `wait`), asked again while the
    /// replicator is unreachable (up to `patience`). A replication the replicator no longer knows
    /// fails with `.notFound` saying so.
    static func nextStatus(_ client: SofaClient, _ id: String, after version: UInt64, wait: Duration,
                           patience: Duration) async throws(SofaError) -> ReplicationStatus {
        let giveUp = ContinuousClock.now + patience
        var attempt = 0
        while true {
            do {
                return try await client.replicationStatus(id, afterVersion: version, wait: wait)
            } catch where error.is(.notFound) {
                throw SofaError(.notFound, "replication \(id) ended: the replicator no longer knows it (\(error.message))")
            } catch where (error.is(.unavailable) || error.is(.timeout) || error.is(.shuttingDown))
                            && ContinuousClock.now < giveUp && !Task.isCancelled {
                // Asked again after a pause that grows from 50 ms to 1 s.
                attempt += 1
                do {
                    try await Task.sleep(for: .milliseconds(min(1_000, 50 << min(attempt, 5))))
                } catch {
                    throw SofaError(.cancelled, "stopped waiting for replication \(id)")
                }
            }
        }
    }

    /// Every status change of the replications (interleaved), ending when all have ended (the
    /// last status says how: completed, stopped, or failed with its `lastError`). It fails when a
    /// replication is no longer known, or the replicator does not answer for `unreachablePatience`.
    public func updates() -> AsyncThrowingStream<ReplicationStatus, any Error> {
        let client = self.client
        let initial = self.initial
        return AsyncThrowingStream { continuation in
            let task = Task {
                await withTaskGroup(of: Void.self) { group in
                    for first in initial {
                        group.addTask {
                            var status = first
                            continuation.yield(status)
                            while !status.state.isFinal && !Task.isCancelled {
                                do {
                                    let next = try await Self.nextStatus(client, status.id, after: status.version,
                                                                         wait: .seconds(10), patience: Self.unreachablePatience)
                                    if next.version != status.version { continuation.yield(next) }
                                    status = next
                                } catch {
                                    continuation.finish(throwing: error)
                                    return
                                }
                            }
                        }
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Waits until every replication satisfies `condition` (e.g. ended, or idle and caught up),
    /// or `timeout` runs out (`.timeout`); a replicator that restarts meanwhile is asked again. Answers
    /// the statuses that satisfied it.
    public func wait(timeout: Duration = .seconds(60),
                     until condition: @escaping @Sendable (ReplicationStatus) -> Bool = { $0.state.isFinal }) async throws(SofaError) -> [ReplicationStatus] {
        let deadline = ContinuousClock.now + timeout
        var statuses: [ReplicationStatus] = []
        for id in ids {
            statuses.append(try await Self.nextStatus(client, id, after: 0, wait: .zero, patience: timeout))
        }
        for index in statuses.indices {
            while !condition(statuses[index]) {
                let remaining = deadline - ContinuousClock.now
                guard remaining > .zero else {
                    throw SofaError(.timeout, "replication \(statuses[index].id) is \(statuses[index].state.rawValue) after \(timeout)"
                                    + (statuses[index].lastError.isEmpty ? "" : ": \(statuses[index].lastError)"))
                }
                if statuses[index].state.isFinal { 
                    throw SofaError(.unexpectedError, "replication \(statuses[index].id) ended \(statuses[index].state.rawValue)"
                                    + (statuses[index].lastError.isEmpty ? "" : ": \(statuses[index].lastError)"))
                }
                statuses[index] = try await Self.nextStatus(client, statuses[index].id, after: statuses[index].version,
                                                            wait: min(remaining, .seconds(10)), patience: remaining)
            }
        }
        return statuses
    }

    /// Stops every replication of the handle.
    public func stop() async throws(SofaError) {
        for id in ids { try await client.stopReplication(id) }
    }
}
