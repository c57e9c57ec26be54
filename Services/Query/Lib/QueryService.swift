public import SofaBus
public import Logging
internal import Foundation

/// `sofa-query`: a worker that connects to the gateway's broker, announces itself, heartbeats and
/// takes requests one at a time: queries (run by `QueryEngine` on the shared data volume,
/// read-only), health and echo.
public enum QueryService {
    public static func start(settings: Settings, logger: Logger) async throws -> @Sendable () async -> Void {
        let instance = settings.instance ?? ServiceRuntime.defaultInstance("query")
        let handler = BasicHandler(service: "query", instance: instance)
        let engine = QueryEngine(dataDirectory: URL(fileURLWithPath: settings.dataDirectory))
        let worker = try BrokerWorker.start(broker: settings.brokerEndpoint, service: "query", instance: instance,
                                            heartbeatMs: settings.heartbeatMs, logger: logger) { request in
            if case .query(let spec) = request.operation { return await engine.handle(request, spec) }
            return await handler.handle(request)
        }
        logger.info("query worker started", metadata: ["broker": "\(settings.brokerEndpoint)", "instance": "\(instance)"])
        return { await worker.close() }
    }
}
