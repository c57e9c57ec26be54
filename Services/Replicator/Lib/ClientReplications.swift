internal import SofaCore
internal import SofaWire
internal import SofaClient

/// Replications started by a client (SDK or CLI) are recorded as documents of `_replicator`, one
/// per direction, so that a restarted replicator starts them again (from their checkpoint) as it
/// does the documents an administrator writes:
///
/// ```json
/// _id "client-<replication id>":
/// {"source": "app", "target": "tcp://10.0.0.2:7420/app", "direction": "push", "continuous": true,
///  "doc_ids": [], "filter": "", "conflicts": "auto", "collection": "", "started_by": "client",
///  "status": [{"id": "<replication id>", "state": "running", ...}]}
/// ```
///
/// The replicator creates `_replicator` for the first one. The document is deleted when the
/// replication is stopped, or when a one-shot one completes; a failed one keeps its document (and
/// its status with the reason) until it is stopped. Deleting the document stops the replication.
///
/// This actor alone writes these records once the replicator has read `_replicator` at launch
/// (the follower, `PersistentReplications`, only starts them at launch and reports deletions), and
/// it handles one replication ID at a time (`lock`): a start (registering a new run and writing its
/// record), the end of a run (deleting the record), a stop and a deletion seen by the follower
/// never interleave. Each record belongs to one run (see `ReplicationRegistry`), so what ends an
/// earlier run (its completion, its record's deletion) never touches a later run of the same ID.
actor ClientReplications {
    static let prefix = "client-"

    static func documentID(_ replicationID: String) -> String { prefix + replicationID }
    static func isClientDocument(_ docID: String) -> Bool { docID.hasPrefix(prefix) }
    static func replicationID(_ docID: String) -> String { String(docID.dropFirst(prefix.count)) }

    /// The `_replicator` document of one started replication (one direction), without status;
    /// with its plan, whom it runs as and how it reaches another cluster's side (the stored
    /// credentials, which only the replicator reads back).
    static func document(_ status: ReplicationStatus, _ plan: ReplicationPlan? = nil) -> JSONObject {
        func side(_ endpoint: String, _ access: RemoteAccess?) -> JSON {
            guard let access else { return .string(endpoint) }
            return ["url": .string(endpoint), "server_key": .string(access.serverKey),
                    "auth": ["basic": ["username": .string(access.user), "password": .string(access.password)]]]
        }
        var document = JSONObject([
            ("source", side(status.source, plan?.sourceAccess)), ("target", side(status.target, plan?.targetAccess)),
            ("direction", "push"),
            ("continuous", .bool(status.continuous)), ("doc_ids", .array(status.docIDs.map(JSON.string))),
            ("filter", .string(status.filter)), ("conflicts", .string(status.conflicts.rawValue)),
            ("collection", .string(status.collection)), ("started_by", "client"),
        ])
        if let owner = plan?.owner, !owner.isEmpty { document["owner"] = .string(owner) }
        // CouchDB's `filter` names a design document's filter ("ddoc/name"); Sofa's query
        // condition is `filter` too unless it is beside one, or would read as one: then `sofa_where`.
        if let plan, !plan.designFilter.isEmpty {
            document["filter"] = .string(plan.designFilter)
            document["query_params"] = .object(plan.queryParams)
            if !status.filter.isEmpty { document["sofa_where"] = .string(status.filter) }
        } else if ReplicationSpec.isDesignFilter(status.filter) {
            document["filter"] = ""
            document["sofa_where"] = .string(status.filter)
        }
        return document
    }

    private let connections: Connections
    private let registry: ReplicationRegistry
    /// The runs whose record this replicator keeps, by replication ID, with their status writer.
    private var records: [String: (run: UInt64, writer: Task<Void, Never>)] = [:]
    private var locked: Set<String> = []
    private var lockWaiters: [String: [CheckedContinuation<Void, Never>]] = [:]
    /// Set as the replicator shuts down: records are no longer written nor deleted.
    private var closing = false

    init(connections: Connections, registry: ReplicationRegistry) {
        self.connections = connections
        self.registry = registry
    }

    // MARK: One replication ID at a time

    /// Waits until no one else works on any of `ids`, and holds them until `unlock`.
    func lock(_ ids: [String]) async {
        for id in Set(ids).sorted() {   // always in the same order: two callers cannot deadlock
            while locked.contains(id) {
                await withCheckedContinuation { lockWaiters[id, default: []].append($0) }
            }
            locked.insert(id)
        }
    }

    func unlock(_ ids: [String]) {
        for id in Set(ids) {
            locked.remove(id)
            if var waiting = lockWaiters[id], !waiting.isEmpty {
                waiting.removeFirst().resume()
                lockWaiters[id] = waiting.isEmpty ? nil : waiting
            }
        }
    }

    // MARK: Called with the IDs locked

    /// Records the current run of each of `ids` (just started by a client), unless it is recorded
    /// already (started again while it runs) or has ended already (stopped, or a quick one-shot
    /// that completed: nothing to resume). A record left by an earlier run (a failed one, kept
    /// until stopped) is replaced.
    func record(_ plans: [ReplicationPlan]) async throws(SofaError) {
        for plan in plans {
            let id = plan.id
            guard let run = await registry.run(of: id), records[id]?.run != run,
                  let status = await registry.status(id), status.state != .stopped, status.state != .completed else { continue }
            let db = try await database()
            let body = Array(JSON.object(Self.document(status, plan)).compactString.utf8)
            do {
                try await put(db, id, body)
            } catch where error.is(.notFound) {
                do {
                    _ = try await db.client.createDatabase(PersistentReplications.database)
                } catch where error.is(.databaseExists) {}
                try await put(db, id, body)
            }
            keep(id, run)
        }
    }

    /// Keeps the records of the current runs of `ids`, started at launch from their documents.
    func adopt(_ ids: [String]) async {
        await lock(ids)
        defer { unlock(ids) }
        for id in ids {
            guard let run = await registry.run(of: id), records[id]?.run != run else { continue }
            keep(id, run)
        }
    }

    private func keep(_ id: String, _ run: UInt64) {
        records[id]?.writer.cancel()
        records[id] = (run, Task { await self.follow(id, run) })
    }

    /// Writes `body` as the record of `id`, over the record of an earlier run if there is one.
    private func put(_ db: Database, _ id: String, _ body: [UInt8]) async throws(SofaError) {
        var attempts = 0
        while true {
            do {
                _ = try await db.put(id: Self.documentID(id), body: body)
                return
            } catch where error.is(.conflict) && attempts < 10 {
                attempts += 1
                // An earlier run's record (or a status write of the follower at launch).
                do {
                    let old = try await db.get(id: Self.documentID(id))
                    _ = try await db.put(id: Self.documentID(id), body: body, rev: old.rev)
                    return
                } catch where error.is(.notFound) || error.is(.conflict) {}
            }
        }
    }

    // MARK: Locking by themselves

    /// Stops a replication at a client's request: its record first (a replication stopped but
    /// still recorded would start again with the next replicator).
    func stop(_ id: String) async throws(SofaError) -> ReplicationStatus {
        await lock([id])
        do {
            records.removeValue(forKey: id)?.writer.cancel()
            try await Self.forget(Self.documentID(id), in: try await database())
            let status = try await registry.stop(id)
            unlock([id])
            return status
        } catch {
            unlock([id])
            throw error
        }
    }

    /// The follower saw the record `docID` deleted: if the run it recorded still runs and no later
    /// start recorded it again, the replication is stopped (as deleting any `_replicator`
    /// document stops its replication).
    func deleted(_ docID: String) async {
        let id = Self.replicationID(docID)
        await lock([id])
        defer { unlock([id]) }
        guard let entry = records[id] else { return }   // deleted by this replicator
        do {
            if try await database().get(id: docID).deleted == false { return }   // recorded again since
        } catch where error.is(.notFound) {
        } catch {
            return
        }
        records[id] = nil
        entry.writer.cancel()
        _ = try? await registry.stop(id, run: entry.run)
    }

    /// Deletes the record of a replication that completed before the replicator restarted (it
    /// ended between its completion and the deletion), unless a run of it is recorded since.
    func forgetCompleted(_ docID: String) async {
        let id = Self.replicationID(docID)
        await lock([id])
        defer { unlock([id]) }
        guard records[id] == nil, !closing, let db = try? await database() else { return }
        try? await Self.forget(docID, in: db)
    }

    /// Stops writing records, as the replicator shuts down (its replications stay recorded, to
    /// be resumed by the next one).
    func close() {
        closing = true
        for entry in records.values { entry.writer.cancel() }
    }

    /// Keeps the record of run `run` of `id` up to date: its status written after each change
    /// (at most every `PersistentReplications.statusInterval`), deleted when the run completes or
    /// is stopped, and left with its reason when it fails.
    private func follow(_ id: String, _ run: UInt64) async {
        var version: UInt64 = 0
        while !Task.isCancelled {
            await registry.waitForChange(id, after: version, timeout: .seconds(30))
            if Task.isCancelled { return }
            await lock([id])
            let next = await writeStatus(id, run)
            unlock([id])
            guard let next else { return }
            version = next
            // Coalesce: a busy replication changes its status every batch.
            do { try await Task.sleep(for: PersistentReplications.statusInterval) } catch { return }
        }
    }

    /// One status write of `follow`, with `id` locked; answers the version written, or nil once
    /// there is nothing more to write.
    private func writeStatus(_ id: String, _ run: UInt64) async -> UInt64? {
        // A later run keeps the record now, or it was stopped or deleted meanwhile.
        guard !closing, records[id]?.run == run, await registry.run(of: id) == run,
              let status = await registry.status(id), let db = try? await database() else { return nil }
        let docID = Self.documentID(id)
        if status.state == .completed || status.state == .stopped {
            // A one-shot replication that completed needs no record any more.
            records[id] = nil
            try? await Self.forget(docID, in: db)
            return nil
        }
        do {
            let doc = try await db.get(id: docID)
            guard !doc.deleted else { return nil }   // the follower reports the deletion
            // The record as it is (whom it runs as, its sides' access), with its status replaced.
            var body = (try? doc.json())?.objectValue ?? Self.document(status)
            body["status"] = .array([PersistentReplications.statusJSON(status)])
            _ = try await db.put(id: docID, body: Array(JSON.object(body).compactString.utf8), rev: doc.rev)
        } catch {
            if error.is(.notFound) { return nil }
            // A gateway hiccup: the next change writes again.
        }
        if status.state.isFinal {
            records[id] = nil   // failed: the record stays, with its reason, until stopped
            return nil
        }
        return status.version
    }

    private func database() async throws(SofaError) -> Database {
        try await connections.database(ReplicationEndpoint(gateway: nil, database: PersistentReplications.database))
    }

    /// Deletes `docID` of `_replicator`; a concurrent status write (a conflict) is read again.
    static func forget(_ docID: String, in db: Database) async throws(SofaError) {
        var attempts = 0
        while true {
            do {
                let doc = try await db.get(id: docID)
                if doc.deleted { return }
                _ = try await db.delete(id: docID, rev: doc.rev)
                return
            } catch where error.is(.notFound) {
                return
            } catch where error.is(.conflict) && attempts < 10 {
                attempts += 1
            }
        }
    }
}
