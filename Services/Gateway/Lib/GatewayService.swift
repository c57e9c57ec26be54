public import SofaBus
public import SofaServer
public import SofaCore
public import SofaWire
public import Logging
internal import Synchronization
public import Foundation
internal import SofaFiles

/// `sofa-gateway`: the one endpoint clients use. It checks each request, routes it (documents and
/// databases to storage, query work through the broker to an idle worker, health to whoever it
/// names) and hands back the answer, or a clear error when a service cannot be reached.
public final class GatewayService: Sendable {
    public let storage: BusClient
    public let blob: BusClient
    public let replicator: BusClient
    public let broker: Broker
    public let changeWaiters = ChangeWaiters()
    let basic: BasicHandler
    let logger: Logger
    /// Server admins, users and the connections signed in.
    public let identities: Identities
    /// Security objects by database, as last read or set.
    let securityObjects = Mutex<[String: SecurityObject]>([:])
    /// Which databases have `validate_doc_update` functions (see GatewayService+Validation).
    let validators = DesignValidators()
    /// Other clusters' gateways that users who are not server admins may replicate with
    /// (`SOFA_REPLICATION_PEERS`, comma-separated `tcp://host:port`).
    let replicationPeers: Set<String>
    /// The longest a query may run (`SOFA_MAX_QUERY_MS`): a longer deadline is cut to it.
    public let maxQueryMs: UInt64
    /// The broker's jobs of queries passed on and not yet answered, by the descriptor of the
    /// client connection they came in on.
    private let runningQueries = Mutex<[Int32: Set<UInt64>]>([:])
    /// Plain document gets read here from the database files (nil: every get goes to storage).
    let directReads: DirectReads?

    /// `dataDirectory`: where storage keeps the databases, when this process can read it (plain
    /// gets are then answered from the files).
    public init(storage: BusClient, blob: BusClient, replicator: BusClient, broker: Broker, instance: String,
                identities: Identities, replicationPeers: Set<String> = [], maxQueryMs: Int = 120_000,
                dataDirectory: URL? = nil, logger: Logger) {
        self.directReads = dataDirectory.map(DirectReads.init)
        self.identities = identities
        self.replicationPeers = replicationPeers
        self.maxQueryMs = UInt64(max(1, maxQueryMs))
        self.storage = storage
        self.blob = blob
        self.replicator = replicator
        self.broker = broker
        self.basic = BasicHandler(service: "gateway", instance: instance)
        self.logger = logger
    }

    /// Brings the gateway up; its parts, for the process's service group.
    public static func start(settings: Settings, logger: Logger) async throws -> [any ProcessPart] {
        // The server admins (the first one is made in a new secrets folder) and the sign-ins.
        let folder = settings.keysFolder
        let (admins, created) = try LocalAdminFile.ensureAdmin(in: folder, user: settings.value(Setting.adminUser.rawValue),
                                                               password: settings.value(Setting.adminPassword.rawValue))
        if created {
            logger.notice("created the first server admin", metadata: [
                "user": "\(admins.admins.keys.sorted().joined(separator: ","))",
                "credentials": "\(folder.path)/\(SecretsFolder.localAdminFile)"])
        }
        ClientConnections.setLimit(settings.int(.maxConnections, default: ClientConnections.defaultLimit))
        let identities = Identities(admins: admins.admins, clusterKey: Curve.cluster?.publicKey,
                                    trustsUnkeyedPeers: !Curve.applies(to: settings.gatewayEndpoint))
        let replicator = try await BusClient.connect(settings.replicatorURL, peerName: "replicator")
        // The server's loop runs the clients of storage and sofa-blob and the query workers' broker
        // too (see `upstreams` and `broker` below), so the gateway is made once they exist; until
        // then (the first instants after the bind) a request is answered `unavailable`.
        let ready = Mutex<GatewayService?>(nil)
        let starting = SofaError(.unavailable, "the gateway is starting: ask again")
        // A client that goes away cancels its requests still running (queries stop on their worker).
        // Document reads and writes go on to storage as they came: neither they nor their
        // answers are decoded here (for a bulk write, that is most of the gateway's work).
        let maxBulkItems = settings.maxBulkItems
        var forwarding = BusServer.Forwarding(operations: Self.passedThrough, accepts: { operation, payload in
            passesOn(operation, payload, maxBulkItems: maxBulkItems)
        }, limits: settings.forwardingLimits, disconnected: { connections in
            identities.connectionsClosed(connections)
            ready.withLock { $0 }?.connectionsClosed(connections)
        }, direct: { request, reply in
            // From the server's socket thread to the service's socket, on the same thread, and back.
            guard let gateway = ready.withLock({ $0 }) else {
                return reply(Response.failure(request.id, starting).encodedMessage())
            }
            gateway.forward(request, then: reply)
        }) { request in
            guard let gateway = ready.withLock({ $0 }) else { return Response.failure(request.id, starting).encodedMessage() }
            return await gateway.forward(request)
        }
        // Queries wait their turn in the broker's queue per client, not in fair forwarding's.
        forwarding.queuedElsewhere = [OperationKind.query.rawValue, OperationKind.viewQuery.rawValue]
        // Gets that arrive together are read from the files together (see `DirectReads`).
        forwarding.batchBegins = { ready.withLock({ $0 })?.directReads?.beginBatch() }
        forwarding.batchEnds = { ready.withLock({ $0 })?.directReads?.endBatch() }
        // Gets read here take no place among the client's requests in flight to storage.
        forwarding.local = { request, reply in ready.withLock({ $0 })?.readLocally(request, reply: reply) ?? false }
        forwarding.gate = { request, peer in
            guard let gateway = ready.withLock({ $0 }) else { return .refuse(starting) }
            return gateway.gate(request, peer)
        }
        let server = try await BusServer.bind(settings.gatewayEndpoint, name: "gateway", domain: Curve.clientDomain,
                                              maxRequestBytes: settings.maxRequestBytes, cancelOnDisconnect: true,
                                              replyBudget: ReplyBudget(perClient: settings.clientReplyBytes,
                                                                       total: settings.totalReplyBytes),
                                              forwarding: forwarding, maxBulkItems: maxBulkItems,
                                              upstreams: [.init(settings.storageURL, peerName: "storage"),
                                                          .init(settings.blobURL, peerName: "blob")],
                                              broker: .init(settings.brokerEndpoint, heartbeatMs: settings.heartbeatMs,
                                                            clientShare: settings.queryClientShare),
                                              logger: logger) { request in
            guard let gateway = ready.withLock({ $0 }) else { return .failure(request.id, starting) }
            return await gateway.handle(request)
        }
        guard let broker = server.broker else { throw SofaError(.unexpectedError, "the gateway's server runs no broker") }
        let gateway = GatewayService(storage: server.upstreamClients[0], blob: server.upstreamClients[1], replicator: replicator,
                                     broker: broker, instance: settings.instance ?? ServiceRuntime.defaultInstance("gateway"),
                                     identities: identities, replicationPeers: settings.replicationPeers,
                                     maxQueryMs: settings.maxQueryMs,
                                     dataDirectory: settings.value(Setting.dataDir.rawValue).map { URL(fileURLWithPath: $0) },
                                     logger: logger)
        ready.withLock { $0 = gateway }
        let waiters = gateway.changeWaiters
        let subscriber = try await Subscriber.connect(settings.changesURL, name: "changes", logger: logger) { frames in
            guard let payload = frames.last, let notice = CommitNotice.summary(payload) else { return }
            if notice.database == Identities.usersDatabase { identities.usersChanged() }
            waiters.notify(notice)
        }
        logger.info("gateway serving", metadata: ["endpoint": "\(server.endpoint)", "broker": "\(broker.endpoint)"])
        // Stopped in reverse: the server first (with the clients of storage and sofa-blob and the
        // broker it runs), the other connections last.
        return [replicator.socketLoop, subscriber.socketLoop, server.socketLoop].map(SocketLoopService.init)
    }

    /// Whether a request of `passedThrough` goes on undecoded, given its operation's payload; when
    /// not, the gateway decodes it as any other:
    /// * a changes request that may wait (a long poll) is the gateway's own;
    /// * a bulk write over the item limit is refused as it is decoded, before its items are
    ///   unpacked: storage spends nothing on it;
    /// * a write of a design document is checked decoded (only database admins may write one).
    public static func passesOn(_ operation: UInt32, _ payload: UnsafeRawBufferPointer, maxBulkItems: Int) -> Bool {
        if DesignWrites.touchesDesignDocument(operation: operation, payload: payload) { return false }
        switch operation {
        case changesField: return (ForwardedRequest.varint(field: changesWaitField, in: payload) ?? 0) == 0
        case bulkWriteField: return (BulkLimit.itemCount(bulkWrite: payload) ?? 0) <= maxBulkItems
        default: return true
        }
    }

    /// The operations (by field number of `Request.op`) the gateway passes on undecoded: those
    /// whose route says so (document reads and writes, changes that do not wait, all-docs,
    /// revs-diff, blob transfers).
    public static let passedThrough: Set<UInt32> = Set(OperationKind.allCases.filter { $0.route.passedThrough }.map(\.rawValue))
    /// `Request.changes`, and `ChangesRequest.wait_ms`.
    static let changesField: UInt32 = OperationKind.changes.rawValue
    static let changesWaitField: UInt32 = 8
    /// `Request.bulk_write`.
    static let bulkWriteField: UInt32 = OperationKind.bulkWrite.rawValue

    /// A request of `passedThrough`: to its service and back, undecoded.
    public func forward(_ request: ForwardedRequest) async -> EncodedMessage {
        await withCheckedContinuation { continuation in
            forward(request) { continuation.resume(returning: $0) }
        }
    }

    /// The same, answering through `reply` (on the service client's socket thread).
    public func forward(_ request: ForwardedRequest, then reply: @escaping @Sendable (EncodedMessage) -> Void) {
        guard let kind = OperationKind(rawValue: request.operationField), kind.route.passedThrough else {
            return reply(Response.failure(request.id, SofaError(.invalidParameter,
                "operation \(request.operationField) is not passed through the gateway")).encodedMessage())
        }
        let route = kind.route
        guard !route.needsDatabase || !request.database.isEmpty else {
            return reply(Response.failure(request.id, SofaError(.invalidParameter, "\(kind.name) needs a database name")).encodedMessage())
        }
        if route.service == .query { return forwardQuery(request, then: reply) }
        pass(request, to: route, then: reply)
    }

    /// Takes `request` when it is a get the gateway reads itself (`DirectReads`), before fair
    /// forwarding counts it: `reply` gets the answer, or nil to send it on to storage after all.
    func readLocally(_ request: ForwardedRequest, reply: @escaping @Sendable (EncodedMessage?) -> Void) -> Bool {
        guard let directReads, let kind = OperationKind(rawValue: request.operationField), kind.route.passedThrough,
              kind.route.service == .storage, !request.database.isEmpty else { return false }
        return directReads.take(request, reply: reply)
    }

    /// A request of `passedThrough` to its service (`route`'s) and its answer back.
    private func pass(_ request: ForwardedRequest, to route: Route, then reply: @escaping @Sendable (EncodedMessage) -> Void) {
        client(for: route.service).forward(request, timeout: route.timeout) { result in
            switch result {
            case .success(let bytes): reply(ForwardedResponse.encoded(bytes, id: request.id))  // copied here, once
            case .failure(let error): reply(Response.failure(request.id, error).encodedMessage())
            }
        }
    }

    /// A query, undecoded, to the broker and its answer back as the worker sent it: counted
    /// against its client's share of the workers, its deadline cut to `maxQueryMs` (the worker
    /// sees the cut one, so it stops a query the broker gave up on), and stopped on its worker
    /// when its client's connection closes.
    private func forwardQuery(_ request: ForwardedRequest, then reply: @escaping @Sendable (EncodedMessage) -> Void) {
        var bounded = request
        let (deadline, cut) = queryDeadline(request.deadline)
        bounded.deadline = deadline
        bounded.client = Self.fairShareKey(request.client, actingUser: request.actingUser)
        let id = broker.nextJobID()
        let connection = request.connection
        runningQueries.withLock { _ = $0[connection, default: []].insert(id) }
        broker.submit(bounded, id: id, timeout: .milliseconds(Int(maxQueryMs))) { outcome in
            self.runningQueries.withLock { running in
                running[connection]?.remove(id)
                if running[connection]?.isEmpty == true { running[connection] = nil }
            }
            switch outcome {
            case .answered(let bytes):
                reply(bytes.withUnsafeBytes { ForwardedResponse.encoded($0, id: request.id) })
            case .failed(let error):
                reply(Response.failure(request.id, cut ? self.cutDeadline(error) : error).encodedMessage())
            }
        }
    }

    /// A query's deadline (wall-clock ms; 0: none, which gets the forwarding default) cut to
    /// `maxQueryMs` from now, and whether it was cut.
    private func queryDeadline(_ asked: UInt64) -> (deadline: UInt64, cut: Bool) {
        let now = wallClockMs()
        let cap = now + maxQueryMs
        let asked = asked != 0 ? asked : now + UInt64(Route.defaultTimeout.components.seconds) * 1000
        return (min(asked, cap), asked > cap)
    }

    /// A query whose deadline was cut: a timeout says why.
    private func cutDeadline(_ error: SofaError) -> SofaError {
        guard error.is(.timeout) else { return error }
        return .timeout("\(error.message): a query may run at most \(maxQueryMs) ms "
            + "(the server's limit, SOFA_MAX_QUERY_MS), and its longer deadline was cut to that")
    }

    /// The client connections that closed: their queries still running are stopped.
    func connectionsClosed(_ connections: Set<Int32>) {
        let ids = runningQueries.withLock { running in connections.flatMap { running.removeValue(forKey: $0) ?? [] } }
        if !ids.isEmpty { logger.debug("client went away: cancelling its queries", metadata: ["queries": "\(ids.count)"]) }
        for id in ids { broker.cancel(id) }
    }

    /// Where the gateway sends a decoded request: a function of the request and the routing
    /// table alone (`OperationKind.route`), so that it can be checked without a cluster.
    public enum Destination: Sendable, Equatable {
        /// The gateway answers itself (its health and echo; the cluster's status).
        case gateway
        /// To a service, decoded, waiting at most `timeout` for its answer.
        case service(Route.Service, timeout: Duration)
        /// A changes request that waits for new changes: the gateway holds it (`longPoll`).
        case longPoll
        /// Create a database with an encryption key: storage creates it, sofa-blob keys it.
        case encryptedCreate
        case refused(SofaError)
    }

    public static func destination(of request: Request) -> Destination {
        let kind = request.operation.kind
        let route = kind.route
        switch request.operation {
        case .health(let service), .echo(_, _, let service):
            guard !service.isEmpty, service != "gateway" else { return .gateway }
            guard let named = Route.Service(rawValue: service) else {
                return .refused(SofaError(.invalidParameter,
                    "unknown service '\(service)': use storage, query, blob, replicator or gateway"))
            }
            return .service(named, timeout: route.timeout)
        default: break
        }
        if !route.fromClients {
            return .refused(SofaError(.invalidParameter, "\(kind.name) is sent by one Sofa service to another, not by clients"))
        }
        if route.needsDatabase && request.database.isEmpty {
            return .refused(SofaError(.invalidParameter, "\(kind.name) needs a database name"))
        }
        switch request.operation {
        case .changes(let query) where query.waitMs > 0 && !query.descending: return .longPoll
        case .createDatabase(_, _?): return .encryptedCreate
        case .listReplications(_, _, let waitMs):
            // A status wait is held by the replicator: allow it that long, plus the usual margin.
            return .service(.replicator, timeout: route.timeout + .milliseconds(Int(min(waitMs, 60_000))))
        default:
            return route.service == .gateway ? .gateway : .service(route.service, timeout: route.timeout)
        }
    }

    public func handle(_ request: Request) async -> Response {
        if case .refused(let error) = Self.destination(of: request) { return .failure(request.id, error) }
        let principal: Principal?
        switch await authorize(request, peer: BusServer.peer) {
        case .failure(let refusal):
            if let written = await bulkWithoutDesignDocuments(request, refused: refusal) { return written }
            return .failure(request.id, refusal)
        case .success(let known): principal = known
        }
        switch request.operation {
        case .authenticate(let name, let password): return await signIn(request, name: name, password: password)
        case .session: return .ok(request.id, .session(name: principal?.name ?? "", roles: principal?.roles ?? []))
        case .getSecurity:
            do { return .ok(request.id, .json(try await securityObject(request.database).json)) } catch {
                return .failure(request.id, error)
            }
        case .setSecurity(let json): return await setSecurity(request, json, principal: principal)
        default: break
        }
        if request.database == Identities.usersDatabase, request.operation.kind.route.needsDatabase,
           request.operation.kind != .createDatabase, request.operation.kind != .deleteDatabase {
            return await usersRequest(request, principal: principal)
        }
        let kind = request.operation.kind
        if request.database == ReplicationDocument.database, principal != .cluster, kind.route.needsDatabase,
           kind != .createDatabase, kind != .deleteDatabase {
            return await replicatorDocumentsRequest(request, principal: principal)
        }
        let response: Response
        if let validated = await validatedWrite(request, principal: principal) {
            response = validated
        } else {
            response = await route(request, principal: principal)
        }
        if kind == .createDatabase || kind == .deleteDatabase { forgetSecurity(request.database) }
        if kind == .deleteDatabase { directReads?.forget(request.database) }
        if kind == .createDatabase || kind == .deleteDatabase || kind == .purge || AccessRules.writesDesignDocument(request.operation) {
            validators.forget(request.database)
        }
        if kind == .deleteDatabase && request.database == Identities.usersDatabase { identities.usersChanged() }
        if Self.isAudited(kind), case .success = response.outcome {
            audit(principal, BusServer.peer, kind.name, database: request.database)
        }
        return response
    }

    /// A request that may run, to where it goes.
    func route(_ request: Request, principal: Principal?) async -> Response {
        switch Self.destination(of: request) {
        case .refused(let error):
            return .failure(request.id, error)
        case .gateway:
            if case .clusterStatus = request.operation { return .ok(request.id, .cluster(await clusterStatus())) }
            return await basic.handle(request)
        case .longPoll:
            guard case .changes(let query) = request.operation else { return await basic.handle(request) }
            return await longPoll(request, query)
        case .encryptedCreate:
            guard case .createDatabase(let versioning, let key?) = request.operation else { return await basic.handle(request) }
            return await createEncryptedDatabase(request, versioning: versioning, key: key)
        case .service(.query, let timeout):
            // Queries and view queries: bounded in time and counted against their client's share.
            if request.operation.kind == .query || request.operation.kind == .viewQuery { return await query(request) }
            return await broker.submit(Self.addressedToReceiver(request), timeout: timeout)
        case .service(.replicator, let timeout) where request.operation.kind != .health && request.operation.kind != .echo:
            return await replicationRequest(request, principal: principal, timeout: timeout)
        case .service(let service, let timeout):
            return await client(for: service).send(Self.addressedToReceiver(request), timeout: timeout)
        }
    }

    /// The client of a service's socket (the query workers are reached through the broker, not here).
    private func client(for service: Route.Service) -> BusClient {
        switch service {
        case .blob: blob
        case .replicator: replicator
        case .storage, .gateway, .query: storage
        }
    }

    /// A health check or echo names its service; the service it reaches answers for itself ("").
    static func addressedToReceiver(_ request: Request) -> Request {
        var forwarded = request
        switch request.operation {
        case .health: forwarded.operation = .health(service: "")
        case .echo(let payload, let delay, _): forwarded.operation = .echo(payload: payload, delayMs: delay, service: "")
        default: break
        }
        return forwarded
    }

    /// A query through the broker, counted against its client's share of the workers. Its own
    /// deadline governs up to `maxQueryMs`; one without a deadline gets the forwarding default.
    /// The deadline the worker sees is cut too, so a worker stops a query the broker gave up on.
    /// Whose share of the query workers a query counts against: its connection's, or, for a
    /// service of the cluster acting for its own clients (sofa-http), the user it acts as — one
    /// HTTP user's long queries do not hold up another's.
    static func fairShareKey(_ client: [UInt8], actingUser: String) -> [UInt8] {
        actingUser.isEmpty ? client : client + [0] + Array(actingUser.utf8)
    }

    private func query(_ request: Request) async -> Response {
        var bounded = request
        let (deadline, cut) = queryDeadline(request.deadline)
        bounded.deadline = deadline
        let response = await broker.submit(bounded, client: Self.fairShareKey(BusServer.client, actingUser: request.actingUser),
                                           timeout: .milliseconds(Int(maxQueryMs)))
        if cut, case .failure(let error) = response.outcome { return .failure(request.id, cutDeadline(error)) }
        return response
    }

    /// An encrypted database: storage creates it (without the key: storage never sees keys), then
    /// sofa-blob takes the key and keeps it (see `KeyFile` in SofaBlob). If sofa-blob cannot, the
    /// database is deleted again and the error returned: a database asked for encrypted never
    /// stays plain.
    private func createEncryptedDatabase(_ request: Request, versioning: Versioning, key: EncryptionKey) async -> Response {
        var plain = request
        plain.operation = .createDatabase(versioning: versioning)
        let created = await storage.send(plain, timeout: Route.defaultTimeout)
        guard case .success = created.outcome else { return created }
        let keyed = await blob.send(request, timeout: Route.defaultTimeout)
        guard case .failure(let error) = keyed.outcome else { return keyed }
        var undo = request
        undo.operation = .deleteDatabase
        let undone = await storage.send(undo, timeout: Route.defaultTimeout)
        var message = "database '\(request.database)' was not created: sofa-blob could not take its encryption key: \(error.message)"
        if case .failure(let undoError) = undone.outcome {
            logger.error("an encrypted database was left without its key", metadata: ["database": "\(request.database)",
                                                                                     "error": "\(undoError.message)"])
            message += "; deleting it again failed too (\(undoError.message)): delete it before using it"
        }
        return .failure(request.id, SofaError(error.domain, error.code, message))
    }

    /// The changes feed as a long poll: answer at once when something is newer than `since`;
    /// otherwise wait for storage's commit notice (or the wait to run out) and read again.
    private func longPoll(_ request: Request, _ query: ChangesQuery) async -> Response {
        var forwarded = request
        var immediate = query
        immediate.waitMs = 0
        forwarded.operation = .changes(immediate)
        let deadline = ContinuousClock.now + .milliseconds(Int(min(query.waitMs, 60_000)))
        while true {
            let response = await storage.send(forwarded, timeout: Route.defaultTimeout)
            guard case .success(.changes(let batch)) = response.outcome, batch.changes.isEmpty else { return response }
            let remaining = deadline - ContinuousClock.now
            if remaining <= .zero { return response }
            await changeWaiters.wait(database: request.database, collection: request.collection,
                                     beyond: max(batch.lastSequence, query.since), timeout: remaining)
            if ContinuousClock.now >= deadline {
                return await storage.send(forwarded, timeout: Route.defaultTimeout)
            }
        }
    }
}
