public import Foundation

/// A process's configuration: `--some-flag VALUE` (or `--some-flag=VALUE`) on the command line,
/// else the environment variable `SOFA_SOME_FLAG`, else the default given at the lookup.
public struct Settings: Sendable {
    private let flags: [String: String]
    private let environment: [String: String]

    public init(arguments: [String] = Array(CommandLine.arguments.dropFirst()),
                environment: [String: String] = ProcessInfo.processInfo.environment) {
        var flags: [String: String] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else { continue }
            let body = argument.dropFirst(2)
            if let equals = body.firstIndex(of: "=") {
                flags[Self.key(body[..<equals])] = String(body[body.index(after: equals)...])
            } else if index < arguments.count, !arguments[index].hasPrefix("--") {
                flags[Self.key(body)] = arguments[index]
                index += 1
            } else {
                flags[Self.key(body)] = "true"
            }
        }
        self.flags = flags
        self.environment = environment
    }

    private static func key(_ flag: Substring) -> String {
        flag.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// `key` is the variable's name without `SOFA_`, e.g. "DATA_DIR" for `--data-dir`/`SOFA_DATA_DIR`.
    public func string(_ key: String, default defaultValue: String) -> String {
        flags[key] ?? environment["SOFA_\(key)"] ?? defaultValue
    }

    public func int(_ key: String, default defaultValue: Int) -> Int {
        Int(string(key, default: "")) ?? defaultValue
    }

    /// Default endpoints: the ports of the docker-compose file, on loopback.
    public static let defaultGateway = "tcp://127.0.0.1:7420"
    public static let defaultStorage = "tcp://127.0.0.1:7421"
    public static let defaultBlob = "tcp://127.0.0.1:7422"
    public static let defaultReplicator = "tcp://127.0.0.1:7423"
    public static let defaultBroker = "tcp://127.0.0.1:7424"
    public static let defaultChanges = "tcp://127.0.0.1:7425"

    public var dataDirectory: String { string("DATA_DIR", default: "./.sofa-data") }
    public var gatewayEndpoint: String { string("GATEWAY_ENDPOINT", default: Self.defaultGateway) }
    public var storageEndpoint: String { string("STORAGE_ENDPOINT", default: Self.defaultStorage) }
    public var blobEndpoint: String { string("BLOB_ENDPOINT", default: Self.defaultBlob) }
    public var replicatorEndpoint: String { string("REPLICATOR_ENDPOINT", default: Self.defaultReplicator) }
    public var brokerEndpoint: String { string("BROKER_ENDPOINT", default: Self.defaultBroker) }
    /// Where storage publishes commit notices (storage binds, the gateway subscribes).
    public var changesEndpoint: String { string("CHANGES_ENDPOINT", default: Self.defaultChanges) }
    public var heartbeatMs: UInt64 { UInt64(max(10, int("HEARTBEAT_MS", default: 500))) }
    public var maxRequestBytes: Int { int("MAX_REQUEST_BYTES", default: BusServer.defaultMaxRequestBytes) }
    /// Items one bulk write may carry (storage refuses a larger one whole, before any work).
    public var maxBulkItems: Int { max(1, int("MAX_BULK_ITEMS", default: 100_000)) }
    /// Items storage commits in one transaction (a longer bulk is committed in several).
    public var maxTransactionItems: Int { max(1, int("MAX_TRANSACTION_ITEMS", default: 10_000)) }
    /// How long before a request's deadline storage stops committing its work.
    public var commitMarginMs: Int { max(0, int("COMMIT_MARGIN_MS", default: 250)) }
    /// The percent of the query workers one client's queries may occupy (at least one worker;
    /// 100: no limit).
    public var queryClientShare: Int { max(1, int("QUERY_CLIENT_SHARE", default: 50)) }
    /// The longest a query may run: a longer deadline asked by a client is cut to it.
    public var maxQueryMs: Int { max(1, int("MAX_QUERY_MS", default: 120_000)) }
    /// The bytes of replies the gateway holds for one client that has not read them yet; beyond
    /// it replies are dropped for an error and new requests refused (see `ReplyBudget`).
    public var clientReplyBytes: Int { max(1, int("CLIENT_REPLY_BYTES", default: 64 << 20)) }
    /// The same across all clients.
    public var totalReplyBytes: Int { max(1, int("TOTAL_REPLY_BYTES", default: 256 << 20)) }
    /// Fair forwarding at the gateway: a client's document and blob requests passed on to a
    /// service and not yet answered (`CLIENT_IN_FLIGHT`; its further ones wait at the gateway, in
    /// turn with other clients'), the bytes of them beyond the first, each counted as its own plus
    /// the client's last answer's (`CLIENT_IN_FLIGHT_BYTES`; 0: no limit), and the bytes of its
    /// requests that may wait (`CLIENT_WAITING_BYTES`; beyond them a request is refused, `.busy`).
    public var forwardingLimits: ForwardingLimits {
        let bytes = int("CLIENT_IN_FLIGHT_BYTES", default: ForwardingLimits.defaultBytesPerClient)
        return ForwardingLimits(perClient: int("CLIENT_IN_FLIGHT", default: ForwardingLimits.defaultPerClient),
                                bytesPerClient: bytes > 0 ? bytes : nil,
                                waitingBytes: int("CLIENT_WAITING_BYTES", default: ForwardingLimits.defaultWaitingBytes))
    }
    public var instance: String? { flags["INSTANCE"] ?? environment["SOFA_INSTANCE"] }
}
