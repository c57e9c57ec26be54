import SofaCore

/// Function calls: `["lower()", x]`. Aggregates become SQL aggregates; everything else is a
/// function of the library, called as `sofa_<name>` after its name and arity are checked.
extension QueryCompiler {
    static let aggregates: Set<String> = ["count", "sum", "avg", "min", "max", "array_agg"]

    mutating func function(_ rawName: String, _ args: [JSON]) throws(SofaError) -> Expr {
        let name = rawName.lowercased()
        func v(_ sql: String) -> Expr { Expr(sql: sql, isCondition: false) }
        if name == "match" || name == "rank" { return try fullText(name, args) }
        if name == "meta" { return try metaField(args, PropertyPath([])) }
        if name == "fl_like" {
            guard args.count == 2 else { throw Self.invalid("fl_like() takes 2 arguments, got \(args.count)") }
            return try like(args[0], args[1])
        }
        if name == "contains", let collation, collation.sqlName != nil {
            // CONTAINS under COLLATE compares with the collation's case and diacritic rules.
            guard args.count == 2 else { throw Self.invalid("contains() takes 2 arguments, got \(args.count)") }
            return v("core_contains(\(try value(args[0])), \(try value(args[1])), '\(collation.likeOptions)')")
        }
        if name == "blob" {
            guard args.count == 1 else { throw Self.invalid("blob() takes 1 argument, got \(args.count)") }
            return v("core_blob(\(try value(args[0])))")
        }
        if Self.aggregates.contains(name) {
            guard args.count == 1 else { throw Self.invalid("\(name)() takes 1 argument, got \(args.count)") }
            if name == "count", args[0] == .array([.string(".")]) || args[0] == .string("*") { return v("count(*)") }
            let x = try value(args[0])
            switch name {
            // MISSING values are left out; null is kept (SQLiteFunctionsTest "SQLite array_agg").
            case "array_agg": return v("CAST(json_group_array(json(core_json_text(\(x)))) FILTER (WHERE \(x) IS NOT NULL) AS BLOB)")
            default: return v("\(name)(\(x))")
            }
        }
        guard let function = FunctionLibrary.named(name) else {
            throw Self.invalid("unknown function '\(rawName)()'")
        }
        guard function.arity.contains(args.count) else {
            let range = function.arity
            let wanted = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound) to \(range.upperBound)"
            throw Self.invalid("function '\(rawName)()' takes \(wanted) argument\(range.upperBound == 1 ? "" : "s"), got \(args.count)")
        }
        var parts: [String] = []
        for arg in args { parts.append(try value(arg)) }
        return v("\(function.sqlName)(\(parts.joined(separator: ", ")))")
    }

    /// `["MATCH()", index, text]` and `["RANK()", index]`: a join with the index's FTS table.
    mutating func fullText(_ name: String, _ args: [JSON]) throws(SofaError) -> Expr {
        guard let indexRef = args.first?.stringValue else { throw Self.invalid("\(name.uppercased())() needs an index name") }
        guard args.count == (name == "match" ? 2 : 1) else {
            throw Self.invalid("\(name.uppercased())() takes \(name == "match" ? 2 : 1) arguments")
        }
        // "alias.index" names the collection; a bare name means the first FROM collection, and
        // may stand only while every FROM collection is that one (LiteCore's rule and message).
        var source = sources.first
        var indexName = indexRef
        let ref = Self.unescapingDots(indexRef)
        if let named = sources.filter({ ref.hasPrefix($0.alias + ".") }).max(by: { $0.alias.count < $1.alias.count }) {
            // The longest alias it begins with (a scoped collection's holds a dot).
            source = named
            indexName = String(ref.dropFirst(named.alias.count + 1))
        } else if let dot = indexRef.firstIndex(of: "."), let named = namedSource(String(indexRef[..<dot])) {
            source = named
            indexName = String(indexRef[indexRef.index(after: dot)...])
        } else if let first = source, sources.contains(where: { if case .collection = $0.kind { $0.kind != first.kind } else { false } }) {
            throw Self.invalid("property '\(indexRef)' does not begin with a declared 'AS' alias")
        }
        guard let source, case .collection(let collection) = source.kind else { throw Self.invalid("\(name.uppercased())() needs a collection") }
        guard let index = schema.fullTextTable(collection, indexName) else {
            throw Self.invalid("no full-text index '\(indexName)' on \(collection)")
        }
        let table = index.table
        let alias: String
        if let existing = fullTextJoins.first(where: { $0.index == indexName && $0.source == source.sqlAlias }) {
            alias = existing.sqlAlias
        } else {
            alias = nextAlias("f")
            fullTextJoins.append((indexName, table, alias, source.sqlAlias))
        }
        if name == "rank" { return Expr(sql: "sofa_rank(\(alias).\"\(table)\")", isCondition: false) }
        // One MATCH per index (LiteCore's rule and words): FTS cannot search one table twice.
        guard matched.insert(alias).inserted else {
            throw Self.invalid("Sorry, multiple MATCHes of the same property are not allowed")
        }
        let text = try value(args[1])
        let stopWords = try Self.quoted(index.stopWords.joined(separator: " "))
        let columns = try Self.quoted(JSON.array(index.columns.map { .string($0) }).compactString)
        return Expr(sql: "(\(alias).\"\(table)\" MATCH core_fts_query(\(text), \(stopWords), \(columns)))", isCondition: true)
    }
}
