import Foundation
import SofaClient
import Testing

/// Replication of documents that reference blobs, and of version-vector databases.
@Suite(.serialized) struct ReplicationBlobVectorTests {
    let suite = ReplicationTests()

    @Test func blobsAreTransferredOnceByDigest() async throws {
        try await suite.withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("pics")
            let dbB = try await b.client.createDatabase("pics")
            // 600 KiB: more than two chunks of the blob transfer.
            let content = (0..<(600 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let info = try await dbA.putBlob(content)
            let photo = #"{"photo":{"@type":"blob","digest":"\#(info.key)","length":\#(content.count)}}"#
            for id in ["cat", "dog", "cow"] { _ = try await dbA.put(id: id, json: photo) }
            let done = try await a.client.replicate(from: "pics", to: suite.remote(b, "pics")).wait()
            #expect(done.first?.state == .completed, "\(done)")
            #expect(done.first?.docsWritten == 3)
            #expect(done.first?.blobsTransferred == 1)
            #expect(try await dbB.blob(info.key) == content)
            try await suite.expectIdentical(dbA, dbB)
            // Another document with the same blob: the target has it, nothing is copied.
            _ = try await dbA.put(id: "eel", json: photo)
            let again = try await a.client.replicate(from: "pics", to: suite.remote(b, "pics")).wait()
            #expect(again.first?.docsWritten == 1)
            #expect(again.first?.blobsTransferred == 0)
        }
    }

    /// A blob the target lost after it was copied (its only document deleted there, then a
    /// compaction) is copied again when a later document references it, and that document is
    /// written, not refused.
    @Test func aBlobTheTargetCompactedAwayIsCopiedAgain() async throws {
        try await suite.withTwoClusters { a, b in
            let content = Array("a photo that comes back".utf8)
            let (dbA, dbB, info, photo) = try await Self.picsWithBlob(a, b, content)
            _ = try await dbA.put(id: "cat", json: photo)
            let handle = try await a.client.replicate(from: "pics", to: suite.remote(b, "pics"), mode: .continuous)
            try await waitUntil("cat on B", in: dbB, timeout: .seconds(60)) { (try? await dbB.get(id: "cat")) != nil }

            _ = try await dbB.delete(id: "cat", rev: try await dbB.get(id: "cat").rev)
            try await dbB.compact()
            let lost = await #expect(throws: SofaError.self) { _ = try await dbB.blob(info.key) }
            #expect(lost?.is(.notFound) == true, "\(String(describing: lost))")

            _ = try await dbA.put(id: "dog", json: photo)
            try await waitUntil("dog on B", in: dbB, timeout: .seconds(60)) { (try? await dbB.get(id: "dog")) != nil }
            #expect(try await dbB.blob(info.key) == content)
            try await handle.stop()
        }
    }

    /// A tombstone that keeps a body referencing a blob brings the blob along (the target checks
    /// a deleted revision's references like any other's).
    @Test func aTombstoneKeepingABlobReferenceBringsTheBlob() async throws {
        try await suite.withTwoClusters { a, b in
            let content = Array("kept by a tombstone".utf8)
            let (dbA, dbB, info, photo) = try await Self.picsWithBlob(a, b, content)
            let live = try await dbA.put(id: "cat", json: photo)
            _ = try await dbA.put(id: "cat", body: Array(photo.utf8), rev: live.rev, deleted: true)
            let done = try await a.client.replicate(from: "pics", to: suite.remote(b, "pics")).wait()
            #expect(done.first?.state == .completed, "\(done)")
            #expect(done.first?.docsWritten == 1, "\(done)")
            #expect(try await dbB.blob(info.key) == content)
            try await suite.expectIdentical(dbA, dbB)
        }
    }

    /// Database "pics" on both clusters, `content` uploaded to A's, and a document body that
    /// references it.
    private static func picsWithBlob(_ a: Cluster, _ b: Cluster, _ content: [UInt8]) async throws
        -> (Database, Database, BlobInfo, String) {
        let dbA = try await a.client.createDatabase("pics")
        let dbB = try await b.client.createDatabase("pics")
        let info = try await dbA.putBlob(content)
        return (dbA, dbB, info, #"{"photo":{"@type":"blob","digest":"\#(info.key)","length":\#(content.count)}}"#)
    }

    @Test func versionVectorDatabasesReplicateBothWays() async throws {
        try await suite.withTwoClusters { a, b in
            let dbA = try await a.client.createDatabase("vv", versioning: .versionVectors)
            let dbB = try await b.client.createDatabase("vv", versioning: .versionVectors)
            let first = try await dbA.put(id: "doc", json: #"{"v":1}"#)
            let handle = try await a.client.replicate(from: "vv", to: suite.remote(b, "vv"), direction: .both, mode: .continuous)
            try await waitUntil("doc on B", in: dbB) { (try? await dbB.get(id: "doc")) != nil }
            #expect(try await dbB.get(id: "doc").body == Array(#"{"v":1}"#.utf8))
            // Edited on B (which saw A's version): the edit is newer and replaces A's on A.
            let onB = try await dbB.get(id: "doc")
            let edited = try await dbB.put(id: "doc", json: #"{"v":2}"#, rev: onB.rev)
            try await waitUntil("B's edit on A", in: dbA) {
                (try? await dbA.get(id: "doc"))?.body == Array(#"{"v":2}"#.utf8)
            }
            #expect(try await dbA.conflicts(id: "doc") == [])
            // On A, B's version is a peer's (not "*"), and A's own first version is in the vector.
            let vector = try await dbA.get(id: "doc", history: true).history.first ?? ""
            #expect(vector.split(separator: ",").count == 2, "\(vector)")
            #expect(!vector.hasPrefix(edited.rev), "\(vector)")
            #expect(vector.hasSuffix(first.rev), "\(vector)")
            try await handle.stop()
        }
    }
}
