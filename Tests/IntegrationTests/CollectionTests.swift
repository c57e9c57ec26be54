import Foundation
import SofaClient
import Testing

/// Collections in scopes: names, isolation, per-collection sequences, deletion.
@Suite(.serialized) struct CollectionTests {
    @Test func collectionsAreSeparateKeySpaces() async throws {
        try await Cluster.with { cluster in
            for versioning in Versioning.allCases {
                let db = try await cluster.client.createDatabase("coll-\(versioning.rawValue)", versioning: versioning)
                #expect(try await db.collections() == ["_default._default"])
                let items = try await db.createCollection("inventory.items")
                let things = try await db.createCollection("Things")
                #expect(items.scope == "inventory" && items.name == "items")
                #expect(things.scope == "_default" && things.name == "Things")
                #expect(Set(try await db.collections()) == ["_default._default", "inventory.items", "_default.Things"])
                // Creating an existing collection either opens it (as LiteCore does) or fails with
                // `.conflict`; either way nothing changes.
                do {
                    try await db.createCollection("inventory.items")
                } catch let error as SofaError {
                    #expect(error.is(.conflict), "\(versioning): \(error)")
                }
                #expect(try await db.collections().count == 3)
                // Same ID, three collections, three documents; sequences per collection.
                let inDefault = try await db.put(id: "x", json: #"{"in":"default"}"#)
                _ = try await db.put(id: "y", json: "{}")
                let inItems = try await items.put(id: "x", json: #"{"in":"items"}"#)
                let inThings = try await things.put(id: "x", json: #"{"in":"things"}"#)
                #expect(inDefault.sequence == 1 && inItems.sequence == 1 && inThings.sequence == 1)
                #expect(try await items.get(id: "x").json() == ["in": "items"])
                #expect(try await db.collection("_default._default").get(id: "x").json() == ["in": "default"])
                #expect(try await db.collection("_default.Things").get(id: "x").json() == ["in": "things"])
                #expect(try await items.allDocs().map(\.id) == ["x"])
                #expect(try await items.changes(since: 0, limit: 0).lastSequence == 1)
                // Case matters: "things" is another (unknown) collection.
                await expectFailure("\(versioning): other case", [.notFound]) { _ = try await db.collection("things").get(id: "x") }
                // Deleted: not open; re-created: empty, counting on from its old last sequence.
                _ = try await items.put(id: "z", json: "{}")
                try await db.deleteCollection("inventory.items")
                #expect(Set(try await db.collections()) == ["_default._default", "_default.Things"])
                await expectFailure("\(versioning): deleted collection", [.notOpen]) { _ = try await items.get(id: "x") }
                try await db.createCollection("inventory.items")
                await expectFailure("\(versioning): re-created is empty", [.notFound]) { _ = try await items.get(id: "x") }
                let reborn = try await items.put(id: "x", json: "{}")
                #expect(reborn.sequence == 3, "sequences go on after re-creation")
                #expect(try await db.get(id: "x").rev == inDefault.rev)
            }
        }
    }

    @Test func collectionNamesAreChecked() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("names")
            let bad: [(String, String)] = [
                ("leading underscore", "_mine"), ("leading percent", "%mine"), ("space", "my items"),
                ("slash", "a/b"), ("too long", String(repeating: "c", count: 252)), ("empty scope", ".items"),
                ("empty name", "scope."), ("two dots", "a.b.c"), ("bad scope", "_s.items"),
            ]
            for (name, path) in bad {
                await expectFailure(name, [.invalidParameter]) { try await db.createCollection(path) }
            }
            let good = ["a", "A-b_c%d", String(repeating: "c", count: 251), "scope-1.name_2"]
            for path in good { try await db.createCollection(path) }
            #expect(try await db.collections().count == 1 + good.count)
            await expectFailure("delete the default collection", [.invalidParameter, .unsupported]) {
                try await db.deleteCollection("_default")
            }
            await expectFailure("delete an unknown collection", [.notFound]) { try await db.deleteCollection("nope") }
            #expect(try await db.collections().contains("_default._default"))
        }
    }
}
