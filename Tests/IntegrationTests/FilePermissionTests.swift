import Foundation
import SofaClient
import Testing

/// The data directory is the service user's alone: every folder and file the cluster makes in it
/// (databases, WAL, blobs, an encrypted database's key file, locks, ipc sockets) has no permission
/// for the group or others.
@Suite struct FilePermissionTests {
    @Test func everythingInTheDataDirectoryIsPrivate() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("private")
            _ = try await db.put(id: "a", json: #"{"secret":true}"#)
            _ = try await db.putBlob(Array("blob bytes".utf8))
            let sealed = try await cluster.client.createDatabase("sealed", password: "pw")
            _ = try await sealed.putBlob(Array("sealed bytes".utf8))

            let data = cluster.directory.appendingPathComponent("data")
            var checked = 0
            var open: [String] = []
            let entries = try #require(FileManager.default.enumerator(atPath: data.path)?.allObjects as? [String])
            for path in [""] + entries {
                let full = path.isEmpty ? data.path : data.appendingPathComponent(path).path
                var info = stat()
                guard lstat(full, &info) == 0 else { continue }  // gone meanwhile (a WAL checkpointed)
                checked += 1
                if info.st_mode & 0o077 != 0 { open.append("\(path.isEmpty ? "." : path) \(String(info.st_mode & 0o777, radix: 8))") }
            }
            #expect(checked > 8, "only \(checked) entries under \(data.path)")
            #expect(open.isEmpty, "readable by others: \(open)")
        }
    }
}
