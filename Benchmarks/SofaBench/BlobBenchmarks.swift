internal import SofaFiles
public import Foundation
internal import SofaCore
internal import SofaBlob

/// Throughput of the blob store itself (no bus, no processes): one 256 MiB blob written in 1 MiB
/// chunks and read back in 1 MiB chunks, in a plain and in an encrypted store, in fresh folders
/// under `directory` that are removed afterwards. MB are 10^6 bytes. Writes include the fsyncs of
/// install; reads come from the page cache the write just filled.
public enum BlobBenchmarks {
    public static let blobSize = 256 * 1024 * 1024
    static let chunkSize = 1024 * 1024

    /// Results in the order: write plain, read plain, write encrypted, read encrypted. A step
    /// that fails is reported with 0 MB/s and a name saying why.
    public static func run(directory: URL) -> [(name: String, megabytesPerSecond: Double)] {
        run(directory: directory, size: blobSize)
    }

    static func run(directory: URL, size: Int) -> [(name: String, megabytesPerSecond: Double)] {
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for i in chunk.indices {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            chunk[i] = UInt8(truncatingIfNeeded: seed >> 33)
        }
        var results: [(name: String, megabytesPerSecond: Double)] = []
        for encrypted in [false, true] {
            let label = encrypted ? "encrypted" : "plain"
            let folder = directory.appendingPathComponent("blob-bench-\(label)-\(UUID().uuidString)", isDirectory: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            do {
                let key = encrypted ? try EncryptionKey(bytes: chunk.prefix(EncryptionKey.length)) : nil
                let store = try BlobStore(directory: folder, key: key)
                var blobKey: BlobKey?
                let write = try measure(bytes: size) {
                    let writer = try store.writer()
                    var left = size
                    try chunk.withUnsafeBytes { bytes in
                        while left > 0 {
                            let n = min(left, bytes.count)
                            try writer.write(UnsafeRawBufferPointer(rebasing: bytes[0..<n]))
                            left -= n
                        }
                    }
                    blobKey = try writer.install()
                }
                results.append(("blob write \(label) \(size >> 20) MiB", write))
                let read = try measure(bytes: size) {
                    let reader = try store.reader(for: blobKey!)
                    var total = 0
                    try reader.forEachChunk(chunkSize: chunkSize) { total += $0.count }
                    precondition(total == size, "read \(total) of \(size) bytes")
                }
                results.append(("blob read \(label) \(size >> 20) MiB", read))
            } catch {
                results.append(("blob \(label) failed: \(error)", 0))
            }
        }
        return results
    }

    private static func measure(bytes: Int, _ body: () throws -> Void) throws -> Double {
        let clock = ContinuousClock()
        let elapsed = try clock.measure(body)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Double(bytes) / 1e6 / max(seconds, 1e-9)
    }
}
