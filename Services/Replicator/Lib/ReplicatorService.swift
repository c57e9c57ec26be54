public import SofaBus
internal import SofaCore
public import SofaWire
public import Logging

/// `sofa-replicator`: runs replications between databases of this cluster and of other Sofa
/// clusters (see `Replication`), started, listed and stopped through the gateway.
public final class ReplicatorService: Sendable {
    let registry = ReplicationRegistry()
    let connections: Connections
    private let basic: BasicHandler
    private let logger: Logger

    public init(localGateway: String, instance: String, logger: Logger) {
        self.connections = Connections(localGateway: localGateway)
        self.basic = BasicHandler(service: "replicator", instance: instance)
        self.logger = logger
    }

    public static func start(settings: Settings, logger: Logger) async throws -> @Sendable () async -> Void {
        let service = ReplicatorService(localGateway: settings.gatewayEndpoint,
                                        instance: settings.instance ?? ServiceRuntime.defaultInstance("replicator"),
                                        logger: logger)
        let server = try await BusServer.bind(settings.replicatorEndpoint, name: "replicator",
                                              maxRequestBytes: settings.maxRequestBytes, logger: logger) { request in
            await service.handle(request)
        }
        logger.info("replicator serving", metadata: ["endpoint": "\(server.endpoint)", "gateway": "\(settings.gatewayEndpoint)"])
        let persistent = PersistentReplications(service: service, logger: logger)
        let follower = Task { await persistent.run() }
        return {
            follower.cancel()
            await server.close()
            await service.registry.stopAll()
            await service.connections.closeAll()
        }
    }

    public func handle(_ request: Request) async -> Response {
        do throws(SofaError) {
            switch request.operation {
            case .startReplication(let spec):
                return .ok(request.id, .replications(try await start(spec)))
            case .stopReplication(let id):
                return .ok(request.id, .replications([try await registry.stop(id)]))
            case .listReplications(let id, let after, let waitMs):
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

    /// Starts the replication (two for `both`) and answers their statuses.
    func start(_ spec: ReplicationSpec) async throws(SofaError) -> [ReplicationStatus] {
        let source = try ReplicationEndpoint.parse(spec.source)
        let target = try ReplicationEndpoint.parse(spec.target)
        guard source != target else {
            throw SofaError(.invalidParameter, "a replication needs two different databases ('\(spec.source)' twice)")
        }
        for id in spec.docIDs where !DocumentID.isValid(id) {
            throw SofaError(.badDocID, "invalid document ID '\(id)' in the replication's filter")
        }
        let legs: [(ReplicationEndpoint, ReplicationEndpoint)]
        switch spec.direction {
        case .push: legs = [(source, target)]
        case .pull: legs = [(target, source)]
        case .both: legs = [(source, target), (target, source)]
        }
        var started: [ReplicationStatus] = []
        for (from, to) in legs {
            let id = ReplicationID.derive(source: from, target: to, docIDs: spec.docIDs, filter: spec.filter,
                                          collection: spec.collection)
            let plan = ReplicationPlan(id: id, source: from, target: to, continuous: spec.continuous, docIDs: spec.docIDs,
                                       filter: spec.filter, conflicts: spec.conflicts, collection: spec.collection)
            let replication = Replication(plan: plan, connections: connections, registry: registry, logger: logger)
            let initial = ReplicationStatus(id: id, source: from.description, target: to.description,
                                            continuous: spec.continuous, state: .starting, docIDs: spec.docIDs,
                                            filter: spec.filter, conflicts: spec.conflicts, collection: spec.collection)
            started.append(await registry.start(initial) { await replication.run() })
            logger.info("replication started", metadata: ["replication": "\(id.prefix(12))", "source": "\(from)",
                                                          "target": "\(to)", "continuous": "\(spec.continuous)"])
        }
        return started
    }
}
