import SofaCore

/// The statement rules: `n1ql`, `selectStatement`, `from`, `join`, `groupBy`, `orderBy`.
extension N1QLParser {
    /// `_ selectStatement _ !.` or `selectResults !.` (bare expressions, for index definitions).
    mutating func parseQuery() -> JSON? {
        skipSpace()
        let start = pos
        if let select = selectStatement() {
            if atEnd { return .object(select) }
            fail("end of input")
        }
        pos = start
        if let results = selectResults() {
            if atEnd { return .object(JSONObject([("WHAT", .array(results))])) }
            fail("end of input")
        }
        return nil
    }

    /// `SELECT [DISTINCT|ALL] results [FROM …] [WHERE …] [GROUP BY … [HAVING …]] [ORDER BY …]
    /// [LIMIT … [OFFSET …] | OFFSET … [LIMIT …]] [;]`
    mutating func selectStatement() -> JSONObject? {
        let start = pos
        guard keyword("SELECT") else { return nil }
        var select = JSONObject()
        if keyword("DISTINCT") {
            select["DISTINCT"] = .bool(true)
        } else {
            _ = keyword("ALL")
        }
        guard let results = selectResults() else {
            pos = start
            return nil
        }
        select["WHAT"] = .array(results)
        if let from = optional({ $0.fromClause() }) { select["FROM"] = .array(from) }
        if let filter = optional({ $0.clause("WHERE") }) { select["WHERE"] = filter }
        if let groups = optional({ $0.listClause("GROUP", "BY") { $0.expression() } }) {
            select["GROUP_BY"] = .array(groups)
            if let having = optional({ $0.clause("HAVING") }) { select["HAVING"] = having }
        }
        if let orderings = optional({ $0.listClause("ORDER", "BY") { $0.ordering() } }) {
            select["ORDER_BY"] = .array(orderings)
        }
        if let limit = optional({ $0.clause("LIMIT") }) {
            select["LIMIT"] = limit
            if let offset = optional({ $0.clause("OFFSET") }) { select["OFFSET"] = offset }
        } else if let offset = optional({ $0.clause("OFFSET") }) {
            select["OFFSET"] = offset
            if let limit = optional({ $0.clause("LIMIT") }) { select["LIMIT"] = limit }
        }
        _ = symbol(";")
        return select
    }

    /// Runs `rule`; on failure puts the cursor back and returns nil (a PEG `( … )?`).
    mutating func optional<T>(_ rule: (inout N1QLParser) -> T?) -> T? {
        let start = pos
        if let value = rule(&self) { return value }
        pos = start
        return nil
    }

    /// `KEYWORD expression`.
    mutating func clause(_ word: String) -> JSON? {
        guard keyword(word) else { return nil }
        return expression()
    }

    /// `FIRST SECOND item (, item)*`, as in `GROUP BY a, b`.
    mutating func listClause(_ first: String, _ second: String,
                             _ item: (inout N1QLParser) -> JSON?) -> [JSON]? {
        guard keyword(first), keyword(second) else { return nil }
        return commaList(item)
    }

    /// `item (, item)*`, at least one.
    mutating func commaList(_ item: (inout N1QLParser) -> JSON?) -> [JSON]? {
        guard let first = item(&self) else { return nil }
        var items = [first]
        while true {
            let save = pos
            guard symbol(","), let next = item(&self) else {
                pos = save
                return items
            }
            items.append(next)
        }
    }

    /// `selectResult (, selectResult)*`.
    mutating func selectResults() -> [JSON]? {
        commaList { $0.selectResult() }
    }

    /// `expression [[AS] alias]` → the expression or `["AS", expression, alias]`.
    mutating func selectResult() -> JSON? {
        guard let expr = expression() else { return nil }
        let save = pos
        let hadAS = keyword("AS")
        if let alias = identifier("a column alias") {
            return N1QLVocabulary.op("AS", expr, .string(alias))
        }
        if hadAS { pos = save }
        return expr
    }

    /// `expression [ASC|DESC]` → the expression or `["DESC", expression]`.
    mutating func ordering() -> JSON? {
        guard let expr = expression() else { return nil }
        if keyword("ASC") { return N1QLVocabulary.op("ASC", expr) }
        if keyword("DESC") { return N1QLVocabulary.op("DESC", expr) }
        return expr
    }

    // MARK: FROM

    /// `FROM dataSource (join | unnest)*`.
    mutating func fromClause() -> [JSON]? {
        guard keyword("FROM"), let first = dataSource() else { return nil }
        var sources: [JSON] = [.object(first)]
        while true {
            if let joined = optional({ $0.join() }) {
                sources.append(.object(joined))
            } else if let unnest = optional({ $0.unnest() }) {
                sources.append(.object(unnest))
            } else {
                return sources
            }
        }
    }

    /// `[scope.]collection [[AS] alias]` → `{"COLLECTION": …, "SCOPE": …, "AS": …}`; dots in the
    /// names are escaped.
    mutating func dataSource() -> JSONObject? {
        guard let first = identifier("a collection name") else { return nil }
        var source = JSONObject()
        let save = pos
        if symbol("."), let second = identifier("a collection name") {
            source["SCOPE"] = .string(N1QLVocabulary.quoteName(first))
            source["COLLECTION"] = .string(N1QLVocabulary.quoteName(second))
        } else {
            pos = save
            source["COLLECTION"] = .string(N1QLVocabulary.quoteName(first))
        }
        if let alias = optional({ $0.sourceAlias() }) { source["AS"] = .string(N1QLVocabulary.quoteName(alias)) }
        return source
    }

    /// `[AS] alias` (an unquoted `UNNEST`, a reserved word, starts the next FROM item instead).
    mutating func sourceAlias() -> String? {
        _ = keyword("AS")
        return identifier("an alias")
    }

    /// `[LEFT [OUTER] | INNER | CROSS] JOIN dataSource [ON expression]`.
    mutating func join() -> JSONObject? {
        var kind = "INNER"
        if keyword("LEFT") {
            kind = keyword("OUTER") ? "LEFT OUTER" : "LEFT"
        } else if keyword("INNER") {
            kind = "INNER"
        } else if keyword("CROSS") {
            kind = "CROSS"
        }
        guard keyword("JOIN"), var source = dataSource() else { return nil }
        source["JOIN"] = .string(kind)
        if let condition = optional({ $0.clause("ON") }) { source["ON"] = condition }
        return source
    }

    /// Sofa's extension: `UNNEST expression [[AS] alias]` → `{"UNNEST": expression, "AS": alias}`.
    mutating func unnest() -> JSONObject? {
        guard keyword("UNNEST"), let expr = expression() else { return nil }
        var item = JSONObject([("UNNEST", expr)])
        if let alias = optional({ $0.sourceAlias() }) { item["AS"] = .string(N1QLVocabulary.quoteName(alias)) }
        return item
    }

    /// `'(' selectStatement ')'` → `["SELECT", {…}]`.
    mutating func subquery() -> JSON? {
        let start = pos
        guard symbol("("), let select = selectStatement(), symbol(")") else {
            pos = start
            return nil
        }
        return N1QLVocabulary.op("SELECT", .object(select))
    }
}
