import SofaBus
public import SofaServer
public import Logging
internal import SofaWire
internal import Foundation

/// `sofa-blob`: registers on its endpoint, answers health, and serves blob transfer
/// (`BlobTransfer`) for every database under the data directory.
public enum BlobService {
    /// Brings sofa-blob up; its parts, for the process's service group.
    public static func start(settings: Settings, logger: Logger) async throws -> [any ProcessPart] {
        let handler = BasicHandler(service: "blob", instance: settings.instance ?? ServiceRuntime.defaultInstance("blob"))
        let idleMs = settings.blobIdleMs
        let transfer = BlobTransfer(dataDirectory: URL(fileURLWithPath: settings.dataDirectory, isDirectory: true),
                                    idleTimeout: .milliseconds(idleMs), maxBlobBytes: settings.maxBlobBytes)
        let server = try await BusServer.bind(settings.blobEndpoint, name: "blob",
                                              maxRequestBytes: settings.maxRequestBytes, logger: logger) { request in
            if let response = await transfer.handle(request) { return response }
            return await handler.handle(request)
        }
        logger.info("blob serving", metadata: ["endpoint": "\(server.endpoint)", "idleMs": "\(idleMs)"])
        // Stopped in reverse: the server first, then the open uploads (their files go), then the reaper.
        return [BackgroundService { await transfer.runReaper() }, ShutdownStep { await transfer.stop() },
                SocketLoopService(server.socketLoop)]
    }
}
