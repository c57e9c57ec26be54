import Testing
import SofaCore
import SofaQL

/// SELECT clauses, FROM, JOIN, scopes and collections, as LiteCore's N1QLParserTest pins them
/// ("N1QL SELECT", "N1QL JOIN", "N1QL Scopes and Collections", "N1QL DateTime", "N1QL Vector
/// Search").
@Suite struct N1QLSelectFacts {
    static let clauses: [TreeFact] = [
        .init("SELECT foo", "{'WHAT':[['.foo']]}"),
        .init("SELECT ALL foo", "{'WHAT':[['.foo']]}"),
        .init("SELECT DISTINCT foo", "{'DISTINCT':true,'WHAT':[['.foo']]}"),
        .init("SELECT foo bar", "{'WHAT':[['AS',['.foo'],'bar']]}"),
        .init("SELECT `from` where true", "{'WHAT':[['.from']],'WHERE':true}"),
        .init("SELECT foo, bar", "{'WHAT':[['.foo'],['.bar']]}"),
        .init("SELECT foo as A, bar as B", "{'WHAT':[['AS',['.foo'],'A'],['AS',['.bar'],'B']]}"),
        .init("SELECT foo WHERE 10", "{'WHAT':[['.foo']],'WHERE':10}"),
        .init("SELECT foo WHERE foo = 'hi'", "{'WHAT':[['.foo']],'WHERE':['=',['.foo'],'hi']}"),
        .init("SELECT foo GROUP BY bar", "{'GROUP_BY':[['.bar']],'WHAT':[['.foo']]}"),
        .init("SELECT foo GROUP BY bar, baz", "{'GROUP_BY':[['.bar'],['.baz']],'WHAT':[['.foo']]}"),
        .init("SELECT foo GROUP BY bar, baz HAVING hi",
              "{'GROUP_BY':[['.bar'],['.baz']],'HAVING':['.hi'],'WHAT':[['.foo']]}"),
        .init("SELECT foo ORDER BY bar", "{'ORDER_BY':[['.bar']],'WHAT':[['.foo']]}"),
        .init("SELECT foo ORDER BY bar ASC", "{'ORDER_BY':[['ASC',['.bar']]],'WHAT':[['.foo']]}"),
        .init("SELECT foo ORDER BY bar DESC", "{'ORDER_BY':[['DESC',['.bar']]],'WHAT':[['.foo']]}"),
        .init("SELECT foo LIMIT 10", "{'LIMIT':10,'WHAT':[['.foo']]}"),
        .init("SELECT foo OFFSET 20", "{'OFFSET':20,'WHAT':[['.foo']]}"),
        .init("SELECT foo LIMIT 10 OFFSET 20", "{'LIMIT':10,'OFFSET':20,'WHAT':[['.foo']]}"),
        .init("SELECT foo OFFSET 20 LIMIT 10", "{'LIMIT':10,'OFFSET':20,'WHAT':[['.foo']]}"),
        .init("SELECT orderlines[0] WHERE test_id='order_func' ORDER BY orderlines[0].productId, "
                  + "orderlines[0].qty ASC OFFSET 8192 LIMIT 1",
              "{'LIMIT':1,'OFFSET':8192,'ORDER_BY':[['.orderlines[0].productId'],"
                  + "['ASC',['.orderlines[0].qty']]],'WHAT':[['.orderlines[0]']],'WHERE':['=',['.test_id'],'order_func']}"),
        .init("SELECT foo FROM _", "{'FROM':[{'COLLECTION':'_'}],'WHAT':[['.foo']]}"),
        .init("SELECT foo FROM _default", "{'FROM':[{'COLLECTION':'_default'}],'WHAT':[['.foo']]}"),
        .init("SELECT productId, color, categories WHERE categories[0] LIKE 'Bed%' AND test_id='where_func' "
                  + "ORDER BY productId LIMIT 3",
              "{'LIMIT':3,'ORDER_BY':[['.productId']],'WHAT':[['.productId'],['.color'],['.categories']],'WHERE':['AND',"
                  + "['LIKE',['.categories[0]'],'Bed%'],['=',['.test_id'],'where_func']]}"),
        .init(#"SELECT FLOOR(unitPrice+0.5) as sc FROM product where test_id = "numberfunc" ORDER BY sc limit 5"#,
              "{'FROM':[{'COLLECTION':'product'}],'LIMIT':5,'ORDER_BY':[['.sc']],"
                  + "'WHAT':[['AS',['FLOOR()',['+',['.unitPrice'],0.5]],'sc']],'WHERE':['=',['.test_id'],'numberfunc']}"),
        .init("SELECT META().id AS id WHERE META().id = $ID",
              "{'WHAT':[['AS',['_.',['meta()'],'.id'],'id']],'WHERE':['=',['_.',['meta()'],'.id'],['$ID']]}"),
        .init("SELECT META().id AS id WHERE id = $ID",
              "{'WHAT':[['AS',['_.',['meta()'],'.id'],'id']],'WHERE':['=',['.id'],['$ID']]}"),
        .init(#"SELECT product.categories CATG, COUNT(*) AS numprods WHERE test_id = "agg_func" "#
                  + "GROUP BY product.categories HAVING COUNT(*) BETWEEN 15 and 30 ORDER BY CATG, numprods LIMIT 3",
              "{'GROUP_BY':[['.product.categories']],'HAVING':['BETWEEN',['COUNT()',['.']],15,30],'LIMIT':3,"
                  + "'ORDER_BY':[['.CATG'],['.numprods']],"
                  + "'WHAT':[['AS',['.product.categories'],'CATG'],['AS',['COUNT()',['.']],'numprods']],"
                  + "'WHERE':['=',['.test_id'],'agg_func']}"),
        .init(#"SELECT product.categories CATG, COUNT ( * ) AS numprods WHERE test_id = "agg_func" "#
                  + "GROUP BY product.categories HAVING COUNT(*) BETWEEN POWER ( ABS(-2) , ABS(3) ) and 30 ORDER BY "
                  + "CATG, numprods LIMIT 3",
              "{'GROUP_BY':[['.product.categories']],"
                  + "'HAVING':['BETWEEN',['COUNT()',['.']],['POWER()',['ABS()',-2],['ABS()',3]],30],'LIMIT':3,"
                  + "'ORDER_BY':[['.CATG'],['.numprods']],"
                  + "'WHAT':[['AS',['.product.categories'],'CATG'],['AS',['COUNT()',['.']],'numprods']],"
                  + "'WHERE':['=',['.test_id'],'agg_func']}"),
    ]

    @Test(arguments: clauses)
    func clause(_ fact: TreeFact) throws { try check(fact) }

    static let sources: [TreeFact] = [
        .init("SELECT name FROM store.customers",
              "{'FROM':[{'COLLECTION':'customers','SCOPE':'store'}],'WHAT':[['.name']]}"),
        .init("SELECT customers.name FROM store.customers",
              "{'FROM':[{'COLLECTION':'customers','SCOPE':'store'}],'WHAT':[['.customers.name']]}"),
        .init("SELECT store.customers.name FROM store.customers",
              "{'FROM':[{'COLLECTION':'customers','SCOPE':'store'}],'WHAT':[['.store.customers.name']]}"),
        .init("SELECT store.customers.name, store2.customers.name FROM store.customers"
                  + " JOIN store2.customers ON store.customers.name = store2.customers.name",
              "{'FROM':[{'COLLECTION':'customers','SCOPE':'store'},{'COLLECTION':'customers','JOIN':'INNER',"
                  + "'ON':['=',['.store.customers.name'],['.store2.customers.name']],'SCOPE':'store2'}],"
                  + "'WHAT':[['.store.customers.name'],['.store2.customers.name']]}"),
        .init("SELECT 0 FROM db", "{'FROM':[{'COLLECTION':'db'}],'WHAT':[0]}"),
        .init("SELECT * FROM db", "{'FROM':[{'COLLECTION':'db'}],'WHAT':[['.']]}"),
        .init("SELECT file.name FROM db AS file", "{'FROM':[{'AS':'file','COLLECTION':'db'}],'WHAT':[['.file.name']]}"),
        .init("SELECT file.name FROM db file", "{'FROM':[{'AS':'file','COLLECTION':'db'}],'WHAT':[['.file.name']]}"),
        .init("SELECT db.name FROM db JOIN other ON other.key = db.key",
              "{'FROM':[{'COLLECTION':'db'},{'COLLECTION':'other','JOIN':'INNER','ON':['=',['.other.key'],['.db.key']]}],"
                  + "'WHAT':[['.db.name']]}"),
        .init("SELECT db.name FROM db JOIN x other ON other.key = db.key",
              "{'FROM':[{'COLLECTION':'db'},"
                  + "{'AS':'other','COLLECTION':'x','JOIN':'INNER','ON':['=',['.other.key'],['.db.key']]}],"
                  + "'WHAT':[['.db.name']]}"),
        .init("SELECT db.name FROM db JOIN other ON other.key = db.key CROSS JOIN x",
              "{'FROM':[{'COLLECTION':'db'},{'COLLECTION':'other','JOIN':'INNER','ON':['=',['.other.key'],['.db.key']]},"
                  + "{'COLLECTION':'x','JOIN':'CROSS'}],'WHAT':[['.db.name']]}"),
        .init("SELECT rec, dss, dem FROM db rec LEFT JOIN db dss ON rec.sessionId = meta(dss).id "
                  + "LEFT JOIN db dem ON rec.demId = meta(dem).id WHERE meta(rec).id LIKE 'rec:%'",
              "{'FROM':[{'AS':'rec','COLLECTION':'db'},"
                  + "{'AS':'dss','COLLECTION':'db','JOIN':'LEFT','ON':['=',['.rec.sessionId'],['_.',['meta()','dss'],'.id']]},"
                  + "{'AS':'dem','COLLECTION':'db','JOIN':'LEFT','ON':['=',['.rec.demId'],['_.',['meta()','dem'],'.id']]}],"
                  + "'WHAT':[['.rec'],['.dss'],['.dem']],'WHERE':['LIKE',['_.',['meta()','rec'],'.id'],'rec:%']}"),
        .init("SELECT a, b, c FROM db a JOIN other b ON (a.n = b.n) JOIN x c ON (b.m = c.m) WHERE a.type = "
                  + "b.type AND b.type = c.type",
              "{'FROM':[{'AS':'a','COLLECTION':'db'},"
                  + "{'AS':'b','COLLECTION':'other','JOIN':'INNER','ON':['=',['.a.n'],['.b.n']]},"
                  + "{'AS':'c','COLLECTION':'x','JOIN':'INNER','ON':['=',['.b.m'],['.c.m']]}],"
                  + "'WHAT':[['.a'],['.b'],['.c']],"
                  + "'WHERE':['AND',['=',['.a.type'],['.b.type']],['=',['.b.type'],['.c.type']]]}"),
        .init("SELECT x FROM coll ORDER BY y", "{'FROM':[{'COLLECTION':'coll'}],'ORDER_BY':[['.y']],'WHAT':[['.x']]}"),
        .init("SELECT x FROM scope.coll ORDER BY y",
              "{'FROM':[{'COLLECTION':'coll','SCOPE':'scope'}],'ORDER_BY':[['.y']],'WHAT':[['.x']]}"),
        .init("SELECT coll.x, scoped.y FROM coll CROSS JOIN scope.coll scoped",
              "{'FROM':[{'COLLECTION':'coll'},{'AS':'scoped','COLLECTION':'coll','JOIN':'CROSS','SCOPE':'scope'}],"
                  + "'WHAT':[['.coll.x'],['.scoped.y']]}"),
        .init("SELECT a.x, b.y FROM coll a JOIN scope.coll b ON a.name = b.name",
              "{'FROM':[{'AS':'a','COLLECTION':'coll'},"
                  + "{'AS':'b','COLLECTION':'coll','JOIN':'INNER','ON':['=',['.a.name'],['.b.name']],'SCOPE':'scope'}],"
                  + "'WHAT':[['.a.x'],['.b.y']]}"),
        .init("SELECT a.x FROM coll a JOIN scope.coll b ON a.name = b.name WHERE MATCH(a.ftsIndex, b.y)",
              "{'FROM':[{'AS':'a','COLLECTION':'coll'},{'AS':'b','COLLECTION':'coll','JOIN':'INNER',"
                  + "'ON':['=',['.a.name'],['.b.name']],'SCOPE':'scope'}],'WHAT':[['.a.x']],"
                  + "'WHERE':['MATCH()','a.ftsIndex',['.b.y']]}"),
        .init("SELECT a.x FROM coll a JOIN coll b ON a.name = b.y WHERE MATCH(ftsIndex, b.y)",
              "{'FROM':[{'AS':'a','COLLECTION':'coll'},{'AS':'b','COLLECTION':'coll','JOIN':'INNER',"
                  + "'ON':['=',['.a.name'],['.b.y']]}],'WHAT':[['.a.x']],'WHERE':['MATCH()','ftsIndex',['.b.y']]}"),
        .init("SELECT `first.collection`.x FROM coll AS `first.collection` "
                  + "JOIN scope.coll `second.collection` ON `first.collection`.name = `second.collection`.y "
                  + "WHERE MATCH(`first.collection`.ftsIndex, `second.collection`.y)",
              #"{'FROM':[{'AS':'first\\.collection','COLLECTION':'coll'},"#
                  + #"{'AS':'second\\.collection','COLLECTION':'coll','JOIN':'INNER',"#
                  + #"'ON':['=',['.first\\.collection.name'],['.second\\.collection.y']],'SCOPE':'scope'}],"#
                  + #"'WHAT':[['.first\\.collection.x']],"#
                  + #"'WHERE':['MATCH()','first\\.collection.ftsIndex',['.second\\.collection.y']]}"#),
        .init("SELECT coll.x FROM coll JOIN scope.coll ON coll.name = scope.coll.y "
                  + "WHERE MATCH(coll.ftsIndex, scope.coll.y)",
              "{'FROM':[{'COLLECTION':'coll'},{'COLLECTION':'coll','JOIN':'INNER',"
                  + "'ON':['=',['.coll.name'],['.scope.coll.y']],'SCOPE':'scope'}],"
                  + "'WHAT':[['.coll.x']],'WHERE':['MATCH()','coll.ftsIndex',['.scope.coll.y']]}"),
        .init("SELECT scope.coll.x FROM scope.coll JOIN coll ON scope.coll.name = coll.y "
                  + "WHERE MATCH(`scope.coll`.ftsIndex, coll.y)",
              "{'FROM':[{'COLLECTION':'coll','SCOPE':'scope'},{'COLLECTION':'coll','JOIN':'INNER',"
                  + "'ON':['=',['.scope.coll.name'],['.coll.y']]}],"
                  + #"'WHAT':[['.scope.coll.x']],'WHERE':['MATCH()','scope\\.coll.ftsIndex',['.coll.y']]}"#),
    ]

    @Test(arguments: sources)
    func source(_ fact: TreeFact) throws { try check(fact) }

    static let datesAndVectors: [TreeFact] = [
        .init("SELECT MILLIS_TO_UTC(1540319581000) AS RESULT", "{'WHAT':[['AS',['MILLIS_TO_UTC()',1540319581000],'RESULT']]}"),
        .init("SELECT MILLIS_TO_UTC(1540319581000,'1111-11-11') AS RESULT",
              "{'WHAT':[['AS',['MILLIS_TO_UTC()',1540319581000,'1111-11-11'],'RESULT']]}"),
        .init("SELECT MILLIS_TO_TZ(1540319581000, 500) AS RESULT",
              "{'WHAT':[['AS',['MILLIS_TO_TZ()',1540319581000,500],'RESULT']]}"),
        .init("SELECT MILLIS_TO_TZ(1540319581000, 500, '1111-11-11') AS RESULT",
              "{'WHAT':[['AS',['MILLIS_TO_TZ()',1540319581000,500,'1111-11-11'],'RESULT']]}"),
        .init("SELECT MILLIS_TO_STR(1540319581000) AS RESULT", "{'WHAT':[['AS',['MILLIS_TO_STR()',1540319581000],'RESULT']]}"),
        .init("SELECT MILLIS_TO_STR(1540319581000,'1111-11-11') AS RESULT",
              "{'WHAT':[['AS',['MILLIS_TO_STR()',1540319581000,'1111-11-11'],'RESULT']]}"),
        .init("SELECT STR_TO_MILLIS('2018-10-23T18:33:01Z') AS RESULT",
              "{'WHAT':[['AS',['STR_TO_MILLIS()','2018-10-23T18:33:01Z'],'RESULT']]}"),
        .init("SELECT STR_TO_UTC('2018-10-23T18:33:01Z') AS RESULT",
              "{'WHAT':[['AS',['STR_TO_UTC()','2018-10-23T18:33:01Z'],'RESULT']]}"),
        .init("SELECT STR_TO_UTC('2018-10-23T18:33:01Z','1111-11-11') AS RESULT",
              "{'WHAT':[['AS',['STR_TO_UTC()','2018-10-23T18:33:01Z','1111-11-11'],'RESULT']]}"),
        .init("SELECT STR_TO_TZ('2018-10-23T18:33:01Z', 500) AS RESULT",
              "{'WHAT':[['AS',['STR_TO_TZ()','2018-10-23T18:33:01Z',500],'RESULT']]}"),
        .init("SELECT STR_TO_TZ('2018-10-23T18:33:01Z', 500, '1111-11-11') AS RESULT",
              "{'WHAT':[['AS',['STR_TO_TZ()','2018-10-23T18:33:01Z',500,'1111-11-11'],'RESULT']]}"),
        .init("SELECT DATE_DIFF_STR('2018-10-23','2018-10-24','day') AS RESULT",
              "{'WHAT':[['AS',['DATE_DIFF_STR()','2018-10-23','2018-10-24','day'],'RESULT']]}"),
        .init("SELECT DATE_DIFF_MILLIS(1540319581000,1540405981000,'day') AS RESULT",
              "{'WHAT':[['AS',['DATE_DIFF_MILLIS()',1540319581000,1540405981000,'day'],'RESULT']]}"),
        .init("SELECT DATE_ADD_STR('2018-10-23T18:33:01Z',3,'day') AS RESULT",
              "{'WHAT':[['AS',['DATE_ADD_STR()','2018-10-23T18:33:01Z',3,'day'],'RESULT']]}"),
        .init("SELECT DATE_ADD_STR('2018-10-23T18:33:01Z',3,'day','1111-11-11') AS RESULT",
              "{'WHAT':[['AS',['DATE_ADD_STR()','2018-10-23T18:33:01Z',3,'day','1111-11-11'],'RESULT']]}"),
        .init("SELECT DATE_ADD_MILLIS(1540319581000,3,'day') AS RESULT",
              "{'WHAT':[['AS',['DATE_ADD_MILLIS()',1540319581000,3,'day'],'RESULT']]}"),
        .init("SELECT VECTOR_DISTANCE(a.vecIndex, $target) AS distance "
                  + "FROM _default AS a JOIN other ON META(a).id = other.refID ORDER BY distance LIMIT 100",
              "{'FROM':[{'AS':'a','COLLECTION':'_default'},"
                  + "{'COLLECTION':'other','JOIN':'INNER','ON':['=',['_.',['meta()','a'],'.id'],['.other.refID']]}],"
                  + "'LIMIT':100,'ORDER_BY':[['.distance']],"
                  + "'WHAT':[['AS',['VECTOR_DISTANCE()','a.vecIndex',['$target']],'distance']]}"),
        .init("SELECT META().id, VECTOR_DISTANCE(vecIndex, $target) AS distance ORDER BY distance LIMIT 5",
              "{'LIMIT':5,'ORDER_BY':[['.distance']],'WHAT':[['_.',['meta()'],'.id'],"
                  + "['AS',['VECTOR_DISTANCE()','vecIndex',['$target']],'distance']]}"),
        .init("SELECT META().id, VECTOR_DISTANCE(C.vecIndex, $target) AS distance FROM scope.coll C "
                  + "ORDER BY distance LIMIT 99",
              "{'FROM':[{'AS':'C','COLLECTION':'coll','SCOPE':'scope'}],'LIMIT':99,"
                  + "'ORDER_BY':[['.distance']],'WHAT':[['_.',['meta()'],'.id'],"
                  + "['AS',['VECTOR_DISTANCE()','C.vecIndex',['$target']],'distance']]}"),
    ]

    @Test(arguments: datesAndVectors)
    func dateOrVector(_ fact: TreeFact) throws { try check(fact) }
}
