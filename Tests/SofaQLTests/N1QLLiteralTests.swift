import Testing
import SofaCore
import SofaQL

/// Literals and property paths, as LiteCore's N1QLParserTest pins them ("N1QL literals",
/// "N1QL properties").
@Suite struct N1QLLiteralFacts {
    static let literals: [TreeFact] = [
        .init("SELECT FALSE", "{'WHAT':[false]}"),
        .init("SELECT TRUE", "{'WHAT':[true]}"),
        .init("SELECT NULL", "{'WHAT':[null]}"),
        .init("SELECT MISSING", "{'WHAT':[['MISSING']]}"),
        .init("SELECT 0", "{'WHAT':[0]}"),
        .init("SELECT 17", "{'WHAT':[17]}"),
        .init("SELECT -17", "{'WHAT':[-17]}"),
        .init("SELECT 17.25", "{'WHAT':[17.25]}"),
        .init("SELECT -17.25", "{'WHAT':[-17.25]}"),
        .init("SELECT 17.25e2", "{'WHAT':[1725.0]}"),
        .init("SELECT 17.25E+02", "{'WHAT':[1725.0]}"),
        .init("SELECT 17.25e02", "{'WHAT':[1725.0]}"),
        .init("SELECT 1625e-02", "{'WHAT':[16.25]}"),
        .init("SELECT .25", "{'WHAT':[0.25]}"),
        .init("SELECT 9223372036854775807", "{'WHAT':[9223372036854775807]}"),
        .init("SELECT -9223372036854775808", "{'WHAT':[-9223372036854775808]}"),
        .init("SELECT []", "{'WHAT':[['[]']]}"),
        .init("SELECT [17]", "{'WHAT':[['[]',17]]}"),
        .init("SELECT [  17  ] ", "{'WHAT':[['[]',17]]}"),
        .init("SELECT [17,null, [], 'hi'||'there']", "{'WHAT':[['[]',17,null,['[]'],['||','hi','there']]]}"),
        .init("SELECT ['hi']", "{'WHAT':[['[]','hi']]}"),
        .init("SELECT ['foo bar']", "{'WHAT':[['[]','foo bar']]}"),
        .init("SELECT ['foo ''or'' bar']", #"{'WHAT':[['[]','foo "or" bar']]}"#),
        .init(#"SELECT ["hi"]"#, "{'WHAT':[['[]','hi']]}"),
        .init(#"SELECT ["foo bar"]"#, "{'WHAT':[['[]','foo bar']]}"),
        .init(#"SELECT ["foo ""or"" bar"]"#, #"{'WHAT':[['[]','foo \'or\' bar']]}"#),
        .init("SELECT {}", "{'WHAT':[{}]}"),
        .init("SELECT {'x':17}", "{'WHAT':[{'x':17}]}"),
        .init("SELECT { 'x' :  17  } ", "{'WHAT':[{'x':17}]}"),
        .init("SELECT {'x':17, 'null': null,'empty':{} , 'str':'hi'||'there'}",
              "{'WHAT':[{'empty':{},'null':null,'str':['||','hi','there'],'x':17}]}"),
        .init("\n        SELECT *\n        FROM _\n    ", "{'FROM':[{'COLLECTION':'_'}],'WHAT':[['.']]}"),
    ]

    @Test(arguments: literals)
    func literal(_ fact: TreeFact) throws { try check(fact) }

    static let properties: [TreeFact] = [
        .init("select foo", "{'WHAT':[['.foo']]}"),
        .init("select foo9$_X", #"{'WHAT':[['.foo9\\$_X']]}"#),
        .init("select foo.bar", "{'WHAT':[['.foo.bar']]}"),
        .init("select foo. bar . baz", "{'WHAT':[['.foo.bar.baz']]}"),
        .init("select `foo bar`", "{'WHAT':[['.foo bar']]}"),
        .init("select `foo ``bar``baz`", "{'WHAT':[['.foo `bar`baz']]}"),
        .init("select `mr.grieves`.`hey`", #"{'WHAT':[['.mr\\.grieves.hey']]}"#),
        .init("select `$type`", #"{'WHAT':[['.\\$type']]}"#),
        .init("select meta().id", "{'WHAT':[['_.',['meta()'],'.id']]}"),
        .init("select meta(id).id from _default as id",
              "{'FROM':[{'AS':'id','COLLECTION':'_default'}],'WHAT':[['_.',['meta()','id'],'.id']]}"),
        .init("select meta().sequence", "{'WHAT':[['_.',['meta()'],'.sequence']]}"),
        .init("select meta().revisionID", "{'WHAT':[['_.',['meta()'],'.revisionID']]}"),
        .init("select meta().deleted", "{'WHAT':[['_.',['meta()'],'.deleted']]}"),
        .init("select meta(_default).id from _default",
              "{'FROM':[{'COLLECTION':'_default'}],'WHAT':[['_.',['meta()','_default'],'.id']]}"),
        .init("select foo[17]", "{'WHAT':[['.foo[17]']]}"),
        .init("select foo.bar[-1].baz", "{'WHAT':[['.foo.bar[-1].baz']]}"),
        .init("SELECT *", "{'WHAT':[['.']]}"),
        .init("SELECT db.*", "{'WHAT':[['.db.']]}"),
        .init("SELECT db.* FROM _ db", "{'FROM':[{'AS':'db','COLLECTION':'_'}],'WHAT':[['.db.']]}"),
        .init("SELECT `db.c`.* FROM _ AS `db.c`",
              #"{'FROM':[{'AS':'db\\.c','COLLECTION':'_'}],'WHAT':[['.db\\.c.']]}"#),
        .init("select $var", "{'WHAT':[['$var']]}"),
        .init("SELECT DISTINCT custId FROM _default AS orders where test_id = 'agg_func' ORDER BY custId",
              "{'DISTINCT':true,'FROM':[{'AS':'orders','COLLECTION':'_default'}],'ORDER_BY':[['.custId']],"
                  + "'WHAT':[['.custId']],'WHERE':['=',['.test_id'],'agg_func']}"),
        .init("select `string[0]`", #"{'WHAT':[['.string\\[0]']]}"#),
        .init("select `string[0]`.arr[2].`string[3]`.simpleID",
              #"{'WHAT':[['.string\\[0].arr[2].string\\[3].simpleID']]}"#),
    ]

    @Test(arguments: properties)
    func property(_ fact: TreeFact) throws { try check(fact) }
}
