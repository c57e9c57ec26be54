import SofaCore
internal import Dispatch
internal import Synchronization

/// The layout of a blob file, as Couchbase Lite / LiteCore writes it.
///
/// Plain store: the file is the content, byte for byte.
///
/// Encrypted store (AES-256-CBC, the database key used as the AES key as is):
///
///     block 0 | block 1 | … | block k | nonce
///
/// * The plaintext is cut into 4096-byte blocks; block `i` is encrypted on its own with the IV
///   `00 00 00 00 00 00 00 00` + `i` as a 64-bit big-endian integer.
/// * Every full 4096-byte block is encrypted without padding. The last block — the 0…4095 bytes
///   left over, so an empty one when the length is a multiple of 4096, including 0 — gets PKCS#7
///   padding (1…16 bytes of the pad length), so its ciphertext is 16…4096 bytes.
/// * 32 random bytes (the nonce; stored, not used for the key) end the file.
///
/// So the ciphertext is `plain / 16 * 16 + 16` bytes and the file 32 more; the plaintext length
/// is the ciphertext length minus the pad length found by decrypting the last 16 bytes.
///
/// Example: the 37 bytes `This is a blob to store in the store!` → block 0 = 37 bytes + 11 bytes
/// of `0b`, encrypted with IV `00…00` to 48 bytes, then the nonce: an 80-byte file.
enum BlobFormat {
    static let blockSize = 4096
    static let nonceSize = 32
    static let aesBlock = 16

    /// The IV of block `index`.
    static func iv(block index: UInt64) -> [UInt8] {
        [UInt8](repeating: 0, count: 8) + (0..<8).map { UInt8(truncatingIfNeeded: index >> (56 - 8 * UInt64($0))) }
    }

    static func cipherLength(plainLength n: UInt64) -> UInt64 { n / 16 * 16 + 16 }

    /// The size of the file holding `plainLength` bytes.
    static func fileLength(plainLength n: UInt64, encrypted: Bool) -> UInt64 {
        encrypted ? cipherLength(plainLength: n) + UInt64(nonceSize) : n
    }
}

/// Streams content into a file in the store's form (plain or encrypted) while keeping its SHA-1.
/// Output is buffered and written in chunks of 1 MiB; nothing else of the content is kept.
/// Where the file system allows it, the chunks are written with direct I/O (past the page
/// cache, from a block-aligned buffer), and only the tail of the file goes through the cache.
final class BlobEncoder {
    private static let outputCapacity = 256 * BlobFormat.blockSize
    /// Every this many bytes written, their write-back to the disk is started, so that it runs
    /// while the rest arrives and `finish`'s fsync is short.
    private static let writeBackStep: UInt64 = 8 << 20

    let file: PosixFile
    private let sha = SHA1Context()
    private let cipher: AESCBC?
    private let output: UnsafeMutableRawBufferPointer
    private var outputCount = 0
    /// Plaintext of the current block, not yet encrypted (encrypted stores only).
    private let pending: UnsafeMutableRawBufferPointer
    private var pendingCount = 0
    private var blockIndex: UInt64 = 0
    private(set) var length: UInt64 = 0
    /// Bytes of the file written, and how many of them are already on their way to the disk.
    private var fileLength: UInt64 = 0
    private var writeBackStarted: UInt64 = 0

    init(file: PosixFile, key: EncryptionKey?) throws {
        self.file = file
        cipher = try key.map { try AESCBC(key: $0, encrypt: true) }
        output = .allocate(byteCount: Self.outputCapacity, alignment: PosixFile.directAlignment)
        pending = .allocate(byteCount: BlobFormat.blockSize, alignment: 16)
        file.setDirect(true)
    }

    deinit {
        output.deallocate()
        pending.deallocate()
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        length += UInt64(bytes.count)
        guard bytes.count >= Self.parallelThreshold else {
            sha.update(bytes)
            return try store(bytes)
        }
        // A large piece is hashed on one thread while it is encrypted and written on another:
        // the SHA-1 and the copy into the page cache each take about as long as the other.
        // The two halves touch disjoint state (the SHA-1 context; the cipher, buffers and file)
        // and both end before this call returns, while `bytes` is valid.
        nonisolated(unsafe) let encoder = self, piece = bytes
        let failure = Mutex<(any Error)?>(nil)
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            if part == 0 {
                encoder.sha.update(piece)
            } else {
                do { try encoder.store(piece) } catch { failure.withLock { $0 = error } }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// Pieces at least this big are hashed and stored at once.
    private static let parallelThreshold = 128 << 10

    /// The bytes in the store's form, on their way to the file.
    private func store(_ bytes: UnsafeRawBufferPointer) throws {
        guard let cipher else { return try writePlain(bytes) }
        var rest = bytes[...]
        while !rest.isEmpty {
            Self.fill(pending, &pendingCount, from: &rest)
            if pendingCount == BlobFormat.blockSize { try encryptPending(cipher, padded: false) }
        }
    }

    /// Moves as many bytes from the front of `rest` into `buffer` (after its first `count`) as fit.
    private static func fill(_ buffer: UnsafeMutableRawBufferPointer, _ count: inout Int, from rest: inout Slice<UnsafeRawBufferPointer>) {
        let n = min(rest.count, buffer.count - count)
        UnsafeMutableRawBufferPointer(rebasing: buffer[count..<count + n]).copyMemory(from: UnsafeRawBufferPointer(rebasing: rest.prefix(n)))
        count += n
        rest = rest.dropFirst(n)
    }

    /// Pads and encrypts the last block, appends the nonce, writes everything and fsyncs.
    /// Returns the content's key; the encoder cannot be written to afterwards.
    func finish() throws -> BlobKey {
        if let cipher {
            try encryptPending(cipher, padded: true)
            try randomBytes(BlobFormat.nonceSize).withUnsafeBytes { try append($0) }
        }
        try flush()
        try file.sync()
        return sha.finish()
    }

    private func writePlain(_ bytes: UnsafeRawBufferPointer) throws {
        if bytes.count >= Self.outputCapacity && !file.isDirect {
            try flush()
            try writeFile(bytes)
        } else {
            try append(bytes)
        }
    }

    /// Copies `bytes` into the output buffer, writing it out each time it is full (so every
    /// write but the last is a whole, aligned buffer).
    private func append(_ bytes: UnsafeRawBufferPointer) throws {
        var rest = bytes[...]
        while !rest.isEmpty {
            Self.fill(output, &outputCount, from: &rest)
            if outputCount == Self.outputCapacity { try flush() }
        }
    }

    private func encryptPending(_ cipher: AESCBC, padded: Bool) throws {
        var count = pendingCount
        if padded {
            let pad = BlobFormat.aesBlock - count % BlobFormat.aesBlock
            for i in count..<count + pad { pending[i] = UInt8(pad) }
            count += pad
        }
        if outputCount + count > Self.outputCapacity { try flush() }
        let iv = BlobFormat.iv(block: blockIndex)
        try iv.withUnsafeBytes { iv in
            try cipher.run(iv: iv, UnsafeRawBufferPointer(rebasing: pending[0..<count]),
                           into: UnsafeMutableRawBufferPointer(rebasing: output[outputCount..<outputCount + count]))
        }
        outputCount += count
        pendingCount = 0
        blockIndex += 1
    }

    private func flush() throws {
        guard outputCount > 0 else { return }
        // The tail of the file (not a whole number of blocks) goes through the page cache.
        if outputCount % PosixFile.directAlignment != 0 { file.setDirect(false) }
        try writeFile(UnsafeRawBufferPointer(rebasing: output[0..<outputCount]))
        outputCount = 0
    }

    private func writeFile(_ bytes: UnsafeRawBufferPointer) throws {
        try file.write(bytes)
        fileLength += UInt64(bytes.count)
        if !file.isDirect && fileLength - writeBackStarted >= Self.writeBackStep {
            try file.startWriteBack(offset: writeBackStarted, length: fileLength - writeBackStarted)
            writeBackStarted = fileLength
        }
    }
}
