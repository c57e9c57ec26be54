import Foundation
import SofaCore
@testable import SofaStorage
import Testing

@Suite struct ChangesTests {
    /// a1 b2 c3, then a updated (4), b deleted (5): each document once, at its latest sequence.
    static func fill(_ db: DatabaseStore) async throws {
        let a = try await db.write(put("a", ["n": 1]))
        let b = try await db.write(put("b", ["n": 2]))
        _ = try await db.write(put("c", ["n": 3]))
        _ = try await db.write(put("a", ["n": 10], parent: a.rev))
        _ = try await db.write(put("b", [:], parent: b.rev, deleted: true))
    }

    static let cases: [(String, ChangesQuery, [String])] = [
        ("everything", ChangesQuery(), ["c3", "a4", "b5"]),
        ("descending", ChangesQuery(descending: true), ["b5", "a4", "c3"]),
        ("limit", ChangesQuery(limit: 2), ["c3", "a4"]),
        ("descending with limit", ChangesQuery(descending: true, limit: 1), ["b5"]),
        ("since", ChangesQuery(since: 3), ["a4", "b5"]),
        ("since the end", ChangesQuery(since: 5), []),
        ("without deleted", ChangesQuery(includeDeleted: false), ["c3", "a4"]),
        ("doc IDs", ChangesQuery(docIDs: ["a", "b", "zz"]), ["a4", "b5"]),
    ]

    @Test(arguments: Versioning.allCases)
    func feed(_ versioning: Versioning) async throws {
        try await withRecordedDatabase(versioning) { _, db, _ in
            try await Self.fill(db)
            for (why, options, expected) in Self.cases {
                let batch = try await db.changes(options)
                #expect(batch.changes.map { "\($0.id)\($0.sequence)" } == expected, "\(why)")
                #expect(batch.lastSequence == 5, "\(why)")
            }
            let withBodies = try await db.changes(ChangesQuery(includeBodies: true, allLeaves: true)).changes
            #expect(withBodies.map { String(decoding: $0.body, as: UTF8.self) } == [#"{"n":3}"#, #"{"n":10}"#, "{}"])
            #expect(withBodies.map(\.deleted) == [false, false, true])
            #expect(withBodies.allSatisfy { $0.leaves == [$0.rev] })
            let plain = try await db.changes().changes
            #expect(plain.allSatisfy { $0.body.isEmpty && $0.leaves.isEmpty })
            // A purge shows up at a new sequence with an empty rev.
            _ = try await db.purge(id: "c")
            let afterPurge = try await db.changes(ChangesQuery(since: 5))
            #expect(afterPurge.changes == [Change(sequence: 6, id: "c", rev: "", deleted: true, body: [], leaves: [])])
            #expect(afterPurge.lastSequence == 6)
        }
    }

    @Test func allLeavesListsConflicts() async throws {
        try await withRecordedDatabase { _, db, _ in
            let r1 = try await db.write(put("doc", ["x": 1]))
            let r2 = try await db.write(put("doc", ["x": 2], parent: r1.rev))
            _ = try await db.insert(RevisionInsertion(id: "doc", history: ["2-aa", r1.rev.ascii], body: [:]))
            let changes = try await db.changes(ChangesQuery(allLeaves: true)).changes
            #expect(changes.map(\.leaves) == [[r2.rev.ascii, "2-aa"]])
        }
    }

    static let allDocsCases: [(String, AllDocsQuery, [String])] = [
        ("all live", AllDocsQuery(), ["a", "c", "d", "e"]),
        ("with deleted", AllDocsQuery(includeDeleted: true), ["a", "b", "c", "d", "e"]),
        ("limit", AllDocsQuery(limit: 2), ["a", "c"]),
        ("skip", AllDocsQuery(limit: 2, skip: 1), ["c", "d"]),
        ("descending", AllDocsQuery(descending: true), ["e", "d", "c", "a"]),
        ("start and end", AllDocsQuery(startKey: "b", endKey: "d"), ["c", "d"]),
        ("descending start and end", AllDocsQuery(descending: true, startKey: "d", endKey: "b"), ["d", "c"]),
        ("start only", AllDocsQuery(startKey: "d"), ["d", "e"]),
    ]

    @Test(arguments: Versioning.allCases)
    func allDocs(_ versioning: Versioning) async throws {
        try await withRecordedDatabase(versioning) { _, db, _ in
            try await Self.fill(db)
            _ = try await db.write(put("e", ["n": 5]))
            _ = try await db.write(put("d", ["n": 4]))
            _ = try await db.write(put("gone", ["n": 0]))
            _ = try await db.purge(id: "gone")
            for (why, options, expected) in Self.allDocsCases {
                #expect(try await db.allDocs(options).map(\.id) == expected, "\(why)")
            }
            let bodies = try await db.allDocs(AllDocsQuery(includeBodies: true, limit: 1))
            #expect(bodies.first?.body == Array(#"{"n":10}"#.utf8))
            #expect(try await db.allDocs(AllDocsQuery(limit: 1)).first?.body == [])
        }
    }

    @Test func localDocuments() async throws {
        try await withRecordedDatabase { _, db, recorder in
            let id = "_local/checkpoint"
            #expect(try await db.writeLocal(id: id, rev: nil, body: ["seq": 1], deleted: false) == "0-1")
            await expectError(.conflict) { try await db.writeLocal(id: id, rev: nil, body: [:], deleted: false) }
            await expectError(.conflict) { try await db.writeLocal(id: id, rev: "0-7", body: [:], deleted: false) }
            await expectError(.badRevisionID) { try await db.writeLocal(id: id, rev: "1-abcd", body: [:], deleted: false) }
            #expect(try await db.writeLocal(id: id, rev: "0-1", body: ["seq": 2], deleted: false) == "0-2")
            let local = try await db.readLocal(id: id)
            #expect(local.rev == "0-2")
            #expect(local.body == Array(#"{"seq":2}"#.utf8))
            // Not documents: not in changes, all-docs, counts, nor the hook; not through the document calls.
            #expect(try await db.changes().changes.isEmpty)
            #expect(try await db.allDocs().isEmpty)
            #expect(try await db.info().documents == 0)
            #expect(recorder.all.isEmpty)
            await expectError(.invalidParameter) { try await db.write(put(id, [:])) }
            #expect(try await db.writeLocal(id: id, rev: "0-2", body: [:], deleted: true) == "0-0")
            await expectError(.notFound) { try await db.readLocal(id: id) }
            await expectError(.notFound) { try await db.writeLocal(id: id, rev: nil, body: [:], deleted: true) }
        }
    }

    @Test func rawKeyStores() async throws {
        try await withRecordedDatabase { _, db, _ in
            for store in ["info", "checkpoints", "custom-1"] {
                try await db.rawPut(store: store, key: "k", version: [1, 2], body: Array("v".utf8))
                let value = try await db.rawGet(store: store, key: "k")
                #expect(value.version == [1, 2] && value.body == Array("v".utf8), "\(store)")
                try await db.rawDelete(store: store, key: "k")
                await expectError(.notFound, "\(store)") { try await db.rawGet(store: store, key: "k") }
                await expectError(.notFound, "\(store)") { try await db.rawDelete(store: store, key: "k") }
            }
            await expectError(.notFound) { try await db.rawGet(store: "never", key: "k") }
            for bad in ["", "Upper", "default", "local", "a b", ".coll", "9x"] {
                await expectError(.invalidParameter, "\(bad)") { try await db.rawPut(store: bad, key: "k", version: [], body: []) }
            }
        }
    }
}
