@_exported public import SofaCore
public import SofaWire
internal import SofaBus
import Foundation

/// The Sofa SDK: one connection to a cluster's gateway, shared by any number of concurrent calls.
///
/// ```swift
/// let client = try await SofaClient.connect("tcp://127.0.0.1:7420")
/// let app = try await client.createDatabase("app")
/// let saved = try await app.put(id: "a", json: #"{"x":1}"#)
/// let doc = try await app.get(id: "a")
/// ```
/// Every failure is a `SofaError` (domain, code, message); `error.is(.conflict)` and friends
/// tell them apart.
public final class SofaClient: Sendable {
    public let endpoint: String
    let bus: BusClient
    public let timeout: Duration

    private init(endpoint: String, bus: BusClient, timeout: Duration) {
        self.endpoint = endpoint
        self.bus = bus
        self.timeout = timeout
    }

    /// Connects to a gateway and checks that it answers. `timeout` is every call's default;
    /// `connectTimeout` (default: `timeout`) bounds the wait for the first answer, and
    /// `handshakeTimeout` (default: the same) the wait for the connection itself: a gateway that
    /// runs completes it in milliseconds even when busy, so a short one fails fast when none
    /// runs without shortening the wait for a busy gateway's answer.
    public static func connect(_ endpoint: String, timeout: Duration = .seconds(10),
                               connectTimeout: Duration? = nil, handshakeTimeout: Duration? = nil) async throws(SofaError) -> SofaClient {
        let bus = try await BusClient.connect(endpoint, peerName: "gateway")
        let client = SofaClient(endpoint: endpoint, bus: bus, timeout: timeout)
        // ZeroMQ connects in the background: wait (within the timeout) for the handshake, then
        // for the first answer.
        let answerLimit = connectTimeout ?? timeout
        var handshakeLimit = min(answerLimit, handshakeTimeout ?? timeout)
        let started = ContinuousClock.now
        while true {
            guard await bus.waitUntilConnected(timeout: started + handshakeLimit - ContinuousClock.now) else {
                bus.close()
                throw SofaError.unavailable("no gateway answered at \(endpoint) within \(handshakeLimit)")
            }
            handshakeLimit = answerLimit  // connected once: a dropped connection may take the rest of the time
            let deadline = started + answerLimit
            do {
                _ = try await client.call(.health(service: ""), timeout: max(.milliseconds(1), deadline - ContinuousClock.now))
                return client
            } catch where error.is(.unavailable) && ContinuousClock.now < deadline {
                await Task.yield()  // connected but the pipe was not attached yet, or it dropped: wait again
            } catch {
                bus.close()
                throw error
            }
        }
    }

    public func close() { bus.close() }

    /// One round trip through the gateway. `collection` is "scope.collection", "collection" (in
    /// scope `_default`) or "" (the default collection).
    func call(_ operation: Op, database: String = "", collection: String = "", timeout: Duration? = nil) async throws(SofaError) -> Reply {
        let request = Request(database: database, collection: collection, operation: operation)
        return try await bus.send(request, timeout: timeout ?? self.timeout).outcome.get()
    }

    /// Health of the gateway, or of the service named ("storage", "query", "blob", "replicator").
    public func health(service: String = "") async throws(SofaError) -> HealthInfo {
        guard case .health(let info) = try await call(.health(service: service)) else { throw unexpected("health") }
        return info
    }

    /// Every service of the cluster as the gateway sees it.
    public func clusterStatus() async throws(SofaError) -> [ServiceStatus] {
        guard case .cluster(let services) = try await call(.clusterStatus) else { throw unexpected("status") }
        return services
    }

    /// A round trip through the gateway to `service` ("" = the gateway itself).
    public func echo(_ payload: [UInt8], service: String = "", delayMs: UInt32 = 0) async throws(SofaError) -> (payload: [UInt8], instance: String) {
        guard case .echo(let back, let instance) = try await call(.echo(payload: payload, delayMs: delayMs, service: service)) else {
            throw unexpected("echo")
        }
        return (back, instance)
    }

    public func databases() async throws(SofaError) -> [String] {
        guard case .databases(let names) = try await call(.listDatabases) else { throw unexpected("databases") }
        return names
    }

    /// Creates a database. With `encryptionKey`, its blobs are stored encrypted (AES-256, in
    /// Couchbase Lite's format); sofa-blob keeps the key, so it is given only here (and to
    /// `Database.changeEncryptionKey`).
    @discardableResult
    public func createDatabase(_ name: String, versioning: Versioning = .revisionTrees,
                               encryptionKey: EncryptionKey? = nil) async throws(SofaError) -> Database {
        _ = try await call(.createDatabase(versioning: versioning, encryptionKey: encryptionKey), database: name)
        return Database(client: self, name: name)
    }

    /// Creates a database whose blobs are encrypted with the key LiteCore derives from
    /// `password` (derived here: the password itself never leaves this process).
    @discardableResult
    public func createDatabase(_ name: String, versioning: Versioning = .revisionTrees,
                               password: String) async throws(SofaError) -> Database {
        try await createDatabase(name, versioning: versioning, encryptionKey: try await EncryptionKey.derived(from: password))
    }

    public func deleteDatabase(_ name: String) async throws(SofaError) {
        _ = try await call(.deleteDatabase, database: name)
    }

    /// A handle on a database (no call is made until it is used).
    public func database(_ name: String) -> Database { Database(client: self, name: name) }
}

func unexpected(_ what: String) -> SofaError {
    SofaError(.unexpectedError, "the gateway answered \(what) with an unexpected reply")
}
