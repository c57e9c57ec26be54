import Foundation
import SofaBench
import SofaCluster
import SofaCore
import Testing

/// The suite's share of `sofa-bench fuzz` (which sends 100,000 frames): a few thousand random and
/// mutated frames to every socket of a cluster, as the cluster and as strangers.
@Suite struct ClusterFuzzTests {
    @Test func noProcessExitsOrGrowsAndValidRequestsAreAnswered() async throws {
        // Every service on TCP, so that strangers reach them too (and are refused at the handshake).
        var settings: [String: String] = [:]
        for setting in [Setting.storageEndpoint, .blobEndpoint, .replicatorEndpoint, .brokerEndpoint, .changesEndpoint] {
            settings[setting.variable] = "tcp://127.0.0.1:\(try freePort())"
        }
        try await Cluster.with(settings: settings) { cluster in
            var options = FuzzLoad.Options()
            options.frames = 4_000
            options.validEvery = 400
            options.seed = 20_261_127
            let figures = try await FuzzLoad(supervisor: cluster.supervisor, options: options).run()
            #expect(figures.validFailures.isEmpty, "\(figures.validFailures)")
            #expect(figures.validAnswered == 10)
            #expect(figures.restarts.values.allSatisfy { $0 == 0 }, "\(figures.restarts)")
            #expect(Set(figures.perSocket.keys).count == 12, "\(figures.perSocket.keys.sorted())")
            #expect(figures.largestGrowthKiB < 64 << 10, "\(figures.json)")
        }
    }
}
