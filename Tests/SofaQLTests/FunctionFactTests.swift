import Testing
import SofaCore
@testable import SofaQL

/// LiteCore's function and collation facts (SQLiteFunctionsTest.cc) that Sofa once answered
/// otherwise: the Unicode collations' order, ARRAY_AGG leaving MISSING out, TRIM's whitespace.
@Suite struct FunctionFactTests {
    /// "Unicode collation": (a, b, a compared with b, case-sensitive, diacritic-sensitive).
    static let unicodeCollation: [(String, String, Int, Bool, Bool)] = [
        ("", "", 0, true, true), ("", "a", -1, true, true), ("a", "a", 0, true, true),
        ("a", "A", -1, true, true), ("abc", "abc", 0, true, true), ("Aaa", "abc", -1, true, true), ("abc", "abC", -1, true, true), ("AB", "abc", -1, true, true),
        ("ABCDEF", "ZYXWVU", -1, false, true), ("ABCDEF", "Z", -1, false, true), ("a", "A", 0, false, true), ("abc", "ABC", 0, false, true), ("ABA", "abc", -1, false, true),
        ("commonprefix1", "commonprefix2", -1, false, true), ("commonPrefix1", "commonprefix2", -1, false, true), ("abcdef", "abcdefghijklm", -1, false, true), ("abcdeF", "abcdefghijklm", -1, false, true),
        ("a", "á", -1, false, true), ("", "á", -1, false, true), ("á", "á", 0, false, true), ("•a", "•A", 0, false, true),
        ("test a", "test á", -1, false, true), ("test á", "test b", -1, false, true), ("test á", "test Á", 0, false, true), ("test á1", "test Á2", -1, false, true),
        ("ABCDEF", "ZYXWVU", -1, true, true), ("ABCDEF", "Z", -1, true, true), ("a", "A", -1, true, true), ("abc", "ABC", -1, true, true), ("•a", "•A", -1, true, true),
        ("test a", "test á", -1, true, true), ("Ähnlichkeit", "apple", -1, true, true), ("ax", "Äz", -1, true, true), ("test a", "test Á", -1, true, true),
        ("test Á", "test e", -1, true, true), ("test á", "test Á", -1, true, true), ("test á", "test b", -1, true, true), ("test u", "test Ü", -1, true, true),
        ("abc", "ABC", -1, true, false), ("test á", "test a", 0, true, false), ("test á", "test A", -1, true, false), ("test á", "test b", -1, true, false), ("test á", "test Á", -1, true, false),
        ("test á", "test Á", 0, false, false),
    ]

    @Test func unicodeCollation() throws {
        var docs: [(String, String)] = []
        for (i, pair) in Self.unicodeCollation.enumerated() {
            docs.append(("p\(i)", JSON.object(["a": .string(pair.0), "b": .string(pair.1)]).compactString))
        }
        let db = try TestDatabase(docs)
        for (i, (a, b, expected, caseSensitive, diacriticSensitive)) in Self.unicodeCollation.enumerated() {
            let collation = #"{"UNICODE":true,"CASE":\#(caseSensitive),"DIAC":\#(diacriticSensitive)}"#
            let query = #"{"WHAT":[["COLLATE",\#(collation),["<",[".a"],[".b"]]],["COLLATE",\#(collation),["=",[".a"],[".b"]]],"#
                + #"["COLLATE",\#(collation),[">",[".a"],[".b"]]]],"WHERE":["=",["._id"],"p\#(i)"]}"#
            let wanted = ["[true,false,false]", "[false,true,false]", "[false,false,true]"][expected + 1]
            #expect(try db.rows(query) == [wanted], "'\(a)' vs '\(b)' case \(caseSensitive) diac \(diacriticSensitive)")
        }
    }

    /// "SQLite collation": one column ordered under each collation.
    @Test(arguments: [
        (#"{"UNICODE":false,"CASE":true}"#, ["Aardvark", "Apple", "Zebra", "Ångström", "äpple"]),
        (#"{"UNICODE":false,"CASE":false}"#, ["Aardvark", "Apple", "Zebra", "Ångström", "äpple"]),
        (#"{"UNICODE":true}"#, ["Aardvark", "Ångström", "Apple", "äpple", "Zebra"]),
        (#"{"UNICODE":true,"CASE":false}"#, ["Aardvark", "Ångström", "Apple", "äpple", "Zebra"]),
        (#"{"UNICODE":true,"DIAC":false}"#, ["Aardvark", "Ångström", "äpple", "Apple", "Zebra"]),
        (#"{"UNICODE":true,"CASE":false,"DIAC":false}"#, ["Aardvark", "Ångström", "Apple", "äpple", "Zebra"]),
    ])
    func collatedOrder(collation: String, expected: [String]) throws {
        let db = try TestDatabase([("a", #"{"hey":"Apple"}"#), ("b", #"{"hey":"Aardvark"}"#), ("c", #"{"hey":"Ångström"}"#),
                                   ("d", #"{"hey":"Zebra"}"#), ("e", #"{"hey":"äpple"}"#)])
        let rows = try db.rows(#"{"WHAT":[[".hey"]],"ORDER_BY":[["COLLATE",\#(collation),[".hey"]]]}"#)
        #expect(rows == expected.map { JSON.array([.string($0)]).compactString }, "\(collation)")
    }

    /// "SQLite array_agg": null is an item, MISSING is not.
    @Test func arrayAggLeavesMissingOut() throws {
        let db = try TestDatabase([("a", #"{"hey":17}"#), ("b", #"{"hey":8.125}"#), ("c", #"{"hey":"there"}"#), ("c2", #"{"hey":null}"#),
                                   ("d", "{}"), ("e", #"{"hey":[99,-5.5,"wow"]}"#), ("f", #"{"hey":8.125}"#)])
        #expect(try db.rows(#"{"WHAT":[["array_agg()",[".hey"]]]}"#) == [#"[[17,8.125,"there",null,[99,-5.5,"wow"],8.125]]"#])
        #expect(try db.rows(#"{"WHAT":[["array_agg()",[".nope"]]]}"#) == ["[[]]"])
    }

    /// "Unicode string functions": TRIM strips Unicode whitespace (not U+2007 FIGURE SPACE, which
    /// does not break, nor U+2030 PER MILLE).
    @Test(arguments: [
        ("'\u{1680}\u{180e}\u{2000}\u{2007}\u{200a}'", "'\u{2007}'"),
        ("'\u{2028}\u{2029}\u{2030}\u{205f}\u{3000}'", "'\u{2030}'"),
        ("'\n stuff goes here\r\t'", "'stuff goes here'"),
        ("'   '", "''"),
    ])
    func trimUnicodeWhitespace(text: String, expected: String) throws {
        #expect(try FunctionHarness().call("trim", text) == FunctionCall.value(expected), "\(text)")
    }
}
