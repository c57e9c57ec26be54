public import Foundation
public import SofaCore
internal import SofaClient
internal import SofaBus
public import SofaFiles
internal import Synchronization

/// Runs a whole Sofa cluster as child processes of this one, as `sofa up` does (and the
/// integration tests, through this same code): storage, blob, replicator, gateway and N query
/// workers, with internal sockets as ipc:// files under `<data>/run/` and the gateway on TCP.
/// A child that exits unexpectedly is restarted with exponential backoff (100 ms doubling to
/// 5 s, reset once it has run for 10 s); every line a child prints is prefixed with its name.
public final class Supervisor: Sendable {
    public struct Options: Sendable {
        public var binDirectory: URL
        public var dataDirectory: URL
        public var gatewayPort: Int
        /// Where sofa-http serves CouchDB's HTTP API on 127.0.0.1; nil: no HTTP API.
        public var httpPort: Int?
        public var queryWorkers: Int
        public var heartbeatMs: Int
        public var logLevel: String
        /// More settings, by variable name (e.g. `SOFA_MAX_QUERY_MS`), each given to the children
        /// that read it; they may set the addresses (`SOFA_STORAGE_ENDPOINT`, `SOFA_GATEWAY_URL`, …),
        /// not the data directory, heartbeat or log level, which are the options above.
        public var settings: [String: String]

        public init(binDirectory: URL = Supervisor.defaultBinDirectory, dataDirectory: URL, gatewayPort: Int,
                    httpPort: Int? = nil, queryWorkers: Int = 2, heartbeatMs: Int = 500, logLevel: String = "info",
                    settings: [String: String] = [:]) {
            self.settings = settings
            self.binDirectory = binDirectory
            self.dataDirectory = dataDirectory
            self.gatewayPort = gatewayPort
            self.httpPort = httpPort
            self.queryWorkers = queryWorkers
            self.heartbeatMs = heartbeatMs
            self.logLevel = logLevel
        }
    }

    struct Child {
        var name: String
        /// Exactly the `SOFA_*` settings its service reads (and the rest of this process's environment).
        var environment: [String: String]
        var executable: String
        var process: ChildProcess?
        var startedAt = ContinuousClock.now
        var backoffMs = 100
        var restarts = 0
        /// Every pid it has run as, so that an answer from a process of another cluster is told
        /// apart from one of ours that has since been restarted.
        var pids: Set<Int32> = []
    }

    public let options: Options
    /// Where clients reach the gateway (`SOFA_GATEWAY_URL`).
    public let gatewayEndpoint: String
    /// Where each service is reached: storage, blob, replicator, broker, changes, gateway.
    public let endpoints: [String: String]
    /// Where CouchDB's HTTP API is served (`http://127.0.0.1:PORT`); nil: not by this cluster.
    public let httpURL: String?
    /// The cluster's secrets folder (`<data>/keys` unless the settings name another).
    public let keys: SecretsFolder
    /// The cluster's public CURVE key, which clients pin; nil when CURVE is off.
    public let serverKey: String?
    /// The first server admin as stored for the local CLI (`local-admin.json`), and whether
    /// this start created it.
    public let localAdmin: LocalAdminFile?
    public let createdAdmin: Bool
    /// Where the first admin's password is kept for the local CLI.
    public var localAdminPath: String { keys.path + "/" + SecretsFolder.localAdminFile }
    private let log: @Sendable (String) -> Void
    /// The children, and whether `stop` has begun (from then on nothing is launched): one lock,
    /// so a child launched concurrently with `stop` is either stopped by it or never started.
    let children: Mutex<(all: [String: Child], stopping: Bool)>
    private let lockDescriptor: Int32
    /// The `…_ENDPOINT` settings given to the children: what they bind.
    let bound: [(setting: Setting, address: String)]
    /// Callers of `waitForRestart`, resumed with the new pid by `launch` (or with nil by their
    /// deadline task); each is removed from here before it is resumed, so it is resumed once.
    private let restartWaiters = Mutex<[UInt64: RestartWaiter]>([:])
    private struct RestartWaiter {
        var name: String
        var old: Int32
        var continuation: CheckedContinuation<Int32?, Never>
        var deadline: Task<Void, Never>?
    }
    private let nextWaiter = Atomic<UInt64>(0)

    /// The folder of the running executable: where `swift build` puts all six binaries.
    public static var defaultBinDirectory: URL {
        URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]).deletingLastPathComponent()
    }

    public init(_ options: Options, log: @escaping @Sendable (String) -> Void) throws(SofaError) {
        self.options = options
        self.log = log
        let run = options.dataDirectory.appendingPathComponent("run")
        do {
            try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
        } catch {
            throw SofaError(.cantOpenFile, "cannot create \(run.path): \(error.localizedDescription)")
        }
        // The data and its ipc sockets are the service user's alone (the services create what
        // they write there readable by that user only, too).
        for folder in [options.dataDirectory, run] where chmod(folder.path, 0o700) != 0 {
            throw SofaError(.posix, errno, "cannot make \(folder.path) private: \(String(cString: strerror(errno)))")
        }
        // One cluster per data directory: a second one would unlink this one's ipc sockets.
        let lockPath = run.appendingPathComponent("supervisor.lock").path
        lockDescriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockDescriptor >= 0 else { throw SofaError(.posix, errno, "cannot open \(lockPath)") }
        guard flock(lockDescriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(lockDescriptor)
            throw SofaError(.busy, "a Sofa cluster is already running on \(options.dataDirectory.path)")
        }
        func endpoint(_ name: String) throws(SofaError) -> String {
            let path = run.appendingPathComponent("\(name).sock").path
            // ipc:// paths are limited to ~107 bytes by the OS; fall back to a free loopback port.
            return path.utf8.count < 100 ? "ipc://\(path)" : "tcp://127.0.0.1:\(try freePort())"
        }
        // The addresses: each service listens on its own ipc socket (the gateway on TCP), and
        // reaches another where that one listens; `options.settings` may set any of them.
        var settings: [String: String] = [Setting.gatewayEndpoint.variable: "tcp://127.0.0.1:\(options.gatewayPort)"]
        let sockets: [(Setting, String)] = [(.storageEndpoint, "storage"), (.blobEndpoint, "blob"),
                                            (.replicatorEndpoint, "replicator"), (.brokerEndpoint, "broker"),
                                            (.changesEndpoint, "changes")]
        for (setting, name) in sockets { settings[setting.variable] = try endpoint(name) }
        if let httpPort = options.httpPort { settings[Setting.httpAddress.variable] = "127.0.0.1:\(httpPort)" }
        settings.merge(options.settings) { $1 }
        for url in Setting.allCases {
            guard let bound = url.reaches, settings[url.variable] == nil, let address = settings[bound.variable] else { continue }
            settings[url.variable] = Self.reachable(address)
        }
        settings[Setting.dataDir.variable] = options.dataDirectory.path
        // The secrets: the cluster's key pair and its first admin, made before any child starts.
        keys = SecretsFolder(settings[Setting.keysDir.variable] ?? SecretsFolder.inDataDirectory(options.dataDirectory.path).path)
        settings[Setting.keysDir.variable] = keys.path
        let environment = ProcessInfo.processInfo.environment
        do {
            if settings[Setting.curve.variable]?.lowercased() == "off" {
                serverKey = nil
            } else {
                let file = try ClusterKeyFile.load(in: keys) {
                    let pair = try CurveKeyPair.generate()
                    return (pair.publicKey, pair.secretKey)
                }
                serverKey = file.public
            }
            (_, createdAdmin) = try LocalAdminFile.ensureAdmin(
                in: keys, user: settings[Setting.adminUser.variable] ?? environment[Setting.adminUser.variable],
                password: settings[Setting.adminPassword.variable] ?? environment[Setting.adminPassword.variable])
            localAdmin = try LocalAdminFile.read(in: keys)
        } catch {
            close(lockDescriptor)
            throw error as? SofaError ?? SofaError(.cantOpenFile, "cannot set up the secrets in \(keys.path): \(error)")
        }
        settings[Setting.heartbeatMs.variable] = "\(options.heartbeatMs)"
        settings[Setting.logLevel.variable] = options.logLevel
        settings[Setting.supervisorPID.variable] = "\(getpid())"
        gatewayEndpoint = settings[Setting.gatewayURL.variable]!
        endpoints = Dictionary(uniqueKeysWithValues: sockets.map { ($1, settings[$0.reachedAt!.variable]!) }
                                   + [("gateway", gatewayEndpoint)])
        // Each child is given the settings its row of the table lists, and no other `SOFA_*` one.
        let inherited = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SOFA_") }
        let given = ProcessInfo.processInfo.environment.merging(settings) { $1 }
        var children: [String: Child] = [:]
        let services = ([ServiceRole.storage, .blob, .replicator, .gateway] + (options.httpPort == nil ? [] : [.http]))
            .map { ($0.rawValue, $0) }
            + (0..<options.queryWorkers).map { ("query-\($0 + 1)", ServiceRole.query) }
        for (name, role) in services {
            var environment = inherited
            for setting in role.reads { environment[setting.variable] = given[setting.variable] }
            environment[Setting.instance.variable] = name
            children[name] = Child(name: name, environment: environment,
                                   executable: options.binDirectory.appendingPathComponent("sofa-\(role.rawValue)").path)
        }
        self.children = Mutex((children, false))
        bound = Setting.allCases.filter { ServiceRole.binding($0) != nil }.compactMap { setting in
            settings[setting.variable].map { (setting, $0) }
        } + (settings[Setting.httpAddress.variable].map { [(Setting.httpAddress, "tcp://" + $0)] } ?? [])
        httpURL = settings[Setting.httpAddress.variable].map { "http://" + $0 }
    }

    deinit { close(lockDescriptor) }

    /// Where a process on this machine reaches an address bound on every interface
    /// (`tcp://*:7421` → `tcp://127.0.0.1:7421`); any other address as it is.
    static func reachable(_ bound: String) -> String {
        for wildcard in ["://*:", "://0.0.0.0:"] where bound.contains(wildcard) {
            return bound.replacingOccurrences(of: wildcard, with: "://127.0.0.1:")
        }
        return bound
    }

    public var childNames: [String] { children.withLock { Array($0.all.keys).sorted() } }

    /// The pid of a child now (it changes when the child is restarted).
    public func pid(of name: String) -> Int32? {
        children.withLock { $0.all[name]?.process?.pid }
    }

    /// The `SOFA_*` settings a child is started with.
    public func settings(of name: String) -> [String: String]? {
        children.withLock { $0.all[name]?.environment.filter { $0.key.hasPrefix("SOFA_") } }
    }

    public func restartCount(of name: String) -> Int { children.withLock { $0.all[name]?.restarts ?? 0 } }

    /// Waits until `name` runs as a process other than `old` (the supervisor started it again
    /// after `old` ended) and returns its pid; nil if that has not happened within `timeout`.
    public func waitForRestart(of name: String, replacing old: Int32, timeout: Duration = .seconds(60)) async -> Int32? {
        let id = nextWaiter.add(1, ordering: .relaxed).newValue
        return await withCheckedContinuation { continuation in
            restartWaiters.withLock { $0[id] = RestartWaiter(name: name, old: old, continuation: continuation) }
            let deadline = Task { [weak self] in
                try? await Task.sleep(for: timeout)  // the wait's deadline, cancelled when it is answered
                self?.resumeRestartWaiter(id, with: nil)
            }
            let waiting = restartWaiters.withLock { waiters in
                waiters[id]?.deadline = deadline
                return waiters[id] != nil
            }
            if !waiting { deadline.cancel() }
            // Launched before the waiter was in place: answer now.
            if let pid = pid(of: name), pid != old { resumeRestartWaiter(id, with: pid) }
        }
    }

    private func resumeRestartWaiter(_ id: UInt64, with pid: Int32?) {
        guard let waiter = restartWaiters.withLock({ $0.removeValue(forKey: id) }) else { return }
        waiter.deadline?.cancel()
        waiter.continuation.resume(returning: pid)
    }

    /// Stops every child: SIGTERM, then SIGKILL for any still running after `grace`.
    public func stop(grace: Duration = .seconds(10)) async {
        let processes = children.withLock { state in
            state.stopping = true
            return state.all.values.compactMap(\.process)
        }
        for process in processes where process.isRunning { kill(process.pid, SIGTERM) }
        let deadline = ContinuousClock.now + grace
        while processes.contains(where: \.isRunning) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        for process in processes where process.isRunning { kill(process.pid, SIGKILL) }
        // Each child's waiter reaps it as soon as it dies; a SIGKILL cannot be refused.
        let killed = ContinuousClock.now + .seconds(10)
        while processes.contains(where: \.isRunning) && ContinuousClock.now < killed {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Starts `name`, unless `stop` has begun (then it throws `.shuttingDown`).
    func launch(_ name: String) throws(SofaError) {
        let prefix = "[\(name)] "
        let log = self.log
        let process = try children.withLock { state throws(SofaError) -> ChildProcess? in
            guard !state.stopping, let child = state.all[name] else { return nil }
            let process = try ChildProcess.start(child.executable, environment: child.environment)
            state.all[name]?.process = process
            state.all[name]?.startedAt = .now
            state.all[name]?.pids.insert(process.pid)
            return process
        }
        guard let process else { throw SofaError(.shuttingDown, "the cluster is stopping: \(name) is not started") }
        process.watch(name: name, line: { log(prefix + $0) },
                      exited: { [weak self] process, how in self?.childExited(name, process: process, how) })
        let waiting = restartWaiters.withLock { $0.filter { $0.value.name == name && $0.value.old != process.pid }.map(\.key) }
        for id in waiting { resumeRestartWaiter(id, with: process.pid) }
    }

    /// Whether `pid` is (or was) the process of the child `name`.
    func ran(_ name: String, as pid: UInt32) -> Bool {
        children.withLock { $0.all[name]?.pids.contains(Int32(bitPattern: pid)) ?? false }
    }

    /// Whether `stop` has begun.
    var isStopping: Bool { children.withLock { $0.stopping } }

    private func childExited(_ name: String, process: ChildProcess, _ how: ChildProcess.Termination) {
        let delay: Int = children.withLock { state in
            guard !state.stopping, var child = state.all[name], child.process === process else { return -1 }
            if ContinuousClock.now - child.startedAt > .seconds(10) { child.backoffMs = 100 }
            let delay = child.backoffMs
            child.backoffMs = min(child.backoffMs * 2, 5000)
            child.restarts += 1
            state.all[name] = child
            return delay
        }
        guard delay >= 0 else { return }
        log("[supervisor] \(name) \(how.description); restarting in \(delay) ms")
        Task {
            try? await Task.sleep(for: .milliseconds(delay))
            do throws(SofaError) {
                try self.launch(name)
            } catch {
                if !error.is(.shuttingDown) { self.log("[supervisor] cannot restart \(name): \(error)") }
            }
        }
    }
}

/// A TCP port on loopback that nothing listens on now.
public func freePort() throws(SofaError) -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SofaError(.posix, errno, "socket failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw SofaError(.posix, errno, "cannot find a free port") }
    return Int(UInt16(bigEndian: address.sin_port))
}
