import Testing
import SofaCore
@testable import SofaQL

/// Operator forms of the JSON query schema that LiteCore's tests use and Sofa once refused or read
/// differently: `["_.path", x]`, EXISTS of a property, `FL_LIKE()`, and CONTAINS of non-strings.
/// Each a table of queries run against a real database file.
@Suite struct QueryOperatorFormTests {
    static let docs: [(String, String)] = [
        ("doc1", #"{"value":{"subvalue":"FTW"},"numbers":["one","two"],"address":{"zip":"94040","lines":["1 Main St","Apt 2"]}}"#),
        ("doc2", #"{"value":"FTW","numbers":["five","six"],"address":{"zip":null}}"#),
        ("doc3", #"{"value":{"subvalue":"nope","a":{"b":[{"x":1},{"x":2}]}},"numbers":[],"num":1,"col":[1,2,3,4]}"#),
    ]

    static func db() throws -> TestDatabase { try TestDatabase(docs) }

    /// `["_.path", x]` is `["_.", x, "path"]`: the path after `_.` (keys, `[n]` indexes, both
    /// nested) read inside the value of x.
    @Test(arguments: [
        (#"["=","FTW",["_.subvalue",[".value"]]]"#, [#"["doc1"]"#]),
        (#"["=","FTW",["_.",[".value"],"subvalue"]]"#, [#"["doc1"]"#]),
        (#"["=","five",["_.[0]",[".numbers"]]]"#, [#"["doc2"]"#]),
        (#"["=","five",["_.",[".numbers"],"[0]"]]"#, [#"["doc2"]"#]),
        (#"["=","94040",["_.zip",[".address"]]]"#, [#"["doc1"]"#]),
        (#"["=","Apt 2",["_.lines[1]",[".address"]]]"#, [#"["doc1"]"#]),
        (#"["=",2,["_.a.b[1].x",[".value"]]]"#, [#"["doc3"]"#]),
        (#"["=",1,["_.[0].x",[".value.a.b"]]]"#, [#"["doc3"]"#]),
        (#"["=","six",["_.[-1]",[".numbers"]]]"#, [#"["doc2"]"#]),
        (#"["IS",["_.zip",[".address"]],null]"#, [#"["doc2"]"#]),
        (#"["=","doc3",["_.id",["META()"]]]"#, [#"["doc3"]"#]),
        (#"["=","FTW",["_.subvalue",{"subvalue":[".value"]}]]"#, [#"["doc2"]"#]),
    ])
    func objectPropertyShortForm(whereClause: String, expected: [String]) throws {
        let query = #"{"WHAT":[["._id"]],"WHERE":\#(whereClause),"ORDER_BY":[["._id"]]}"#
        #expect(try Self.db().rows(query) == expected, "\(whereClause)")
    }

    /// The short form is a value like any other, and its column is unnamed (as LiteCore's is).
    @Test func objectPropertyShortFormAsAColumn() throws {
        let db = try Self.db()
        let query = #"{"WHAT":[["_.zip",[".address"]],["_.[1]",[".numbers"]]],"ORDER_BY":[["._id"]]}"#
        #expect(try db.rows(query) == [#"["94040","two"]"#, #"[null,"six"]"#, #"[?,?]"#])
        #expect(try db.titles(query) == ["$1", "$2"])
    }

    /// EXISTS of a property: whether it is there (null is there), a boolean, never MISSING.
    @Test(arguments: [
        (#"{"WHAT":[["._id"]],"WHERE":["EXISTS",["._id"]],"ORDER_BY":[["._id"]]}"#,
         [#"["doc1"]"#, #"["doc2"]"#, #"["doc3"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["EXISTS",[".","num"]]}"#, [#"["doc3"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["EXISTS",[".num"]]}"#, [#"["doc3"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["EXISTS",[".address.zip"]],"ORDER_BY":[["._id"]]}"#, [#"["doc1"]"#, #"["doc2"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["EXISTS",[".","address","lines",[1]]]}"#, [#"["doc1"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["NOT",["EXISTS",[".address"]]]}"#, [#"["doc3"]"#]),
        (#"{"WHAT":[["._id"],["EXISTS",[".num"]]],"ORDER_BY":[["._id"]]}"#,
         [#"["doc1",false]"#, #"["doc2",false]"#, #"["doc3",true]"#]),
        (#"{"WHAT":[["exists",[".value.subvalue"]]],"ORDER_BY":[["._id"]]}"#, ["[true]", "[false]", "[true]"]),
    ])
    func existsOfAProperty(query: String, expected: [String]) throws {
        #expect(try Self.db().rows(query) == expected, "\(query)")
    }

    /// Property names LiteCore's path syntax would read specially, given as operands.
    @Test func existsOfWeirdPropertyNames() throws {
        let db = try TestDatabase([("doc1", #"{"$foo":17,"?foo":18,"[foo":19,".foo":20,"f$o?o[o.":21}"#), ("doc2", "{}")])
        for name in ["$foo", "?foo", "[foo", ".foo", "f$o?o[o."] {
            let query = #"{"WHAT":[["._id"]],"WHERE":["EXISTS",[".",\#(JSON.string(name).compactString)]]}"#
            #expect(try db.rows(query) == [#"["doc1"]"#], "\(name)")
        }
    }

    /// Not a property: LiteCore writes SQL that SQLite cannot run (`EXISTS 17`); Sofa says why.
    @Test(arguments: [
        (#"["EXISTS",17]"#, "EXISTS takes a document property"),
        (#"["EXISTS",["+",1,2]]"#, "EXISTS takes a document property"),
        (#"["EXISTS",["$p"]]"#, "EXISTS takes a document property"),
        (#"["SELECT",{"WHAT":[1]}]"#, "a subquery (SELECT) is only allowed under EXISTS"),
        (#"["EXISTS",[".a"],[".b"]]"#, "'EXISTS' takes 1 operand, got 2"),
    ])
    func existsOfSomethingElse(whereClause: String, message: String) throws {
        do {
            _ = try Self.db().compile(try JSON.parse(#"{"WHAT":[["._id"]],"WHERE":\#(whereClause)}"#))
            Issue.record("\(whereClause) compiled")
        } catch let error as SofaError {
            #expect(error.sofaCode == .invalidQuery, "\(error)")
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    /// `["FL_LIKE()", x, pattern]` is LIKE called as a function: a boolean, a number matched as
    /// its text, MISSING for a MISSING operand, under the active COLLATE.
    @Test(arguments: [
        (#"["FL_LIKE()",[".num"],"1%"]"#, ["[?]", "[?]", "[true]"]),
        (#"["fl_like()",[".value"],"F_W"]"#, ["[false]", "[true]", "[false]"]),
        (#"["LIKE",[".num"],"1%"]"#, ["[?]", "[?]", "[true]"]),
        (#"["FL_LIKE()",[".numbers[0]"],"%i%"]"#, ["[false]", "[true]", "[?]"]),
        (#"["COLLATE",{"CASE":false},["FL_LIKE()",[".value"],"ftw"]]"#, ["[false]", "[true]", "[false]"]),
        (#"["FL_LIKE()",[".col"],"%"]"#, ["[?]", "[?]", "[false]"]),
        (#"["FL_LIKE()",1.5,"1.5"]"#, ["[true]", "[true]", "[true]"]),
    ])
    func flLike(what: String, expected: [String]) throws {
        let query = #"{"WHAT":[\#(what)],"ORDER_BY":[["._id"]]}"#
        #expect(try Self.db().rows(query) == expected, "\(what)")
    }

    @Test func flLikeFiltersAndChecksItsArguments() throws {
        let db = try Self.db()
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["FL_LIKE()",[".numbers[0]"],"f%"]}"#) == [#"["doc2"]"#])
        #expect(throws: SofaError(.invalidQuery, "fl_like() takes 2 arguments, got 1")) {
            _ = try db.compile(try JSON.parse(#"{"WHAT":[["FL_LIKE()",[".num"]]]}"#))
        }
    }

    /// CONTAINS of a non-string is false (a boolean), as LiteCore answers; strings unchanged.
    @Test(arguments: [
        (#"["CONTAINS()",[".col"],1]"#, ["[?]", "[?]", "[false]"]),
        (#"["CONTAINS()",[".value"],"FT"]"#, ["[false]", "[true]", "[false]"]),
        (#"["CONTAINS()",[".num"],1]"#, ["[?]", "[?]", "[false]"]),
        (#"["CONTAINS()",[".address.zip"],"40"]"#, ["[true]", "[null]", "[?]"]),
        (#"["COLLATE",{"CASE":false},["CONTAINS()",[".value"],"ftw"]]"#, ["[false]", "[true]", "[false]"]),
        (#"["COLLATE",{"CASE":false},["CONTAINS()",[".col"],1]]"#, ["[?]", "[?]", "[false]"]),
    ])
    func containsOfNonStrings(what: String, expected: [String]) throws {
        let query = #"{"WHAT":[\#(what)],"ORDER_BY":[["._id"]]}"#
        #expect(try Self.db().rows(query) == expected, "\(what)")
    }

    /// LiteCore's "Query boolean return" cases that Sofa once answered otherwise: each a boolean.
    @Test(arguments: [
        #"["EXISTS",[".num"]]"#,
        #"["CONTAINS()",[".col"],1]"#,
        #"["FL_LIKE()",[".num"],"1%"]"#,
    ])
    func booleanReturn(what: String) throws {
        let db = try TestDatabase([("tester", #"{"num":1,"col":[1,2,3,4]}"#)])
        let rows = try db.rows(#"{"WHAT":[\#(what)]}"#)
        #expect(rows == ["[true]"] || rows == ["[false]"], "\(what): \(rows)")
    }

    /// The short form wants exactly one operand, and a path that parses.
    @Test(arguments: [
        (#"["_.zip"]"#, "'_.zip' takes one operand"),
        (#"["_.zip",[".a"],"x"]"#, "'_.zip' takes one operand"),
        (#"["_.a[",[".a"]]"#, "invalid property path 'a['"),
        (#"["_.",[".a"],"b["]"#, "invalid property path 'b['"),
        (#"["_.",[".a"],1]"#, "'_.' needs a property path string"),
    ])
    func objectPropertyMalformed(what: String, message: String) throws {
        do {
            _ = try Self.db().compile(try JSON.parse(#"{"WHAT":[\#(what)]}"#))
            Issue.record("\(what) compiled")
        } catch let error as SofaError {
            #expect(error.sofaCode == .invalidQuery, "\(error)")
            #expect(error.message.contains(message), "\(error.message)")
        }
    }
}
