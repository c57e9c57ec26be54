import Foundation
import SofaCluster
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
        try await pushKillingTarget("storage")
    }

    /// The target's gateway is killed with SIGKILL mid-push: same outcome.
    @Test func targetGatewayKilledMidRun() async throws {
        try await pushKillingTarget("gateway")
    }

    /// Pushes 20,000 new documents and kills `process` of the target once the push has saved a
    /// checkpoint. A push that ended before the test got to see it (a test process starved of CPU
    /// by the rest of the suite) proves nothing: another 20,000 documents are pushed, resuming
    /// from its checkpoint, up to three times.
    func pushKillingTarget(_ process: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await suite.withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("big")
            let dbB = try await b.client.createDatabase("big")
            let total = 20_000
            for attempt in 0..<3 {
                for start in stride(from: attempt * total, to: (attempt + 1) * total, by: 2_000) {
                    _ = try await dbA.bulk((start..<start + 2_000).map {
                        BulkItem.put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false)
                    })
                }
                let pid = try #require(b.supervisor.pid(of: process), sourceLocation: sourceLocation)
                let handle = try await a.client.replicate(from: "big", to: suite.remote(b, "big"))
                let progressed = try await handle.wait(timeout: .seconds(60)) { $0.checkpoint > 0 || $0.state.isFinal }
                guard progressed.first?.state.isFinal == false else { continue }
                kill(pid, SIGKILL)
                let done = try await handle.wait(timeout: .seconds(180))
                #expect(done.first?.state == .completed, "\(done)", sourceLocation: sourceLocation)
                // The push may have needed nothing more from the killed process: its restart can come later.
                #expect(await b.supervisor.waitForRestart(of: process, replacing: pid) != nil, sourceLocation: sourceLocation)
                #expect(b.supervisor.restartCount(of: process) >= 1, sourceLocation: sourceLocation)
                expectAtMostOneBatchTwice(done.first, total, sourceLocation: sourceLocation)
                try await suite.expectIdentical(dbA, dbB, sourceLocation: sourceLocation)
                return
            }
            Issue.record("every push ended before the kill", sourceLocation: sourceLocation)
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
