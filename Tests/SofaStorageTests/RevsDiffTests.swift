import SofaTestSupport
import SofaCore
@testable import SofaStorage
import Testing

/// Revs-diff: which revisions a database lacks, and the leaves that may be their ancestors.
@Suite struct RevsDiffTests {
    @Test func revisionTrees() async throws {
        try await withDatabase { _, db in
            // doc: 1-a → 2-a (two generations); other: absent.
            _ = try await db.insert(RevisionInsertion(id: "doc", history: ["2-\(String(repeating: "b", count: 40))",
                                                                           "1-\(String(repeating: "a", count: 40))"],
                                                      body: ["v": 2]))
            let rev1 = "1-\(String(repeating: "a", count: 40))"
            let rev2 = "2-\(String(repeating: "b", count: 40))"
            let rev3 = "3-\(String(repeating: "c", count: 40))"
            let other2 = "2-\(String(repeating: "d", count: 40))"
            // (asked, expected missing, expected possible ancestors)
            let table: [([(String, [String])], [String: ([String], [String])])] = [
                ([("doc", [rev1, rev2])], [:]),
                ([("doc", [rev3])], ["doc": ([rev3], [rev2])]),
                ([("doc", [other2, rev2])], ["doc": ([other2], [])]),
                ([("doc", [rev3, rev3])], ["doc": ([rev3], [rev2])]),
                ([("new", [rev1]), ("doc", [rev2])], ["new": ([rev1], [])]),
                ([("doc", [])], [:]),
            ]
            for (asked, expected) in table {
                let outcomes = try await db.revsDiff(asked.map { (id: $0.0, revs: $0.1) })
                #expect(outcomes.count == expected.count, "\(asked)")
                for outcome in outcomes {
                    #expect(expected[outcome.id]?.0 == outcome.missing, "\(asked)")
                    #expect(expected[outcome.id]?.1 == outcome.possibleAncestors, "\(asked)")
                }
            }
            await expectError(.badRevisionID) { try await db.revsDiff([(id: "doc", revs: ["nonsense"])]) }
            await expectError(.badDocID) { try await db.revsDiff([(id: "", revs: [rev1])]) }
        }
    }

    @Test func purgedDocumentLacksEverything() async throws {
        try await withDatabase { _, db in
            let rev1 = "1-\(String(repeating: "a", count: 40))"
            _ = try await db.insert(RevisionInsertion(id: "doc", history: [rev1], body: ["v": 1]))
            #expect(try await db.revsDiff([(id: "doc", revs: [rev1])]).isEmpty)
            _ = try await db.purge(id: "doc", rev: nil)
            #expect(try await db.revsDiff([(id: "doc", revs: [rev1])]).map(\.missing) == [[rev1]])
        }
    }

    @Test func versionVectors() async throws {
        try await withEngine { engine in
            try await engine.createDatabase("v", versioning: .versionVectors)
            let db = try await engine.database("v")
            _ = try await db.insert(RevisionInsertion(id: "doc", history: ["3@a1,2@b2"], body: ["v": 1]))
            let table: [(String, Bool)] = [
                ("3@a1", false), ("2@a1", false), ("2@b2", false), ("4@a1", true), ("1@c3", true),
                ("3@a1,2@b2", false), ("3@a1,3@b2", true),
            ]
            for (rev, missing) in table {
                let outcomes = try await db.revsDiff([(id: "doc", revs: [rev])])
                #expect((outcomes.first?.missing == [rev]) == missing, "\(rev)")
            }
        }
    }
}
