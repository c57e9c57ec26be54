import SofaTestSupport
import Foundation
import SofaCore
@testable import SofaStorage
import Testing

/// A database's revs limit (CouchDB's `_revs_limit`), with the facts of CouchDB's rev-stemming
/// tests: setting it prunes the histories held, later writes keep at most that many, and it
/// outlives a restart and a compaction.
@Suite struct RevsLimitTests {
    /// Writes `count` updates of `id` after `parent`; the last revision.
    static func update(_ db: DatabaseStore, _ id: String, times count: Int, after parent: DocumentVersion?) async throws -> DocumentVersion? {
        var parent = parent
        for n in 0..<count {
            parent = try await db.write(put(id, ["count": .int(Int64(n))], parent: parent)).rev
        }
        return parent
    }

    @Test func settingTheLimitPrunesHistoriesAndEveryLaterWrite() async throws {
        try await withRecordedDatabase { _, db, _ in
            #expect(try await db.info().revsLimit == 0)
            var last = try await Self.update(db, "foo", times: 6, after: nil)
            #expect(try await db.read(id: "foo", history: true).history.count == 6)
            try await db.setRevsLimit(5)
            #expect(db.revsLimit.load(ordering: .relaxed) == 5)
            // What the database held is pruned at once (no write, no compaction).
            let held = try await db.read(id: "foo", history: true).history
            #expect(held.count == 5)
            #expect(held.first == last?.ascii)
            last = try await Self.update(db, "foo", times: 6, after: last)
            let history = try await db.read(id: "foo", history: true).history
            #expect(history.count == 5)
            #expect(history.first == last?.ascii)
            #expect(last?.generation == 12)
            // A new document too.
            _ = try await Self.update(db, "bar", times: 7, after: nil)
            #expect(try await db.read(id: "bar", history: true).history.count == 5)
        }
    }

    @Test func aReplicatedHistoryIsPrunedAndAStemmedOneMakesAConflict() async throws {
        try await withRecordedDatabase { _, db, _ in
            try await db.setRevsLimit(5)
            let long = (1...8).reversed().map { "\($0)-\(String(repeating: "a", count: 32))" }
            _ = try await db.insert(RevisionInsertion(id: "doc", history: long, body: ["v": 8]))
            #expect(try await db.read(id: "doc", history: true).history == Array(long.prefix(5)))
            // A history that no longer reaches the leaf held (the sender stemmed it) is a branch
            // of its own: a conflict (a replicated one does not win, LiteCore's rule).
            let stemmed = (12...16).reversed().map { "\($0)-\(String(repeating: "b", count: 32))" }
            let outcome = try await db.insert(RevisionInsertion(id: "doc", history: stemmed, body: ["v": 16]))
            #expect(outcome.conflict)
            #expect(try await db.read(id: "doc").rev.ascii == long[0])
            #expect(try await db.conflicts(id: "doc") == [stemmed[0]])
            #expect(try await db.read(id: "doc", rev: .parse(ascii: stemmed[0]), history: true).history == stemmed)
        }
    }

    /// A revision the tree keeps below the limit (a remote's current one, from a replication)
    /// leaves a gap: the history read stops there, so it always descends by one generation.
    @Test func aHistoryStopsWherePruningLeftAGap() async throws {
        try await withRecordedDatabase { _, db, _ in
            let replicated = "3-" + String(repeating: "a", count: 40)
            _ = try await db.insert(RevisionInsertion(id: "doc", history: [replicated, "2-" + String(repeating: "b", count: 40)],
                                                      body: ["v": 3]))
            try await db.setRevsLimit(2)
            let last = try await Self.update(db, "doc", times: 4, after: try DocumentVersion.parse(ascii: replicated))
            let history = try await db.read(id: "doc", history: true).history
            #expect(history.count == 2)
            #expect(history.first == last?.ascii)
            let generations = history.map { Int($0.prefix { $0 != "-" })! }
            #expect(generations == [7, 6])
        }
    }

    @Test func theLimitOutlivesARestartAndBoundsCompaction() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let engine = try StorageEngine(dataDirectory: directory, maxRevTreeDepth: 50)
                try await engine.createDatabase("db")
                let db = try await engine.database("db")
                try await db.setRevsLimit(3)
                engine.close()
            }
            let engine = try StorageEngine(dataDirectory: directory, maxRevTreeDepth: 50)
            defer { engine.close() }
            let db = try await engine.database("db")
            #expect(try await db.info().revsLimit == 3)
            _ = try await Self.update(db, "doc", times: 10, after: nil)
            #expect(try await db.read(id: "doc", history: true).history.count == 3)
            _ = try await db.compact()
            #expect(try await db.read(id: "doc", history: true).history.count == 3)
        }
    }

    @Test(arguments: [0, -1, Int(Int32.max) + 1])
    func aLimitThatIsNotAPositiveIntegerIsRefused(_ limit: Int) async throws {
        try await withRecordedDatabase { _, db, _ in
            _ = try await Self.update(db, "doc", times: 3, after: nil)
            await expectError(.invalidParameter) { try await db.setRevsLimit(limit) }
            #expect(try await db.info().revsLimit == 0)
            #expect(try await db.read(id: "doc", history: true).history.count == 3)
        }
    }
}
