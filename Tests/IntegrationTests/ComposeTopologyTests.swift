import Foundation
import SofaClient
import SofaCluster
import SofaCore
import Testing

/// The cluster as docker-compose.yml configures it, run by the supervisor of `sofa up`: each
/// service is given the settings compose gives it, with this host's loopback for the compose
/// service names and free ports for the fixed ones (services still listen on `tcp://*:…`).
@Suite struct ComposeTopologyTests {
    @Test func replicatorDocumentReplicatesBetweenTwoDatabases() async throws {
        let compose = try await DeployTests.composeEnvironments()
        var ports: [Int: Int] = [:]
        for port in Set(compose.values.flatMap(\.values).compactMap(Self.composePort)) {
            var free = try freePort()
            while ports.values.contains(free) { free = try freePort() }
            ports[port] = free
        }
        let local = compose.mapValues { environment in
            // The data directory is the supervisor's own.
            environment.filter { $0.key != Setting.dataDir.variable }.mapValues { Self.local($0, ports: ports) }
        }
        var settings: [String: String] = [:]
        for environment in local.values { settings.merge(environment) { $1 } }
        let gatewayPort = try #require(ports[7420], "compose gives no address on 7420")

        try await Cluster.with(gatewayPort: gatewayPort, http: true, settings: settings) { cluster in
            #expect(cluster.supervisor.gatewayEndpoint == "tcp://127.0.0.1:\(gatewayPort)")
            for (role, environment) in local {
                let given = try #require(cluster.supervisor.settings(of: role == .query ? "query-1" : role.rawValue))
                for variable in role.deployed.map(\.variable)
                where variable != Setting.dataDir.variable && variable != Setting.keysDir.variable {
                    let value = try #require(environment[variable], "compose gives \(role.rawValue) no \(variable)")
                    #expect(given[variable] == value, "\(role.rawValue): \(variable) is \(given[variable] ?? "unset")")
                }
                let extra = Set(given.keys).subtracting(role.reads.map(\.variable))
                #expect(extra.isEmpty, "\(role.rawValue) is given \(extra.sorted()), which it does not read")
            }

            let source = try await cluster.client.createDatabase("source")
            let target = try await cluster.client.createDatabase("target")
            for index in 0..<3 { _ = try await source.put(id: "d\(index)", json: #"{"n":\#(index)}"#) }
            try await PersistentReplicationTests().ensureReplicatorDatabase(cluster.client)
            let replicator = cluster.client.database("_replicator")
            _ = try await replicator.put(id: "source-to-target", json: #"{"source":"source","target":"target"}"#)
            try await waitUntil("the replication to complete", in: replicator) {
                guard let doc = try? await replicator.get(id: "source-to-target"), case .object(let body) = try doc.json(),
                      case .array(let legs)? = body["status"] else { return false }
                let states = legs.compactMap { $0.objectValue?["state"]?.stringValue }
                #expect(!states.contains("failed"), "the replication failed: \(body)")
                return !states.isEmpty && states.allSatisfy { $0 == "completed" || $0 == "failed" }
            }
            for index in 0..<3 {
                let doc = try await target.get(id: "d\(index)")
                #expect(try doc.json() == ["n": .int(Int64(index))])
            }
        }
    }

    /// The port of a compose address (`tcp://storage:7421`, `tcp://*:7421`).
    static func composePort(_ value: String) -> Int? {
        if value.hasPrefix("tcp://") || value.hasPrefix("http://") { return DeployTests.port(of: value) }
        // sofa-http's `HOST:PORT`, an IPv4 host.
        let parts = value.split(separator: ":")
        guard parts.count == 2, parts[0].allSatisfy({ $0.isNumber || $0 == "." }) else { return nil }
        return Int(parts[1])
    }

    /// A compose address on this host: a service name becomes 127.0.0.1, `*` stays, the port is
    /// the free one in its place; any other value as it is.
    static func local(_ value: String, ports: [Int: Int]) -> String {
        guard let port = composePort(value), let free = ports[port] else { return value }
        if value.hasPrefix("http://") { return "http://127.0.0.1:\(free)" }
        if !value.hasPrefix("tcp://") { return "127.0.0.1:\(free)" }
        let host = value.dropFirst("tcp://".count).split(separator: ":").first.map(String.init) ?? ""
        return "tcp://\(host == "*" ? "*" : "127.0.0.1"):\(free)"
    }
}
