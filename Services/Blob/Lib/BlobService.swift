public import SofaBus
public import Logging

/// `sofa-blob`: registers on its endpoint and answers health; its features arrive later.
public enum BlobService {
    public static func start(settings: Settings, logger: Logger) async throws -> @Sendable () async -> Void {
        let handler = BasicHandler(service: "blob", instance: settings.instance ?? ServiceRuntime.defaultInstance("blob"))
        let server = try await BusServer.bind(settings.blobEndpoint, name: "blob",
                                              maxRequestBytes: settings.maxRequestBytes, logger: logger) { request in
            await handler.handle(request)
        }
        logger.info("blob serving", metadata: ["endpoint": "\(server.endpoint)"])
        return { await server.close() }
    }
}
