import SofaCore
@testable import SofaQL
import Testing

/// Full-text search as LiteCore's FTS tests state it: its rank, languages with a region or
/// without a stemmer, stop words left out of the index, dictionaries and non-string values.
@Suite struct FullTextLiteCoreFactTests {
    static let sentences = [
        "FTS5 is an SQLite virtual table module that provides full-text search functionality to database applications.",
        "In their most elementary form, full-text search engines allow the user to efficiently search a large "
            + "collection of documents for the subset that contain one or more instances of a search term.",
        "The search functionality provided to world wide web users by Google is, among other things, a full-text "
            + "search engine, as it allows users to search for all documents on the web that contain, for example, the term \"fts5\".",
        "To use FTS5, the user creates an FTS5 virtual table with one or more columns.",
        "Looking for things, searching for things, going on adventures...",
    ]

    /// The five sentences as rec-000…rec-004, with a full-text index on them in `language`.
    static func sentences(language: String?) throws -> TestDatabase {
        let db = try TestDatabase(sentences.enumerated().map { i, text in
            ("rec-00\(i)", JSON.object(["sentence": .string(text)]).compactString)
        })
        try db.createIndex(IndexSpec(name: "sentence", kind: .fullText, collection: .default, expressions: [[".sentence"]],
                                     language: language))
        return db
    }

    static func ranked(_ text: String) -> String {
        JSON.object(["WHAT": [["._id"]], "WHERE": ["MATCH()", "sentence", .string(text)],
                     "ORDER_BY": [["DESC", ["RANK()", "sentence"]]]]).compactString
    }

    static func ids(_ numbers: [Int]) -> [String] { numbers.map { "[\"rec-00\($0)\"]" } }

    /// "Query Full-Text English", "English_US", "Stop-words": hits over the phrase's hits in all
    /// rows (3/8, 3/8, 1/8, 1/8), ties in the order the rows were written.
    @Test(arguments: [("english", "search"), ("en_US", "search"), ("en", "the search is")])
    func rankOrder(language: String, text: String) throws {
        let db = try Self.sentences(language: language)
        #expect(try db.rows(Self.ranked(text)) == Self.ids([1, 2, 0, 4]))
        let scores = try db.rows(JSON.object(["WHAT": [["RANK()", "sentence"]], "WHERE": ["MATCH()", "sentence", "search"],
                                              "ORDER_BY": [["DESC", ["RANK()", "sentence"]]]]).compactString)
        #expect(scores == ["[0.375]", "[0.375]", "[0.125]", "[0.125]"])
    }

    /// "Query Full-Text Unsupported Language": an index in a language without a stemmer splits
    /// words without stemming ("searching" no longer matches "search").
    @Test func aLanguageWithoutAStemmerIndexesUnstemmed() throws {
        let db = try Self.sentences(language: "elbonian")
        #expect(try db.rows(Self.ranked("search")) == Self.ids([1, 2, 0]))
    }

    /// "Query Full-Text Stop-words In Target": stop words are not in the index, and a prefix in
    /// MATCH text that is a stop word stays a prefix.
    @Test func stopWordsAreNotIndexed() throws {
        let db = try Self.sentences(language: "en")
        #expect(try db.rows(Self.ranked("f* AND on*")) == Self.ids([1, 3]))
        // A phrase with a stop word in it matches without it, as the index holds the text.
        #expect(Set(try db.rows(Self.ranked("\"the search\""))) == Set(Self.ids([1, 2, 0, 4])))
        for word in ["the", "is", "for"] {
            #expect(try db.rows(Self.ranked(word)).isEmpty, "\(word)")
        }
    }

    /// "Test with Dictionary Values": a dictionary's string values are indexed.
    @Test func dictionaryValuesAreIndexed() throws {
        let db = try TestDatabase([("dict", #"{"dict_value":{"value_one":"foo","value_two":"bars"}}"#)])
        try db.createIndex(IndexSpec(name: "fts", kind: .fullText, collection: .default, expressions: [[".dict_value"]], language: "en"))
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","fts","bar"]}"#) == [#"["dict"]"#])
    }

    /// "Test with non-string values": booleans are indexed as T and F, numbers as written, and a
    /// negative number in MATCH text is a word.
    @Test(arguments: [("T", "1"), ("F", "2"), ("-41", "3"), ("42", "4"), ("3.14", "5"), ("1.234", "6")])
    func nonStringValues(text: String, id: String) throws {
        let db = try TestDatabase([("1", #"{"value":true}"#), ("2", #"{"value":false}"#), ("3", #"{"value":-41}"#),
                                   ("4", #"{"value":42}"#), ("5", #"{"value":3.14}"#), ("6", #"{"value":1.234}"#)])
        try db.createIndex(IndexSpec(name: "fts", kind: .fullText, collection: .default, expressions: [[".value"]], language: "en"))
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","fts",["$value"]]}"#, ["value": .string(text)]) == ["[\"\(id)\"]"])
    }
}

/// UNNEST and index definitions as LiteCore's array index tests state them.
@Suite struct UnnestLiteCoreFactTests {
    static func profiles() throws -> TestDatabase {
        try TestDatabase([
            ("p1", #"{"pid":"p-1","contacts":[{"address":{"city":"Oakland","state":"CA"}},{"address":{"city":"Reno","state":"NV"}}]}"#),
            ("p2", #"{"pid":"p-2","contacts":[{"address":{"city":"Fresno","state":"CA"}}]}"#),
        ])
    }

    /// "Unnest Without Alias": the alias is the property's last name.
    @Test func anUnnestWithoutAliasIsNamedByItsProperty() throws {
        let db = try Self.profiles()
        let query = #"""
            {"WHAT":[[".profiles.pid"],[".contacts.address.city"]],"FROM":[{"AS":"profiles"},{"UNNEST":[".profiles.contacts"]}],
             "WHERE":["=",[".contacts.address.state"],"CA"],"ORDER_BY":[[".contacts.address.city"]]}
            """#
        #expect(try db.rows(query) == [#"["p-2","Fresno"]"#, #"["p-1","Oakland"]"#])
    }

    /// "Unnest Array Literal Not Supported".
    @Test func anUnnestOfAnArrayLiteralIsRefused() throws {
        let db = try Self.profiles()
        let query = #"{"WHAT":[[".p.pid"]],"FROM":[{"AS":"p"},{"UNNEST":["[]","a","b"],"AS":"ph"}]}"#
        #expect { _ = try db.rows(query) } throws: { ($0 as? SofaError)?.is(.invalidQuery) == true }
    }

    /// "C4Query UNNEST objects": an array index with expressions serves a query on them.
    @Test func anArrayIndexsExpressionsServeAQueryOnThem() throws {
        let db = try Self.profiles()
        try db.createIndex(IndexSpec(name: "byState", kind: .array, collection: .default, expressions: [[".address.state"]],
                                     arrayPath: "contacts"))
        let query = #"""
            {"WHAT":[[".p.pid"]],"FROM":[{"AS":"p"},{"UNNEST":[".p.contacts"],"AS":"c"}],
             "WHERE":["=",[".c.address.state"],"NV"]}
            """#
        let compiled = try db.compile(JSON.parse(query))
        let plan = try db.read { (connection) throws(SofaError) in try connection.explain(compiled) }
        #expect(plan.contains("byState:expressions"), "\(plan)")
        #expect(try db.rows(query) == [#"["p-1"]"#])
    }

    /// An index's definition is bounded (every write evaluates it): its expressions' number and
    /// size, and a path's components.
    @Test func anIndexDefinitionIsBounded() throws {
        let db = try Self.profiles()
        let wide = IndexSpec(name: "wide", kind: .value, collection: .default,
                             expressions: (0...IndexSpec.maxExpressions).map { [.string(".f\($0)")] })
        let deep = IndexSpec(name: "deep", kind: .value, collection: .default,
                             expressions: [[.string(String(repeating: ".a", count: PropertyPath.maxComponents + 1))]])
        let long = IndexSpec(name: "long", kind: .value, collection: .default,
                             expressions: [[.string("." + String(repeating: "x", count: IndexSpec.maxDefinitionBytes))]])
        for spec in [wide, deep, long] {
            #expect { try db.createIndex(spec) } throws: { ($0 as? SofaError)?.is(.invalidQuery) == true }
        }
        try db.createIndex(IndexSpec(name: "fine", kind: .value, collection: .default,
                                     expressions: [[.string(String(repeating: ".a", count: PropertyPath.maxComponents))]]))
    }

    /// "Create Array Index with Invalid Expressions": an empty expression is refused.
    @Test func anIndexWithAnEmptyExpressionIsRefused() throws {
        let db = try Self.profiles()
        let spec = IndexSpec(name: "bad", kind: .array, collection: .default,
                             expressions: [[".address.state"], "", [".address.city"]], arrayPath: "contacts")
        #expect { try db.createIndex(spec) } throws: { ($0 as? SofaError)?.is(.invalidQuery) == true }
    }
}
