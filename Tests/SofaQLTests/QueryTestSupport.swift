import Foundation
import SofaCore
@testable import SofaQL

/// A database laid out as storage lays it out (a `kv_default` table, `indexes`), built in a
/// temporary file by a writable connection, with a read-only connection for queries.
final class TestDatabase {
    let directory: URL
    let writer: QueryConnection
    let reader: QueryConnection
    private var sequence: Int64 = 0

    init(_ docs: [(String, String)] = [], deleted: [(String, String)] = []) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sofaql-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("db.sqlite3").path
        writer = try QueryConnection(path: path, readOnly: false)
        try writer.execute("""
            PRAGMA journal_mode=WAL;
            CREATE TABLE indexes (name TEXT PRIMARY KEY, type INTEGER NOT NULL, keyStore TEXT NOT NULL, expression TEXT, indexTableName TEXT);
            CREATE TABLE "kv_default" (key TEXT PRIMARY KEY, sequence INTEGER, flags INTEGER DEFAULT 0, version BLOB, body BLOB, extra BLOB, expiration INTEGER);
            CREATE TABLE "kv_.other" (key TEXT PRIMARY KEY, sequence INTEGER, flags INTEGER DEFAULT 0, version BLOB, body BLOB, extra BLOB, expiration INTEGER);
            """)
        reader = try QueryConnection(path: path, readOnly: true)
        for (id, body) in docs { try put(id, body) }
        for (id, body) in deleted { try put(id, body, flags: 1) }
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    func put(_ id: String, _ body: String, flags: Int = 0, table: String = "kv_default") throws {
        sequence += 1
        let json = try JSON.parse(body).compactString
        let hex = json.utf8.map { String(format: "%02x", $0) }.joined()
        try writer.execute("""
            INSERT INTO "\(table)" (key, sequence, flags, version, body) VALUES ('\(id)', \(sequence), \(flags), x'', x'\(hex)')
            ON CONFLICT(key) DO UPDATE SET sequence = excluded.sequence, flags = excluded.flags, body = excluded.body
            """)
    }

    func createIndex(_ spec: IndexSpec) throws {
        for sql in try spec.createSQL() { try writer.execute(sql) }
        let descriptor = spec.descriptor.compactString.replacingOccurrences(of: "'", with: "''")
        try writer.execute("INSERT INTO indexes VALUES ('\(spec.name)', \(spec.kind.rawValue), '\(spec.collection.keyStore)', '\(descriptor)', '\(spec.table)')")
    }

    func compile(_ query: JSON) throws -> CompiledQuery {
        try QueryCompiler.compile(query, schema: try reader.schema())
    }

    /// Rows of a query given as JSON text, each row as compact JSON with MISSING shown as `?`.
    func rows(_ queryJSON: String, _ parameters: JSONObject = [:]) throws -> [String] {
        let compiled = try compile(try JSON.parse(queryJSON))
        var out: [String] = []
        try reader.run(compiled, parameters: parameters) { row in
            out.append("[" + row.map { $0?.compactString ?? "?" }.joined(separator: ",") + "]")
        }
        return out
    }

    func titles(_ queryJSON: String) throws -> [String] {
        try compile(try JSON.parse(queryJSON)).columns
    }
}
