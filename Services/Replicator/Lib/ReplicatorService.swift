import SofaBus
public import SofaServer
internal import SofaCore
public import SofaWire
public import Logging

/// `sofa-replicator`: runs replications between databases of this cluster and of other Sofa
/// clusters (see `Replication`), started, listed and stopped through the gateway.
public final class ReplicatorService: Sendable {
    let registry: ReplicationRegistry
    let connections: Connections
    /// The `_replicator` records of the replications clients start.
    let clientRecords: ClientReplications
    private let basic: BasicHandler
    private let logger: Logger

    public init(localGateway: String, instance: String, logger: Logger) {
        let registry = ReplicationRegistry()
        let connections = Connections(localGateway: localGateway)
        self.registry = registry
        self.connections = connections
        self.clientRecords = ClientReplications(connections: connections, registry: registry)
        self.basic = BasicHandler(service: "replicator", instance: instance)
        self.logger = logger
    }

    /// Brings the replicator up; its parts, for the process's service group.
    public static func start(settings: Settings, logger: Logger) async throws -> [any ProcessPart] {
        let service = ReplicatorService(localGateway: settings.gatewayURL,
                                        instance: settings.instance ?? ServiceRuntime.defaultInstance("replicator"),
                                        logger: logger)
        let server = try await BusServer.bind(settings.replicatorEndpoint, name: "replicator",
                                              maxRequestBytes: settings.maxRequestBytes, logger: logger) { request in
            await service.handle(request)
        }
        logger.info("replicator serving", metadata: ["endpoint": "\(server.endpoint)", "gateway": "\(settings.gatewayURL)"])
        let persistent = PersistentReplications(service: service, logger: logger, httpAddress: settings.value(Setting.httpAddress.rawValue))
        // Stopped in reverse: the `_replicator` follower, then the status writers and client
        // records, the server, and last the replications and their connections.
        return [
            ShutdownStep {
                await service.registry.stopAll()
                await service.connections.closeAll()
            },
            SocketLoopService(server.socketLoop),
            ShutdownStep {
                await persistent.stopWriting()
                await service.clientRecords.close()
            },
            BackgroundService { await persistent.run() },
        ]
    }

    public func handle(_ request: Request) async -> Response {
        do throws(SofaError) {
            switch request.operation {
            case .startReplication(let spec):
                return .ok(request.id, .replications(try await startRecorded(spec)))
            case .stopReplication(let id):
                if await registry.status(id) == nil, await registry.waitUntilLoaded(timeout: Self.loadWait) {
                    throw SofaError.notFound("no replication '\(id)'")
                }
                return .ok(request.id, .replications([try await clientRecords.stop(id)]))
            case .listReplications(let id, let after, let waitMs):
                // Until `_replicator` has been read, the recorded replications are not all known.
                let known = id.isEmpty ? nil : await registry.status(id)
                if known == nil {
                    guard await registry.waitUntilLoaded(timeout: Self.loadWait) else {
                        throw SofaError.unavailable("the replicator has not yet read the replications recorded in "
                                                    + "\(PersistentReplications.database): ask again")
                    }
                }
                guard !id.isEmpty else { return .ok(request.id, .replications(await registry.all)) }
                if waitMs > 0 {
                    await registry.waitForChange(id, after: after, timeout: .milliseconds(Int(min(waitMs, 60_000))))
                }
                guard let status = await registry.status(id) else { throw SofaError.notFound("no replication '\(id)'") }
                return .ok(request.id, .replications([status]))
            default:
                return await basic.handle(request)
            }
        } catch {
            return .failure(request.id, error)
        }
    }

    /// How long a request about replications waits for `_replicator` to be read after a launch.
    static let loadWait: Duration = .seconds(10)

    /// Starts a client's replication and records it in `_replicator`, so that it survives a
    /// restart of the replicator. One that cannot be recorded is not left running.
    /// The start and the record are made with the IDs locked, so that the end of an earlier run
    /// (deleting its record) cannot come between them.
    func startRecorded(_ spec: ReplicationSpec) async throws(SofaError) -> [ReplicationStatus] {
        let plans = try plan(spec)
        let ids = plans.map(\.id)
        await clientRecords.lock(ids)
        var before: [String: UInt64] = [:]
        for id in ids { before[id] = await registry.run(of: id) }
        do {
            let started = try await start(spec)
            try await clientRecords.record(plans)
            await clientRecords.unlock(ids)
            return started
        } catch {
            for id in ids {
                if let run = await registry.run(of: id), run != before[id] { _ = try? await registry.stop(id, run: run) }
            }
            await clientRecords.unlock(ids)
            throw SofaError(error.domain, error.code, "the replication was not started: it could not be recorded in "
                            + "\(PersistentReplications.database) (\(error.message))")
        }
    }

    /// The replications `spec` asks for (two for `both`), with their IDs; nothing is started.
    func plan(_ spec: ReplicationSpec) throws(SofaError) -> [ReplicationPlan] {
        let source = try ReplicationEndpoint.parse(spec.source)
        let target = try ReplicationEndpoint.parse(spec.target)
        guard source != target else {
            throw SofaError(.invalidParameter, "a replication needs two different databases ('\(spec.source)' twice)")
        }
        for id in spec.docIDs where !DocumentID.isValid(id) {
            throw SofaError(.badDocID, "invalid document ID '\(id)' in the replication's filter")
        }
        typealias Side = (endpoint: ReplicationEndpoint, access: RemoteAccess?)
        let legs: [(Side, Side)]
        let ours: Side = (source, spec.sourceAccess), theirs: Side = (target, spec.targetAccess)
        switch spec.direction {
        case .push: legs = [(ours, theirs)]
        case .pull: legs = [(theirs, ours)]
        case .both: legs = [(ours, theirs), (theirs, ours)]
        }
        for side in [ours, theirs] where side.access != nil && side.endpoint.gateway == nil {
            throw SofaError(.invalidParameter, "credentials are for another cluster's database, not for '\(side.endpoint)'")
        }
        return legs.map { from, to in
            let id = ReplicationID.derive(source: from.endpoint, target: to.endpoint, docIDs: spec.docIDs, filter: spec.filter,
                                          collection: spec.collection, designFilter: spec.designFilter, queryParams: spec.queryParams,
                                          since: spec.since)
            var plan = ReplicationPlan(id: id, source: from.endpoint, target: to.endpoint, continuous: spec.continuous,
                                       docIDs: spec.docIDs, filter: spec.filter, conflicts: spec.conflicts,
                                       collection: spec.collection)
            plan.owner = spec.owner
            plan.designFilter = spec.designFilter
            plan.queryParams = spec.queryParams
            plan.since = spec.since
            plan.sourceAccess = from.access
            plan.targetAccess = to.access
            return plan
        }
    }

    /// Starts the replication (two for `both`) and answers their statuses.
    func start(_ spec: ReplicationSpec) async throws(SofaError) -> [ReplicationStatus] {
        var started: [ReplicationStatus] = []
        for plan in try plan(spec) {
            let initial = ReplicationStatus(id: plan.id, source: plan.source.description, target: plan.target.description,
                                            continuous: plan.continuous, state: .starting, docIDs: plan.docIDs,
                                            filter: plan.filter, conflicts: plan.conflicts, collection: plan.collection,
                                            designFilter: plan.designFilter)
            started.append(await registry.start(initial) { [connections, registry, logger] run in
                await Replication(plan: plan, run: run, connections: connections, registry: registry, logger: logger).run()
            })
            logger.info("replication started", metadata: ["replication": "\(plan.id.prefix(12))", "source": "\(plan.source)",
                                                          "target": "\(plan.target)", "continuous": "\(plan.continuous)"])
        }
        return started
    }
}
