import Foundation
import SofaCluster
import SofaClient
import Synchronization
import Testing

/// The live changes feed through real processes: storage's commit notices wake the gateway's long
/// polls; the SDK pulls batch after batch from its last sequence.
@Suite(.serialized) struct LiveChangesTests {
    /// Collects changes from a live feed until `count` distinct documents were seen.
    static func collect(_ feed: LiveChanges, count: Int) async throws -> [Change] {
        try await withDeadline(.seconds(30)) {
            var seen: [Change] = []
            var ids = Set<String>()
            for try await batch in feed {
                seen += batch.changes
                ids.formUnion(batch.changes.map(\.id))
                if ids.count >= count { break }
            }
            return seen
        }
    }

    @Test(arguments: Versioning.allCases)
    func everyCommitArrivesOnceInOrder(_ versioning: Versioning) async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("live", versioning: versioning)
            async let received = Self.collect(db.liveChanges(since: 0, batchLimit: 50), count: 200)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        for index in stride(from: lane, to: 200, by: 8) {
                            try await db.put(id: String(format: "d%03d", index), json: #"{"n":\#(index)}"#)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let changes = try await received
            let sequences = changes.map(\.sequence)
            #expect(sequences == sequences.sorted())
            #expect(Set(sequences).count == sequences.count, "a sequence arrived twice")
            #expect(Set(changes.map(\.id)).count == 200)
            #expect(changes.count == 200)
        }
    }

    /// A consumer that stops pulling makes nobody wait for it, and when it resumes it gets
    /// everything committed meanwhile, from its last sequence.
    @Test func aConsumerThatFallsBehindMissesNothing() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("slow")
            for index in 0..<20 { try await db.put(id: "early-\(index)", json: "{}") }
            var iterator = db.liveChanges(since: 0, batchLimit: 25).makeAsyncIterator()
            var seen = Set<String>()
            while seen.count < 20, let batch = try await iterator.next() { seen.formUnion(batch.changes.map(\.id)) }
            #expect(seen.count == 20)  // 20 documents exist, so this loop ends
            // The consumer is idle now; writers are not held back by it.
            let batch = (0..<300).map { BulkItem.put(id: "late-\($0)", rev: "", body: Array("{}".utf8), deleted: false) }
            let results = try await db.bulk(batch)
            #expect(results.allSatisfy { $0.error == nil })
            var late: [Change] = []
            while late.count < 300, let next = try await iterator.next() {
                #expect(next.changes.count <= 25)
                late += next.changes
            }
            #expect(Set(late.map(\.id)) == Set((0..<300).map { "late-\($0)" }))
        }
    }

    /// A document observer sees that document's revisions (and its purge, with an empty rev) and
    /// nothing of the others.
    @Test func documentObserverSeesOneDocument() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("watch")
            let observer = db.observe(id: "x")
            let first = try await db.put(id: "x", json: #"{"v":1}"#)
            try await db.put(id: "other", json: "{}")
            let second = try await db.put(id: "x", json: #"{"v":2}"#, rev: first.rev)
            try await db.purge(id: "x")
            let revs = try await withDeadline(.seconds(30)) {
                var revs: [String] = []
                for try await batch in observer {
                    #expect(batch.changes.allSatisfy { $0.id == "x" })
                    revs += batch.changes.map(\.rev)
                    if revs.last == "" { break }
                }
                return revs
            }
            // Changes are per document at its latest sequence: a poll may see only the newest.
            #expect(revs.last == "")
            #expect(revs.dropLast().allSatisfy { $0 == first.rev || $0 == second.rev })
        }
    }

    /// The feed rides out a storage crash: it keeps polling while storage is down and delivers
    /// what is committed after the restart.
    @Test func feedSurvivesAStorageCrash() async throws {
        try await Cluster.with(clientTimeout: .seconds(10)) { cluster in
            let db = try await cluster.client.createDatabase("crashfeed")
            try await db.put(id: "before", json: "{}")
            var iterator = db.liveChanges(since: 0, pollMs: 1000).makeAsyncIterator()
            let firstBatch = try await iterator.next()
            #expect(firstBatch?.changes.map(\.id) == ["before"])
            kill(try #require(cluster.supervisor.pid(of: "storage")), SIGKILL)
            try await cluster.supervisor.waitUntilHealthy(timeout: .seconds(30))
            try await db.put(id: "after", json: "{}")
            let next = try await iterator.next()
            #expect(next?.changes.map(\.id) == ["after"])
        }
    }
}

/// Runs `body`, failing the test (instead of hanging it) if it has not finished by `deadline`.
func withDeadline<T: Sendable>(_ deadline: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: deadline)  // the deadline of the wait, not a wait for the event
            return nil
        }
        let first = try await group.next() ?? nil
        group.cancelAll()
        return try #require(first, "did not finish within \(deadline)")
    }
}
