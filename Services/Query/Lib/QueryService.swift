import SofaBus
public import SofaServer
public import Logging
internal import Foundation

/// `sofa-query`: a worker that connects to the gateway's broker, announces itself, heartbeats and
/// takes up to `capacity` requests at once: queries (run by `QueryEngine` on the shared data volume,
/// read-only), views (`ViewEngine`: their indexes are the workers' to write), health and echo.
public enum QueryService {
    /// Queries the broker hands a worker at once. They run one after the other on the engine's
    /// queue; the ones waiting save the round trip to the broker between two queries. The broker
    /// gives a new query to the least busy worker, so N workers still run N queries at once, and
    /// queues one behind another only if both are the same client's and the one running is
    /// younger than its prefetch bound (a long query does not hold up the next).
    /// Measured (`sofa bench query`, 16 lookups in flight, 1 worker): with 4, the engine sat idle
    /// while replies and new jobs crossed the gateway (a round trip is longer than four point
    /// lookups), 6.1–6.5k lookups/s; with 16, 10–11.6k/s. With 64 lookups in flight, 16 left the
    /// engine idle the same way (the other 48 waited at the gateway for replies to cross): 1
    /// worker, 24.5–34.2k/s with 16 against 45.9–50.9k/s with 64, when the three processes use
    /// both cores. Past 16 held jobs the broker sends more only of jobs known to be short
    /// (`BrokerState.shallowDepth`), so the deeper queue never holds slow queries.
    static let capacity = 64

    /// Brings the worker up; its parts, for the process's service group (its socket loop, which says
    /// DISCONNECT to the broker as it stops).
    public static func start(settings: Settings, logger: Logger) async throws -> [any ProcessPart] {
        let instance = settings.instance ?? ServiceRuntime.defaultInstance("query")
        let handler = BasicHandler(service: "query", instance: instance)
        let engine = QueryEngine(dataDirectory: URL(fileURLWithPath: settings.dataDirectory))
        let views = ViewEngine(dataDirectory: URL(fileURLWithPath: settings.dataDirectory), logger: logger)
        let functions = DesignFunctions(dataDirectory: URL(fileURLWithPath: settings.dataDirectory), logger: logger)
        let worker = try await BrokerWorker.start(broker: settings.brokerURL, service: "query", instance: instance,
                                            heartbeatMs: settings.heartbeatMs, capacity: Self.capacity,
                                            logger: logger, direct: { request, reply in
            // Queries and view queries go from the worker's socket thread to their engine's queue
            // and back, with no task.
            if case .viewQuery(let design, let view, let options) = request.operation {
                views.handle(request, design: design, view: view, options: options, reply: reply)
                return {}
            }
            guard case .query(let spec) = request.operation else { return nil }
            return engine.handle(request, spec, reply: reply)
        }, batchBegins: { engine.beginBatch() }, batchEnds: { engine.endBatch() }) { request in
            if case .query(let spec) = request.operation { return await engine.handle(request, spec) }
            if case .viewQuery(let design, let view, let options) = request.operation {
                return await views.handle(request, design: design, view: view, options: options)
            }
            if case .designCall(let call) = request.operation {
                switch call.kind {
                case .validate, .filter, .compile: return await functions.handle(request, call)
                case .cleanup, .info, .compact: return await views.handle(request, call)
                }
            }
            return await handler.handle(request)
        }
        logger.info("query worker started", metadata: ["broker": "\(settings.brokerURL)", "instance": "\(instance)"])
        return [SocketLoopService(worker.socketLoop)]
    }
}
