public import SofaCore
public import Foundation

/// Where a database lives in the data directory, shared by storage (which owns the SQLite file),
/// sofa-blob (which owns `Attachments/`) and query workers (which only read both):
/// `<data>/<db>.sofa/db.sqlite3` and `<data>/<db>.sofa/Attachments/`, a `/` in the name written
/// `%2F` in the folder's (no name holds a `%`).
public enum StorageLayout {
    /// The system databases, named outside the rule as in CouchDB: `_replicator` holds the
    /// persistent replications (see sofa-replicator), `_users` the users (see the gateway).
    public static let systemDatabases: Set<String> = ["_replicator", "_users"]

    /// The bytes a database name may hold after its first letter.
    private static let allowedInDatabaseNames = Set("abcdefghijklmnopqrstuvwxyz0123456789_$()+-/".utf8)

    /// Database names follow CouchDB's rule: a lower-case letter, then lower-case letters, digits
    /// and `_$()+-/`, at most 238 characters.
    public static func validate(databaseName name: String) throws(SofaError) {
        if systemDatabases.contains(name) { return }
        guard !name.isEmpty else { throw SofaError(.badDatabaseName, "database name is empty") }
        guard name.utf8.count <= 238 else {
            throw SofaError(.badDatabaseName, "database name is \(name.utf8.count) characters; the limit is 238")
        }
        // A `/` is 3 bytes in the folder's name, which may be 255 bytes with its suffix.
        let slashes = name.utf8.filter { $0 == UInt8(ascii: "/") }.count
        guard name.utf8.count + 2 * slashes + folderSuffix.utf8.count <= 255 else {
            throw SofaError(.badDatabaseName, "database name '\(name)' is too long for its folder (each / counts three)")
        }
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first),
              name.utf8.allSatisfy({ allowedInDatabaseNames.contains($0) }) else {
            throw SofaError(.badDatabaseName,
                            "invalid database name '\(name)': use a lower-case letter, then a-z, 0-9 and _$()+-/")
        }
    }

    public static func directory(of name: String, in dataDirectory: URL) -> URL {
        dataDirectory.appendingPathComponent(name.replacingOccurrences(of: "/", with: "%2F") + folderSuffix, isDirectory: true)
    }

    /// The folder of a database's blobs (sofa-blob's alone: only it writes or deletes there).
    public static func attachmentsDirectory(ofDatabaseDirectory directory: URL) -> URL {
        directory.appendingPathComponent("Attachments", isDirectory: true)
    }

    public static func attachmentsDirectory(of name: String, in dataDirectory: URL) -> URL {
        attachmentsDirectory(ofDatabaseDirectory: directory(of: name, in: dataDirectory))
    }

    /// The database a folder of the data directory holds, or nil for another entry.
    public static func databaseName(ofEntry entry: String) -> String? {
        entry.hasSuffix(folderSuffix) ? String(entry.dropLast(folderSuffix.count)).replacingOccurrences(of: "%2F", with: "/") : nil
    }

    static let folderSuffix = ".sofa"

    public static func databaseFile(of name: String, in dataDirectory: URL) -> URL {
        directory(of: name, in: dataDirectory).appendingPathComponent("db.sqlite3")
    }
}
