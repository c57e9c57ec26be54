public import SofaQL
public import SofaCore
public import SofaWire

/// Index DDL: storage owns the schema, so indexes are created and dropped here, in a write
/// transaction like any other write, and recorded in the `indexes` table that query workers read.
/// Triggers (full-text, array) and index expressions call Sofa's SQL functions, which every
/// storage connection registers.
extension DatabaseStore {
    /// Creates an index; creating one that exists with the same definition does nothing, with a
    /// different definition replaces it (as Couchbase Lite does).
    public func createIndex(_ definition: IndexDefinition, in collection: CollectionName) async throws(SofaError) {
        try check(collection)
        guard let kind = IndexKind(rawValue: Int(definition.kind)) else {
            throw .invalid("unknown index kind \(definition.kind): 0 value, 1 full-text, 2 array")
        }
        let spec = IndexSpec(name: definition.name, kind: kind, collection: collection, descriptor: definition.descriptor)
        let statements = try spec.createSQL()
        let descriptor = spec.descriptor.compactString
        try await perform { (tx: Transaction) throws(SofaError) -> Result<Void, SofaError> in
            var existing: (keyStore: String, type: Int64, expression: String)? = nil
            try tx.db.run("SELECT keyStore, type, expression FROM indexes WHERE name = ?", [.text(spec.name)]) { row in
                existing = (row.text(0), row.integer(1), row.text(2))
            }
            if let existing, existing.keyStore != collection.keyStore {
                let owner = CollectionName(keyStore: existing.keyStore)?.description ?? existing.keyStore
                return .failure(SofaError(.conflict, "index name '\(spec.name)' is in use by collection \(owner)"))
            }
            if let existing {
                if existing.type == Int64(kind.rawValue) && existing.expression == descriptor { return .success(()) }
                if let old = IndexKind(rawValue: Int(existing.type)), let json = JSON.tryParse(existing.expression) {
                    let previous = IndexSpec(name: spec.name, kind: old, collection: collection, descriptor: json)
                    for sql in previous.dropSQL() { try tx.db.execute(sql) }
                }
                try tx.db.run("DELETE FROM indexes WHERE name = ? AND keyStore = ?", [.text(spec.name), .text(collection.keyStore)])
            }
            for sql in statements { try tx.db.execute(sql) }
            try tx.db.run("INSERT INTO indexes (name, type, keyStore, expression, indexTableName) VALUES (?, ?, ?, ?, ?)",
                          [.text(spec.name), .integer(Int64(kind.rawValue)), .text(collection.keyStore), .text(descriptor), .text(spec.table)])
            return .success(())
        }
    }

    /// Drops an index of the collection (nothing to do when there is none by that name).
    public func deleteIndex(_ name: String, in collection: CollectionName) async throws(SofaError) {
        try check(collection)
        try await perform { (tx: Transaction) throws(SofaError) -> Result<Void, SofaError> in
            var found: (Int64, String)? = nil
            try tx.db.run("SELECT type, expression FROM indexes WHERE name = ? AND keyStore = ?",
                          [.text(name), .text(collection.keyStore)]) { row in found = (row.integer(0), row.text(1)) }
            // Deleting an index that does not exist does nothing (LiteCore's rule).
            guard let (type, expression) = found, let kind = IndexKind(rawValue: Int(type)) else { return .success(()) }
            let spec = IndexSpec(name: name, kind: kind, collection: collection, descriptor: JSON.tryParse(expression) ?? [:])
            for sql in spec.dropSQL() { try tx.db.execute(sql) }
            try tx.db.run("DELETE FROM indexes WHERE name = ? AND keyStore = ?", [.text(name), .text(collection.keyStore)])
            return .success(())
        }
    }

    /// Drops every index of a collection (when the collection is deleted), inside `tx`.
    static func dropIndexes(of collection: CollectionName, _ db: SQLiteConnection) throws(SofaError) {
        var specs: [IndexSpec] = []
        try db.run("SELECT name, type, expression FROM indexes WHERE keyStore = ?", [.text(collection.keyStore)]) { row in
            if let kind = IndexKind(rawValue: Int(row.integer(1))) {
                specs.append(IndexSpec(name: row.text(0), kind: kind, collection: collection, descriptor: JSON.tryParse(row.text(2)) ?? [:]))
            }
        }
        for spec in specs { for sql in spec.dropSQL() { try db.execute(sql) } }
        try db.run("DELETE FROM indexes WHERE keyStore = ?", [.text(collection.keyStore)])
    }

    /// The collection's indexes, by name.
    public func listIndexes(in collection: CollectionName) async throws(SofaError) -> [IndexDefinition] {
        try check(collection)
        return try await read { (reader) throws(SofaError) -> [IndexDefinition] in
            var list: [IndexDefinition] = []
            try reader.run("SELECT name, type, expression FROM indexes WHERE keyStore = ? ORDER BY name", [.text(collection.keyStore)]) { row in
                list.append(IndexDefinition(kind: Int32(row.integer(1)), name: row.text(0), collection: collection.description,
                                            descriptor: JSON.tryParse(row.text(2)) ?? [:]))
            }
            return list
        }
    }
}
