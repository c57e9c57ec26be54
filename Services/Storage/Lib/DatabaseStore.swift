internal import SofaFiles
internal import SofaQL
public import SofaCore
internal import Foundation
internal import Synchronization

/// One database: `<data>/<name>.sofa/db.sqlite3` in WAL mode, with LiteCore's table layout:
/// `kv_<keystore>` tables (`default`, `info`, `checkpoints`, `local` for `_local/` documents,
/// `.scope.collection` for collections, see `CollectionName`), `kvmeta` (last sequence and purge
/// count per key store) and `indexes`.
///
/// Writes go through one writer connection on one serial queue. Writes queued while a commit is
/// under way are applied together in the next transaction (group commit), and each caller is
/// answered only after the COMMIT returned: with `synchronous=FULL` the WAL is on disk by then.
/// Reads use a second connection on its own queue, so they never wait behind a commit.
///
/// `kv_info` holds the database's settings: `versioning` (body `trees` or `vectors`),
/// `publicUUID` and `privateUUID` (16 random bytes each, RFC 4122 v4) and `updateSequence` (in the
/// `sequence` column: +1 for every committed document change, purges included).
public final class DatabaseStore: Sendable {
    public let name: String
    public let versioning: Versioning
    let directory: URL
    /// The writer connection, on the writer queue; the readers, each on a queue of its own.
    let writer: Confined<SQLiteConnection>
    let readers: [Confined<SQLiteConnection>]
    /// How many reads each reader has been given and not finished: a read goes to the least
    /// busy, so one long read (a big changes feed, a scan) does not hold the others up.
    let readerLoad: Mutex<[Int]>
    /// Readers per database: WAL lets them read at once, beside the writer.
    static let readerCount = 2
    var writerQueue: DispatchQueue { writer.queue }
    let pending = Mutex<(items: [PendingWork], scheduled: Bool, closed: Bool)>(([], false, false))
    /// Every collection's key store, live or deleted (a deleted one keeps its `kvmeta` row).
    let collections: Mutex<[String: CollectionState]>
    let maxRevTreeDepth: Int
    /// How many revisions of a document's history are kept (`setRevsLimit`; 0: none set): read
    /// by every write of a revision tree, which prunes it to that depth.
    let revsLimit: Atomic<Int>
    let onCommit: (@Sendable (CommitNotice) -> Void)?
    let blobDeleter: BlobDeleter?
    /// Milliseconds since the epoch, for expirations.
    let clock: @Sendable () -> Int64
    /// Bumped by every new schedule of the purge of expired documents (see `rescheduleExpiry`).
    let expiryGeneration = Mutex<UInt64>(0)

    enum CollectionState: Sendable { case live, deleted }

    static let schema = """
        PRAGMA journal_mode=WAL;
        PRAGMA synchronous=FULL;
        CREATE TABLE IF NOT EXISTS kvmeta (name TEXT PRIMARY KEY, lastSeq INTEGER DEFAULT 0,
            purgeCnt INTEGER DEFAULT 0) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS indexes (name TEXT PRIMARY KEY, type INTEGER NOT NULL,
            keyStore TEXT NOT NULL, expression TEXT, indexTableName TEXT);
        \(["default", "info", "checkpoints", "local"].map(keyStoreDDL).joined(separator: "\n"))
        INSERT OR IGNORE INTO kvmeta (name, lastSeq) VALUES ('default', 0);
        """

    static func keyStoreDDL(_ store: String) -> String {
        let table = CollectionName.table(forKeyStore: store)
        let plain = CollectionName.tableName(forKeyStore: store)
        return """
        CREATE TABLE IF NOT EXISTS \(table) (key TEXT PRIMARY KEY, sequence INTEGER, flags INTEGER DEFAULT 0,
            version BLOB, body BLOB, extra BLOB, expiration INTEGER);
        CREATE UNIQUE INDEX IF NOT EXISTS "\(plain)_seqs" ON \(table) (sequence);
        CREATE INDEX IF NOT EXISTS "\(plain)_expiration" ON \(table) (expiration) WHERE expiration IS NOT NULL;
        """
    }

    /// Opens the database in `dataDirectory`. `versioning` is stored when the database has none
    /// yet (a new one); an existing database keeps its own.
    static func open(name: String, in dataDirectory: URL, versioning: Versioning = .revisionTrees,
                     maxRevTreeDepth: Int = RevTree.defaultMaxDepth,
                     onCommit: (@Sendable (CommitNotice) -> Void)? = nil,
                     blobDeleter: BlobDeleter? = nil,
                     clock: @escaping @Sendable () -> Int64 = nowMilliseconds) throws(SofaError) -> DatabaseStore {
        let directory = StorageLayout.directory(of: name, in: dataDirectory)
        let file = directory.appendingPathComponent("db.sqlite3").path
        let writer = try Confined.make(on: DispatchQueue(label: "sofa.storage.\(name).writer")) { (queue) throws(SofaError) in
            try SQLiteConnection(path: file, queue: queue, options: .writer)
        }
        let (stored, collections, revsLimit) = try writer.sync { (connection) throws(SofaError) -> (Versioning, [String: CollectionState], Int) in
            try connection.execute(schema)
            try connection.execute("BEGIN IMMEDIATE")
            do throws(SofaError) {
                try connection.run("INSERT OR IGNORE INTO kv_info (key, body) VALUES ('versioning', ?)",
                                   [.blob(Array(versioning.rawValue.utf8))])
                for key in ["publicUUID", "privateUUID"] {
                    try connection.run("INSERT OR IGNORE INTO kv_info (key, body) VALUES (?, ?)",
                                       [.text(key), .blob(randomUUID())])
                }
                var stored = versioning
                try connection.run("SELECT body FROM kv_info WHERE key = 'versioning'") { row in
                    stored = Versioning(rawValue: String(decoding: row.blob(0), as: UTF8.self)) ?? .revisionTrees
                }
                let collections = try loadCollections(connection)
                let revsLimit = try storedRevsLimit(connection)
                try connection.execute("COMMIT")
                return (stored, collections, revsLimit)
            } catch {
                try? connection.execute("ROLLBACK")
                throw error
            }
        }
        var readers: [Confined<SQLiteConnection>] = []
        for index in 0..<readerCount {
            readers.append(try Confined.make(on: DispatchQueue(label: "sofa.storage.\(name).reader\(index)")) { (queue) throws(SofaError) in
                try SQLiteConnection(path: file, queue: queue, options: .reader)
            })
        }
        let store = DatabaseStore(name: name, versioning: stored, directory: directory, writer: writer, readers: readers,
                                  collections: collections, maxRevTreeDepth: maxRevTreeDepth, revsLimit: revsLimit, onCommit: onCommit,
                                  blobDeleter: blobDeleter, clock: clock)
        writer.async { connection in store.rescheduleExpiry(connection) }
        return store
    }

    /// Live collections are the collection tables that exist; deleted ones have a `kvmeta` row
    /// and no table.
    static func loadCollections(_ connection: SQLiteConnection) throws(SofaError) -> [String: CollectionState] {
        var tables = Set<String>()
        try connection.run("SELECT name FROM sqlite_master WHERE type = 'table'") { tables.insert($0.text(0)) }
        var result: [String: CollectionState] = [:]
        try connection.run("SELECT name FROM kvmeta") { row in
            let store = row.text(0)
            guard CollectionName(keyStore: store) != nil else { return }
            result[store] = tables.contains(CollectionName.tableName(forKeyStore: store)) ? .live : .deleted
        }
        result["default"] = .live
        return result
    }

    private init(name: String, versioning: Versioning, directory: URL,
                 writer: Confined<SQLiteConnection>, readers: [Confined<SQLiteConnection>],
                 collections: [String: CollectionState], maxRevTreeDepth: Int, revsLimit: Int,
                 onCommit: (@Sendable (CommitNotice) -> Void)?, blobDeleter: BlobDeleter?, clock: @escaping @Sendable () -> Int64) {
        self.name = name
        self.versioning = versioning
        self.directory = directory
        self.writer = writer
        self.readers = readers
        self.readerLoad = Mutex([Int](repeating: 0, count: readers.count))
        self.collections = Mutex(collections)
        self.maxRevTreeDepth = maxRevTreeDepth
        self.revsLimit = Atomic(revsLimit)
        self.onCommit = onCommit
        self.blobDeleter = blobDeleter
        self.clock = clock
    }

    /// Fails new writes, cancels the expiry timer and waits for queued work to finish.
    func close() {
        pending.withLock { $0.closed = true }
        expiryGeneration.withLock { $0 += 1 }
        writer.sync { _ in }
        for reader in readers { reader.sync { _ in } }
    }

    var isClosed: Bool { pending.withLock { $0.closed } }

    /// Throws `.notFound` for a collection that never existed, `.notOpen` for a deleted one.
    func check(_ collection: CollectionName) throws(SofaError) {
        switch collections.withLock({ $0[collection.keyStore] }) {
        case .live?: return
        case .deleted?: throw SofaError(.notOpen, "collection '\(collection)' was deleted")
        case nil: throw .notFound("collection '\(collection)' does not exist in database '\(name)'")
        }
    }

    var liveCollections: [CollectionName] {
        collections.withLock { state in
            state.filter { $0.value == .live }.keys.compactMap { CollectionName(keyStore: $0) }
        }.sorted { $0.description < $1.description }
    }

    /// The least busy reader, counted busy once more (until the read's end).
    private func chooseReader() -> Int {
        readerLoad.withLock { load in
            let index = load.indices.min { load[$0] < load[$1] } ?? 0
            load[index] += 1
            return index
        }
    }

    /// The same without a task: `body` runs on the least busy reader's queue, which calls `then`
    /// with its result (for a caller on a thread of its own that must not wait, as a socket loop).
    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws(SofaError) -> T,
                           then: @escaping @Sendable (Result<T, SofaError>) -> Void) {
        let chosen = chooseReader()
        readers[chosen].async { reader in
            let result = Result { () throws(SofaError) -> T in
                try reader.execute("BEGIN")
                defer { try? reader.execute("COMMIT") }
                return try body(reader)
            }
            self.readerLoad.withLock { $0[chosen] -= 1 }
            then(result)
        }
    }

    /// Runs `body` on the reader connection, inside one read transaction (a consistent snapshot).
    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws(SofaError) -> T) async throws(SofaError) -> T {
        let chosen = chooseReader()
        defer { readerLoad.withLock { $0[chosen] -= 1 } }
        return try await readers[chosen].run { (reader) throws(SofaError) -> T in
            try reader.execute("BEGIN")
            defer { try? reader.execute("COMMIT") }
            return try body(reader)
        }
    }
}

/// 16 random bytes with the RFC 4122 version 4 and variant bits.
func randomUUID() -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
    bytes[6] = (bytes[6] & 0x0F) | 0x40
    bytes[8] = (bytes[8] & 0x3F) | 0x80
    return bytes
}

/// `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`, lower case.
func uuidString(_ bytes: [UInt8]) -> String {
    let hex = bytes.map { byte in String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }
    guard hex.count == 16 else { return hex.joined() }
    return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
}
