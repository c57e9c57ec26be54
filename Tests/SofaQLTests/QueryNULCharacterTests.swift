import SofaCore
@testable import SofaQL
import Testing

/// A string with a NUL character in it is one value through a query, whole (LiteCore's
/// DataFileTest "JSON null chars": `"Hello\u0000There"` is 11 bytes): read, measured, compared,
/// matched by LIKE, bound as a parameter and indexed without being cut at the NUL.
@Suite struct QueryNULCharacterTests {
    static func database() throws -> TestDatabase {
        try TestDatabase([("n1", #"{"foo":"Hello\u0000There"}"#), ("n2", #"{"foo":"Hello"}"#)])
    }

    @Test func aStringWithANULIsWholeInResultsAndComparisons() throws {
        let db = try Self.database()
        #expect(try db.rows(#"{"WHAT":[[".foo"],["length()",[".foo"]]],"WHERE":["=",["._id"],"n1"]}"#)
                == [#"["Hello\u0000There",11]"#])
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["=",[".foo"],"Hello"]}"#) == [#"["n2"]"#])
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["LIKE",[".foo"],"%There"]}"#) == [#"["n1"]"#])
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["=",[".foo"],["$","p"]]}"#, ["p": "Hello\u{0}There"]) == [#"["n1"]"#])
        #expect(try db.rows(#"{"WHAT":[{"k":[".foo"]}],"WHERE":["=",["._id"],"n1"]}"#) == [#"[{"k":"Hello\u0000There"}]"#])
    }

    @Test func anIndexKeepsTheWholeString() throws {
        let db = try Self.database()
        try db.createIndex(IndexSpec(name: "byFoo", kind: .value, collection: .default, expressions: [[".foo"]]))
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["=",[".foo"],"Hello"]}"#) == [#"["n2"]"#])
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["=",[".foo"],["$","p"]]}"#, ["p": "Hello\u{0}There"]) == [#"["n1"]"#])
    }
}
