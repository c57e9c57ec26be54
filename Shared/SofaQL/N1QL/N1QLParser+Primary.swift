import SofaCore

/// `baseExpr`: the highest-precedence expressions, tried in LiteCore's order.
extension N1QLParser {
    /// One primary: one level taller than the tallest tree it holds (parentheses add no level),
    /// and as tall as the trees before it in the expression at least.
    mutating func baseExpression() -> JSON? {
        let outer = height
        height = 0
        let value = primaryAlternatives()
        let own = value == nil || lastPrimaryWasParenthesized ? 0 : 1
        lastPrimaryWasParenthesized = false
        guard grow(own) else { return nil }
        height = max(outer, height)
        return value
    }

    private mutating func primaryAlternatives() -> JSON? {
        let start = pos
        guard depth < Self.maxDepth else {
            fail("a shallower expression")
            hint("expressions nest at most \(Self.maxDepth) deep", at: pos)
            return nil
        }
        depth += 1
        defer { depth -= 1 }
        let before = (failurePos, expected)
        let alternatives: [(inout N1QLParser) -> JSON?] = [
            { $0.literal() },
            { $0.arrayLiteral() },
            { $0.dictLiteral() },
            { $0.prefixOperation() },
            { $0.existsExpression() },
            { $0.caseExpression() },
            { $0.anyEveryExpression() },
            { $0.parameter() },
            { $0.function() },
            { $0.property() },
            { $0.parenthesized() },
        ]
        for (index, alternative) in alternatives.enumerated() {
            if let value = optional(alternative) {
                lastPrimaryWasParenthesized = index == alternatives.count - 1
                return value
            }
        }
        // Nothing got past the first character: say "an expression" rather than list every
        // way one can start.
        if failurePos == start {
            expected = before.0 == start ? before.1 : []
            expected.insert("an expression")
        }
        return nil
    }

    // MARK: Literals

    /// A number, a string, `TRUE`, `FALSE`, `NULL` or `MISSING` (→ `["MISSING"]`).
    mutating func literal() -> JSON? {
        if let number = optional({ $0.numberLiteral() }) { return number }
        if let string = stringLiteral() { return .string(string) }
        if keyword("TRUE") { return .bool(true) }
        if keyword("FALSE") { return .bool(false) }
        if keyword("NULL") { return .null }
        if keyword("MISSING") { return Op.missing }
        return nil
    }

    /// `-?(.d+ | d+.d*([eE][-+]?d+)? | d+[eE][-+]?d+)` is a double; `-?d+` an integer; either
    /// must end at a word break.
    mutating func numberLiteral() -> JSON? {
        let start = pos
        if peek() == UInt8(ascii: "-") { pos += 1 }
        let intDigits = digits()
        var isFloat = false
        if peek() == UInt8(ascii: ".") {
            let dot = pos
            pos += 1
            let fraction = digits()
            if intDigits == 0 && fraction == 0 { pos = dot } else { isFloat = true }
        }
        guard intDigits > 0 || isFloat else {
            pos = start
            fail("a number")
            return nil
        }
        if intDigits > 0, let e = peek(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            let mark = pos
            pos += 1
            if let sign = peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { pos += 1 }
            if digits() > 0 { isFloat = true } else { pos = mark }
        }
        if let c = peek(), Self.isWordChar(c) {
            pos = start
            fail("a number")
            return nil
        }
        let token = String(decoding: text[start..<pos], as: UTF8.self)
        let value: JSON
        if isFloat {
            guard let d = Double(token), d.isFinite else { return numberOutOfRange(token, start) }
            value = .double(d)
        } else {
            guard let i = Int64(token) else { return numberOutOfRange(token, start) }
            value = .int(i)
        }
        skipSpace()
        return value
    }

    private mutating func numberOutOfRange(_ token: String, _ start: Int) -> JSON? {
        pos = start
        fail("a number")
        hint("\(token) is out of range", at: start)
        return nil
    }

    private mutating func digits() -> Int {
        var n = 0
        while let c = peek(), Self.isDigit(c) {
            pos += 1
            n += 1
        }
        return n
    }

    /// An integer literal (`INT_LITERAL`), for array indexes in paths.
    mutating func integerLiteral() -> Int64? {
        let start = pos
        guard let number = numberLiteral() else { return nil }
        guard case .int(let i) = number else {
            pos = start
            fail("an integer")
            return nil
        }
        return i
    }

    /// `'…'` or `"…"`, the quote doubled inside; then whitespace. No backslash escapes.
    mutating func stringLiteral() -> String? {
        guard let quote = peek(), quote == UInt8(ascii: "'") || quote == UInt8(ascii: "\"") else {
            fail("a string")
            return nil
        }
        var bytes: [UInt8] = []
        var i = pos + 1
        while i < text.count {
            if text[i] == quote {
                if i + 1 < text.count, text[i + 1] == quote {
                    bytes.append(quote)
                    i += 2
                    continue
                }
                pos = i + 1
                skipSpace()
                return String(decoding: bytes, as: UTF8.self)
            }
            bytes.append(text[i])
            i += 1
        }
        fail("a closing \(quote == UInt8(ascii: "'") ? "'" : "\"")", at: text.count)
        return nil
    }

    /// `[a, b…]` → `["[]", a, b…]`.
    mutating func arrayLiteral() -> JSON? {
        let start = pos
        guard symbol("[") else { return nil }
        var items: [JSON] = [.string("[]")]
        if let list = optional({ $0.commaList { $0.expression() } }) { items += list }
        guard symbol("]") else {
            pos = start
            return nil
        }
        return .array(items)
    }

    /// `{'key': expr, …}` → a JSON object; keys are string literals, a repeated key takes the
    /// last value.
    mutating func dictLiteral() -> JSON? {
        let start = pos
        guard symbol("{") else { return nil }
        var object = JSONObject()
        var first = true
        while true {
            let save = pos
            if !first && !symbol(",") { break }
            guard let key = stringLiteral(), symbol(":"), let value = expression() else {
                pos = save
                break
            }
            object[key] = value
            first = false
        }
        guard symbol("}") else {
            pos = start
            return nil
        }
        return .object(object)
    }

    // MARK: Operators and special forms

    /// `- baseExpr`, `+ baseExpr`, `NOT baseExpr` → `["-", x]` etc.
    mutating func prefixOperation() -> JSON? {
        let name: String
        if symbol("-") {
            name = "-"
        } else if symbol("+") {
            name = "+"
        } else if keyword("NOT") {
            name = "NOT"
        } else {
            return nil
        }
        guard let operand = baseExpression() else { return nil }
        return Op.op(name, operand)
    }

    /// `EXISTS (SELECT …)` → `["EXISTS", ["SELECT", {…}]]`.
    mutating func existsExpression() -> JSON? {
        guard keyword("EXISTS"), let select = subquery() else { return nil }
        return Op.op("EXISTS", select)
    }

    /// `CASE [value] (WHEN w THEN t)+ [ELSE e] END` → `["CASE", value or null, w, t, …, e]`.
    mutating func caseExpression() -> JSON? {
        guard keyword("CASE") else { return nil }
        var items: [JSON] = [.string("CASE")]
        if !lookingAt(keyword: "WHEN"), let value = expression() {
            items.append(value)
        } else {
            items.append(.null)
        }
        var branches = 0
        while let branch = optional({ $0.whenThen() }) {
            items += branch
            branches += 1
        }
        guard branches > 0 else { return nil }
        if let otherwise = optional({ $0.clause("ELSE") }) { items.append(otherwise) }
        guard keyword("END") else { return nil }
        return .array(items)
    }

    private mutating func whenThen() -> [JSON]? {
        guard let condition = clause("WHEN"), let result = clause("THEN") else { return nil }
        return [condition, result]
    }

    /// `(ANY|SOME) [AND EVERY] | EVERY  var IN expr SATISFIES expr END` →
    /// `["ANY", "var", expr, test]`, with `var` in `test` turned into `?var`.
    mutating func anyEveryExpression() -> JSON? {
        let name: String
        if keyword("ANY") || keyword("SOME") {
            let save = pos
            if keyword("AND"), keyword("EVERY") {
                name = "ANY AND EVERY"
            } else {
                pos = save
                name = "ANY"
            }
        } else if keyword("EVERY") {
            name = "EVERY"
        } else {
            return nil
        }
        guard let variable = identifier("a variable name"), keyword("IN"), let collection = expression(),
              keyword("SATISFIES"), let test = expression(), keyword("END") else { return nil }
        return Op.op(name, .string(variable), collection, Op.substituteVariable(variable, in: test))
    }

    /// `$name` → `["$name"]`.
    mutating func parameter() -> JSON? {
        guard matchRaw("$") else {
            fail("'$'")
            return nil
        }
        guard let name = identifier("a parameter name") else { return nil }
        return .array([.string("$" + name)])
    }

    /// `( expression )`.
    mutating func parenthesized() -> JSON? {
        guard symbol("("), let inner = expression(), symbol(")") else { return nil }
        return inner
    }

    /// `( [expression (, expression)*] )` → the expressions.
    mutating func parenthesizedList() -> [JSON]? {
        guard symbol("(") else { return nil }
        let list = optional({ $0.commaList { $0.expression() } }) ?? []
        guard symbol(")") else { return nil }
        return list
    }
}
