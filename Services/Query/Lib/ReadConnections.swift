internal import SofaFiles
import SofaCore
import SofaQL
import Foundation

/// The live design documents of a database (in the default collection), in ID order: each one's
/// name (without `_design/`) and body, parsed (one that is not JSON is skipped).
func designDocuments(_ main: SQLiteConnection) throws(SofaError) -> [(name: String, body: JSON)] {
    var found: [(name: String, body: JSON)] = []
    try main.run("SELECT key, body FROM kv_default WHERE key >= '_design/' AND key < '_design0' AND (flags & 1) = 0 ORDER BY key") { row in
        if let body = JSON.tryParse(row.blob(1)) { found.append((String(row.text(0).dropFirst("_design/".count)), body)) }
    }
    return found
}

/// Read-only connections to databases' files, one per database, reused while the file is the
/// one opened (a database deleted and created again gets a new one). On one queue. At most
/// `maxOpen` are kept: past it the least recently used is closed (a cluster with thousands of
/// databases would otherwise hold a file descriptor, and SQLite's page cache, for each one it
/// ever read), and opened again when next needed.
struct ReadConnections {
    /// By database: the connection, the file's path (kept: building it from the name cost as
    /// much as a point lookup), the file's inode when opened, and when it was last used.
    private var open: [String: (connection: SQLiteConnection, path: String, inode: UInt64, lastUse: UInt64)] = [:]
    private var uses: UInt64 = 0
    /// Connections kept at most.
    let maxOpen: Int

    init(maxOpen: Int = 64) {
        self.maxOpen = max(1, maxOpen)
    }

    /// How many connections are open.
    var count: Int { open.count }

    /// Whether `database`'s connection is open.
    func isOpen(_ database: String) -> Bool { open[database] != nil }

    /// The database's connection, and whether it was opened now (things kept about the old
    /// file, or about a connection closed to make room, are to be forgotten then).
    mutating func connection(_ database: String, in dataDirectory: URL,
                             queue: DispatchQueue) throws(SofaError) -> (connection: SQLiteConnection, opened: Bool) {
        uses += 1
        let known = open[database]
        let path: String
        if let known {
            path = known.path
        } else {
            try StorageLayout.validate(databaseName: database)
            path = StorageLayout.databaseFile(of: database, in: dataDirectory).path
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            open[database] = nil
            throw SofaError(.notFound, "no database '\(database)'")
        }
        if let known, known.inode == UInt64(info.st_ino) {
            open[database]?.lastUse = uses
            return (known.connection, false)
        }
        open[database] = nil
        if open.count >= maxOpen, let oldest = open.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            open[oldest] = nil
        }
        let connection = try SQLiteConnection(path: path, queue: queue, options: .queryWorker)
        open[database] = (connection, path, UInt64(info.st_ino), uses)
        return (connection, true)
    }

    /// Closes the connection to `database` (the next call opens a new one).
    mutating func forget(_ database: String) {
        open[database] = nil
    }
}
