import SofaCore

/// The operator rules, lowest precedence first (LiteCore's `expr9` … `expr0`). Binary operators
/// associate to the left: `3 - 4 - 5` → `["-", ["-", 3, 4], 5]`.
extension N1QLParser {
    typealias Op = N1QLVocabulary

    mutating func expression() -> JSON? { subtree { $0.collateLevel() } }

    /// `expr8 [COLLATE collation | COLLATE (collation…)]`.
    mutating func collateLevel() -> JSON? {
        guard let x = orLevel() else { return nil }
        if let collations = optional({ $0.collateSuffix() }) { return grow() ? Op.collate(x, collations) : nil }
        return x
    }

    /// `COLLATE word` (not followed by another word) or `COLLATE (word word …)`, where a word is
    /// `[NO]UNICODE`, `[NO]CASE`, `[NO]DIAC` or `UNICODE:locale`.
    mutating func collateSuffix() -> [String]? {
        guard keyword("COLLATE") else { return nil }
        if let single = optional({ $0.collation() }) {
            let next = pos
            guard optional({ $0.collation() }) == nil else {
                fail("a single collation (several go in parentheses)", at: next)
                return nil
            }
            return [single]
        }
        guard symbol("(") else { return nil }
        var words: [String] = []
        while let word = optional({ $0.collation() }) { words.append(word) }
        guard !words.isEmpty, symbol(")") else { return nil }
        return words
    }

    mutating func collation() -> String? {
        let start = pos
        if matchWordPrefix("UNICODE"), matchRaw(":") {
            let langStart = pos
            while let c = peek(), Self.isWordChar(c) { pos += 1 }
            if pos > langStart {
                let word = String(decoding: text[start..<pos], as: UTF8.self)
                skipSpace()
                return word
            }
        }
        pos = start
        _ = matchWordPrefix("NO")
        for name in ["UNICODE", "CASE", "DIAC"] {
            let afterNo = pos
            if matchWordPrefix(name), !(peek().map(Self.isWordChar) ?? false) {
                let word = String(decoding: text[start..<pos], as: UTF8.self)
                skipSpace()
                return word
            }
            pos = afterNo
        }
        pos = start
        fail("a collation (UNICODE, CASE, DIAC, NO…)")
        return nil
    }

    /// `expr7 (OR expr7)*`.
    mutating func orLevel() -> JSON? {
        leftAssociative({ $0.andLevel() }) { $0.operatorKeyword("OR") ? "OR" : nil }
    }

    /// `expr6 (AND expr6)*`.
    mutating func andLevel() -> JSON? {
        leftAssociative({ $0.comparisonLevel() }) { $0.operatorKeyword("AND") ? "AND" : nil }
    }

    /// `expr5` followed by the first of: a postfix test (`IS [NOT] NULL|MISSING|VALUED`,
    /// `NOT NULL`); `[NOT] IN (…)|[…]`; `[NOT] LIKE expr5`; `[NOT] BETWEEN expr5 AND expr5`;
    /// or `(= == != <> IS NOT IS) expr5` repeated. The operand is parsed once and shared by the
    /// alternatives, which is what the grammar's five alternatives compute, in linear time.
    mutating func comparisonLevel() -> JSON? {
        guard let x = relationalLevel() else { return nil }
        explainInfixMatch()
        if let test = optional({ $0.postfixTest(x) }) { return test }
        if let membership = optional({ $0.inSuffix(x) }) { return membership }
        if let like = optional({ $0.likeSuffix(x) }) { return like }
        if let between = optional({ $0.betweenSuffix(x) }) { return between }
        return leftAssociativeTail(x, { $0.relationalLevel() }) { $0.equalityOperator() }
    }

    mutating func postfixTest(_ x: JSON) -> JSON? {
        if operatorKeyword("NOT") {
            guard keyword("NULL"), grow() else { return nil }
            return Op.op("IS NOT", x, .null)
        }
        guard operatorKeyword("IS"), grow(2) else { return nil }
        let negated = operatorKeyword("NOT")
        if keyword("NULL") { return Op.op(negated ? "IS NOT" : "IS", x, .null) }
        if keyword("MISSING") { return Op.op(negated ? "IS NOT" : "IS", x, Op.missing) }
        if keyword("VALUED") {
            let valued = Op.op("IS VALUED", x)
            return negated ? Op.op("NOT", valued) : valued
        }
        return nil
    }

    /// `x [NOT] MATCH y` is not N1QL (LiteCore's grammar has no infix MATCH): when it comes next,
    /// the syntax error there says how a full-text match is written.
    mutating func explainInfixMatch() {
        var probe = self
        _ = probe.operatorKeyword("NOT")
        guard probe.lookingAt(keyword: "MATCH") else { return }
        hint("there is no infix MATCH: write MATCH(index, 'terms'), at the top of WHERE or under its "
                + "top-level ANDs (LiteCore's rule: it cannot be negated)", at: probe.pos)
    }

    /// `[NOT] IN (a, b…)` or `[NOT] IN [a, b…]` → `["IN", x, ["[]", a, b…]]`. `IN (SELECT …)` is
    /// refused, as LiteCore's grammar refuses it (its rule for it is disabled).
    mutating func inSuffix(_ x: JSON) -> JSON? {
        let name = operatorKeyword("NOT") ? "NOT IN" : "IN"
        guard operatorKeyword("IN"), grow() else { return nil }
        var probe = self
        if probe.symbol("("), probe.lookingAt(keyword: "SELECT") {
            hint("\(name) (SELECT …) is not supported (nor by LiteCore's N1QL): give a list (a, b…) or an array",
                 at: probe.pos)
        }
        if let list = optional({ $0.parenthesizedList() }) {
            return Op.op(name, x, .array([.string("[]")] + list))
        }
        guard let array = arrayLiteral() else { return nil }
        return Op.op(name, x, array)
    }

    /// `[NOT] LIKE expr5` → `["LIKE", x, pattern]`, inside `["NOT", …]` when negated.
    mutating func likeSuffix(_ x: JSON) -> JSON? {
        let negated = operatorKeyword("NOT")
        guard operatorKeyword("LIKE"), let pattern = relationalLevel(), grow(2) else { return nil }
        let like = Op.op("LIKE", x, pattern)
        return negated ? Op.op("NOT", like) : like
    }

    /// `[NOT] BETWEEN expr5 AND expr5` → `["BETWEEN", x, min, max]`, inside `["NOT", …]` when negated.
    mutating func betweenSuffix(_ x: JSON) -> JSON? {
        let negated = operatorKeyword("NOT")
        guard operatorKeyword("BETWEEN"), let low = relationalLevel(), keyword("AND"),
              let high = relationalLevel(), grow(2) else { return nil }
        let between = Op.op("BETWEEN", x, low, high)
        return negated ? Op.op("NOT", between) : between
    }

    mutating func equalityOperator() -> String? {
        if symbol("==", "an operator") || symbol("=", "an operator") { return "=" }
        if symbol("<>", "an operator") || symbol("!=", "an operator") { return "!=" }
        let start = pos
        if operatorKeyword("IS") {
            let afterIS = pos
            if operatorKeyword("NOT") { return "IS NOT" }
            pos = afterIS
            return "IS"
        }
        pos = start
        return nil
    }

    /// `expr4 ((<= | < | >= | >) expr4)*`.
    mutating func relationalLevel() -> JSON? {
        leftAssociative({ $0.bitwiseLevel() }) { $0.firstSymbol(["<=", "<", ">=", ">"]) }
    }

    /// `expr3 ((<< | >> | & | |) expr3)*`.
    mutating func bitwiseLevel() -> JSON? {
        leftAssociative({ $0.additiveLevel() }) { $0.firstSymbol(["<<", ">>", "&", "|"]) }
    }

    /// `expr2 ((+ | -) expr2)*`.
    mutating func additiveLevel() -> JSON? {
        leftAssociative({ $0.multiplicativeLevel() }) { $0.firstSymbol(["+", "-"]) }
    }

    /// `expr1 ((* | / | %) expr1)*`.
    mutating func multiplicativeLevel() -> JSON? {
        leftAssociative({ $0.concatenationLevel() }) { $0.firstSymbol(["*", "/", "%"]) }
    }

    /// `expr0 (|| expr0)*`.
    mutating func concatenationLevel() -> JSON? {
        leftAssociative({ $0.pathLevel() }) { $0.firstSymbol(["||"]) }
    }

    /// `baseExpr . path` → `["_.", base, ".path"]`, or `baseExpr`.
    mutating func pathLevel() -> JSON? {
        guard let base = baseExpression() else { return nil }
        let save = pos
        if symbol("."), let path = propertyPath(), grow() {
            return Op.op("_.", base, .string(path))
        }
        pos = save
        return base
    }

    // MARK: Helpers

    mutating func firstSymbol(_ symbols: [String]) -> String? {
        for s in symbols where symbol(s, "an operator") { return s }
        return nil
    }

    mutating func leftAssociative(_ operand: (inout N1QLParser) -> JSON?,
                                  _ op: (inout N1QLParser) -> String?) -> JSON? {
        guard let first = operand(&self) else { return nil }
        return leftAssociativeTail(first, operand, op)
    }

    /// `(op operand)*` folded to the left onto `first`; an operator without an operand after it
    /// is given back.
    mutating func leftAssociativeTail(_ first: JSON, _ operand: (inout N1QLParser) -> JSON?,
                                      _ op: (inout N1QLParser) -> String?) -> JSON {
        var result = first
        while true {
            let save = pos
            guard abort == nil, let name = op(&self), let right = subtree(operand) else {
                pos = save
                return result
            }
            guard grow() else { return result }
            result = Op.op(name, result, right)
        }
    }
}
