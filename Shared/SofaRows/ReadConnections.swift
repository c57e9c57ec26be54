public import SofaCore
public import SofaQL
public import Foundation
internal import SofaFiles
#if canImport(Glibc)
internal import Glibc
#endif

/// Read-only connections to databases' files, one per database, reused while the file is the
/// one opened (a database deleted and created again gets a new one). On one queue. At most
/// `maxOpen` are kept: past it the least recently used is closed (a cluster with thousands of
/// databases would otherwise hold a file descriptor, and SQLite's page cache, for each one it
/// ever read), and opened again when next needed.
public struct ReadConnections {
    /// By database: the connection, the file's path (kept: building it from the name cost as
    /// much as a point lookup), which file it is (device and inode) when opened, and when it was
    /// last used.
    private var open: [String: (connection: SQLiteConnection, path: String, device: UInt64, inode: UInt64, lastUse: UInt64)] = [:]
    private var uses: UInt64 = 0
    /// Connections kept at most.
    public let maxOpen: Int
    /// How they are opened.
    public let options: SQLiteConnection.Options

    public init(maxOpen: Int = 64, options: SQLiteConnection.Options = .queryWorker) {
        self.maxOpen = max(1, maxOpen)
        self.options = options
    }

    /// How many connections are open.
    public var count: Int { open.count }

    /// Whether `database`'s connection is open.
    public func isOpen(_ database: String) -> Bool { open[database] != nil }

    /// The database's connection, and whether it was opened now (things kept about the old
    /// file, or about a connection closed to make room, are to be forgotten then).
    public mutating func connection(_ database: String, in dataDirectory: URL,
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
            throw SofaError.databaseNotFound(database)
        }
        let device = UInt64(info.st_dev), inode = UInt64(info.st_ino)
        if let known, known.device == device, known.inode == inode {
            open[database]?.lastUse = uses
            return (known.connection, false)
        }
        open[database] = nil
        if open.count >= maxOpen, let oldest = open.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            open[oldest] = nil
        }
        let connection = try SQLiteConnection(path: path, queue: queue, options: options)
        open[database] = (connection, path, device, inode, uses)
        return (connection, true)
    }

    /// Closes the connection to `database` (the next call opens a new one).
    public mutating func forget(_ database: String) {
        open[database] = nil
    }
}
