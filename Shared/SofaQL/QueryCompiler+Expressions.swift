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
            // there): true or false, never MISSING. `["EXISTS", ["SELECT", {…}]]` asks whether the
            // subquery finds a row (it reads its own FROM; the default collection without one).
            try arity(1...1)
            let inner = args[0].arrayValue?.first?.stringValue ?? ""
            if inner.uppercased() == "SELECT" { return c("EXISTS (\(try subquery(args[0])))") }
            guard inner.hasPrefix(".") else {
                throw Self.invalid("EXISTS takes a document property, such as [\"EXISTS\", [\".name\"]], got \(args[0].compactString.prefix(80))")
            }
            return c("(\(try value(args[0])) IS NOT NULL)")
        case "SELECT":
            throw Self.invalid("a subquery (SELECT) is only allowed under EXISTS")
        case "AS":
            throw Self.invalid("AS is only allowed in WHAT")
        case "ASC", "DESC":
            throw Self.invalid("\(op) is only allowed in ORDER_BY")
        default:
            throw Self.invalid("unknown operator '\(op)'")
        }
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
}
