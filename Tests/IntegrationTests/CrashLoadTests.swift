import Foundation
import SofaCluster
import SofaClient
import Synchronization
import Testing

/// The document store under load while storage is killed: 8 clients (each its own connection)
/// write 20,000 documents; storage is `kill -9`ed twice. Every acknowledged write is there with
/// its acknowledged revID, nothing is half-written, and sequences have no duplicates.
@Suite(.serialized) struct CrashLoadTests {
    final class Ledger: Sendable {
        let acknowledged = Mutex<[String: String]>([:])
        let kills = Mutex<[Int]>([])
        let failures = Mutex<[SofaError.Code?]>([])
    }

    static let total = 20_000
    static let killAt = [5_000, 12_000]

    @Test func twentyThousandWritesSurviveTwoStorageCrashes() async throws {
        try await Cluster.with(clientTimeout: .seconds(10)) { cluster in
            _ = try await cluster.client.createDatabase("load")
            let ledger = Ledger()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        let client = try await cluster.supervisor.connect(timeout: .seconds(10))
                        defer { client.close() }
                        let db = client.database("load")
                        for index in stride(from: lane, to: Self.total, by: 8) {
                            try await Self.write(index, to: db, ledger: ledger, cluster: cluster)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(ledger.kills.withLock { $0 } == Self.killAt)
            #expect(cluster.supervisor.restartCount(of: "storage") >= 2)
            #expect(!ledger.failures.withLock { $0 }.isEmpty, "no call happened during an outage")
            for code in ledger.failures.withLock({ $0 }) {
                #expect([.unavailable, .timeout, .shuttingDown].contains(code), "unclear failure \(String(describing: code))")
            }

            let db = cluster.client.database("load")
            let acknowledged = ledger.acknowledged.withLock { $0 }
            #expect(acknowledged.count == Self.total)
            // Every document whole, at the acknowledged revision.
            let docs = try await db.allDocs(includeBodies: true)
            #expect(docs.count == Self.total)
            for doc in docs {
                #expect(doc.rev == acknowledged[doc.id], "\(doc.id) is not at its acknowledged revision")
                let index = Int(doc.id.dropFirst(4)) ?? -1
                #expect(try doc.json() == .object(JSONObject([("n", .int(Int64(index)))])), "\(doc.id) half-written")
            }
            // Each document once in the changes feed, with sequences 1…20,000 and no duplicate.
            let changes = try await db.changes(since: 0, limit: 0)
            let sequences = changes.changes.map(\.sequence)
            #expect(sequences.count == Self.total)
            #expect(Set(sequences).count == sequences.count, "duplicate sequences")
            #expect(Set(changes.changes.map(\.id)).count == Self.total)
            #expect(sequences.max() == UInt64(Self.total))
        }
    }

    private static func write(_ index: Int, to db: Database, ledger: Ledger, cluster: Cluster) async throws {
        let id = String(format: "doc-%05d", index)
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            do {
                let saved = try await db.put(id: id, json: #"{"n":\#(index)}"#)
                let count = ledger.acknowledged.withLock { acknowledged in
                    acknowledged[id] = saved.rev
                    return acknowledged.count
                }
                if Self.killAt.contains(count) {
                    ledger.kills.withLock { $0.append(count) }
                    if let pid = cluster.supervisor.pid(of: "storage") { kill(pid, SIGKILL) }
                }
                return
            } catch where error.is(.conflict) {
                // An earlier attempt was applied although its answer was lost: it must be whole.
                let doc = try await db.get(id: id)
                ledger.acknowledged.withLock { $0[id] = doc.rev }
                return
            } catch {
                ledger.failures.withLock { $0.append(error.sofaCode) }
                // Wait for storage to be back (the event, with the deadline above).
                while ContinuousClock.now < deadline, (try? await db.client.health(service: "storage")) == nil {
                    await Task.yield()
                }
            }
        }
        Issue.record("\(id) could not be written within two minutes")
    }
}
