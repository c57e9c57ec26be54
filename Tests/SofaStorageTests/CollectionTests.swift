import SofaTestSupport
import SofaQL
import Foundation
import SofaCore
@testable import SofaStorage
import Testing

@Suite struct CollectionTests {
    static let valid: [(String, String, String)] = [
        // (path, key store, table)
        ("", "default", "kv_default"),
        ("_default", "default", "kv_default"),
        ("_default._default", "default", "kv_default"),
        ("users", ".users", "kv_.users"),
        ("Users", ".Users", "kv_.\\Users"),
        ("Shop.Items", ".Shop.Items", "kv_.\\Shop.\\Items"),
        ("a-b%c_1", ".a-b%c_1", "kv_.a-b%c_1"),
        (String(repeating: "x", count: 251), "." + String(repeating: "x", count: 251), "kv_." + String(repeating: "x", count: 251)),
    ]

    @Test(arguments: valid)
    func validNames(_ path: String, _ store: String, _ table: String) throws {
        let name = try CollectionName(parsing: path)
        #expect(name.keyStore == store)
        #expect(name.tableName == table)
    }

    static let invalid: [(String, String)] = [
        ("_users", "starts with _"),
        ("%users", "starts with %"),
        ("us ers", "space"),
        ("us$ers", "$"),
        ("a.b.c", "three parts"),
        (".users", "empty scope"),
        ("shop.", "empty collection"),
        (String(repeating: "x", count: 252), "252 characters"),
        ("shop._default", "_default collection in another scope"),
        ("é", "non-ASCII"),
    ]

    @Test(arguments: invalid)
    func invalidNames(_ path: String, _ why: String) async {
        await expectError(.invalidParameter, "\(why)") { try CollectionName(parsing: path) }
    }

    @Test(arguments: Versioning.allCases)
    func lifecycle(_ versioning: Versioning) async throws {
        try await withEngine { engine in
            try await engine.createDatabase("db", versioning: versioning)
            let db = try await engine.database("db")
            let upper = try CollectionName(parsing: "Shop.Items")
            let lower = try CollectionName(parsing: "shop.items")
            await expectError(.notFound) { try await db.write(put("a", [:]), in: upper) }
            try await db.createCollection(upper)
            try await db.createCollection(lower)
            // Creating one that exists leaves it (LiteCore's c4CollectionTest "Default Collection").
            try await db.createCollection(upper)
            try await db.createCollection(.default)
            #expect(db.listCollections() == ["_default._default", "shop.items", "Shop.Items"].sorted())
            // Case-sensitive on disk: two tables.
            #expect(try await db.write(put("a", ["n": 1]), in: upper).sequence == 1)
            #expect(try await db.write(put("b", ["n": 1]), in: upper).sequence == 2)
            #expect(try await db.write(put("a", ["n": 2]), in: lower).sequence == 1)
            #expect(try await db.write(put("a", ["n": 3])).sequence == 1)
            #expect(try await db.info(upper).documents == 2)
            #expect(try await db.info(lower).documents == 1)
            try await db.createCollection(upper)  // exists: its documents stay
            #expect(try await db.info(upper).documents == 2)

            await expectError(.invalidParameter) { try await db.deleteCollection(.default) }
            try await db.deleteCollection(upper)
            #expect(db.listCollections() == ["_default._default", "shop.items"])
            await expectError(.notOpen) { try await db.write(put("c", [:]), in: upper) }
            await expectError(.notOpen) { try await db.read(id: "a", in: upper) }
            await expectError(.notOpen) { try await db.deleteCollection(upper) }
            // Re-created: empty, and sequences go on from 2, also after a restart.
            try await db.createCollection(upper)
            await expectError(.notFound) { try await db.read(id: "a", in: upper) }
            #expect(try await db.write(put("a", ["n": 4]), in: upper).sequence == 3)
            try await db.deleteCollection(upper)
        }
    }

    @Test func deletedCollectionStaysDeletedAfterRestart() async throws {
        try await withTemporaryDirectory { directory in
            let coll = try CollectionName(parsing: "things")
            do {
                let engine = try StorageEngine(dataDirectory: directory)
                try await engine.createDatabase("db")
                let db = try await engine.database("db")
                try await db.createCollection(coll)
                _ = try await db.write(put("a", [:]), in: coll)
                try await db.deleteCollection(coll)
                engine.close()
            }
            let engine = try StorageEngine(dataDirectory: directory)
            defer { engine.close() }
            let db = try await engine.database("db")
            await expectError(.notOpen) { try await db.read(id: "a", in: coll) }
            try await db.createCollection(coll)
            #expect(try await db.write(put("a", [:]), in: coll).sequence == 2)
        }
    }
}
