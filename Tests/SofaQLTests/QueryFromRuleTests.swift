import SofaCore
import Testing
@testable import SofaQL

/// FROM and subqueries as LiteCore reads them (QueryTest.cc, c4QueryTest.cc "alternative FROM
/// names", QueryParserTest.cc "QueryParser SELECT"): an alias with escaped dots is the alias
/// unescaped, the database's name is its default collection, and EXISTS takes a subquery.
struct QueryFromRuleTests {
    static func db() throws -> TestDatabase {
        let db = try TestDatabase([("a", #"{"type":"number","last":"Smith","weight":3}"#),
                                   ("b", #"{"type":"word","last":"Jones","weight":5}"#)])
        try db.put("o1", #"{"type":"other"}"#, table: "kv_.other")
        return db
    }

    /// N1QL's `` SELECT `foo.bar`.type FROM _ AS `foo.bar` `` reaches the compiler with the dots escaped.
    @Test func anAliasWithEscapedDotsIsTheAliasUnescaped() throws {
        let db = try Self.db()
        let n1ql = try N1QL.parse("SELECT `foo.bar`.type FROM _ AS `foo.bar` ORDER BY `foo.bar`.type")
        #expect(n1ql["FROM"]?.arrayValue?.first?.objectValue?["AS"] == .string(#"foo\.bar"#))
        #expect(try db.rows(n1ql.compactString) == [#"["number"]"#, #"["word"]"#])
        #expect(try db.rows(#"{"FROM":[{"AS":"foo\\.bar","COLLECTION":"_"}],"WHAT":[[".foo\\.bar.type"]],"ORDER_BY":[[".foo\\.bar.type"]]}"#)
                == [#"["number"]"#, #"["word"]"#])
        #expect(try db.rows(#"{"FROM":[{"AS":"foo.bar","COLLECTION":"_"}],"WHAT":[[".foo\\.bar.type"]],"ORDER_BY":[[".foo\\.bar.type"]]}"#)
                == [#"["number"]"#, #"["word"]"#])
    }

    /// The database's name names the default collection, and titles `.` by that name; a
    /// collection of that name, once there is one, is read instead.
    @Test func theDatabaseNameIsTheDefaultCollection() throws {
        let db = try Self.db()
        db.databaseName = "cbl.core.temp"
        let dotted = try N1QL.parse("SELECT type FROM `cbl.core.temp` ORDER BY type")
        #expect(try db.rows(dotted.compactString) == [#"["number"]"#, #"["word"]"#])
        let whole = try db.compile(try JSON.parse(#"{"WHAT":["."],"FROM":[{"COLLECTION":"cbl.core.temp"}]}"#))
        #expect(whole.columns == ["cbl.core.temp"])
        db.databaseName = "other"
        #expect(try db.rows(#"{"WHAT":[".type"],"FROM":[{"COLLECTION":"other"}]}"#) == [#"["other"]"#])
        db.databaseName = "mine"
        #expect(try db.rows(#"{"WHAT":[".type"],"FROM":[{"COLLECTION":"mine"}],"ORDER_BY":[[".type"]]}"#) == [#"["number"]"#, #"["word"]"#])
        #expect(try db.compile(try JSON.parse(#"{"WHAT":["."],"FROM":[{"COLLECTION":"mine"}]}"#)).columns == ["mine"])
        // Another name is still a collection that must exist.
        #expect(throws: SofaError.self) { try db.compile(try JSON.parse(#"{"WHAT":["."],"FROM":[{"COLLECTION":"yours"}]}"#)) }
    }

    /// `["EXISTS", ["SELECT", {…}]]`: whether the subquery finds a row; its literals and
    /// parameters bind beside the outer query's, and the collections it reads are the query's.
    @Test func existsTakesASubquery() throws {
        let db = try Self.db()
        let query = #"""
            {"WHAT":[["._id"]],"ORDER_BY":[["._id"]],
             "WHERE":["AND",["=",[".type"],["$t"]],
                      ["exists",["select",{"what":[["._id"]],"where":["=",[".last"],["$who"]],"order_by":[[".weight"]]}]]]}
            """#
        #expect(try db.rows(query, ["t": "number", "who": "Jones"]) == [#"["a"]"#])
        #expect(try db.rows(query, ["t": "number", "who": "Nobody"]) == [])
        let grouped = #"""
            {"WHAT":[["._id"],["EXISTS",["SELECT",{"WHAT":[["MAX()",[".weight"]]],"WHERE":["=",[".last"],"Smith"],
              "DISTINCT":true,"GROUP_BY":[[".last"]]}]]],"ORDER_BY":[["._id"]]}
            """#
        #expect(try db.rows(grouped) == [#"["a",true]"#, #"["b",true]"#])
        let other = #"""
            {"WHAT":[["._id"]],"ORDER_BY":[["._id"]],
             "WHERE":["EXISTS",["SELECT",{"FROM":[{"COLLECTION":"other"}],"WHERE":["=",[".type"],"other"]}]]}
            """#
        let compiled = try db.compile(try JSON.parse(other))
        #expect(Set(compiled.collections.map(\.description)) == Set([CollectionName.default.description, "_default.other"]))
        #expect(try db.rows(other) == [#"["a"]"#, #"["b"]"#])
        // N1QL's EXISTS (SELECT …) is the same tree.
        let n1ql = try N1QL.parse("SELECT META().id FROM _ WHERE EXISTS (SELECT 1 FROM _ WHERE last = 'Jones') ORDER BY META().id")
        #expect(try db.rows(n1ql.compactString) == [#"["a"]"#, #"["b"]"#])
    }
}
