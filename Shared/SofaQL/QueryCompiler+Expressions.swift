import SofaCore
internal import Foundation

/// Expressions. Each compiles to SQL of one of two kinds: a *value* in the encoding of
/// `SQLValue`, or a *condition* (SQL 0/1/NULL, what comparisons give). `value(_:)` and
/// `condition(_:)` convert between them (`core_boolean`, `core_bool`), so `WHERE flag` and
/// `SELECT a = b` both come out right.
extension QueryCompiler {
    struct Expr {
        var sql: String
        var isCondition: Bool
    }

    mutating func value(_ json: JSON) throws(SofaError) -> String {
        Self.asValue(try expression(json))
    }

    /// A compiled expression as a value: a condition becomes a boolean (`._deleted` = true).
    static func asValue(_ e: Expr) -> String {
        e.isCondition ? "core_boolean(\(e.sql))" : e.sql
    }

    mutating func condition(_ json: JSON) throws(SofaError) -> String {
        let e = try expression(json)
        return e.isCondition ? e.sql : "core_bool(\(e.sql))"
    }

    /// An ORDER BY item: `["DESC", expr]`, `["ASC", expr]` or an expression. Kinds sort in
    /// N1QL's order (MISSING, null, false, true, numbers, strings, arrays, objects) first.
    mutating func ordering(_ item: JSON) throws(SofaError) -> String {
        var expression = item
        var direction = ""
        if case .array(let parts) = item, let op = parts.first?.stringValue?.uppercased(), op == "DESC" || op == "ASC" {
            guard parts.count == 2 else { throw Self.invalid("\(op) takes one expression") }
            expression = parts[1]
            direction = op == "DESC" ? " DESC" : ""
        }
        let sql = try value(expression)
        return "core_rank(\(sql))\(direction), \(sql)\(direction)"
    }

    mutating func bind(_ value: SQLValue) -> String {
        bindings.append(.literal(value))
        return "?\(bindings.count)"
    }

    static func quoted(_ text: String) throws(SofaError) -> String {
        guard !text.unicodeScalars.contains("\0") else { throw invalid("a property path cannot contain NUL") }
        return "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    static let nullBlob = "x'6e756c6c'", trueBlob = "x'74727565'", falseBlob = "x'66616c7365'"

    mutating func expression(_ json: JSON) throws(SofaError) -> Expr {
        depth += 1
        // MATCH() may be this expression only at a clause's top or under top-level ANDs.
        let matchAllowedHere = matchAllowed
        matchAllowed = false
        defer {
            depth -= 1
            matchAllowed = matchAllowedHere
        }
        guard depth <= QueryLimits.maxExpressionDepth else { throw Self.invalid(QueryLimits.tooDeep("query")) }
        switch json {
        case .null: return Expr(sql: Self.nullBlob, isCondition: false)
        case .bool(let b): return Expr(sql: b ? Self.trueBlob : Self.falseBlob, isCondition: false)
        case .int(let i): return Expr(sql: "\(i)", isCondition: false)
        case .double(let d): return Expr(sql: bind(.real(d)), isCondition: false)
        case .string(let s): return Expr(sql: bind(.text(s)), isCondition: false)
        case .object(let object):
            var parts: [String] = []
            for (key, item) in object {
                parts.append(bind(.text(key)))
                parts.append(try value(item))
            }
            return Expr(sql: "core_object(\(parts.joined(separator: ", ")))", isCondition: false)
        case .array(let items):
            guard let op = items.first?.stringValue else {
                throw Self.invalid("an operation must start with its name: \(json.compactString.prefix(80))")
            }
            if op.lowercased() == "match()" && !matchAllowedHere {
                // LiteCore's rule (a full-text match is a join with the index, not a value).
                throw Self.invalid("MATCH can only appear at top-level, or in a top-level AND")
            }
            return try operation(op, Array(items.dropFirst()), json, matchAllowed: matchAllowedHere)
        }
    }

    mutating func operation(_ op: String, _ args: [JSON], _ whole: JSON, matchAllowed atTop: Bool = false) throws(SofaError) -> Expr {
        func arity(_ range: ClosedRange<Int>) throws(SofaError) {
            guard range.contains(args.count) else {
                let wanted = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)–\(range.upperBound)"
                throw Self.invalid("Wrong number of arguments to \(op) ('\(op)' takes \(wanted) operand\(range.upperBound == 1 ? "" : "s"), got \(args.count))")
            }
        }
        func v(_ sql: String) -> Expr { Expr(sql: sql, isCondition: false) }
        func c(_ sql: String) -> Expr { Expr(sql: sql, isCondition: true) }

        if op.hasPrefix(".") { return v(try property(op, args)) }
        if op.hasPrefix("_."), op.count > 2 {
            // `["_.zip", x]`: the path is written in the operator.
            guard args.count == 1 else {
                throw Self.invalid("'\(op)' takes one operand, the value to read '\(op.dropFirst(2))' from; got \(args.count)")
            }
            return try objectProperty(args[0], String(op.dropFirst(2)))
        }
        if op.hasPrefix("$") { return v(try parameter(op, args)) }
        if op.hasPrefix("?") { return v(try variable(op, args)) }
        if op.hasSuffix("()") { return try function(String(op.dropLast(2)), args) }

        switch op.uppercased() {
        case "MISSING":
            try arity(0...0)
            return v("NULL")
        case "[]":
            var parts: [String] = []
            for item in args { parts.append(try value(item)) }
            return v("core_array(\(parts.joined(separator: ", ")))")
        case "_.":
            try arity(2...2)
            guard let pathText = args[1].stringValue else {
                throw Self.invalid("'_.' needs a property path string, got \(args[1].compactString)")
            }
            return try objectProperty(args[0], pathText)
        case "=", "==", "!=", "<>", "<", "<=", ">", ">=":
            try arity(2...2)
            let sqlOp = ["==": "=", "<>": "!="][op] ?? op
            return c("(\(try collated(args[0])) \(sqlOp) \(try value(args[1])))")
        case "IS", "IS NOT":
            try arity(2...2)
            // `x IS NULL` is `x = null` (so MISSING IS NULL and MISSING IS NOT NULL are both
            // false, as in LiteCore); `IS MISSING` and other operands keep SQL's IS.
            if args[1] == .null {
                return c("(\(try value(args[0])) \(op.uppercased() == "IS" ? "=" : "!=") \(Self.nullBlob))")
            }
            return c("(\(try collated(args[0])) \(op.uppercased()) \(try value(args[1])))")
        case "IS VALUED":
            try arity(1...1)
            let x = try value(args[0])
            return c("(\(x) IS NOT NULL AND \(x) IS NOT \(Self.nullBlob))")
        case "IS MISSING", "IS NULL", "IS NOT MISSING", "IS NOT NULL", "IS NOT VALUED":
            try arity(1...1)
            let x = try value(args[0])
            switch op.uppercased() {
            case "IS MISSING": return c("(\(x) IS NULL)")
            case "IS NOT MISSING": return c("(\(x) IS NOT NULL)")
            case "IS NULL": return c("(\(x) = \(Self.nullBlob))")
            case "IS NOT NULL": return c("(\(x) != \(Self.nullBlob))")
            default: return c("NOT (\(x) IS NOT NULL AND \(x) IS NOT \(Self.nullBlob))")
            }
        case "+", "*", "%", "||":
            try arity(2...Int.max)
            var parts: [String] = []
            for a in args { parts.append(try value(a)) }
            return v("(" + parts.joined(separator: " \(op) ") + ")")
        case "-":
            try arity(1...2)
            if args.count == 1 { return v("(- \(try value(args[0])))") }
            return v("(\(try value(args[0])) - \(try value(args[1])))")
        case "/":
            // SQLite's division, as LiteCore's: integer division for two integers.
            try arity(2...2)
            return v("(\(try value(args[0])) / \(try value(args[1])))")
        case "NOT":
            try arity(1...1)
            return c("(NOT \(try condition(args[0])))")
        case "AND", "OR":
            try arity(1...Int.max)
            var parts: [String] = []
            for a in args {
                matchAllowed = atTop && op.uppercased() == "AND"
                parts.append(try condition(a))
            }
            return c("(" + parts.joined(separator: " \(op.uppercased()) ") + ")")
        case "IN", "NOT IN":
            try arity(2...2)
            let x = try collated(args[0])
            let test: String
            if case .array(let list) = args[1], list.first == .string("[]") {
                var items: [String] = []
                for item in list.dropFirst() { items.append(try value(item)) }
                test = items.isEmpty ? "0" : "(\(x) IN (\(items.joined(separator: ", "))))"
            } else {
                test = "core_in(\(x), \(try value(args[1])))"
            }
            return c(op.uppercased() == "IN" ? test : "(NOT \(test))")
        case "BETWEEN":
            try arity(3...3)
            return c("(\(try collated(args[0])) BETWEEN \(try value(args[1])) AND \(try value(args[2])))")
        case "LIKE":
            try arity(2...2)
            return try like(args[0], args[1])
        case "CASE":
            try arity(3...Int.max)
            var sql = "CASE"
            let test = args[0]
            if test != .null { sql += " \(try value(test))" }
            var rest = Array(args.dropFirst())
            let elseExpr: JSON? = rest.count % 2 == 1 ? rest.removeLast() : nil
            var i = 0
            while i < rest.count {
                let when = test == .null ? try condition(rest[i]) : try value(rest[i])
                sql += " WHEN \(when) THEN \(try value(rest[i + 1]))"
                i += 2
            }
            sql += " ELSE \(try elseExpr.map { (e) throws(SofaError) in try value(e) } ?? Self.nullBlob) END"
            return v(sql)
        case "ANY", "EVERY", "ANY AND EVERY":
            return c(try quantifier(op.uppercased(), args))
        case "COLLATE":
            try arity(2...2)
            guard case .object(let options) = args[0] else { throw Self.invalid("COLLATE takes an options dictionary") }
            var collation = Collation()
            for (key, flag) in options {
                switch key.uppercased() {
                case "UNICODE": collation.unicode = flag.boolValue ?? false
                case "CASE": collation.caseSensitive = flag.boolValue ?? true
                case "DIAC": collation.diacriticSensitive = flag.boolValue ?? true
                case "LOCALE": break
                default: throw Self.invalid("unknown COLLATE option '\(key)'")
                }
            }
            let saved = self.collation
            self.collation = collation
            defer { self.collation = saved }
            let inner = try expression(args[1])
            if inner.isCondition { return inner }
            guard let name = collation.sqlName else { return inner }
            return v("(\(inner.sql) COLLATE \(name))")
        case "BLOB":
            // `["BLOB", "path"]`: the operand is a property path written as a string (`.a.b`,
            // `$.a.b` or `a.b`); `["BLOB", [".a.b"]]` and `["BLOB()", …]` are the same.
            try arity(1...1)
            if case .string(var path) = args[0] {
                if path.hasPrefix("$.") { path.removeFirst() } else if !path.hasPrefix(".") { path = "." + path }
                return try function("blob", [.array([.string(path)])])
            }
            return try function("blob", args)
        case "EXISTS":
            // `["EXISTS", property]` asks whether the property is there (not MISSING; null is
            // there): true or false, never MISSING. Any other operand would be a subquery.
            try arity(1...1)
            let inner = args[0].arrayValue?.first?.stringValue ?? ""
            if inner.uppercased() == "SELECT" { throw Self.invalid("subqueries (EXISTS) are not supported") }
            guard inner.hasPrefix(".") else {
                throw Self.invalid("EXISTS takes a document property, such as [\"EXISTS\", [\".name\"]], got \(args[0].compactString.prefix(80))")
            }
            return c("(\(try value(args[0])) IS NOT NULL)")
        case "SELECT":
            throw Self.invalid("subqueries (SELECT) are not supported")
        case "AS":
            throw Self.invalid("AS is only allowed in WHAT")
        case "ASC", "DESC":
            throw Self.invalid("\(op) is only allowed in ORDER_BY")
        default:
            throw Self.invalid("unknown operator '\(op)'")
        }
    }

    /// `["_.", x, "path"]` and its short form `["_.path", x]`: the value at `path` inside the
    /// value of `x` (`["_.zip", [".address"]]`, `["_.[0]", [".numbers"]]`, `["_.a[1].b", x]`);
    /// inside `meta()`, that metadata field.
    mutating func objectProperty(_ base: JSON, _ pathText: String) throws(SofaError) -> Expr {
        let path = try PropertyPath.parse(pathText)
        if case .array(let inner) = base, inner.first?.stringValue?.lowercased() == "meta()" {
            return try metaField(Array(inner.dropFirst()), path)
        }
        return Expr(sql: try Self.access(try value(base), path), isCondition: false)
    }

    /// `["LIKE", x, pattern]`, and `["FL_LIKE()", x, pattern]` which is the same test (see `Like`),
    /// under the active COLLATE.
    mutating func like(_ x: JSON, _ pattern: JSON) throws(SofaError) -> Expr {
        let options = collation.map { ", '\($0.likeOptions)'" } ?? ""
        return Expr(sql: "core_like(\(try value(x)), \(try value(pattern))\(options))", isCondition: true)
    }

    /// An operand of a comparison, under the active COLLATE.
    mutating func collated(_ json: JSON) throws(SofaError) -> String {
        let sql = try value(json)
        guard let name = collation?.sqlName else { return sql }
        return "(\(sql) COLLATE \(name))"
    }

    static func access(_ base: String, _ path: PropertyPath) throws(SofaError) -> String {
        path.isEmpty ? base : "core_value(\(base), \(try quoted(path.description)))"
    }

    /// The path of a property or variable operation, as LiteCore reads it: the path written in
    /// the operator (`[".a.b[0]"]`, `["?x.zip"]`), then one component per operand, a string
    /// being a key taken as written and a one-element array an index: `[".", "a", "b", [0]]`,
    /// `[".a", "b", [-1]]`, `["?x", "zip"]`. `["?", "x", …]` names the variable in its first
    /// operand (a path too, `["?", "x.zip"]`).
    static func path(_ op: String, _ args: [JSON]) throws(SofaError) -> PropertyPath {
        var text = String(op.dropFirst())
        var operands = args[...]
        if op == "?" {
            guard let name = operands.first?.stringValue, !name.isEmpty else {
                throw invalid("'?' needs a variable name as its first operand, got \(args.first?.compactString ?? "none")")
            }
            text = name
            operands = operands.dropFirst()
        }
        // In a query, a `$` that begins a property path is part of the first key (`.$type` reads
        // the key "$type"), not the root marker PropertyPath otherwise allows — LiteCore's rule.
        if op != "?", text.hasPrefix("$") { text = "\\" + text }
        var path = text.isEmpty ? PropertyPath([]) : try PropertyPath.parse(text)
        for operand in operands {
            switch operand {
            case .string(let key):
                path.components.append(.key(key))
            case .array(let items):
                guard items.count == 1 else {
                    throw invalid("a path index is a one-element array such as [0], got \(operand.compactString)")
                }
                guard case .int(let index) = items[0], let i = Int32(exactly: index) else {
                    throw invalid("a path index must be an integer (32 bits), got \(items[0].compactString)")
                }
                path.components.append(.index(Int(i)))
            default:
                throw invalid("a path component is a key (a string) or an index ([0]), got \(operand.compactString)")
            }
        }
        return path
    }

    /// `["$name"]`, `["$", "name"]` or `["$", 1]` (the parameter named "1"): a parameter,
    /// whose name is letters, digits and underscores.
    mutating func parameter(_ op: String, _ args: [JSON]) throws(SofaError) -> String {
        let name: String
        if op == "$" {
            guard args.count == 1 else { throw Self.invalid("'$' takes one operand, the parameter's name") }
            switch args[0] {
            case .string(let text): name = text
            case .int(let number): name = String(number)
            default: throw Self.invalid("a parameter name is a string or an integer, got \(args[0].compactString)")
            }
        } else {
            guard args.isEmpty else { throw Self.invalid("extra operands to '\(op)' (a parameter is [\"$name\"])") }
            name = String(op.dropFirst())
        }
        guard !name.isEmpty, name.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }) else {
            throw Self.invalid("invalid query parameter name '\(name)' (letters, digits and '_' only)")
        }
        bindings.append(.parameter(name))
        return "?\(bindings.count)"
    }

    mutating func property(_ op: String, _ args: [JSON]) throws(SofaError) -> String {
        let path = try Self.path(op, args)
        if case .index? = path.first { throw Self.invalid("a property cannot start with an array index: \(op)") }
        if case .key(let first)? = path.first {
            if let source = sources.first(where: { $0.alias == first }) {
                let rest = path.droppingFirst()
                // `.alias._id` and friends: the alias's metadata.
                if rest.components.count == 1, case .key(let key) = rest.components[0], let field = Self.metaNames[key],
                   case .collection = source.kind {
                    return Self.asValue(try metaField([.string(first)], PropertyPath([.key(field)])))
                }
                return try Self.access(source.value, rest)
            }
            // A result alias (`AS name` in WHAT), or a path inside it: `.name`, `.name.key`, `.name[1]`.
            if let aliased = whatAliases[first] { return try Self.access(aliased, path.droppingFirst()) }
        }
        let source = try implicitSource(of: path)
        if case .key(let first)? = path.first, first.hasPrefix("_"), path.components.count == 1, let field = Self.metaNames[first] {
            return Self.asValue(try metaField([], PropertyPath([.key(field)])))
        }
        return try Self.access(source.value, path)
    }

    /// The source of a property that does not begin with a FROM alias: the first FROM item. When
    /// the FROM clause has more than one item (a JOIN or an UNNEST), a property must begin with
    /// the alias of the one it reads — LiteCore's rule, with its message. `["."]`, the whole
    /// document, stays the first item's.
    func implicitSource(of path: PropertyPath) throws(SofaError) -> Source {
        if fromHasSeveralItems, !path.isEmpty {
            throw Self.invalid("property '\(path)' does not begin with a declared 'AS' alias")
        }
        guard let source = sources.first else { throw Self.invalid("no FROM source for property '\(path)'") }
        return source
    }

    /// What the old underscore properties (`._id`, `._sequence`…) mean.
    static let metaNames = ["_id": "id", "_sequence": "sequence", "_deleted": "deleted",
                            "_expiration": "expiration", "_revisionID": "revisionID"]

    mutating func variable(_ op: String, _ args: [JSON]) throws(SofaError) -> String {
        let path = try Self.path(op, args)
        guard case .key(let name)? = path.first, let sql = variables[name] else {
            throw Self.invalid("unknown variable '\(op)'")
        }
        return try Self.access(sql, path.droppingFirst())
    }

    /// `["meta()", alias?]` with `.id`, `.sequence`, `.deleted`, `.expiration`, `.revisionID`.
    /// `meta()` itself is a dictionary whose `deleted` is 0 or 1, as LiteCore's is ("Query META").
    mutating func metaField(_ metaArgs: [JSON], _ path: PropertyPath) throws(SofaError) -> Expr {
        let source: Source
        if let alias = metaArgs.first {
            guard let name = alias.stringValue, let s = sources.first(where: { $0.alias == name }) else {
                throw Self.invalid("meta() of unknown alias \(alias.compactString)")
            }
            source = s
        } else {
            guard let s = sources.first else { throw Self.invalid("meta() without a FROM source") }
            source = s
        }
        guard case .collection = source.kind else { throw Self.invalid("meta() of an UNNEST alias") }
        let t = source.sqlAlias
        guard case .key(let field)? = path.first else {
            return Expr(sql: "core_object('id', \(t).key, 'sequence', \(t).sequence, 'deleted', (\(t).flags & 1), 'expiration', \(t).expiration, 'revisionID', core_revid(\(t).version))", isCondition: false)
        }
        let rest = path.droppingFirst()
        let sql: String
        switch field {
        case "id": sql = "\(t).key"
        case "sequence": sql = "\(t).sequence"
        case "deleted":
            mentionsDeleted = true
            return Expr(sql: "((\(t).flags & 1) != 0)", isCondition: true)
        case "expiration": sql = "\(t).expiration"
        case "revisionID": sql = "core_revid(\(t).version)"
        default: throw Self.invalid("meta() has no property '\(field)' (it has id, sequence, deleted, expiration, revisionID)")
        }
        return Expr(sql: try Self.access(sql, rest), isCondition: false)
    }

    /// `["ANY", var, array, predicate]` and friends, as (NOT) EXISTS over the array's elements
    /// (a dictionary's values; anything else has none).
    mutating func quantifier(_ op: String, _ args: [JSON]) throws(SofaError) -> String {
        guard args.count == 3, let name = args[0].stringValue, !name.isEmpty else {
            throw Self.invalid("\(op) takes a variable name, an array and a condition")
        }
        let alias = nextAlias("v")
        let from: String, element: String
        if let (index, level, parent) = try arrayIndexLevel(args[1]) {
            from = "\"\(index.tables[level])\" AS \(alias) WHERE \(alias).docid = \(parent).rowid AND"
            element = "\(alias).value"
        } else {
            // The items of an array, or the values of a dictionary.
            from = "json_each(core_items_text(\(try value(args[1])))) AS \(alias) WHERE"
            element = "core_element(\(alias).type, \(alias).value)"
        }
        let saved = variables[name]
        variables[name] = element
        defer { variables[name] = saved }
        let predicate = try condition(args[2])
        let any = "EXISTS (SELECT 1 FROM \(from) \(predicate))"
        let every = "NOT EXISTS (SELECT 1 FROM \(from) NOT coalesce(\(predicate), 0))"
        let nonEmpty = "EXISTS (SELECT 1 FROM \(from) 1)"
        switch op {
        case "ANY": return any
        case "EVERY": return every
        default: return "(\(nonEmpty) AND \(every))"
        }
    }

    /// If `json` is a plain property of a FROM collection (no array indexes), that collection
    /// and the path inside its documents — what an array index can serve.
    func collectionProperty(_ json: JSON) throws(SofaError) -> (owner: (collection: CollectionName, sqlAlias: String), path: PropertyPath)? {
        guard case .array(let parts) = json, let op = parts.first?.stringValue, op.hasPrefix(".") else { return nil }
        var path = try Self.path(op, Array(parts.dropFirst()))
        let source: Source
        if case .key(let first)? = path.first, let named = sources.first(where: { $0.alias == first }) {
            source = named
            path = path.droppingFirst()
        } else if case .key(let first)? = path.first, whatAliases[first] != nil {
            return nil
        } else {
            source = try implicitSource(of: path)
        }
        guard case .collection(let collection) = source.kind, !path.isEmpty else { return nil }
        for component in path.components { if case .index = component { return nil } }
        return ((collection, source.sqlAlias), path)
    }
}
