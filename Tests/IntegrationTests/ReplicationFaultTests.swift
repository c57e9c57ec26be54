import Foundation
import SofaCLI
import SofaClient
import Testing

/// Replication when a peer is unreachable or one of its processes dies mid-run.
@Suite(.serialized) struct ReplicationFaultTests {
    let suite = ReplicationTests()

    @Test func unreachablePeerIsRetriedWithAClearStatus() async throws {
        try await Cluster.with { a in
            _ = try await a.client.createDatabase("lonely")
            let nowhere = "tcp://127.0.0.1:\(try freePort())/lonely"
            let handle = try await a.client.replicate(from: "lonely", to: nowhere, mode: .continuous)
            let retrying = try await handle.wait(timeout: .seconds(60)) { $0.state == .retrying }
            #expect(retrying.first?.lastError.contains("no gateway answered") == true, "\(retrying)")
            try await handle.stop()
            #expect(try await handle.status().first?.state == .stopped)
            #expect(try await a.client.health(service: "replicator").service == "replicator")
        }
    }

    /// The target's storage is killed with SIGKILL mid-push: the replication retries, resumes
    /// from its checkpoint and ends with both sides identical.
    @Test func targetStorageKilledMidRun() async throws {
        try await suite.withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("big")
            let dbB = try await b.client.createDatabase("big")
            let total = 20_000
            for start in stride(from: 0, to: total, by: 2_000) {
                _ = try await dbA.bulk((start..<start + 2_000).map {
                    BulkItem.put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false)
                })
            }
            let storagePid = try #require(b.supervisor.pid(of: "storage"))
            let handle = try await a.client.replicate(from: "big", to: suite.remote(b, "big"))
            let progressed = try await handle.wait(timeout: .seconds(60)) { $0.checkpoint > 0 || $0.state.isFinal }
            #expect(progressed.first?.state.isFinal == false, "the push ended before the kill: \(progressed)")
            kill(storagePid, SIGKILL)
            let done = try await handle.wait(timeout: .seconds(180))
            #expect(done.first?.state == .completed, "\(done)")
            #expect(b.supervisor.restartCount(of: "storage") >= 1)
            expectAtMostOneBatchTwice(done.first, total)
            try await suite.expectIdentical(dbA, dbB)
        }
    }

    /// The target's gateway is killed with SIGKILL mid-push: same outcome.
    @Test func targetGatewayKilledMidRun() async throws {
        try await suite.withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("big")
            let dbB = try await b.client.createDatabase("big")
            for start in stride(from: 0, to: 20_000, by: 2_000) {
                _ = try await dbA.bulk((start..<start + 2_000).map {
                    BulkItem.put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false)
                })
            }
            let gatewayPid = try #require(b.supervisor.pid(of: "gateway"))
            let handle = try await a.client.replicate(from: "big", to: suite.remote(b, "big"))
            let progressed = try await handle.wait(timeout: .seconds(60)) { $0.checkpoint > 0 || $0.state.isFinal }
            #expect(progressed.first?.state.isFinal == false, "the push ended before the kill: \(progressed)")
            let total = 20_000
            kill(gatewayPid, SIGKILL)
            let done = try await handle.wait(timeout: .seconds(180))
            #expect(done.first?.state == .completed, "\(done)")
            #expect(b.supervisor.restartCount(of: "gateway") >= 1)
            expectAtMostOneBatchTwice(done.first, total)
            try await suite.expectIdentical(dbA, dbB)
        }
    }

    /// Every document written once, and what was sent again after the failure at most one batch
    /// (the replicator's batches are 6,000 changes, as much as it has in flight).
    func expectAtMostOneBatchTwice(_ status: ReplicationStatus?, _ total: Int,
                                   sourceLocation: SourceLocation = #_sourceLocation) {
        guard let status else { Issue.record("no status", sourceLocation: sourceLocation); return }
        #expect(status.docsWritten <= UInt64(total), "\(status)", sourceLocation: sourceLocation)
        #expect(status.revisionsSent >= UInt64(total), "\(status)", sourceLocation: sourceLocation)
        #expect(status.revisionsSent - UInt64(total) <= 6_000, "sent twice: \(status.revisionsSent - UInt64(total))",
                sourceLocation: sourceLocation)
    }
}
