import Foundation
import Logging
import SofaCore
import SofaFiles
import SofaQL
@testable import SofaStorage

/// Database "db" of a data directory, holding document "a" (`{"x":1}`), with storage closed and
/// the file kept by one connection to itself (exclusive locking, in a write transaction) until
/// `release`: every other connection finds it locked.
final class LockedDatabase {
    let path: String
    /// The holding connection's queue, free for other connections of a test.
    let queue = DispatchQueue(label: "test.locked-database")
    private var holder: SQLiteConnection?

    init(in url: URL) async throws {
        let storage = try StorageEngine(dataDirectory: url)
        try await storage.createDatabase("db")
        _ = try await put(StorageService(engine: storage, instance: "test", logger: Logger(label: "test")), "a", #"{"x":1}"#)
        storage.close()
        let (path, queue) = (StorageLayout.databaseFile(of: "db", in: url).path, queue)
        self.path = path
        holder = try queue.sync {
            let connection = try SQLiteConnection(path: path, queue: queue, options: .writer)
            try connection.execute("PRAGMA locking_mode=EXCLUSIVE")
            try connection.execute("BEGIN EXCLUSIVE")
            try connection.execute("UPDATE kv_info SET body = body WHERE key = 'versioning'")
            return connection
        }
    }

    /// Ends the transaction and closes the holding connection: the file is free.
    func release() throws {
        try queue.sync {
            try holder?.execute("COMMIT")
            holder = nil
        }
    }
}
