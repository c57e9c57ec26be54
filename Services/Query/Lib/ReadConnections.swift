internal import SofaFiles
import SofaCore
import SofaQL
import Foundation

/// Read-only connections to databases' files, one per database, reused while the file is the
/// one opened (a database deleted and created again gets a new one). On one queue.
struct ReadConnections {
    private var open: [String: (connection: SQLiteConnection, inode: UInt64)] = [:]

    /// The database's connection, and whether it was opened now (things kept about the old
    /// file are to be forgotten then).
    mutating func connection(_ database: String, in dataDirectory: URL,
                             queue: DispatchQueue) throws(SofaError) -> (connection: SQLiteConnection, opened: Bool) {
        try StorageLayout.validate(databaseName: database)
        let file = StorageLayout.databaseFile(of: database, in: dataDirectory)
        var info = stat()
        guard stat(file.path, &info) == 0 else {
            open[database] = nil
            throw SofaError(.notFound, "no database '\(database)'")
        }
        if let known = open[database], known.inode == UInt64(info.st_ino) { return (known.connection, false) }
        let connection = try SQLiteConnection(path: file.path, queue: queue, options: .queryWorker)
        open[database] = (connection, UInt64(info.st_ino))
        return (connection, true)
    }
}
