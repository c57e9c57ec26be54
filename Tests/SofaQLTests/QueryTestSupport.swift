import Foundation
import SofaCore
@testable import SofaQL

/// A database laid out as storage lays it out (a `kv_default` table, `indexes`), built in a
/// temporary file by a writable connection, with a read-only connection for queries.
final class TestDatabase {
    let directory: URL
    let path: String
    let writer: Confined<SQLiteConnection>
    let reader: Confined<SQLiteConnection>
    private var sequence: Int64 = 0

    init(_ docs: [(String, String)] = [], deleted: [(String, String)] = []) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sofaql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("db.sqlite3").path
        writer = try Self.open(path, .scratch)
        try writer.sync { (connection) throws(SofaError) in try connection.execute("""
            PRAGMA journal_mode=WAL;
            CREATE TABLE indexes (name TEXT PRIMARY KEY, type INTEGER NOT NULL, keyStore TEXT NOT NULL, expression TEXT, indexTableName TEXT);
            CREATE TABLE "kv_default" (key TEXT PRIMARY KEY, sequence INTEGER, flags INTEGER DEFAULT 0, version BLOB, body BLOB, extra BLOB, expiration INTEGER);
            CREATE TABLE "kv_.other" (key TEXT PRIMARY KEY, sequence INTEGER, flags INTEGER DEFAULT 0, version BLOB, body BLOB, extra BLOB, expiration INTEGER);
            """) }
        reader = try Self.open(path, .queryWorker)
        for (id, body) in docs { try put(id, body) }
        for (id, body) in deleted { try put(id, body, flags: 1) }
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// A connection to `path` on a queue of its own.
    static func open(_ path: String, _ options: SQLiteConnection.Options) throws(SofaError) -> Confined<SQLiteConnection> {
        try Confined.make(on: DispatchQueue(label: "sofaql.test")) { (queue) throws(SofaError) in
            try SQLiteConnection(path: path, queue: queue, options: options)
        }
    }

    /// Runs SQL on the writable connection.
    func write(_ sql: String) throws(SofaError) {
        try writer.sync { (connection) throws(SofaError) in try connection.execute(sql) }
    }

    /// `body` on the read-only connection.
    func read<T>(_ body: (SQLiteConnection) throws(SofaError) -> T) throws(SofaError) -> T {
        try reader.sync { (connection) throws(SofaError) -> T in try body(connection) }
    }

    func put(_ id: String, _ body: String, flags: Int = 0, table: String = "kv_default") throws {
        sequence += 1
        let json = try JSON.parse(body).compactString
        let hex = json.utf8.map { String(format: "%02x", $0) }.joined()
        try write("""
            INSERT INTO "\(table)" (key, sequence, flags, version, body) VALUES ('\(id)', \(sequence), \(flags), x'', x'\(hex)')
            ON CONFLICT(key) DO UPDATE SET sequence = excluded.sequence, flags = excluded.flags, body = excluded.body
            """)
    }

    func createIndex(_ spec: IndexSpec) throws {
        for sql in try spec.createSQL() { try write(sql) }
        let descriptor = spec.descriptor.compactString.replacingOccurrences(of: "'", with: "''")
        try write("INSERT INTO indexes VALUES ('\(spec.name)', \(spec.kind.rawValue), '\(spec.collection.keyStore)', '\(descriptor)', '\(spec.table)')")
    }

    /// The database's name the compiler is told (FROM may name the default collection by it).
    var databaseName: String?

    func compile(_ query: JSON) throws -> CompiledQuery {
        var schema = try read { (connection) throws(SofaError) in try connection.schema() }
        schema.databaseName = databaseName
        return try QueryCompiler.compile(query, schema: schema)
    }

    /// Rows of a query given as JSON text, each row as compact JSON with MISSING shown as `?`.
    func rows(_ queryJSON: String, _ parameters: JSONObject = [:]) throws -> [String] {
        let compiled = try compile(try JSON.parse(queryJSON))
        var out: [String] = []
        try read { (connection) throws(SofaError) in
            try connection.run(compiled, parameters: parameters) { row in
                out.append("[" + row.map { $0?.compactString ?? "?" }.joined(separator: ",") + "]")
            }
        }
        return out
    }

    func titles(_ queryJSON: String) throws -> [String] {
        try compile(try JSON.parse(queryJSON)).columns
    }
}
