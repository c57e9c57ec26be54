import Testing
import SofaCore
@testable import SofaQL

/// LiteCore's rule for properties when FROM names more than one source (a JOIN or an UNNEST):
/// every property begins with the alias of the source it reads, or the query is refused with
/// "property '…' does not begin with a declared 'AS' alias" (an `.invalidQuery`). With one
/// source a property may leave the alias out. A full-text index name in MATCH()/RANK() may stand
/// bare while every FROM collection is the same one.
@Suite struct QueryAliasRuleTests {
    static func db() throws -> TestDatabase {
        let db = try TestDatabase([
            ("o1", #"{"custId":"c1","test_id":"t","names":["x"],"text":"a dog","likes":["tea"]}"#),
            ("o2", #"{"custId":"c2","test_id":"t","names":["y"],"text":"a cat","likes":[]}"#),
        ])
        try db.put("x1", #"{"custId":"c9","test_id":"t","y":"a dog"}"#, table: "kv_.other")
        return db
    }

    static let join = #"[{"AS":"orders","COLLECTION":"_default"},{"AS":"other","COLLECTION":"_default","JOIN":"INNER","ON":["=",[".orders.test_id"],[".other.test_id"]]}]"#

    /// JSON queries whose properties leave out the alias, each refused naming the property.
    @Test(arguments: [
        (#"{"WHAT":[[".custId"],[".other.custId"]],"FROM":\#(join),"ORDER_BY":[[".custId"]]}"#, "custId"),
        (#"{"WHAT":[[".orders.custId"]],"FROM":\#(join),"WHERE":["=",[".test_id"],"t"]}"#, "test_id"),
        (#"{"WHAT":[[".orders.custId"]],"FROM":\#(join),"ORDER_BY":[["DESC",[".custId"]]]}"#, "custId"),
        (#"{"WHAT":[[".orders.custId"]],"FROM":\#(join),"GROUP_BY":[[".names[0]"]]}"#, "names[0]"),
        (#"{"WHAT":[[".orders.custId"]],"FROM":\#(join),"WHERE":["ANY","n",[".names"],["=",["?n"],"x"]]}"#, "names"),
        (#"{"WHAT":[["._id"]],"FROM":\#(join)}"#, "_id"),
        (#"{"WHAT":[[".a.custId"]],"FROM":[{"AS":"a"},{"AS":"b","ON":["=",[".test_id"],[".b.test_id"]]}]}"#, "test_id"),
        (#"{"WHAT":[[".custId"]],"FROM":[{"AS":"a"},{"AS":"b","COLLECTION":"other","JOIN":"CROSS"}]}"#, "custId"),
        (#"{"WHAT":[["._id"],[".l"]],"FROM":[{"AS":"d"},{"UNNEST":[".d.likes"],"AS":"l"}]}"#, "_id"),
        (#"{"WHAT":[[".l"]],"FROM":[{"AS":"d"},{"UNNEST":[".likes"],"AS":"l"}]}"#, "likes"),
        (#"{"WHAT":[[".l"]],"FROM":[{"AS":"d"},{"UNNEST":[".d.likes"],"AS":"l"}],"WHERE":["EXISTS",[".custId"]]}"#, "custId"),
    ])
    func unqualifiedPropertiesAreRefused(query: String, property: String) throws {
        #expect(throws: SofaError(.invalidQuery, "property '\(property)' does not begin with a declared 'AS' alias"), "\(query)") {
            _ = try Self.db().compile(try JSON.parse(query))
        }
    }

    /// LiteCore's own cases, in N1QL (N1QLParserTest "N1QL properties", "N1QL Scopes and Collections").
    @Test(arguments: [
        ("SELECT custId, other.custId FROM _default AS orders JOIN _default as other "
            + "ON orders.test_id = other.test_id ORDER BY custId", "custId"),
        ("SELECT a.x FROM _ a JOIN other b ON a.name = b.y WHERE MATCH(ftsIndex, b.y)", "ftsIndex"),
        ("SELECT a.x FROM _ a JOIN other b ON a.name = b.y WHERE MATCH(c.ftsIndex, b.y)", "c.ftsIndex"),
        ("SELECT META(d).id FROM _ AS d UNNEST d.likes AS l WHERE custId = 'c1'", "custId"),
    ])
    func liteCoresCasesAreRefused(n1ql: String, property: String) throws {
        #expect(throws: SofaError(.invalidQuery, "property '\(property)' does not begin with a declared 'AS' alias"), "\(n1ql)") {
            _ = try Self.db().compile(try N1QL.parse(n1ql))
        }
    }

    /// What stays allowed: one source without aliases, aliased properties, WHAT aliases,
    /// `META()` and `*` (the first source's), parameters and variables, and a bare index name
    /// when every collection joined is the same one.
    @Test func qualifiedQueriesRun() throws {
        let db = try Self.db()
        try db.createIndex(IndexSpec(name: "byText", kind: .fullText, collection: .default, expressions: [[".text"]]))
        func rows(_ n1ql: String) throws -> [String] {
            let compiled = try db.compile(try N1QL.parse(n1ql))
            var out: [String] = []
            try db.read { (connection) throws(SofaError) in
                try connection.run(compiled, parameters: ["p": "x"]) { row in
                    out.append("[" + row.map { $0?.compactString ?? "?" }.joined(separator: ",") + "]")
                }
            }
            return out
        }
        #expect(try rows("SELECT DISTINCT custId FROM _default AS orders WHERE test_id = 't' ORDER BY custId")
                    == [#"["c1"]"#, #"["c2"]"#])
        #expect(try rows("SELECT orders.custId AS c, other.custId FROM _default AS orders JOIN _default AS other "
                         + "ON orders.test_id = other.test_id AND META(orders).id < META(other).id ORDER BY c")
                    == [#"["c1","c2"]"#])
        #expect(try rows("SELECT META().id, other.custId FROM _ AS a JOIN other ON a.test_id = other.test_id ORDER BY META().id")
                    == [#"["o1","c9"]"#, #"["o2","c9"]"#])
        let star = try rows("SELECT * FROM _ AS a JOIN other ON a.test_id = other.test_id WHERE META(a).id = 'o2'")
        #expect(star.count == 1 && star[0].contains(#""custId":"c2""#), "\(star)")
        #expect(try rows("SELECT META(a).id FROM _ AS a JOIN _ AS b ON META(a).id = META(b).id "
                         + "WHERE ANY n IN b.names SATISFIES n = $p END")
                    == [#"["o1"]"#])
        #expect(try rows("SELECT META(a).id FROM _ a JOIN _ b ON META(a).id = META(b).id WHERE MATCH(byText, 'dog')")
                    == [#"["o1"]"#])
        #expect(try rows("SELECT META(a).id FROM _ a JOIN other b ON a.text = b.y WHERE MATCH(a.byText, 'dog')")
                    == [#"["o1"]"#])
        #expect(try rows("SELECT l, COUNT(*) AS n FROM _ AS d UNNEST d.likes AS l GROUP BY l ORDER BY n DESC, l")
                    == [#"["tea",1]"#])
    }
}
