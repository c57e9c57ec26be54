import SofaTestSupport
import SofaQL
import Foundation
import SofaCore
@testable import SofaStorage
import Testing

@Suite struct MaintenanceTests {
    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test(arguments: Versioning.allCases)
    func purgeDocument(_ versioning: Versioning) async throws {
        try await withRecordedDatabase(versioning) { _, db, recorder in
            let live = try await db.write(put("live", ["x": 1]))
            let gone = try await db.write(put("gone", ["x": 1]))
            _ = try await db.write(put("gone", [:], parent: gone.rev, deleted: true))
            for id in ["live", "gone"] {
                _ = try await db.purge(id: id)
                await expectError(.notFound, "\(id)") { try await db.read(id: id) }
                await expectError(.notFound, "\(id)") { try await db.purge(id: id) }
            }
            await expectError(.notFound) { try await db.read(id: "live", rev: live.rev) }
            // An update naming its old revision: not found (LiteCore's "LoadRevisions After Purge").
            await expectError(.notFound) { try await db.write(put("live", ["x": 2], parent: live.rev)) }
            await expectError(.notFound) { try await db.write(put("live", [:], parent: live.rev, deleted: true)) }
            #expect(recorder.events.suffix(2).map(\.rev) == ["", ""])
            #expect(recorder.events.suffix(2).map(\.sequence) == [4, 5])
            // Written again: a new document, generation 1.
            let again = try await db.write(put("live", ["x": 2]))
            #expect(versioning == .revisionTrees ? again.rev.generation == 1 : again.rev.ascii == "1@*")
            #expect(try await db.info().documents == 1)
            #expect(try await db.info().purgeCount == 2)
        }
    }

    @Test func purgeOneLeaf() async throws {
        try await withRecordedDatabase { _, db, _ in
            let r1 = try await db.write(put("doc", ["x": 1]))
            let r2 = try await db.write(put("doc", ["x": 2], parent: r1.rev))
            _ = try await db.insert(RevisionInsertion(id: "doc", history: ["2-aa", r1.rev.ascii], body: [:]))
            #expect(try await db.conflicts(id: "doc") == ["2-aa"])
            await expectError(.notFound) { try await db.purge(id: "doc", rev: r1.rev.ascii) }  // not a leaf
            let result = try await db.purge(id: "doc", rev: "2-aa")
            #expect(result.rev == r2.rev.ascii)
            #expect(try await db.conflicts(id: "doc") == [])
            #expect(try await db.read(id: "doc").rev == r2.rev)
            // Purging the last leaf purges the document.
            #expect(try await db.purge(id: "doc", rev: r2.rev.ascii).rev == "")
            await expectError(.notFound) { try await db.read(id: "doc") }
        }
    }

    @Test(arguments: Versioning.allCases)
    func expirationIsSetReadAndCancelled(_ versioning: Versioning) async throws {
        try await withRecordedDatabase(versioning) { _, db, _ in
            _ = try await db.write(put("a", [:]))
            _ = try await db.write(put("b", [:]))
            let later = Self.now() + 3_600_000
            #expect(try await db.expiration(id: "a") == 0)
            #expect(try await db.nextExpiration() == 0)
            try await db.setExpiration(id: "a", later + 5)
            try await db.setExpiration(id: "b", later)
            #expect(try await db.expiration(id: "a") == later + 5)
            #expect(try await db.nextExpiration() == later)
            try await db.setExpiration(id: "b", 0)
            #expect(try await db.expiration(id: "b") == 0)
            #expect(try await db.nextExpiration() == later + 5)
            await expectError(.notFound) { try await db.setExpiration(id: "missing", later) }
            #expect(try await db.expiration(id: "missing") == 0)  // LiteCore's answer: none
            await expectError(.invalidParameter) { try await db.setExpiration(id: "a", -1) }
            // Setting an expiration is not a change.
            #expect(try await db.info().lastSequence == 2)
        }
    }

    @Test(arguments: Versioning.allCases)
    func expiredDocumentsArePurgedOnTime(_ versioning: Versioning) async throws {
        try await withRecordedDatabase(versioning) { _, db, recorder in
            let doomed = try await db.write(put("doomed", ["x": 1]))
            let deleted = try await db.write(put("deleted", ["x": 1]))
            _ = try await db.write(put("deleted", [:], parent: deleted.rev, deleted: true))
            _ = try await db.write(put("kept", ["x": 1]))
            let due = Self.now() + 300
            try await db.setExpiration(id: "doomed", due)
            try await db.setExpiration(id: "deleted", due)
            try await db.setExpiration(id: "kept", due + 3_600_000)
            #expect(await recorder.wait { all in all.flatMap(\.batch.changes).filter { $0.rev.isEmpty }.count == 2 })
            #expect(Self.now() >= due)
            #expect(Set(recorder.events.filter { $0.rev.isEmpty }.map(\.id)) == ["doomed", "deleted"])
            await expectError(.notFound) { try await db.read(id: "doomed", rev: doomed.rev) }
            #expect(try await db.read(id: "kept").body == Array(#"{"x":1}"#.utf8))
            #expect(try await db.nextExpiration() == due + 3_600_000)
        }
    }

    @Test func expirationSurvivesARestart() async throws {
        try await withTemporaryDirectory { directory in
            let due = Self.now() + 3_600_000
            do {
                let engine = try StorageEngine(dataDirectory: directory)
                try await engine.createDatabase("db")
                let db = try await engine.database("db")
                _ = try await db.write(put("doc", [:]))
                try await db.setExpiration(id: "doc", due)
                engine.close()  // long before it is due
            }
            // The engine comes back after the document's time has passed (its clock says so).
            let recorder = ChangeRecorder()
            let engine = try StorageEngine(dataDirectory: directory, onCommit: recorder.hook, clock: { Self.now() + 3_601_000 })
            defer { engine.close() }
            // Nobody opens the database: the engine did at start, and scheduled the purge.
            #expect(await recorder.wait { $0.flatMap(\.batch.changes).contains { $0.id == "doc" && $0.rev.isEmpty } })
            await expectError(.notFound) { try await engine.database("db").read(id: "doc") }
            #expect(try await engine.database("db").nextExpiration() == 0)
        }
    }

    @Test func compactPrunesTreesAndDropsOldBodies() async throws {
        try await withRecordedDatabase(maxRevTreeDepth: 3) { _, db, _ in
            var revs: [DocumentVersion] = []
            var parent: DocumentVersion?
            for n in 1...6 {
                let result = try await db.write(put("doc", ["n": .int(Int64(n))], parent: parent))
                revs.append(result.rev)
                parent = result.rev
            }
            #expect(try await db.read(id: "doc", rev: revs[3]).body == Array(#"{"n":4}"#.utf8))
            #expect(try await db.read(id: "doc", history: true).history.count == 6)
            #expect(try await db.compact() == 3)
            #expect(try await db.read(id: "doc", history: true).history == revs.suffix(3).reversed().map(\.ascii))
            await expectError(.notFound) { try await db.read(id: "doc", rev: revs[4]) }  // body dropped
            await expectError(.notFound) { try await db.read(id: "doc", rev: revs[0]) }  // pruned
            #expect(try await db.read(id: "doc").body == Array(#"{"n":6}"#.utf8))
            #expect(try await db.info().walBytes == 0)
            // Updates continue on the pruned tree.
            #expect(try await db.write(put("doc", ["n": 7], parent: revs[5])).rev.generation == 7)
        }
    }

    @Test func hookReportsEachCommitPerCollection() async throws {
        try await withRecordedDatabase { _, db, recorder in
            let items = try CollectionName(parsing: "shop.items")
            try await db.createCollection(items)
            #expect(recorder.all.isEmpty)  // collection DDL is not a document change
            let a = try await db.write(put("a", ["x": 1]))
            _ = try await db.write(put("b", ["x": 1]), in: items)
            _ = try await db.write(put("a", [:], parent: a.rev, deleted: true))
            #expect(recorder.all.map(\.database) == ["db", "db", "db"])
            #expect(recorder.all.map(\.collection) == ["_default._default", "shop.items", "_default._default"])
            #expect(recorder.all.map { $0.batch.changes.map(\.sequence) } == [[1], [1], [2]])
            #expect(recorder.all[2].batch.changes[0].deleted)
            let lastRev = try await db.changes().changes.last?.rev
            #expect(recorder.all[2].batch.changes[0].rev == lastRev)
        }
    }
}
