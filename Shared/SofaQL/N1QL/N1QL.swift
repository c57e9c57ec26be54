public import SofaCore

/// SQL++ for Mobile (Couchbase Lite's N1QL) → LiteCore's JSON query tree.
///
/// `parse` returns exactly what LiteCore's own N1QL parser (`n1ql.leg`) returns: the bare SELECT
/// dictionary (`{"WHAT": …, "FROM": …, "WHERE": …, "GROUP_BY": …, "HAVING": …, "ORDER_BY": …,
/// "LIMIT": …, "OFFSET": …, "DISTINCT": true}`), which the JSON query schema accepts as is and which
/// is the operand of `["SELECT", …]` (the form a nested `EXISTS (SELECT …)` takes). A bare list of
/// expressions without `SELECT` (`a, b.c`) gives `{"WHAT": [...]}`, as LiteCore does for index
/// expressions.
///
/// Example: `SELECT name AS n FROM store.customers c WHERE age >= $min ORDER BY n DESC LIMIT 10` →
/// `{"FROM":[{"AS":"c","COLLECTION":"customers","SCOPE":"store"}],"LIMIT":10,
///   "ORDER_BY":[["DESC",[".n"]]],"WHAT":[["AS",[".name"],"n"]],"WHERE":[">=",[".age"],["$min"]]}`
///
/// The grammar is LiteCore's, rule for rule, as a PEG (ordered choice, backtracking), with the same
/// operator precedence (lowest first): `COLLATE` suffix; `OR`; `AND`; `IS [NOT] NULL|MISSING|VALUED`,
/// `NOT NULL`, `[NOT] IN`, `[NOT] LIKE`, `[NOT] BETWEEN … AND …`, `= == != <> IS IS NOT`;
/// `< <= > >=`; `<< >> & |`; `+ -`; `* / %`; `||`; `expr.path`; then primaries (literals, `[…]`,
/// `{…}`, prefix `- + NOT`, `EXISTS`, `CASE`, `ANY/SOME/EVERY … SATISFIES … END`, `$param`,
/// functions, `META()`, `MATCH()`, `RANK()`, properties, parentheses). Where LiteCore keeps the
/// spelling the user typed (function names: `count(*)` → `["count()", ["."]]`), so does Sofa;
/// keywords that become operator names (`NOT`, `ASC`/`DESC`, join kinds) are written uppercase.
///
/// One extension beyond LiteCore's N1QL grammar: `UNNEST expr [AS] alias` as a FROM item, which
/// becomes the JSON schema's `{"UNNEST": expr, "AS": alias}`.
public enum N1QL {
    /// Parses N1QL text. A syntax error is `SofaError(.invalidQuery, …)` whose message gives the
    /// line, column and byte offset of the furthest point the parser reached, what it expected
    /// there, and what it found.
    public static func parse(_ text: String) throws(SofaError) -> JSON {
        var parser = N1QLParser(text)
        if let tree = parser.parseQuery(), parser.abort == nil { return tree }
        throw SofaError(.invalidQuery, parser.errorMessage())
    }

    /// `parse`, or nil for text that is not a valid query.
    public static func tryParse(_ text: String) -> JSON? {
        try? parse(text)
    }
}
