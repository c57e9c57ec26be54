import Foundation
import SofaCore
@testable import SofaStorage
import Testing

/// Documents in both versioning modes: create, update (MVCC), delete, re-create, history, leaves.
@Suite struct RevisionTests {
    enum Parent { case none, current, stale }
    /// (step, body, parent, deleted, expected tree generation / vector rev, or failure)
    static let steps: [(String, JSON, Parent, Bool, (UInt32, String)?, SofaError.Code?)] = [
        ("create", ["x": 1], .none, false, (1, "1@*"), nil),
        ("create again", ["x": 1], .none, false, nil, .conflict),
        ("update", ["x": 2], .current, false, (2, "2@*"), nil),
        ("stale update", ["x": 3], .stale, false, nil, .conflict),
        ("delete", [:], .current, true, (3, "3@*"), nil),
        ("delete again without rev", [:], .none, true, nil, .notFound),
        ("re-create as a child of the tombstone", ["x": 4], .none, false, (4, "4@*"), nil),
    ]

    @Test(arguments: Versioning.allCases)
    func lifecycle(_ versioning: Versioning) async throws {
        try await withRecordedDatabase(versioning) { _, db, _ in
            var current: DocumentVersion?
            var stale: DocumentVersion?
            for (step, body, parent, deleted, expected, failure) in Self.steps {
                let given: DocumentVersion? = switch parent {
                case .none: nil
                case .current: current
                case .stale: stale
                }
                let write = DocumentWrite(id: "doc", parent: given, body: body, deleted: deleted)
                if let failure {
                    await expectError(failure, "\(versioning) \(step)") { try await db.write(write) }
                    continue
                }
                let result = try await db.write(write)
                if versioning == .revisionTrees {
                    #expect(result.rev.generation == expected!.0, "\(step)")
                } else {
                    #expect(result.rev.ascii == expected!.1, "\(step)")
                }
                stale = current
                current = result.rev
            }
            let record = try await db.read(id: "doc", history: true)
            #expect(record.body == Array(#"{"x":4}"#.utf8))
            if versioning == .revisionTrees {
                #expect(record.history.count == 4)
                #expect(record.history.first == record.rev.ascii)
            } else {
                #expect(record.history == ["4@*"])
            }
            // The wrong kind of revID for the mode is refused.
            let wrong: DocumentVersion = versioning == .revisionTrees ? try .parse(ascii: "4@*") : try .parse(ascii: "4-abcd")
            await expectError(.badRevisionID) { try await db.write(DocumentWrite(id: "doc", parent: wrong, body: [:], deleted: false)) }
        }
    }

    @Test func insertWithHistoryKeepsAConflictingBranch() async throws {
        try await withRecordedDatabase { _, db, _ in
            let r1 = try await db.write(put("doc", ["x": 1]))
            let r2 = try await db.write(put("doc", ["x": 2], parent: r1.rev))
            let remote2 = "2-" + String(repeating: "f", count: 40)
            let inserted = try await db.insert(RevisionInsertion(id: "doc", history: [remote2, r1.rev.ascii], body: ["y": 1]))
            #expect(inserted.added == 1)
            #expect(inserted.conflict)
            #expect(try await db.conflicts(id: "doc") == [remote2])
            let current = try await db.read(id: "doc", history: true)
            #expect(current.conflicted)
            #expect(current.rev == r2.rev)  // the local line stays current
            #expect(current.history == [r2.rev.ascii, r1.rev.ascii])
            let leaves = try await db.openLeaves(id: "doc")
            #expect(leaves.map(\.rev.ascii) == [r2.rev.ascii, remote2])
            #expect(leaves[1].body == Array(#"{"y":1}"#.utf8))
            // Known history: nothing added.
            let again = try await db.insert(RevisionInsertion(id: "doc", history: [remote2, r1.rev.ascii], body: ["y": 1]))
            #expect(again.added == 0)
            // A new document by insert: generation 3 with its ancestors.
            let fresh = try await db.insert(RevisionInsertion(id: "new", history: ["3-cc", "2-bb", "1-aa"], body: [:]))
            #expect(fresh.added == 3 && !fresh.conflict)
            #expect(try await db.read(id: "new", history: true).history == ["3-cc", "2-bb", "1-aa"])

            // Resolve by choosing the local winner: the remote branch is closed with a tombstone.
            let resolved = try await db.resolveConflict(ConflictResolutionRequest(id: "doc", winner: r2.rev.ascii, loser: remote2))
            #expect(resolved.rev == r2.rev)
            #expect(try await db.conflicts(id: "doc") == [])
            #expect(try await !db.read(id: "doc").conflicted)
            // A new conflict, resolved with a merged body on top of the remote winner.
            let remote3 = "3-" + String(repeating: "e", count: 40)
            #expect(try await db.insert(RevisionInsertion(id: "doc", history: [remote3, "2-ee", r1.rev.ascii], body: ["z": 1])).conflict)
            let merged = try await db.resolveConflict(ConflictResolutionRequest(id: "doc", winner: remote3, loser: r2.rev.ascii,
                                                                                 mergedBody: ["merged": true]))
            #expect(merged.rev.generation == 4)
            let final = try await db.read(id: "doc", history: true)
            #expect(final.body == Array(#"{"merged":true}"#.utf8))
            #expect(final.history.dropFirst().first == remote3)
            #expect(try await db.conflicts(id: "doc") == [])
        }
    }

    /// CouchDB's rule (an HTTP client's `new_edits=false`): the higher revision wins whichever
    /// branch came first, where a peer's branch (LiteCore's pull) leaves the first one current.
    @Test func insertByRevIDWinsByRevIDWhateverTheOrder() async throws {
        try await withRecordedDatabase { _, db, _ in
            let base = "1-" + String(repeating: "1", count: 32)
            let low = "2-" + String(repeating: "a", count: 32), high = "2-" + String(repeating: "f", count: 32)
            for (id, first, second) in [("up", low, high), ("down", high, low)] {
                var one = RevisionInsertion(id: id, history: [first, base], body: ["first": true])
                one.winnerByRevID = true
                _ = try await db.insert(one)
                var two = RevisionInsertion(id: id, history: [second, base], body: ["first": false])
                two.winnerByRevID = true
                _ = try await db.insert(two)
                #expect(try await db.read(id: id).rev.ascii == high, "\(id)")
                #expect(try await db.conflicts(id: id) == [low], "\(id)")
            }
            // A peer's branch arriving second does not take over the live local line.
            _ = try await db.insert(RevisionInsertion(id: "peer", history: [low, base], body: [:]))
            _ = try await db.insert(RevisionInsertion(id: "peer", history: [high, base], body: [:]))
            #expect(try await db.read(id: "peer").rev.ascii == low)
        }
    }

    static let badInserts: [(String, [String], SofaError.Code)] = [
        ("history that does not descend", ["3-aa", "1-bb"], .badRevisionID),
        ("history that goes up", ["1-aa", "2-bb"], .badRevisionID),
        ("invalid revID", ["x-1"], .badRevisionID),
        ("vector in a tree database", ["1@*"], .badRevisionID),
        ("empty history", [], .invalidParameter),
    ]

    @Test(arguments: badInserts)
    func badHistoryIsRefused(_ why: String, _ history: [String], _ code: SofaError.Code) async throws {
        try await withRecordedDatabase { _, db, _ in
            _ = await expectError(code, "\(why)") { try await db.insert(RevisionInsertion(id: "doc", history: history, body: [:])) }
        }
    }

    static let rawBodies: [(String, String, SofaError.Code?)] = [
        ("object", #"{"a":1}"#, nil),
        ("empty", "", nil),
        ("_attachments is allowed", #"{"_attachments":{}}"#, nil),
        ("array", "[1]", .badJSON),
        ("number", "1", .badJSON),
        ("invalid JSON", "{", .badJSON),
        ("_id", #"{"_id":"x"}"#, .corruptRevisionData),
        ("_rev", #"{"_rev":"1-aa"}"#, .corruptRevisionData),
        ("_deleted", #"{"_deleted":true}"#, .corruptRevisionData),
    ]

    @Test(arguments: rawBodies)
    func bodiesSentRaw(_ why: String, _ body: String, _ code: SofaError.Code?) async {
        if let code {
            await expectError(code, "\(why)") { try StorageService.strictBody(Array(body.utf8), id: "doc") }
        } else {
            #expect(throws: Never.self, "\(why)") { try StorageService.strictBody(Array(body.utf8), id: "doc") }
        }
    }

    @Test func versionVectorInsertCompares() async throws {
        try await withRecordedDatabase(.versionVectors) { _, db, _ in
            _ = try await db.write(put("doc", ["v": 1]))
            // Newer (it has seen 1@*): replaces the current revision.
            let newer = try await db.insert(RevisionInsertion(id: "doc", history: ["1@c0ffee,1@*"], body: ["v": 2]))
            #expect(newer.added == 1 && !newer.conflict)
            #expect(try await db.read(id: "doc").rev.ascii == "1@c0ffee")
            // Older: ignored.
            #expect(try await db.insert(RevisionInsertion(id: "doc", history: ["1@*"], body: [:])).added == 0)
            let local = try await db.write(put("doc", ["v": 3], parent: try DocumentVersion.parse(ascii: "1@c0ffee")))
            #expect(local.rev.ascii == "2@*")
            // Conflicting: kept beside the current one, flagged.
            let conflict = try await db.insert(RevisionInsertion(id: "doc", history: ["2@c0ffee,1@*"], body: ["v": 4]))
            #expect(conflict.conflict)
            #expect(try await db.conflicts(id: "doc") == ["2@c0ffee"])
            #expect(try await db.read(id: "doc").conflicted)
            #expect(try await db.openLeaves(id: "doc").map(\.rev.ascii) == ["2@*", "2@c0ffee"])
            let resolved = try await db.resolveConflict(ConflictResolutionRequest(id: "doc", winner: "2@c0ffee", loser: "2@*"))
            #expect(resolved.rev.ascii == "3@*")
            let record = try await db.read(id: "doc", history: true)
            #expect(record.body == Array(#"{"v":4}"#.utf8))
            #expect(!record.conflicted)
            #expect(record.history == ["3@*,2@c0ffee"])
        }
    }

    @Test(arguments: Versioning.allCases)
    func bulkWriteHasPerItemResults(_ versioning: Versioning) async throws {
        try await withRecordedDatabase(versioning) { _, db, recorder in
            _ = try await db.write(put("exists", ["x": 1]))
            let history = versioning == .revisionTrees ? ["2-bb", "1-aa"] : ["2@c0ffee"]
            let results = try await db.bulk([
                .write(put("a", ["n": 1])),
                .write(put("exists", ["x": 2])),  // no rev: conflict
                .insert(RevisionInsertion(id: "b", history: history, body: ["n": 2])),
                .insert(RevisionInsertion(id: "c", history: ["bogus"], body: [:])),
                .write(put("d", ["n": 3])),
            ])
            #expect(results.count == 5)
            #expect((try? results[0].get())?.id == "a")
            #expect(results[1].failure?.sofaCode == .conflict)
            #expect((try? results[2].get())?.id == "b")
            #expect(results[3].failure?.sofaCode == .badRevisionID)
            #expect((try? results[4].get())?.id == "d")
            // One transaction: one hook call with the three changes, sequences 2, 3, 4.
            #expect(await recorder.wait { $0.count == 2 })
            #expect(recorder.all.last?.batch.changes.map(\.sequence) == [2, 3, 4])
            #expect(try await db.info().documents == 4)
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
