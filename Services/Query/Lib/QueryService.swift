public import SofaBus
public import Logging

/// `sofa-query`: a worker that connects to the gateway's broker, announces itself, heartbeats and
/// takes requests one at a time. It answers health and echo; queries arrive in a later version.
public enum QueryService {
    public static func start(settings: Settings, logger: Logger) async throws -> @Sendable () async -> Void {
        let instance = settings.instance ?? ServiceRuntime.defaultInstance("query")
        let handler = BasicHandler(service: "query", instance: instance)
        let worker = try BrokerWorker.start(broker: settings.brokerEndpoint, service: "query", instance: instance,
                                            heartbeatMs: settings.heartbeatMs, logger: logger) { request in
            await handler.handle(request)
        }
        logger.info("query worker started", metadata: ["broker": "\(settings.brokerEndpoint)", "instance": "\(instance)"])
        return { await worker.close() }
    }
}
