public import Foundation
public import SofaCore
internal import Synchronization

/// Random access to one blob's content, plain or encrypted (layout in `BlobFormat`).
///
/// It holds an open descriptor, so it keeps reading the content it was opened on even if the
/// file is replaced (rekey) or deleted meanwhile. Encrypted reads decrypt only the 4 KiB blocks
/// they touch (the last one is kept for the next read). Not thread-safe: one reader per thread.
public final class BlobReader {
    /// The key the blob was opened by (nil for a file opened by path).
    public let key: BlobKey?
    /// The plaintext length.
    public let size: UInt64
    public let isEncrypted: Bool

    private let file: PosixFile
    private let cipher: AESCBC?
    private let cipherLength: UInt64
    /// Blocks read at once (1 MiB, `ReadBuffers.size`), with direct I/O where the file system allows it.
    private static let batchBlocks = ReadBuffers.size / BlobFormat.blockSize
    /// Plain reads at least this long read the file with direct I/O (past the page cache).
    private static let directThreshold = 256 << 10
    private let scratch: UnsafeMutableRawBufferPointer
    private let block: UnsafeMutableRawBufferPointer
    private var cachedBlock: UInt64?

    /// Opens a blob file directly (e.g. one written by Couchbase Lite), `encryptionKey` nil for a
    /// plain file. A wrong key, or a file that is not in the encrypted format, is `.crypto`.
    public convenience init(file url: URL, encryptionKey: EncryptionKey?) throws {
        let file = try PosixFile.openForReading(url.path, notFound: "no blob file at \(url.path)")
        try self.init(file: file, key: nil, encryptionKey: encryptionKey)
    }

    public init(file: PosixFile, key: BlobKey?, encryptionKey: EncryptionKey?) throws {
        self.file = file
        self.key = key
        isEncrypted = encryptionKey != nil
        let fileSize = try file.size
        let name = key.map { "blob \($0)" } ?? "blob file \(file.path)"
        if let encryptionKey {
            let overhead = UInt64(BlobFormat.nonceSize + BlobFormat.aesBlock)
            guard fileSize >= overhead, (fileSize - UInt64(BlobFormat.nonceSize)) % 16 == 0 else {
                throw SofaError(.crypto, "\(name) is not an encrypted blob (\(fileSize) bytes is not a possible encrypted size)")
            }
            cipher = try AESCBC(key: encryptionKey, encrypt: false)
            cipherLength = fileSize - UInt64(BlobFormat.nonceSize)
        } else {
            cipher = nil
            cipherLength = fileSize
        }
        scratch = ReadBuffers.take()
        block = .allocate(byteCount: BlobFormat.blockSize, alignment: 16)
        if let cipher {
            size = cipherLength - UInt64(try Self.padLength(file: file, cipher: cipher, cipherLength: cipherLength, name: name))
        } else {
            size = fileSize
        }
    }

    deinit {
        ReadBuffers.give(scratch)
        block.deallocate()
    }

    /// Reads up to `buffer.count` bytes at `offset` into `buffer`; returns how many (fewer only at
    /// the end of the blob, 0 at or past it).
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        guard offset < size, buffer.count > 0 else { return 0 }
        let count = Int(min(UInt64(buffer.count), size - offset))
        guard let cipher else {
            let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count])
            if count >= Self.directThreshold, try readDirect(into: target, at: offset) { return count }
            let n = try file.read(into: target, at: offset)
            guard n == count else { throw SofaError(.corruptData, "blob file \(file.path) shrank while being read") }
            return n
        }
        let blockSize = UInt64(BlobFormat.blockSize)
        let lastNeeded = (offset + UInt64(count) - 1) / blockSize
        var done = 0
        /// Copies what the read needs from the block in `block` (number `index`).
        func take(_ index: UInt64) {
            let position = offset + UInt64(done)
            let within = Int(position - index * blockSize)
            let n = min(count - done, BlobFormat.blockSize - within)
            UnsafeMutableRawBufferPointer(rebasing: buffer[done..<done + n])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: block[within..<within + n]))
            done += n
        }
        while done < count {
            let first = (offset + UInt64(done)) / blockSize
            if cachedBlock == first {
                take(first)
                continue
            }
            // One read for up to a batch of blocks, then each decrypted and copied in turn.
            let last = min(lastNeeded, first + UInt64(Self.batchBlocks) - 1)
            let start = first * blockSize
            let end = min(cipherLength, (last + 1) * blockSize)
            let n: Int
            if last > first, let direct = try file.readDirect(into: UnsafeMutableRawBufferPointer(
                rebasing: scratch[0..<Self.alignedUp(Int(end - start))]), at: start) {
                n = min(direct, Int(end - start))  // past the ciphertext: the nonce
            } else {
                n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<Int(end - start)]), at: start)
            }
            guard n == Int(end - start) else { throw SofaError(.corruptData, "blob file \(file.path) shrank while being read") }
            for index in first...last {
                let from = Int((index - first) * blockSize)
                let to = min(n, from + BlobFormat.blockSize)
                try BlobFormat.iv(block: index).withUnsafeBytes { iv in
                    try cipher.run(iv: iv, UnsafeRawBufferPointer(rebasing: scratch[from..<to]),
                                   into: UnsafeMutableRawBufferPointer(rebasing: block[0..<(to - from)]))
                }
                cachedBlock = index
                take(index)
            }
        }
        return count
    }

    /// Fills `target` (all of it lies within the plain file) from `offset` with direct reads of
    /// whole aligned blocks into `scratch`, each copied out; false (nothing read) where the file
    /// system does not allow direct I/O. A large read of a blob seldom finds it in the page cache
    /// (it was written direct) and does not fill the cache with it either.
    private func readDirect(into target: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Bool {
        let alignment = UInt64(PosixFile.directAlignment)
        var done = 0
        while done < target.count {
            let position = offset + UInt64(done)
            let start = position / alignment * alignment
            let skip = Int(position - start)
            let want = min(scratch.count, Self.alignedUp(skip + target.count - done))
            guard let n = try file.readDirect(into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<want]), at: start) else {
                if done == 0 { return false }
                // Refused midway: the rest through the page cache.
                let rest = UnsafeMutableRawBufferPointer(rebasing: target[done...])
                guard try file.read(into: rest, at: position) == rest.count else {
                    throw SofaError(.corruptData, "blob file \(file.path) shrank while being read")
                }
                return true
            }
            let usable = min(n - skip, target.count - done)
            guard usable > 0 else { throw SofaError(.corruptData, "blob file \(file.path) shrank while being read") }
            UnsafeMutableRawBufferPointer(rebasing: target[done..<done + usable])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: scratch[skip..<skip + usable]))
            done += usable
        }
        return true
    }

    private static func alignedUp(_ count: Int) -> Int {
        (count + PosixFile.directAlignment - 1) / PosixFile.directAlignment * PosixFile.directAlignment
    }

    /// `length` bytes at `offset` (fewer at the end of the blob).
    public func read(at offset: UInt64, length: Int) throws -> [UInt8] {
        let count = offset >= size ? 0 : Int(min(UInt64(max(0, length)), size - offset))
        return try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = try read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
        }
    }

    /// Calls `body` with consecutive chunks of at most `chunkSize` bytes covering `length` bytes
    /// from `offset` (to the end by default). The chunk's memory is reused: copy what you keep.
    public func forEachChunk(from offset: UInt64 = 0, length: UInt64? = nil, chunkSize: Int = 64 * 1024,
                             _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        precondition(chunkSize > 0)
        let available = offset < size ? size - offset : 0
        let end = offset + min(length ?? available, available)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var position = offset
        while position < end {
            let want = Int(min(UInt64(chunkSize), end - position))
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: position)
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            position += UInt64(n)
        }
    }

    /// Reads the whole content once and checks that its SHA-1 is `expected` (by default the key
    /// it was opened by): `.corruptData` if not. With a wrong key that slipped past the padding
    /// check (about 1 in 256), this is what catches it.
    public func verify(expected: BlobKey? = nil) throws {
        guard let expected = expected ?? key else { return }
        let sha = SHA1Context()
        try forEachChunk { sha.update($0) }
        let actual = sha.finish()
        guard actual == expected else {
            throw SofaError(.corruptData, "blob \(expected) does not match its content (SHA-1 \(actual))" +
                            (isEncrypted ? ": wrong encryption key or corrupt file" : ""))
        }
    }

    /// The whole content, checked against its key. For small blobs: the content is in memory.
    public func contents() throws -> [UInt8] {
        let bytes = try read(at: 0, length: Int(size))
        if let key, BlobKey.of(bytes) != key {
            throw SofaError(.corruptData, "blob \(key) does not match its content" + (isEncrypted ? ": wrong encryption key or corrupt file" : ""))
        }
        return bytes
    }

    /// Decrypts the last 16 bytes of the ciphertext and checks their PKCS#7 padding. A wrong key
    /// gives random bytes, which pass this check about once in 256 tries; `verify` catches the rest.
    private static func padLength(file: PosixFile, cipher: AESCBC, cipherLength: UInt64, name: String) throws -> Int {
        let blockSize = UInt64(BlobFormat.blockSize)
        let lastBlock = (cipherLength - 1) / blockSize
        let lastStart = lastBlock * blockSize
        let tailStart = cipherLength - 16
        var iv = BlobFormat.iv(block: lastBlock)
        var input = [UInt8](repeating: 0, count: 16)
        var plain = [UInt8](repeating: 0, count: 16)
        if tailStart > lastStart {
            try iv.withUnsafeMutableBytes { _ = try file.read(into: $0, at: tailStart - 16) }
        }
        guard try input.withUnsafeMutableBytes({ try file.read(into: $0, at: tailStart) }) == 16 else {
            throw SofaError(.corruptData, "\(name) is truncated")
        }
        try iv.withUnsafeBytes { iv in
            try input.withUnsafeBytes { input in try plain.withUnsafeMutableBytes { try cipher.run(iv: iv, input, into: $0) } }
        }
        let pad = Int(plain[15])
        guard (1...16).contains(pad), plain[(16 - pad)...].allSatisfy({ $0 == UInt8(pad) }) else {
            throw SofaError(.crypto, "cannot decrypt \(name): wrong encryption key, or not an encrypted blob (bad padding)")
        }
        return pad
    }
}

/// The 1 MiB read buffers of `BlobReader`s, kept for the next reader rather than freed: sofa-blob
/// opens a reader per ranged read, and a fresh megabyte each time beside the chunks in flight
/// left holes in its heap that the next chunk's buffers just missed (its heap grew 8 MiB at a
/// time at such allocations). At most `kept` wait here; more readers at once allocate their own.
enum ReadBuffers {
    static let size = 1 << 20
    static let kept = 4

    /// A free buffer. Unchecked: a raw pointer is not `Sendable`, and the compiler cannot follow
    /// a buffer handed from a reader's `deinit` to the list and on to the next reader.
    private struct Buffer: @unchecked Sendable {  // safe: one owner at a time (a reader, or the list under its mutex)
        let memory: UnsafeMutableRawBufferPointer
    }

    private static let free = Mutex<[Buffer]>([])

    static func take() -> UnsafeMutableRawBufferPointer {
        if let buffer = free.withLock({ $0.popLast() }) { return buffer.memory }
        return .allocate(byteCount: size, alignment: PosixFile.directAlignment)
    }

    static func give(_ memory: UnsafeMutableRawBufferPointer) {
        let kept = free.withLock { free in
            guard free.count < Self.kept else { return false }
            free.append(Buffer(memory: memory))
            return true
        }
        if !kept { memory.deallocate() }
    }
}
