public import SofaCore
internal import Foundation

/// LiteCore's JSON query tree → one SQLite SELECT.
///
/// `["SELECT", {…}]` or the bare dictionary with `WHAT`, `FROM`, `WHERE`, `GROUP_BY`, `HAVING`,
/// `ORDER_BY`, `LIMIT`, `OFFSET`, `DISTINCT`. Each FROM collection becomes `kv_<store> AS tN`,
/// each UNNEST a `json_each` (or an array index's table) `AS uN`; expressions become SQL over the
/// value encoding of `SQLValue` (see `CoreFunctions`). Deleted documents are left out unless the
/// query mentions `meta().deleted`. Example:
///
///     {"WHAT": [[".name.first"]], "WHERE": [">", [".age"], 30]}
///     → SELECT core_value(t0.body, 'name.first') FROM "kv_default" AS t0
///       WHERE (core_value(t0.body, 'age') > 30) AND (t0.flags & 32769) = 0
public struct QueryCompiler {
    struct Source {
        enum Kind: Equatable { case collection(CollectionName), unnest }
        var alias: String
        var sqlAlias: String
        var kind: Kind
        /// A scoped collection named without AS (`small.nested`): its bare name (`nested`), which
        /// properties may begin with too (LiteCore's rule), and its `.` column's title alone.
        var shortName: String? = nil
        /// SQL for the source's value (a document body, or an unnested element).
        var value: String
        /// An UNNEST served by an array index: the index and the level of its path.
        var arrayIndex: (tables: ArrayIndexTables, level: Int)? = nil
    }

    let schema: QuerySchema
    var sources: [Source] = []
    var bindings: [CompiledQuery.Binding] = []
    var variables: [String: String] = [:]
    var collation: Collation? = nil
    var whatAliases: [String: String] = [:]
    /// FTS joins added by MATCH()/RANK(): index name → SQL alias of the FTS table.
    var fullTextJoins: [(index: String, table: String, sqlAlias: String, source: String)] = []
    /// The full-text indexes (by SQL alias of their join) a MATCH has already searched.
    var matched: Set<String> = []
    var mentionsDeleted = false
    /// The collections subqueries read (`subquery`).
    var subqueryCollections: [CollectionName] = []
    /// Whether FROM names more than one source (a JOIN or an UNNEST): then every property begins
    /// with an alias (`implicitSource(of:)`).
    var fromHasSeveralItems = false
    var counter = 0
    /// How many expressions are being compiled inside one another (bounded by `QueryLimits`).
    var depth = 0
    /// Whether the next expression compiled is at the top of a clause, or under ANDs there only.
    var matchAllowed = true

    public static func compile(_ query: JSON, schema: QuerySchema) throws(SofaError) -> CompiledQuery {
        var compiler = QueryCompiler(schema: schema)
        return try compiler.compileSelect(query)
    }

    static func invalid(_ message: String) -> SofaError { SofaError(.invalidQuery, message) }

    mutating func nextAlias(_ prefix: String) -> String {
        counter += 1
        return "\(prefix)\(counter)"
    }

    static let keys: Set<String> = ["WHAT", "FROM", "WHERE", "GROUP_BY", "HAVING", "ORDER_BY", "LIMIT", "OFFSET", "DISTINCT"]

    mutating func compileSelect(_ query: JSON) throws(SofaError) -> CompiledQuery {
        var tree = query
        if case .array(let items) = query, items.first?.stringValue?.uppercased() == "SELECT" {
            guard items.count == 2 else { throw Self.invalid("[\"SELECT\", {…}] takes one dictionary") }
            tree = items[1]
        } else if query.objectValue == nil {
            // Anything else is a WHERE clause on its own (LiteCore's oldest form, `["=", [".a"], 1]`).
            tree = .object(["WHERE": query])
        }
        guard case .object(let select) = tree else {
            throw Self.invalid("a query must be a dictionary or [\"SELECT\", {…}], not \(query.compactString.prefix(80))")
        }
        for key in select.keys where !Self.keys.contains(key.uppercased()) {
            throw Self.invalid("unknown key '\(key)' in SELECT")
        }
        func clause(_ name: String) -> JSON? { select.first { $0.key.uppercased() == name }?.value }

        try compileFrom(clause("FROM"))

        // WHAT (default: the document's ID and sequence, titled `_id` and `_sequence`, as LiteCore)
        var whatItems: [JSON] = [.array([.string("._id")]), .array([.string("._sequence")])]
        if fromHasSeveralItems, let main = sources.first {
            // The default columns are the main source's (LiteCore's), whatever else FROM names.
            let prefix = "." + N1QLVocabulary.quoteComponent(main.alias)
            whatItems = [.array([.string(prefix + "._id")]), .array([.string(prefix + "._sequence")])]
        }
        var defaultTitles: [String]? = ["_id", "_sequence"]
        if let what = clause("WHAT") {
            guard case .array(let items) = what, !items.isEmpty else { throw Self.invalid("WHAT must be a non-empty array") }
            whatItems = items
            defaultTitles = nil
        }
        var columns: [String] = []
        var names: [String?] = []
        var explicit: Set<String> = []
        for item in whatItems {
            // A bare string is a property path (LiteCore's shorthand in WHAT); under AS it is a string.
            var expression = Self.propertyShorthand(item)
            var title: String? = nil
            if case .array(let parts) = expression, parts.first?.stringValue?.uppercased() == "AS" {
                guard parts.count == 3, let name = parts[2].stringValue else { throw Self.invalid("AS takes an expression and a name") }
                expression = parts[1]
                title = name
                explicit.insert(name)
            }
            let sql = try value(expression)
            columns.append(sql)
            if let title { whatAliases[title] = sql }
            names.append(title ?? self.title(of: expression))
        }
        let titles = defaultTitles ?? Self.uniqueTitles(names, explicit: explicit)

        var sql = "SELECT "
        if let distinct = clause("DISTINCT"), distinct.boolValue == true { sql += "DISTINCT " }
        sql += columns.joined(separator: ", ")

        var conditions: [String] = []
        if let whereClause = clause("WHERE") { conditions.append(try condition(whereClause)) }
        var groupBy: [String] = []
        if let group = clause("GROUP_BY") {
            guard case .array(let items) = group else { throw Self.invalid("GROUP_BY must be an array") }
            // A bare string is a property path here too (LiteCore's shorthand in GROUP_BY).
            for item in items { groupBy.append(try value(Self.propertyShorthand(item))) }
        }
        var having: String? = nil
        if let h = clause("HAVING") { having = try condition(h) }
        var orderBy: [String] = []
        if let order = clause("ORDER_BY") {
            guard case .array(let items) = order else { throw Self.invalid("ORDER_BY must be an array") }
            for item in items { orderBy.append(try ordering(item)) }
        }
        var limit: String? = nil, offset: String? = nil
        if let l = clause("LIMIT") { limit = try value(l) }
        if let o = clause("OFFSET") { offset = try value(o) }

        sql += " FROM " + fromSQL()
        // Live documents only: not deleted (unless asked about), never a purge marker.
        for source in sources {
            guard case .collection = source.kind, source.sqlAlias == "t0" || fromKinds[source.sqlAlias] == "CROSS" else { continue }
            conditions.append(liveFilter(source.sqlAlias))
        }
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        if !groupBy.isEmpty { sql += " GROUP BY " + groupBy.joined(separator: ", ") }
        if let having { sql += " HAVING " + having }
        if !orderBy.isEmpty { sql += " ORDER BY " + orderBy.joined(separator: ", ") }
        if let limit {
            sql += " LIMIT max(0, CAST(\(limit) AS INTEGER))"
        } else if offset != nil {
            sql += " LIMIT -1"
        }
        if let offset { sql += " OFFSET max(0, CAST(\(offset) AS INTEGER))" }

        var collections = sources.compactMap { if case .collection(let c) = $0.kind { return c } else { return nil } }
        for collection in subqueryCollections where !collections.contains(collection) { collections.append(collection) }
        return CompiledQuery(sql: sql, columns: titles, bindings: bindings, collections: collections)
    }

    /// A string given where LiteCore's schema takes a bare property path (a WHAT item without
    /// AS, a GROUP_BY item): `".name.first"` or `"name.first"` → `[".name.first"]`; `""` → `["."]`.
    /// Anything else is returned as it is.
    static func propertyShorthand(_ item: JSON) -> JSON {
        guard case .string(let text) = item else { return item }
        return .array([.string(text.hasPrefix(".") ? text : "." + text)])
    }

    /// `(flags & 1) = 0` (not deleted) unless the query reads `meta().deleted`; purge markers
    /// (flag 0x8000) never.
    func liveFilter(_ alias: String) -> String {
        mentionsDeleted ? "(\(alias).flags & 32768) = 0" : "(\(alias).flags & 32769) = 0"
    }

    /// LiteCore's column title of an unaliased expression: a property's last key, the source
    /// alias for `*` (`_doc` when there is no FROM), `ARRAY_COUNT(property)`'s property; nil for
    /// other expressions (they are numbered `$1`, `$2`… by `uniqueTitles`).
    func title(of expression: JSON) -> String? {
        guard case .array(let parts) = expression, let op = parts.first?.stringValue else { return nil }
        if op == "." && parts.count == 1 {
            guard let main = sources.first else { return "_doc" }
            return fromHasSeveralItems ? main.alias : main.shortName ?? main.alias
        }
        if op.lowercased() == "array_count()", parts.count == 2 { return title(of: parts[1]) }
        if op.hasPrefix(".") {
            guard let path = try? Self.path(op, Array(parts.dropFirst())) else { return nil }
            if path.components.count == 1, case .key(let key) = path.components[0], namedSource(key) != nil {
                return key
            }
            if path.components.count == 2, case .key(let alias) = path.components[0], case .key(let key) = path.components[1],
               namedSource(alias) != nil, let meta = Self.metaNames[key] {
                return meta
            }
            if path.components.count == 1, case .key(let key) = path.components[0], let meta = Self.metaNames[key] {
                return meta
            }
            // The last component names the column; a path ending in an array index is unnamed.
            guard case .key(let last)? = path.components.last else { return nil }
            return last
        }
        if op == "_.", parts.count == 3, let path = parts[2].stringValue { return PropertyPath.tryParse(path)?.lastKey }
        return nil
    }

    /// Titles made unique as LiteCore makes them: aliases as given; a repeated name gets " #2",
    /// " #3"…; unnamed columns get the first free "$1", "$2"… (counting unnamed columns only).
    static func uniqueTitles(_ names: [String?], explicit: Set<String>) -> [String] {
        var taken = explicit
        var titles: [String] = []
        for name in names {
            if let name, explicit.contains(name) {
                titles.append(name)
                continue
            }
            var title: String
            if let name {
                title = name
                var n = 2
                while taken.contains(title) { title = "\(name) #\(n)"; n += 1 }
            } else {
                var n = 1
                repeat { title = "$\(n)"; n += 1 } while taken.contains(title)
            }
            taken.insert(title)
            titles.append(title)
        }
        return titles
    }

    var fromKinds: [String: String] = [:]
    var fromClauses: [String] = []

    func fromSQL() -> String {
        var sql = fromClauses.joined(separator: " ")
        for join in fullTextJoins {
            sql += " JOIN \"\(join.table)\" AS \(join.sqlAlias) ON \(join.sqlAlias).rowid = \(join.source).rowid"
        }
        return sql
    }

    mutating func compileFrom(_ from: JSON?) throws(SofaError) {
        guard let from, case .array(let items) = from, !items.isEmpty else {
            if let from, from != .array([]) { throw Self.invalid("FROM must be an array of collections") }
            // No FROM: the default collection, whose documents LiteCore calls `_doc`.
            try addCollection(.default, alias: "_doc", item: nil)
            return
        }
        fromHasSeveralItems = items.count > 1
        for (index, item) in items.enumerated() {
            guard case .object(let spec) = item else { throw Self.invalid("a FROM item must be a dictionary") }
            for key in spec.keys where !["COLLECTION", "SCOPE", "AS", "JOIN", "ON", "UNNEST"].contains(key.uppercased()) {
                throw Self.invalid("unknown key '\(key)' in FROM")
            }
            func field(_ name: String) -> JSON? { spec.first { $0.key.uppercased() == name }?.value }
            if let unnest = field("UNNEST") {
                guard index > 0 else { throw Self.invalid("UNNEST cannot be the first FROM item") }
                if case .array(let parts) = unnest, parts.first?.stringValue == "[]" {
                    throw Self.invalid("UNNEST of an array literal is not supported: UNNEST a property")
                }
                // Without AS, the alias is the property's last name (LiteCore's rule).
                guard let alias = field("AS")?.stringValue ?? Self.lastPropertyName(unnest) else {
                    throw Self.invalid("UNNEST of an expression needs an alias (AS)")
                }
                try addUnnest(unnest, alias: Self.unescapingDots(alias))
                continue
            }
            let name = field("COLLECTION")?.stringValue
            let scope = field("SCOPE")?.stringValue
            if field("COLLECTION") != nil && name == nil { throw Self.invalid("COLLECTION must be a string") }
            var collection: CollectionName
            do throws(SofaError) {
                switch (scope, name) {
                case (nil, nil), (nil, "_"), (nil, "_default"), ("_default", "_default"), ("_default", "_"):
                    collection = .default
                case (let s?, let n?): collection = try CollectionName(scope: s, name: n == "_" ? "_default" : n)
                case (nil, let n?) where schema.databaseName == Self.unescapingDots(n):
                    // The database's name is its default collection, unless a collection has that name.
                    collection = (try? CollectionName(parsing: n)).flatMap { schema.hasCollection($0) ? $0 : nil } ?? .default
                case (nil, let n?): collection = try CollectionName(parsing: n)
                case (_?, nil): throw Self.invalid("SCOPE without COLLECTION")
                }
            } catch {
                // LiteCore's words ("… is not a valid collection"), then why.
                let written = [scope, name].compactMap { $0 }.joined(separator: ".")
                throw Self.invalid("bad collection in FROM: '\(written)' is not a valid collection name: \(error.message)")
            }
            guard schema.hasCollection(collection) else { throw Self.invalid("no such collection '\(collection)'") }
            // An alias's dots may come escaped (N1QL's AS `foo.bar` gives "foo\\.bar"): the alias is the name.
            // Without AS, a scoped collection's alias is its whole name (`small.nested`).
            let written = scope.flatMap { s in s == CollectionName.defaultName ? nil : name.map { "\(s).\($0)" } } ?? name
            let alias = Self.unescapingDots(field("AS")?.stringValue ?? written ?? "_default")
            if sources.contains(where: { $0.alias == alias }) { throw Self.invalid("duplicate alias '\(alias)' in FROM") }
            if index == 0 {
                if field("JOIN") != nil || field("ON") != nil { throw Self.invalid("the first FROM item cannot be a JOIN") }
                try addCollection(collection, alias: alias, item: nil)
            } else {
                try addCollection(collection, alias: alias, item: spec)
            }
            if field("AS") == nil, !collection.isDefault, alias != collection.name, alias.hasSuffix("." + collection.name) {
                sources[sources.count - 1].shortName = collection.name
            }
        }
    }

    mutating func addCollection(_ collection: CollectionName, alias: String, item: JSONObject?) throws(SofaError) {
        let sqlAlias = sources.isEmpty ? "t0" : nextAlias("t")
        sources.append(Source(alias: alias, sqlAlias: sqlAlias, kind: .collection(collection), value: "\(sqlAlias).body"))
        guard let item else {
            fromClauses.append("\(collection.table) AS \(sqlAlias)")
            return
        }
        func field(_ name: String) -> JSON? { item.first { $0.key.uppercased() == name }?.value }
        let on = field("ON")
        var kind = field("JOIN")?.stringValue?.uppercased() ?? (on == nil ? "CROSS" : "INNER")
        if kind == "LEFT OUTER" { kind = "LEFT" }
        switch kind {
        case "INNER", "LEFT":
            guard let on else { throw Self.invalid("\(kind) JOIN needs ON") }
            let condition = try self.condition(on)
            fromKinds[sqlAlias] = kind
            let live = "(\(sqlAlias).flags & 32769) = 0"
            fromClauses.append("\(kind == "LEFT" ? "LEFT JOIN" : "JOIN") \(collection.table) AS \(sqlAlias) ON (\(condition)) AND \(live)")
        case "CROSS":
            if on != nil { throw Self.invalid("CROSS JOIN cannot have ON") }
            fromKinds[sqlAlias] = "CROSS"
            fromClauses.append("CROSS JOIN \(collection.table) AS \(sqlAlias)")
        default:
            throw Self.invalid("unknown JOIN type '\(kind)'")
        }
    }

    /// The SQL of `["SELECT", {…}]` inside an expression: a query of its own (its sources are not
    /// the outer query's), whose literals and parameters are numbered on from the outer query's.
    mutating func subquery(_ select: JSON) throws(SofaError) -> String {
        var inner = QueryCompiler(schema: schema)
        inner.bindings = bindings
        inner.depth = depth
        let compiled = try inner.compileSelect(select)
        bindings = compiled.bindings
        subqueryCollections += compiled.collections
        return compiled.sql
    }

    /// The FROM source a property's first key names: the one with that alias, else the one whose
    /// bare collection name it is (`shortName`), when only one has it.
    func namedSource(_ name: String) -> Source? {
        if let source = sources.first(where: { $0.alias == name }) { return source }
        let short = sources.filter { $0.shortName == name }
        return short.count == 1 ? short[0] : nil
    }

    /// `name` with its backslash-escaped dots (`foo\.bar`) unescaped.
    static func unescapingDots(_ name: String) -> String {
        name.contains("\\.") ? name.replacingOccurrences(of: "\\.", with: ".") : name
    }

    /// The last name of a property path (`[".a.b"]`, `[".", "a", "b"]`: "b"), or nil for another expression.
    static func lastPropertyName(_ expression: JSON) -> String? {
        guard case .array(let parts) = expression, let op = parts.first?.stringValue, op.hasPrefix("."),
              let path = try? Self.path(op, Array(parts.dropFirst())), case .key(let name)? = path.components.last else { return nil }
        return name
    }

    mutating func addUnnest(_ expression: JSON, alias: String) throws(SofaError) {
        if sources.contains(where: { $0.alias == alias }) { throw Self.invalid("duplicate alias '\(alias)' in FROM") }
        let sqlAlias = nextAlias("u")
        if let (index, level, parent) = try arrayIndexLevel(expression) {
            fromClauses.append("JOIN \"\(index.tables[level])\" AS \(sqlAlias) ON \(sqlAlias).docid = \(parent).rowid")
            sources.append(Source(alias: alias, sqlAlias: sqlAlias, kind: .unnest, value: "\(sqlAlias).value",
                                  arrayIndex: (index, level)))
            return
        }
        let array = try value(expression)
        fromClauses.append("JOIN json_each(core_unnest_text(\(array))) AS \(sqlAlias)")
        sources.append(Source(alias: alias, sqlAlias: sqlAlias, kind: .unnest, value: "core_element(\(sqlAlias).type, \(sqlAlias).value)"))
    }
}

extension QueryCompiler {
    /// The array index level that holds the elements of `expression`, if one does: a FROM
    /// collection's property that is an index's first path segment (level 0, rows by document),
    /// or a property of an index-served UNNEST alias that is the next segment of its index
    /// (rows by the parent row). Also answers the SQL alias of the parent.
    func arrayIndexLevel(_ expression: JSON) throws(SofaError) -> (ArrayIndexTables, Int, String)? {
        if let (owner, path) = try collectionProperty(expression) {
            for index in schema.arrayIndexes(owner.collection) where index.segments[0] == path {
                return (index, 0, owner.sqlAlias)
            }
            return nil
        }
        guard case .array(let parts) = expression, let op = parts.first?.stringValue, op.hasPrefix(".") else { return nil }
        let path = try Self.path(op, Array(parts.dropFirst()))
        guard case .key(let first)? = path.first, let parent = namedSource(first),
              let (index, level) = parent.arrayIndex, level + 1 < index.segments.count,
              index.segments[level + 1] == path.droppingFirst() else { return nil }
        return (index, level + 1, parent.sqlAlias)
    }

    /// An index expression over a body column, with literals inlined (an index cannot bind).
    static func indexExpression(_ expression: JSON, body: String) throws(SofaError) -> String {
        var compiler = QueryCompiler(schema: QuerySchema(hasCollection: { _ in true }))
        compiler.sources = [Source(alias: "_default", sqlAlias: "t0", kind: .collection(.default), value: body)]
        let sql = try compiler.value(expression)
        guard compiler.bindings.allSatisfy({ if case .literal = $0 { return true } else { return false } }) else {
            throw invalid("an index expression cannot use parameters")
        }
        guard !compiler.mentionsDeleted, compiler.fullTextJoins.isEmpty, !sql.contains("t0.") else {
            throw invalid("an index expression can only read the document's properties")
        }
        // Inline the literals: ?N → SQL literal, from the highest N down so ?1 never eats ?12.
        var result = sql
        for (index, binding) in compiler.bindings.enumerated().reversed() {
            guard case .literal(let value) = binding else { continue }
            result = result.replacingOccurrences(of: "?\(index + 1)", with: try literalSQL(value))
        }
        return result
    }

    static func literalSQL(_ value: SQLValue) throws(SofaError) -> String {
        switch value {
        case .missing: return "NULL"
        case .integer(let v): return "\(v)"
        case .real(let v): return "\(v)"
        case .text(let v): return try quoted(v)
        case .json(let j):
            return "x'" + j.compactBytes().map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}
