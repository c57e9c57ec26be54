import SofaCore

/// Properties, paths, parameters, variables and `meta()`: where an expression reads from — a
/// document of a FROM source, a result alias, a bound parameter or an ANY/EVERY variable.
extension QueryCompiler {
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
            if let (source, rest) = leadingSource(path) {
                // `.alias._id` and friends: the alias's metadata.
                if rest.components.count == 1, case .key(let key) = rest.components[0], let field = Self.metaNames[key],
                   case .collection = source.kind {
                    return Self.asValue(try metaField([.string(source.alias)], PropertyPath([.key(field)])))
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

    /// The FROM source a property begins with, and the rest of its path: its first key as an
    /// alias (`namedSource`), or its first two as a scoped collection's (`store.customers.name`,
    /// as N1QL writes a property of `FROM store.customers`).
    func leadingSource(_ path: PropertyPath) -> (Source, PropertyPath)? {
        guard case .key(let first)? = path.first else { return nil }
        if let source = namedSource(first) { return (source, path.droppingFirst()) }
        guard path.components.count >= 2, case .key(let second) = path.components[1],
              let source = sources.first(where: { $0.alias == "\(first).\(second)" }) else { return nil }
        return (source, path.droppingFirst().droppingFirst())
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
            guard let name = alias.stringValue.map(Self.unescapingDots), let s = namedSource(name) else {
                // LiteCore's words, then which alias.
                throw Self.invalid("database alias '\(alias.stringValue ?? alias.compactString)' does not match a declared 'AS' alias")
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
        default: throw Self.invalid("'\(field)' is not a valid Meta key (meta() has id, sequence, deleted, expiration, revisionID)")
        }
        return Expr(sql: try Self.access(sql, rest), isCondition: false)
    }

    /// If `json` is a plain property of a FROM collection (no array indexes), that collection
    /// and the path inside its documents — what an array index can serve.
    func collectionProperty(_ json: JSON) throws(SofaError) -> (owner: (collection: CollectionName, sqlAlias: String), path: PropertyPath)? {
        guard case .array(let parts) = json, let op = parts.first?.stringValue, op.hasPrefix(".") else { return nil }
        var path = try Self.path(op, Array(parts.dropFirst()))
        let source: Source
        if let (named, rest) = leadingSource(path) {
            source = named
            path = rest
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
