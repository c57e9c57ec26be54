internal import SofaBus
internal import SofaServer
internal import SofaCore
internal import SofaWire

// Replications and who may run them. Server admins may do anything. Another signed-in user may
// start a replication whose databases are all this cluster's and of which they are a member
// (read the source, write the target: both are a member's rights), or whose other side's gateway
// is in `SOFA_REPLICATION_PEERS` (outbound connections are a permission); they see and stop
// only the replications whose local databases they are a member of. The rights are checked when
// the replication is started, listed or stopped; the replicator runs it as the cluster.

extension GatewayService {
    func replicationRequest(_ request: Request, principal: Principal?, timeout: Duration) async -> Response {
        guard let principal else { return .failure(request.id, AccessRules.notSignedIn(request.operation.kind)) }
        if principal.isServerAdmin { return await replicator.send(request, timeout: timeout) }
        switch request.operation {
        case .startReplication(let spec):
            for side in [spec.source, spec.target] {
                if let refusal = await mayUse(side, principal) { return .failure(request.id, refusal) }
            }
            return await replicator.send(request, timeout: timeout)  // audited by `handle`, as an admin's
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
