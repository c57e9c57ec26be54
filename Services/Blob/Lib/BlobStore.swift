public import SofaFiles
public import Foundation
public import SofaCore
import Synchronization

/// A database's blobs: one file per blob in its `Attachments/` folder, named for the SHA-1 of the
/// content (`BlobKey.fileName`), plain or encrypted with the database key (`BlobFormat`).
///
/// The folder also holds `.sofa-keystate` (see `BlobStore+KeyState.swift`), which records which
/// key the blobs are in (as a check value, never the key) and the progress of a rekey, and the
/// writers' temporary files.
///
/// All methods are synchronous file I/O: call them from a thread that may block, not from the
/// cooperative pool. A store may be used from any number of threads; one `BlobWriter` or
/// `BlobReader` belongs to one thread at a time.
public final class BlobStore: Sendable {
    struct State {
        var key: EncryptionKey?
        /// Bumped by every rekey, so that a writer started before one cannot install after it.
        var epoch = 0
    }

    /// The `Attachments/` folder.
    public let directory: URL
    let path: String
    /// Guards the key and makes rekey exclusive of installs, opens and deletes. Held only for
    /// short file operations, except by rekey, which holds it throughout.
    let state: Mutex<State>

    /// Opens (creating it if needed) the store in `directory` with the database's key (nil for a
    /// plain store). Removes temporary files left by a crash and finishes or rolls back a rekey
    /// that a crash interrupted. A key that does not match the blobs is a `.crypto` error.
    public convenience init(directory: URL, key: EncryptionKey?) throws {
        try self.init(directory: directory, candidates: [key])
    }

    /// Opens the store with whichever of `candidates` (nil: plain) its blobs are in once an
    /// interrupted rekey is finished or rolled back; a folder with no state yet takes the first.
    /// This is how sofa-blob opens a store whose key file names both the key before and the key
    /// after a rekey that a crash may have interrupted.
    public init(directory: URL, candidates: [EncryptionKey?]) throws {
        precondition(!candidates.isEmpty, "a blob store needs at least one candidate key (nil for plain)")
        self.directory = directory
        path = directory.path
        state = Mutex(State(key: candidates[0]))
        try makeDirectory(path)
        try sweepTemporaryFiles()
        let key = try openKeyState(candidates: candidates)
        state.withLock { $0.key = key }
    }

    /// The key the blobs are in (nil: plain).
    public var key: EncryptionKey? { state.withLock { $0.key } }

    public var isEncrypted: Bool { state.withLock { $0.key != nil } }

    // MARK: Writing

    /// A writer for a new blob.
    public func writer() throws -> BlobWriter {
        let (key, epoch) = state.withLock { ($0.key, $0.epoch) }
        let tempPath = path + "/incoming-" + (try randomBytes(12)).hexString + ".tmp"
        return try BlobWriter(store: self, tempPath: tempPath, file: try PosixFile.create(tempPath), key: key, epoch: epoch)
    }

    /// Stores `content` in one go (for small blobs; stream big ones through `writer()`).
    @discardableResult
    public func put(_ content: [UInt8], expected: BlobKey? = nil) throws -> BlobKey {
        let writer = try writer()
        try writer.write(content)
        return try writer.install(expected: expected)
    }

    /// Renames a finished, fsynced temporary file into place and fsyncs the folder.
    func install(tempPath: String, as key: BlobKey, epoch: Int) throws {
        try state.withLock { state in
            guard state.epoch == epoch else {
                throw SofaError(.busy, "the blob store was rekeyed while blob \(key) was being written: write it again")
            }
            try renameFile(tempPath, filePath(key))
        }
        try syncDirectory(path)
    }

    // MARK: Reading

    /// Opens a blob for reading; `.notFound` if the store does not have it, `.crypto` if it cannot
    /// be decrypted with the store's key.
    public func reader(for key: BlobKey) throws -> BlobReader {
        try state.withLock { state in
            let file = try PosixFile.openForReading(filePath(key), notFound: "no blob \(key)")
            return try BlobReader(file: file, key: key, encryptionKey: state.key)
        }
    }

    /// The blob's length in bytes (its plaintext length in an encrypted store).
    public func size(of key: BlobKey) throws -> UInt64 { try reader(for: key).size }

    /// `length` bytes at `offset` (fewer at the end).
    public func read(_ key: BlobKey, offset: UInt64, length: Int) throws -> [UInt8] {
        try reader(for: key).read(at: offset, length: length)
    }

    /// A whole blob, checked against its key. For small blobs: the content is in memory.
    public func contents(of key: BlobKey) throws -> [UInt8] { try reader(for: key).contents() }

    public func contains(_ key: BlobKey) throws -> Bool { try fileSize(filePath(key)) != nil }

    /// Every blob's key, in no particular order.
    public func keys() throws -> [BlobKey] { try directoryEntries(path).compactMap { BlobKey(fileName: $0) } }

    // MARK: Deleting

    /// Deletes a blob; false if the store did not have it.
    @discardableResult
    public func delete(_ key: BlobKey) throws -> Bool {
        let removed = try state.withLock { _ in try removeFile(filePath(key)) }
        if removed { try syncDirectory(path) }
        return removed
    }

    /// Compaction, as storage asks it (storage knows which blobs no kept revision references):
    /// deletes these blobs, skipping those the store does not have, with one directory sync at
    /// the end. Returns how many went.
    @discardableResult
    public func delete(_ keys: [BlobKey]) throws -> Int {
        let deleted = try state.withLock { _ in
            var deleted = 0
            for key in keys where try removeFile(filePath(key)) { deleted += 1 }
            return deleted
        }
        if deleted > 0 { try syncDirectory(path) }
        return deleted
    }

    /// Compaction: deletes every blob whose key is not in `keep`, and the temporary files of
    /// writers that died. Each blob goes with one `unlink`, so a crash midway leaves every blob
    /// of `keep` and some of the others, which the next compaction deletes. Returns how many blobs
    /// went. A blob installed while this runs and not in `keep` may go too: the caller makes
    /// `keep` include everything a document may still reference.
    @discardableResult
    public func deleteAll(except keep: Set<BlobKey>) throws -> Int {
        try deleteAll(except: keep, interruptAfter: nil)
    }

    /// `interruptAfter`: tests stop after that many deletions, as a crash would.
    func deleteAll(except keep: Set<BlobKey>, interruptAfter: Int?) throws -> Int {
        var deleted = 0
        try state.withLock { _ in
            for key in try keys() where !keep.contains(key) {
                if let interruptAfter, deleted == interruptAfter { throw SimulatedCrash() }
                if try removeFile(filePath(key)) { deleted += 1 }
            }
        }
        try sweepTemporaryFiles()
        try syncDirectory(path)
        return deleted
    }

    // MARK: Files

    func filePath(_ key: BlobKey) -> String { path + "/" + key.fileName }

    /// Removes `incoming-*.tmp` files whose writer is gone (their lock is free).
    func sweepTemporaryFiles() throws {
        for name in try directoryEntries(path) where name.hasPrefix("incoming-") && name.hasSuffix(".tmp") {
            let tempPath = path + "/" + name
            guard let file = try PosixFile.openExisting(tempPath), try file.lock(wait: false) else { continue }
            try removeFile(tempPath)
        }
    }
}

/// Thrown by the test hooks that stop an operation where a crash would.
struct SimulatedCrash: Error {}
