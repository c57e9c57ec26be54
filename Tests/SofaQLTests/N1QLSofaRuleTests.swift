import Testing
import SofaCore
import SofaQL

/// Trees that follow from LiteCore's grammar (`n1ql.leg`) but that its tests do not pin, and
/// Sofa's one extension (UNNEST). Each row names the rule it shows.
@Suite struct N1QLGrammarRules {
    static let precedence: [TreeFact] = [
        // AND binds tighter than OR.
        .init("SELECT a OR b AND c", "{'WHAT':[['OR',['.a'],['AND',['.b'],['.c']]]]}"),
        // || binds tighter than * and /, which bind tighter than + and -.
        .init("SELECT a * b || c", "{'WHAT':[['*',['.a'],['||',['.b'],['.c']]]]}"),
        .init("SELECT a / b % c", "{'WHAT':[['%',['/',['.a'],['.b']],['.c']]]}"),
        // Shifts and bit operators sit between + and comparisons.
        .init("SELECT 1 << 2 + 3", "{'WHAT':[['<<',1,['+',2,3]]]}"),
        .init("SELECT a & b < c | d", "{'WHAT':[['<',['&',['.a'],['.b']],['|',['.c'],['.d']]]]}"),
        // Relational operators bind tighter than equality.
        .init("SELECT a < b = c >= d", "{'WHAT':[['=',['<',['.a'],['.b']],['>=',['.c'],['.d']]]]}"),
        // Equality operators chain to the left.
        .init("SELECT a = b != c", "{'WHAT':[['!=',['=',['.a'],['.b']],['.c']]]}"),
        // Prefix NOT and minus apply to a primary only.
        .init("SELECT NOT a = b", "{'WHAT':[['=',['NOT',['.a']],['.b']]]}"),
        .init("SELECT - 17", "{'WHAT':[['-',17]]}"),
        .init("SELECT -(a + 1)", "{'WHAT':[['-',['+',['.a'],1]]]}"),
        .init("SELECT 3 -4", "{'WHAT':[['-',3,4]]}"),
        // COLLATE applies to the whole expression before it.
        .init("SELECT a = b COLLATE NOCASE", "{'WHAT':[['COLLATE',{'CASE':false},['=',['.a'],['.b']]]]}"),
        // LIKE and BETWEEN take additive operands.
        .init("SELECT a || 'x' LIKE b || '%'", "{'WHAT':[['LIKE',['||',['.a'],'x'],['||',['.b'],'%']]]}"),
        .init("SELECT a BETWEEN 1 AND 2 AND b", "{'WHAT':[['AND',['BETWEEN',['.a'],1,2],['.b']]]}"),
    ]

    @Test(arguments: precedence)
    func precedenceRule(_ fact: TreeFact) throws { try check(fact) }

    static let forms: [TreeFact] = [
        .init("SELECT x IS NULL", "{'WHAT':[['IS',['.x'],null]]}"),
        .init("SELECT x IS NOT NULL", "{'WHAT':[['IS NOT',['.x'],null]]}"),
        .init("SELECT x IS MISSING", "{'WHAT':[['IS',['.x'],['MISSING']]]}"),
        .init("SELECT x NOT IN ['a', 'b']", "{'WHAT':[['NOT IN',['.x'],['[]','a','b']]]}"),
        .init("SELECT x IN ()", "{'WHAT':[['IN',['.x'],['[]']]]}"),
        .init("SELECT EVERY v IN vals SATISFIES v.n[0] > 1 END",
              "{'WHAT':[['EVERY','v',['.vals'],['>',['?v.n[0]'],1]]]}"),
        // Only operations are rewritten: a property that merely starts with the name stays.
        .init("SELECT ANY v IN vals SATISFIES vx = v END", "{'WHAT':[['ANY','v',['.vals'],['=',['.vx'],['?v']]]]}"),
        .init("SELECT ANY v IN vals SATISFIES v END", "{'WHAT':[['ANY','v',['.vals'],['?v']]]}"),
        .init("SELECT CASE WHEN a THEN 1 END", "{'WHAT':[['CASE',null,['.a'],1]]}"),
        .init("SELECT meta(db).expiration FROM db",
              "{'FROM':[{'COLLECTION':'db'}],'WHAT':[['_.',['meta()','db'],'.expiration']]}"),
        .init("SELECT (a).b[1]", "{'WHAT':[['_.',['.a'],'.b[1]']]}"),
        .init("SELECT {'a': 1, 'a': 2}", "{'WHAT':[{'a':2}]}"),
        .init(#"SELECT 'it''s "quoted"'"#, #"{'WHAT':['it"s \'quoted\'']}"#),
        .init("SELECT `über`", "{'WHAT':[['.über']]}"),
        .init("SELECT 1.", "{'WHAT':[1.0]}"),
        .init("SELECT foo LIMIT $n OFFSET $n * 2", "{'LIMIT':['$n'],'OFFSET':['*',['$n'],2],'WHAT':[['.foo']]}"),
        .init("SELECT foo;", "{'WHAT':[['.foo']]}"),
        .init("select distinct foo from db where x = 1 order by x desc, y asc",
              "{'DISTINCT':true,'FROM':[{'COLLECTION':'db'}],'ORDER_BY':[['DESC',['.x']],['ASC',['.y']]],"
                  + "'WHAT':[['.foo']],'WHERE':['=',['.x'],1]}"),
        .init("SELECT a.x FROM db a LEFT OUTER JOIN db b ON a.k = b.k",
              "{'FROM':[{'AS':'a','COLLECTION':'db'},{'AS':'b','COLLECTION':'db','JOIN':'LEFT OUTER',"
                  + "'ON':['=',['.a.k'],['.b.k']]}],'WHAT':[['.a.x']]}"),
        .init("SELECT a.x FROM db a INNER JOIN db b ON a.k = b.k",
              "{'FROM':[{'AS':'a','COLLECTION':'db'},{'AS':'b','COLLECTION':'db','JOIN':'INNER',"
                  + "'ON':['=',['.a.k'],['.b.k']]}],'WHAT':[['.a.x']]}"),
        .init("SELECT upper(name), RANK(db.ftsIdx) FROM db",
              "{'FROM':[{'COLLECTION':'db'}],'WHAT':[['upper()',['.name']],['RANK()','db.ftsIdx']]}"),
        // Without SELECT, a list of expressions is a WHAT (LiteCore's form for index expressions).
        .init("name, lower(city)", "{'WHAT':[['.name'],['lower()',['.city']]]}"),
    ]

    @Test(arguments: forms)
    func formRule(_ fact: TreeFact) throws { try check(fact) }

    /// Sofa's extension: `UNNEST expr [AS] alias` as a FROM item, the JSON schema's UNNEST source.
    static let unnest: [TreeFact] = [
        .init("SELECT b.title FROM library l UNNEST l.books AS b",
              "{'FROM':[{'AS':'l','COLLECTION':'library'},{'AS':'b','UNNEST':['.l.books']}],'WHAT':[['.b.title']]}"),
        .init("SELECT t FROM db UNNEST tags t WHERE t LIKE 'a%'",
              "{'FROM':[{'COLLECTION':'db'},{'AS':'t','UNNEST':['.tags']}],'WHAT':[['.t']],'WHERE':['LIKE',['.t'],'a%']}"),
        .init("SELECT 1 FROM db UNNEST db.a x UNNEST x.b y",
              "{'FROM':[{'COLLECTION':'db'},{'AS':'x','UNNEST':['.db.a']},{'AS':'y','UNNEST':['.x.b']}],'WHAT':[1]}"),
        .init("SELECT 1 FROM db `unnest`", "{'FROM':[{'AS':'unnest','COLLECTION':'db'}],'WHAT':[1]}"),
    ]

    @Test(arguments: unnest)
    func unnestRule(_ fact: TreeFact) throws { try check(fact) }
}
