import SofaCore

/// Functions and properties: `META()`, `MATCH()`, `RANK()`, `PREDICTION()`, `VECTOR_DISTANCE()`,
/// the named functions, `*`, `alias.*` and property paths.
extension N1QLParser {
    mutating func function() -> JSON? {
        if let meta = optional({ $0.metaFunction() }) { return meta }
        if let match = optional({ $0.indexFunction("MATCH", extraArguments: 1...1) }) { return match }
        if let rank = optional({ $0.indexFunction("RANK", extraArguments: 0...0) }) { return rank }
        if let distance = optional({ $0.indexFunction("VECTOR_DISTANCE", extraArguments: 1...Int.max) }) {
            return distance
        }
        if let prediction = optional({ $0.predictionFunction() }) { return prediction }
        return optional { $0.namedFunction() }
    }

    /// `META([alias])` → `["meta()"]` or `["meta()", "alias"]`.
    private mutating func metaFunction() -> JSON? {
        guard matchWordPrefix("meta") else { return nil }
        skipSpace()
        guard symbol("(") else { return nil }
        var items: [JSON] = [.string("meta()")]
        if let alias = optional({ $0.identifier("a collection alias") }) {
            items.append(.string(Op.quoteName(alias)))
        }
        guard symbol(")") else { return nil }
        return .array(items)
    }

    /// `NAME([alias.]index [, expr…])` → `["NAME()", "alias.index", expr…]`: the first argument
    /// names an index (full-text for `MATCH`/`RANK`, vector for `VECTOR_DISTANCE`) and must be an
    /// identifier, not a string.
    private mutating func indexFunction(_ name: String, extraArguments: ClosedRange<Int>) -> JSON? {
        guard matchWordPrefix(name) else { return nil }
        skipSpace()
        guard symbol("("), let index = indexName() else { return nil }
        var items: [JSON] = [.string(name + "()"), .string(index)]
        while items.count - 2 < extraArguments.upperBound {
            let save = pos
            guard symbol(","), let argument = expression() else {
                pos = save
                break
            }
            items.append(argument)
        }
        guard extraArguments.contains(items.count - 2), symbol(")") else { return nil }
        return .array(items)
    }

    /// `[alias.]index` → `"alias.index"`, the alias's dots escaped.
    private mutating func indexName() -> String? {
        let save = pos
        if let alias = identifier("an index name"), symbol("."), let index = identifier("an index name") {
            return Op.quoteName(alias) + "." + index
        }
        pos = save
        return identifier("an index name")
    }

    /// `PREDICTION(model, input [, property])` → `["PREDICTION()", "model", input…]`.
    private mutating func predictionFunction() -> JSON? {
        guard matchWordPrefix("PREDICTION") else { return nil }
        skipSpace()
        guard symbol("("), let model = identifier("a model name"), symbol(","),
              let arguments = commaList({ $0.expression() }), arguments.count <= 2, symbol(")") else { return nil }
        return .array([.string("PREDICTION()"), .string(model)] + arguments)
    }

    /// A known function's name as written, then `( [expr (, expr)*] )` → `["name()", expr…]`.
    private mutating func namedFunction() -> JSON? {
        let start = pos
        guard let name = identifier("a function name") else { return nil }
        guard N1QLVocabulary.isFunction(name) else {
            pos = start
            return nil
        }
        guard let arguments = parenthesizedList() else { return nil }
        return .array([.string(name + "()")] + arguments)
    }

    /// `*` → `["."]`; `alias.*` → `[".alias."]`; a path → `[".a.b[0].c"]`.
    mutating func property() -> JSON? {
        if symbol("*") { return .array([.string(".")]) }
        let start = pos
        if let alias = identifier("a property name"), symbol("."), symbol("*") {
            return .array([.string(Op.quoteProperty(alias) + ".")])
        }
        pos = start
        guard let path = propertyPath() else { return nil }
        let name = String(path.dropFirst())
        if peek() == UInt8(ascii: "("), !name.contains(where: { $0 == "." || $0 == "[" || $0 == "\\" }),
           !N1QLVocabulary.isFunction(name) {
            hint("there is no function named '\(name)'", at: pos)
        }
        return .array([.string(path)])
    }

    /// `name (. name | [int])*` → `.name.name[int]`, each name's path syntax escaped.
    mutating func propertyPath() -> String? {
        guard let first = identifier("a property name") else { return nil }
        var path = Op.quoteProperty(first)
        while true {
            let save = pos
            if symbol("."), let next = identifier("a property name") {
                path += Op.quoteProperty(next)
                continue
            }
            pos = save
            if symbol("["), let index = integerLiteral(), symbol("]") {
                path += "[\(index)]"
                continue
            }
            pos = save
            return path
        }
    }
}
