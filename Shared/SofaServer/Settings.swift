import SofaBus
public import SofaFiles
public import Foundation
public import SofaCore

/// A process's configuration: `--some-flag VALUE` (or `--some-flag=VALUE`) on the command line,
/// else the environment variable `SOFA_SOME_FLAG`, else the default given at the lookup.
/// The settings of a service (`role`) are only those its row of the settings table lists
/// (`ServiceRole.reads`): reading another is a bug in the table or the service, and stops it.
public struct Settings: Sendable {
    private let flags: [String: String]
    private let environment: [String: String]
    /// The service whose settings these are; nil: any setting may be read (tools and tests).
    public let role: ServiceRole?

    public init(arguments: [String] = Array(CommandLine.arguments.dropFirst()),
                environment: [String: String] = ProcessInfo.processInfo.environment, role: ServiceRole? = nil) {
        self.role = role
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
        value(key) ?? defaultValue
    }

    public func int(_ key: String, default defaultValue: Int) -> Int {
        Int(string(key, default: "")) ?? defaultValue
    }

    public func string(_ setting: Setting, default defaultValue: String) -> String {
        string(setting.rawValue, default: defaultValue)
    }

    public func int(_ setting: Setting, default defaultValue: Int) -> Int {
        int(setting.rawValue, default: defaultValue)
    }

    /// The value given, or nil.
    public func value(_ key: String) -> String? {
        if let role {
            precondition(Setting(rawValue: key).map(role.reads.contains) == true,
                         "sofa-\(role.rawValue) reads SOFA_\(key), which its row of the settings table "
                             + "(ServiceRole.reads, Shared/SofaCore/SettingsTable.swift) does not list")
        }
        return flags[key] ?? environment["SOFA_\(key)"]
    }

    /// Default endpoints: the ports of the docker-compose file, on loopback.
    public static let defaultGateway = "tcp://127.0.0.1:7420"
    public static let defaultStorage = "tcp://127.0.0.1:7421"
    public static let defaultBlob = "tcp://127.0.0.1:7422"
    public static let defaultReplicator = "tcp://127.0.0.1:7423"
    public static let defaultBroker = "tcp://127.0.0.1:7424"
    public static let defaultChanges = "tcp://127.0.0.1:7425"

    public var dataDirectory: String { string(.dataDir, default: "./.sofa-data") }
    public var logLevel: String { string(.logLevel, default: "info") }
    // Where this service listens.
    public var gatewayEndpoint: String { string(.gatewayEndpoint, default: Self.defaultGateway) }
    public var storageEndpoint: String { string(.storageEndpoint, default: Self.defaultStorage) }
    public var blobEndpoint: String { string(.blobEndpoint, default: Self.defaultBlob) }
    public var replicatorEndpoint: String { string(.replicatorEndpoint, default: Self.defaultReplicator) }
    /// The gateway's broker socket (the gateway binds, query workers connect to `brokerURL`).
    public var brokerEndpoint: String { string(.brokerEndpoint, default: Self.defaultBroker) }
    /// Where storage publishes commit notices (the gateway subscribes at `changesURL`).
    public var changesEndpoint: String { string(.changesEndpoint, default: Self.defaultChanges) }
    // Where this service reaches another.
    public var gatewayURL: String { string(.gatewayURL, default: Self.defaultGateway) }
    public var storageURL: String { string(.storageURL, default: Self.defaultStorage) }
    public var blobURL: String { string(.blobURL, default: Self.defaultBlob) }
    public var replicatorURL: String { string(.replicatorURL, default: Self.defaultReplicator) }
    public var brokerURL: String { string(.brokerURL, default: Self.defaultBroker) }
    public var changesURL: String { string(.changesURL, default: Self.defaultChanges) }
    public var heartbeatMs: UInt64 { UInt64(max(10, int(.heartbeatMs, default: 500))) }
    public var maxRequestBytes: Int { int(.maxRequestBytes, default: BusLimits.defaultMaxRequestBytes) }
    /// Items one bulk write may carry (storage refuses a larger one whole, before any work).
    public var maxBulkItems: Int { max(1, int(.maxBulkItems, default: 100_000)) }
    /// Items storage commits in one transaction (a longer bulk is committed in several).
    public var maxTransactionItems: Int { max(1, int(.maxTransactionItems, default: 10_000)) }
    /// How long before a request's deadline storage stops committing its work.
    public var commitMarginMs: Int { max(0, int(.commitMarginMs, default: 250)) }
    /// The percent of the query workers one client's queries may occupy (at least one worker;
    /// 100: no limit).
    public var queryClientShare: Int { max(1, int(.queryClientShare, default: 50)) }
    /// The longest a query may run: a longer deadline asked by a client is cut to it.
    public var maxQueryMs: Int { max(1, int(.maxQueryMs, default: 120_000)) }
    /// The bytes of replies the gateway holds for one client that has not read them yet; beyond
    /// it replies are dropped for an error and new requests refused (see `ReplyBudget`).
    public var clientReplyBytes: Int { max(1, int(.clientReplyBytes, default: 64 << 20)) }
    /// The same across all clients.
    public var totalReplyBytes: Int { max(1, int(.totalReplyBytes, default: 256 << 20)) }
    /// Fair forwarding at the gateway: a client's document and blob requests passed on to a
    /// service and not yet answered (`CLIENT_IN_FLIGHT`; its further ones wait at the gateway, in
    /// turn with other clients'), the bytes of them beyond the first, each counted as its own plus
    /// the client's last answer's (`CLIENT_IN_FLIGHT_BYTES`; 0: no limit), and the bytes of its
    /// requests that may wait (`CLIENT_WAITING_BYTES`; beyond them a request is refused, `.busy`).
    public var forwardingLimits: ForwardingLimits {
        let bytes = int(.clientInFlightBytes, default: ForwardingLimits.defaultBytesPerClient)
        return ForwardingLimits(perClient: int(.clientInFlight, default: ForwardingLimits.defaultPerClient),
                                bytesPerClient: bytes > 0 ? bytes : nil,
                                waitingBytes: int(.clientWaitingBytes, default: ForwardingLimits.defaultWaitingBytes))
    }
    /// Compaction prunes revision trees to this depth (nil: storage's default).
    public var maxRevTreeDepth: Int? { value(Setting.maxRevTreeDepth.rawValue).flatMap { Int($0) }.map { max(1, $0) } }
    /// The largest document body storage takes (`SOFA_MAX_DOCUMENT_BYTES`, 8 MB as CouchDB).
    public var maxDocumentBytes: Int { max(2, int(.maxDocumentBytes, default: 8_000_000)) }
    /// The largest blob sofa-blob takes (`SOFA_MAX_BLOB_BYTES`, default 4 GiB).
    public var maxBlobBytes: UInt64 { UInt64(max(1, int(.maxBlobBytes, default: 4 << 30))) }
    /// Other clusters' gateways users who are not server admins may replicate with.
    public var replicationPeers: Set<String> {
        Set(string(.replicationPeers, default: "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty })
    }
    /// How long an idle blob transfer is kept before it is dropped.
    public var blobIdleMs: Int { max(10, int(.blobIdleMs, default: 30_000)) }
    public var instance: String? { value(Setting.instance.rawValue) }
    /// The cluster's secrets folder (`SOFA_KEYS_DIR`, default `./.sofa-data/keys`).
    public var keysFolder: SecretsFolder { SecretsFolder(string(.keysDir, default: "./.sofa-data/keys")) }
    /// Whether TCP sockets speak CURVE (`SOFA_CURVE=off`: a benchmark's comparison only).
    public var curveEnabled: Bool { string(.curve, default: "on").lowercased() != "off" }
    /// The process that started this one under `sofa up` (it stops when that process is gone).
    public var supervisorPID: Int32? { value(Setting.supervisorPID.rawValue).flatMap { Int32($0) } }
}
