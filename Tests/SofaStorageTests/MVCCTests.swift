import Foundation
import SofaCore
import SofaStorage
import Testing

/// Revision rules of `DatabaseStore.write` and `read`. Expected revIDs were computed outside
/// Swift (Python's hashlib) from the rule in RevID+Generate.swift: SHA-1 of
/// [len(parent)] parent [deleted] canonical-body, e.g. `printf '\x00\x00{"x":1}' | sha1sum`.
@Suite struct MVCCTests {
    static let rev1 = "1-6f9a1fe5dfad0377e089c5e8e0afab815938295d"  // {"x":1}, no parent
    static let rev2 = "2-7416fb2d2cfbba6c2a517187294aed17dd9735da"  // {"x":2} after rev1
    static let rev3 = "3-4f7934635094a823b8d1dd5788b1896c939a9518"  // deletion after rev2
    static let rev4 = "4-75da084d87f40c4c2e2ad8a4f3a4e709294ec687"  // {"x":3} re-created after rev3

    enum Expect {
        case revision(String, sequence: UInt64)
        case failure(SofaError.Code)
    }

    /// One document's history, step by step: (step, write, expected outcome).
    static let history: [(String, DocumentWrite, Expect)] = [
        ("deleting a document that never existed", put("doc", [:], deleted: true), .failure(.notFound)),
        ("a rev given for a document that does not exist", put("doc", ["x": 1], parent: try! RevID.parse(rev1)),
         .failure(.notFound)),
        ("create without rev", put("doc", ["x": 1]), .revision(rev1, sequence: 1)),
        ("create again without rev", put("doc", ["x": 1]), .failure(.conflict)),
        ("update with the current rev", put("doc", ["x": 2], parent: try! RevID.parse(rev1)), .revision(rev2, sequence: 2)),
        ("update with a stale rev", put("doc", ["x": 9], parent: try! RevID.parse(rev1)), .failure(.conflict)),
        ("update with a made-up rev", put("doc", ["x": 9], parent: try! RevID.parse("2-abcd")), .failure(.conflict)),
        ("delete with a stale rev", put("doc", [:], parent: try! RevID.parse(rev1), deleted: true), .failure(.conflict)),
        ("delete with the current rev", put("doc", [:], parent: try! RevID.parse(rev2), deleted: true),
         .revision(rev3, sequence: 3)),
        ("delete again without rev", put("doc", [:], deleted: true), .failure(.notFound)),
        ("re-create without rev", put("doc", ["x": 3]), .revision(rev4, sequence: 4)),
    ]

    @Test func documentHistory() async throws {
        try await withDatabase { _, db in
            for (step, write, expected) in Self.history {
                switch expected {
                case .revision(let rev, let sequence):
                    let result = try await db.write(write)
                    #expect(result.rev.ascii == rev, "\(step)")
                    #expect(result.sequence == sequence, "\(step)")
                    #expect(result.id == "doc", "\(step)")
                case .failure(let code):
                    await expectError(code, "\(step)") { try await db.write(write) }
                }
            }
            let current = try await db.read(id: "doc", rev: nil)
            #expect(current.rev.ascii == Self.rev4)
            #expect(current.body == Array(#"{"x":3}"#.utf8))
            #expect(!current.deleted)
            #expect(current.sequence == 4)
            // Refused writes used no sequence.
            let info = try await db.info()
            #expect(info.documents == 1)
            #expect(info.lastSequence == 4)
        }
    }

    /// A conflict's losing leaf may be updated or deleted by its rev (how CouchDB's and LiteCore's
    /// users resolve a conflict); a revision that is not a leaf, or a deleted leaf, may not.
    @Test func aConflictingLeafTakesAnUpdateAndADeletion() async throws {
        try await withDatabase { _, db in
            let first = try await db.write(put("doc", ["x": 1])).rev
            let mine = try await db.write(put("doc", ["x": 2], parent: first)).rev
            let theirs = "2-" + String(repeating: "f", count: 40)
            _ = try await db.insert(RevisionInsertion(id: "doc", history: [theirs, first.ascii], body: ["x": 3]))
            #expect(try await db.conflicts(id: "doc") == [theirs])
            // The losing branch goes on: a leaf of generation 3 on it, now the current revision.
            let edited = try await db.write(put("doc", ["x": 4], parent: try RevID.parse(theirs))).rev
            #expect(edited.generation == 3)
            #expect(try await db.read(id: "doc", history: true).history == [edited.ascii, theirs, first.ascii])
            #expect(try await db.conflicts(id: "doc") == [mine.ascii])
            // Deleting the other leaf resolves the conflict.
            let tombstone = try await db.write(put("doc", [:], parent: mine, deleted: true)).rev
            #expect(try await db.conflicts(id: "doc").isEmpty)
            #expect(try await db.read(id: "doc").rev == edited)
            // A revision that is no longer a leaf, the first one, or a deleted leaf: refused.
            for parent in [try RevID.parse(theirs), try RevID.parse(first.ascii), try RevID.parse(tombstone.ascii)] {
                await expectError(.conflict, "\(parent)") { try await db.write(put("doc", ["x": 5], parent: parent)) }
            }
        }
    }

    @Test func revIDsFollowTheSHA1Rule() async throws {
        try await withDatabase { _, db in
            let first = try await db.write(put("a", ["x": 1]))
            #expect(first.rev.ascii == Self.rev1)
            #expect(first.rev.generation == 1)
            // Same body on another document: same revID (it depends on the content only).
            #expect(try await db.write(put("b", ["x": 1])).rev.ascii == Self.rev1)
            let second = try await db.write(put("a", ["x": 2], parent: first.rev))
            #expect(second.rev.ascii == Self.rev2)
            #expect(second.rev.generation == 2)
            // Key order does not matter: the digest is over canonical JSON.
            let reordered = try await db.write(put("c", try json(#"{"b":1,"a":2}"#)))
            #expect(reordered.rev == RevID.generate(parent: nil, deleted: false, body: try json(#"{"a":2,"b":1}"#)))
        }
    }

    /// RevID+Generate.swift: a revision without a body is digested as `{}`; a deletion has no
    /// body. (Same as the history's step "delete with the current rev", on its own.)
    @Test func tombstoneRevIDIsDigestedOverAnEmptyBody() async throws {
        try await withDatabase { _, db in
            let created = try await db.write(put("doc", ["x": 1]))
            let tombstone = try await db.write(put("doc", [:], parent: created.rev, deleted: true))
            #expect(tombstone.rev == RevID.generate(parent: created.rev.revID, deleted: true, body: nil))
            #expect(tombstone.rev == RevID.generate(parent: created.rev.revID, deleted: true, canonicalBody: Array("{}".utf8)))
            #expect(tombstone.rev != RevID.generate(parent: created.rev.revID, deleted: true, canonicalBody: Array("null".utf8)))
        }
    }

    @Test func deletedDocumentReadsAsNotFoundExceptByItsRev() async throws {
        try await withDatabase { _, db in
            let created = try await db.write(put("doc", ["x": 1]))
            let tombstone = try await db.write(put("doc", [:], parent: created.rev, deleted: true))
            #expect(tombstone.rev.generation == 2)

            await expectError(.notFound) { try await db.read(id: "doc", rev: nil) }
            let record = try await db.read(id: "doc", rev: tombstone.rev)
            #expect(record.deleted)
            #expect(record.rev == tombstone.rev)
            #expect(record.sequence == 2)
            #expect(record.body == Array("{}".utf8))
            // Older revisions keep their bodies until compaction.
            let old = try await db.read(id: "doc", rev: created.rev)
            #expect(old.body == Array(#"{"x":1}"#.utf8))
            #expect(!old.deleted)
            #expect(old.sequence == 1)
            #expect(try await db.info().documents == 0)

            // Re-created without a rev: generation 3, a child of the tombstone.
            let recreated = try await db.write(put("doc", ["x": 5]))
            #expect(recreated.rev.generation == 3)
            #expect(recreated.rev == RevID.generate(parent: tombstone.rev.revID, deleted: false, body: ["x": 5]))
            #expect(try await db.read(id: "doc", rev: nil).rev == recreated.rev)
        }
    }

    @Test func readMissingDocument() async throws {
        try await withDatabase { _, db in
            await expectError(.notFound) { try await db.read(id: "nope", rev: nil) }
            await expectError(.notFound) { try await db.read(id: "nope", rev: try RevID.parse(Self.rev1)) }
            let created = try await db.write(put("doc", ["x": 1]))
            await expectError(.notFound) { try await db.read(id: "doc", rev: try RevID.parse("1-abcd")) }
            #expect(try await db.read(id: "doc", rev: created.rev).rev == created.rev)
        }
    }

    @Test func bodyIsStoredAsCompactJSON() async throws {
        try await withDatabase { _, db in
            let body = try json(#" { "name" : "sofa", "tags" : [ 1, 2.5, true, null ], "nested" : { "k" : "v" } } "#)
            _ = try await db.write(put("doc", body))
            let record = try await db.read(id: "doc", rev: nil)
            #expect(record.body == body.compactBytes())
            #expect(try JSON.parse(record.body) == body)
        }
    }
}
