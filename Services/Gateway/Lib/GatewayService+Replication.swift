internal import SofaBus
internal import SofaServer
internal import SofaCore
internal import SofaWire

// Replications and who may run them. Server admins may do anything. Another signed-in user may
// start a replication whose databases are all this cluster's and of which they are a member
// (read the source, write the target: both are a member's rights), or whose other side's gateway
// is in `SOFA_REPLICATION_PEERS` (outbound connections are a permission); they see and stop
// only the replications whose local databases they are a member of. The rights are checked when
// the replication is started, listed or stopped, and the replicator runs it as its user (the
// spec's `owner`), so that every read and write it makes is checked as that user's too.
//
// `_replicator` documents hold credentials for other clusters: the replicator (the cluster's own
// key) reads them as stored; everyone else reads them without (`ReplicationDocument`), and a
// user's document runs as that user (its `owner` is set on write).

extension GatewayService {
    func replicationRequest(_ request: Request, principal: Principal?, timeout: Duration) async -> Response {
        guard let principal else { return .failure(request.id, AccessRules.notSignedIn(request.operation.kind)) }
        if principal.isServerAdmin { return await replicator.send(request, timeout: timeout) }
        switch request.operation {
        case .startReplication(var spec):
            for side in [spec.source, spec.target] {
                if let refusal = await mayUse(side, principal) { return .failure(request.id, refusal) }
            }
            // It runs as its user: every call it makes is checked against that user's rights.
            spec.owner = principal.name
            var started = request
            started.operation = .startReplication(spec)
            return await replicator.send(started, timeout: timeout)  // audited by `handle`, as an admin's
        case .listReplications(let id, _, _):
            let response = await replicator.send(request, timeout: timeout)
            guard case .success(.replications(let all)) = response.outcome else { return response }
            var visible: [ReplicationStatus] = []
            var refusal: SofaError?
            for status in all {
                let source = await mayUse(status.source, principal), target = await mayUse(status.target, principal)
                if let denied = source ?? target { refusal = denied } else { visible.append(status) }
            }
            // One replication asked for by its ID and not the user's: say why, not "none".
            if !id.isEmpty, visible.isEmpty, let refusal { return .failure(request.id, refusal) }
            return .ok(request.id, .replications(visible))
        case .stopReplication(let id):
            let listed = await replicator.send(Request(operation: .listReplications(id: id)), timeout: timeout)
            guard case .success(.replications(let found)) = listed.outcome, let status = found.first else { return listed }
            for side in [status.source, status.target] {
                if let refusal = await mayUse(side, principal) { return .failure(request.id, refusal) }
            }
            return await replicator.send(request, timeout: timeout)
        default:
            return .failure(request.id, SofaError(.invalidParameter, "\(request.operation.name) is not a replication request"))
        }
    }

    /// nil when `principal` may use one side of a replication: a database of this cluster they
    /// are a member of, or another cluster's allowed by `SOFA_REPLICATION_PEERS`.
    private func mayUse(_ side: String, _ principal: Principal) async -> SofaError? {
        guard let endpoint = ReplicationEndpoint.tryParse(side) else { return nil }  // the replicator names what is wrong
        if let gateway = endpoint.gateway {
            return replicationPeers.contains(gateway) ? nil
                : .forbidden("only server admins may replicate with \(gateway): it is not among this cluster's "
                    + "allowed peers (SOFA_REPLICATION_PEERS)")
        }
        let security: SecurityObject
        do { security = try await securityObject(endpoint.database) } catch { return error }
        guard security.access(of: principal) >= .member else {
            return .forbidden("user '\(principal.name)' may not access database '\(endpoint.database)': not a member "
                              + "(its security object)")
        }
        return nil
    }
}

extension GatewayService {
    /// A request on `_replicator` from anyone but the cluster's own services: a user's write is
    /// stamped with its owner; what is read comes back without stored credentials.
    func replicatorDocumentsRequest(_ request: Request, principal: Principal?) async -> Response {
        var request = request
        if let principal, !principal.isServerAdmin {
            // Every way a user writes a document (one, a bulk, a revision with its history) runs
            // the replication as that user: an owner written in the body is replaced.
            func owned(_ body: [UInt8]) -> [UInt8] {
                guard var object = JSON.tryParse(body)?.objectValue else { return body }
                object["owner"] = .string(principal.name)
                return JSON.object(object).compactBytes()
            }
            switch request.operation {
            case .putDocument(let id, let rev, let body, let deleted):
                request.operation = .putDocument(id: id, rev: rev, body: owned(body), deleted: deleted)
            case .insertRevision(var insert):
                insert.body = owned(insert.body)
                request.operation = .insertRevision(insert)
            case .bulkWrite(let items):
                request.operation = .bulkWrite(items.map { item in
                    switch item {
                    case .put(let id, let rev, let body, let deleted): return .put(id: id, rev: rev, body: owned(body), deleted: deleted)
                    case .insert(var insert):
                        insert.body = owned(insert.body)
                        return .insert(insert)
                    }
                })
            default: break
            }
        }
        // A user who is not a server admin sees only their own documents (where the database's
        // security object lets them in at all).
        let isOwn: ([UInt8]) -> Bool = { body in
            guard let principal, !principal.isServerAdmin else { return true }
            return JSON.tryParse(body)?["owner"]?.stringValue == principal.name
        }
        var response = await route(request, principal: principal)
        func clean(_ document: StoredDocument) -> StoredDocument {
            var document = document
            document.body = ReplicationDocument.withoutCredentials(document.body)
            return document
        }
        switch response.outcome {
        case .success(.document(let document)):
            response.outcome = isOwn(document.body) ? .success(.document(clean(document)))
                : .failure(.forbidden("only server admins may read another user's replication documents"))
        case .success(.documents(let documents)):
            response.outcome = .success(.documents(documents.filter { isOwn($0.body) }.map(clean)))
        case .success(.changes(var batch)):
            // Bodies are needed to tell whose a change is; without them, only admins list changes.
            if let principal, !principal.isServerAdmin, !batch.changes.isEmpty, batch.changes.allSatisfy({ $0.body.isEmpty }) {
                batch.changes = []
            }
            batch.changes = batch.changes.filter { $0.body.isEmpty || isOwn($0.body) }.map { change in
                var change = change
                change.body = ReplicationDocument.withoutCredentials(change.body)
                return change
            }
            response.outcome = .success(.changes(batch))
        default: break
        }
        return response
    }
}
