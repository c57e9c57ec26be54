import Testing
import SofaCore
import SofaQL

/// Operators, precedence and the special forms, as LiteCore's N1QLParserTest pins them
/// ("N1QL expressions", "N1QL functions", "N1QL collation", type functions).
@Suite struct N1QLExpressionFacts {
    static let operators: [TreeFact] = [
        .init("SELECT -x", "{'WHAT':[['-',['.x']]]}"),
        .init("SELECT NOT x", "{'WHAT':[['NOT',['.x']]]}"),
        .init("SELECT 17+0", "{'WHAT':[['+',17,0]]}"),
        .init("SELECT 17 + 0", "{'WHAT':[['+',17,0]]}"),
        .init("SELECT 17 > 0", "{'WHAT':[['>',17,0]]}"),
        .init("SELECT 17='hi'", "{'WHAT':[['=',17,'hi']]}"),
        .init("SELECT 17 = 'hi'", "{'WHAT':[['=',17,'hi']]}"),
        .init("SELECT 17 == 'hi'", "{'WHAT':[['=',17,'hi']]}"),
        .init("SELECT 17 != 'hi'", "{'WHAT':[['!=',17,'hi']]}"),
        .init("SELECT 17 <>'hi'", "{'WHAT':[['!=',17,'hi']]}"),
        .init("SELECT 17 IN (1, 2, 3)", "{'WHAT':[['IN',17,['[]',1,2,3]]]}"),
        .init("SELECT 17 NOT IN (1, 2, 3)", "{'WHAT':[['NOT IN',17,['[]',1,2,3]]]}"),
        .init("SELECT 17 IN [1, 2, 3]", "{'WHAT':[['IN',17,['[]',1,2,3]]]}"),
        .init("SELECT 17 NOT IN [1, 2, 3]", "{'WHAT':[['NOT IN',17,['[]',1,2,3]]]}"),
        .init("SELECT 6 IS 9", "{'WHAT':[['IS',6,9]]}"),
        .init("SELECT 6 IS NOT 9", "{'WHAT':[['IS NOT',6,9]]}"),
        .init("SELECT 6 NOT NULL", "{'WHAT':[['IS NOT',6,null]]}"),
        .init("SELECT 6 WHERE x IS   NOT   VALUED", "{'WHAT':[6],'WHERE':['NOT',['IS VALUED',['.x']]]}"),
        .init("SELECT 6 WHERE x  IS  VALUED", "{'WHAT':[6],'WHERE':['IS VALUED',['.x']]}"),
        .init("SELECT 'foo' LIKE 'f%'", "{'WHAT':[['LIKE','foo','f%']]}"),
        .init("SELECT 'foo' NOT LIKE 'f%'", "{'WHAT':[['NOT',['LIKE','foo','f%']]]}"),
        .init("SELECT 2 BETWEEN 1 AND 4", "{'WHAT':[['BETWEEN',2,1,4]]}"),
        .init("SELECT 2 NOT BETWEEN 1 AND 4", "{'WHAT':[['NOT',['BETWEEN',2,1,4]]]}"),
        .init("SELECT 2+3 BETWEEN 1+1 AND 4+4", "{'WHAT':[['BETWEEN',['+',2,3],['+',1,1],['+',4,4]]]}"),
        .init("SELECT 3 + 4 + 5 + 6", "{'WHAT':[['+',['+',['+',3,4],5],6]]}"),
        .init("SELECT 3 - 4 - 5 - 6", "{'WHAT':[['-',['-',['-',3,4],5],6]]}"),
        .init("SELECT 3 + 4 * 5 - 6", "{'WHAT':[['-',['+',3,['*',4,5]],6]]}"),
        .init("SELECT (3 + 4) * (5 - 6)", "{'WHAT':[['*',['+',3,4],['-',5,6]]]}"),
        .init("SELECT type='airline' and callsign not null",
              "{'WHAT':[['AND',['=',['.type'],'airline'],['IS NOT',['.callsign'],null]]]}"),
        .init("SELECT unitPrice, name FROM _default AS product WHERE unitPrice IS NOT MISSING AND "
                  + #"test_id="where_func" ORDER BY unitPrice, productId LIMIT 3"#,
              "{'FROM':[{'AS':'product','COLLECTION':'_default'}],'LIMIT':3,'ORDER_BY':[['.unitPrice'],['.productId']],"
                  + "'WHAT':[['.unitPrice'],['.name']],"
                  + "'WHERE':['AND',['IS NOT',['.unitPrice'],['MISSING']],['=',['.test_id'],'where_func']]}"),
    ]

    @Test(arguments: operators)
    func operation(_ fact: TreeFact) throws { try check(fact) }

    static let specialForms: [TreeFact] = [
        .init("SELECT * WHERE ANY x IN addresses SATISFIES x.zip = 94040 OR x = 0 OR xy = x END",
              "{'WHAT':[['.']],'WHERE':['ANY','x',['.addresses'],['OR',['OR',['=',['?x.zip'],94040],"
                  + "['=',['?x'],0]],['=',['.xy'],['?x']]]]}"),
        .init("SELECT * WHERE ANY AND EVERY x IN addresses SATISFIES x.zip = 94040 OR x = 0 OR xy = x END",
              "{'WHAT':[['.']],'WHERE':['ANY AND EVERY','x',['.addresses'],['OR',['OR',['=',['?x.zip'],94040],"
                  + "['=',['?x'],0]],['=',['.xy'],['?x']]]]}"),
        .init("SELECT * WHERE SOME x IN addresses SATISFIES x.zip = 94040 OR x = 0 OR xy = x END",
              "{'WHAT':[['.']],'WHERE':['ANY','x',['.addresses'],['OR',['OR',['=',['?x.zip'],94040],"
                  + "['=',['?x'],0]],['=',['.xy'],['?x']]]]}"),
        .init("SELECT ANY review IN reviewList SATISFIES review='review2042' END AND NOT (unitPrice<10)",
              "{'WHAT':[['AND',['ANY','review',['.reviewList'],['=',['?review'],'review2042']],"
                  + "['NOT',['<',['.unitPrice'],10]]]]}"),
        .init("SELECT CASE x WHEN 1 THEN 'one' END", "{'WHAT':[['CASE',['.x'],1,'one']]}"),
        .init("SELECT CASE x WHEN 1 THEN 'one' WHEN 2 THEN 'two' END", "{'WHAT':[['CASE',['.x'],1,'one',2,'two']]}"),
        .init("SELECT CASE x WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'duhh' END",
              "{'WHAT':[['CASE',['.x'],1,'one',2,'two','duhh']]}"),
        .init("SELECT CASE WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'duhh' END",
              "{'WHAT':[['CASE',null,1,'one',2,'two','duhh']]}"),
        .init("SELECT {'x':17}.x", "{'WHAT':[['_.',{'x':17},'.x']]}"),
        .init("SELECT {'x':17}.xx.yy", "{'WHAT':[['_.',{'x':17},'.xx.yy']]}"),
        .init("SELECT {'x':17}.xx[0].yy", "{'WHAT':[['_.',{'x':17},'.xx[0].yy']]}"),
        .init("SELECT EXISTS (SELECT 6 IS 9)", "{'WHAT':[['EXISTS',['SELECT',{'WHAT':[['IS',6,9]]}]]]}"),
        .init("SELECT 1 WHERE MATCH(text, 'word') ORDER BY RANK(text)",
              "{'ORDER_BY':[['RANK()','text']],'WHAT':[1],'WHERE':['MATCH()','text','word']}"),
        .init("SELECT 1 WHERE MATCH(`text`, 'word')", "{'WHAT':[1],'WHERE':['MATCH()','text','word']}"),
    ]

    @Test(arguments: specialForms)
    func specialForm(_ fact: TreeFact) throws { try check(fact) }

    static let functions: [TreeFact] = [
        .init("SELECT pi()", "{'WHAT':[['pi()']]}"),
        .init("SELECT sin(1)", "{'WHAT':[['sin()',1]]}"),
        .init("SELECT power(1, 2)", "{'WHAT':[['power()',1,2]]}"),
        .init("SELECT power(1, cos(2))", "{'WHAT':[['power()',1,['cos()',2]]]}"),
        .init("SELECT count(*)", "{'WHAT':[['count()',['.']]]}"),
        .init("SELECT count(db.*)", "{'WHAT':[['count()',['.db.']]]}"),
        .init("SELECT concat(a, b)", "{'WHAT':[['concat()',['.a'],['.b']]]}"),
        .init(#"SELECT concat('hello', "world", ' ', concat(true, 123.45 , sin(1)))"#,
              "{'WHAT':[['concat()','hello','world',' ',['concat()',true,123.45,['sin()',1]]]]}"),
        .init(#"SELECT PREDICTION(factors, {"numbers" : num}, vec)"#,
              "{'WHAT':[['PREDICTION()','factors',{'numbers':['.num']},['.vec']]]}"),
        .init(#"SELECT PREDICTION(factors, {"numbers" : num})"#,
              "{'WHAT':[['PREDICTION()','factors',{'numbers':['.num']}]]}"),
        .init("SELECT isarray(x),  isatom(x),  isboolean(x),  isnumber(x),  isobject(x),  isstring(x),  type(x)",
              "{'WHAT':[['isarray()',['.x']],['isatom()',['.x']],['isboolean()',['.x']],['isnumber()',['.x']],"
                  + "['isobject()',['.x']],['isstring()',['.x']],['type()',['.x']]]}"),
        .init("SELECT is_array(x),  is_atom(x),  is_boolean(x),  is_number(x),  is_object(x),  is_string(x),  typename(x)",
              "{'WHAT':[['is_array()',['.x']],['is_atom()',['.x']],['is_boolean()',['.x']],['is_number()',['.x']],"
                  + "['is_object()',['.x']],['is_string()',['.x']],['typename()',['.x']]]}"),
        .init("SELECT toarray(x),  toatom(x),  toboolean(x),  tonumber(x),  toobject(x),  tostring(x)",
              "{'WHAT':[['toarray()',['.x']],['toatom()',['.x']],['toboolean()',['.x']],['tonumber()',['.x']],"
                  + "['toobject()',['.x']],['tostring()',['.x']]]}"),
        .init("SELECT to_array(x),  to_atom(x),  to_boolean(x),  to_number(x),  to_object(x),  to_string(x)",
              "{'WHAT':[['to_array()',['.x']],['to_atom()',['.x']],['to_boolean()',['.x']],['to_number()',['.x']],"
                  + "['to_object()',['.x']],['to_string()',['.x']]]}"),
    ]

    @Test(arguments: functions)
    func function(_ fact: TreeFact) throws { try check(fact) }

    static let collations: [TreeFact] = [
        .init("SELECT (name = 'fred') COLLATE NOCASE", "{'WHAT':[['COLLATE',{'CASE':false},['=',['.name'],'fred']]]}"),
        .init("SELECT (name = 'fred') COLLATE (UNICODE CASE NODIAC)",
              "{'WHAT':[['COLLATE',{'CASE':true,'DIAC':false,'UNICODE':true},['=',['.name'],'fred']]]}"),
        .init("SELECT (name = 'fred') COLLATE NOCASE FRED",
              "{'WHAT':[['AS',['COLLATE',{'CASE':false},['=',['.name'],'fred']],'FRED']]}"),
        .init("SELECT (name = 'fred') COLLATE (NOCASE) FRED",
              "{'WHAT':[['AS',['COLLATE',{'CASE':false},['=',['.name'],'fred']],'FRED']]}"),
        .init("SELECT (name = 'fred') COLLATE UNICODE:se",
              "{'WHAT':[['COLLATE',{'LOCALE':'se','UNICODE':true},['=',['.name'],'fred']]]}"),
        .init("SELECT (name = 'fred') COLLATE NOUNICODE",
              "{'WHAT':[['COLLATE',{'UNICODE':false},['=',['.name'],'fred']]]}"),
        .init("SELECT (name = 'fred') COLLATE (NOCASE unicode:se DIAC)",
              "{'WHAT':[['COLLATE',{'CASE':false,'DIAC':true,'LOCALE':'se','UNICODE':true},['=',['.name'],'fred']]]}"),
    ]

    @Test(arguments: collations)
    func collation(_ fact: TreeFact) throws { try check(fact) }
}
