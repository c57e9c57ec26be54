public import Logging
import SofaCore
public import SofaBus
public import SofaFiles
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

    /// Runs a process until SIGTERM/SIGINT. `start` brings its parts up and returns them as
    /// services (see ProcessParts.swift), in the order they depend on each other: one service
    /// group runs them and, on a signal, or when one of them ends, stops them in reverse order.
    public static func main(
        service: String,
        start: @escaping @Sendable (Settings, Logger) async throws -> [any ProcessPart]
    ) async {
        // Every file and folder a service creates (databases, their WAL, blobs, keys, sockets) is
        // readable and writable by the service's user alone.
        umask(0o077)
        // A write to a pipe whose reader is gone (a `sofa-js` child that died, a client gone) is
        // an error the writer handles, never the end of the process.
        signal(SIGPIPE, SIG_IGN)
        let settings = Settings(role: ServiceRole(rawValue: service))
        let level = Logger.Level(rawValue: settings.logLevel.lowercased()) ?? .info
        LoggingSystem.bootstrap { label in SofaLogHandler(label: label, level: level) }
        let logger = {
            var logger = Logger(label: "sofa-\(service)")
            logger[metadataKey: "pid"] = "\(getpid())"
            return logger
        }()
        var parts: [any ProcessPart]
        do {
            // Transport security first: every TCP socket the parts open speaks CURVE with the
            // cluster's key, and the ZAP handler decides who may connect.
            let zap = try await secureTransport(settings, logger: logger)
            parts = try await start(settings, logger)
            if let zap { parts.insert(SocketLoopService(zap.socketLoop), at: 0) }
        } catch {
            logger.critical("failed", metadata: ["error": "\(error)"])
            exit(1)
        }
        logger.info("ready", metadata: ["allocator": "\(ServiceRuntime.allocatorProfile)"])
        var services: [any Service] = parts
        if let supervisor = settings.supervisorPID {
            // Under `sofa up`: stop when the supervisor vanishes (killed without a chance to stop us).
            services.append(BackgroundService {
                while getppid() == supervisor && !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(500))
                }
                if !Task.isCancelled { logger.warning("the supervisor is gone") }
            })
        }
        // Whichever part ends first (the supervisor's watch, a socket loop that failed) stops the
        // others gracefully, as a signal does.
        let group = ServiceGroup(configuration: .init(
            services: services.map { .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                                           failureTerminationBehavior: .gracefullyShutdownGroup) },
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
            logger.info("stopped")
        } catch {
            logger.critical("failed", metadata: ["error": "\(error)"])
            exit(1)
        }
    }

    /// Loads (or, in a new secrets folder, creates) the cluster's key pair, makes it this
    /// process's, and starts the ZAP handler; nil when CURVE is off (`SOFA_CURVE=off`).
    /// A libzmq without CURVE stops the process: it would serve in clear.
    static func secureTransport(_ settings: Settings, logger: Logger) async throws -> ZAPHandler? {
        guard settings.curveEnabled else {
            logger.warning("CURVE is off (SOFA_CURVE=off): TCP traffic is in clear and unauthenticated; for benchmarks only")
            Curve.configure(cluster: nil)
            return nil
        }
        guard Curve.isAvailable else {
            throw SofaError(.unsupported, "this libzmq cannot speak CURVE (built without libsodium): refusing to serve in clear")
        }
        let keys = try clusterKeys(settings.keysFolder)
        Curve.configure(cluster: keys)
        return try await ZAPHandler.start(cluster: keys, logger: logger)
    }

    /// The cluster's CURVE pair in `folder` (`cluster.key`), made there first when there is none.
    public static func clusterKeys(_ folder: SecretsFolder) throws -> CurveKeyPair {
        let file = try ClusterKeyFile.load(in: folder) {
            let pair = try CurveKeyPair.generate()
            return (pair.publicKey, pair.secretKey)
        }
        guard let keys = CurveKeyPair(secretKey: file.secret), keys.publicKey == file.public else {
            throw SofaError(.corruptData, "\(folder.path)/\(SecretsFolder.clusterKeyFile) holds no valid CURVE key pair")
        }
        return keys
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

    /// Gives the free pages inside the C heap back to the system: the heap keeps what requests of
    /// megabytes freed (only its top is given back by itself), which a process holding to a memory
    /// bound then carries into its next peak.
    public static func releaseFreeMemory() {
        _ = sofa_malloc_release_free()
    }

    /// The health answer of this process.
    public static func health(service: String, instance: String, started: ContinuousClock.Instant) -> HealthInfo {
        let uptime = ContinuousClock.now - started
        return HealthInfo(service: service, version: version, pid: UInt32(getpid()),
                          uptimeMs: UInt64(uptime.components.seconds) * 1000
                              + UInt64(uptime.components.attoseconds / 1_000_000_000_000_000),
                          instance: instance, batches: true)
    }

    /// A default instance name: service, host and pid.
    public static func defaultInstance(_ service: String) -> String {
        "\(service)-\(ProcessInfo.processInfo.hostName)-\(getpid())"
    }
}

