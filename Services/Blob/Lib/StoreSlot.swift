import SofaFiles
import Foundation
import SofaCore

/// One database's blob store and the serial queue that does all of its file I/O. The store is
/// opened on first use with the key its key file names (`KeyFile`), and reopened when its
/// `Attachments/` folder is no longer the one it was opened on (the database was deleted, and
/// perhaps created again, maybe with another key).
final class StoreSlot: Sendable {
    private struct Open {
        let store: BlobStore
        let folder: FileIdentity
    }

    private let databaseDirectory: URL
    private let attachments: URL
    private let name: String
    /// The open store (nil until first use), on the slot's queue.
    private let open: Confined<Open?>
    var queue: DispatchQueue { open.queue }

    init(databaseDirectory: URL, name: String) {
        self.databaseDirectory = databaseDirectory
        self.attachments = StorageLayout.attachmentsDirectory(ofDatabaseDirectory: databaseDirectory)
        self.name = name
        self.open = Confined(nil, label: "sofa.blob.\(name)")
    }

    /// Runs `body` on the queue with the open store; `.notFound` if the database does not exist.
    /// Jobs run in the order they were asked for from one actor (see `Confined.run`).
    func run<T: Sendable>(isolation: isolated (any Actor)? = #isolation,
                          _ body: @escaping @Sendable (BlobStore) throws -> T) async throws(SofaError) -> T {
        try await open.run(isolation: isolation) { (open) throws(SofaError) -> T in
            try Self.catching { try body(try self.openStore(&open)) }
        }
    }

    func runResult<T: Sendable>(isolation: isolated (any Actor)? = #isolation,
                                _ body: @escaping @Sendable (BlobStore) throws -> T) async -> Result<T, SofaError> {
        do throws(SofaError) {
            return .success(try await run(isolation: isolation, body))
        } catch {
            return .failure(error)
        }
    }

    private static func catching<T>(_ body: () throws -> T) throws(SofaError) -> T {
        do { return try body() } catch let error as SofaError { throw error } catch {
            throw SofaError(.unexpectedError, "\(error)")
        }
    }

    // MARK: Keys

    /// A database just created with `key` (storage made it; the gateway then asks here): the
    /// store becomes encrypted with `key`, which the key file keeps. Asking again with the same
    /// key does nothing (a retried call); a database that is already encrypted otherwise, or
    /// already has blobs, is refused — that is what `rekey` is for.
    func setUp(key: EncryptionKey) async throws(SofaError) {
        try await run { store in
            let slot = self
            if try keyCheck(store.key) == keyCheck(key) {
                if try KeyFile.read(in: slot.attachments.path) == nil { try KeyFile(key: key).write(in: slot.attachments.path) }
                return
            }
            guard store.key == nil else {
                throw SofaError(.crypto, "database '\(slot.name)' is already encrypted with another key: use rekey to change it")
            }
            guard try store.keys().isEmpty else {
                throw SofaError(.invalidParameter, "database '\(slot.name)' already has blobs: use rekey to encrypt them")
            }
            try slot.rekey(store, to: key)
        }
    }

    /// Re-encrypts every blob from `current` (which must be the database's key; nil: it is
    /// plain) to `new` (nil: decrypt). A wrong `current` is `.crypto` and changes nothing.
    func rekey(current: EncryptionKey?, new: EncryptionKey?) async throws(SofaError) {
        try await run { store in
            let slot = self
            let have = try keyCheck(store.key), given = try keyCheck(current)
            guard have == given else {
                switch (store.key == nil, current == nil) {
                case (false, true): throw SofaError(.crypto, "database '\(slot.name)' is encrypted: give its current key or password")
                case (true, false): throw SofaError(.crypto, "database '\(slot.name)' is not encrypted: give no current key")
                default: throw SofaError(.crypto, "wrong encryption key or password for database '\(slot.name)'")
                }
            }
            guard try keyCheck(new) != have else { return }
            try slot.rekey(store, to: new)
        }
    }

    /// On the queue only. The key file names both keys while the store's own journal
    /// (`.sofa-keystate`) decides, after a crash, which one the blobs are in.
    private func rekey(_ store: BlobStore, to new: EncryptionKey?) throws {
        let folder = attachments.path
        try KeyFile(key: store.key, next: .some(new)).write(in: folder)
        try store.rekey(to: new)
        if let new { try KeyFile(key: new).write(in: folder) } else { try KeyFile.remove(in: folder) }
    }

    /// Deletes every blob of the database, its key file and its `Attachments/` folder (the
    /// database is being deleted); the store is closed.
    func drop() async throws(SofaError) {
        try await open.run { (open) throws(SofaError) in
            open = nil
            guard FileManager.default.fileExists(atPath: self.attachments.path) else { return }
            do {
                try FileManager.default.removeItem(at: self.attachments)
            } catch {
                throw SofaError(.ioError, "cannot delete the blobs of database '\(self.name)': \(error.localizedDescription)")
            }
            try? syncDirectory(self.databaseDirectory.path)  // the removal is done; a failed sync loses nothing
        }
    }

    // MARK: Opening

    /// On the queue only.
    private func openStore(_ open: inout Open?) throws -> BlobStore {
        guard FileManager.default.fileExists(atPath: databaseDirectory.appendingPathComponent("db.sqlite3").path) else {
            throw SofaError.databaseNotFound(name)
        }
        if let current = open, try fileIdentity(attachments.path) == current.folder { return current.store }
        let folder = attachments.path
        let keyFile = try KeyFile.read(in: folder)
        let store: BlobStore
        do {
            store = try BlobStore(directory: attachments, candidates: keyFile?.candidates ?? [nil])
        } catch let error as SofaError where error.is(.crypto) {
            throw SofaError(.crypto, "database '\(name)': its blobs are not in the key sofa-blob keeps for it (\(error.message))")
        }
        // Settle a key file left naming two keys by a rekey that a crash interrupted.
        if let keyFile, keyFile.next != nil {
            if let key = store.key { try KeyFile(key: key).write(in: folder) } else { try KeyFile.remove(in: folder) }
        }
        guard let identity = try fileIdentity(folder) else {
            throw SofaError(.ioError, "the blob folder \(folder) vanished as it was opened")
        }
        open = Open(store: store, folder: identity)
        return store
    }
}
