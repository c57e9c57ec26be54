public import SofaBus
public import Logging

/// `sofa-replicator`: registers on its endpoint and answers health; its features arrive later.
public enum ReplicatorService {
    public static func start(settings: Settings, logger: Logger) async throws -> @Sendable () async -> Void {
        let handler = BasicHandler(service: "replicator", instance: settings.instance ?? ServiceRuntime.defaultInstance("replicator"))
        let server = try await BusServer.bind(settings.replicatorEndpoint, name: "replicator",
                                              maxRequestBytes: settings.maxRequestBytes, logger: logger) { request in
            await handler.handle(request)
        }
        logger.info("replicator serving", metadata: ["endpoint": "\(server.endpoint)"])
        return { await server.close() }
    }
}
