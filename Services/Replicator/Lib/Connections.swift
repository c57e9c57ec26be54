import SofaClient
internal import SofaCore
internal import SofaBus

/// One SDK connection per gateway, shared by every replication that uses it (a `SofaClient`
/// takes concurrent calls). ZeroMQ reconnects a connection by itself when its peer comes back.
actor Connections: PeerProvider {
    private let localGateway: String
    /// By gateway and, for another cluster reached as a user of it, that user's access.
    private var clients: [Key: SofaClient] = [:]

    struct Key: Hashable {
        var gateway: String
        var access: RemoteAccess?
    }
    /// Long enough for a long-polled changes read (`Replication.longPollMs`) plus a margin.
    static let callTimeout: Duration = .seconds(45)
    static let connectTimeout: Duration = .seconds(5)

    init(localGateway: String) {
        self.localGateway = localGateway
    }

    /// A database of `endpoint`'s cluster used as `owner` ("" = the cluster itself), or with
    /// `access` as that user of another cluster with its own key.
    func database(_ endpoint: ReplicationEndpoint, owner: String = "", access: RemoteAccess? = nil) async throws(SofaError) -> Database {
        let key = Key(gateway: endpoint.gateway ?? localGateway, access: access)
        let client: SofaClient
        if let known = clients[key] {
            client = known
        } else {
            let made: SofaClient
            if let access {
                // As that user, pinning that cluster's key (a fresh key of our own).
                made = try await SofaClient.connect(key.gateway, serverKey: access.serverKey,
                                                    credentials: .init(name: access.user, password: access.password),
                                                    timeout: Self.callTimeout, connectTimeout: Self.connectTimeout)
            } else {
                // As the cluster (its own key): this cluster's gateway, or another that shares the key.
                let cluster = Curve.cluster
                made = try await SofaClient.connect(key.gateway, serverKey: cluster?.publicKey, clientSecretKey: cluster?.secretKey,
                                                    timeout: Self.callTimeout, connectTimeout: Self.connectTimeout)
            }
            if let raced = clients[key] {
                made.close()
                client = raced
            } else {
                clients[key] = made
                client = made
            }
        }
        // The cluster's own connection runs each call as the owner, whose permissions the gateway checks.
        let acting = access == nil && !owner.isEmpty ? client.acting(as: owner) : client
        return acting.database(endpoint.database)
    }

    /// A database of `endpoint`'s cluster, in the replicated collection.
    func peer(_ endpoint: ReplicationEndpoint, collection: String, owner: String,
              access: RemoteAccess?) async throws(SofaError) -> any ReplicationPeer {
        ClusterPeer(try await database(endpoint, owner: owner, access: access), collection: collection)
    }

    func closeAll() {
        for client in clients.values { client.close() }
        clients.removeAll()
    }
}
