internal import SofaQL
internal import Foundation
internal import SofaCore
internal import SofaWire
internal import SofaClient
internal import Logging

/// Persistent replications: documents of the `_replicator` database of the replicator's own
/// cluster, as in CouchDB. A document names a replication:
///
/// ```json
/// {"source": "app", "target": "tcp://10.0.0.2:7420/app", "direction": "push",
///  "continuous": true, "doc_ids": ["a", "b"], "conflicts": "auto"}
/// ```
///
/// The database is created by an administrator (`sofa db create _replicator`); the replicator
/// looks for it every second until it exists. Creating a document starts its replication,
/// changing it restarts it, deleting it stops it. The replicator keeps the
/// status of each of its replications in the document's `status` array (`id`, `state`,
/// `docs_checked`, `docs_written`, `last_error`, `checkpoint`). At launch it starts every
/// document's replication again, except those whose status says they all completed (one-shot)
/// or failed (those are listed with their last status): the checkpoints make a restarted
/// replication resume where it stopped. Replications started by clients are documents here too
/// (see `ClientReplications`).
actor PersistentReplications {
    static let database = "_replicator"

    private let service: ReplicatorService
    private let logger: Logger
    /// Per document: the spec (its body without `status`) as canonical JSON, and the
    /// replications started for it.
    private var known: [String: (spec: String, ids: [String], writer: Task<Void, Never>?)] = [:]
    /// Set as the replicator shuts down: no status is written any more.
    private var closing = false

    /// Where this cluster's HTTP API listens (`host:port`), when known: a side written as a URL
    /// of it names a database here.
    private let httpAddress: String?

    init(service: ReplicatorService, logger: Logger, httpAddress: String? = nil) {
        self.service = service
        self.logger = logger
        self.httpAddress = httpAddress
    }

    /// Follows the `_replicator` database until cancelled, reconnecting with backoff.
    func run() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await follow()
            } catch {
                if Task.isCancelled { break }
                // No `_replicator` yet: nothing was recorded.
                if error.is(.notFound) { await service.registry.markLoaded() }
                failures += 1
                // Said once; then, while it lasts, at debug level every 20 attempts (about 20 s).
                if failures == 1 {
                    logger.info("waiting for the _replicator database", metadata: ["error": "\(error.message)"])
                } else if failures % 20 == 0 {
                    logger.debug("waiting for the _replicator database", metadata: ["error": "\(error.message)"])
                }
                // Until `_replicator` is created (by an administrator, as in CouchDB), look again
                // every second; a gateway that does not answer is retried with a growing backoff.
                let backoff = error.is(.notFound) ? 1_000 : min(5_000, 100 << min(failures, 6))
                do { try await Task.sleep(for: .milliseconds(backoff)) } catch { break }
            }
        }
        stopWriting()
    }

    /// Stops the status writers for good, as the replicator shuts down.
    func stopWriting() {
        closing = true
        for entry in known.values { entry.writer?.cancel() }
    }

    private func follow() async throws(SofaError) {
        let db = try await service.connections.database(ReplicationEndpoint(gateway: nil, database: Self.database))
        // What is read before the registry is first loaded was there when the replicator started
        // (a launch); a `_replicator` created later (by the first client replication, say) holds
        // only what was written since, which the running replicator already knows of.
        let launch = await !service.registry.loaded
        var since: UInt64 = 0
        var first = true
        while !Task.isCancelled {
            let batch = try await db.changes(ChangesQuery(since: since, limit: 200, includeBodies: true, includeDeleted: true,
                                                          waitMs: first ? 0 : 20_000))
            for change in batch.changes { await handle(change, db, atLaunch: first && launch) }
            since = max(since, batch.changes.map(\.sequence).max() ?? since)
            if batch.changes.isEmpty && first {
                first = false
                await service.registry.markLoaded()
            }
        }
    }

    private func handle(_ change: Change, _ db: Database, atLaunch: Bool) async {
        let docID = change.id
        let client = ClientReplications.isClientDocument(docID)
        if client && (change.deleted || change.rev.isEmpty) {
            known[docID] = nil
            await service.clientRecords.deleted(docID)
            return
        }
        // After launch, the records of client replications are written by `ClientReplications`
        // alone, as their replications start and end.
        if client && !atLaunch { return }
        // So are those of replications this replicator started itself, even when read as at
        // launch: `_replicator` is read first after a client's start created it when the
        // follower's first attempts failed as the cluster came up (nothing marked the registry
        // loaded). Started again here, a one-shot that just completed would run anew, kept with
        // no record of its own (its predecessor's may be deleted already), and the deletion read
        // next would stop the run its client waits on. A run number is never forgotten.
        if client, await service.registry.run(of: ClientReplications.replicationID(docID)) != nil { return }
        if change.deleted || change.rev.isEmpty {
            await stop(docID)
            return
        }
        guard case .object(var body)? = JSON.tryParse(change.body) else { return }
        let status = body["status"]
        for member in Self.statusMembers { body[member] = nil }
        let specText = JSON.object(body).compactString
        if known[docID]?.spec == specText { return }   // our own status write, or no real change
        await stop(docID)
        if atLaunch, case .array(let legs)? = status, !legs.isEmpty, legs.allSatisfy({ leg in
            guard case .string(let state)? = leg.objectValue?["state"] else { return false }
            return state == "completed" || state == "failed"
        }) {
            known[docID] = (specText, [], nil)
            if let spec = try? Self.spec(body, docID, httpAddress: httpAddress), let plans = try? service.plan(spec) {
                await restore(plans, legs)
            }
            if client, legs.allSatisfy({ $0.objectValue?["state"] == "completed" }) {
                // Completed just before the replicator stopped, and not yet forgotten.
                await service.clientRecords.forgetCompleted(docID)
            }
            return
        }
        do throws(SofaError) {
            let spec = try Self.spec(body, docID, httpAddress: httpAddress)
            if body["create_target"]?.boolValue == true { try await createTarget(spec) }
            let ids = try await service.start(spec).map(\.id)
            if client {
                // Resumed; its record is kept by `ClientReplications` from now on.
                known[docID] = (specText, ids, nil)
                await service.clientRecords.adopt(ids)
            } else {
                known[docID] = (specText, ids, Task { await self.writeStatus(docID, ids, specText, db) })
            }
            logger.info("persistent replication started", metadata: ["doc": "\(docID)", "replications": "\(ids.count)"])
        } catch {
            logger.warning("invalid persistent replication", metadata: ["doc": "\(docID)", "error": "\(error.message)"])
            known[docID] = (specText, [], nil)
            var failed = body
            failed["status"] = .array([.object(JSONObject([("state", "failed"), ("last_error", .string(error.message))]))])
            _ = try? await db.put(id: docID, body: Array(JSON.object(failed).compactString.utf8), rev: change.rev)
        }
    }

    /// Lists replications that ended before the replicator last stopped with their last status.
    private func restore(_ plans: [ReplicationPlan], _ legs: [JSON]) async {
        for plan in plans {
            guard let leg = legs.compactMap(\.objectValue).first(where: { $0["id"] == .string(plan.id) }),
                  case .string(let text)? = leg["state"], let state = ReplicationStatus.State(rawValue: text) else { continue }
            func count(_ key: String) -> UInt64 {
                if case .int(let value)? = leg[key] { return UInt64(clamping: value) }
                return 0
            }
            await service.registry.restore(ReplicationStatus(
                id: plan.id, source: plan.source.description, target: plan.target.description, continuous: plan.continuous,
                state: state, docsChecked: count("docs_checked"), docsWritten: count("docs_written"),
                lastError: leg["last_error"]?.stringValue ?? "", checkpoint: count("checkpoint"), docIDs: plan.docIDs,
                filter: plan.filter, conflicts: plan.conflicts, collection: plan.collection,
                revisionsSent: count("revisions_sent"), designFilter: plan.designFilter,
                docWriteFailures: count("doc_write_failures")))
        }
    }

    private func stop(_ docID: String) async {
        guard let entry = known.removeValue(forKey: docID) else { return }
        entry.writer?.cancel()
        for id in entry.ids { _ = try? await service.registry.stop(id) }
    }

    static func spec(_ body: JSONObject, _ docID: String, httpAddress: String? = nil) throws(SofaError) -> ReplicationSpec {
        func string(_ key: String) throws(SofaError) -> String {
            switch body[key] {
            case nil, .null?: return ""
            case .string(let value)?: return value
            default: throw SofaError(.invalidParameter, "_replicator document '\(docID)': \"\(key)\" must be a string")
            }
        }
        var docIDs: [String] = []
        switch body["doc_ids"] {
        case nil, .null?: break
        case .array(let items)?:
            for item in items {
                guard case .string(let id) = item else {
                    throw SofaError(.invalidParameter, "_replicator document '\(docID)': \"doc_ids\" must be strings")
                }
                docIDs.append(id)
            }
        default: throw SofaError(.invalidParameter, "_replicator document '\(docID)': \"doc_ids\" must be an array")
        }
        var continuous = false
        switch body["continuous"] {
        case nil, .null?: break
        case .bool(let value)?: continuous = value
        default: throw SofaError(.invalidParameter, "_replicator document '\(docID)': \"continuous\" must be a boolean")
        }
        func side(_ key: String) throws(SofaError) -> (endpoint: String, access: RemoteAccess?) {
            if body[key] == nil || body[key] == .null { return ("", nil) }
            guard let side = ReplicationDocument.side(body[key]) else {
                throw SofaError(.invalidParameter, "_replicator document '\(docID)': \"\(key)\" must be a database, a "
                                + "tcp://host:port/db, or {\"url\", \"server_key\", \"auth\": {\"basic\": {\"username\", \"password\"}}}")
            }
            // A URL of this cluster's HTTP API is the database it names (run as the document's owner).
            if let httpAddress, let local = ReplicationDocument.localDatabase(inURL: side.endpoint, httpAddress: httpAddress) {
                return (local, nil)
            }
            return side
        }
        let (source, sourceAccess) = try side("source"), (target, targetAccess) = try side("target")
        // `filter`: CouchDB's "ddoc/name" (a design document's filter, with `query_params`), or
        // Sofa's query condition; `sofa_where` is the condition beside a design filter.
        let (given, condition) = (try string("filter"), try string("sofa_where"))
        let designFilter = ReplicationSpec.isDesignFilter(given) ? given : ""
        var filter = designFilter.isEmpty && !given.isEmpty ? given : condition
        // CouchDB's Mango `selector`, alone (Sofa's own records may give `doc_ids` and a filter together).
        if let selector = body["selector"], selector != .null {
            do { try ReplicationDocument.checkOneWay(body) } catch {
                throw SofaError(.invalidParameter, "_replicator document '\(docID)': \(error.message)")
            }
            guard selector.objectValue != nil else {
                throw SofaError(.invalidParameter, "_replicator document '\(docID)': \"selector\" must be an object")
            }
            filter = ReplicationSpec.jsonFilter(try Mango.condition(selector, at: nil))
        }
        var queryParams: JSONObject = [:]
        switch body["query_params"] {
        case nil, .null?: break
        case .object(let params)?: queryParams = params
        default: throw SofaError(.invalidParameter, "_replicator document '\(docID)': \"query_params\" must be an object")
        }
        return ReplicationSpec(source: source, target: target,
                               direction: try ReplicationDirection.parse(try string("direction")), continuous: continuous,
                               docIDs: docIDs, filter: filter,
                               conflicts: try ConflictPolicy.parse(try string("conflicts")),
                               collection: try string("collection"), owner: try string("owner"),
                               sourceAccess: sourceAccess, targetAccess: targetAccess,
                               designFilter: designFilter, queryParams: queryParams,
                               since: try since(body["since_seq"], docID))
    }

    /// `create_target`: the target database is made when it does not exist, as the document's
    /// owner (the gateway checks that the owner may; a server admin's document has none and runs
    /// as the cluster). A refusal fails the replication; any other trouble is left to it (it
    /// retries, or says what is wrong).
    private func createTarget(_ spec: ReplicationSpec) async throws(SofaError) {
        let target = try ReplicationEndpoint.parse(spec.target)
        guard let database = try? await service.connections.database(target, owner: spec.owner, access: spec.targetAccess) else { return }
        do {
            _ = try await database.info()
            return
        } catch {
            guard error.is(.notFound) else { return }
        }
        do {
            _ = try await database.client.createDatabase(target.database)
        } catch where error.is(.forbidden) || error.is(.unauthorized) || error.is(.badDatabaseName) {
            throw error
        } catch {}
    }

    /// The document's `since_seq`, its errors naming the document.
    private static func since(_ value: JSON?, _ docID: String) throws(SofaError) -> UInt64 {
        do { return try ReplicationSpec.sinceSequence(value) } catch {
            throw SofaError(.invalidParameter, "_replicator document '\(docID)': \(error.message)")
        }
    }

    /// Keeps the document's `status` up to date while its replications run: written after each
    /// change of their statuses, at most every `statusInterval`, and a last time when they end.
    private func writeStatus(_ docID: String, _ ids: [String], _ specText: String, _ db: Database) async {
        var versions = Dictionary(uniqueKeysWithValues: ids.map { ($0, UInt64(0)) })
        while !Task.isCancelled {
            await service.registry.waitForChange(versions, timeout: .seconds(30))
            if Task.isCancelled { return }
            var statuses: [ReplicationStatus] = []
            for id in ids { if let status = await service.registry.status(id) { statuses.append(status) } }
            for status in statuses { versions[status.id] = status.version }
            if closing { return }
            do {
                let doc = try await db.get(id: docID)
                guard case .object(var body)? = JSON.tryParse(doc.body) else { return }
                for member in Self.statusMembers { body[member] = nil }
                guard JSON.object(body).compactString == specText else { return }  // changed: restarted elsewhere
                body["status"] = .array(statuses.map(Self.statusJSON))
                for (member, value) in Self.couchState(statuses) { body[member] = value }
                _ = try await db.put(id: docID, body: Array(JSON.object(body).compactString.utf8), rev: doc.rev)
            } catch {
                if error.is(.notFound) { return }
                // A concurrent edit (conflict) or a gateway hiccup: the next change writes again.
            }
            if statuses.allSatisfy({ $0.state.isFinal }) { return }
            // Coalesce: a busy replication changes its status every batch.
            do { try await Task.sleep(for: Self.statusInterval) } catch { return }
        }
    }

    static let statusInterval: Duration = .milliseconds(250)

    /// What the replicator writes into a document (its `status`, and CouchDB's `_replication_*`
    /// members): not part of what the document asks for.
    static let statusMembers = ["status"] + ReplicationDocument.stateMembers.sorted()

    /// CouchDB's members for a replication that ended (what its clients wait for: `completed` or
    /// `failed`, when, why, and its counts); none while it runs.
    static func couchState(_ statuses: [ReplicationStatus]) -> [(String, JSON)] {
        guard !statuses.isEmpty, statuses.allSatisfy({ $0.state.isFinal }) else { return [] }
        let failed = statuses.first { $0.state == .failed }
        var members: [(String, JSON)] = [
            ("_replication_state", failed == nil ? "completed" : "failed"),
            ("_replication_state_time", .string(Date().formatted(.iso8601))),
            ("_replication_id", .string(statuses[0].id)),
            ("_replication_stats", .object(JSONObject([
                ("revisions_checked", .int(Int64(clamping: statuses.reduce(0) { $0 + $1.docsChecked }))),
                ("missing_revisions_found", .int(Int64(clamping: statuses.reduce(0) { $0 + $1.revisionsSent }))),
                ("docs_read", .int(Int64(clamping: statuses.reduce(0) { $0 + $1.docsWritten + $1.docWriteFailures }))),
                ("docs_written", .int(Int64(clamping: statuses.reduce(0) { $0 + $1.docsWritten }))),
                ("doc_write_failures", .int(Int64(clamping: statuses.reduce(0) { $0 + $1.docWriteFailures }))),
            ]))),
        ]
        if let failed { members.append(("_replication_state_reason", .string(failed.lastError))) }
        return members
    }

    static func statusJSON(_ status: ReplicationStatus) -> JSON {
        .object(JSONObject([
            ("id", .string(status.id)), ("state", .string(status.state.rawValue)),
            ("docs_checked", .int(Int64(clamping: status.docsChecked))),
            ("docs_written", .int(Int64(clamping: status.docsWritten))),
            ("revisions_sent", .int(Int64(clamping: status.revisionsSent))),
            ("doc_write_failures", .int(Int64(clamping: status.docWriteFailures))),
            ("last_error", .string(status.lastError)), ("checkpoint", .int(Int64(clamping: status.checkpoint))),
        ]))
    }
}
