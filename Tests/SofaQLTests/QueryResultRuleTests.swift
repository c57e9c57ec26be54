import Testing
import SofaCore
@testable import SofaQL

/// Facts from LiteCore's QueryTest.cc that Sofa once answered otherwise, each rule a table of
/// queries run against a real database file: GROUP_BY's string shorthand ("Query HAVING"), the
/// title of a path ending in an index ("Various Exceptional Conditions"), a `$` that begins a
/// key ("Query Special Chars", "Query weird property names"), paths inside a result alias
/// ("Test result alias"), and a bare expression as the whole query with the default WHAT
/// ("Query SELECT", "Query object properties", "C4Query parser error messages"), and UNNEST of a
/// value that is not an array ("C4Query Nested UNNEST - Missing Array").
@Suite struct QueryResultRuleTests {
    /// "Query HAVING": twenty documents, identifier 1 for index 0–4, 2 for 5–14, 3 for 15–19.
    static func grouped() throws -> TestDatabase {
        try TestDatabase((0..<20).map { i in
            ("doc" + (i < 10 ? "0\(i)" : "\(i)"), #"{"identifier":\#(i >= 15 ? 3 : i >= 5 ? 2 : 1),"index":\#(i)}"#)
        })
    }

    /// A string in GROUP_BY is a property path, as in WHAT (with or without its leading dot).
    @Test(arguments: [
        (#"{"WHAT":[".identifier",["COUNT()",[".index"]]],"GROUP_BY":[".identifier"],"HAVING":["=",[".identifier"],1]}"#,
         ["[1,5]"]),
        (#"{"WHAT":[".identifier",["COUNT()",[".index"]]],"GROUP_BY":[".identifier"],"HAVING":["!=",[".identifier"],1]}"#,
         ["[2,10]", "[3,5]"]),
        (#"{"WHAT":["identifier",["COUNT()",[".index"]]],"GROUP_BY":["identifier"],"ORDER_BY":[[".identifier"]]}"#,
         ["[1,5]", "[2,10]", "[3,5]"]),
        (#"{"WHAT":[["AS","identifier","s"]],"WHERE":["=",[".index"],0]}"#, [#"["identifier"]"#]),
    ])
    func groupByShorthand(query: String, expected: [String]) throws {
        #expect(try Self.grouped().rows(query) == expected, "\(query)")
    }

    /// A column whose path ends in an array index has no name of its own: it is numbered with
    /// the other unnamed columns (LiteCore titles `orderlines[0]` after ten unnamed columns `$11`).
    @Test(arguments: [
        ("SELECT 8/10, unitPrice/10, orderlines, orderlines[0], orderlines[1] AS o FROM _",
         ["$1", "$2", "orderlines", "$3", "o"]),
        ("SELECT orderlines[0], orderlines[-1].x, orderlines[0].x FROM _", ["$1", "x", "x #2"]),
    ])
    func indexTitles(n1ql: String, expected: [String]) throws {
        let db = try TestDatabase([("doc1", #"{"unitPrice":8,"orderlines":[1,2]}"#)])
        #expect(try db.compile(try N1QL.parse(n1ql)).columns == expected, "\(n1ql)")
        #expect(try db.titles(#"{"WHAT":[[".orderlines[0]"],[".","orderlines",[1]],[".orderlines"]]}"#) == ["$1", "$2", "orderlines"])
    }

    static let special: [(String, String)] = [
        ("doc", #"{"$Type":"special","Ty$pe":"special","Type$":"special","$foo":17,"$":{"a":1},"a":2,"oids":[{"$oid":"avoid"}]}"#),
    ]

    /// A `$` at the start of a property path is part of the key, never a root marker.
    @Test(arguments: [
        (#"{"WHAT":[[".$Type"],[".Ty$pe"],[".Type$"]]}"#, [#"["special","special","special"]"#]),
        (#"{"WHAT":[".$Type",".Ty$pe",".Type$"]}"#, [#"["special","special","special"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["=",[".$foo"],17]}"#, [#"["doc"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["=",[".","$foo"],17]}"#, [#"["doc"]"#]),
        (#"{"WHAT":[[".$.a"],[".\\$.a"]]}"#, ["[1,1]"]),
        (#"{"WHAT":[["._id"]],"WHERE":["ANY","o",[".oids"],["=",["?o.$oid"],"avoid"]]}"#, [#"["doc"]"#]),
    ])
    func dollarKeys(query: String, expected: [String]) throws {
        #expect(try TestDatabase(Self.special).rows(query) == expected, "\(query)")
    }

    @Test func dollarKeyTitlesAndN1QL() throws {
        let db = try TestDatabase(Self.special)
        #expect(try db.titles(#"{"WHAT":[[".$Type"],".$foo"]}"#) == ["$Type", "$foo"])
        let compiled = try db.compile(try N1QL.parse("SELECT `$Type`, `Ty$pe` FROM _"))
        #expect(compiled.columns == ["$Type", "Ty$pe"])
        var rows: [String] = []
        try db.read { (connection) throws(SofaError) in
            try connection.run(compiled, parameters: [:]) { row in rows.append(row.map { $0?.compactString ?? "?" }.joined(separator: ",")) }
        }
        #expect(rows == [#""special","special""#])
    }

    static let uber: [(String, String)] = [
        ("uber_doc1", #"{"dict":{"key1":1,"key2":2},"arr":[1,2]}"#),
        ("uber_doc2", #"{"dict":{"key1":2,"key2":1},"arr":[2,1]}"#),
    ]

    /// A property beginning with a result alias reads inside that result: a key, an index, an
    /// alias whose name needs escaping. A FROM alias of the same name comes first.
    @Test(arguments: [
        (#"{"WHAT":["._id",["AS",[".dict.key2"],"answer"]],"WHERE":["=",[".answer"],1]}"#, [#"["uber_doc2",1]"#]),
        (#"{"WHAT":["._id",["AS",[".dict.key2"],"dict"]],"WHERE":["=",[".dict"],1]}"#, [#"["uber_doc2",1]"#]),
        (#"{"WHAT":["._id",["AS",[".dict.key2"],"dict"]],"FROM":[{"AS":"db","COLLECTION":"_"}],"WHERE":["=",[".db.dict"],1]}"#, []),
        (#"{"WHAT":["._id",["AS",[".dict"],"name.with [special]"]],"WHERE":["=",[".name\\.with \\[special\\].key1"],1]}"#,
         [#"["uber_doc1",{"key1":1,"key2":2}]"#]),
        (#"{"WHAT":["._id",["AS",[".dict"],"answer"]],"WHERE":["=",[".answer.key1"],1]}"#, [#"["uber_doc1",{"key1":1,"key2":2}]"#]),
        (#"{"WHAT":["._id",["AS",[".arr"],"answer"]],"WHERE":["=",[".answer[1]"],1]}"#, [#"["uber_doc2",[2,1]]"#]),
        (#"{"WHAT":["._id",["AS",[".dict"],"answer"]],"WHERE":["=",[".","answer","key2"],1]}"#, [#"["uber_doc2",{"key1":2,"key2":1}]"#]),
        (#"{"WHAT":["._id",["AS",[".dict.key2"],"answer"]],"ORDER_BY":[[".answer"]]}"#,
         [#"["uber_doc2",1]"#, #"["uber_doc1",2]"#]),
        (#"{"WHAT":["._id",["AS",[".dict"],"name.with [special]"]],"ORDER_BY":[["DESC",[".name\\.with \\[special\\].key1"]]]}"#,
         [#"["uber_doc2",{"key1":2,"key2":1}]"#, #"["uber_doc1",{"key1":1,"key2":2}]"#]),
        (#"{"WHAT":["._id",["AS",[".arr"],"answer"]],"ORDER_BY":[[".answer[1]"]]}"#, [#"["uber_doc2",[2,1]]"#, #"["uber_doc1",[1,2]]"#]),
    ])
    func resultAliasPaths(query: String, expected: [String]) throws {
        #expect(try TestDatabase(Self.uber).rows(query) == expected, "\(query)")
    }

    /// A query that is not a dictionary (nor `["SELECT", {…}]`) is a WHERE clause; without WHAT a
    /// query returns each document's ID and sequence, titled `_id` and `_sequence`.
    @Test(arguments: [
        (#"["AND",[">=",[".index"],3],["<=",[".index"],4]]"#, [#"["doc03",4]"#, #"["doc04",5]"#]),
        (#"{"WHERE":["=",[".index"],7]}"#, [#"["doc07",8]"#]),
        (#"["SELECT",{"WHERE":["=",[".index"],7]}]"#, [#"["doc07",8]"#]),
        (#"["select",{"WHAT":[[".index"]],"WHERE":["=",[".identifier"],3],"LIMIT":1}]"#, ["[15]"]),
        (#"["=","FTW",["_.subvalue",[".value"]]]"#, []),
    ])
    func bareWhereAndDefaultWhat(query: String, expected: [String]) throws {
        let db = try Self.grouped()
        #expect(try db.rows(query) == expected, "\(query)")
        if !query.contains("WHAT") { #expect(try db.titles(query) == ["_id", "_sequence"]) }
    }

    /// An operator with the wrong number of operands says so in LiteCore's words, and how many.
    @Test func wrongOperandCount() throws {
        do {
            _ = try Self.grouped().compile(try JSON.parse(#"["="]"#))
            Issue.record("[\"=\"] compiled")
        } catch let error as SofaError {
            #expect(error.sofaCode == .invalidQuery && error.message.contains("Wrong number of arguments to ="), "\(error)")
            #expect(error.message.contains("'=' takes 2 operands, got 0"), "\(error)")
        }
    }

    /// UNNEST ranges over an array's items, and over a string, number, boolean or null as one
    /// item; a missing property or a dictionary gives no rows. The same with an array index.
    @Test(arguments: [false, true])
    func unnestOfNonArray(indexed: Bool) throws {
        let db = try TestDatabase([
            ("1", #"{"name":"Jonh Doe","contacts":["Contact1","Contact2"]}"#), ("2", #"{"name":"Scott Tiger","contacts":[]}"#),
            ("3", #"{"name":"Foo Bar"}"#), ("4", #"{"name":"Harry Potter","contacts":"my contacts"}"#),
            ("5", #"{"name":"Num","contacts":7}"#), ("6", #"{"name":"Null","contacts":null}"#), ("7", #"{"name":"Obj","contacts":{"a":1}}"#),
        ])
        if indexed { try db.createIndex(IndexSpec(name: "contacts", kind: .array, collection: .default, arrayPath: "contacts")) }
        let query = try N1QL.parse("SELECT doc.name, contact FROM _default AS doc UNNEST doc.contacts AS contact ORDER BY META(doc).id")
        #expect(try db.rows(query.compactString) == [
            #"["Jonh Doe","Contact1"]"#, #"["Jonh Doe","Contact2"]"#, #"["Harry Potter","my contacts"]"#, #"["Num",7]"#, #"["Null",null]"#,
        ])
    }

    /// A FROM collection name that cannot be one is refused in LiteCore's words ("Invalid
    /// collection names"), with the reason.
    @Test(arguments: ["%", "%xx", "_xx", "x y", ".", "xx.", ".xx", "_b.c", "b._c", "in.val.id", "in..val", "foo._default",
                      String(repeating: "x", count: 252), "a." + String(repeating: "x", count: 252)])
    func invalidCollectionNames(name: String) throws {
        do {
            _ = try Self.grouped().compile(.object(["WHAT": [["."]], "FROM": [["COLLECTION": .string(name)]]]))
            Issue.record("\(name) compiled")
        } catch let error as SofaError {
            #expect(error.sofaCode == .invalidQuery && error.message.contains("is not a valid collection"), "\(error)")
        }
    }

    /// `._deleted` is a boolean wherever it stands ("Query deleted docs": `["=", ["._deleted"],
    /// true]` finds the deleted documents); `meta()`'s dictionary says `deleted` as 0 or 1
    /// ("Query META": `{"deleted":0,"id":"doc1","sequence":1}`).
    @Test(arguments: [
        (#"{"WHAT":["._id"],"WHERE":["<=",[".num"],15]}"#, 10),
        (#"{"WHAT":["._id"],"WHERE":["AND",["<=",[".num"],15],["._deleted"]]}"#, 5),
        (#"{"WHAT":["._id"],"WHERE":["OR",["<=",[".num"],5],["._deleted"]]}"#, 15),
        (#"{"WHAT":["._id"],"WHERE":["=",["._deleted"],true]}"#, 10),
        (#"{"WHAT":["._id"],"WHERE":["._deleted"]}"#, 10),
        (#"{"WHAT":["._id"],"WHERE":[".","_deleted"]}"#, 10),
        (#"{"WHAT":["._id"],"WHERE":["_.",["meta()"],"deleted"]}"#, 10),
        (#"{"WHAT":["._id"],"WHERE":["=",[".d._deleted"],true],"FROM":[{"AS":"d"}]}"#, 10),
    ])
    func deletedIsBoolean(query: String, count: Int) throws {
        let live = (1...10).map { ("rec-\($0 < 10 ? "00" : "0")\($0)", #"{"num":\#($0)}"#) }
        let dead = (11...20).map { ("rec-0\($0)", #"{"num":\#($0)}"#) }
        #expect(try TestDatabase(live, deleted: dead).rows(query).count == count, "\(query)")
    }

    @Test func metaDictionary() throws {
        let db = try TestDatabase([("doc1", #"{"value":null,"real_value":1}"#), ("doc2", #"{"value":null,"atai":1}"#)])
        #expect(try db.rows(#"{"WHAT":[["meta()"],["._deleted"]],"ORDER_BY":[["._id"]]}"#) == [
            #"[{"id":"doc1","sequence":1,"deleted":0},false]"#, #"[{"id":"doc2","sequence":2,"deleted":0},false]"#,
        ])
    }
}
