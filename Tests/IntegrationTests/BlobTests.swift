import Foundation
import SofaBlob
import SofaBus
import SofaServer
import SofaClient
import SofaWire
import Synchronization
import Testing
import SofaTestSupport

/// Blob transfer end to end: SDK and CLI → gateway → sofa-blob → the database's Attachments/.
// Off the cooperative pool: its tests wait for `sha1sum` to read whole files.
@Suite(.serialized, .ownThreads) struct BlobTests {
    static let sizes = [0, 1, 15, 16, 17, 4095, 4096, 4097, 4111, 4112, 4113, 8191, 8192, 8193, 8 << 20]

    /// Every size round-trips through bytes and through a file, under the key that `sha1sum`
    /// (an independent SHA-1) gives, and `blobInfo` reports the length.
    @Test func roundTripsAroundBlockBoundaries() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("blobs")
            let scratch = cluster.directory.appendingPathComponent("scratch")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            for (index, size) in Self.sizes.enumerated() {
                let content = pseudoRandomBytes(size, seed: UInt64(index + 1))
                let file = scratch.appendingPathComponent("in-\(size)")
                try Data(content).write(to: file)
                let key = try sha1sumKey(of: file)
                let viaBytes = try await db.putBlob(content, expectedKey: key)
                #expect(viaBytes == BlobInfo(key: key, length: UInt64(size)), "size \(size)")
                let viaFile = try await db.putBlob(contentsOf: file)
                #expect(viaFile == viaBytes, "size \(size)")
                #expect(try await db.blobInfo(key) == viaBytes, "size \(size)")
                #expect(try await db.blob(key) == content, "size \(size)")
                var streamed: [UInt8] = []
                for try await chunk in db.blobChunks(key, chunkSize: 4093) {
                    #expect(chunk.count <= 4093)
                    streamed += chunk
                }
                #expect(streamed == content, "size \(size)")
                let out = scratch.appendingPathComponent("out-\(size)")
                try await db.downloadBlob(key, to: out)
                #expect(try Data(contentsOf: out) == Data(content), "size \(size)")
            }
            #expect(try attachmentFiles(cluster, "blobs").count == Self.sizes.count)
        }
    }

    /// A 64 MiB blob from a file and back to a file, under sha1sum's key.
    @Test func sixtyFourMebibytesThroughFiles() async throws {
        try await Cluster.with(clientTimeout: .seconds(60)) { cluster in
            let db = try await cluster.client.createDatabase("big")
            let scratch = cluster.directory.appendingPathComponent("scratch")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            let file = scratch.appendingPathComponent("in-64m")
            let size = 64 << 20
            try Data(pseudoRandomBytes(size, seed: 64)).write(to: file)
            let key = try sha1sumKey(of: file)
            let info = try await db.putBlob(contentsOf: file, expectedKey: key)
            #expect(info == BlobInfo(key: key, length: UInt64(size)))
            let out = scratch.appendingPathComponent("out-64m")
            try await db.downloadBlob(key, to: out)
            #expect(try sha1sumKey(of: out) == key)
            #expect(try FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int == size)
        }
    }

    /// Identical content uploaded twice at once is one blob; a wrong expected key stores nothing.
    @Test func concurrentIdenticalUploadsAndWrongExpectedKey() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("blobs")
            let content = pseudoRandomBytes(3 << 20 + 5, seed: 42)
            async let first = db.putBlob(content)
            async let second = db.putBlob(content)
            let (a, b) = try await (first, second)
            #expect(a == b)
            #expect(try attachmentFiles(cluster, "blobs") == [fileName(a.key)])

            let other = pseudoRandomBytes(1000, seed: 7)
            let error = await #expect(throws: SofaError.self) { _ = try await db.putBlob(other, expectedKey: a.key) }
            #expect(error?.is(.corruptData) == true, "\(String(describing: error))")
            #expect(try attachmentFiles(cluster, "blobs") == [fileName(a.key)])
        }
    }

    /// Bad keys and path traversal are invalid parameters, everywhere a key is taken; a missing
    /// blob and an unknown database are not found.
    @Test func badKeysMissingBlobsAndUnknownDatabases() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("blobs")
            let badKeys = ["sha1-", "sha1-abc", "sha1-../../etc/passwd", "sha1-../../../../../../etc/passwd",
                           "sha1-/../../../../../../etc/passw", "md5-2jmj7l5rSw0yVb/vlWAYkK/YBwk=",
                           "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk", "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk==",
                           "SHA1-2jmj7l5rSw0yVb/vlWAYkK/YBwk="]
            for key in badKeys {
                let calls: [(String, () async throws -> Void)] = [
                    ("stat", { _ = try await db.blobInfo(key) }),
                    ("read", { _ = try await db.blob(key) }),
                    ("put", { _ = try await db.putBlob([1, 2, 3], expectedKey: key) }),
                ]
                for (name, call) in calls {
                    let error = await #expect(throws: SofaError.self, "\(name) \(key)") { try await call() }
                    #expect(error?.is(.invalidParameter) == true, "\(name) \(key): \(String(describing: error))")
                }
            }
            #expect(try attachmentFiles(cluster, "blobs").isEmpty)

            let missing = "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk="  // SHA-1 of nothing: never stored here
            for call: () async throws -> Void in [{ _ = try await db.blobInfo(missing) }, { _ = try await db.blob(missing) },
                         { try await db.downloadBlob(missing, to: cluster.directory.appendingPathComponent("missing")) }] {
                let error = await #expect(throws: SofaError.self) { try await call() }
                #expect(error?.is(.notFound) == true, "\(String(describing: error))")
            }
            #expect(!FileManager.default.fileExists(atPath: cluster.directory.appendingPathComponent("missing").path))

            let nowhere = cluster.client.database("nowhere")
            for call: () async throws -> Void in [{ _ = try await nowhere.blobInfo(missing) }, { _ = try await nowhere.putBlob([1]) }] {
                let error = await #expect(throws: SofaError.self) { try await call() }
                #expect(error?.is(.notFound) == true, "\(String(describing: error))")
            }
            #expect(!FileManager.default.fileExists(atPath: cluster.directory.appendingPathComponent("data/nowhere.sofa").path))
        }
    }

    /// Chunks sent out of order are written in offset order; a duplicate or overlapping chunk is
    /// refused; a length that does not match what was sent installs nothing.
    @Test func reorderedDuplicateAndShortUploads() async throws {
        try await Cluster.with { cluster in
            _ = try await cluster.client.createDatabase("blobs")
            let bus = try await connectedBus(cluster.supervisor.gatewayEndpoint)
            defer { bus.close() }
            let content = pseudoRandomBytes(10_000, seed: 3)
            guard case .blobWriteStarted(let id) = try await bus.call(.blobWriteBegin(expectedKey: ""), database: "blobs") else {
                Issue.record("no write id"); return
            }
            _ = try await bus.call(.blobWriteChunk(writeID: id, offset: 6000, bytes: Array(content[6000...])), database: "blobs")
            _ = try await bus.call(.blobWriteChunk(writeID: id, offset: 3000, bytes: Array(content[3000..<6000])), database: "blobs")
            for (offset, range) in [(3000, 3000..<4000), (6500, 6500..<7000), (2000, 2000..<3500)] {
                let error = await #expect(throws: SofaError.self) {
                    _ = try await bus.call(.blobWriteChunk(writeID: id, offset: UInt64(offset), bytes: Array(content[range])),
                                           database: "blobs")
                }
                #expect(error?.is(.invalidParameter) == true, "\(offset): \(String(describing: error))")
            }
            _ = try await bus.call(.blobWriteChunk(writeID: id, offset: 0, bytes: Array(content[..<2000])), database: "blobs")
            _ = try await bus.call(.blobWriteChunk(writeID: id, offset: 2000, bytes: Array(content[2000..<3000])), database: "blobs")
            let reply = try await bus.call(.blobWriteEnd(writeID: id, length: 10_000), database: "blobs")
            let key = try sha1sumKey(of: content, in: cluster.directory)
            #expect(reply == .blob(BlobInfo(key: key, length: 10_000)))
            #expect(try await cluster.client.database("blobs").blob(key) == content)

            // A session whose end announces more than was sent installs nothing.
            guard case .blobWriteStarted(let short) = try await bus.call(.blobWriteBegin(expectedKey: ""), database: "blobs") else {
                Issue.record("no write id"); return
            }
            _ = try await bus.call(.blobWriteChunk(writeID: short, offset: 0, bytes: [1, 2, 3]), database: "blobs")
            let error = await #expect(throws: SofaError.self) {
                _ = try await bus.call(.blobWriteEnd(writeID: short, length: 4), database: "blobs")
            }
            #expect(error?.is(.invalidParameter) == true, "\(String(describing: error))")
            #expect(try attachmentFiles(cluster, "blobs") == [fileName(key)])
        }
    }

    /// A reader that stops after two chunks of a big blob costs the service nothing: it keeps
    /// serving reads and writes.
    @Test func aReaderThatStopsLeavesTheServiceServing() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("blobs")
            let content = pseudoRandomBytes(4 << 20, seed: 9)
            let info = try await db.putBlob(content)
            for _ in 0..<3 {
                var seen = 0
                for try await chunk in db.blobChunks(info.key, chunkSize: 64 << 10) {
                    seen += chunk.count
                    if seen >= 128 << 10 { break }
                }
                #expect(seen == 128 << 10)
            }
            #expect(try await db.blob(info.key) == content)
            let small = try await db.putBlob([1, 2, 3])
            #expect(try await db.blob(small.key) == [1, 2, 3])
        }
    }

    /// `kill -9` of sofa-blob in the middle of an upload: the upload fails with a clear error, no
    /// partial blob or temporary file remains once the store is reopened, and the retried upload
    /// succeeds.
    @Test func killingTheBlobServiceDuringAnUpload() async throws {
        try await Cluster.with(clientTimeout: .seconds(10)) { cluster in
            let db = try await cluster.client.createDatabase("blobs")
            let blobPid = try #require(cluster.supervisor.pid(of: "blob"))
            let content = pseudoRandomBytes(24 << 20, seed: 11)
            let chunk = 256 << 10
            let produced = Mutex(0)
            let killingStream = BytesStream(content: content, chunk: chunk) { index in
                // After 20 chunks have gone out, kill the service.
                if index == 20 {
                    kill(blobPid, SIGKILL)
                    produced.withLock { $0 = index }
                }
            }
            let error = await #expect(throws: SofaError.self) { _ = try await db.putBlob(killingStream) }
            #expect(produced.withLock { $0 } == 20)
            let code = error?.sofaCode
            #expect(code == .unavailable || code == .notFound || code == .timeout, "\(String(describing: error))")
            #expect(error?.message.isEmpty == false)

            try await cluster.supervisor.waitUntilHealthy()
            let expected = try sha1sumKey(of: content, in: cluster.directory)
            let deadline = ContinuousClock.now + .seconds(60)
            var stored: BlobInfo?
            while stored == nil, ContinuousClock.now < deadline {
                do {
                    stored = try await db.putBlob(content, expectedKey: expected)
                } catch let retry as SofaError where retry.is(.unavailable) || retry.is(.notFound) {
                    try await cluster.supervisor.waitUntilHealthy()
                }
            }
            #expect(stored == BlobInfo(key: expected, length: UInt64(content.count)))
            #expect(cluster.supervisor.pid(of: "blob") != blobPid)
            #expect(try attachmentFiles(cluster, "blobs") == [fileName(expected)])
            #expect(try await db.blob(expected) == content)
        }
    }

    /// `sofa-bench blob` (a small blob, three trials): its own cluster, every figure, each the
    /// median of its trials, the ratios from them, and the peak memory of every process.
    @Test func benchBlobPrintsEveryFigure() async throws {
        let run = try await runSofa(["blob", "--megabytes", "3", "--trials", "3"], gateway: "tcp://127.0.0.1:1",
                                  executable: "sofa-bench")
        #expect(run.status == 0, "\(run.err)")
        let figures = try JSON.parse(Array(run.out.utf8))
        #expect(figures["megabytes"] == 3 && figures["trials"] == 3)
        func medianOf(_ trials: JSON?, _ name: String) -> Double? {
            guard let values = trials?.arrayValue?.compactMap(\.doubleValue), values.count == 3, values.allSatisfy({ $0 > 0 }) else {
                Issue.record("\(name): \(String(describing: trials))")
                return nil
            }
            return values.sorted()[1]
        }
        let cp = medianOf(figures["cp_trials_mb_per_s"], "cp")
        #expect(cp != nil && figures["cp_mb_per_s"]?.doubleValue == cp)
        #expect(medianOf(figures["cp_then_sync_trials_mb_per_s"], "cp then sync") == figures["cp_then_sync_mb_per_s"]?.doubleValue)
        for mode in ["plain", "encrypted"] {
            let figure = figures[mode]
            for direction in ["upload", "download"] {
                let rate = medianOf(figure?["\(direction)_trials_mb_per_s"], "\(mode) \(direction)")
                #expect(rate != nil && figure?["\(direction)_mb_per_s"]?.doubleValue == rate, "\(mode) \(direction)")
                if let rate, let cp, let ratio = figure?["\(direction)_ratio_to_cp"]?.doubleValue {
                    #expect(abs(ratio - rate / cp) < 0.01 + ratio * 0.01, "\(mode) \(direction): \(ratio) vs \(rate) / \(cp)")
                } else {
                    Issue.record("\(mode) \(direction): no ratio")
                }
            }
            let memory = figure?["peak_rss_mib"]?.objectValue
            for process in ["blob", "gateway", "storage", "query-1", "replicator", "sofa (client)"] {
                #expect((memory?[process]?.doubleValue ?? 0) > 1, "\(mode): \(process) in \(String(describing: memory))")
            }
        }
    }

    /// `sofa blob put DB FILE`, `sofa blob stat`, `sofa blob get DB KEY -o FILE` and to stdout.
    @Test func cliPutGetStat() async throws {
        try await Cluster.with { cluster in
            _ = try await cluster.client.createDatabase("blobs")
            let gateway = cluster.supervisor.gatewayEndpoint
            let content = pseudoRandomBytes(700_001, seed: 5)
            let file = cluster.directory.appendingPathComponent("upload.bin")
            try Data(content).write(to: file)
            let key = try sha1sumKey(of: file)

            let put = try await runSofa(["blob", "put", "blobs", file.path, "--expect", key], gateway: gateway)
            #expect(put.status == 0, "\(put.err)")
            #expect(try JSON.parse(Array(put.out.utf8)) == .object(JSONObject([("key", .string(key)), ("length", 700_001)])))

            let stat = try await runSofa(["blob", "stat", "blobs", key], gateway: gateway)
            #expect(stat.status == 0, "\(stat.err)")
            #expect(try JSON.parse(Array(stat.out.utf8)) == .object(JSONObject([("key", .string(key)), ("length", 700_001)])))

            let out = cluster.directory.appendingPathComponent("download.bin")
            let get = try await runSofa(["blob", "get", "blobs", key, "-o", out.path], gateway: gateway)
            #expect(get.status == 0, "\(get.err)")
            #expect(try Data(contentsOf: out) == Data(content))

            let text = cluster.directory.appendingPathComponent("hello.txt")
            try Data("hello, blob\n".utf8).write(to: text)
            let textPut = try await runSofa(["blob", "put", "blobs", text.path], gateway: gateway)
            let textKey = try #require(try JSON.parse(Array(textPut.out.utf8)).objectValue?["key"]?.stringValue)
            let toStdout = try await runSofa(["blob", "get", "blobs", textKey], gateway: gateway)
            #expect(toStdout.status == 0, "\(toStdout.err)")
            #expect(toStdout.out == "hello, blob\n")

            let wrong = try await runSofa(["blob", "put", "blobs", text.path, "--expect", key], gateway: gateway)
            #expect(wrong.status != 0)
            let missing = try await runSofa(["blob", "get", "blobs", "sha1-../../etc/passwd"], gateway: gateway)
            #expect(missing.status != 0)
        }
    }
}

// MARK: Helpers

/// Deterministic bytes (xorshift64*), different for each seed.
///
/// Eight bytes a step, written through a raw pointer: the tests are built unoptimised, and a
/// byte-at-a-time `map` over 64 MiB kept a thread of the suite's small cooperative pool busy
/// for seconds, starving the tests waiting on it.
func pseudoRandomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { raw in
        var offset = 0
        while offset < count {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            let word = (state &* 0x2545_F491_4F6C_DD1D).littleEndian
            if count - offset >= 8 {
                raw.storeBytes(of: word, toByteOffset: offset, as: UInt64.self)
            } else {
                withUnsafeBytes(of: word) { raw.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: count - offset) }
            }
            offset += 8
        }
    }
    return bytes
}

/// The blob key computed by `/usr/bin/sha1sum`, independently of Sofa's own SHA-1 code.
func sha1sumKey(of file: URL) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sha1sum")
    process.arguments = [file.path]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let hex = String(decoding: output, as: UTF8.self).prefix(40)
    var digest: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        digest.append(try #require(UInt8(hex[index..<next], radix: 16)))
        index = next
    }
    try #require(digest.count == 20)
    return "sha1-" + Data(digest).base64EncodedString()
}

func sha1sumKey(of content: [UInt8], in directory: URL) throws -> String {
    let file = directory.appendingPathComponent("sha1-\(UUID().uuidString)")
    try Data(content).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    return try sha1sumKey(of: file)
}

private func fileName(_ key: String) -> String {
    String(key.dropFirst(5)).replacingOccurrences(of: "/", with: "_") + ".blob"
}

/// Every file of a database's Attachments/ folder except the key-state file, sorted.
private func attachmentFiles(_ cluster: Cluster, _ db: String) throws -> [String] {
    let folder = cluster.directory.appendingPathComponent("data/\(db).sofa/Attachments").path
    guard FileManager.default.fileExists(atPath: folder) else { return [] }
    return try FileManager.default.contentsOfDirectory(atPath: folder).filter { !$0.hasPrefix(".") }.sorted()
}

/// Yields `content` in chunks, calling `onChunk` with each chunk's index before yielding it.
private struct BytesStream: AsyncSequence {
    typealias Element = [UInt8]
    let content: [UInt8]
    let chunk: Int
    let onChunk: @Sendable (Int) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        let stream: BytesStream
        var index = 0
        mutating func next() async -> [UInt8]? {
            let start = index * stream.chunk
            guard start < stream.content.count else { return nil }
            stream.onChunk(index)
            index += 1
            return Array(stream.content[start..<Swift.min(start + stream.chunk, stream.content.count)])
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(stream: self) }
}
