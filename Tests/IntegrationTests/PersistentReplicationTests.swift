import Foundation
import SofaClient
import Testing

/// Persistent replications (documents of `_replicator`) and a replicator killed mid-run.
@Suite(.serialized) struct PersistentReplicationTests {
    let suite = ReplicationTests()

    /// The `status` array the replicator keeps in a `_replicator` document.
    func status(_ db: Database, _ id: String) async throws -> [JSONObject] {
        guard let doc = try? await db.get(id: id), case .object(let body) = try doc.json(),
              case .array(let legs)? = body["status"] else { return [] }
        return legs.compactMap(\.objectValue)
    }

    /// The replicator creates `_replicator` when it starts; the test may get there first.
    func ensureReplicatorDatabase(_ client: SofaClient) async throws {
        do { _ = try await client.createDatabase("_replicator") } catch where error.is(.databaseExists) {}
    }

    func integer(_ leg: JSONObject?, _ key: String) -> Int64 {
        if case .int(let value)? = leg?[key] { return value }
        return -1
    }

    @Test func documentStartsAndDeletionStopsAReplication() async throws {
        try await suite.withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("p")
            let dbB = try await b.client.createDatabase("p")
            let replicator = a.client.database("_replicator")
            _ = try await dbA.put(id: "before", json: "{}")
            let spec = #"{"source":"p","target":"\#(suite.remote(b, "p"))","continuous":true}"#
            try await ensureReplicatorDatabase(a.client)
            let created = try await replicator.put(id: "p-to-b", json: spec)
            try await waitUntil("before on B", in: dbB) { (try? await dbB.get(id: "before")) != nil }
            _ = try await dbA.put(id: "after", json: "{}")
            try await waitUntil("after on B", in: dbB) { (try? await dbB.get(id: "after")) != nil }
            try await waitUntil("status in the document", in: replicator) {
                let legs = try await status(replicator, "p-to-b")
                return legs.first?["state"] == .string("idle") && integer(legs.first, "docs_written") == 2
            }
            // Deleting the document stops the replication.
            let current = try await replicator.get(id: "p-to-b")
            #expect(current.rev != created.rev, "the status was written into it")
            _ = try await replicator.delete(id: "p-to-b", rev: current.rev)
            let id = try #require(try await a.client.replications().first?.id)
            var seen = try await a.client.replicationStatus(id)
            while seen.state != .stopped {
                seen = try await a.client.replicationStatus(id, afterVersion: seen.version, wait: .seconds(10))
            }
            #expect(seen.state == .stopped)
        }
    }

    @Test func invalidDocumentIsMarkedFailed() async throws {
        try await Cluster.with { a in
            let replicator = a.client.database("_replicator")
            try await ensureReplicatorDatabase(a.client)
            _ = try await replicator.put(id: "bad", json: #"{"source":"x","target":"http://nowhere/y","continuous":"yes"}"#)
            try await waitUntil("failed status", in: replicator) {
                try await status(replicator, "bad").first?["state"] == .string("failed")
            }
            let error = try await status(replicator, "bad").first?["last_error"]
            #expect(error?.stringValue?.contains("continuous") == true, "\(String(describing: error))")
            #expect(try await a.client.health(service: "replicator").service == "replicator")
        }
    }

    /// The replicator is killed with SIGKILL while a persistent one-shot replication runs; the
    /// supervisor restarts it, it starts the document's replication again, which resumes from the
    /// checkpoint both sides agree on and ends with both sides identical.
    @Test func killedReplicatorResumesFromTheCheckpoint() async throws {
        try await suite.withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("big")
            let dbB = try await b.client.createDatabase("big")
            let total = 20_000
            for start in stride(from: 0, to: total, by: 2_000) {
                _ = try await dbA.bulk((start..<start + 2_000).map {
                    BulkItem.put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0),"pad":"\#(String(repeating: "x", count: 200))"}"#.utf8), deleted: false)
                })
            }
            let replicator = a.client.database("_replicator")
            try await ensureReplicatorDatabase(a.client)
            let pid = try #require(a.supervisor.pid(of: "replicator"))
            _ = try await replicator.put(id: "big", json: #"{"source":"big","target":"\#(suite.remote(b, "big"))"}"#)
            // Wait for a first checkpoint, then kill.
            var checkpointAtKill: Int64 = 0
            try await waitUntil("a first checkpoint", in: replicator, timeout: .seconds(60)) {
                let legs = try await status(replicator, "big")
                checkpointAtKill = integer(legs.first, "checkpoint")
                return checkpointAtKill > 0 && legs.first?["state"] != .string("completed")
            }
            kill(pid, SIGKILL)
            try await waitUntil("the replication completed after the restart", in: replicator, timeout: .seconds(120)) {
                try await status(replicator, "big").first?["state"] == .string("completed")
            }
            #expect(a.supervisor.restartCount(of: "replicator") >= 1)
            #expect(a.supervisor.pid(of: "replicator") != pid)
            let after = try await status(replicator, "big").first
            // The restarted run read only what followed the checkpoint both sides had.
            #expect(integer(after, "docs_checked") <= Int64(total) - checkpointAtKill, "\(String(describing: after))")
            #expect(integer(after, "docs_written") <= Int64(total) - checkpointAtKill)
            try await suite.expectIdentical(dbA, dbB)
        }
    }
}
