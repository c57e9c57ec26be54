import Foundation
import SofaCluster
import SofaClient
import SofaCore
import Testing

/// `sofa up` through the real executable: it refuses an address or a data directory another
/// cluster holds, says `ready` only for its own processes, and stops at once on a signal.
@Suite(.serialized) struct UpCommandTests {
    static func temporaryDataDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("sofa-up-\(UUID().uuidString.prefix(8))")
    }

    @Test func refusesTheGatewayPortAndTheDataDirectoryOfARunningCluster() async throws {
        try await Cluster.with { cluster in
            let port = cluster.supervisor.options.gatewayPort
            let clock = ContinuousClock()
            // The case: a second `sofa up` on the first one's port.
            let onPort = try UpProcess(["--port", "\(port)", "--query-workers", "1"], dataDirectory: Self.temporaryDataDirectory())
            defer { onPort.cleanUp() }
            let started = clock.now
            let status = await onPort.waitForExit(within: .seconds(30))
            let took = clock.now - started
            #expect(status != nil && status != 0, "\(onPort.stderr)")
            #expect(took < .seconds(10), "refusing took \(took)")
            #expect(!onPort.stdout.contains("ready"), "\(onPort.stdout)")
            #expect(onPort.stderr.contains("cannot bind tcp://127.0.0.1:\(port) (the gateway's, SOFA_GATEWAY_ENDPOINT)"), "\(onPort.stderr)")
            #expect(onPort.stderr.contains("Address already in use"), "\(onPort.stderr)")
            #expect(onPort.stderr.hasPrefix("sofa: busy (16): ") && onPort.stderr.split(separator: "\n").count == 1, "\(onPort.stderr)")

            // A second `sofa up` on the first one's data directory.
            let onData = try UpProcess(["--port", "\(try freePort())", "--query-workers", "1"],
                                       dataDirectory: cluster.supervisor.options.dataDirectory)
            let dataStatus = await onData.waitForExit(within: .seconds(30))
            if dataStatus == nil { kill(onData.pid, SIGKILL) }  // not cleanUp: the directory is the cluster's
            #expect(dataStatus != nil && dataStatus != 0, "\(onData.stderr)")
            #expect(onData.stderr.contains("already running on \(cluster.supervisor.options.dataDirectory.path)"), "\(onData.stderr)")

            // Neither disturbed the running cluster.
            let services = try await cluster.client.clusterStatus()
            #expect(services.allSatisfy { $0.healthy }, "\(services)")
            #expect(try await cluster.client.health().pid == UInt32(try #require(cluster.supervisor.pid(of: "gateway"))))
        }
    }

    /// The supervisor does not call a cluster healthy when the gateway that answers at its
    /// address is another cluster's.
    @Test func anotherClustersGatewayIsNotReady() async throws {
        try await Cluster.with { cluster in
            let data = Self.temporaryDataDirectory()
            defer { try? FileManager.default.removeItem(at: data) }
            let other = try Supervisor(.init(dataDirectory: data, gatewayPort: try freePort(), queryWorkers: 1,
                                             settings: [Setting.gatewayURL.variable: cluster.supervisor.gatewayEndpoint])) { _ in }
            let error = await #expect(throws: SofaError.self) { try await other.start(timeout: .seconds(60)) }
            await other.stop()
            #expect(error?.is(.busy) == true, "\(String(describing: error))")
            #expect(error?.message.contains("the gateway answering at \(cluster.supervisor.gatewayEndpoint) is another process") == true,
                    "\(String(describing: error))")
        }
    }

    /// What stopping may take at most: the supervisor's grace for SIGTERM (10 s) and its wait
    /// after SIGKILL. Well under the start's own deadline, so a `sofa up` that went on starting
    /// after the signal would fail; a loaded machine that is slow to run the children's own
    /// shutdown does not.
    static let stopBound: Duration = .seconds(20)

    @Test func sigtermWhileStartingStopsEveryChild() async throws {
        // A machine the whole suite loads can bring the cluster up before `sofa up` takes the
        // signal: it then rightly says ready and stops as a running cluster does (exit 0), and the
        // case is tried again; the third try is judged whatever happens.
        for attempt in 1...3 {
            let up = try UpProcess(["--port", "\(try freePort())", "--query-workers", "1"], dataDirectory: Self.temporaryDataDirectory())
            defer { up.cleanUp() }
            // As soon as it has started a child (long before the cluster can be healthy).
            let clock = ContinuousClock()
            let children = await up.signalOnFirstChild(SIGTERM, within: .seconds(30))
            let signalled = clock.now
            try #require(!children.isEmpty, "sofa up started no child: \(up.stderr)")
            let status = await up.waitForExit(within: .seconds(30))
            let took = clock.now - signalled
            if attempt < 3 && status == 0 && up.stdout.contains("ready") { continue }
            #expect(status == 128 + SIGTERM, "\(up.stderr)")
            #expect(took < Self.stopBound, "stopping took \(took)")
            let left = children.filter(isAlive)
            #expect(left.isEmpty, "children still running: \(left)")
            #expect(!up.stdout.contains("ready"))
            return
        }
    }

    @Test func sigintWhenReadyStopsEveryChild() async throws {
        let port = try freePort()
        let up = try UpProcess(["--port", "\(port)", "--query-workers", "1"], dataDirectory: Self.temporaryDataDirectory())
        defer { up.cleanUp() }
        let ready = await up.waitForOutput("ready tcp://127.0.0.1:\(port)\n", within: .seconds(60))
        try #require(ready, "no ready line: \(up.stdout) \(up.stderr)")
        let children = up.children
        #expect(children.count == 6, "\(children)")  // storage, blob, replicator, gateway, http, one query worker
        let clock = ContinuousClock()
        let signalled = clock.now
        kill(up.pid, SIGINT)
        let status = await up.waitForExit(within: .seconds(30))
        let took = clock.now - signalled
        #expect(status == 0, "\(up.stderr)")
        #expect(took < Self.stopBound, "stopping took \(took)")
        let left = children.filter(isAlive)
        #expect(left.isEmpty, "children still running: \(left)")
    }
}
