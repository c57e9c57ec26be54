import CZeroMQ
import Foundation
import SofaCluster
import SofaBus
import SofaServer
import SofaClient
import SofaCore
import SofaWire
import SofaFiles
import Testing

/// One secrets folder for every cluster this test process starts: they share the cluster's key
/// (so that one cluster's replicator is another's own service, as with clusters deployed with one
/// key) and the first server admin. Removed when the process exits.
enum TestSecrets {
    static let folder: SecretsFolder = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-test-keys-\(getpid())").path
        atexit {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-test-keys-\(getpid())").path
            try? FileManager.default.removeItem(atPath: path)
        }
        return SecretsFolder(path)
    }()

    /// The cluster's key pair (made on first use).
    static let cluster: CurveKeyPair = {
        do { return try ServiceRuntime.clusterKeys(folder) } catch { fatalError("cannot make the test cluster key: \(error)") }
    }()

    /// A client of a test cluster's sockets speaking as the cluster (a server admin at the gateway).
    static var internalClient: ClientKeys { ClientKeys(serverKey: cluster.publicKey, keys: cluster) }
}

/// A whole cluster started through the same supervisor code as `sofa up`, in a temporary
/// directory with a free gateway port; always stopped and removed at the end.
struct Cluster {
    let supervisor: Supervisor
    let directory: URL
    let client: SofaClient

    /// `heartbeatMs` is the services' own default: a worker is declared dead after three silent
    /// periods, and a shorter one (FaultTests' 200 ms, to find dead workers fast) can take a
    /// worker that merely waited for a core on a loaded machine for a dead one.
    /// It waits for one of `ClusterSlots` before starting.
    static func with<T>(
        queryWorkers: Int = 1, heartbeatMs: Int = 500, clientTimeout: Duration = .seconds(10),
        gatewayPort: Int? = nil, http: Bool = false, settings: [String: String] = [:], _ body: (Cluster) async throws -> T
    ) async throws -> T {
        try await ClusterSlots.withSlot {
            try await run(queryWorkers: queryWorkers, heartbeatMs: heartbeatMs, clientTimeout: clientTimeout,
                          gatewayPort: gatewayPort, http: http, settings: settings, body)
        }
    }

    private static func run<T>(
        queryWorkers: Int, heartbeatMs: Int, clientTimeout: Duration,
        gatewayPort: Int?, http: Bool, settings: [String: String], _ body: (Cluster) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-it-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let logFile = directory.appendingPathComponent("cluster.log")
        try #require(FileManager.default.createFile(atPath: logFile.path, contents: nil), "cannot create \(logFile.path)")
        let log = try FileHandle(forWritingTo: logFile)
        _ = TestSecrets.cluster
        let settings = settings.merging([Setting.keysDir.variable: TestSecrets.folder.path]) { given, _ in given }
        func makeSupervisor() throws -> Supervisor {
            try Supervisor(.init(dataDirectory: directory.appendingPathComponent("data"),
                                 gatewayPort: try gatewayPort ?? freePort(), httpPort: http ? try freePort() : nil,
                                 queryWorkers: queryWorkers,
                                 heartbeatMs: heartbeatMs, logLevel: "info", settings: settings)) { line in
                log.write(Data((line + "\n").utf8))
            }
        }
        let supervisor: Supervisor
        do {
            supervisor = try await started(makeSupervisor, newPorts: gatewayPort == nil)
        } catch {
            dumpLog(logFile)
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        do {
            let client = try await supervisor.connect(timeout: clientTimeout)
            let cluster = Cluster(supervisor: supervisor, directory: directory, client: client)
            let result: T
            do {
                result = try await body(cluster)
            } catch {
                client.close()
                await supervisor.stop()
                dumpLog(logFile)
                throw error
            }
            client.close()
            await supervisor.stop()
            try? FileManager.default.removeItem(at: directory)
            return result
        } catch {
            await supervisor.stop()
            dumpLog(logFile)
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// A started cluster made by `make`. A port found free can be taken by another test's
    /// connection before the cluster binds it (the supervisor refuses it before launching
    /// anything): with `newPorts`, a cluster on new ports is tried then, up to three in all.
    private static func started(_ make: () throws -> Supervisor, newPorts: Bool) async throws -> Supervisor {
        var attempt = 1
        while true {
            let supervisor = try make()
            do {
                try await supervisor.start(timeout: .seconds(60))
                return supervisor
            } catch where attempt < 3 && newPorts && error.message.contains("Address already in use") {
                await supervisor.stop()
                attempt += 1
            } catch {
                await supervisor.stop()
                throw error
            }
        }
    }

    private static func dumpLog(_ file: URL) {
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            print("---- cluster log ----\n\(text.suffix(6000))")
        }
    }
}

/// A raw DEALER socket for sending bytes that no Sofa client would send. Used by one test task.
final class RawDealer {
    private let context = zmq_ctx_new()
    private let socket: UnsafeMutableRawPointer

    /// `receiveQueue`: how many messages ZeroMQ takes off the connection before this socket is
    /// read (1 and a small kernel buffer make a client that truly does not read).
    /// `curve`: the CURVE keys it speaks with on TCP (default: as the test clusters' own key).
    init(_ endpoint: String, receiveQueue: Int32 = 1000, curve: ClientKeys? = TestSecrets.internalClient) {
        socket = zmq_socket(context, ZMQ_DEALER)
        var linger: Int32 = 0
        zmq_setsockopt(socket, ZMQ_LINGER, &linger, 4)
        if let curve, endpoint.hasPrefix("tcp://") {
            for (option, key) in [(ZMQ_CURVE_SERVERKEY, curve.serverKey), (ZMQ_CURVE_PUBLICKEY, curve.keys.publicKey),
                                  (ZMQ_CURVE_SECRETKEY, curve.keys.secretKey)] {
                zmq_setsockopt(socket, option, key, 40)
            }
        }
        var queue = receiveQueue
        zmq_setsockopt(socket, ZMQ_RCVHWM, &queue, 4)
        if receiveQueue < 1000 {
            var buffer: Int32 = 64 << 10
            zmq_setsockopt(socket, ZMQ_RCVBUF, &buffer, 4)
        }
        zmq_connect(socket, endpoint)
    }

    deinit {
        zmq_close(socket)
        zmq_ctx_term(context)
    }

    func send(_ frames: [[UInt8]]) {
        for (index, frame) in frames.enumerated() {
            _ = frame.withUnsafeBytes {
                zmq_send(socket, $0.baseAddress, frame.count, index < frames.count - 1 ? ZMQ_SNDMORE : 0)
            }
        }
    }

    /// The next message's last frame, waiting at most `timeoutMs`.
    func receive(timeoutMs: Int32 = 30_000) -> [UInt8]? {  // returns as soon as a reply is in
        var item = zmq_pollitem_t(socket: socket, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)
        guard zmq_poll(&item, 1, Int(timeoutMs)) == 1 else { return nil }
        var last: [UInt8] = []
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        repeat {
            guard zmq_msg_recv(&message, socket, 0) >= 0 else { return nil }
            last = Array(UnsafeRawBufferPointer(start: zmq_msg_data(&message), count: zmq_msg_size(&message)))
        } while zmq_msg_more(&message) != 0
        return last
    }
}

/// Runs the `sofa` executable built beside the tests. The wait happens on a thread of its own:
/// blocking one of the few threads of the cooperative pool would stall every other test.
func runSofa(_ arguments: [String], gateway: String, stdin: String? = nil,
             executable: String = "sofa") async throws -> (status: Int32, out: String, err: String) {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do {
                continuation.resume(returning: try runSofaBlocking(executable, arguments, gateway: gateway, stdin: stdin))
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.start()
    }
}

private func runSofaBlocking(_ executable: String, _ arguments: [String], gateway: String,
                             stdin: String?) throws -> (status: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = Supervisor.defaultBinDirectory.appendingPathComponent(executable)
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["SOFA_GATEWAY_URL"] = gateway
    if environment[Setting.keysDir.variable] == nil { environment[Setting.keysDir.variable] = TestSecrets.folder.path }
    process.environment = environment
    let out = Pipe(), err = Pipe(), input = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = input
    try process.run()
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    // Drain stderr on its own thread so a chatty command cannot fill one pipe while we read the other.
    let errors = ErrorsBox()
    let drained = DispatchSemaphore(value: 0)
    let reader = Thread {
        errors.data = err.fileHandleForReading.readDataToEndOfFile()
        drained.signal()
    }
    reader.start()
    let output = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    drained.wait()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self), String(decoding: errors.data, as: UTF8.self))
}

/// The stderr bytes handed from the reader thread to the caller.
private final class ErrorsBox: @unchecked Sendable {  // safe: every access goes through the lock
    private let lock = NSLock()
    private var stored = Data()
    var data: Data {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// A bus client connected to `endpoint` and answering (ZeroMQ connects in the background: waits
/// for the handshake and a health answer, with a deadline).
func connectedBus(_ endpoint: String, peerName: String = "gateway") async throws -> BusClient {
    let bus = try await BusClient.connect(endpoint, peerName: peerName, curve: TestSecrets.internalClient)
    let connected = ContinuousClock.now + .seconds(10)
    while true {
        try #require(await bus.waitUntilConnected(timeout: connected - ContinuousClock.now), "no connection to \(peerName)")
        do {
            _ = try await bus.call(.health(service: ""))
            break
        } catch {
            guard error.is(.unavailable), ContinuousClock.now < connected else { bus.close(); throw error }
            await Task.yield()
        }
    }
    return bus
}
