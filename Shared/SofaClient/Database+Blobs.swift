internal import SofaFiles
public import SofaCore
public import SofaWire
public import Foundation
internal import CPosix
#if canImport(Glibc)
internal import Glibc
#endif

/// Blobs (attachments): content-addressed byte strings kept by sofa-blob in the database's
/// `Attachments/` folder, keyed by `sha1-` + the base64 of their SHA-1.
///
/// Uploads go in chunks of `blobChunkSize` with up to `blobWindow` chunk calls in flight, so a
/// file or a stream is never whole in memory; downloads are pulled range by range, so a reader
/// that stops reading costs the service nothing.
extension Database {
    public static let blobChunkSize = 1 << 20
    public static let blobWindow = 6

    // MARK: Upload

    /// Stores `bytes`; with `expectedKey`, content that does not hash to it is `.corruptData` and
    /// nothing is stored.
    public func putBlob(_ bytes: [UInt8], expectedKey: String? = nil) async throws(SofaError) -> BlobInfo {
        try await putBlob(BlobChunkSource(whole: bytes), expectedKey: expectedKey)
    }

    /// Stores the contents of a file, read chunk by chunk off the cooperative pool. `progress` is
    /// told the bytes stored so far as chunks are acknowledged.
    public func putBlob(contentsOf url: URL, expectedKey: String? = nil,
                        progress: (@Sendable (_ bytes: UInt64) -> Void)? = nil) async throws(SofaError) -> BlobInfo {
        let reader: FileChunkReader
        do { reader = try FileChunkReader(url: url) } catch {
            throw SofaError(.cantOpenFile, "cannot open \(url.path): \(error.localizedDescription)")
        }
        return try await putBlob(BlobChunkSource { try await reader.next(Self.blobChunkSize) }, expectedKey: expectedKey,
                                 progress: progress)
    }

    /// Stores whatever a sequence of byte chunks (of any sizes) yields, in order. `progress` is
    /// told the bytes stored so far as chunks are acknowledged. `window`: chunk calls in flight
    /// at most (each holds a chunk of `blobChunkSize` and its message until it is answered).
    public func putBlob<S: AsyncSequence>(_ chunks: S, expectedKey: String? = nil, window: Int = Database.blobWindow,
                                          progress: (@Sendable (_ bytes: UInt64) -> Void)? = nil) async throws(SofaError) -> BlobInfo
    where S.Element == [UInt8] {
        let window = max(1, window)
        guard case .blobWriteStarted(let writeID) = try await client.call(.blobWriteBegin(expectedKey: expectedKey ?? ""),
                                                                          database: name) else {
            throw unexpected("blobWriteBegin")
        }
        let length: UInt64
        do {
            length = try await withThrowingTaskGroup(of: (index: Int, bytes: UInt64).self) { group in
                var offset: UInt64 = 0
                var stored: UInt64 = 0
                // Chunks are numbered as they are sent; `oldest` is the first not yet answered.
                // A chunk goes only while it is fewer than `window` ahead of that one: sofa-blob
                // answers a chunk that came ahead of its turn (the gateway and sofa-blob take
                // each chunk in a task of its own, so they can arrive out of order) as soon as it
                // holds it in memory, so counting answers alone let a chunk held up on its way
                // bring ever more chunks to wait in sofa-blob's memory behind it.
                var next = 0, oldest = 0
                var answered = Set<Int>()
                var pending: [UInt8] = []
                pending.reserveCapacity(Self.blobChunkSize)
                func flush(_ group: inout ThrowingTaskGroup<(index: Int, bytes: UInt64), any Error>) async throws {
                    while next - oldest >= window, let sent = try await group.next() {
                        stored += sent.bytes
                        progress?(stored)
                        answered.insert(sent.index)
                        while answered.remove(oldest) != nil { oldest += 1 }
                    }
                    let chunk = pending, at = offset, index = next
                    offset += UInt64(chunk.count)
                    next += 1
                    pending.removeAll(keepingCapacity: true)
                    group.addTask {
                        try await self.sendChunk(writeID, at, chunk)
                        return (index, UInt64(chunk.count))
                    }
                }
                for try await piece in chunks {
                    if pending.isEmpty && piece.count == Self.blobChunkSize {
                        // A whole chunk as it came (a file is read chunk by chunk): sent as is.
                        pending = piece
                        try await flush(&group)
                        continue
                    }
                    var start = piece.startIndex
                    while start < piece.endIndex {
                        let take = min(Self.blobChunkSize - pending.count, piece.endIndex - start)
                        pending.append(contentsOf: piece[start..<(start + take)])
                        start += take
                        if pending.count == Self.blobChunkSize { try await flush(&group) }
                    }
                }
                if !pending.isEmpty { try await flush(&group) }
                for try await sent in group {
                    stored += sent.bytes
                    progress?(stored)
                }
                return offset
            }
        } catch {
            _ = try? await client.call(.blobWriteAbort(writeID: writeID), database: name)
            throw error as? SofaError ?? SofaError(.unexpectedError, "blob upload failed: \(error)")
        }
        guard case .blob(let info) = try await client.call(.blobWriteEnd(writeID: writeID, length: length), database: name) else {
            throw unexpected("blobWriteEnd")
        }
        return info
    }

    private func sendChunk(_ writeID: UInt64, _ offset: UInt64, _ bytes: [UInt8]) async throws(SofaError) {
        _ = try await client.call(.blobWriteChunk(writeID: writeID, offset: offset, bytes: bytes), database: name)
    }

    // MARK: Download

    /// A blob's key and length; `.notFound` if the database does not have it.
    public func blobInfo(_ key: String) async throws(SofaError) -> BlobInfo {
        guard case .blob(let info) = try await client.call(.blobStat(key: key), database: name) else {
            throw unexpected("blobStat")
        }
        return info
    }

    /// `length` bytes of a blob from `offset` (fewer at the end, at most 4 MiB per call), and
    /// the blob's total length.
    public func readBlob(_ key: String, offset: UInt64, length: Int) async throws(SofaError) -> (bytes: [UInt8], totalLength: UInt64) {
        let reply = try await client.call(.blobRead(key: key, offset: offset, length: UInt32(clamping: length)), database: name)
        guard case .blobData(let bytes, let total) = reply else { throw unexpected("blobRead") }
        return (bytes, total)
    }

    /// A whole blob in memory (for small blobs; stream big ones with `blobChunks` or
    /// `downloadBlob`).
    public func blob(_ key: String) async throws(SofaError) -> [UInt8] {
        var result: [UInt8] = []
        for try await chunk in blobChunks(key, chunkSize: 4 << 20) { result += chunk }
        return result
    }

    /// The blob's bytes in chunks of `chunkSize`, each read from the service when asked for.
    public func blobChunks(_ key: String, chunkSize: Int = Database.blobChunkSize) -> BlobChunks {
        BlobChunks(database: self, key: key, chunkSize: max(1, chunkSize))
    }

    /// Writes a blob to `url` (replacing it), chunk by chunk; on failure the file is removed.
    /// `progress` is told the bytes written so far and the blob's length.
    public func downloadBlob(_ key: String, to url: URL,
                             progress: (@Sendable (_ bytes: UInt64, _ total: UInt64) -> Void)? = nil) async throws(SofaError) {
        let writer: FileChunkWriter
        do { writer = try FileChunkWriter(url: url) } catch {
            throw SofaError(.cantOpenFile, "cannot create \(url.path): \(error.localizedDescription)")
        }
        do {
            // Ranged reads pipelined (a window of 6 of 1 MiB), written in order: memory stays
            // bounded by the window, and the round trips overlap.
            let total = try await blobInfo(key).length
            let chunk: UInt64 = 1 << 20
            let window = 6
            let digest = SHA1Stream()
            var nextToRequest: UInt64 = 0
            var nextToWrite: UInt64 = 0
            var arrived: [UInt64: [UInt8]] = [:]
            try await withThrowingTaskGroup(of: (UInt64, [UInt8]).self) { group in
                func request() {
                    guard nextToRequest < total else { return }
                    let offset = nextToRequest
                    let length = Int(min(chunk, total - offset))
                    nextToRequest += UInt64(length)
                    group.addTask {
                        let bytes = try await self.readBlob(key, offset: offset, length: length).bytes
                        guard bytes.count == length else {
                            throw SofaError(.corruptData, "blob \(key): read \(bytes.count) bytes at \(offset), expected \(length)")
                        }
                        return (offset, bytes)
                    }
                }
                for _ in 0..<window { request() }
                while let (offset, bytes) = try await group.next() {
                    arrived[offset] = bytes
                    while let ready = arrived.removeValue(forKey: nextToWrite) {
                        // Hashed here while the writer's thread copies it into the file.
                        async let written: Void = writer.write(ready)
                        digest.update(ready)
                        try await written
                        nextToWrite += UInt64(ready.count)
                        progress?(nextToWrite, total)
                    }
                    request()
                }
            }
            guard nextToWrite == total else { throw SofaError(.corruptData, "blob \(key): wrote \(nextToWrite) of \(total) bytes") }
            try checkDigest(digest.finish(), key: key)
            try await writer.close()
        } catch {
            try? await writer.close()
            try? FileManager.default.removeItem(at: url)
            throw error as? SofaError ?? SofaError(.ioError, "cannot write \(url.path): \(error)")
        }
    }
}

/// A whole downloaded blob must hash to its key: anything else is `.corruptData` (a store
/// that gave other bytes, or damage on the way), never content handed over as good.
func checkDigest(_ digest: [UInt8], key: String) throws(SofaError) {
    let actual = "sha1-" + Data(digest).base64EncodedString()
    guard actual == key else {
        throw SofaError(.corruptData, "blob \(key): the downloaded content's SHA-1 is \(actual); it is corrupt (in the store or in transit)")
    }
}

/// A blob's bytes, pulled range by range: each `next()` makes one `blobRead` call. Read to the
/// end, the content is checked against the key (`.corruptData` instead of the end if it does
/// not match).
public struct BlobChunks: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    public typealias Failure = SofaError
    let database: Database
    let key: String
    let chunkSize: Int

    public struct AsyncIterator: AsyncIteratorProtocol {
        let chunks: BlobChunks
        var offset: UInt64 = 0
        var total: UInt64?
        let digest = SHA1Stream()
        var checked = false

        public mutating func next() async throws(SofaError) -> [UInt8]? { try await next(isolation: nil) }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(SofaError) -> [UInt8]? {
            if let total, offset >= total { return try finish() }
            let (bytes, length) = try await chunks.database.readBlob(chunks.key, offset: offset, length: chunks.chunkSize)
            total = length
            if bytes.isEmpty {
                guard offset >= length else { throw SofaError(.corruptData, "blob \(chunks.key) ended early at \(offset) of \(length) bytes") }
                return try finish()
            }
            offset += UInt64(bytes.count)
            digest.update(bytes)
            return bytes
        }

        /// The end: nil once the content is checked against the key.
        private mutating func finish() throws(SofaError) -> [UInt8]? {
            if !checked {
                checked = true
                try checkDigest(digest.finish(), key: chunks.key)
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(chunks: self) }
}

/// An async sequence of chunks produced by a closure (nil = the end).
struct BlobChunkSource: AsyncSequence {
    typealias Element = [UInt8]
    let produce: () async throws -> [UInt8]?

    init(_ produce: @escaping () async throws -> [UInt8]?) { self.produce = produce }

    init(whole bytes: [UInt8]) {
        let box = OnceBox(bytes)
        self.produce = { box.take() }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let produce: () async throws -> [UInt8]?
        mutating func next() async throws -> [UInt8]? { try await produce() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(produce: produce) }
}

private final class OnceBox {
    var value: [UInt8]?
    init(_ value: [UInt8]) { self.value = value }
    func take() -> [UInt8]? { defer { value = nil }; return value }
}

/// Reads a file in chunks on its own serial queue (file reads block). The handle closes its
/// descriptor when the reader goes.
final class FileChunkReader: Sendable {
    private let handle: Confined<FileHandle>

    init(url: URL) throws { handle = Confined(try FileHandle(forReadingFrom: url), label: "sofa.client.blob-read") }

    /// The next `count` bytes (fewer only at the end), or nil at the end; read straight into the
    /// array that is returned.
    func next(_ count: Int) async throws -> [UInt8]? {
        try await handle.run { (handle) -> Result<[UInt8]?, any Error> in
            let fd = handle.fileDescriptor
            return Result {
                let bytes = try [UInt8](unsafeUninitializedCapacity: count) { buffer, filled in
                    filled = 0
                    while filled < count {
                        let n = read(fd, buffer.baseAddress! + filled, count - filled)
                        if n < 0 {
                            if errno == EINTR { continue }
                            throw SofaError(.posix, errno, "read: \(String(cString: strerror(errno)))")
                        }
                        if n == 0 { break }
                        filled += n
                    }
                }
                return bytes.isEmpty ? nil : bytes
            }
        }.get()
    }
}

/// Writes a file in chunks on its own serial queue (file writes block). Chunks that are a whole
/// number of 4 KiB blocks at an aligned offset (every chunk of a download but the last) are
/// written with direct I/O where the file system allows it — past the page cache, from an
/// aligned buffer — so a large download costs no copy into the cache and `close`'s fsync has
/// little to do; otherwise the write-back of what is written is started every few MiB.
final class FileChunkWriter: Sendable {
    private let sink: Confined<ChunkSink>

    init(url: URL) throws {
        sink = Confined(try ChunkSink(url: url), label: "sofa.client.blob-write")
    }

    func write(_ bytes: [UInt8]) async throws {
        try await sink.run { (sink) -> Result<Void, any Error> in Result { try sink.write(bytes) } }.get()
    }

    /// Makes the file durable; the descriptor closes with the writer.
    func close() async throws {
        try await sink.run { (sink) -> Result<Void, any Error> in Result { try sink.file.sync() } }.get()
    }
}

/// The file, its aligned buffer and what was written of it: `FileChunkWriter`'s, on its queue.
final class ChunkSink {
    private static let writeBackStep: UInt64 = 8 << 20
    let file: PosixFile
    private var alignedBuffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private var written: UInt64 = 0
    private var writeBackStarted: UInt64 = 0

    init(url: URL) throws {
        file = try PosixFile.replace(url.path)
        file.setDirect(true)
    }

    deinit { alignedBuffer.deallocate() }

    func write(_ bytes: [UInt8]) throws {
        let alignment = PosixFile.directAlignment
        if file.isDirect, bytes.count % alignment == 0, written % UInt64(alignment) == 0 {
            if alignedBuffer.count < bytes.count {
                alignedBuffer.deallocate()
                alignedBuffer = .allocate(byteCount: bytes.count, alignment: alignment)
            }
            let buffer = UnsafeMutableRawBufferPointer(rebasing: alignedBuffer[0..<bytes.count])
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
            try file.write(UnsafeRawBufferPointer(buffer))
        } else {
            file.setDirect(false)
            try bytes.withUnsafeBytes { try file.write($0) }
        }
        written += UInt64(bytes.count)
        guard !file.isDirect, written - writeBackStarted >= Self.writeBackStep else { return }
        try file.startWriteBack(offset: writeBackStarted, length: written - writeBackStarted)
        writeBackStarted = written
    }
}
