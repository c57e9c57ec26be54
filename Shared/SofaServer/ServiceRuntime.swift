import SofaBus
public import Logging
import SofaCore
public import SofaWire
internal import Foundation
internal import ServiceLifecycle
internal import UnixSignals
internal import CSofaMalloc

/// What every Sofa process shares: logging set up from `SOFA_LOG_LEVEL`, its settings, a
/// health answer, and a run loop that starts the process's parts and stops them gracefully on
/// SIGTERM or SIGINT.
public enum ServiceRuntime {
    public static let version = "0.1.0"

    /// Runs a process until SIGTERM/SIGINT. `start` brings its parts up and returns how to stop them.
    public static func main(
        service: String,
        start: @escaping @Sendable (Settings, Logger) async throws -> (@Sendable () async -> Void)
    ) async {
        let settings = Settings(role: ServiceRole(rawValue: service))
        let level = Logger.Level(rawValue: settings.logLevel.lowercased()) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = {
            var logger = Logger(label: "sofa-\(service)")
            logger[metadataKey: "pid"] = "\(getpid())"
            return logger
        }()
        let process = ProcessService(start: { try await start(settings, logger) }, supervisor: settings.supervisorPID,
                                     logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: process)], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
            logger.info("stopped")
        } catch {
            logger.critical("failed", metadata: ["error": "\(error)"])
            exit(1)
        }
    }

    /// How the C allocator was set up for this process, before `main` (see
    /// Shared/CSofaMalloc/sofa_malloc.c): "untuned", "general" or "large buffers".
    public static var allocatorProfile: String {
        switch sofa_malloc_profile() {
        case SOFA_MALLOC_GENERAL: "general"
        case SOFA_MALLOC_LARGE_BUFFERS: "large buffers"
        default: "untuned"
        }
    }

    /// The health answer of this process.
    public static func health(service: String, instance: String, started: ContinuousClock.Instant) -> HealthInfo {
        let uptime = ContinuousClock.now - started
        return HealthInfo(service: service, version: version, pid: UInt32(getpid()),
                          uptimeMs: UInt64(uptime.components.seconds) * 1000
                              + UInt64(uptime.components.attoseconds / 1_000_000_000_000_000),
                          instance: instance)
    }

    /// A default instance name: service, host and pid.
    public static func defaultInstance(_ service: String) -> String {
        "\(service)-\(ProcessInfo.processInfo.hostName)-\(getpid())"
    }
}

private struct ProcessService: Service {
    let start: @Sendable () async throws -> (@Sendable () async -> Void)
    /// Under `sofa up`, the supervisor's pid.
    let supervisor: Int32?
    let logger: Logger

    func run() async throws {
        let stop = try await start()
        logger.info("ready", metadata: ["allocator": "\(ServiceRuntime.allocatorProfile)"])
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Wait for SIGTERM/SIGINT (or cancellation)…
            group.addTask { try? await gracefulShutdown() }
            // …or, under `sofa up`, for the supervisor to vanish (killed without a chance to stop us).
            if let parent = supervisor {
                group.addTask {
                    while getppid() == parent && !Task.isCancelled {
                        try await Task.sleep(for: .milliseconds(500))
                    }
                    logger.warning("the supervisor is gone")
                }
            }
            _ = try await group.next()
            group.cancelAll()
        }
        logger.info("shutting down")
        await stop()
    }
}
