@_exported public import SofaCore
public import SofaWire
internal import SofaBus
import Foundation
internal import Synchronization

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
    /// Whom the connection signs in as (again, when it was made anew); nil: nobody.
    public var credentials: Credentials? { signedIn.withLock { $0 } }
    private let signedIn: Mutex<Credentials?>
    /// The user every request of this client runs as (see `acting(as:)`); "" = the connection's own.
    public let actingUser: String
    /// Whether closing this client closes the connection (not for a view made by `acting(as:)`).
    private let ownsConnection: Bool

    /// The connection's own thread, as a task executor. Tasks that prefer it
    /// (`Task(executorPreference: client.executor)`, `withTaskExecutorPreference`) run there: each
    /// call they make and its answer then cross no other thread of this process (measured with
    /// `sofa-bench rtt`: a single get's p50 fell from 354–386 µs to 281–314 µs; with 64 gets in
    /// flight, the client's CPU per get from 15–20 µs to 11.5–16 µs). Their code
    /// must not block (no waiting on a lock held elsewhere, no blocking I/O): while it runs, the
    /// connection sends and receives nothing. Once the client is closed, they run on the
    /// global executor.
    public var executor: any TaskExecutor { bus.socketLoop }

    /// This client's own password changed: sign in with the new one from now on.
    func passwordChanged(name: String, to password: String) {
        signedIn.withLock { if $0?.name == name { $0?.password = password } }
    }

    /// A user's name and password (or a server admin's).
    public struct Credentials: Sendable, Equatable {
        public var name: String
        public var password: String

        public init(name: String, password: String) {
            self.name = name
            self.password = password
        }
    }

    private init(endpoint: String, bus: BusClient, timeout: Duration, credentials: Credentials?,
                 actingUser: String = "", ownsConnection: Bool = true) {
        self.endpoint = endpoint
        self.bus = bus
        self.timeout = timeout
        self.signedIn = Mutex(credentials)
        self.actingUser = actingUser
        self.ownsConnection = ownsConnection
    }

    /// The same connection, with every request running as user `name` (or as nobody, for
    /// `Request.anonymousActor`): for a service of the cluster that has checked who its own
    /// client is (sofa-http). The gateway honours it only on a connection that holds the
    /// cluster's key (`clientSecretKey`); on any other the requests run as the connection's own
    /// user. Closing the view leaves the connection open.
    public func acting(as name: String) -> SofaClient {
        SofaClient(endpoint: endpoint, bus: bus, timeout: timeout, credentials: nil, actingUser: name, ownsConnection: false)
    }

    /// Connects to a gateway and checks that it answers. `timeout` is every call's default;
    /// `connectTimeout` (default: `timeout`) bounds the wait for the first answer, and
    /// `handshakeTimeout` (default: the same) the wait for the connection itself: a gateway that
    /// runs completes it in milliseconds even when busy, so a short one fails fast when none
    /// runs without shortening the wait for a busy gateway's answer.
    ///
    /// `serverKey` pins the cluster's public CURVE key (`sofa up` and `sofa status` print it):
    /// the connection is encrypted, and a server that does not hold that key is refused. Without
    /// it the connection is plain, which only a cluster run with CURVE off accepts on TCP.
    /// `credentials` sign the connection in (a wrong name or password is `unauthorized`, the
    /// same for both); without them it may only reach what is open to everyone.
    /// `clientSecretKey` makes the client speak as that CURVE key instead of a fresh one (a
    /// service of a cluster holding the cluster's key is one of its own, a server admin).
    public static func connect(_ endpoint: String, serverKey: String? = nil, credentials: Credentials? = nil,
                               clientSecretKey: String? = nil, timeout: Duration = .seconds(10),
                               connectTimeout: Duration? = nil, handshakeTimeout: Duration? = nil) async throws(SofaError) -> SofaClient {
        var curve = try serverKey.map { (key) throws(SofaError) in try ClientKeys.pinning(key) }
        if let clientSecretKey, curve != nil {
            guard let keys = CurveKeyPair(secretKey: clientSecretKey) else { throw Curve.badKey("the client's secret key") }
            curve?.keys = keys
        }
        let bus = try await BusClient.connect(endpoint, peerName: "gateway", curve: curve)
        let client = SofaClient(endpoint: endpoint, bus: bus, timeout: timeout, credentials: credentials)
        // ZeroMQ connects in the background: wait (within the timeout) for the handshake, then
        // for the first answer.
        let answerLimit = connectTimeout ?? timeout
        var handshakeLimit = min(answerLimit, handshakeTimeout ?? timeout)
        let started = ContinuousClock.now
        while true {
            guard await bus.waitUntilConnected(timeout: started + handshakeLimit - ContinuousClock.now) else {
                bus.close()
                if Task.isCancelled { throw SofaError(.cancelled, "connecting to \(endpoint) was cancelled") }
                if bus.handshakeFailed {
                    throw SofaError.unauthorized(serverKey == nil
                        ? "the server at \(endpoint) speaks CURVE: give its public key (`sofa status` on its host prints it; "
                            + "SOFA_SERVER_KEY or --server-key)"
                        : "the server at \(endpoint) did not complete a secure handshake: it does not hold the server key "
                            + "you pinned (\(serverKey!)), or it refused this client")
                }
                throw SofaError.unavailable("no gateway answered at \(endpoint) within \(handshakeLimit)")
            }
            handshakeLimit = answerLimit  // connected once: a dropped connection may take the rest of the time
            let deadline = started + answerLimit
            do {
                let health = try await client.call(.health(service: ""), timeout: max(.milliseconds(1), deadline - ContinuousClock.now))
                // Calls made together (many tasks at once) go as batches to a gateway that takes them.
                if case .health(let info) = health, info.batches { bus.sendBatches() }
                if credentials != nil { _ = try await client.signIn() }
                return client
            } catch where error.is(.unavailable) && ContinuousClock.now < deadline {
                await Task.yield()  // connected but the pipe was not attached yet, or it dropped: wait again
            } catch {
                bus.close()
                throw error
            }
        }
    }

    public func close() {
        if ownsConnection { bus.close() }
    }

    /// One round trip through the gateway. `collection` is "scope.collection", "collection" (in
    /// scope `_default`) or "" (the default collection).
    func call(_ operation: Op, database: String = "", collection: String = "", timeout: Duration? = nil) async throws(SofaError) -> Reply {
        let request = Request(database: database, collection: collection, operation: operation)
        return try await send(request, timeout: timeout ?? self.timeout).outcome.get()
    }

    /// Sends a request; when the gateway answers that the connection is not signed in (it was
    /// made anew: the gateway or the network restarted) and this client has credentials, signs
    /// in again and sends it once more (a refused request changed nothing).
    func send(_ request: Request, timeout: Duration) async -> Response {
        var request = request
        request.actingUser = actingUser
        let response = await bus.send(request, timeout: timeout)
        guard credentials != nil, case .failure(let error) = response.outcome, error.is(.unauthorized),
              error.message.hasPrefix(SessionWords.notSignedIn), (try? await signIn()) != nil else { return response }
        return await bus.send(request, timeout: timeout)
    }

    /// Signs the connection in with `credentials`; the name and roles the gateway knows it by.
    @discardableResult
    func signIn() async throws(SofaError) -> Session {
        guard let credentials else { return try await session() }
        return try await verify(credentials)
    }

    /// Asks the gateway whether `credentials` are right (an unknown name and a wrong password are
    /// the same `unauthorized`); the name and roles they belong to. On a connection of the
    /// cluster's own key, which runs as the cluster whatever it signs in as, this checks and
    /// changes nothing; on any other connection it also signs the connection in as that user.
    public func verify(_ credentials: Credentials) async throws(SofaError) -> Session {
        let request = Request(operation: .authenticate(name: credentials.name, password: credentials.password))
        guard case .session(let name, let roles) = try await bus.send(request, timeout: max(timeout, .seconds(10))).outcome.get() else {
            throw unexpected("authenticate")
        }
        return Session(name: name, roles: roles)
    }

    /// Who this connection is signed in as (`whoami`): name ("" for nobody) and roles (`_admin`
    /// for a server admin).
    public func session() async throws(SofaError) -> Session {
        guard case .session(let name, let roles) = try await call(.session) else { throw unexpected("session") }
        return Session(name: name, roles: roles)
    }

    public struct Session: Sendable, Equatable {
        public var name: String
        public var roles: [String]
        public init(name: String, roles: [String]) {
            self.name = name
            self.roles = roles
        }
        public var isServerAdmin: Bool { roles.contains("_admin") }
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
