import Testing
import SofaCore
@testable import SofaQL

/// LiteCore's rules for the JSON query schema that Sofa once read differently, each as a table of
/// queries run against a real database file: property paths given as operand lists, the `$`
/// parameter forms, ANY/EVERY over a dictionary, variable paths, and where MATCH may stand.
@Suite struct QuerySemanticsRuleTests {
    static let contacts: [(String, String)] = [
        ("c1", #"{"contact":{"phone":["555-1","555-2"],"name.full":"Ann Lee"},"scores":{"math":9,"art":4},"tags":["a"]}"#),
        ("c2", #"{"contact":{"phone":["555-3"],"name.full":"Bob Ray"},"scores":{"math":3,"art":2},"tags":[]}"#),
        ("c3", #"{"contact":{"phone":[]},"scores":{},"items":[{"sub":{"path":1}},{"sub":{"path":7}}]}"#),
        ("c4", #"{"contact":{},"scores":[8,9],"items":[{"sub":{"path":7}}]}"#),
    ]

    static func db() throws -> TestDatabase { try TestDatabase(contacts) }

    /// A path operand list: strings are keys taken as written (a dot is part of the key), a
    /// one-element array is an index; the operator may hold a path of its own.
    @Test(arguments: [
        (#"{"WHAT":[["._id"],[".","contact","phone",[0]]],"ORDER_BY":[["._id"]]}"#,
         [#"["c1","555-1"]"#, #"["c2","555-3"]"#, #"["c3",?]"#, #"["c4",?]"#]),
        (#"{"WHAT":[[".","contact","phone",[-1]]],"WHERE":["=",["._id"],"c1"]}"#, [#"["555-2"]"#]),
        (#"{"WHAT":[[".contact","phone",[1]]],"WHERE":["=",["._id"],"c1"]}"#, [#"["555-2"]"#]),
        (#"{"WHAT":[[".contact.phone",[0]]],"WHERE":["=",["._id"],"c2"]}"#, [#"["555-3"]"#]),
        (#"{"WHAT":[[".","contact","name.full"]],"WHERE":["=",["._id"],"c2"]}"#, [#"["Bob Ray"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["=",[".","contact","phone",[0]],"555-3"]}"#, [#"["c2"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["IS",[".","contact","phone",[0]],["MISSING"]],"ORDER_BY":[["._id"]]}"#,
         [#"["c3"]"#, #"["c4"]"#]),
    ])
    func pathOperands(query: String, expected: [String]) throws {
        #expect(try Self.db().rows(query) == expected, "\(query)")
    }

    /// The column title of an operand-list path is its last component, as for `[".a.b"]`: a key
    /// names the column, an index leaves it unnamed (`$1`…, QueryTest "Various Exceptional Conditions").
    @Test func pathOperandTitles() throws {
        #expect(try Self.db().titles(#"{"WHAT":[[".","contact","phone",[0]],[".","contact","name.full"]]}"#)
                    == ["$1", "name.full"])
    }

    /// `["$name"]`, `["$", "name"]` and `["$", 1]` (the parameter named "1").
    @Test(arguments: [
        (#"{"WHAT":[["._id"]],"WHERE":["=",[".contact.phone[0]"],["$", "phone"]]}"#, [#"["c2"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["=",[".contact.phone[0]"],["$phone"]]}"#, [#"["c2"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["=",[".scores.math"],["$", 1]]}"#, [#"["c1"]"#]),
        (#"{"WHAT":[["$", 1],["$", "phone"]],"WHERE":["=",["._id"],"c4"]}"#, [#"[9,"555-3"]"#]),
    ])
    func parameterForms(query: String, expected: [String]) throws {
        #expect(try Self.db().rows(query, ["phone": "555-3", "1": 9]) == expected, "\(query)")
    }

    /// ANY/EVERY range over an array's items or a dictionary's values; anything else has none.
    @Test(arguments: [
        (#"{"WHAT":[["._id"]],"WHERE":["ANY","s",[".scores"],[">",["?s"],8]],"ORDER_BY":[["._id"]]}"#,
         [#"["c1"]"#, #"["c4"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["EVERY","s",[".scores"],[">=",["?s"],3]],"ORDER_BY":[["._id"]]}"#,
         [#"["c1"]"#, #"["c3"]"#, #"["c4"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["ANY AND EVERY","s",[".scores"],["<",["?s"],5]]}"#, [#"["c2"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["ANY","p",[".contact"],["=",["?p",[0]],"555-3"]]}"#, [#"["c2"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["ANY","t",[".contact.name\\.full"],["=",["?t"],"Ann Lee"]]}"#, []),
    ])
    func quantifiersOverDictionaries(query: String, expected: [String]) throws {
        #expect(try Self.db().rows(query) == expected, "\(query)")
    }

    /// A variable with a path after it: in the operator, as operands, or both.
    @Test(arguments: [
        #"["?i","sub","path"]"#,
        #"["?i.sub","path"]"#,
        #"["?i.sub.path"]"#,
        #"["?","i","sub","path"]"#,
        #"["?","i.sub","path"]"#,
    ])
    func variablePaths(variable: String) throws {
        let query = #"{"WHAT":[["._id"]],"WHERE":["ANY","i",[".items"],["=",\#(variable),7]],"ORDER_BY":[["._id"]]}"#
        #expect(try Self.db().rows(query) == [#"["c3"]"#, #"["c4"]"#], "\(variable)")
        let every = #"{"WHAT":[["._id"]],"WHERE":["EVERY","i",[".items"],["=",\#(variable),7]],"ORDER_BY":[["._id"]]}"#
        #expect(try Self.db().rows(every) == [#"["c1"]"#, #"["c2"]"#, #"["c4"]"#], "\(variable)")
    }

    /// MATCH() at the top of WHERE or under its top-level ANDs only (LiteCore's rule and message).
    @Test func matchPlacement() throws {
        let db = try TestDatabase([("a", #"{"text":"a dog runs","n":1}"#), ("b", #"{"text":"a cat","n":2}"#)])
        try db.createIndex(IndexSpec(name: "byText", kind: .fullText, collection: .default, expressions: [[".text"]]))
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["AND",["=",[".n"],1],["AND",["MATCH()","byText","dog"]]]}"#)
                    == [#"["a"]"#])
        for whereClause in [
            #"["NOT",["MATCH()","byText","dog"]]"#,
            #"["OR",["MATCH()","byText","dog"],["=",[".n"],2]]"#,
            #"["AND",["=",[".n"],1],["NOT",["MATCH()","byText","dog"]]]"#,
            #"["=",["MATCH()","byText","dog"],false]"#,
        ] {
            #expect(throws: SofaError(.invalidQuery, "MATCH can only appear at top-level, or in a top-level AND")) {
                _ = try db.compile(try JSON.parse(#"{"WHAT":[["._id"]],"WHERE":\#(whereClause)}"#))
            }
        }
    }

    /// Malformed paths and parameters: an `.invalidQuery` that says what is wrong.
    @Test(arguments: [
        (#"{"WHAT":[[".","a",[0,1]]]}"#, "one-element array"),
        (#"{"WHAT":[[".","a",["x"]]]}"#, "must be an integer"),
        (#"{"WHAT":[[".","a",[4294967296]]]}"#, "must be an integer"),
        (#"{"WHAT":[[".","a",1]]}"#, "a key (a string) or an index"),
        (#"{"WHAT":[[".",[0]]]}"#, "cannot start with an array index"),
        (#"{"WHAT":[["?"]]}"#, "needs a variable name"),
        (#"{"WHAT":[["$"]]}"#, "takes one operand"),
        (#"{"WHAT":[["$", 1.5]]}"#, "a string or an integer"),
        (#"{"WHAT":[["$", "a b"]]}"#, "invalid query parameter name 'a b'"),
        (#"{"WHAT":[["$x", "y"]]}"#, "extra operands to '$x'"),
    ])
    func malformed(query: String, message: String) throws {
        do {
            _ = try Self.db().compile(try JSON.parse(query))
            Issue.record("\(query) compiled")
        } catch let error as SofaError {
            #expect(error.sofaCode == .invalidQuery, "\(error)")
            #expect(error.message.contains(message), "\(error.message)")
        }
    }
}
