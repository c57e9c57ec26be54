import Testing
import SofaCore
import SofaQL

/// Malformed N1QL: an `.invalidQuery` error that says where (line and column of the furthest point
/// the parser reached) and what it expected or found there.
@Suite struct N1QLSyntaxErrors {
    struct Bad: Sendable, CustomTestStringConvertible {
        let n1ql: String
        let line: Int
        let column: Int
        /// Words the message must contain.
        let mentions: [String]

        init(_ n1ql: String, _ line: Int, _ column: Int, _ mentions: String...) {
            self.n1ql = n1ql
            self.line = line
            self.column = column
            self.mentions = mentions
        }

        var testDescription: String { n1ql }
    }

    /// Inputs LiteCore's N1QLParserTest rejects.
    static let liteCoreRejects: [Bad] = [
        .init("SELECT 3+4) from stuff", 1, 11, "')'", "end of input"),
        .init("SELECT squee()", 1, 13, "no function named 'squee'"),
        .init("SELECT 1 WHERE MATCH('text', 'word')", 1, 22, "an index name"),
        .init("SELECT 1 WHERE MATCH(text, 'word') ORDER BY RANK('text')", 1, 50, "an index name"),
        .init("SELECT (name = 'fred') COLLATE UNICODE NOCASE", 1, 40, "parentheses"),
        .init("SELECT (name = 'fred') COLLATE (NOCASE FRED)", 1, 40, "')'"),
        .init("SELECT (name = 'fred') COLLATE (NOUNICODE:se NOCASE DIAC)", 1, 42, "')'"),
        .init("SELECT from where true", 1, 8, "an expression", "reserved word"),
        .init("SELECT WHERE 10", 1, 8, "an expression"),
    ]

    /// Further malformed inputs.
    static let others: [Bad] = [
        .init("", 1, 1, "SELECT", "end of input"),
        .init("SELECT", 1, 7, "an expression"),
        .init("SELECT 'unterminated", 1, 21, "closing"),
        .init("SELECT `unterminated", 1, 21, "closing"),
        .init("SELECT foo FROM", 1, 16, "a collection name"),
        .init("SELECT foo FROM db WHERE", 1, 25, "an expression"),
        .init("SELECT foo\nWHERE = 3", 2, 7, "an expression"),
        .init("SELECT foo\n  FROM db\n  ORDER x", 3, 9, "BY"),
        .init("SELECT CASE x END", 1, 15, "WHEN"),
        .init("SELECT ANY x IN y SATISFIES z", 1, 30, "END"),
        .init("SELECT ANY x IN y z END", 1, 19, "SATISFIES"),
        .init("SELECT 17 IN (SELECT 1)", 1, 15, "an expression"),
        .init("SELECT 99999999999999999999", 1, 8, "out of range"),
        .init("SELECT $ x", 1, 9, "a parameter name"),
        .init("SELECT a[x]", 1, 10, "a number"),
        .init("SELECT 17abc", 1, 8, "an expression"),
        .init("SELECT a FROM db JOIN other ON", 1, 31, "an expression"),
        .init("SELECT a b c", 1, 12, "end of input"),
        .init("SELECT {17: 1}", 1, 9, "a string"),
        .init("SELECT foo LIMIT", 1, 17, "an expression"),
        .init("SELECT é", 1, 8, "an expression", "'é'"),
        .init("SELECT 'ü' + ", 1, 14, "an expression"),
    ]

    @Test(arguments: liteCoreRejects + others)
    func rejects(_ bad: Bad) {
        #expect(N1QL.tryParse(bad.n1ql) == nil)
        do {
            let tree = try N1QL.parse(bad.n1ql)
            Issue.record("parsed as \(tree.canonicalString)")
        } catch {
            #expect(error.is(.invalidQuery))
            #expect(error.message.contains("line \(bad.line), column \(bad.column)"), "\(error.message)")
            for word in bad.mentions {
                #expect(error.message.contains(word), "\(error.message)")
            }
        }
    }
}

/// The whole message for one input: position, what was expected, what was found.
@Test func syntaxErrorMessageShape() {
    #expect(throws: SofaError(.invalidQuery, "N1QL syntax error at line 1, column 11 (offset 10): expected a column "
                                + "alias, an operator, end of input, AS, COLLATE, FROM, GROUP, LIMIT, OFFSET, ORDER, "
                                + "WHERE, ',', '.' or ';'; found ')'")) {
        try N1QL.parse("SELECT 3+4) from stuff")
    }
}
