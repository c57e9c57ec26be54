internal import Foundation
internal import Glibc
public import SofaCore
public import SofaClient

// Starting a cluster honestly: nothing is launched when an address it would bind is taken, and
// the cluster is reported healthy only when the processes that answer are the ones it started.

extension Supervisor {
    /// Starts every child and waits until the gateway reports all of them healthy. Fails at once,
    /// launching nothing, when a TCP address a child would bind is taken (`.busy`); fails when
    /// the processes that answer are not this supervisor's (`.busy`), when `stop` begins
    /// (`.shuttingDown`) or the task is cancelled (`.cancelled`), and after `timeout` (`.timeout`).
    public func start(timeout: Duration = .seconds(60)) async throws(SofaError) {
        for (setting, address) in bound { try Self.checkFree(address, setting: setting) }
        for name in ["storage", "blob", "replicator", "gateway", "http"] + childNames.filter({ $0.hasPrefix("query-") })
            where childNames.contains(name) {
            try launch(name)
        }
        let deadline = ContinuousClock.now + timeout
        try await waitUntilHealthy(timeout: timeout)
        try await waitForHTTP(until: deadline)
    }

    /// Waits until sofa-http accepts connections (it listens once it reaches the gateway).
    func waitForHTTP(until deadline: ContinuousClock.Instant) async throws(SofaError) {
        guard let url = httpURL, let port = url.split(separator: ":").last.flatMap({ Int($0) }) else { return }
        while ContinuousClock.now < deadline {
            try checkStillStarting()
            if Self.accepts(port: port) { return }
            try? await Task.sleep(for: .milliseconds(50))  // between attempts to connect
        }
        throw SofaError(.timeout, "the HTTP API did not start listening on 127.0.0.1:\(port) in time")
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(port: Int) -> Bool {
        guard let fd = try? TCPConnect.to("127.0.0.1", port: UInt16(port)) else { return false }
        close(fd)
        return true
    }

    /// Waits until the gateway answers and sees storage, blob, replicator and every query worker,
    /// each of them a process this supervisor started.
    public func waitUntilHealthy(timeout: Duration = .seconds(60)) async throws(SofaError) {
        let deadline = ContinuousClock.now + timeout
        var lastProblem = "the gateway did not answer"
        while ContinuousClock.now < deadline {
            try checkStillStarting()
            let connected: SofaClient?
            do {
                connected = try await connect(timeout: .seconds(2))
            } catch where error.is(.unauthorized) && serverKey != nil && error.message.contains("secure handshake") {
                throw SofaError(.busy, "the gateway answering at \(gatewayEndpoint) is another process: it does not hold this "
                                + "cluster's key (another cluster uses its address)")
            } catch {
                connected = nil
            }
            if let client = connected {
                defer { client.close() }
                while ContinuousClock.now < deadline {
                    try checkStillStarting()
                    if let services = try? await client.clusterStatus() {
                        let unhealthy = services.filter { !$0.healthy }
                        let workers = services.first { $0.name == "query" }?.instances ?? 0
                        if unhealthy.isEmpty && workers >= options.queryWorkers {
                            guard let problem = try await notOwnProcesses(client) else { return }
                            lastProblem = problem
                        } else {
                            lastProblem = unhealthy.map { "\($0.name): \($0.detail)" }.joined(separator: "; ")
                                + (workers < options.queryWorkers ? " \(workers)/\(options.queryWorkers) query workers" : "")
                        }
                    }
                    try? await Task.sleep(for: .milliseconds(50))  // between polls of the cluster's status
                }
            }
            try? await Task.sleep(for: .milliseconds(50))  // between attempts to reach the gateway
        }
        throw SofaError(.timeout, "the cluster did not become healthy in time: \(lastProblem)")
    }

    /// A client of this cluster's gateway, pinning its key and signed in as its first admin.
    public func connect(timeout: Duration = .seconds(10), handshakeTimeout: Duration? = nil) async throws(SofaError) -> SofaClient {
        try await SofaClient.connect(gatewayEndpoint, serverKey: serverKey, credentials: adminCredentials, timeout: timeout,
                                     handshakeTimeout: handshakeTimeout)
    }

    /// The first admin's name and password (from `local-admin.json`).
    public var adminCredentials: SofaClient.Credentials? {
        localAdmin.map { SofaClient.Credentials(name: $0.user, password: $0.password) }
    }

    /// Throws when the start-up is to end early: `stop` has begun, or the task is cancelled.
    private func checkStillStarting() throws(SofaError) {
        if isStopping { throw SofaError(.shuttingDown, "the cluster is stopping") }
        if Task.isCancelled { throw SofaError(.cancelled, "the start of the cluster was cancelled") }
    }

    /// nil when the gateway, storage, blob and replicator that answer are processes this
    /// supervisor started; a reason to wait when one of them does not answer now. Throws `.busy`
    /// when one that answers is another process (another cluster holds an address of this one).
    private func notOwnProcesses(_ client: SofaClient) async throws(SofaError) -> String? {
        for name in ["gateway", "storage", "blob", "replicator"] {
            let info: HealthInfo
            do {
                info = try await client.health(service: name == "gateway" ? "" : name)
            } catch {
                return "\(name): \(error.message)"
            }
            guard ran(name, as: info.pid) else {
                let ours = pid(of: name).map { "pid \($0)" } ?? "not running"
                throw SofaError(.busy, "the \(name) answering at \(gatewayEndpoint) is another process (pid \(info.pid), "
                                + "instance \(info.instance)), not this cluster's (\(ours)): another cluster uses its address")
            }
        }
        return nil
    }

    /// Throws `.busy` when a TCP address (`tcp://host:port`, host an IPv4 address or `*`) cannot
    /// be bound now because another socket holds it. Other addresses are not checked here (the
    /// health check tells another cluster's processes from this one's).
    static func checkFree(_ address: String, setting: Setting) throws(SofaError) {
        guard address.hasPrefix("tcp://"), let colon = address.lastIndex(of: ":"),
              let port = UInt16(address[address.index(after: colon)...]) else { return }
        let host = String(address.dropFirst("tcp://".count)[..<colon])
        var ip = in_addr()
        if host == "*" {
            ip.s_addr = INADDR_ANY
        } else {
            guard inet_pton(AF_INET, host, &ip) == 1 else { return }
        }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SofaError(.posix, errno, "socket failed") }
        defer { close(fd) }
        var yes: Int32 = 1  // as ZeroMQ binds: a port in TIME_WAIT is free
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_addr = ip
        socketAddress.sin_port = port.bigEndian
        let rc = withUnsafePointer(to: &socketAddress) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc != 0 else { return }
        let code = errno
        let owner = ServiceRole.binding(setting).map { "the \($0.rawValue)'s, \(setting.variable)" } ?? setting.variable
        throw SofaError(.busy, "cannot bind \(address) (\(owner)): \(String(cString: strerror(code))); "
                        + "another process (another Sofa cluster?) listens there")
    }
}
