public import SofaCore
internal import Foundation

/// What `schema()` read at one schema version.
struct QuerySchemaCache {
    var version: Int64
    var tables: Set<String>
    var indexes: [IndexRecord]
}

/// What the query compiler needs to know of a database, and `BLOB()`.
extension SQLiteConnection {
    /// What the compiler needs to know about this database, re-read when the schema changes.
    public func schema() throws(SofaError) -> QuerySchema {
        let version = try schemaVersion()
        if schemaCache?.version != version {
            var tables = Set<String>()
            try query("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'kv\\_%' ESCAPE '\\'", []) { row throws(SofaError) in
                if let name = row[0]?.stringValue { tables.insert(name) }
            }
            var indexes: [IndexRecord] = []
            try query("SELECT name, type, keyStore, expression, indexTableName FROM indexes", []) { row throws(SofaError) in
                if let record = IndexRecord(row: row) { indexes.append(record) }
            }
            schemaCache = QuerySchemaCache(version: version, tables: tables, indexes: indexes)
        }
        let tables = schemaCache?.tables ?? []
        let indexes = schemaCache?.indexes ?? []
        return QuerySchema(
            hasCollection: { tables.contains($0.tableName) },
            fullTextTable: { collection, name in
                indexes.first { $0.keyStore == collection.keyStore && $0.name == name && $0.kind == .fullText }
                    .map { FullTextIndexTable(table: $0.table, language: $0.language, columns: $0.columnPaths, stopWords: $0.stopWords) }
            },
            arrayIndexes: { collection in
                indexes.filter { $0.keyStore == collection.keyStore && $0.kind == .array && !$0.arraySegments.isEmpty }
                    .map { ArrayIndexTables(segments: $0.arraySegments, tables: $0.arrayTables) }
            })
    }

    /// The `PRAGMA schema_version`, which changes whenever an index or collection does.
    public func schemaVersion() throws(SofaError) -> Int64 {
        var version: Int64 = 0
        try query("PRAGMA schema_version", []) { row throws(SofaError) in version = row[0]?.intValue ?? 0 }
        return version
    }

    /// Adds `core_blob(dict)` for `BLOB(path)`: the contents of the blob a `{"@type":"blob",
    /// "digest":"sha1-…"}` dictionary references, as base64 text (how JSON carries data).
    /// `read` gives a digest's content (decrypted, checked against the digest), nil when the
    /// digest is malformed or the database lacks that blob. MISSING for anything that is not
    /// such a reference or whose blob is absent.
    public func enableBlobs(read: @escaping @Sendable (_ digest: String) throws(SofaError) -> [UInt8]?) throws(SofaError) {
        dispatchPrecondition(condition: .onQueue(queue))
        let function = SQLFunction("core_blob", arity: 1, deterministic: false) { args throws(SofaError) in
            guard case .json(.object(let dict)) = args[0], let digest = dict["digest"]?.stringValue,
                  let data = try read(digest) else { return .missing }
            if let length = dict["length"]?.intValue, Int64(data.count) != length {
                throw SofaError(.corruptData, "BLOB(): blob \(digest) has \(data.count) bytes, the document says \(length)")
            }
            return .text(Data(data).base64EncodedString())
        }
        try SQLFunctions.register([function], on: handle)
    }
}
