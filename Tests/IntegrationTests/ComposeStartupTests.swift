import Foundation
import SofaClient
import SofaCluster
import SofaCore
import SofaFiles
import SofaTestSupport
import Synchronization
import Testing

/// docker-compose.yml brought up as compose brings it up, without a container engine: each
/// service is started with its `command` and its `environment` (addresses on this host, free
/// ports), in the order of its `depends_on` (`condition: service_healthy`: a service starts once
/// every service it depends on passes its health check), and each health check is the service's
/// own `healthcheck.test` command, run until it passes (as compose does at its interval).
// Off the cooperative pool: stopping waits for the processes to exit.
@Suite(.serialized, .ownThreads) struct ComposeStartupTests {
    struct Service {
        var name: String
        var command: [String]
        var environment: [String: String]
        var dependsOn: [String: String]
        var healthCheck: [String]
    }

    /// `docker-compose config`, read as JSON (PyYAML comes with Debian's docker-compose).
    static func services() async throws -> [String: Service] { try await parsed.value }

    private static let parsed = Task { try await readServices() }

    private static func readServices() async throws -> [String: Service] {
        let config = try await DeployTests.compose(["config"])
        try #require(config.status == 0, "docker-compose config failed:\n\(config.stderr)")
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("sofa-compose-\(UUID().uuidString).yml")
        try config.stdout.write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }
        let python = try #require(DeployTests.executableOnPath("python3"), "python3 is not on PATH")
        let converted = try await DeployTests.run(python, ["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
                                                           input.path])
        try #require(converted.status == 0, "cannot read the compose config as YAML:\n\(converted.stderr)")
        guard case .object(let root) = try JSON.parse(converted.stdout), case .object(let services)? = root["services"] else {
            throw DeployTests.DeployTestError("the compose config has no services")
        }
        var result: [String: Service] = [:]
        for (name, value) in services {
            guard case .object(let service) = value else { continue }
            let strings = { (json: JSON?) -> [String] in json?.arrayValue?.compactMap(\.stringValue) ?? [] }
            var test = strings(service["healthcheck"]?.objectValue?["test"])
            if test.first == "CMD" { test.removeFirst() }
            result[name] = Service(
                name: name, command: strings(service["command"]),
                environment: Self.strings(service["environment"]) { $0.stringValue },
                dependsOn: Self.strings(service["depends_on"]) { $0.objectValue?["condition"]?.stringValue },
                healthCheck: test)
        }
        return result
    }

    /// A JSON object's entries as strings (those `value` maps; others left out).
    static func strings(_ object: JSON?, _ value: (JSON) -> String?) -> [String: String] {
        var result: [String: String] = [:]
        for (key, entry) in object?.objectValue ?? [:] { result[key] = value(entry) }
        return result
    }

    /// The services in an order compose may start them: each after everything it depends on.
    static func startOrder(_ services: [String: Service]) throws -> [String] {
        var order: [String] = []
        var left = Set(services.keys)
        while !left.isEmpty {
            let ready = left.filter { name in services[name]!.dependsOn.keys.allSatisfy(order.contains) }.sorted()
            guard !ready.isEmpty else { throw DeployTests.DeployTestError("depends_on has a cycle among \(left.sorted())") }
            order += ready
            left.subtract(ready)
        }
        return order
    }

    @Test func dependenciesWaitOnlyForHealthyServices() async throws {
        let services = try await Self.services()
        for service in services.values {
            for (dependency, condition) in service.dependsOn {
                #expect(condition == "service_healthy", "\(service.name) waits for \(dependency) to be \(condition)")
                #expect(services[dependency].map { !$0.healthCheck.isEmpty } == true, "\(dependency) has no health check")
            }
        }
        // The query workers wait for the gateway; the gateway must not wait for them.
        let order = try Self.startOrder(services)
        #expect(try #require(order.firstIndex(of: "gateway")) < #require(order.firstIndex(of: "query")))
    }

    /// The whole topology comes up healthy with no query worker (the gateway's health does not
    /// wait for workers, which wait for it), then with three, which all register and answer.
    @Test(arguments: [0, 3])
    func theTopologyComesUpHealthy(queryWorkers: Int) async throws {
        let services = try await Self.services()
        let order = try Self.startOrder(services)
        var ports: [Int: Int] = [:]
        for port in Set(services.values.flatMap(\.environment.values).compactMap(ComposeTopologyTests.composePort)) {
            var free = try freePort()
            while ports.values.contains(free) { free = try freePort() }
            ports[port] = free
        }
        try await withTemporaryDirectory { directory in
            let keys = SecretsFolder(directory.appendingPathComponent("keys").path)
            let launcher = ServiceLauncher(binDirectory: Supervisor.defaultBinDirectory, logs: directory)
            defer { launcher.stopAll() }
            for name in order {
                let service = try #require(services[name])
                var environment = service.environment.mapValues { ComposeTopologyTests.local($0, ports: ports) }
                if environment[Setting.dataDir.variable] != nil { environment[Setting.dataDir.variable] = directory.appendingPathComponent("data").path }
                if environment[Setting.keysDir.variable] != nil { environment[Setting.keysDir.variable] = keys.path }
                let replicas = name == "query" ? queryWorkers : 1
                for replica in 0..<replicas {
                    environment[Setting.instance.variable] = replicas > 1 ? "\(name)-\(replica + 1)" : nil
                    try launcher.start(name: replicas > 1 ? "\(name)-\(replica + 1)" : name, command: service.command,
                                       environment: environment)
                }
                guard replicas > 0 else { continue }
                let check = service.healthCheck.map { ComposeTopologyTests.local($0, ports: ports) }
                try await Self.waitUntilHealthy(name, check, launcher: launcher, environment: [Setting.keysDir.variable: keys.path])
            }
            let gateway = "tcp://127.0.0.1:\(try #require(ports[7420]))"
            // As a client elsewhere would: the key it pins, the first admin's name and password.
            let pair = try #require(ClusterKeyFile.read(in: keys), "no service made the cluster key")
            let admin = try #require(try LocalAdminFile.read(in: keys), "the gateway made no first admin")
            let client = try await SofaClient.connect(gateway, serverKey: pair.public,
                                                      credentials: .init(name: admin.user, password: admin.password))
            defer { client.close() }
            // Each worker's health check passes once any worker answers: the others register
            // with the broker at their own pace (the broker's status says when).
            var status = try await client.clusterStatus()
            let registered = ContinuousClock.now + .seconds(30)
            while status.first(where: { $0.name == "query" })?.instances != UInt32(queryWorkers), ContinuousClock.now < registered {
                status = try await client.clusterStatus()
            }
            let query = try #require(status.first { $0.name == "query" })
            #expect(query.instances == UInt32(queryWorkers), "\(status)")
            for other in status where other.name != "query" { #expect(other.healthy, "\(other.name): \(other.detail)") }
            if queryWorkers > 0 {
                let db = try await client.createDatabase("composed")
                _ = try await db.put(id: "a", json: #"{"n":1}"#)
                let result = try await db.query(n1ql: "SELECT n FROM _")
                #expect(result.rows == [[.int(1)]])
            }
        }
    }

    /// Runs the health check (a `sofa` command, from the build's products) until it passes, as
    /// compose does; each try waits for its answer up to the command's own timeout.
    static func waitUntilHealthy(_ name: String, _ check: [String], launcher: ServiceLauncher,
                                 environment: [String: String]) async throws {
        let sofa = Supervisor.defaultBinDirectory.appendingPathComponent(try #require(check.first))
        let deadline = ContinuousClock.now + .seconds(60)
        var last = ""
        while ContinuousClock.now < deadline {
            let result = try await DeployTests.run(sofa, Array(check.dropFirst()), environment: environment)
            if result.status == 0 { return }
            last = result.stderr + result.stdout
            if let exited = launcher.exited() {
                Issue.record("\(exited) exited while \(name) was starting:\n\(launcher.log(of: exited))")
                return
            }
        }
        Issue.record("\(name) never became healthy (\(check.joined(separator: " "))): \(last)")
    }
}

/// The services' processes, started as compose would start their containers' commands, their
/// output in a log file each; all stopped with SIGTERM at the end.
final class ServiceLauncher: Sendable {
    let binDirectory: URL
    let logs: URL
    private let processes = Mutex<[(name: String, process: Process)]>([])

    init(binDirectory: URL, logs: URL) {
        self.binDirectory = binDirectory
        self.logs = logs
    }

    func start(name: String, command: [String], environment: [String: String]) throws {
        let process = Process()
        process.executableURL = binDirectory.appendingPathComponent(try #require(command.first))
        process.arguments = Array(command.dropFirst())
        process.environment = environment.merging(["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]) { $1 }
        let log = logs.appendingPathComponent("\(name).log")
        try #require(FileManager.default.createFile(atPath: log.path, contents: nil), "cannot create \(log.path)")
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        processes.withLock { $0.append((name, process)) }
    }

    /// The name of a process that has exited, if any.
    func exited() -> String? { processes.withLock { list in list.first { !$0.process.isRunning }?.name } }

    func log(of name: String) -> String {
        (try? String(contentsOf: logs.appendingPathComponent("\(name).log"), encoding: .utf8)) ?? ""
    }

    func stopAll() {
        let list = processes.withLock { $0 }
        for (_, process) in list.reversed() where process.isRunning { process.terminate() }
        for (_, process) in list { process.waitUntilExit() }
    }
}
