import SofaClient
internal import SofaCore
internal import SofaBus

/// One SDK connection per gateway, shared by every replication that uses it (a `SofaClient`
/// takes concurrent calls). ZeroMQ reconnects a connection by itself when its peer comes back.
actor Connections: PeerProvider {
    private let localGateway: String
    private var clients: [String: SofaClient] = [:]
    /// Long enough for a long-polled changes read (`Replication.longPollMs`) plus a margin.
    static let callTimeout: Duration = .seconds(45)
    static let connectTimeout: Duration = .seconds(5)

    init(localGateway: String) {
        self.localGateway = localGateway
    }

    func database(_ endpoint: ReplicationEndpoint) async throws(SofaError) -> Database {
        let gateway = endpoint.gateway ?? localGateway
        if let client = clients[gateway] { return client.database(endpoint.database) }
        // As the cluster (its own key): this cluster's gateway, or another that shares the key.
        let cluster = Curve.cluster
        let client = try await SofaClient.connect(gateway, serverKey: cluster?.publicKey, clientSecretKey: cluster?.secretKey,
                                                  timeout: Self.callTimeout, connectTimeout: Self.connectTimeout)
        if let raced = clients[gateway] {
            client.close()
            return raced.database(endpoint.database)
        }
        clients[gateway] = client
        return client.database(endpoint.database)
    }

    /// A database of `endpoint`'s cluster, in the replicated collection.
    func peer(_ endpoint: ReplicationEndpoint, collection: String) async throws(SofaError) -> any ReplicationPeer {
        ClusterPeer(try await database(endpoint), collection: collection)
    }

    func closeAll() {
        for client in clients.values { client.close() }
        clients.removeAll()
    }
}
