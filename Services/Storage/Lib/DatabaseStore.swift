public import SofaCore
internal import Foundation
internal import Synchronization

/// One database: `<data>/<name>.sofa/db.sqlite3` in WAL mode, with LiteCore's table layout.
///
/// Writes go through one writer connection on one serial queue. Writes queued while a commit is
/// under way are applied together in the next transaction (group commit), and each caller is
/// answered only after the COMMIT returned: with `synchronous=FULL` the WAL is on disk by then.
/// Reads use a second connection on its own queue, so they never wait behind a commit.
public final class DatabaseStore: Sendable {
    public let name: String
    let directory: URL
    let writerQueue: DispatchQueue
    let readerQueue: DispatchQueue
    // Each connection is used only on its own queue (checked on every call by SQLiteConnection),
    // which is what makes sharing the references safe.
    nonisolated(unsafe) let writer: SQLiteConnection
    nonisolated(unsafe) let reader: SQLiteConnection
    private let pending = Mutex<(items: [PendingWrite], scheduled: Bool, closed: Bool)>(([], false, false))

    struct PendingWrite {
        var write: DocumentWrite
        var continuation: CheckedContinuation<Result<WriteResult, SofaError>, Never>
    }

    static let schema = """
        PRAGMA journal_mode=WAL;
        PRAGMA synchronous=FULL;
        CREATE TABLE IF NOT EXISTS kvmeta (name TEXT PRIMARY KEY, lastSeq INTEGER DEFAULT 0,
            purgeCnt INTEGER DEFAULT 0) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS indexes (name TEXT PRIMARY KEY, type INTEGER NOT NULL,
            keyStore TEXT NOT NULL, expression TEXT, indexTableName TEXT);
        \(["default", "info", "checkpoints"].map(keyStoreDDL).joined(separator: "\n"))
        INSERT OR IGNORE INTO kvmeta (name, lastSeq) VALUES ('default', 0);
        """

    static func keyStoreDDL(_ store: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS kv_\(store) (key TEXT PRIMARY KEY, sequence INTEGER, flags INTEGER DEFAULT 0,
            version BLOB, body BLOB, extra BLOB, expiration INTEGER);
        CREATE UNIQUE INDEX IF NOT EXISTS kv_\(store)_seqs ON kv_\(store) (sequence);
        """
    }

    /// Opens (and with `create`, first creates) the database in `dataDirectory`.
    static func open(name: String, in dataDirectory: URL) throws(SofaError) -> DatabaseStore {
        let directory = dataDirectory.appendingPathComponent("\(name).sofa", isDirectory: true)
        let file = directory.appendingPathComponent("db.sqlite3").path
        let writerQueue = DispatchQueue(label: "sofa.storage.\(name).writer")
        let readerQueue = DispatchQueue(label: "sofa.storage.\(name).reader")
        let writer = try writerQueue.sync {
            Result { () throws(SofaError) -> SQLiteConnection in
                let connection = try SQLiteConnection(path: file, queue: writerQueue)
                try connection.execute(schema)
                return connection
            }
        }.get()
        let reader = try readerQueue.sync {
            Result { () throws(SofaError) -> SQLiteConnection in
                let connection = try SQLiteConnection(path: file, queue: readerQueue)
                try connection.execute("PRAGMA query_only=1;")
                return connection
            }
        }.get()
        return DatabaseStore(name: name, directory: directory, writerQueue: writerQueue, readerQueue: readerQueue,
                             writer: writer, reader: reader)
    }

    private init(name: String, directory: URL, writerQueue: DispatchQueue, readerQueue: DispatchQueue,
                 writer: SQLiteConnection, reader: SQLiteConnection) {
        self.name = name
        self.directory = directory
        self.writerQueue = writerQueue
        self.readerQueue = readerQueue
        self.writer = writer
        self.reader = reader
    }

    /// Fails new writes and waits for queued ones to finish.
    func close() {
        pending.withLock { $0.closed = true }
        writerQueue.sync {}
        readerQueue.sync {}
    }

    // MARK: Writes

    /// Queues a write for the next group commit and waits until it is durable.
    public func write(_ write: DocumentWrite) async throws(SofaError) -> WriteResult {
        let result: Result<WriteResult, SofaError> = await withCheckedContinuation { continuation in
            let (schedule, closed) = pending.withLock { state -> (Bool, Bool) in
                if state.closed { return (false, true) }
                state.items.append(PendingWrite(write: write, continuation: continuation))
                defer { state.scheduled = true }
                return (!state.scheduled, false)
            }
            if closed {
                continuation.resume(returning: .failure(.notFound("database '\(name)' was deleted")))
            } else if schedule {
                writerQueue.async { self.commitPending() }
            }
        }
        return try result.get()
    }

    private func commitPending() {
        let items = pending.withLock { state in
            defer {
                state.items.removeAll()
                state.scheduled = false
            }
            return state.items
        }
        guard !items.isEmpty else { return }
        do {
            let results = try commit(items.map(\.write))
            for (item, result) in zip(items, results) { item.continuation.resume(returning: result) }
        } catch {
            try? writer.execute("ROLLBACK")
            if items.count == 1 {
                items[0].continuation.resume(returning: .failure(error))
                return
            }
            // One write broke the batch: commit the others one by one so only it fails.
            for item in items {
                do {
                    let result = try commit([item.write])[0]
                    item.continuation.resume(returning: result)
                } catch {
                    try? writer.execute("ROLLBACK")
                    item.continuation.resume(returning: .failure(error))
                }
            }
        }
    }

    /// One transaction for the batch. A write that is refused (a conflict) changes nothing and
    /// gets its error in the result; an SQLite failure throws and the caller rolls back.
    private func commit(_ writes: [DocumentWrite]) throws(SofaError) -> [Result<WriteResult, SofaError>] {
        try writer.execute("BEGIN IMMEDIATE")
        var lastSequence: Int64 = 0
        try writer.run("SELECT lastSeq FROM kvmeta WHERE name = 'default'") { row in lastSequence = row.integer(0) }
        var results: [Result<WriteResult, SofaError>] = []
        results.reserveCapacity(writes.count)
        for write in writes {
            results.append(try apply(write, lastSequence: &lastSequence))
        }
        try writer.run("UPDATE kvmeta SET lastSeq = ? WHERE name = 'default'", [.integer(lastSequence)])
        try writer.execute("COMMIT")
        return results
    }
}
