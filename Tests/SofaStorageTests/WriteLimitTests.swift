import SofaTestSupport
import Foundation
import Logging
import SofaCore
@testable import SofaStorage
import SofaWire
import Synchronization
import Testing

/// Bulk writes: the item limit, transactions of bounded size, and no commit after the deadline.
@Suite struct WriteLimitTests {
    static func items(_ count: Int, prefix: String = "d") -> [BulkItem] {
        (0..<count).map { .put(id: "\(prefix)\($0)", rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false) }
    }

    /// A service on a fresh directory; `onCommit` hears of every transaction.
    func withService(_ limits: WriteLimits, onCommit: (@Sendable (CommitNotice) -> Void)?,
                     _ body: (StorageService, DatabaseStore) async throws -> Void) async throws {
        try await withTemporaryDirectory { url in
            let engine = try StorageEngine(dataDirectory: url, onCommit: onCommit)
            defer { engine.close() }
            try await engine.createDatabase("db")
            let service = StorageService(engine: engine, instance: "test", logger: Logger(label: "test"), limits: limits)
            try await body(service, try await engine.database("db"))
        }
    }

    @Test func bulkOverTheItemLimitIsRefusedWholeNamingTheLimit() async throws {
        try await withService(WriteLimits(maxBulkItems: 50), onCommit: nil) { service, db in
            let error = await expectError(.messageTooLarge) { try await service.bulk(Self.items(51), db, .default) }
            #expect(error?.message.contains("50 items per request") == true, "\(String(describing: error))")
            #expect(error?.message.contains("SOFA_MAX_BULK_ITEMS") == true)
            let count = try await db.info().documents
            #expect(count == 0)
            let fifty = try await service.bulk(Self.items(50), db, .default)
            #expect(fifty.allSatisfy { $0.error == nil })
        }
    }

    /// A document over the size limit is refused with the limit named, alone, in a put, an insert
    /// or a bulk (where the other items are written); one at the limit is taken.
    @Test func documentOverTheSizeLimitIsRefusedNamingTheLimit() async throws {
        try await withService(WriteLimits(maxDocumentBytes: 100), onCommit: nil) { service, db in
            let big = Array("{\"x\":\"\(String(repeating: "a", count: 100))\"}".utf8)
            let put = await service.handle(Request(database: "db", operation: .putDocument(id: "big", rev: "", body: big, deleted: false)))
            guard case .failure(let error) = put.outcome else { Issue.record("a big put was taken"); return }
            #expect(error.is(.messageTooLarge) && error.message.contains("SOFA_MAX_DOCUMENT_BYTES"), "\(error)")
            let insert = await service.handle(Request(database: "db", operation: .insertRevision(
                RevisionInsert(id: "big", history: ["1-abc"], body: big, deleted: false))))
            guard case .failure(let inserted) = insert.outcome else { Issue.record("a big insert was taken"); return }
            #expect(inserted.is(.messageTooLarge))
            let mixed = try await service.bulk([.put(id: "big", rev: "", body: big, deleted: false)] + Self.items(2), db, .default)
            #expect(mixed[0].error?.is(.messageTooLarge) == true)
            #expect(mixed[1...].allSatisfy { $0.error == nil })
            let count = try await db.info().documents
            #expect(count == 2)
            let fits = Array("{\"x\":\"\(String(repeating: "a", count: 92))\"}".utf8)
            #expect(fits.count == 100)
            let taken = await service.handle(Request(database: "db", operation: .putDocument(id: "fits", rev: "", body: fits, deleted: false)))
            if case .failure(let error) = taken.outcome { Issue.record("a document at the limit was refused: \(error)") }
        }
    }

    @Test func longBulkIsCommittedInSeveralTransactionsEveryItemAcknowledged() async throws {
        let commits = Mutex<[Int]>([])
        try await withService(WriteLimits(maxTransactionItems: 100), onCommit: { committed in
            commits.withLock { $0.append(committed.batch.changes.count) }
        }) { service, db in
            let results = try await service.bulk(Self.items(350), db, .default)
            #expect(results.allSatisfy { $0.error == nil && !$0.rev.isEmpty })
            #expect(results.map(\.sequence) == Array(1...350))
            #expect(results.map(\.id) == (0..<350).map { "d\($0)" })
            #expect(commits.withLock { $0 } == [100, 100, 100, 50])
            let count = try await db.info().documents
            #expect(count == 350)
        }
    }

    /// The deadline passes while the transaction is being filled: it is rolled back.
    @Test func workPastItsDeadlineIsRolledBackAndSaysNothingWasWritten() async throws {
        try await withService(WriteLimits(maxTransactionItems: 100_000), onCommit: nil) { service, db in
            let deadline = ContinuousClock.now + .milliseconds(1)
            let error = await expectError(.timeout) {
                try await WriteDeadline.$current.withValue(deadline) { try await service.bulk(Self.items(20_000), db, .default) }
            }
            #expect(error?.message.contains("nothing of it was written") == true, "\(String(describing: error))")
            let info = try await db.info()
            #expect(info.documents == 0)
            #expect(info.lastSequence == 0)
            // The writer goes on with other work.
            let after = try await service.bulk(Self.items(3, prefix: "after"), db, .default)
            #expect(after.allSatisfy { $0.error == nil })
        }
    }

    /// The deadline passes after the first of three transactions committed: the answer says
    /// which items were written and which were not.
    @Test func bulkCutByItsDeadlineReportsExactlyWhatWasWritten() async throws {
        let deadline = Mutex<ContinuousClock.Instant?>(nil)
        try await withService(WriteLimits(maxTransactionItems: 10), onCommit: { _ in
            // The first commit lasts until the deadline has passed: the event waited for is that
            // instant itself.
            guard let instant = deadline.withLock({ $0 }) else { return }
            let left = instant - ContinuousClock.now
            guard left > .zero else { return }
            // A timer fires at that instant (a millisecond past it); the commit waits for it.
            let passed = DispatchSemaphore(value: 0)
            let timer = DispatchSource.makeTimerSource()
            timer.schedule(deadline: .now() + .nanoseconds(Int(left.components.seconds) * 1_000_000_000
                + Int(left.components.attoseconds / 1_000_000_000) + 1_000_000))
            timer.setEventHandler { passed.signal() }
            timer.resume()
            passed.wait()
            timer.cancel()
        }) { service, db in
            let instant = ContinuousClock.now + .seconds(1)
            deadline.withLock { $0 = instant }
            let results = try await WriteDeadline.$current.withValue(instant) {
                try await service.bulk(Self.items(30), db, .default)
            }
            #expect(results.prefix(10).allSatisfy { $0.error == nil && $0.sequence > 0 })
            for result in results.dropFirst(10) {
                #expect(result.error?.sofaCode == .timeout, "\(result)")
                #expect(result.error?.message.contains("not written") == true)
                #expect(result.error?.message.contains("before #10") == true, "\(String(describing: result.error))")
            }
            let count = try await db.info().documents
            #expect(count == 10)
        }
    }
}
