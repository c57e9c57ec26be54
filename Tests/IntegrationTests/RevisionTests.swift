import Foundation
import SofaClient
import Testing

/// Replication's writes and conflicts, in a revision-tree database: insert with history,
/// conflicting branches, open leaves, resolution, leaf purge.
@Suite(.serialized) struct RevisionTests {
    @Test func insertWithHistoryKeepsConflictsUntilResolved() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("revs")
            let base = try await db.put(id: "d", json: #"{"v":1}"#)
            // Each insert: the history, whether it conflicts, how many revisions were new.
            let inserts: [(String, [String], String, Bool, UInt32)] = [
                ("extends the current revision", ["2-bb", base.rev], #"{"v":"bb"}"#, false, 1),
                ("same again: nothing new", ["2-bb", base.rev], #"{"v":"bb"}"#, false, 0),
                ("a sibling branch", ["2-aa", base.rev], #"{"v":"aa"}"#, true, 1),
                ("extends the losing branch", ["3-a3", "2-aa", base.rev], #"{"v":"a3"}"#, true, 1),
            ]
            for (name, history, body, conflict, added) in inserts {
                let result = try await db.insert(id: "d", history: history, json: body)
                #expect(result.rev == history[0], "\(name)")
                #expect(result.conflict == conflict, "\(name)")
                #expect(result.added == added, "\(name)")
            }
            // As in LiteCore, a branch inserted as a conflict is never current until resolved, even
            // with a higher generation: 2-bb stays current and 3-a3 conflicts with it.
            let current = try await db.get(id: "d", history: true)
            #expect(current.rev == "2-bb")
            #expect(current.conflicted)
            #expect(current.history == ["2-bb", base.rev])
            #expect(try await db.conflicts(id: "d") == ["3-a3"])
            let leaves = try await db.openLeaves(id: "d")
            #expect(Set(leaves.map(\.rev)) == ["3-a3", "2-bb"])
            #expect(leaves.first?.rev == "2-bb", "the current revision comes first")
            #expect(leaves.first { $0.rev == "3-a3" }?.history == ["3-a3", "2-aa", base.rev])
            // Choose 2-bb: the 3-a3 branch is closed with a tombstone; 2-bb is current again.
            let resolved = try await db.resolve(id: "d", winner: "2-bb", loser: "3-a3")
            #expect(try await db.conflicts(id: "d") == [])
            let after = try await db.get(id: "d")
            #expect(!after.conflicted)
            #expect(try after.json() == ["v": "bb"])
            #expect(resolved.id == "d")
            // Normal edits go on from the winner.
            let next = try await db.put(id: "d", json: #"{"v":"next"}"#, rev: after.rev)
            #expect(generation(next.rev) == generation(after.rev) + 1)
        }
    }

    @Test func resolveWithAMergedBody() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("merge")
            let base = try await db.put(id: "m", json: #"{"v":0}"#)
            _ = try await db.insert(id: "m", history: ["2-cc", base.rev], json: #"{"left":1}"#)
            _ = try await db.insert(id: "m", history: ["2-dd", base.rev], json: #"{"right":2}"#)
            #expect(try await db.get(id: "m").rev == "2-cc")
            #expect(try await db.conflicts(id: "m") == ["2-dd"])
            let merged = try await db.resolve(id: "m", winner: "2-cc", loser: "2-dd", merged: #"{"left":1,"right":2}"#)
            #expect(generation(merged.rev) == 3)
            let doc = try await db.get(id: "m", history: true)
            #expect(doc.rev == merged.rev)
            #expect(doc.history == [merged.rev, "2-cc", base.rev])
            #expect(try doc.json() == ["left": 1, "right": 2])
            #expect(try await db.conflicts(id: "m") == [])
        }
    }

    /// Purging one leaf removes that branch only.
    @Test func purgeOneLeaf() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("leafpurge")
            let base = try await db.put(id: "p", json: "{}")
            _ = try await db.insert(id: "p", history: ["2-ee", base.rev], json: #"{"b":"ee"}"#)
            _ = try await db.insert(id: "p", history: ["2-ff", base.rev], json: #"{"b":"ff"}"#)
            #expect(try await db.conflicts(id: "p") == ["2-ff"])
            try await db.purge(id: "p", rev: "2-ee")
            #expect(try await db.conflicts(id: "p") == [])
            #expect(try await db.openLeaves(id: "p").map(\.rev) == ["2-ff"])
            await expectFailure("purged leaf", [.notFound]) { _ = try await db.get(id: "p", rev: "2-ee") }
        }
    }

    /// A bulk write of inserts, as a replicator's batch: each with its own result.
    @Test func bulkInserts() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("bulkrevs")
            let results = try await db.bulk([
                .insert(id: "r1", history: ["2-b2", "1-a1"], json: #"{"n":1}"#),
                .insert(id: "r2", history: ["1-c1"], json: #"{"n":2}"#),
                .insert(id: "r3", history: ["2-b2", "4-a1"], json: "{}"),
            ])
            try #require(results.count == 3)
            #expect(results[0].error == nil && results[0].rev == "2-b2")
            #expect(results[1].error == nil && results[1].rev == "1-c1")
            #expect(results[2].error?.sofaCode == .badRevisionID)
            #expect(try await db.get(id: "r1", history: true).history == ["2-b2", "1-a1"])
        }
    }
}
