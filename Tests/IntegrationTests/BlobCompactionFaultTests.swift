import Foundation
import SofaBlob
import SofaClient
import Testing

/// `kill -9` during compaction: storage (which names the unreferenced blobs) and sofa-blob (which
/// deletes them) are killed while blobs go; every referenced blob is still there and reads back, and the
/// next compaction finishes the job.
@Suite(.serialized) struct BlobCompactionFaultTests {
    @Test(arguments: [false, true])
    func killingDuringCompactionLosesNoReferencedBlob(encrypted: Bool) async throws {
        try await Cluster.with(clientTimeout: .seconds(20)) { cluster in
            let db = encrypted ? try await cluster.client.createDatabase("photos", password: "pw")
                               : try await cluster.client.createDatabase("photos")
            var referenced: [(String, [UInt8])] = []
            for index in 0..<40 {
                let content = pseudoRandomBytes(100 + index * 97, seed: UInt64(1000 + index))
                let info = try await db.putBlob(content)
                _ = try await db.put(id: "doc\(index)",
                                     json: #"{"photo":{"@type":"blob","digest":"\#(info.key)","length":\#(content.count)}}"#)
                referenced.append((info.key, content))
            }
            // Many unreferenced blobs, so that the deletions take long enough to be interrupted:
            // uploaded through the service is too slow, so the plain ones are written beside the
            // others as a store would (an encrypted store's unreferenced files are deleted by name
            // alone, so their content does not matter).
            let folder = cluster.directory.appendingPathComponent("data/photos.sofa/Attachments")
            let unreferenced = 4000
            try await blocking {
                for index in 0..<unreferenced {
                    let content = Array("orphan \(index)".utf8)
                    let name = sha1Base64(content).replacingOccurrences(of: "/", with: "_") + ".blob"
                    try #require(FileManager.default.createFile(atPath: folder.appendingPathComponent(name).path, contents: Data(content)))
                }
            }
            let total = referenced.count + unreferenced
            let storagePid = try #require(cluster.supervisor.pid(of: "storage"))
            let blobPid = try #require(cluster.supervisor.pid(of: "blob"))

            // A thread watches the folder and kills both as soon as the first file goes.
            let left = try await withThrowingTaskGroup(of: Int.self) { group in
                group.addTask {
                    try await blocking {
                        let deadline = Date().addingTimeInterval(30)
                        while Date() < deadline {
                            let count = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".blob") }.count
                            if count < total {
                                kill(storagePid, SIGKILL)
                                kill(blobPid, SIGKILL)
                                return count
                            }
                        }
                        return -1
                    }
                }
                group.addTask {
                    _ = try? await db.compact()  // fails: storage dies under it (or, rarely, it finished first)
                    return -2
                }
                var seen = -1
                for try await value in group where value != -2 { seen = value }
                return seen
            }
            #expect(left >= 0, "compaction never started deleting")
            print("compaction killed with \(left) of \(total) blob files left")

            try await waitForRestart(cluster, "storage", old: storagePid)
            try await waitForRestart(cluster, "blob", old: blobPid)
            for (key, content) in referenced {
                #expect(try await retrying { try await db.blob(key) } == content)
            }
            try await retrying { try await db.compact() }
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".blob") }
            #expect(Set(names) == Set(referenced.map { String($0.0.dropFirst(5)).replacingOccurrences(of: "/", with: "_") + ".blob" }))
            for (key, content) in referenced { #expect(try await db.blob(key) == content) }
        }
    }
}
