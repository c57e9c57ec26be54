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
    static func sentences(language: String?, stopWords: String? = nil) throws -> TestDatabase {
        let db = try TestDatabase(sentences.enumerated().map { i, text in
            ("rec-00\(i)", JSON.object(["sentence": .string(text)]).compactString)
        })
        try db.createIndex(IndexSpec(name: "sentence", kind: .fullText, collection: .default, expressions: [[".sentence"]],
                                     language: language, stopWords: stopWords))
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

    /// "Query Full-Text No stop-words": an index with an empty list keeps every word, so "the
    /// search is" needs all three.
    @Test func anEmptyStopWordListKeepsEveryWord() throws {
        let db = try Self.sentences(language: "en", stopWords: "")
        #expect(try db.rows(Self.ranked("the search is")) == Self.ids([2]))
    }

    /// "Query Full-Text Custom stop-words": the index's own list replaces English's ("is" is a
    /// word again, "the" is not).
    @Test func anIndexsOwnStopWordsReplaceTheLanguages() throws {
        let db = try Self.sentences(language: "en", stopWords: "the a an")
        #expect(try db.rows(Self.ranked("the search is")) == Self.ids([2, 0]))
        #expect(try db.rows(Self.ranked("the")).isEmpty)
        // Separated by commas, in any case, as LiteCore reads the list.
        let commas = try Self.sentences(language: "en", stopWords: "The,a, an, don't")
        #expect(try commas.rows(Self.ranked("the search is")) == Self.ids([2, 0]))
    }

    /// "Test with array values" (stemming disabled): each title is a word as written, stop words
    /// still left out.
    @Test(arguments: [("the", 0), ("(1994)", 3), ("godfather", 1), ("ii", 2), ("dark", 3), ("léon", 2), ("strike", 1),
                      ("strikes", 1), ("war", 1), ("wars", 1), ("of", 0), ("a", 0), ("and", 0), ("schindler's", 2)])
    func withoutStemmingWordsMatchAsWritten(title: String, count: Int) throws {
        let lists: [(String, [String])] = [
            ("movies", ["The Shawshank Redemption (1994)", "The Godfather (1972)", "The Godfather: Part II (1974)",
                        "The Dark Knight (2008)", "12 Angry Men (1957)", "Schindler's List (1993)",
                        "The Lord of the Rings: The Return of the King (2003)", "Pulp Fiction (1994)",
                        "Avengers: Endgame (2019)", "The Good, the Bad and the Ugly (1966)"]),
            ("action", ["The Mountain II (2016)", "Avengers: Endgame (2019)", "The Dark Knight (2008)", "Inception (2010)",
                        "The Matrix (1999)", "Star Wars: Episode V - The Empire Strikes Back (1980)",
                        "Uri: The Surgical Strike (2019)", "Léon: The Professional (1994)",
                        "Star Wars: Episode IV - A New Hope (1977)", "Dangal (2016)"]),
            ("thriller", ["The Dark Knight (2008)", "Inception (2010)", "The Usual Suspects (1995)", "Se7en (1995)",
                          "Léon: The Professional (1994)", "The Silence of the Lambs (1991)", "Andhadhun (2018)",
                          "The Prestige (2006)", "The Departed (2006)", "Memento (2000)"]),
            ("history", ["Schindler's List (1993)", "Ayla: The Daughter of War (2017)", "Braveheart (1995)", "Amadeus (1984)",
                         "Lawrence of Arabia (1962)", "Downfall (2004)", "Raise the Red Lantern (1991)", "The Message (1976)",
                         "Andrei Rublev (1966)", "The Great Escape (1963)"]),
        ]
        let db = try TestDatabase(lists.map { id, titles in
            (id, JSON.object(["List": .array(titles.map { .string($0) })]).compactString)
        })
        try db.createIndex(IndexSpec(name: "List", kind: .fullText, collection: .default, expressions: [[".List"]],
                                     language: "en", disableStemming: true))
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","List",["$title"]]}"#, ["title": .string(title)]).count == count)
    }

    /// The tokenizer argument a definition makes: stemming and stop words each on or off.
    @Test func theTokenizerFollowsTheOptions() {
        #expect(FullText.tokenizer(language: "en", ignoreDiacritics: false) == "sofa_snowball en stopwords remove_diacritics 0")
        #expect(FullText.tokenizer(language: "en", ignoreDiacritics: false, disableStemming: true)
                == "sofa_snowball none stopwords remove_diacritics 0")
        #expect(FullText.tokenizer(language: "en", ignoreDiacritics: true, stopWords: "")
                == "sofa_snowball en remove_diacritics 2")
        #expect(FullText.tokenizer(language: "fr", ignoreDiacritics: false, disableStemming: true, stopWords: "")
                == "unicode61 remove_diacritics 0")
        #expect(FullText.tokenizer(language: "none", ignoreDiacritics: false, stopWords: "l'a, \"le\" LA")
                == "sofa_snowball none stopwordlist ''l''''a le la'' remove_diacritics 0")
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
