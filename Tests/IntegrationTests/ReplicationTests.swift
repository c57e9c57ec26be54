import Foundation
import SofaClient
import Testing

/// Replication between two clusters started by the test, each with its own data directory and
/// gateway port: one-shot push and pull, continuous both ways, conflicts (auto and manual),
/// deletions and purges, checkpoints, refused mixes of versioning modes.
@Suite(.serialized) struct ReplicationTests {
    /// Two clusters; `body` gets both.
    func withTwoClusters(_ body: (Cluster, Cluster) async throws -> Void) async throws {
        try await Cluster.with { a in
            try await Cluster.with { b in
                try await body(a, b)
            }
        }
    }

    /// `db` of cluster `b`, as another cluster names it.
    func remote(_ b: Cluster, _ db: String) -> String { "\(b.supervisor.gatewayEndpoint)/\(db)" }

    /// Every document (deleted ones too) as (rev, deleted, body), by ID.
    func snapshot(_ db: Database) async throws -> [String: (String, Bool, String)] {
        var result: [String: (String, Bool, String)] = [:]
        for doc in try await db.allDocs(includeBodies: true, includeDeleted: true) {
            result[doc.id] = (doc.rev, doc.deleted, doc.deleted ? "" : String(decoding: doc.body, as: UTF8.self))
        }
        return result
    }

    func expectIdentical(_ x: Database, _ y: Database, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let left = try await snapshot(x), right = try await snapshot(y)
        #expect(left.keys.sorted() == right.keys.sorted(), sourceLocation: sourceLocation)
        for (id, l) in left {
            guard let r = right[id] else { continue }
            #expect(l.0 == r.0 && l.1 == r.1 && l.2 == r.2, "\(id): \(l) vs \(r)", sourceLocation: sourceLocation)
        }
    }

    @Test func oneShotPushAndPull() async throws {
        try await withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("app")
            let dbB = try await b.client.createDatabase("app")
            for i in 0..<120 { _ = try await dbA.put(id: "a\(i)", json: #"{"n":\#(i),"side":"a"}"#) }
            let updated = try await dbA.put(id: "a0", json: #"{"n":0,"v":2}"#, rev: try await dbA.get(id: "a0").rev)
            // Push: everything of A arrives in B, with the same revisions.
            let push = try await a.client.replicate(from: "app", to: remote(b, "app"))
            let pushed = try await push.wait(timeout: .seconds(60))
            #expect(pushed.map(\.state) == [.completed])
            #expect(pushed.first?.docsWritten == 120)
            #expect(try await dbB.get(id: "a0", history: true).history.count == 2)
            #expect(try await dbB.get(id: "a0").rev == updated.rev)
            try await expectIdentical(dbA, dbB)
            // Pull: documents written on B come to A.
            for i in 0..<30 { _ = try await dbB.put(id: "b\(i)", json: #"{"n":\#(i),"side":"b"}"#) }
            let pull = try await a.client.replicate(from: "app", to: remote(b, "app"), direction: .pull)
            let pulled = try await pull.wait(timeout: .seconds(60))
            #expect(pulled.map(\.state) == [.completed])
            #expect(pulled.first?.docsWritten == 30)
            #expect(pulled.first?.source == remote(b, "app"))
            try await expectIdentical(dbA, dbB)
            #expect(try await a.client.replications().count == 2)
        }
    }

    @Test func continuousBothWays() async throws {
        try await withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("live")
            let dbB = try await b.client.createDatabase("live")
            let handle = try await a.client.replicate(from: "live", to: remote(b, "live"), direction: .both, mode: .continuous)
            #expect(handle.ids.count == 2)
            let fromA = try await dbA.put(id: "x", json: #"{"from":"a"}"#)
            try await waitUntil("x on B", in: dbB) { (try? await dbB.get(id: "x"))?.rev == fromA.rev }
            let fromB = try await dbB.put(id: "y", json: #"{"from":"b"}"#)
            try await waitUntil("y on A", in: dbA) { (try? await dbA.get(id: "y"))?.rev == fromB.rev }
            let edited = try await dbB.put(id: "x", json: #"{"from":"b","edit":1}"#, rev: fromA.rev)
            try await waitUntil("edit of x on A", in: dbA) { (try? await dbA.get(id: "x"))?.rev == edited.rev }
            let statuses = try await handle.status()
            #expect(statuses.allSatisfy { $0.continuous && !$0.state.isFinal })
            try await handle.stop()
            #expect(try await handle.status().allSatisfy { $0.state == .stopped })
            try await expectIdentical(dbA, dbB)
        }
    }

    /// The same document edited on both sides, then replicated both ways.
    func conflicting(_ a: Cluster, _ b: Cluster, _ name: String, _ policy: ConflictPolicy) async throws -> (Database, Database) {
        let dbA = try await a.client.createDatabase(name)
        let dbB = try await b.client.createDatabase(name)
        let base = try await dbA.put(id: "doc", json: #"{"v":0}"#)
        _ = try await a.client.replicate(from: name, to: remote(b, name), conflicts: policy).wait()
        #expect(try await dbB.get(id: "doc").rev == base.rev)
        _ = try await dbA.put(id: "doc", json: #"{"v":"a"}"#, rev: base.rev)
        _ = try await dbB.put(id: "doc", json: #"{"v":"b"}"#, rev: base.rev)
        let both = try await a.client.replicate(from: name, to: remote(b, name), direction: .both, conflicts: policy)
        let done = try await both.wait(timeout: .seconds(60))
        #expect(done.allSatisfy { $0.state == .completed }, "\(done)")
        return (dbA, dbB)
    }

    @Test func conflictsResolvedAutomaticallyEndIdentical() async throws {
        try await withTwoClusters { a, b in
            let (dbA, dbB) = try await conflicting(a, b, "auto", .auto)
            // The push and the pull each resolved on their target; a second exchange carries the
            // closing tombstones so both trees hold the same revisions.
            _ = try await a.client.replicate(from: "auto", to: remote(b, "auto"), direction: .both).wait()
            let docA = try await dbA.get(id: "doc"), docB = try await dbB.get(id: "doc")
            #expect(docA.rev == docB.rev)
            #expect(docA.body == docB.body)
            #expect(!docA.conflicted && !docB.conflicted)
            #expect(try await dbA.conflicts(id: "doc") == [])
            #expect(try await dbB.conflicts(id: "doc") == [])
            // The higher revID of generation 2 won.
            let leaves = try await dbA.openLeaves(id: "doc").filter { !$0.deleted }
            #expect(leaves.count == 1)
            try await expectIdentical(dbA, dbB)
        }
    }

    @Test func conflictsStayOpenInManualMode() async throws {
        try await withTwoClusters { a, b in
            let (dbA, dbB) = try await conflicting(a, b, "manual", .manual)
            let leavesA = Set(try await dbA.openLeaves(id: "doc").map(\.rev))
            let leavesB = Set(try await dbB.openLeaves(id: "doc").map(\.rev))
            #expect(leavesA.count == 2)
            #expect(leavesA == leavesB)
            #expect(try await dbA.conflicts(id: "doc").count == 1)
            #expect(try await dbB.conflicts(id: "doc").count == 1)
        }
    }

    @Test func deletionReplicatesPurgeDoesNot() async throws {
        try await withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("del")
            let dbB = try await b.client.createDatabase("del")
            let gone = try await dbA.put(id: "gone", json: #"{"v":1}"#)
            _ = try await dbA.put(id: "purged", json: #"{"v":1}"#)
            _ = try await a.client.replicate(from: "del", to: remote(b, "del")).wait()
            #expect(try await dbB.get(id: "purged").body == Array(#"{"v":1}"#.utf8))
            let tombstone = try await dbA.delete(id: "gone", rev: gone.rev)
            try await dbA.purge(id: "purged")
            let second = try await a.client.replicate(from: "del", to: remote(b, "del")).wait()
            #expect(second.first?.docsWritten == 1)
            await expectFailure("deleted on B", [.notFound]) { _ = try await dbB.get(id: "gone") }
            #expect(try await dbB.openLeaves(id: "gone").first?.rev == tombstone.rev)
            #expect(try await dbB.get(id: "purged").body == Array(#"{"v":1}"#.utf8), "a purge is not replicated")
        }
    }

    @Test func restartedReplicationResumesFromItsCheckpoint() async throws {
        try await withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("cp")
            let dbB = try await b.client.createDatabase("cp")
            let docs = (0..<1_200).map { BulkItem.put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false) }
            _ = try await dbA.bulk(docs)
            let first = try await a.client.replicate(from: "cp", to: remote(b, "cp")).wait(timeout: .seconds(120))
            #expect(first.first?.docsWritten == 1_200)
            let checkpoint = try #require(first.first?.checkpoint)
            #expect(checkpoint == (try await dbA.changes(since: 0, limit: 1, descending: true)).lastSequence)
            // Both sides hold the checkpoint.
            let local = "_local/replication-\(first[0].id)"
            #expect(try await dbA.getLocal(id: local).body == Array(#"{"sequence":\#(checkpoint)}"#.utf8))
            #expect(try await dbB.getLocal(id: local).body == Array(#"{"sequence":\#(checkpoint)}"#.utf8))
            // Started again: nothing is read or written again; one new document is.
            _ = try await dbA.put(id: "late", json: "{}")
            let again = try await a.client.replicate(from: "cp", to: remote(b, "cp")).wait()
            #expect(again.first?.id == first.first?.id)
            #expect(again.first?.docsChecked == 1)
            #expect(again.first?.docsWritten == 1)
            try await expectIdentical(dbA, dbB)
            // Without the target's checkpoint the two sides no longer agree: everything is read
            // again from the start, and nothing is written (the target has it all).
            let targetCheckpoint = try await dbB.getLocal(id: local)
            _ = try await dbB.deleteLocal(id: local, rev: targetCheckpoint.rev)
            let fromScratch = try await a.client.replicate(from: "cp", to: remote(b, "cp")).wait()
            #expect(fromScratch.first?.docsChecked == 1_201)
            #expect(fromScratch.first?.docsWritten == 0)
        }
    }

    @Test func docIDFilter() async throws {
        try await withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("f")
            let dbB = try await b.client.createDatabase("f")
            for id in ["keep1", "keep2", "skip"] { _ = try await dbA.put(id: id, json: "{}") }
            let done = try await a.client.replicate(from: "f", to: remote(b, "f"), filter: .docIDs(["keep1", "keep2"])).wait()
            #expect(done.first?.docsWritten == 2)
            #expect(Set(try await dbB.allDocs().map(\.id)) == ["keep1", "keep2"])
        }
    }

    @Test func badReplicationsAreRefusedClearly() async throws {
        try await withTwoClusters { a, b in
            _ = try await a.client.createDatabase("trees")
            _ = try await b.client.createDatabase("vectors", versioning: .versionVectors)
            let mixed = try await a.client.replicate(from: "trees", to: remote(b, "vectors"))
            let status = try await mixed.wait()
            #expect(status.first?.state == .failed)
            #expect(status.first?.lastError.contains("versioning") == true, "\(status)")
            let missing = try await a.client.replicate(from: "trees", to: remote(b, "nope"))
            let noTarget = try await missing.wait()
            #expect(noTarget.first?.state == .failed)
            #expect(noTarget.first?.lastError.contains("does not exist") == true, "\(noTarget)")
            await expectFailure("bad endpoint", [.invalidParameter]) {
                _ = try await a.client.replicate(from: "trees", to: "http://x/y")
            }
            await expectFailure("same database", [.invalidParameter]) {
                _ = try await a.client.replicate(from: "trees", to: "trees")
            }
            // The replicator is still serving.
            #expect(try await a.client.health(service: "replicator").service == "replicator")
        }
    }

    @Test func cliReplicateAndList() async throws {
        try await withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("cli")
            _ = try await b.client.createDatabase("cli")
            _ = try await dbA.put(id: "one", json: #"{"v":1}"#)
            let run = try await runSofa(["replicate", "cli", remote(b, "cli")], gateway: a.supervisor.gatewayEndpoint)
            #expect(run.status == 0, "\(run.err)")
            let out = try parseOutput(run.out)
            #expect(out.arrayValue?.first?.objectValue?["state"] == .string("completed"))
            #expect(try await b.client.database("cli").get(id: "one").body == Array(#"{"v":1}"#.utf8))
            let list = try await runSofa(["replications"], gateway: a.supervisor.gatewayEndpoint)
            #expect(list.status == 0, "\(list.err)")
            #expect(try parseOutput(list.out).arrayValue?.count == 1)
            let bad = try await runSofa(["replicate", "cli", remote(b, "cli"), "--conflicts", "maybe"],
                                        gateway: a.supervisor.gatewayEndpoint)
            #expect(bad.status != 0)
            #expect(bad.err.contains("conflict"))
        }
    }
}

extension ReplicationTests {
    /// Deleted on one side, edited on the other: in `auto` mode the deletion wins on both.
    /// (Push then pull, in sequence: see the report on order dependence when both run at once.)
    @Test func deletionWinsOverAConcurrentEdit() async throws {
        try await withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("dw")
            let dbB = try await b.client.createDatabase("dw")
            let base = try await dbA.put(id: "doc", json: #"{"v":0}"#)
            _ = try await a.client.replicate(from: "dw", to: remote(b, "dw")).wait()
            _ = try await dbA.delete(id: "doc", rev: base.rev)
            _ = try await dbB.put(id: "doc", json: #"{"v":"edited"}"#, rev: base.rev)
            let push = try await a.client.replicate(from: "dw", to: remote(b, "dw")).wait()
            #expect(push.first?.conflictsResolved == 1)
            _ = try await a.client.replicate(from: "dw", to: remote(b, "dw"), direction: .pull).wait()
            await expectFailure("deleted on A", [.notFound]) { _ = try await dbA.get(id: "doc") }
            await expectFailure("deleted on B", [.notFound]) { _ = try await dbB.get(id: "doc") }
            #expect(Set(try await dbA.openLeaves(id: "doc").map(\.rev)) == Set(try await dbB.openLeaves(id: "doc").map(\.rev)))
            try await expectIdentical(dbA, dbB)
        }
    }
}

extension ReplicationTests {
    @Test func queryExpressionFilter() async throws {
        try await withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("q")
            let dbB = try await b.client.createDatabase("q")
            for (id, type) in [("r1", "red"), ("r2", "red"), ("b1", "blue")] {
                _ = try await dbA.put(id: id, json: #"{"type":"\#(type)"}"#)
            }
            let done = try await a.client.replicate(from: "q", to: remote(b, "q"), filter: .query("WHERE type = 'red'")).wait()
            #expect(done.first?.state == .completed, "\(done)")
            #expect(done.first?.docsWritten == 2)
            #expect(Set(try await dbB.allDocs().map(\.id)) == ["r1", "r2"])
            let bad = try await a.client.replicate(from: "q", to: remote(b, "q"), filter: .query("type = = 'red'")).wait()
            #expect(bad.first?.state == .failed)
            #expect(bad.first?.lastError.contains("filter") == true, "\(bad)")
        }
    }
}

extension ReplicationTests {
    @Test func statusUpdatesFollowAReplicationToItsEnd() async throws {
        try await withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("u")
            _ = try await b.client.createDatabase("u")
            _ = try await dbA.bulk((0..<1_500).map { BulkItem.put(id: "d\($0)", rev: "", body: Array("{}".utf8), deleted: false) })
            let handle = try await a.client.replicate(from: "u", to: remote(b, "u"))
            var seen: [ReplicationStatus] = []
            for try await status in handle.updates() { seen.append(status) }
            #expect(seen.first?.state == .starting)
            #expect(seen.last?.state == .completed)
            #expect(seen.last?.docsWritten == 1_500)
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.version < $1.version }, "versions only grow")
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.checkpoint <= $1.checkpoint }, "checkpoints only grow")
        }
    }
}

extension ReplicationTests {
    @Test func collectionIsReplicatedToTheSameCollection() async throws {
        try await withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("c")
            let dbB = try await b.client.createDatabase("c")
            let ordersA = try await dbA.createCollection("store.orders")
            let ordersB = try await dbB.createCollection("store.orders")
            _ = try await dbA.put(id: "in-default", json: "{}")
            for i in 0..<5 { _ = try await ordersA.put(id: "o\(i)", json: #"{"total":\#(i),"paid":\#(i % 2 == 0)}"#) }
            let done = try await a.client.replicate(from: "c", to: remote(b, "c"), collection: "store.orders").wait()
            #expect(done.first?.state == .completed, "\(done)")
            #expect(done.first?.docsWritten == 5)
            #expect(done.first?.collection == "store.orders")
            #expect(try await ordersB.allDocs().count == 5)
            #expect(try await dbB.allDocs().isEmpty, "the default collection is another replication")
            // With a query filter, evaluated in the collection.
            _ = try await dbB.createCollection("store.paid")
            _ = try await dbA.createCollection("store.paid")
            for i in 0..<4 { _ = try await dbA.collection("store.paid").put(id: "p\(i)", json: #"{"paid":\#(i < 1)}"#) }
            let paid = try await a.client.replicate(from: "c", to: remote(b, "c"), filter: .query("paid = true"),
                                                    collection: "store.paid").wait()
            #expect(paid.first?.state == .completed, "\(paid)")
            #expect(try await dbB.collection("store.paid").allDocs().map(\.id) == ["p0"], "\(paid)")
            // A collection the target lacks: a clear failure.
            _ = try await dbA.createCollection("store.only_a")
            let missing = try await a.client.replicate(from: "c", to: remote(b, "c"), collection: "store.only_a").wait()
            #expect(missing.first?.state == .failed, "\(missing)")
        }
    }
}
