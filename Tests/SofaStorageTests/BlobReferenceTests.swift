import SofaTestSupport
import SofaQL
import Foundation
import SofaCore
import SofaRows
import SofaFiles
@testable import SofaStorage
import Synchronization
import Testing

/// Plays sofa-blob for compaction: records which blobs it is asked to delete, and on which
/// thread, then deletes them (or, while `failing`, answers an error and deletes nothing).
private final class FakeBlobService: Sendable {
    let dataDirectory: URL
    let asked = Mutex<[(database: String, keys: [BlobKey], onWriter: Bool)]>([])
    /// The databases it was asked to drop every blob of.
    let dropped = Mutex<[String]>([])
    let failing = Mutex(false)

    init(_ dataDirectory: URL) { self.dataDirectory = dataDirectory }

    /// Set on a database's writer queue (its name) by the test, to see where the deleter runs.
    static let writerMark = DispatchSpecificKey<String>()

    var deleter: BlobDeleter {
        { database, keys in
            let onWriter = DispatchQueue.getSpecific(key: FakeBlobService.writerMark) == database
            self.asked.withLock { $0.append((database, keys, onWriter)) }
            if self.failing.withLock({ $0 }) { return .failure(SofaError(.unexpectedError, "sofa-blob is down")) }
            let folder = StorageLayout.attachmentsDirectory(ofDatabaseDirectory: StorageLayout.directory(of: database, in: self.dataDirectory))
            for key in keys { try? FileManager.default.removeItem(at: folder.appendingPathComponent(key.fileName)) }
            return .success(())
        }
    }
}

extension FakeBlobService {
    var dropper: BlobDropper {
        { database in
            self.dropped.withLock { $0.append(database) }
            if self.failing.withLock({ $0 }) { return .failure(SofaError(.unavailable, "sofa-blob is down")) }
            try? FileManager.default.removeItem(
                at: StorageLayout.attachmentsDirectory(ofDatabaseDirectory: StorageLayout.directory(of: database, in: self.dataDirectory)))
            return .success(())
        }
    }
}

/// An engine whose compaction asks `blobs` to delete.
private func withEngineAndBlobs<T>(_ body: (StorageEngine, FakeBlobService) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { url in
        let blobs = FakeBlobService(url)
        let engine = try StorageEngine(dataDirectory: url, blobDeleter: blobs.deleter, blobDropper: blobs.dropper)
        defer { engine.close() }
        return try await body(engine, blobs)
    }
}

/// A well-formed digest of 20 bytes all equal to `byte` (0xFF gives one with `/` in it).
private func digest(_ byte: UInt8) -> String { "sha1-" + Data(repeating: byte, count: 20).base64EncodedString() }

/// Creates the blob file for `digest` in the database's Attachments folder, as sofa-blob would.
@discardableResult
private func storeBlob(_ db: DatabaseStore, _ digest: String) throws -> String {
    let folder = db.attachmentsDirectory
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let name = try #require(BlobReference.tryParse(digest)).fileName
    let path = folder.appendingPathComponent(name).path
    #expect(FileManager.default.createFile(atPath: path, contents: Data("content".utf8)))
    return path
}

private func flags(_ db: DatabaseStore, _ id: String, in collection: CollectionName = .default) async throws -> DocumentFlags? {
    try await db.read { (reader) throws(SofaError) -> DocumentFlags? in
        try DocumentRow.load(reader, collection, id)?.flags
    }
}

@Suite struct BlobReferenceTests {
    /// One row per rule: body → the digests found (nil: refused as invalid).
    static let findTable: [(String, [String]?)] = [
        (#"{"a":1}"#, []),
        (#"{"photo":{"@type":"blob","digest":"\#(digest(1))","length":7}}"#, [digest(1)]),
        (#"{"a":{"b":[{"c":{"@type":"blob","digest":"\#(digest(2))"}}]}}"#, [digest(2)]),
        (#"{"_attachments":{"x.txt":{"digest":"\#(digest(3))","stub":true},"y":{"digest":"\#(digest(0xFF))"}}}"#,
         [digest(3), digest(0xFF)]),
        (#"{"photo":{"@type":"image","digest":"not checked"}}"#, []),          // not a blob dictionary
        (#"{"inner":{"_attachments":{"x":{"digest":"not checked"}}}}"#, []),   // only the top-level one
        (#"{"photo":{"@type":"blob","digest":"sha1-short"}}"#, nil),
        (#"{"photo":{"@type":"blob","digest":"md5-\#(Data(count: 20).base64EncodedString())"}}"#, nil),
        (#"{"_attachments":{"x":{"digest":"sha1-AAAAAAAAAAAAAAAAAAAAAAAAAAA"}}}"#, nil),
    ]

    @Test(arguments: findTable)
    func findsReferences(_ body: String, _ expected: [String]?) throws {
        let json = try JSON.parse(body)
        if let expected {
            #expect(Set(try BlobReference.find(in: json).map(\.description)) == Set(expected), "\(body)")
        } else {
            #expect(throws: SofaError.self, "\(body)") { try BlobReference.find(in: json) }
        }
    }

    @Test func fileNameMapping() throws {
        let reference = try BlobReference.parse(digest(0xFF))
        #expect(reference.fileName == "__________________________8=.blob")
        #expect(BlobReference(fileName: reference.fileName) == reference)
        #expect(BlobReference(fileName: "x.blob") == nil)
        #expect(BlobReference(fileName: "incoming-1234.tmp") == nil)
    }

    @Test(arguments: [Versioning.revisionTrees, .versionVectors])
    func referencedBlobIsAcceptedAndFlagged(_ versioning: Versioning) async throws {
        try await withEngine { engine in
            try await engine.createDatabase("db", versioning: versioning)
            let db = try await engine.database("db")
            try storeBlob(db, digest(1))
            try storeBlob(db, digest(0xFF))
            _ = try await db.write(put("nested", try json(#"{"a":[{"b":{"@type":"blob","digest":"\#(digest(1))"}}]}"#)))
            _ = try await db.write(put("couch", try json(#"{"_attachments":{"p.png":{"digest":"\#(digest(0xFF))","stub":true}}}"#)))
            let plain = try await db.write(put("plain", try json(#"{"digest":"\#(digest(9))"}"#)))
            #expect(try await flags(db, "nested")?.contains(.hasAttachments) == true)
            #expect(try await flags(db, "couch")?.contains(.hasAttachments) == true)
            #expect(try await flags(db, "plain")?.contains(.hasAttachments) == false)
            // A new revision without references clears the flag.
            _ = try await db.write(put("nested", [:], parent: try await db.read(id: "nested").rev))
            #expect(try await flags(db, "nested")?.contains(.hasAttachments) == false)
            _ = plain
        }
    }

    @Test(arguments: [Versioning.revisionTrees, .versionVectors])
    func missingBlobIsRefusedAndNothingIsWritten(_ versioning: Versioning) async throws {
        try await withEngine { engine in
            try await engine.createDatabase("db", versioning: versioning)
            let db = try await engine.database("db")
            let body = try json(#"{"photo":{"@type":"blob","digest":"\#(digest(7))","length":7}}"#)
            let error = await expectError(.notFound) { try await db.write(put("doc", body)) }
            #expect(error?.message.contains(digest(7)) == true, "\(String(describing: error))")
            await expectError(.notFound) { try await db.read(id: "doc") }
            #expect(try await flags(db, "doc") == nil)

            // In a bulk write only that item is refused.
            try storeBlob(db, digest(8))
            let good = try json(#"{"photo":{"@type":"blob","digest":"\#(digest(8))"}}"#)
            let results = try await db.bulk([.write(put("bad", body)), .write(put("good", good))])
            #expect(throws: SofaError.self) { try results[0].get() }
            #expect(throws: Never.self) { try results[1].get() }
            await expectError(.notFound) { try await db.read(id: "bad") }
            #expect(try await db.read(id: "good").body == good.compactBytes())

            // Nor through an insert with history.
            let history = versioning == .revisionTrees ? ["1-abc"] : ["1@cafe"]
            await expectError(.notFound) { try await db.insert(RevisionInsertion(id: "replicated", history: history, body: body)) }
            await expectError(.notFound) { try await db.read(id: "replicated") }

            // A deletion without a body needs nothing.
            let rev = try await db.read(id: "good").rev
            _ = try await db.write(put("good", [:], parent: rev, deleted: true))
        }
    }

    @Test func badDigestIsRefusedNamingThePath() async throws {
        try await withDatabase { _, db in
            let body = try json(#"{"a":{"photo":{"@type":"blob","digest":"sha1-nope"}}}"#)
            let error = await expectError(.invalidParameter) { try await db.write(put("doc", body)) }
            #expect(error?.message.contains("a.photo.digest") == true, "\(String(describing: error))")
            let couch = try json(#"{"_attachments":{"f.txt":{"digest":"sha1-nope"}}}"#)
            let error2 = await expectError(.invalidParameter) { try await db.write(put("doc", couch)) }
            #expect(error2?.message.contains("_attachments.f.txt.digest") == true, "\(String(describing: error2))")
            await expectError(.notFound) { try await db.read(id: "doc") }
        }
    }

    @Test(arguments: [Versioning.revisionTrees, .versionVectors])
    func compactionDeletesEveryUnreferencedBlob(_ versioning: Versioning) async throws {
        try await withEngineAndBlobs { engine, blobs in
            try await engine.createDatabase("db", versioning: versioning)
            let db = try await engine.database("db")
            db.writerQueue.setSpecific(key: FakeBlobService.writerMark, value: "db")
            let referenced = try storeBlob(db, digest(1))
            let inOtherCollection = try storeBlob(db, digest(2))
            let inConflict = try storeBlob(db, digest(3))
            let unreferenced = try storeBlob(db, digest(4))
            let onceReferenced = try storeBlob(db, digest(5))
            let other = db.attachmentsDirectory.appendingPathComponent("incoming-upload.tmp").path
            #expect(FileManager.default.createFile(atPath: other, contents: Data()))

            func blob(_ n: UInt8) throws -> JSON { try json(#"{"f":{"@type":"blob","digest":"\#(digest(n))"}}"#) }
            _ = try await db.write(put("keep", try blob(1)))
            let collection = try CollectionName(parsing: "s.c")
            try await db.createCollection(collection)
            _ = try await db.write(put("keep2", try blob(2)), in: collection)
            // A conflicting revision (kept as a leaf) references digest 3.
            let base = try await db.write(put("conflicted", [:]))
            _ = try await db.write(put("conflicted", ["x": 1], parent: base.rev))
            let remote = versioning == .revisionTrees ? ["2-ffff", base.rev.ascii] : ["1@beef"]
            _ = try await db.insert(RevisionInsertion(id: "conflicted", history: remote, body: try blob(3)))
            // Referenced, then the document deleted.
            let gone = try await db.write(put("gone", try blob(5)))
            _ = try await db.write(put("gone", [:], parent: gone.rev, deleted: true))

            let outcome = try await db.compactWithBlobs()
            #expect(outcome.blobsRemoved == 2)
            // Storage only asks; sofa-blob deletes, while the writer waits.
            let asked = blobs.asked.withLock { $0 }
            #expect(asked.map(\.database) == ["db"])
            #expect(Set(asked.flatMap(\.keys).map(\.description)) == [digest(4), digest(5)])
            #expect(asked.allSatisfy { $0.onWriter })
            let fm = FileManager.default
            #expect(fm.fileExists(atPath: referenced))
            #expect(fm.fileExists(atPath: inOtherCollection))
            #expect(fm.fileExists(atPath: inConflict))
            #expect(!fm.fileExists(atPath: unreferenced), "unreferenced, however recent")
            #expect(fm.fileExists(atPath: other), "files that are not blobs are not compaction's business")
            // Compaction drops the body of the deleted document's old revision first.
            #expect(!fm.fileExists(atPath: onceReferenced))
        }
    }

    /// When sofa-blob cannot be asked, compaction still prunes, no blob goes, and the next
    /// compaction deletes them; an engine without sofa-blob deletes none.
    @Test func blobsThatSofaBlobCouldNotDeleteGoAtTheNextCompaction() async throws {
        try await withEngineAndBlobs { engine, blobs in
            try await engine.createDatabase("db")
            let db = try await engine.database("db")
            let unreferenced = try storeBlob(db, digest(7))
            blobs.failing.withLock { $0 = true }
            _ = try await db.compactWithBlobs()
            #expect(FileManager.default.fileExists(atPath: unreferenced))
            blobs.failing.withLock { $0 = false }
            #expect(try await db.compactWithBlobs().blobsRemoved == 1)
            #expect(!FileManager.default.fileExists(atPath: unreferenced))
            #expect(blobs.asked.withLock { $0.count } == 2)
        }
        try await withEngine { engine in
            try await engine.createDatabase("db")
            let db = try await engine.database("db")
            let kept = try storeBlob(db, digest(8))
            #expect(try await db.compactWithBlobs().blobsRemoved == 0)
            #expect(FileManager.default.fileExists(atPath: kept))
        }
    }

    /// Only sofa-blob deletes in `Attachments/`, also when a database is deleted: storage asks it
    /// first, and while it cannot, the database stays whole (its blobs and documents are there);
    /// once it can, the database folder goes entirely. A database without blobs is not asked about.
    @Test func deletingADatabaseHasSofaBlobDropItsBlobsFirst() async throws {
        try await withEngineAndBlobs { engine, blobs in
            try await engine.createDatabase("photos")
            let db = try await engine.database("photos")
            let blob = try storeBlob(db, digest(4))
            blobs.failing.withLock { $0 = true }
            let refused = await #expect(throws: SofaError.self) { try await engine.deleteDatabase("photos") }
            #expect(refused?.is(.unavailable) == true, "\(String(describing: refused))")
            #expect(refused?.message.contains("its blobs could not be deleted") == true, "\(String(describing: refused))")
            #expect(try await engine.listDatabases().contains("photos"))
            #expect(FileManager.default.fileExists(atPath: blob))

            blobs.failing.withLock { $0 = false }
            try await engine.deleteDatabase("photos")
            #expect(blobs.dropped.withLock { $0 } == ["photos", "photos"])
            #expect(!FileManager.default.fileExists(atPath: StorageLayout.directory(of: "photos", in: blobs.dataDirectory).path))
            #expect(try await !engine.listDatabases().contains("photos"))

            try await engine.createDatabase("plain")
            try await engine.deleteDatabase("plain")
            #expect(blobs.dropped.withLock { $0 }.count == 2, "a database without an Attachments folder is not asked about")
        }
    }
}
