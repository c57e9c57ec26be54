import SofaCore
import Testing
@testable import SofaQL

/// Facts of LiteCore's query tests that Sofa once answered otherwise: the default columns of a
/// FROM with several items (QueryTest "Query UNNEST"), a scoped collection named without AS
/// (c4QueryTest "C4Query collections"), one MATCH per index and a search term in quotes
/// (c4QueryTest "FTS Multiple queries", "FTS with accents"), MISSINGIF/NULLIF of a large integer
/// and a double (SQLiteFunctionsTest), and LiteCore's words for a bad meta() key or alias.
struct QueryLiteCoreFactTests {
    @Test func defaultColumnsOfSeveralSourcesAreTheMainOnes() throws {
        let db = try TestDatabase([("rec-1", #"{"numbers":["one","eight-eight"]}"#), ("rec-2", #"{"numbers":["two"]}"#),
                                   ("rec-3", #"{"numbers":["eight-eight"]}"#)])
        let query = #"["SELECT",{"FROM":[{"AS":"doc"},{"AS":"num","UNNEST":[".doc.numbers"]}],"WHERE":["=",[".num"],"eight-eight"]}]"#
        let compiled = try db.compile(try JSON.parse(query))
        #expect(compiled.columns == ["_id", "_sequence"])
        #expect(try db.rows(query).map { $0.prefix(9) } == [#"["rec-1","#, #"["rec-3","#])
    }

    @Test func aScopedCollectionWithoutAliasIsReadByItsName() throws {
        let db = try TestDatabase()
        let nested = try CollectionName(scope: "small", name: "nested")
        let plain = try CollectionName(parsing: "nested")
        for collection in [nested, plain] {
            try db.write("""
                CREATE TABLE "\(collection.tableName)" (key TEXT PRIMARY KEY, sequence INTEGER, flags INTEGER DEFAULT 0, version BLOB,
                body BLOB, extra BLOB, expiration INTEGER)
                """)
        }
        try db.put("s1", #"{"shapes":[{"color":"red"}]}"#, table: nested.tableName)
        try db.put("s2", #"{"shapes":[{"color":"blue"}]}"#, table: nested.tableName)
        try db.put("p1", #"{"shapes":[{"color":"red"}]}"#, table: plain.tableName)
        let where_ = #""WHERE":["=",[".nested.shapes[0].color"],"red"]"#
        #expect(try db.rows(#"{"WHAT":[["._id"]],"FROM":[{"COLLECTION":"small.nested"}],\#(where_)}"#) == [#"["s1"]"#])
        #expect(try db.rows(#"{"WHAT":[["._id"]],"FROM":[{"COLLECTION":"nested","SCOPE":"small"}],\#(where_)}"#) == [#"["s1"]"#])
        #expect(try db.compile(try JSON.parse(#"{"WHAT":["."],"FROM":[{"COLLECTION":"nested","SCOPE":"small"}]}"#)).columns == ["nested"])
        let joined = try db.compile(try JSON.parse(
            #"{"WHAT":["."],"FROM":[{"COLLECTION":"nested","SCOPE":"small"},{"COLLECTION":"nested","JOIN":"INNER","ON":["=",1,1]}]}"#))
        #expect(joined.columns == ["small.nested"])
        // With both, `nested` is the collection of that name; the scoped one is `small.nested`.
        let both = try N1QL.parse("SELECT META(`small.nested`).id, META(nested).id FROM small.nested JOIN nested ON 1 = 1 ORDER BY 1")
        #expect(try db.rows(both.compactString) == [#"["s1","p1"]"#, #"["s2","p1"]"#])
        #expect(try db.rows(#"{"WHAT":[[".nested.shapes[0].color"]],"FROM":[{"COLLECTION":"small.nested"}],"ORDER_BY":[["._id"]]}"#)
                == [#"["red"]"#, #"["blue"]"#])
        // N1QL writes a property of a scoped collection with both names.
        let scoped = try N1QL.parse("SELECT small.nested.shapes[0].color FROM small.nested JOIN nested ON 1 = 1 ORDER BY 1 DESC")
        #expect(try db.rows(scoped.compactString) == [#"["red"]"#, #"["blue"]"#])
    }

    @Test func oneMatchPerIndexAndQuotedTerms() throws {
        let db = try TestDatabase([("1", #"{"content":"Hâkimler"}"#), ("2", #"{"content":"Hakimler"}"#), ("3", #"{"content":"foo"}"#),
                                   ("4", #"{"content":"don't stop"}"#)])
        try db.createIndex(IndexSpec(name: "nameFTSIndex", kind: .fullText, collection: .default, expressions: [[".content"]]))
        do {
            _ = try db.compile(try JSON.parse(#"{"WHERE":["AND",["MATCH()","nameFTSIndex","foo"],["MATCH()","nameFTSIndex","bar"]]}"#))
            Issue.record("two MATCHes of one index compiled")
        } catch let error as SofaError {
            #expect(error.sofaCode == .invalidQuery && error.message == "Sorry, multiple MATCHes of the same property are not allowed")
        }
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","nameFTSIndex","'hâkimler'"]}"#) == [#"["1"]"#])
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","nameFTSIndex","don't"]}"#) == [#"["4"]"#])
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","nameFTSIndex","NEAR(don't stop, 5)"]}"#) == [#"["4"]"#])
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","nameFTSIndex","(hakimler OR foo*) NOT stop"]}"#) == [#"["2"]"#, #"["3"]"#])
        // Only a word FTS5 would refuse is quoted; FTS5's own syntax stays as it is.
        let rewritten: [(String, String)] = [
            ("(it's OR c0:e.g*) AND \"a-b\"", "(\"it's\" OR c0:\"e.g\"*) AND \"a-b\""),
            ("c0:(it's OR c)", "c0:(\"it's\" OR c)"),
            ("NEAR(don't stop, 5)", "NEAR(\"don't\" stop, 5)"),
            ("NEAR(a b, 5)", "NEAR(a b, 5)"), ("{c0 c1}: dog", "{c0 c1}: dog"), ("-c0: term", "-c0: term"),
            ("- c0 : term", "- c0 : term"), ("a NOT b*", "a NOT b*"),
        ]
        for (query, expected) in rewritten { #expect(FullText.quotingPunctuation(query) == expected, "\(query)") }
    }

    @Test func missingIfAndNullIfCompareALargeIntegerExactly() throws {
        let db = try TestDatabase([("only", "{}")])
        #expect(try db.rows(#"{"WHAT":[["MISSINGIF()",9223370000000000001,9.22337e18],["NULLIF()",9223370000000000001,9.22337e18],["MISSINGIF()",3,3.0],["NULLIF()",3,3.0]]}"#)
                == ["[9223370000000000001,9223370000000000001,?,null]"])
    }

    @Test func metaErrorsInLiteCoresWords() throws {
        let db = try TestDatabase([("only", "{}")])
        for (n1ql, message) in [("SELECT meta().bogus FROM _", "'bogus' is not a valid Meta key"),
                                ("SELECT meta(id).id AS id FROM _", "database alias 'id' does not match a declared 'AS' alias")] {
            do {
                _ = try db.compile(try N1QL.parse(n1ql))
                Issue.record("\(n1ql) compiled")
            } catch let error as SofaError {
                #expect(error.sofaCode == .invalidQuery && error.message.hasPrefix(message), "\(error.message)")
            }
        }
    }
}
