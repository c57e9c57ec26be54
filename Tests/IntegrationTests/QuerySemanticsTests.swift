import Foundation
import SofaClient
import SofaCore
import Testing

/// LiteCore's query rules that Sofa once read differently, one representative query each, through
/// the SDK against real processes (the full tables are in SofaQLTests: QuerySemanticsRuleTests,
/// N1QLLiteCoreRuleTests, DateFormatTests, QueryOperatorFormTests, QueryAliasRuleTests,
/// QueryResultRuleTests).
@Suite(.serialized) struct QuerySemanticsTests {
    static func seed(_ db: Database) async throws {
        let docs: [(String, String)] = [
            ("a", #"{"contact":{"phone":["555-1","555-2"]},"scores":{"math":9,"art":4},"items":[{"sub":{"path":1}}],"text":"a dog runs"}"#),
            ("b", #"{"contact":{"phone":["555-3"]},"scores":{"math":3,"art":2},"items":[{"sub":{"path":7}}],"text":"a cat"}"#),
        ]
        _ = try await db.bulk(docs.map { .put(id: $0.0, rev: "", body: Array($0.1.utf8), deleted: false) })
    }

    @Test func jsonQueryRules() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("semantics")
            try await Self.seed(db)
            // A path as operands, its index a one-element array (a path ending in an index is unnamed).
            let phones = try await db.query(json: ["WHAT": [["._id"], [".", "contact", "phone", [0]]], "ORDER_BY": [["._id"]]])
            #expect(phones.columns == ["id", "$1"])
            #expect(phones.rows == [[.string("a"), .string("555-1")], [.string("b"), .string("555-3")]])
            // ["$", name] and ["$", 1].
            let byParameter = try await db.query(
                json: ["WHAT": [["._id"]], "WHERE": ["OR", ["=", [".scores.math"], ["$", 1]], ["=", [".contact.phone[0]"], ["$", "p"]]],
                       "ORDER_BY": [["._id"]]],
                parameters: ["1": 9, "p": "555-3"])
            #expect(byParameter.rows == [[.string("a")], [.string("b")]])
            // ANY over a dictionary ranges over its values.
            let anyValue = try await db.query(json: ["WHAT": [["._id"]], "WHERE": ["ANY", "s", [".scores"], [">", ["?s"], 8]]])
            #expect(anyValue.rows == [[.string("a")]])
            let everyValue = try await db.query(json: ["WHAT": [["._id"]], "WHERE": ["EVERY", "s", [".scores"], ["<", ["?s"], 5]]])
            #expect(everyValue.rows == [[.string("b")]])
            // A variable with a path after it.
            let variablePath = try await db.query(json: ["WHAT": [["._id"]], "WHERE": ["ANY", "i", [".items"], ["=", ["?i", "sub", "path"], 7]]])
            #expect(variablePath.rows == [[.string("b")]])
            // A malformed index is a clear error, and the worker keeps serving.
            do throws(SofaError) {
                _ = try await db.query(json: ["WHAT": [[".", "contact", "phone", [0, 1]]]])
                Issue.record("a two-element index ran")
            } catch {
                #expect(error.sofaCode == .invalidQuery && error.message.contains("one-element array"), "\(error)")
            }
            #expect(try await db.query(n1ql: "SELECT COUNT(*) FROM _").rows == [[.int(2)]])
        }
    }

    @Test func n1qlAndDateRules() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("semantics2")
            try await Self.seed(db)
            try await db.createIndex("byText", kind: .fullText(), expressions: [[".text"]])
            #expect(try await db.query(n1ql: "SELECT META().id FROM _ WHERE MATCH(byText, 'dog')").rows == [[.string("a")]])
            let refused: [(String, String)] = [
                ("SELECT META().id FROM _ WHERE NOT MATCH(byText, 'dog')", "MATCH can only appear at top-level, or in a top-level AND"),
                ("SELECT META().id FROM _ WHERE text NOT MATCH 'dog'", "there is no infix MATCH"),
                ("SELECT META().id FROM _ WHERE text IN (SELECT text FROM _)", "IN (SELECT …) is not supported"),
                ("SELECT unnest FROM _", "'unnest' is a reserved word"),
            ]
            for (n1ql, message) in refused {
                do throws(SofaError) {
                    _ = try await db.query(n1ql: n1ql)
                    Issue.record("\(n1ql) ran")
                } catch {
                    #expect(error.sofaCode == .invalidQuery, "\(n1ql): \(error)")
                    #expect(error.message.contains(message), "\(n1ql): \(error.message)")
                }
            }
            // Date formats by example and by token; zones written +HHMM unless a format says otherwise.
            let dates = try await db.query(n1ql: """
                SELECT MILLIS_TO_TZ(1704897074123, 690) AS tz, \
                STR_TO_TZ('2024-01-10T14:31:14Z', -300, '1111-11-11T11:11:11Z') AS example, \
                MILLIS_TO_TZ(1704897074123, -300, '11:11:11') AS time, \
                MILLIS_TO_UTC(1704897074123, '%F %T%s') AS tokens, \
                MILLIS_TO_TZ(1704897074123, 690, '%T%Ez') AS colon, \
                DATE_ADD_STR('2024-01-10T09:31:14-0500', 1, 'day') AS added \
                FROM _ WHERE META().id = 'a'
                """)
            #expect(dates.rows == [[
                .string("2024-01-11T02:01:14.123+1130"), .string("2024-01-10T09:31:14-0500"), .string("09:31:14"),
                .string("2024-01-10 14:31:14.123"), .string("02:01:14.123+11:30"), .string("2024-01-11T09:31:14-0500"),
            ]])
        }
    }

    @Test func operatorFormsAndJoinAliases() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("semantics3")
            try await Self.seed(db)
            // ["_.path", x] reads path inside x: a key, an index.
            let shortForm = try await db.query(json: [
                "WHAT": [["._id"]], "ORDER_BY": [["._id"]],
                "WHERE": ["OR", ["=", 9, ["_.math", [".scores"]]], ["=", "555-3", ["_.[0]", [".contact.phone"]]]],
            ])
            #expect(shortForm.rows == [[.string("a")], [.string("b")]])
            // EXISTS of a property, FL_LIKE() (a number matched as its text) and CONTAINS of an
            // array: each a boolean.
            let booleans = try await db.query(json: [
                "WHAT": [["._id"], ["EXISTS", [".text"]], ["EXISTS", [".nope"]], ["FL_LIKE()", [".scores.math"], "9%"],
                         ["CONTAINS()", [".contact.phone"], "555-1"], ["CONTAINS()", [".text"], "dog"]],
                "ORDER_BY": [["._id"]],
            ])
            #expect(booleans.rows == [
                [.string("a"), .bool(true), .bool(false), .bool(true), .bool(false), .bool(true)],
                [.string("b"), .bool(true), .bool(false), .bool(false), .bool(false), .bool(false)],
            ])
            // With a JOIN every property begins with an alias; the worker refuses one that does
            // not, says which, and keeps serving.
            let refused: [(JSON?, String?, String)] = [
                (nil, "SELECT META(x).id FROM _ AS x JOIN _ AS y ON x.text = y.text ORDER BY text",
                 "property 'text' does not begin with a declared 'AS' alias"),
                (["WHAT": [["._id"]], "WHERE": ["EXISTS", 17]], nil, "EXISTS takes a document property"),
            ]
            for (json, n1ql, message) in refused {
                do throws(SofaError) {
                    if let json { _ = try await db.query(json: json) } else { _ = try await db.query(n1ql: n1ql ?? "") }
                    Issue.record("\(json?.compactString ?? n1ql ?? "") ran")
                } catch {
                    #expect(error.sofaCode == .invalidQuery, "\(error)")
                    #expect(error.message.contains(message), "\(error.message)")
                }
            }
            let joined = try await db.query(n1ql: "SELECT META(x).id FROM _ AS x JOIN _ AS y ON x.text = y.text ORDER BY x.text")
            #expect(joined.rows == [[.string("b")], [.string("a")]])
        }
    }

    /// QueryTest.cc and c4QueryTest.cc facts: GROUP_BY's string shorthand, an index-ended path's
    /// unnamed title, a `$` that begins a key, paths inside a result alias, a bare WHERE with the
    /// default WHAT, UNNEST of a string, and LiteCore's words for a bad collection name.
    /// A double in a JSON query or in a parameter reaches the worker as a double: 5.0 / 15.0
    /// divides reals, 5 / 15 integers (LiteCore: QueryTest 'Query Math Precision').
    @Test func doublesStayDoubles() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("semantics6")
            _ = try await db.put(id: "only", json: "{}")
            let what: JSON = ["WHAT": [["/", 5.0, 15.0], ["/", 5, 15], ["/", ["$x"], 15], ["/", ["$n"], 15]]]
            let expected: [JSON?] = [.double(5.0 / 15.0), .int(0), .double(5.0 / 15.0), .int(0)]
            #expect(try await db.query(json: what, parameters: ["x": 5.0, "n": 5]).rows == [expected])
            let prepared = try await db.prepare(json: what)
            #expect(try await prepared.run(["x": 5.0, "n": 5]).rows == [expected])
        }
    }

    /// FROM as LiteCore reads it: N1QL must have one (a collection's query reads the collection),
    /// an alias with dots, the database's name for its default collection (until a collection
    /// takes that name), and EXISTS of a subquery.
    @Test func fromAndSubqueryRules() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("semantics7")
            try await Self.seed(db)
            do throws(SofaError) {
                _ = try await db.query(n1ql: "SELECT *")
                Issue.record("N1QL without FROM ran")
            } catch {
                #expect(error.sofaCode == .invalidQuery && error.message == "N1QL error: missing the FROM clause", "\(error)")
            }
            #expect(try await db.query(n1ql: "SELECT `foo.bar`.text FROM _ AS `foo.bar` ORDER BY META(`foo.bar`).id").rows
                    == [[.string("a dog runs")], [.string("a cat")]])
            let byName = try await db.query(n1ql: "SELECT semantics7 FROM semantics7 ORDER BY META().id")
            #expect(byName.columns == ["semantics7"])
            #expect(byName.rows.count == 2)
            let exists = try await db.query(
                json: ["WHAT": [["._id"]], "ORDER_BY": [["._id"]],
                       "WHERE": ["EXISTS", ["SELECT", ["WHAT": [["._id"]], "WHERE": ["=", [".scores.math"], ["$m"]]]]]],
                parameters: ["m": 3])
            #expect(exists.rows == [[.string("a")], [.string("b")]])
            #expect(try await db.query(n1ql: "SELECT META().id FROM _ WHERE EXISTS (SELECT 1 FROM _ WHERE scores.math = 4)").rows == [])
            // More of LiteCore's facts: the main source's default columns beside an UNNEST, one
            // MATCH per index, a search term in quotes, MISSINGIF comparing a big integer exactly.
            let unnested = try await db.query(json: ["SELECT", ["FROM": [["AS": "doc"], ["AS": "p", "UNNEST": [".doc.contact.phone"]]],
                                                                "WHERE": ["=", [".p"], "555-3"]]])
            #expect(unnested.columns == ["_id", "_sequence"] && unnested.rows.first?.first == .string("b"))
            try await db.createIndex("byText", kind: .fullText(), expressions: [[".text"]])
            #expect(try await db.query(json: ["WHAT": [["._id"]], "WHERE": ["MATCH()", "byText", "'dog'"]]).rows == [[.string("a")]])
            do throws(SofaError) {
                _ = try await db.query(n1ql: "SELECT META().id FROM _ WHERE MATCH(byText, 'dog') AND MATCH(byText, 'cat')")
                Issue.record("two MATCHes of one index ran")
            } catch {
                #expect(error.message.contains("multiple MATCHes of the same property are not allowed"), "\(error)")
            }
            #expect(try await db.query(n1ql: "SELECT MISSINGIF(9223370000000000001, 9.22337e18) FROM _ LIMIT 1").rows
                    == [[.int(9223370000000000001)]])
            let named = try await db.createCollection("semantics7")
            try await named.put(id: "n1", json: "{}")
            #expect(try await db.query(n1ql: "SELECT META().id FROM semantics7").rows == [[.string("n1")]])
        }
    }

    @Test func queryTestFacts() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("semantics4")
            let docs: [(String, String)] = [
                ("d1", #"{"identifier":1,"dict":{"key1":1},"arr":[1,2],"$type":"x","contacts":["c1","c2"]}"#),
                ("d2", #"{"identifier":2,"dict":{"key1":2},"arr":[2,1],"$type":"y","contacts":"my contacts"}"#),
                ("d3", #"{"identifier":2,"dict":{"key1":3},"arr":[3],"contacts":{"a":1}}"#),
            ]
            _ = try await db.bulk(docs.map { .put(id: $0.0, rev: "", body: Array($0.1.utf8), deleted: false) })
            let grouped = try await db.query(json: [
                "WHAT": [".identifier", ["COUNT()", ["."]]], "GROUP_BY": [".identifier"], "HAVING": ["!=", [".identifier"], 1],
            ])
            #expect(grouped.rows == [[.int(2), .int(2)]])
            let titled = try await db.query(n1ql: "SELECT arr, arr[0], `$type`, dict.key1 + 1 FROM _ WHERE META().id = 'd1'")
            #expect(titled.columns == ["arr", "$1", "$type", "$2"])
            #expect(titled.rows == [[.array([1, 2]), .int(1), .string("x"), .int(2)]])
            let aliased = try await db.query(json: [
                "WHAT": ["._id", ["AS", [".arr"], "answer"]], "WHERE": ["=", [".answer[1]"], 1], "ORDER_BY": [["DESC", [".answer[0]"]]],
            ])
            #expect(aliased.rows == [[.string("d2"), .array([2, 1])]])
            let bare = try await db.query(json: ["=", [".dict.key1"], 3])
            #expect(bare.columns == ["_id", "_sequence"])
            #expect(bare.rows.map { $0.first } == [.string("d3")])
            let unnested = try await db.query(n1ql: "SELECT META(d).id, c FROM _ AS d UNNEST d.contacts AS c ORDER BY META(d).id, c")
            #expect(unnested.rows == [[.string("d1"), .string("c1")], [.string("d1"), .string("c2")], [.string("d2"), .string("my contacts")]])
            do throws(SofaError) {
                _ = try await db.query(json: ["WHAT": [["."]], "FROM": [["COLLECTION": "in..val"]]])
                Issue.record("a bad collection name ran")
            } catch {
                #expect(error.sofaCode == .invalidQuery && error.message.contains("is not a valid collection"), "\(error)")
            }
            #expect(try await db.query(n1ql: "SELECT COUNT(*) FROM _").rows == [[.int(3)]])
            // ._deleted is a boolean as a value; meta()'s dictionary says deleted as 0.
            #expect(try await db.query(json: ["WHAT": [["COUNT()", ["."]]], "WHERE": ["=", ["._deleted"], false]]).rows == [[.int(3)]])
            let meta = try await db.query(n1ql: "SELECT meta().deleted, meta() FROM _ WHERE META().id = 'd1'")
            #expect(meta.rows.first?.first == .bool(false))
            #expect(meta.rows.first?.last??.objectValue?["deleted"] == .int(0))
            // ARRAY_AGG leaves MISSING out; a Unicode collation sorts lowercase first, accents beside.
            #expect(try await db.query(n1ql: "SELECT ARRAY_AGG(`$type`) FROM _").rows == [[.array(["x", "y"])]])
            let words = try await cluster.client.createDatabase("semantics5")
            let names = ["Apple", "Aardvark", "Ångström", "Zebra", "äpple"]
            _ = try await words.bulk(names.enumerated().map { .put(id: "w\($0.offset)", rev: "", body: Array(#"{"hey":"\#($0.element)"}"#.utf8), deleted: false) })
            let ordered = try await words.query(n1ql: "SELECT hey FROM _ ORDER BY hey COLLATE UNICODE")
            #expect(ordered.rows == ["Aardvark", "Ångström", "Apple", "äpple", "Zebra"].map { [.string($0)] })
        }
    }

    /// LiteCore's full-text index options through the SDK: the index's own stop words (none, or a
    /// list) and stemming turned off; creating it again with the same options changes nothing,
    /// with others rebuilds it.
    @Test func fullTextIndexOptions() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("semantics8")
            let docs = [("s1", "the search is on"), ("s2", "a search for things"), ("s3", "searching things")]
            _ = try await db.bulk(docs.map { .put(id: $0.0, rev: "", body: Array(#"{"text":"\#($0.1)"}"#.utf8), deleted: false) })
            func ids(_ text: String) async throws -> [JSON?] {
                try await db.query(json: ["WHAT": [["._id"]], "WHERE": ["MATCH()", "byText", .string(text)], "ORDER_BY": [["._id"]]])
                    .rows.map { $0.first ?? nil }
            }
            try await db.createIndex("byText", kind: .fullText(language: "en"), expressions: [[".text"]])
            #expect(try await ids("the search is") == ["s1", "s2", "s3"])
            try await db.createIndex("byText", kind: .fullText(language: "en", stopWords: ""), expressions: [[".text"]])
            #expect(try await ids("the search is") == ["s1"])
            try await db.createIndex("byText", kind: .fullText(language: "en", stopWords: ""), expressions: [[".text"]])
            #expect(try await ids("the search is") == ["s1"])
            try await db.createIndex("byText", kind: .fullText(language: "en", stopWords: "the, is"), expressions: [[".text"]])
            #expect(try await ids("the search is") == ["s1", "s2", "s3"])
            #expect(try await ids("a search") == ["s2"])
            try await db.createIndex("byText", kind: .fullText(language: "en", disableStemming: true), expressions: [[".text"]])
            #expect(try await ids("search") == ["s1", "s2"])
            #expect(try await ids("searching") == ["s3"])
        }
    }
}
