internal import SofaFiles
internal import SofaQL
public import SofaCore
public import Foundation
internal import Synchronization

/// Every database under one data directory. Creating, opening and deleting databases is
/// serialised on one queue; documents go straight to each database's `DatabaseStore`.
public final class StorageEngine: Sendable {
    public let dataDirectory: URL
    private let open = Mutex<[String: DatabaseStore]>([:])
    private let adminJobs = Confined((), label: "sofa.storage.admin")
    /// The data directory's lock, held from init to `close()`.
    private let lockDescriptor: Mutex<Int32?>
    /// Called on a database's writer queue after each COMMIT, once per collection it changed,
    /// before the writers are answered.
    private let onCommit: (@Sendable (CommitNotice) -> Void)?
    /// How compaction asks sofa-blob to delete the blobs no kept revision references; nil (an
    /// engine without sofa-blob, as in tests) keeps them.
    private let blobDeleter: BlobDeleter?
    /// Milliseconds since the epoch, for expirations: the wall clock unless a test moves it.
    private let clock: @Sendable () -> Int64
    /// How a database's deletion has sofa-blob delete its blobs first; nil (an engine without
    /// sofa-blob, as in tests) deletes the whole folder itself.
    private let blobDropper: BlobDropper?
    /// Compaction prunes revision trees to this depth (the service passes `SOFA_MAX_REV_TREE_DEPTH`; default 50).
    public let maxRevTreeDepth: Int

    /// Opens the data directory, taking its lock: one storage process per directory (a second
    /// one would unlink the first one's ipc socket and write the same files). Every database is
    /// opened, so documents that expire are purged on time after a restart too.
    public init(dataDirectory: URL, onCommit: (@Sendable (CommitNotice) -> Void)? = nil,
                maxRevTreeDepth: Int? = nil, blobDeleter: BlobDeleter? = nil, blobDropper: BlobDropper? = nil,
                clock: (@Sendable () -> Int64)? = nil) throws(SofaError) {
        self.dataDirectory = dataDirectory
        self.clock = clock ?? nowMilliseconds
        self.onCommit = onCommit
        self.blobDeleter = blobDeleter
        self.blobDropper = blobDropper
        self.maxRevTreeDepth = max(1, maxRevTreeDepth ?? RevTree.defaultMaxDepth)
        do {
            try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        } catch {
            throw SofaError(.cantOpenFile, "cannot create the data directory \(dataDirectory.path): \(error.localizedDescription)")
        }
        let lockPath = dataDirectory.appendingPathComponent("storage.lock").path
        let descriptor = Foundation.open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw SofaError(.posix, errno, "cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        // A process that forks (to start another) gives its child a copy of every descriptor,
        // and with it this lock, until the child execs: a lock just released by an engine of
        // this process may still be held for that moment. Only a lock held longer is another's.
        let deadline = ContinuousClock.now + .seconds(1)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline else {
                Foundation.close(descriptor)
                throw SofaError(.busy, "the data directory \(dataDirectory.path) is in use by another sofa-storage")
            }
            usleep(2_000)
        }
        lockDescriptor = Mutex(descriptor)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory.path)) ?? []
        for name in entries.compactMap(StorageLayout.databaseName(ofEntry:)) {
            guard (try? Self.validate(databaseName: name)) != nil, exists(name),
                  let store = try? openStore(name, versioning: .revisionTrees) else { continue }
            open.withLock { $0[name] = store }
        }
    }

    private func openStore(_ name: String, versioning: Versioning) throws(SofaError) -> DatabaseStore {
        try DatabaseStore.open(name: name, in: dataDirectory, versioning: versioning, maxRevTreeDepth: maxRevTreeDepth,
                               onCommit: onCommit, blobDeleter: blobDeleter, clock: clock)
    }

    deinit { releaseLock() }

    private func releaseLock() {
        if let descriptor = lockDescriptor.withLock({ $0.take() }) { Foundation.close(descriptor) }
    }

    /// Database names follow CouchDB's rule (see `StorageLayout`).
    public static func validate(databaseName name: String) throws(SofaError) {
        try StorageLayout.validate(databaseName: name)
    }

    private func admin<T: Sendable>(_ body: @escaping @Sendable () throws(SofaError) -> T) async throws(SofaError) -> T {
        try await adminJobs.run { (_: inout Void) throws(SofaError) -> T in try body() }
    }

    private func directory(of name: String) -> URL {
        StorageLayout.directory(of: name, in: dataDirectory)
    }

    private func exists(_ name: String) -> Bool {
        FileManager.default.fileExists(atPath: directory(of: name).appendingPathComponent("db.sqlite3").path)
    }

    /// Creates a database with its versioning mode (kept in its `kv_info`).
    public func createDatabase(_ name: String, versioning: Versioning = .revisionTrees) async throws(SofaError) {
        try Self.validate(databaseName: name)
        try await admin { () throws(SofaError) in
            guard !self.exists(name) else { throw SofaError(.databaseExists, "database '\(name)' already exists") }
            let directory = self.directory(of: name)
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw SofaError(.cantOpenFile, "cannot create \(directory.path): \(error.localizedDescription)")
            }
            // All or nothing: a database whose schema could not be written (a full disk, say)
            // leaves no folder behind, so it neither exists half-made nor blocks a new attempt.
            let store: DatabaseStore
            do throws(SofaError) {
                store = try self.openStore(name, versioning: versioning)
            } catch {
                try? FileManager.default.removeItem(at: directory)
                syncDirectory(self.dataDirectory)
                throw SofaError(error.domain, error.code, "cannot create database '\(name)': \(error.message)")
            }
            syncDirectory(directory)
            syncDirectory(self.dataDirectory)
            self.open.withLock { $0[name] = store }
        }
    }

    public func deleteDatabase(_ name: String) async throws(SofaError) {
        try Self.validate(databaseName: name)
        try await admin { () throws(SofaError) in
            guard self.exists(name) else { throw .databaseNotFound(name) }
            let directory = self.directory(of: name)
            let attachments = StorageLayout.attachmentsDirectory(ofDatabaseDirectory: directory)
            // Only sofa-blob deletes in `Attachments/`: it goes first, and while sofa-blob cannot
            // delete it the database stays whole (the client is told why, and may ask again).
            if let dropper = self.blobDropper, FileManager.default.fileExists(atPath: attachments.path),
               case .failure(let error) = dropper(name) {
                throw SofaError(error.domain, error.code, "cannot delete database '\(name)': its blobs could not be deleted: \(error.message)")
            }
            let store = self.open.withLock { $0.removeValue(forKey: name) }
            store?.close()
            do {
                if self.blobDropper == nil {
                    try FileManager.default.removeItem(at: directory)
                } else {
                    // Storage's own files; an `Attachments/` that an upload made again meanwhile
                    // is left to sofa-blob, and keeps the (otherwise empty) folder.
                    let entries = try FileManager.default.contentsOfDirectory(atPath: directory.path)
                    for entry in entries where entry != attachments.lastPathComponent {
                        try FileManager.default.removeItem(at: directory.appendingPathComponent(entry))
                    }
                    if rmdir(directory.path) != 0 && errno != ENOTEMPTY && errno != EEXIST {
                        throw SofaError(.posix, errno, String(cString: strerror(errno)))
                    }
                }
            } catch let error as SofaError {
                throw SofaError(.ioError, "cannot delete database '\(name)': \(error.message)")
            } catch {
                throw SofaError(.ioError, "cannot delete database '\(name)': \(error.localizedDescription)")
            }
            syncDirectory(self.dataDirectory)
        }
    }

    public func listDatabases() async throws(SofaError) -> [String] {
        try await admin { () throws(SofaError) -> [String] in
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: self.dataDirectory.path)) ?? []
            return entries.compactMap(StorageLayout.databaseName(ofEntry:)).filter { self.exists($0) }.sorted()
        }
    }

    /// The open database called `name`, opening it on first use.
    /// The database if it is open now (nil: not open, or no such database).
    public func openDatabase(_ name: String) -> DatabaseStore? {
        open.withLock { $0[name] }
    }

    public func database(_ name: String) async throws(SofaError) -> DatabaseStore {
        if let store = open.withLock({ $0[name] }) { return store }
        try Self.validate(databaseName: name)
        return try await admin { () throws(SofaError) -> DatabaseStore in
            if let store = self.open.withLock({ $0[name] }) { return store }
            guard self.exists(name) else { throw .databaseNotFound(name) }
            let store = try self.openStore(name, versioning: .revisionTrees)
            self.open.withLock { $0[name] = store }
            return store
        }
    }

    /// Closes every database (at shutdown, after the last write was answered).
    public func close() {
        let stores = open.withLock { open in
            defer { open.removeAll() }
            return Array(open.values)
        }
        for store in stores { store.close() }
        releaseLock()
    }
}

/// Makes a directory's new or removed entries durable (best effort, as before a failure here the
/// files themselves are already synced).
private func syncDirectory(_ url: URL) {
    try? SofaFiles.syncDirectory(url.path)
}
