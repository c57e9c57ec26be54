import SofaCore

/// The words and name-quoting rules of LiteCore's N1QL parser, and the JSON shapes it builds.
enum N1QLVocabulary {
    /// Words that cannot be unquoted identifiers (LiteCore's `kReservedWords`, with `UNNEST`, the
    /// FROM clause's keyword).
    static let reservedWords: Set<String> = [
        "AND", "ANY", "AS", "ASC", "BETWEEN", "BY", "CASE", "COLLATE", "CROSS", "DESC", "DISTINCT",
        "ELSE", "END", "EVERY", "FALSE", "FROM", "GROUP", "HAVING", "IN", "INNER", "IS", "JOIN",
        "LEFT", "LIKE", "LIMIT", "MISSING", "NATURAL", "NOT", "NULL", "OFFSET", "ON", "OR", "ORDER",
        "OUTER", "RIGHT", "SATISFIES", "SELECT", "THEN", "TRUE", "UNNEST", "USING", "VALUED", "WHEN",
        "WHERE",
    ]

    static func isReserved(_ word: String) -> Bool { reservedWords.contains(word.uppercased()) }

    /// Function names N1QL accepts, compared case-insensitively (LiteCore's `kFunctions`, taken
    /// from its query parser's function table). `MATCH`, `RANK`, `META`, `PREDICTION` and
    /// `VECTOR_DISTANCE` have rules of their own.
    static let functions: Set<String> = [
        // Arrays
        "array_agg", "array_avg", "array_contains", "array_count", "array_ifnull", "array_length",
        "array_max", "array_min", "array_of", "array_sum",
        // Comparison
        "greatest", "least",
        // Conditionals (unknowns)
        "ifmissing", "ifnull", "ifmissingornull", "missingif", "nullif",
        // Dates and times
        "millis_to_str", "millis_to_utc", "millis_to_tz", "str_to_millis", "str_to_utc", "str_to_tz",
        "date_diff_str", "date_diff_millis", "date_add_str", "date_add_millis",
        // Math
        "abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "degrees", "e", "exp", "floor", "ln",
        "log", "pi", "power", "radians", "round", "round_even", "sign", "sin", "sqrt", "tan", "trunc",
        "div", "idiv",
        // Patterns
        "regexp_contains", "regexp_like", "regexp_position", "regexp_replace",
        // Strings
        "contains", "length", "lower", "ltrim", "rtrim", "trim", "upper", "concat",
        // Types
        "isarray", "isatom", "isboolean", "isnumber", "isobject", "isstring", "type", "toarray",
        "toatom", "toboolean", "tonumber", "toobject", "tostring", "is_array", "is_atom",
        "is_boolean", "is_number", "is_object", "is_string", "typename", "to_array", "to_atom",
        "to_boolean", "to_number", "to_object", "to_string",
        // Aggregates
        "avg", "count", "max", "min", "sum",
        // Vectors
        "euclidean_distance", "cosine_distance", "approx_vector_distance",
        // Sofa's library beyond LiteCore's grammar: blob contents, objects, isvalued, uuid
        "blob", "object_length", "object_names", "object_pairs", "object_values", "isvalued", "uuid",
    ]

    static func isFunction(_ name: String) -> Bool { functions.contains(name.lowercased()) }

    // MARK: Names in paths

    /// A path component with the characters that are path syntax (`.`, `$`, `[`) escaped by `\`.
    static func quoteComponent(_ name: String) -> String {
        var out = ""
        for ch in name {
            if ch == "." || ch == "$" || ch == "[" { out.append("\\") }
            out.append(ch)
        }
        return out
    }

    /// `.name` with the name's path syntax escaped: `mr.grieves` → `.mr\.grieves`.
    static func quoteProperty(_ name: String) -> String { "." + quoteComponent(name) }

    /// A collection, scope or alias name with its dots escaped (`db.c` → `db\.c`).
    static func quoteName(_ name: String) -> String {
        name.replacingDots()
    }

    // MARK: JSON shapes

    static func op(_ name: String, _ operands: JSON...) -> JSON {
        .array([.string(name)] + operands)
    }

    /// `["MISSING"]`, the literal MISSING.
    static let missing: JSON = .array([.string("MISSING")])

    /// Turns references to the variable `name` into `?name` operations, as LiteCore does for the
    /// body of `ANY/EVERY … SATISFIES`: every operation whose name is `.name`, `.name.…` or
    /// `.name[…` becomes `?name…`. Only operations (arrays) are visited, not dictionary literals.
    static func substituteVariable(_ name: String, in expr: JSON) -> JSON {
        guard case .array(var items) = expr else { return expr }
        let prefix = "." + name
        for i in items.indices {
            if i == 0 {
                if case .string(let opName) = items[0], hasPathPrefix(opName, prefix) {
                    items[0] = .string("?" + opName.dropFirst())
                }
            } else if case .array = items[i] {
                items[i] = substituteVariable(name, in: items[i])
            }
        }
        return .array(items)
    }

    private static func hasPathPrefix(_ path: String, _ prefix: String) -> Bool {
        let p = Array(path.utf8)
        let q = Array(prefix.utf8)
        guard p.count >= q.count, Array(p[0..<q.count]) == q else { return false }
        return p.count == q.count || p[q.count] == UInt8(ascii: ".") || p[q.count] == UInt8(ascii: "[")
    }

    /// `["COLLATE", {…}, expr]` from collation words as written (`NOCASE`, `unicode:se`): each sets
    /// its upper-cased name to true, or to false after `NO`; a `:xx` suffix sets `LOCALE`.
    static func collate(_ expr: JSON, _ collations: [String]) -> JSON {
        var options = JSONObject()
        for collation in collations {
            var word = Substring(collation)
            if let colon = word.firstIndex(of: ":") {
                options["LOCALE"] = .string(String(word[word.index(after: colon)...]))
                word = word[..<colon]
            }
            var upper = word.uppercased()
            let enabled = !upper.hasPrefix("NO")
            if !enabled { upper.removeFirst(2) }
            options[upper] = .bool(enabled)
        }
        return op("COLLATE", .object(options), expr)
    }
}

extension String {
    fileprivate func replacingDots() -> String {
        var out = ""
        for ch in self {
            if ch == "." { out.append("\\") }
            out.append(ch)
        }
        return out
    }
}
