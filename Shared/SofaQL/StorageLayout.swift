public import SofaCore
public import Foundation

/// Where a database lives in the data directory, shared by storage (which owns the files) and
/// query workers (which only read them): `<data>/<db>.sofa/db.sqlite3`.
public enum StorageLayout {
    /// The system databases, named outside the rule as in CouchDB: `_replicator` holds the
    /// persistent replications (see sofa-replicator).
    public static let systemDatabases: Set<String> = ["_replicator"]

    /// Database names follow CouchDB's rule without `/`: a lower-case letter, then lower-case
    /// letters, digits and `_$()+-`, at most 238 characters.
    public static func validate(databaseName name: String) throws(SofaError) {
        if systemDatabases.contains(name) { return }
        guard !name.isEmpty else { throw SofaError(.badDatabaseName, "database name is empty") }
        guard name.utf8.count <= 238 else {
            throw SofaError(.badDatabaseName, "database name is \(name.utf8.count) characters; the limit is 238")
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_$()+-".utf8)
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first),
              name.utf8.allSatisfy({ allowed.contains($0) }) else {
            throw SofaError(.badDatabaseName,
                            "invalid database name '\(name)': use a lower-case letter, then a-z, 0-9 and _$()+-")
        }
    }

    public static func directory(of name: String, in dataDirectory: URL) -> URL {
        dataDirectory.appendingPathComponent("\(name).sofa", isDirectory: true)
    }

    public static func databaseFile(of name: String, in dataDirectory: URL) -> URL {
        directory(of: name, in: dataDirectory).appendingPathComponent("db.sqlite3")
    }
}
