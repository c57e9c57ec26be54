public import SofaClient
internal import SofaFiles
public import SofaCore

/// How a tool reaches a cluster's gateway: where, the public key it pins, whom it signs in as,
/// and — for a cluster the tool started itself — the cluster's secret key, with which a raw
/// socket of a benchmark speaks as one of the cluster's own services.
public struct ClusterAccess: Sendable {
    public var endpoint: String
    public var serverKey: String?
    public var credentials: SofaClient.Credentials?
    public var clusterSecretKey: String?

    public init(endpoint: String, serverKey: String?, credentials: SofaClient.Credentials?, clusterSecretKey: String? = nil) {
        self.endpoint = endpoint
        self.serverKey = serverKey
        self.credentials = credentials
        self.clusterSecretKey = clusterSecretKey
    }

    /// A client, signed in.
    public func connect(timeout: Duration = .seconds(10), connectTimeout: Duration? = nil) async throws(SofaError) -> SofaClient {
        try await SofaClient.connect(endpoint, serverKey: serverKey, credentials: credentials, timeout: timeout,
                                     connectTimeout: connectTimeout)
    }
}

extension Supervisor {
    /// This cluster's gateway, as its first admin, with the cluster's secret key.
    public var access: ClusterAccess {
        ClusterAccess(endpoint: gatewayEndpoint, serverKey: serverKey, credentials: adminCredentials,
                      clusterSecretKey: serverKey == nil ? nil : ClusterKeyFile.read(in: keys)?.secret)
    }
}

extension GatewayOptions {
    /// The gateway of `--gateway`, with the key and user the options name (or the local cluster's).
    public var access: ClusterAccess {
        let (key, credentials) = identity
        return ClusterAccess(endpoint: gateway, serverKey: key, credentials: credentials,
                             clusterSecretKey: Self.localClusterKeys?.secret)
    }
}
