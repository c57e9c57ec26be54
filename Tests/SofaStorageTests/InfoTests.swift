import SofaTestSupport
import Foundation
import SofaCore
@testable import SofaStorage
import Testing

@Suite struct InfoTests {
    static func isV4(_ uuid: String) -> Bool {
        let parts = uuid.split(separator: "-").map(String.init)
        guard parts.map(\.count) == [8, 4, 4, 4, 12], uuid == uuid.lowercased() else { return false }
        return parts[2].hasPrefix("4") && ["8", "9", "a", "b"].contains(parts[3].prefix(1))
    }

    @Test(arguments: Versioning.allCases)
    func infoIsPersistent(_ versioning: Versioning) async throws {
        try await withTemporaryDirectory { directory in
            let first: DatabaseStats
            do {
                let engine = try StorageEngine(dataDirectory: directory)
                try await engine.createDatabase("db", versioning: versioning)
                let db = try await engine.database("db")
                #expect(db.versioning == versioning)
                let a = try await db.write(put("a", ["x": 1]))
                _ = try await db.write(put("b", ["x": 1]))
                _ = try await db.write(put("a", [:], parent: a.rev, deleted: true))
                _ = try await db.purge(id: "b")
                first = try await db.info()
                #expect(first.documents == 0)
                #expect(first.lastSequence == 4)
                #expect(first.updateSequence == 4)
                #expect(first.purgeCount == 1)
                #expect(first.fileBytes > 0)
                #expect(first.walBytes > 0)
                #expect(Self.isV4(first.publicUUID), "\(first.publicUUID)")
                #expect(Self.isV4(first.privateUUID), "\(first.privateUUID)")
                #expect(first.publicUUID != first.privateUUID)
                #expect(first.collections == 1)
                engine.close()
            }
            let engine = try StorageEngine(dataDirectory: directory)
            defer { engine.close() }
            let db = try await engine.database("db")
            #expect(db.versioning == versioning)
            let again = try await db.info()
            #expect(again.publicUUID == first.publicUUID)
            #expect(again.privateUUID == first.privateUUID)
            #expect(again.updateSequence == 4)
            // Another database: other UUIDs.
            try await engine.createDatabase("other")
            #expect(try await engine.database("other").info().publicUUID != first.publicUUID)
        }
    }
}
