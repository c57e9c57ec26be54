import Foundation
import SofaBlob
import SofaClient
import Testing

// Helpers of the blob suites (BlobEncryptionTests, BlobCompactionFaultTests, BlobDocumentTests).

/// Runs blocking work on a thread of its own, off the cooperative pool.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

func readFile(_ url: URL) async throws -> [UInt8] {
    try await blocking { [UInt8](try Data(contentsOf: url)) }
}

func writeFile(_ url: URL, _ bytes: [UInt8]) async throws {
    try await blocking { try Data(bytes).write(to: url) }
}

/// `sha1sum`'s key for a file (an SHA-1 independent of Sofa's), computed off the cooperative pool.
func sha1sum(_ url: URL) async throws -> String {
    try await blocking { try sha1sumKey(of: url) }
}

func sha1Base64(_ bytes: [UInt8]) -> String {
    let digest = SHA1Stream()
    digest.update(bytes)
    return Data(digest.finish()).base64EncodedString()
}

func blobFile(_ cluster: Cluster, _ db: String, _ key: String) -> URL {
    cluster.directory.appendingPathComponent("data/\(db).sofa/Attachments/")
        .appendingPathComponent(String(key.dropFirst(5)).replacingOccurrences(of: "/", with: "_") + ".blob")
}

/// Offsets and lengths that start, end and straddle 16-byte and 4096-byte blocks of a blob of `size`.
func ranges(_ size: Int) -> [(Int, Int)] {
    let candidates = [(0, 1), (0, size), (15, 2), (4095, 2), (4090, 12), (4096, 4096), (8191, 3), (1, size), (size, 5)]
    return candidates.filter { $0.0 <= size && $0.1 > 0 }
}

/// `kill -9` of sofa-blob, then waits (with a deadline) for the supervisor's new one to serve.
func restartBlob(_ cluster: Cluster) async throws {
    let pid = try #require(cluster.supervisor.pid(of: "blob"))
    kill(pid, SIGKILL)
    try await waitForRestart(cluster, "blob", old: pid)
}

func waitForRestart(_ cluster: Cluster, _ name: String, old: Int32) async throws {
    try #require(await cluster.supervisor.waitForRestart(of: name, replacing: old) != nil, "\(name) was not restarted")
    try await cluster.supervisor.waitUntilHealthy()
}

/// Retries `body` while the cluster is still reconnecting after a restart (deadline 60 s).
@discardableResult
func retrying<T>(_ body: () async throws -> T) async throws -> T {
    let deadline = ContinuousClock.now + .seconds(60)
    while true {
        do { return try await body() } catch let error as SofaError where (error.is(.unavailable) || error.is(.timeout)) && ContinuousClock.now < deadline {
            await Task.yield()
        }
    }
}
