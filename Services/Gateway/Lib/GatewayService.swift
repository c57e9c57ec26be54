public import SofaBus
public import SofaServer
public import SofaCore
public import SofaWire
public import Logging

/// `sofa-gateway`: the one endpoint clients use. It checks each request, routes it (documents and
/// databases to storage, query work through the broker to an idle worker, health to whoever it
/// names) and hands back the answer, or a clear error when a service cannot be reached.
public final class GatewayService: Sendable {
    public let storage: BusClient
    public let blob: BusClient
    public let replicator: BusClient
    public let broker: Broker
    public let changeWaiters = ChangeWaiters()
    private let basic: BasicHandler
    private let logger: Logger
    /// The longest a query may run (`SOFA_MAX_QUERY_MS`): a longer deadline is cut to it.
    public let maxQueryMs: UInt64

    public init(storage: BusClient, blob: BusClient, replicator: BusClient, broker: Broker, instance: String,
                maxQueryMs: Int = 120_000, logger: Logger) {
        self.maxQueryMs = UInt64(max(1, maxQueryMs))
        self.storage = storage
        self.blob = blob
        self.replicator = replicator
        self.broker = broker
        self.basic = BasicHandler(service: "gateway", instance: instance)
        self.logger = logger
    }

    public static func start(settings: Settings, logger: Logger) async throws -> @Sendable () async -> Void {
        let storage = try await BusClient.connect(settings.storageURL, peerName: "storage")
        let blob = try await BusClient.connect(settings.blobURL, peerName: "blob")
        let replicator = try await BusClient.connect(settings.replicatorURL, peerName: "replicator")
        let broker = try await Broker.bind(settings.brokerEndpoint, heartbeatMs: settings.heartbeatMs,
                                           clientShare: settings.queryClientShare, logger: logger)
        let gateway = GatewayService(storage: storage, blob: blob, replicator: replicator, broker: broker,
                                     instance: settings.instance ?? ServiceRuntime.defaultInstance("gateway"),
                                     maxQueryMs: settings.maxQueryMs, logger: logger)
        let waiters = gateway.changeWaiters
        let subscriber = try await Subscriber.connect(settings.changesURL, name: "changes", logger: logger) { frames in
            guard let payload = frames.last, let notice = CommitNotice.summary(payload) else { return }
            waiters.notify(notice)
        }
        // A client that goes away cancels its requests still running (queries stop on their worker).
        // Document reads and writes go on to storage as they came: neither they nor their
        // answers are decoded here (for a bulk write, that is most of the gateway's work).
        let forwarding = BusServer.Forwarding(operations: Set(Self.passedToStorage.keys).union(Self.passedToBlob.keys), accepts: { operation, payload in
            // A changes request that may wait (a long poll) is the gateway's own.
            operation != Self.changesField || (ForwardedRequest.varint(field: Self.changesWaitField, in: payload) ?? 0) == 0
        }, limits: settings.forwardingLimits, direct: { request, reply in
            // From the server's socket thread to the service's and back: no task in between.
            gateway.forward(request, then: reply)
        }) { request in
            await gateway.forward(request)
        }
        let server = try await BusServer.bind(settings.gatewayEndpoint, name: "gateway",
                                              maxRequestBytes: settings.maxRequestBytes, cancelOnDisconnect: true,
                                              replyBudget: ReplyBudget(perClient: settings.clientReplyBytes,
                                                                       total: settings.totalReplyBytes),
                                              forwarding: forwarding, logger: logger) { request in
            await gateway.handle(request)
        }
        logger.info("gateway serving", metadata: ["endpoint": "\(server.endpoint)", "broker": "\(broker.endpoint)"])
        return {
            await server.close()
            subscriber.close()
            broker.close()
            storage.close()
            blob.close()
            replicator.close()
        }
    }

    /// The operations (by field number of `Request`) that storage answers and the gateway only
    /// passes on, with their names for errors: put, get and delete of a document, insert with
    /// history, bulk write, changes that do not wait, all-docs, revs-diff.
    static let passedToStorage: [UInt32: String] = [
        15: "putDocument", 16: "getDocument", 17: "deleteDocument", 23: "insertRevision", 24: "bulkWrite",
        changesField: "changes", 32: "allDocs", 60: "revsDiff",
    ]
    /// The same for sofa-blob: blob uploads in chunks, reads and stats (the chunks are most of
    /// what a transfer moves).
    static let passedToBlob: [UInt32: String] = [
        37: "blobWriteBegin", 38: "blobWriteChunk", 39: "blobWriteEnd", 40: "blobWriteAbort", 41: "blobRead", 42: "blobStat",
    ]
    /// `Request.changes`, and `ChangesRequest.wait_ms`.
    static let changesField: UInt32 = 31
    static let changesWaitField: UInt32 = 8

    /// A request of `passedToStorage` or `passedToBlob`: to its service and back, undecoded.
    public func forward(_ request: ForwardedRequest) async -> EncodedMessage {
        await withCheckedContinuation { continuation in
            forward(request) { continuation.resume(returning: $0) }
        }
    }

    /// The same, answering through `reply` (on the service client's socket thread).
    public func forward(_ request: ForwardedRequest, then reply: @escaping @Sendable (EncodedMessage) -> Void) {
        guard !request.database.isEmpty else {
            let name = Self.passedToStorage[request.operationField] ?? Self.passedToBlob[request.operationField] ?? "this operation"
            return reply(Response.failure(request.id, SofaError(.invalidParameter, "\(name) needs a database name")).encodedMessage())
        }
        let service = Self.passedToBlob[request.operationField] != nil ? blob : storage
        service.forward(request, timeout: Self.forwardTimeout) { result in
            switch result {
            case .success(let bytes): reply(ForwardedResponse.encoded(bytes, id: request.id))  // copied here, once
            case .failure(let error): reply(Response.failure(request.id, error).encodedMessage())
            }
        }
    }

    static let forwardTimeout: Duration = .seconds(30)
    static let rekeyTimeout: Duration = .seconds(3600)

    public func handle(_ request: Request) async -> Response {
        switch request.operation {
        case .health(let service), .echo(_, _, let service):
            return await route(request, to: service)
        case .clusterStatus:
            return .ok(request.id, .cluster(await clusterStatus()))
        case .listDatabases:
            return await storage.send(request, timeout: Self.forwardTimeout)
        case .changes(let query) where query.waitMs > 0 && !query.descending && !request.database.isEmpty:
            return await longPoll(request, query)
        case .query:
            guard !request.database.isEmpty else {
                return .failure(request.id, SofaError(.invalidParameter, "query needs a database name"))
            }
            return await query(request)
        case .createDatabase(let versioning, let key?):
            return await createEncryptedDatabase(request, versioning: versioning, key: key)
        case .rekeyDatabase:
            guard !request.database.isEmpty else {
                return .failure(request.id, SofaError(.invalidParameter, "rekeyDatabase needs a database name"))
            }
            // Every blob is rewritten: allow as long as a big store takes.
            return await blob.send(request, timeout: Self.rekeyTimeout)
        case .startReplication, .stopReplication:
            return await replicator.send(request, timeout: Self.forwardTimeout)
        case .listReplications(_, _, let waitMs):
            // A status wait is held by the replicator: allow it that long, plus the usual margin.
            return await replicator.send(request, timeout: Self.forwardTimeout + .milliseconds(Int(min(waitMs, 60_000))))
        case .blobWriteBegin, .blobWriteChunk, .blobWriteEnd, .blobWriteAbort, .blobRead, .blobStat:
            // Blobs belong to sofa-blob, which checks the database exists.
            guard !request.database.isEmpty else {
                return .failure(request.id, SofaError(.invalidParameter, "\(request.operation.name) needs a database name"))
            }
            return await blob.send(request, timeout: Self.forwardTimeout)
        default:
            // Everything else is about one database, and storage owns databases.
            guard !request.database.isEmpty else {
                return .failure(request.id, SofaError(.invalidParameter, "\(request.operation.name) needs a database name"))
            }
            return await storage.send(request, timeout: Self.forwardTimeout)
        }
    }

    /// A query through the broker, counted against its client's share of the workers. Its own
    /// deadline governs up to `maxQueryMs`; one without a deadline gets the forwarding default.
    /// The deadline the worker sees is cut too, so a worker stops a query the broker gave up on.
    private func query(_ request: Request) async -> Response {
        let now = wallClockMs()
        let cap = now + maxQueryMs
        let asked = request.deadline != 0 ? request.deadline : now + UInt64(Self.forwardTimeout.components.seconds) * 1000
        var bounded = request
        bounded.deadline = min(asked, cap)
        var response = await broker.submit(bounded, client: BusServer.client, timeout: .milliseconds(Int(maxQueryMs)))
        if asked > cap, case .failure(let error) = response.outcome, error.is(.timeout) {
            response = .failure(request.id, .timeout("\(error.message): a query may run at most \(maxQueryMs) ms "
                + "(the server's limit, SOFA_MAX_QUERY_MS), and its longer deadline was cut to that"))
        }
        return response
    }

    /// An encrypted database: storage creates it (without the key: storage never sees keys), then
    /// sofa-blob takes the key and keeps it (see `KeyFile` in SofaBlob). If sofa-blob cannot, the
    /// database is deleted again and the error returned: a database asked for encrypted never
    /// stays plain.
    private func createEncryptedDatabase(_ request: Request, versioning: Versioning, key: EncryptionKey) async -> Response {
        var plain = request
        plain.operation = .createDatabase(versioning: versioning)
        let created = await storage.send(plain, timeout: Self.forwardTimeout)
        guard case .success = created.outcome else { return created }
        let keyed = await blob.send(request, timeout: Self.forwardTimeout)
        guard case .failure(let error) = keyed.outcome else { return keyed }
        var undo = request
        undo.operation = .deleteDatabase
        let undone = await storage.send(undo, timeout: Self.forwardTimeout)
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
            let response = await storage.send(forwarded, timeout: Self.forwardTimeout)
            guard case .success(.changes(let batch)) = response.outcome, batch.changes.isEmpty else { return response }
            let remaining = deadline - ContinuousClock.now
            if remaining <= .zero { return response }
            await changeWaiters.wait(database: request.database, collection: request.collection,
                                     beyond: max(batch.lastSequence, query.since), timeout: remaining)
            if ContinuousClock.now >= deadline {
                return await storage.send(forwarded, timeout: Self.forwardTimeout)
            }
        }
    }

    private func route(_ request: Request, to service: String) async -> Response {
        var forwarded = request
        if case .health = request.operation { forwarded.operation = .health(service: "") }
        if case .echo(let payload, let delay, _) = request.operation {
            forwarded.operation = .echo(payload: payload, delayMs: delay, service: "")
        }
        switch service {
        case "", "gateway": return await basic.handle(request)
        case "storage": return await storage.send(forwarded, timeout: Self.forwardTimeout)
        case "blob": return await blob.send(forwarded, timeout: Self.forwardTimeout)
        case "replicator": return await replicator.send(forwarded, timeout: Self.forwardTimeout)
        case "query": return await broker.submit(forwarded, timeout: Self.forwardTimeout)
        default:
            return .failure(request.id, SofaError(.invalidParameter,
                "unknown service '\(service)': use storage, query, blob, replicator or gateway"))
        }
    }

    /// Every service's health, asked concurrently with a short deadline.
    public func clusterStatus() async -> [ServiceStatus] {
        async let storageHealth = probe(storage)
        async let blobHealth = probe(blob)
        async let replicatorHealth = probe(replicator)
        let workers = broker.snapshot
        var services = [ServiceStatus(name: "gateway", healthy: true, detail: basic.instance, instances: 1)]
        for (name, outcome) in [("storage", await storageHealth), ("blob", await blobHealth),
                                ("replicator", await replicatorHealth)] {
            switch outcome {
            case .success(let info):
                services.append(ServiceStatus(name: name, healthy: true, detail: "\(info.instance) pid \(info.pid)", instances: 1))
            case .failure(let error):
                services.append(ServiceStatus(name: name, healthy: false, detail: error.message, instances: 0))
            }
        }
        services.append(ServiceStatus(
            name: "query", healthy: !workers.workers.isEmpty,
            detail: workers.workers.isEmpty ? "no query worker connected"
                : "workers: \(workers.workers.joined(separator: ",")); busy: \(workers.busyWorkers.joined(separator: ",")); queued: \(workers.queued)",
            instances: UInt32(workers.workers.count)))
        return services
    }

    private func probe(_ client: BusClient) async -> Result<HealthInfo, SofaError> {
        do {
            let reply = try await client.call(.health(service: ""), timeout: .seconds(1))
            guard case .health(let info) = reply else {
                return .failure(SofaError(.unexpectedError, "\(client.peerName) sent no health"))
            }
            return .success(info)
        } catch {
            return .failure(error)
        }
    }
}
