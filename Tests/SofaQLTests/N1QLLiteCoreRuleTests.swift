import Testing
import SofaCore
@testable import SofaQL

/// N1QL that LiteCore reads in a way Sofa once did not: MATCH in a negation, IN with a subquery,
/// `UNNEST` as a reserved word, and EXISTS only before a subquery.
@Suite struct N1QLLiteCoreRuleTests {
    /// `NOT MATCH(…)` parses (NOT applies to any primary), and compiles to LiteCore's error:
    /// a full-text match stands only at the top of WHERE or under its top-level ANDs.
    @Test func negatedMatchParsesAndIsRefused() throws {
        try check(TreeFact("SELECT 1 WHERE NOT MATCH(byText, 'dog')", "{'WHAT':[1],'WHERE':['NOT',['MATCH()','byText','dog']]}"))
        let db = try TestDatabase([("a", #"{"text":"a dog"}"#), ("b", #"{"text":"a cat"}"#)])
        try db.createIndex(IndexSpec(name: "byText", kind: .fullText, collection: .default, expressions: [[".text"]]))
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","byText","dog"]}"#) == [#"["a"]"#])
        for n1ql in [
            "SELECT META().id FROM _ WHERE NOT MATCH(byText, 'dog')",
            "SELECT META().id FROM _ WHERE MATCH(byText, 'dog') OR text = 'a cat'",
            "SELECT META().id FROM _ WHERE text IS VALUED AND NOT MATCH(byText, 'dog')",
        ] {
            #expect(throws: SofaError(.invalidQuery, "MATCH can only appear at top-level, or in a top-level AND"), "\(n1ql)") {
                _ = try db.compile(try N1QL.parse(n1ql))
            }
        }
        let allowed = try db.compile(try N1QL.parse("SELECT META().id FROM _ WHERE text IS VALUED AND MATCH(byText, 'dog')"))
        #expect(allowed.columns == ["id"])
    }

    /// Syntax errors that say what LiteCore's grammar wants instead, at the place it stops.
    @Test(arguments: [
        // No infix MATCH in the grammar.
        ("SELECT 1 WHERE text NOT MATCH 'dog'", 1, 25, "there is no infix MATCH"),
        ("SELECT 1 WHERE text MATCH 'dog'", 1, 21, "there is no infix MATCH"),
        // IN with a subquery: the grammar's rule for it is disabled.
        ("SELECT 17 IN (SELECT 1)", 1, 15, "IN (SELECT …) is not supported"),
        ("SELECT x FROM _ WHERE x NOT IN ( SELECT y FROM _ )", 1, 34, "NOT IN (SELECT …) is not supported"),
        // UNNEST is reserved: back-quote it to use it as a name.
        ("SELECT unnest FROM _", 1, 8, "'unnest' is a reserved word"),
        ("SELECT a.unnest FROM _", 1, 10, "'unnest' is a reserved word"),
        ("SELECT x FROM _ WHERE Unnest = 1", 1, 23, "'Unnest' is a reserved word"),
        ("SELECT x AS unnest FROM _", 1, 13, "'unnest' is a reserved word"),
        // EXISTS takes a parenthesized subquery only; before anything else it is a plain name.
        ("SELECT 1 WHERE EXISTS x", 1, 23, "end of input"),
    ])
    func refused(n1ql: String, line: Int, column: Int, says: String) {
        do {
            let tree = try N1QL.parse(n1ql)
            Issue.record("parsed as \(tree.canonicalString)")
        } catch {
            #expect(error.is(.invalidQuery))
            #expect(error.message.contains("line \(line), column \(column)"), "\(error.message)")
            #expect(error.message.contains(says), "\(error.message)")
        }
    }

    /// What stays allowed: a back-quoted `unnest`, a property that only starts with the word, the
    /// UNNEST clause, and IN with a list or an array.
    @Test(arguments: [
        TreeFact("SELECT `unnest` FROM _", "{'FROM':[{'COLLECTION':'_'}],'WHAT':[['.unnest']]}"),
        TreeFact("SELECT unnested, a.`unnest`", "{'WHAT':[['.unnested'],['.a.unnest']]}"),
        TreeFact("SELECT l FROM _ AS d UNNEST d.likes AS l",
                 "{'FROM':[{'AS':'d','COLLECTION':'_'},{'AS':'l','UNNEST':['.d.likes']}],'WHAT':[['.l']]}"),
        TreeFact("SELECT 1 FROM db unnest x AS y", "{'FROM':[{'COLLECTION':'db'},{'AS':'y','UNNEST':['.x']}],'WHAT':[1]}"),
        TreeFact("SELECT x NOT IN (1, 2)", "{'WHAT':[['NOT IN',['.x'],['[]',1,2]]]}"),
        TreeFact("SELECT x IN ((1), 2)", "{'WHAT':[['IN',['.x'],['[]',1,2]]]}"),
        // EXISTS is not a reserved word: without a subquery after it, it names a property.
        TreeFact("SELECT EXISTS x", "{'WHAT':[['AS',['.EXISTS'],'x']]}"),
        TreeFact("SELECT EXISTS (SELECT 1)", "{'WHAT':[['EXISTS',['SELECT',{'WHAT':[1]}]]]}"),
    ])
    func allowed(_ fact: TreeFact) throws { try check(fact) }
}
