import Foundation
import SofaClient
import Testing

/// Documents that reference blobs, end to end: SDK → gateway → sofa-storage, with the blobs
/// uploaded through sofa-blob into the shared data directory.
@Suite(.serialized) struct BlobDocumentTests {
    private static func photo(_ key: String, _ length: Int) -> String {
        #"{"photo":{"@type":"blob","digest":"\#(key)","length":\#(length),"content_type":"image/png"}}"#
    }

    /// A document may reference an uploaded blob, not one never uploaded; a malformed digest is
    /// refused; compaction keeps a referenced blob and removes it once nothing references it.
    @Test func documentsReferenceUploadedBlobsOnly() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("photos")
            let content = Array("not really a PNG, but a blob all the same".utf8)
            let info = try await db.putBlob(content)

            let saved = try await db.put(id: "cat", json: Self.photo(info.key, content.count))
            #expect(try await db.get(id: "cat").rev == saved.rev)

            // A digest never uploaded: refused, naming the digest, and nothing written.
            let missing = "sha1-" + Data(repeating: 0xAB, count: 20).base64EncodedString()
            let error = await #expect(throws: SofaError.self) {
                _ = try await db.put(id: "dog", json: Self.photo(missing, 10))
            }
            #expect(error?.is(.notFound) == true, "\(String(describing: error))")
            #expect(error?.message.contains(missing) == true, "\(String(describing: error))")
            await #expect(throws: SofaError.self) { _ = try await db.get(id: "dog") }

            // The CouchDB-style stub is checked too, and a malformed digest is a bad parameter.
            let stub = await #expect(throws: SofaError.self) {
                _ = try await db.put(id: "couch", json: #"{"_attachments":{"a.png":{"digest":"\#(missing)","stub":true}}}"#)
            }
            #expect(stub?.is(.notFound) == true, "\(String(describing: stub))")
            let bad = await #expect(throws: SofaError.self) {
                _ = try await db.put(id: "bad", json: Self.photo("sha1-nope", 1))
            }
            #expect(bad?.is(.invalidParameter) == true, "\(String(describing: bad))")

            // Still referenced: compaction keeps it and it still reads back.
            let file = blobFile(cluster, "photos", info.key).path
            #expect(FileManager.default.fileExists(atPath: file))
            try await db.compact()
            #expect(FileManager.default.fileExists(atPath: file))
            #expect(try await db.blob(info.key) == content)

            // Once the only referencing document is deleted, compaction removes the blob.
            _ = try await db.delete(id: "cat", rev: saved.rev)
            try await db.compact()
            #expect(!FileManager.default.fileExists(atPath: file))
            // And a new document can no longer reference it.
            await #expect(throws: SofaError.self) {
                _ = try await db.put(id: "cat2", json: Self.photo(info.key, content.count))
            }
        }
    }

    /// A revision that references a blob, either way, carries the hasAttachments flag, in both
    /// kinds of database and whichever way it was written or is read; one that does not, or no
    /// longer does, has none.
    @Test(arguments: [Versioning.revisionTrees, .versionVectors])
    func documentsReferencingBlobsAreFlagged(_ versioning: Versioning) async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("flags", versioning: versioning)
            let info = try await db.putBlob(Array("flagged".utf8))
            let stub = #"{"_attachments":{"a.txt":{"digest":"\#(info.key)","length":7,"stub":true,"revpos":1}}}"#
            let photo = try await db.put(id: "photo", json: Self.photo(info.key, 7))
            _ = try await db.put(id: "couch", json: stub)
            _ = try await db.put(id: "plain", json: #"{"digest":"\#(info.key)"}"#)
            #expect(try await db.get(id: "photo").hasAttachments)
            #expect(try await db.get(id: "couch").hasAttachments)
            #expect(try await !db.get(id: "plain").hasAttachments, "a digest outside a blob dictionary is no reference")
            let listed = try await db.allDocs(AllDocsQuery(includeBodies: true))
            #expect(Dictionary(uniqueKeysWithValues: listed.map { ($0.id, $0.hasAttachments) })
                    == ["photo": true, "couch": true, "plain": false])
            #expect(try await db.openLeaves(id: "photo").map(\.hasAttachments) == [true])

            let edited = try await db.put(id: "photo", json: #"{"caption":"no picture any more"}"#, rev: photo.rev)
            #expect(try await !db.get(id: "photo").hasAttachments)
            if versioning == .revisionTrees {
                #expect(try await db.get(id: "photo", rev: photo.rev).hasAttachments, "the old revision still has it")
                let history = ["3-" + String(repeating: "c", count: 40), edited.rev]
                _ = try await db.insert(id: "photo", history: history, json: Self.photo(info.key, 7))
                #expect(try await db.get(id: "photo").hasAttachments, "a revision inserted with its history")

                // A conflict resolved with a merged body that references the blob.
                let base = try await db.put(id: "merged", json: #"{"v":1}"#)
                _ = try await db.insert(id: "merged", history: ["2-" + String(repeating: "a", count: 40), base.rev], json: #"{"v":2}"#)
                _ = try await db.insert(id: "merged", history: ["2-" + String(repeating: "b", count: 40), base.rev], json: #"{"v":3}"#)
                let leaves = try await db.openLeaves(id: "merged").map(\.rev)
                #expect(leaves.count == 2)
                _ = try await db.resolve(id: "merged", winner: leaves[0], loser: leaves[1],
                                         merged: Array(Self.photo(info.key, 7).utf8))
                #expect(try await db.get(id: "merged").hasAttachments)
                #expect(try await db.allDocs(startKey: "merged", endKey: "merged").first?.hasAttachments == true)
            }
        }
    }

    /// LiteCore's compaction sequence, at full speed: a blob goes at the first compaction after
    /// the last kept revision referencing it is gone, however recently it was uploaded; one that
    /// two documents reference stays until both are deleted; a CouchDB-style `_attachments`
    /// reference (one blob under three names) counts as well.
    @Test func compactionRemovesABlobOnceItsLastReferenceIsGone() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("compact")
            let contents = ["This is the first attachment", "This is the second attachment", "This is the third attachment"]
            var keys: [String] = []
            for content in contents { keys.append(try await db.putBlob(Array(content.utf8)).key) }
            func exists(_ index: Int) -> Bool { FileManager.default.fileExists(atPath: blobFile(cluster, "compact", keys[index]).path) }

            let doc1 = try await db.put(id: "doc001", json: Self.photo(keys[0], contents[0].utf8.count))
            let doc2 = try await db.put(id: "doc002", json: Self.photo(keys[1], contents[1].utf8.count))
            let doc4 = try await db.put(id: "doc004", json: Self.photo(keys[1], contents[1].utf8.count))
            let stubs = ["att1.txt", "att2.txt", "att3.txt"].map {
                #""\#($0)":{"content_type":"text/plain","digest":"\#(keys[2])","length":\#(contents[2].utf8.count),"revpos":1,"stub":true}"#
            }
            let doc3 = try await db.put(id: "doc003", json: #"{"_attachments":{\#(stubs.joined(separator: ","))}}"#)

            try await db.compact()
            #expect(exists(0) && exists(1) && exists(2))

            _ = try await db.delete(id: "doc001", rev: doc1.rev)
            try await db.compact()
            #expect(!exists(0))
            #expect(exists(1) && exists(2))
            let gone = await #expect(throws: SofaError.self) { _ = try await db.blob(keys[0]) }
            #expect(gone?.is(.notFound) == true, "\(String(describing: gone))")

            _ = try await db.delete(id: "doc002", rev: doc2.rev)
            try await db.compact()
            #expect(exists(1), "doc004 still references it")
            #expect(exists(2))

            _ = try await db.delete(id: "doc004", rev: doc4.rev)
            try await db.compact()
            #expect(!exists(1))
            #expect(exists(2))

            _ = try await db.delete(id: "doc003", rev: doc3.rev)
            try await db.compact()
            #expect(!exists(2))
        }
    }

    /// An upload no document references yet is unreferenced: compaction deletes it, and a document
    /// saved afterwards that references it is refused with a clear error until it is uploaded again.
    @Test func anUnreferencedUploadGoesAtTheNextCompaction() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("photos")
            let content = Array("fresh upload".utf8)
            let kept = try await db.putBlob(Array("referenced".utf8))
            _ = try await db.put(id: "kept", json: Self.photo(kept.key, 10))
            let info = try await db.putBlob(content)
            try await db.compact()
            #expect(!FileManager.default.fileExists(atPath: blobFile(cluster, "photos", info.key).path))
            #expect(FileManager.default.fileExists(atPath: blobFile(cluster, "photos", kept.key).path))
            let refused = await #expect(throws: SofaError.self) {
                _ = try await db.put(id: "later", json: Self.photo(info.key, content.count))
            }
            #expect(refused?.is(.notFound) == true, "\(String(describing: refused))")
            #expect(refused?.message.contains("upload it first") == true, "\(String(describing: refused))")
            _ = try await db.putBlob(content)
            _ = try await db.put(id: "later", json: Self.photo(info.key, content.count))
            #expect(try await db.blob(info.key) == content)
        }
    }
}
