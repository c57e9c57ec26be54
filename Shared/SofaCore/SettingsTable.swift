/// Every setting a Sofa service reads, and which service reads which: the one table that the
/// services read through (`Settings` made for a service refuses a setting its row does not list),
/// that the supervisor of `sofa up` hands out by, and that the deploy files are checked against.
///
/// A setting says one thing. `…_ENDPOINT` is where a service listens (only that service reads
/// it, e.g. `tcp://*:7421`); `…_URL` is where another service reaches it (e.g.
/// `tcp://storage:7421`). The raw value is the variable's name without `SOFA_` (and the flag's
/// name in capitals: `--gateway-url` is `GATEWAY_URL`).
public enum Setting: String, CaseIterable, Sendable {
    // Where a service listens.
    case gatewayEndpoint = "GATEWAY_ENDPOINT"
    case storageEndpoint = "STORAGE_ENDPOINT"
    case blobEndpoint = "BLOB_ENDPOINT"
    case replicatorEndpoint = "REPLICATOR_ENDPOINT"
    /// The gateway's broker socket, which query workers connect to.
    case brokerEndpoint = "BROKER_ENDPOINT"
    /// Where storage publishes commit notices.
    case changesEndpoint = "CHANGES_ENDPOINT"
    // Where another service is reached.
    case gatewayURL = "GATEWAY_URL"
    case storageURL = "STORAGE_URL"
    case blobURL = "BLOB_URL"
    case replicatorURL = "REPLICATOR_URL"
    case brokerURL = "BROKER_URL"
    case changesURL = "CHANGES_URL"
    // The rest.
    case dataDir = "DATA_DIR"
    case logLevel = "LOG_LEVEL"
    case instance = "INSTANCE"
    /// Set by the supervisor of `sofa up`: a child stops when that process is gone.
    case supervisorPID = "SUPERVISOR_PID"
    case heartbeatMs = "HEARTBEAT_MS"
    case maxRequestBytes = "MAX_REQUEST_BYTES"
    case maxBulkItems = "MAX_BULK_ITEMS"
    case maxTransactionItems = "MAX_TRANSACTION_ITEMS"
    case commitMarginMs = "COMMIT_MARGIN_MS"
    case maxRevTreeDepth = "MAX_REV_TREE_DEPTH"
    case queryClientShare = "QUERY_CLIENT_SHARE"
    case maxQueryMs = "MAX_QUERY_MS"
    case clientReplyBytes = "CLIENT_REPLY_BYTES"
    case totalReplyBytes = "TOTAL_REPLY_BYTES"
    case clientInFlight = "CLIENT_IN_FLIGHT"
    case clientInFlightBytes = "CLIENT_IN_FLIGHT_BYTES"
    case clientWaitingBytes = "CLIENT_WAITING_BYTES"
    case blobIdleMs = "BLOB_IDLE_MS"
    /// The largest document body storage takes (CouchDB's `max_document_size`).
    case maxDocumentBytes = "MAX_DOCUMENT_BYTES"
    /// The largest blob sofa-blob takes.
    case maxBlobBytes = "MAX_BLOB_BYTES"
    /// Other clusters' gateways (comma-separated `tcp://host:port`) that users who are not server
    /// admins may replicate with (server admins may replicate with any).
    case replicationPeers = "REPLICATION_PEERS"
    /// The cluster's secrets folder (its CURVE key pair, the server admins): every service reads
    /// it; `sofa up` uses `<data>/keys`.
    case keysDir = "KEYS_DIR"
    /// `off` turns CURVE off on every TCP socket: for a benchmark's comparison only.
    case curve = "CURVE"
    /// The first server admin of a new secrets folder (else `admin` with a random password).
    case adminUser = "ADMIN_USER"
    case adminPassword = "ADMIN_PASSWORD"
    /// The most client connections the gateway (and sofa-http) hold at once; more are refused.
    case maxConnections = "MAX_CONNECTIONS"
    /// Where sofa-http serves CouchDB's HTTP API: `HOST:PORT` (`sofa up`: 127.0.0.1:5984).
    case httpAddress = "HTTP_ADDRESS"
    /// A PEM certificate (chain) and its private key: sofa-http serves HTTPS with them.
    case httpTLSCert = "HTTP_TLS_CERT"
    case httpTLSKey = "HTTP_TLS_KEY"
    /// The origins browsers may call the HTTP API from (comma-separated, or `*`); none by default.
    case corsOrigins = "CORS_ORIGINS"
    /// Read by the command-line tools, not by a service: how long a connection to the gateway
    /// may take before a command fails ("is sofa up running?").
    case connectTimeoutMs = "CONNECT_TIMEOUT_MS"
    /// Read by the command-line tools: the cluster's public key they pin (else their own
    /// cluster's, from the secrets folder), and the user they sign in as (else the local admin).
    case serverKey = "SERVER_KEY"
    case user = "USER"
    case password = "PASSWORD"

    /// The environment variable: `SOFA_` and the raw value.
    public var variable: String { "SOFA_\(rawValue)" }

    /// The settings only the command-line tools (`sofa`, `sofa-bench`) read; a service reads none.
    public static let toolSettings: [Setting] = [.connectTimeoutMs, .serverKey, .user, .password]

    /// For a `…_URL` setting, the `…_ENDPOINT` it reaches; nil for any other setting.
    public var reaches: Setting? {
        switch self {
        case .gatewayURL: .gatewayEndpoint
        case .storageURL: .storageEndpoint
        case .blobURL: .blobEndpoint
        case .replicatorURL: .replicatorEndpoint
        case .brokerURL: .brokerEndpoint
        case .changesURL: .changesEndpoint
        default: nil
        }
    }

    /// For a `…_ENDPOINT` setting, the `…_URL` that reaches it; nil for any other setting.
    public var reachedAt: Setting? { Setting.allCases.first { $0.reaches == self } }
}

/// The Sofa services (one executable each, `sofa-<raw value>`) and the settings each reads.
public enum ServiceRole: String, CaseIterable, Sendable {
    case storage, blob, replicator, gateway, query, http

    /// What a deployment gives this service: where it listens, where it reaches the others,
    /// its data and its log level. docker-compose.yml gives exactly these.
    public var deployed: [Setting] {
        switch self {
        case .storage: [.dataDir, .keysDir, .storageEndpoint, .changesEndpoint, .blobURL, .logLevel]
        case .blob: [.dataDir, .keysDir, .blobEndpoint, .logLevel]
        case .replicator: [.keysDir, .replicatorEndpoint, .gatewayURL, .logLevel]
        case .gateway: [.dataDir, .keysDir, .gatewayEndpoint, .brokerEndpoint, .storageURL, .blobURL, .replicatorURL,
                        .changesURL, .logLevel]
        case .query: [.dataDir, .keysDir, .brokerURL, .logLevel]
        case .http: [.dataDir, .keysDir, .httpAddress, .gatewayURL, .logLevel]
        }
    }

    /// What it also reads, each with a default that suits any deployment (limits, timings, names).
    public var tuning: [Setting] {
        let common: [Setting] = [.instance, .supervisorPID, .curve]
        switch self {
        case .storage: return common + [.maxRequestBytes, .maxBulkItems, .maxTransactionItems, .commitMarginMs,
                                        .maxRevTreeDepth, .maxDocumentBytes]
        case .blob: return common + [.maxRequestBytes, .blobIdleMs, .maxBlobBytes]
        case .replicator: return common + [.maxRequestBytes, .httpAddress]
        case .gateway: return common + [.maxRequestBytes, .maxBulkItems, .heartbeatMs, .queryClientShare, .maxQueryMs,
                                        .clientReplyBytes, .totalReplyBytes, .clientInFlight, .clientInFlightBytes,
                                        .clientWaitingBytes, .adminUser, .adminPassword, .replicationPeers, .maxConnections]
        case .query: return common + [.heartbeatMs]
        case .http: return common + [.httpTLSCert, .httpTLSKey, .corsOrigins, .maxRequestBytes, .maxDocumentBytes, .maxConnections]
        }
    }

    /// Every setting the service reads.
    public var reads: Set<Setting> { Set(deployed + tuning) }

    /// The service whose `…_ENDPOINT` setting this is (it listens there); nil for other settings.
    public static func binding(_ endpoint: Setting) -> ServiceRole? {
        switch endpoint {
        case .gatewayEndpoint, .brokerEndpoint: .gateway
        case .storageEndpoint, .changesEndpoint: .storage
        case .blobEndpoint: .blob
        case .replicatorEndpoint: .replicator
        default: nil
        }
    }
}
