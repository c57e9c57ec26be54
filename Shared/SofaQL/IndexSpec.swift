public import SofaCore
internal import Foundation

/// The kinds of index, numbered as LiteCore numbers them in the `indexes` table.
public enum IndexKind: Int, Sendable, CaseIterable {
    case value = 0
    case fullText = 1
    case array = 2

    public var name: String {
        switch self {
        case .value: return "value"
        case .fullText: return "full-text"
        case .array: return "array"
        }
    }
}

/// An index as storage creates it: a name (1–251 characters of `[A-Za-z0-9_%-]`, unique in its
/// collection), a kind, and what it indexes:
///
/// * value: expressions (JSON query expressions, e.g. `[".name.last"]`) → a SQLite index on
///   those expressions, named `<table>:value:<name>`;
/// * full-text: expressions whose strings are indexed → an FTS5 table `<table>::<name>` kept
///   current by triggers; English stems words (Porter), other languages only split them;
/// * array: a path to an array, `a` or nested `a[].b` (each element of `a`, then each element of
///   its `b`) → a table `<table>:unnest:<name>` of (docid, i, value) with an index on value, kept
///   current by triggers, which UNNEST and ANY…SATISFIES over that path read instead of parsing
///   every document.
public struct IndexSpec: Sendable, Hashable {
    public var name: String
    public var kind: IndexKind
    public var collection: CollectionName
    public var expressions: [JSON]
    public var arrayPath: String?
    public var language: String?
    public var ignoreDiacritics: Bool
    /// Full-text: words are indexed as written, not stemmed (LiteCore's `disableStemming`).
    public var disableStemming: Bool
    /// Full-text: the stop words, separated by spaces (or commas), in place of the language's
    /// list; "" for none. Nil: the language's list (English has one).
    public var stopWords: String?

    public init(name: String, kind: IndexKind, collection: CollectionName, expressions: [JSON] = [],
                arrayPath: String? = nil, language: String? = nil, ignoreDiacritics: Bool = false,
                disableStemming: Bool = false, stopWords: String? = nil) {
        self.name = name
        self.kind = kind
        self.collection = collection
        self.expressions = expressions
        self.arrayPath = arrayPath
        self.language = language
        self.ignoreDiacritics = ignoreDiacritics
        self.disableStemming = disableStemming
        self.stopWords = stopWords
    }

    /// The JSON kept in the `indexes` table's `expression` column.
    public var descriptor: JSON {
        var object: JSONObject = ["kind": .string(kind.name), "expressions": .array(expressions)]
        if let arrayPath { object["path"] = .string(arrayPath) }
        if let language { object["language"] = .string(language) }
        if ignoreDiacritics { object["ignoreDiacritics"] = true }
        if disableStemming { object["disableStemming"] = true }
        if let stopWords { object["stopWords"] = .string(stopWords) }
        return .object(object)
    }

    public init(name: String, kind: IndexKind, collection: CollectionName, descriptor: JSON) {
        self.init(name: name, kind: kind, collection: collection,
                  expressions: descriptor["expressions"]?.arrayValue ?? [],
                  arrayPath: descriptor["path"]?.stringValue, language: descriptor["language"]?.stringValue,
                  ignoreDiacritics: descriptor["ignoreDiacritics"]?.boolValue ?? false,
                  disableStemming: descriptor["disableStemming"]?.boolValue ?? false,
                  stopWords: descriptor["stopWords"]?.stringValue)
    }

    /// The full-text index's stop words: its own list, or its language's (English has one).
    public var fullTextStopWords: [String] {
        FullText.stopWords(language: language, custom: stopWords)
    }

    /// The table (or SQLite index) that holds the index.
    public var table: String {
        switch kind {
        case .value: return "\(collection.tableName):value:\(name)"
        case .fullText: return "\(collection.tableName)::\(name)"
        case .array: return "\(collection.tableName):unnest:\(name)"
        }
    }

    /// The most expressions an index may have, and the most bytes of JSON they may take.
    public static let maxExpressions = 64
    public static let maxDefinitionBytes = 16 * 1024

    /// Checks the name and the definition.
    public func validate() throws(SofaError) {
        guard !name.isEmpty, name.utf8.count <= CollectionName.maxNameLength,
              name.utf8.allSatisfy({ CollectionName.allowed.contains($0) }) else {
            throw SofaError(.invalidParameter, "invalid index name '\(name)': 1–251 characters of A-Z a-z 0-9 _ % -")
        }
        // Every write evaluates an index's expressions: a definition's size and width are bounded.
        guard expressions.count <= Self.maxExpressions else {
            throw SofaError(.invalidQuery, "an index has at most \(Self.maxExpressions) expressions, not \(expressions.count)")
        }
        guard JSON.array(expressions).compactBytes().count <= Self.maxDefinitionBytes else {
            throw SofaError(.invalidQuery, "an index's expressions are at most \(Self.maxDefinitionBytes) bytes of JSON")
        }
        if let stopWords, stopWords.utf8.count > Self.maxDefinitionBytes {
            throw SofaError(.invalidQuery, "an index's stop words are at most \(Self.maxDefinitionBytes) bytes")
        }
        // An empty expression (`""`, `[]`, `[""]`) is refused, as LiteCore refuses it.
        for expression in expressions where [JSON.string(""), .array([]), .array([.string("")])].contains(expression) {
            throw SofaError(.invalidQuery, "an index expression cannot be empty")
        }
        switch kind {
        case .value, .fullText:
            guard !expressions.isEmpty else { throw SofaError(.invalidQuery, "a \(kind.name) index needs at least one expression") }
        case .array:
            guard arrayPath != nil else { throw SofaError(.invalidQuery, "an array index needs a path, e.g. likes or a[].b") }
            _ = try arraySegments()
        }
    }

    /// `a[].b` → [a, b].
    public func arraySegments() throws(SofaError) -> [PropertyPath] {
        guard let arrayPath else { return [] }
        var text = arrayPath
        if text.hasSuffix("[]") { text.removeLast(2) }
        var segments: [PropertyPath] = []
        for part in text.components(separatedBy: "[].") {
            let path = try PropertyPath.parse(part)
            guard !path.isEmpty else { throw SofaError(.invalidQuery, "invalid array index path '\(arrayPath)'") }
            segments.append(path)
        }
        return segments
    }

    /// SQL for an expression over a document body column (`body`, or `new.body` in a trigger).
    func expressionSQL(_ expression: JSON, body: String) throws(SofaError) -> String {
        try QueryCompiler.indexExpression(expression, body: body)
    }

    /// The statements that create the index and fill it from existing rows.
    public func createSQL() throws(SofaError) -> [String] {
        try validate()
        let kv = collection.table
        let quoted = "\"\(table)\""
        let live = "(new.flags & 32769) = 0"
        switch kind {
        case .value:
            var columns: [String] = []
            for e in expressions { columns.append(try expressionSQL(e, body: "body")) }
            return ["CREATE INDEX \(quoted) ON \(kv) (\(columns.joined(separator: ", ")))"]
        case .fullText:
            let columnNames = expressions.indices.map { "c\($0)" }
            let tokenizer = FullText.tokenizer(language: language, ignoreDiacritics: ignoreDiacritics,
                                               disableStemming: disableStemming, stopWords: stopWords)
            var newValues: [String] = [], rowValues: [String] = []
            for e in expressions {
                newValues.append("core_fts_text(\(try expressionSQL(e, body: "new.body")))")
                rowValues.append("core_fts_text(\(try expressionSQL(e, body: "body")))")
            }
            let insert = "INSERT INTO \(quoted) (rowid, \(columnNames.joined(separator: ", "))) SELECT new.rowid, \(newValues.joined(separator: ", ")) WHERE \(live);"
            return [
                "CREATE VIRTUAL TABLE \(quoted) USING fts5(\(columnNames.joined(separator: ", ")), tokenize = '\(tokenizer)')",
                "CREATE TRIGGER \"\(table)::ins\" AFTER INSERT ON \(kv) BEGIN \(insert) END",
                "CREATE TRIGGER \"\(table)::del\" AFTER DELETE ON \(kv) BEGIN DELETE FROM \(quoted) WHERE rowid = old.rowid; END",
                "CREATE TRIGGER \"\(table)::upd\" AFTER UPDATE OF body, flags ON \(kv) BEGIN DELETE FROM \(quoted) WHERE rowid = old.rowid; \(insert) END",
                "INSERT INTO \(quoted) (rowid, \(columnNames.joined(separator: ", "))) SELECT rowid, \(rowValues.joined(separator: ", ")) FROM \(kv) WHERE (flags & 32769) = 0",
            ]
        case .array:
            let segments = try arraySegments()
            let tables = arrayTables(levels: segments.count).map { "\"\($0)\"" }
            /// Rows of level `level` belonging to the document row `doc`.
            func owned(_ level: Int, _ doc: String) -> String {
                level == 0 ? "docid = \(doc)" : "docid IN (SELECT rowid FROM \(tables[level - 1]) WHERE \(owned(level - 1, doc)))"
            }
            // Level 0 from the document; level i from the rows of level i-1 owned by the document.
            func insertFor(_ doc: String, live: String) throws(SofaError) -> String {
                // (`doc` is new.rowid: level 0 reads new.body.)
                var parts: [String] = []
                for (level, segment) in segments.enumerated() {
                    if level == 0 {
                        parts.append("INSERT INTO \(tables[0]) (docid, i, value) SELECT new.rowid, j.key, core_element(j.type, j.value) FROM json_each(core_unnest_text(\(try QueryCompiler.access("new.body", segment)))) AS j WHERE \(live);")
                    } else {
                        parts.append("INSERT INTO \(tables[level]) (docid, i, value) SELECT p.rowid, j.key, core_element(j.type, j.value) FROM \(tables[level - 1]) AS p, json_each(core_unnest_text(\(try QueryCompiler.access("p.value", segment)))) AS j WHERE p.\(owned(level - 1, doc));")
                    }
                }
                return parts.joined(separator: " ")
            }
            func deleteFor(_ doc: String) -> String {
                (0..<segments.count).reversed().map { "DELETE FROM \(tables[$0]) WHERE \(owned($0, doc));" }.joined(separator: " ")
            }
            var statements: [String] = []
            for (level, name) in arrayTables(levels: segments.count).enumerated() {
                statements.append("CREATE TABLE \(tables[level]) (docid INTEGER NOT NULL, i INTEGER, value)")
                statements.append("CREATE INDEX \"\(name):value\" ON \(tables[level]) (value)")
                statements.append("CREATE INDEX \"\(name):docid\" ON \(tables[level]) (docid)")
            }
            // The index's expressions, over the deepest level's elements: a query on a property of
            // the UNNEST alias (`shape.color`) searches them, as LiteCore's array index serves it.
            if !expressions.isEmpty {
                var columns: [String] = []
                for e in expressions { columns.append(try expressionSQL(e, body: "value")) }
                statements.append("CREATE INDEX \"\(table):expressions\" ON \(tables[segments.count - 1]) (\(columns.joined(separator: ", ")))")
            }
            statements += [
                "CREATE TRIGGER \"\(table)::ins\" AFTER INSERT ON \(kv) BEGIN \(try insertFor("new.rowid", live: live)) END",
                "CREATE TRIGGER \"\(table)::del\" AFTER DELETE ON \(kv) BEGIN \(deleteFor("old.rowid")) END",
                "CREATE TRIGGER \"\(table)::upd\" AFTER UPDATE OF body, flags ON \(kv) BEGIN \(deleteFor("old.rowid")) \(try insertFor("new.rowid", live: live)) END",
            ]
            // Existing documents, level by level.
            for (level, segment) in segments.enumerated() {
                if level == 0 {
                    statements.append("INSERT INTO \(tables[0]) (docid, i, value) SELECT t.rowid, j.key, core_element(j.type, j.value) FROM \(kv) AS t, json_each(core_unnest_text(\(try QueryCompiler.access("t.body", segment)))) AS j WHERE (t.flags & 32769) = 0")
                } else {
                    statements.append("INSERT INTO \(tables[level]) (docid, i, value) SELECT p.rowid, j.key, core_element(j.type, j.value) FROM \(tables[level - 1]) AS p, json_each(core_unnest_text(\(try QueryCompiler.access("p.value", segment)))) AS j")
                }
            }
            return statements
        }
    }

    /// An array index's tables, one per level of its path: `a[].b` has `<table>:0` (elements of
    /// `a`, by document rowid) and `<table>` (elements of each of those's `b`, by the rowid of
    /// the level above). A one-level index is just `<table>`.
    public func arrayTables(levels: Int) -> [String] {
        (0..<levels).map { $0 == levels - 1 ? table : "\(table):\($0)" }
    }

    /// The statements that drop the index and everything that keeps it current.
    public func dropSQL() -> [String] {
        let quoted = "\"\(table)\""
        switch kind {
        case .value: return ["DROP INDEX IF EXISTS \(quoted)"]
        case .fullText, .array:
            let levels = kind == .array ? max(1, (try? arraySegments().count) ?? 1) : 1
            return ["DROP TRIGGER IF EXISTS \"\(table)::ins\"", "DROP TRIGGER IF EXISTS \"\(table)::del\"",
                    "DROP TRIGGER IF EXISTS \"\(table)::upd\""]
                + arrayTables(levels: levels).map { "DROP TABLE IF EXISTS \"\($0)\"" }
        }
    }
}

/// A row of the `indexes` table.
struct IndexRecord {
    var name: String
    var kind: IndexKind
    var keyStore: String
    var table: String
    /// An array index's path, level by level, and its tables.
    var arraySegments: [PropertyPath] = []
    var arrayTables: [String] = []
    var language: String?
    /// A full-text index's stop words (MATCH text leaves them out as the index does).
    var stopWords: [String] = []
    /// The property path of each indexed expression ("" when it is not a plain property).
    var columnPaths: [String] = []

    init?(row: [JSON?]) {
        guard let name = row[0]?.stringValue, let type = row[1]?.intValue, let kind = IndexKind(rawValue: Int(type)),
              let keyStore = row[2]?.stringValue, let table = row[4]?.stringValue,
              let collection = CollectionName(keyStore: keyStore) else { return nil }
        self.name = name
        self.kind = kind
        self.keyStore = keyStore
        self.table = table
        if let text = row[3]?.stringValue, let descriptor = JSON.tryParse(text) {
            let spec = IndexSpec(name: name, kind: kind, collection: collection, descriptor: descriptor)
            if kind == .array, let segments = try? spec.arraySegments() {
                arraySegments = segments
                arrayTables = spec.arrayTables(levels: segments.count)
            }
            language = spec.language
            if kind == .fullText { stopWords = spec.fullTextStopWords }
            columnPaths = spec.expressions.map { expression in
                guard case .array(let parts) = expression, parts.count == 1, let op = parts[0].stringValue,
                      op.hasPrefix("."), let path = PropertyPath.tryParse(String(op.dropFirst())) else { return "" }
                return path.description
            }
        }
    }
}
