import SofaTestSupport
import Foundation
import SofaCore
import SofaStorage
import Testing

@Suite struct DatabaseAdminTests {
    static let maxName = "a" + String(repeating: "b", count: 237)  // 238 characters

    static let validNames = ["a", "db", "db1", "a_$()+-z", "z9", maxName]

    static let invalidNames: [(String, String)] = [
        ("", "empty"),
        ("Db", "upper case first"),
        ("dB", "upper case later"),
        ("1db", "leading digit"),
        ("_secrets", "leading underscore"),
        ("/ab", "leading slash"),
        ("a" + String(repeating: "/", count: 84), "too long for its folder"),
        ("../x", "path"),
        ("a b", "space"),
        ("a.b", "dot"),
        ("café", "non-ASCII"),
        (maxName + "c", "239 characters"),
    ]

    @Test(arguments: validNames)
    func validNameCanBeCreated(_ name: String) async throws {
        #expect(throws: Never.self) { try StorageEngine.validate(databaseName: name) }
        try await withEngine { engine in
            try await engine.createDatabase(name)
            #expect(try await engine.listDatabases() == [name])
            #expect(FileManager.default.fileExists(
                atPath: engine.dataDirectory.appendingPathComponent("\(name).sofa/db.sqlite3").path))
        }
    }

    /// A `/` (CouchDB allows it) is `%2F` in the folder's name: no folder nests in another.
    @Test func aNameWithASlashHasAFolderOfItsOwn() async throws {
        try await withEngine { engine in
            try await engine.createDatabase("a/b")
            try await engine.createDatabase("a")
            #expect(try await engine.listDatabases().sorted() == ["a", "a/b"])
            #expect(FileManager.default.fileExists(atPath: engine.dataDirectory.appendingPathComponent("a%2Fb.sofa/db.sqlite3").path))
            try await engine.deleteDatabase("a/b")
            #expect(try await engine.listDatabases() == ["a"])
        }
    }

    @Test(arguments: invalidNames)
    func invalidNameIsRefused(_ name: String, _ why: String) async throws {
        await expectError(.badDatabaseName, "\(why)") { try StorageEngine.validate(databaseName: name) }
        try await withEngine { engine in
            await expectError(.badDatabaseName, "create \(why)") { try await engine.createDatabase(name) }
            await expectError(.badDatabaseName, "delete \(why)") { try await engine.deleteDatabase(name) }
            await expectError(.badDatabaseName, "open \(why)") { try await engine.database(name) }
            let databases = try await engine.listDatabases()
            #expect(databases == [])
            let folders = try FileManager.default.contentsOfDirectory(atPath: engine.dataDirectory.path)
                .filter { $0.hasSuffix(".sofa") }
            #expect(folders == [])
        }
    }

    @Test func createListDelete() async throws {
        try await withEngine { engine in
            #expect(try await engine.listDatabases() == [])
            try await engine.createDatabase("b")
            try await engine.createDatabase("a")
            #expect(try await engine.listDatabases() == ["a", "b"])
            await expectError(.databaseExists) { try await engine.createDatabase("a") }

            let folder = engine.dataDirectory.appendingPathComponent("a.sofa", isDirectory: true)
            #expect(FileManager.default.fileExists(atPath: folder.path))
            _ = try await engine.database("a").write(put("doc", ["x": 1]))
            try await engine.deleteDatabase("a")
            #expect(!FileManager.default.fileExists(atPath: folder.path))
            #expect(try await engine.listDatabases() == ["b"])
            await expectError(.notFound) { try await engine.deleteDatabase("a") }
            await expectError(.notFound) { try await engine.database("a") }

            // Created again, it starts empty.
            try await engine.createDatabase("a")
            let db = try await engine.database("a")
            await expectError(.notFound) { try await db.read(id: "doc", rev: nil) }
            #expect(try await db.info().lastSequence == 0)
        }
    }

    @Test func documentOperationsOnAnUnknownDatabaseAreNotFound() async throws {
        try await withEngine { engine in
            await expectError(.notFound) { try await engine.database("missing") }
            // Nothing was created by asking.
            let databases = try await engine.listDatabases()
            #expect(databases == [])
        }
    }

    @Test func writeToADeletedDatabaseFails() async throws {
        try await withEngine { engine in
            try await engine.createDatabase("gone")
            let db = try await engine.database("gone")
            try await engine.deleteDatabase("gone")
            await expectError(.notFound) { try await db.write(put("doc", ["x": 1])) }
        }
    }

    @Test func foldersThatAreNotDatabasesAreNotListed() async throws {
        try await withEngine { engine in
            try await engine.createDatabase("real")
            let files = FileManager.default
            try files.createDirectory(at: engine.dataDirectory.appendingPathComponent("empty.sofa"),
                                      withIntermediateDirectories: true)
            try files.createDirectory(at: engine.dataDirectory.appendingPathComponent("other"),
                                      withIntermediateDirectories: true)
            #expect(try await engine.listDatabases() == ["real"])
        }
    }
}
