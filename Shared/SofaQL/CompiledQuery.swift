public import SofaCore

/// A query compiled to one SQLite SELECT over a database's `kv_*` tables.
///
/// Literal strings and `$parameters` are never spliced into the SQL: they are bindings (`?1`,
/// `?2`, … in order), so nothing a query says can change the statement's shape. Property paths
/// are spliced as quoted string literals (they must be, for SQLite to match index expressions).
public struct CompiledQuery: Sendable {
    public enum Binding: Sendable, Hashable {
        case literal(SQLValue)
        case parameter(String)
    }

    public var sql: String
    /// Column titles, as LiteCore names them.
    public var columns: [String]
    public var bindings: [Binding]
    /// The tables the query reads (to know which changes can affect it).
    public var collections: [CollectionName]

    /// The values to bind, given the query's parameters (an absent parameter is MISSING).
    public func values(parameters: JSONObject) -> [SQLValue] {
        bindings.map {
            switch $0 {
            case .literal(let value): return value
            // A parameter bound to JSON null is left unbound, as LiteCore does: MISSING.
            case .parameter(let name): return parameters[name] == .null ? .missing : SQLValue(parameters[name])
            }
        }
    }

    /// The names of the parameters the query uses.
    public var parameterNames: [String] {
        bindings.compactMap { if case .parameter(let n) = $0 { return n } else { return nil } }
    }
}

/// What the compiler needs to know about the database it compiles for.
public struct QuerySchema: Sendable {
    /// Whether a collection exists.
    public var hasCollection: @Sendable (CollectionName) -> Bool
    /// A full-text index on a collection, by index name.
    public var fullTextTable: @Sendable (CollectionName, String) -> FullTextIndexTable?
    /// The array indexes of a collection.
    public var arrayIndexes: @Sendable (CollectionName) -> [ArrayIndexTables]
    /// The database's name, which FROM may use for its default collection (as LiteCore allows),
    /// unless a collection of that name exists; nil when not known.
    public var databaseName: String?

    public init(hasCollection: @escaping @Sendable (CollectionName) -> Bool,
                fullTextTable: @escaping @Sendable (CollectionName, String) -> FullTextIndexTable? = { _, _ in nil },
                arrayIndexes: @escaping @Sendable (CollectionName) -> [ArrayIndexTables] = { _ in [] },
                databaseName: String? = nil) {
        self.hasCollection = hasCollection
        self.fullTextTable = fullTextTable
        self.arrayIndexes = arrayIndexes
        self.databaseName = databaseName
    }
}

/// An array index as the planner uses it: its path level by level (`a[].b` → [a, b]) and the
/// table of each level (level 0 rows point at documents, level i rows at level i-1 rows).
public struct ArrayIndexTables: Sendable, Hashable {
    public var segments: [PropertyPath]
    public var tables: [String]

    public init(segments: [PropertyPath], tables: [String]) {
        self.segments = segments
        self.tables = tables
    }
}

/// A full-text index as MATCH uses it: its FTS table, language, and the property path of each of
/// its columns (`c0`, `c1`, … in the table; "" for a column that is not a plain property), so a
/// MATCH can name a column as `contact.address.street:Santa`.
public struct FullTextIndexTable: Sendable, Hashable {
    public var table: String
    public var language: String?
    public var columns: [String]
    /// The index's stop words, which MATCH text leaves out.
    public var stopWords: [String]

    public init(table: String, language: String?, columns: [String], stopWords: [String] = []) {
        self.table = table
        self.language = language
        self.columns = columns
        self.stopWords = stopWords
    }
}
