public import SofaCore
import Dispatch

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
public enum BlobFormat {
    public static let blockSize = 4096
    public static let nonceSize = 32
    public static let aesBlock = 16

    /// The IV of block `index`.
    public static func iv(block index: UInt64) -> [UInt8] {
        [UInt8](repeating: 0, count: 8) + (0..<8).map { UInt8(truncatingIfNeeded: index >> (56 - 8 * UInt64($0))) }
    }

    public static func cipherLength(plainLength n: UInt64) -> UInt64 { n / 16 * 16 + 16 }

    /// The size of the file holding `plainLength` bytes.
    public static func fileLength(plainLength n: UInt64, encrypted: Bool) -> UInt64 {
        encrypted ? cipherLength(plainLength: n) + UInt64(nonceSize) : n
    }
}

/// Streams content into a file in the store's form (plain or encrypted) while keeping its SHA-1.
/// Output is buffered and written in chunks of 1 MiB; nothing else of the content is kept.
/// Where the file system allows it, the chunks are written with direct I/O (past the page
/// cache, from a block-aligned buffer) by a thread of their own while the next one fills (two
/// buffers), and only the tail of the file goes through the cache. Large pieces are hashed on a
/// second thread while they are stored (and, encrypted, the two threads share the encryption).
public final class BlobEncoder {
    private static let outputCapacity = 256 * BlobFormat.blockSize
    /// Every this many bytes written, their write-back to the disk is started, so that it runs
    /// while the rest arrives and `finish`'s fsync is short.
    private static let writeBackStep: UInt64 = 8 << 20

    public let file: PosixFile
    private let sha = SHA1Context()
    private let key: EncryptionKey?
    private let cipher: AESCBC?
    /// Cipher contexts of the slices a large piece is encrypted in (made when first needed).
    private var sliceCiphers: [AESCBC] = []
    /// The buffer being filled, and the one the writer's thread may be writing from.
    private var output: UnsafeMutableRawBufferPointer
    private var spare: UnsafeMutableRawBufferPointer
    private var outputCount = 0
    /// Direct writes of full buffers run on their own thread while the next buffer fills; at
    /// most one is in flight, and every other use of the file waits for it (`settle`).
    private let writer = DispatchQueue(label: "sofa-blob.encoder-write")
    private var pendingWrite: SharedTasks?
    /// Runs the SHA-1 of large pieces (and slices of their encryption) beside the caller's thread.
    private let hasher = DispatchQueue(label: "sofa-blob.encoder-hash")
    /// Whether the file takes direct writes (read from the file only while no write is in flight).
    private var direct = false
    /// Plaintext of the current block, not yet encrypted (encrypted stores only).
    private let pending: UnsafeMutableRawBufferPointer
    private var pendingCount = 0
    private var blockIndex: UInt64 = 0
    public private(set) var length: UInt64 = 0
    /// Bytes of the file written, and how many of them are already on their way to the disk.
    private var fileLength: UInt64 = 0
    private var writeBackStarted: UInt64 = 0

    public init(file: PosixFile, key: EncryptionKey?) throws {
        self.file = file
        self.key = key
        cipher = try key.map { try AESCBC(key: $0, encrypt: true) }
        output = .allocate(byteCount: Self.outputCapacity, alignment: PosixFile.directAlignment)
        spare = .allocate(byteCount: Self.outputCapacity, alignment: PosixFile.directAlignment)
        pending = .allocate(byteCount: BlobFormat.blockSize, alignment: 16)
        direct = file.setDirect(true)
    }

    deinit {
        try? pendingWrite?.finish()
        output.deallocate()
        spare.deallocate()
        pending.deallocate()
    }

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        length += UInt64(bytes.count)
        guard bytes.count >= Self.parallelThreshold else {
            sha.update(bytes)
            return try store(bytes)
        }
        guard let cipher else { return try hashAndStorePlain(bytes) }
        // Encrypted: the SHA-1 of the whole piece runs alongside the encryption of its whole
        // blocks, cut into slices (blocks are independent: each has its own IV), so on two cores
        // the 1 GB/s of AES-CBC is no longer one thread's work. A block begun by the piece before
        // is completed first, and the bytes after the last whole block wait for the next piece.
        var rest = bytes[...]
        if pendingCount > 0 {
            Self.fill(pending, &pendingCount, from: &rest)
            if pendingCount == BlobFormat.blockSize { try encryptPending(cipher, padded: false) }
        }
        var unhashed: UnsafeRawBufferPointer? = bytes
        while rest.count >= BlobFormat.blockSize {
            // As many whole blocks as the output buffer has room for (it is flushed when full,
            // and holds whole blocks only until `finish`).
            if outputCount == Self.outputCapacity { try flush() }
            let blocks = min(rest.count, Self.outputCapacity - outputCount) / BlobFormat.blockSize
            let run = UnsafeRawBufferPointer(rebasing: rest.prefix(blocks * BlobFormat.blockSize))
            try hashAndEncrypt(unhashed, blocks: run, into: UnsafeMutableRawBufferPointer(rebasing: output[outputCount..<outputCount + run.count]),
                               firstBlock: blockIndex)
            unhashed = nil
            outputCount += run.count
            blockIndex += UInt64(blocks)
            rest = rest.dropFirst(run.count)
        }
        if let unhashed { sha.update(unhashed) }
        Self.fill(pending, &pendingCount, from: &rest)
        if outputCount == Self.outputCapacity { try flush() }
    }

    /// Pieces at least this big are hashed and stored at once.
    private static let parallelThreshold = 128 << 10
    /// Slices the whole blocks of a piece are cut into for encryption, each with its own cipher
    /// context: this thread takes them from the last, the hashing thread from the first once the
    /// SHA-1 is done.
    private static let slices = 8

    /// Plain: the SHA-1 on the hashing thread while the bytes are copied and written on this one
    /// (they take about as long as each other). Both end before this returns, while `bytes` is valid.
    private func hashAndStorePlain(_ bytes: UnsafeRawBufferPointer) throws {
        nonisolated(unsafe) let encoder = self, piece = bytes
        // Either thread may run either task, one at a time each; this one waits in `finish`
        // meanwhile and touches nothing.
        try SharedTasks(count: 2, on: hasher) { task in
            if task == 0 { encoder.sha.update(piece) } else { try encoder.store(piece) }
        }.finish()
    }

    /// Hashes `whole` (if any) while encrypting `blocks` (whole blocks, numbered from
    /// `firstBlock`) into `target`: the SHA-1 and the slices of blocks are shared by this thread
    /// and the hashing thread. They touch disjoint state (the SHA-1 context; one cipher context
    /// and one range of `target` per slice) and all end before this returns.
    private func hashAndEncrypt(_ whole: UnsafeRawBufferPointer?, blocks: UnsafeRawBufferPointer,
                                into target: UnsafeMutableRawBufferPointer, firstBlock: UInt64) throws {
        let count = blocks.count / BlobFormat.blockSize
        let perSlice = (count + Self.slices - 1) / Self.slices
        if sliceCiphers.isEmpty, let key {
            sliceCiphers = try (0..<Self.slices).map { _ in try AESCBC(key: key, encrypt: true) }
        }
        nonisolated(unsafe) let sha = self.sha, ciphers = sliceCiphers, hashed = whole, input = blocks, output = target
        let first = hashed == nil ? 0 : 1  // task 0 is the SHA-1, when there is one
        try SharedTasks(count: first + Self.slices, on: hasher) { task in
            guard task >= first else { return sha.update(hashed!) }
            let slice = task - first
            for block in min(slice * perSlice, count)..<min((slice + 1) * perSlice, count) {
                let bytes = block * BlobFormat.blockSize..<(block + 1) * BlobFormat.blockSize
                try BlobFormat.iv(block: firstBlock + UInt64(block)).withUnsafeBytes { iv in
                    try ciphers[slice].run(iv: iv, UnsafeRawBufferPointer(rebasing: input[bytes]),
                                           into: UnsafeMutableRawBufferPointer(rebasing: output[bytes]))
                }
            }
        }.finish()
    }

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
    public func finish() throws -> BlobKey {
        if let cipher {
            try encryptPending(cipher, padded: true)
            try randomBytes(BlobFormat.nonceSize).withUnsafeBytes { try append($0) }
        }
        try flush()
        try settle()
        try file.sync()
        return sha.finish()
    }

    private func writePlain(_ bytes: UnsafeRawBufferPointer) throws {
        if bytes.count >= Self.outputCapacity && !direct {
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
        try settle()
        // The tail of the file (not a whole number of blocks) goes through the page cache.
        if outputCount % PosixFile.directAlignment != 0 && direct {
            file.setDirect(false)
            direct = false
        }
        guard direct else {
            try writeFile(UnsafeRawBufferPointer(rebasing: output[0..<outputCount]))
            outputCount = 0
            return
        }
        // A full, aligned buffer: written on the writer's thread while the spare one fills.
        nonisolated(unsafe) let file = self.file, bytes = UnsafeRawBufferPointer(rebasing: output[0..<outputCount])
        pendingWrite = SharedTasks(count: 1, on: writer) { _ in try file.write(bytes) }
        fileLength += UInt64(outputCount)
        swap(&output, &spare)
        outputCount = 0
    }

    /// Waits for the write in flight, if any (or makes it here, if the writer's thread has not
    /// begun it); throws what it failed with.
    private func settle() throws {
        defer { direct = file.isDirect }  // a direct write refused midway falls back to the page cache
        guard let write = pendingWrite else { return }
        pendingWrite = nil
        try write.finish()
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
