import Foundation
import SofaClient
import Testing

/// Bulk writes through the cluster: the item limit, transactions of bounded size, and no commit
/// once the client has been (or is about to be) told its request timed out.
@Suite(.serialized) struct BulkLimitTests {
    static func items(_ range: Range<Int>) -> [BulkItem] {
        range.map { BulkItem.put(id: "d\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false) }
    }

    @Test func oversizeBulkIsRefusedWithTheLimitNamedAndNothingWritten() async throws {
        try await Cluster.with(clientTimeout: .seconds(60)) { a in
            let db = try await a.client.createDatabase("big")
            // Server-generated IDs: a retry of a bulk that was partly written would duplicate.
            let items = [BulkItem](repeating: .put(id: "", rev: "", body: Array("{}".utf8), deleted: false), count: 100_001)
            do {
                _ = try await db.bulk(items)
                Issue.record("a bulk of 100,001 items was accepted")
            } catch let error as SofaError {
                #expect(error.is(.messageTooLarge), "\(error)")
                #expect(error.message.contains("100000 items per request"), "\(error.message)")
                #expect(error.message.contains("SOFA_MAX_BULK_ITEMS"), "\(error.message)")
                #expect(error.message.contains("nothing was written"), "\(error.message)")
            }
            #expect(try await db.info().documentCount == 0)
            #expect(try await a.client.health(service: "storage").service == "storage")
        }
    }

    /// The client gives storage less time than storage keeps in hand before a deadline (250 ms):
    /// whatever storage does, it commits nothing, and the client is told nothing was written.
    @Test func bulkWhoseDeadlinePassesBeforeCommitWritesNothing() async throws {
        try await Cluster.with { a in
            let db = try await a.client.createDatabase("late")
            // Its sign-in has the same 150 ms: on a loaded machine it is tried again until it fits.
            let hurried = try await retrying {
                try await SofaClient.connect(a.supervisor.gatewayEndpoint, serverKey: a.supervisor.serverKey,
                                             credentials: a.supervisor.adminCredentials, timeout: .milliseconds(150),
                                             connectTimeout: .seconds(10))
            }
            defer { hurried.close() }
            do {
                _ = try await hurried.database("late").bulk(Self.items(0..<2_000))
                Issue.record("a bulk with 150 ms to go was committed")
            } catch let error as SofaError {
                #expect(error.is(.timeout), "\(error)")
                // Storage's own answer says so (or the client or gateway gave up waiting first, or
                // the deadline had passed before storage's socket thread could start it).
                #expect(error.message.contains("nothing of it was written")
                        || error.message.contains("did not answer before the deadline")
                        || error.message.contains("deadline passed before"), "\(error.message)")
            }
            // Storage's last chance to commit it was before the client's deadline.
            #expect(try await db.info().documentCount == 0)
            #expect(try await db.info().lastSequence == 0)
            let later = try await db.bulk(Self.items(0..<10))
            #expect(later.allSatisfy { $0.error == nil })
            #expect(later.map(\.sequence) == Array(1...10), "nothing of the late bulk took a sequence")
        }
    }

    /// 25,000 items with storage's default of 10,000 per transaction: three transactions, every
    /// item acknowledged with its own revision and sequence.
    @Test func bulkLargerThanOneTransactionIsWrittenCompletely() async throws {
        try await Cluster.with(clientTimeout: .seconds(120)) { a in
            let db = try await a.client.createDatabase("long")
            let results = try await db.bulk(Self.items(0..<25_000))
            #expect(results.count == 25_000)
            #expect(results.allSatisfy { $0.error == nil && !$0.rev.isEmpty }, "\(results.first { $0.error != nil }.map { "\($0)" } ?? "")")
            #expect(results.map(\.id) == (0..<25_000).map { "d\($0)" })
            #expect(Set(results.map(\.sequence)).count == 25_000)
            #expect(try await db.info().documentCount == 25_000)
        }
    }
}
