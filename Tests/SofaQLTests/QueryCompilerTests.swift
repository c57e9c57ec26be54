import Testing
import Foundation
import SofaCore
@testable import SofaQL

/// The compiler and the core functions, run on a real SQLite file with storage's layout.
@Suite struct QueryCompilerTests {
    static let people: [(String, String)] = [
        ("p1", #"{"name":{"first":"Ann","last":"Lee"},"age":31,"likes":["tea","chess"],"nick":null}"#),
        ("p2", #"{"name":{"first":"bob","last":"Ray"},"age":25,"likes":[],"city":"Oslo"}"#),
        ("p3", #"{"name":{"first":"Émile","last":"Zola"},"age":40,"likes":["tea"],"nick":"Em"}"#),
        ("p4", #"{"name":{"first":"Dee","last":"Lee"},"age":25.5,"flag":true,"we.ird":{"x":1}}"#),
    ]

    static func db() throws -> TestDatabase {
        try TestDatabase(people, deleted: [("gone", #"{"name":{"first":"Ghost"},"age":99}"#)])
    }

    @Test(arguments: [
        // WHAT / WHERE basics, deleted docs left out
        (#"{"WHAT":[[".name.first"]],"WHERE":[">",[".age"],30],"ORDER_BY":[[".age"]]}"#, [#"["Ann"]"#, #"["Émile"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["=",[".age"],25],"ORDER_BY":[["._id"]]}"#, [#"["p2"]"#]),
        (#"{"WHAT":[["count()",["."]]]}"#, ["[4]"]),
        // MISSING vs null
        (#"{"WHAT":[["._id"],[".nick"]],"ORDER_BY":[["._id"]]}"#, [#"["p1",null]"#, #"["p2",?]"#, #"["p3","Em"]"#, #"["p4",?]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["IS",[".nick"],null]}"#, [#"["p1"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["IS",[".nick"],["MISSING"]],"ORDER_BY":[["._id"]]}"#, [#"["p2"]"#, #"["p4"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["IS VALUED",[".nick"]]}"#, [#"["p3"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["IS NOT",[".nick"],null],"ORDER_BY":[["._id"]]}"#, [#"["p3"]"#]),
        // booleans as values and conditions
        (#"{"WHAT":[["._id"],[">",[".age"],30]],"WHERE":["=",[".age"],31]}"#, [#"["p1",true]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":[".flag"]}"#, [#"["p4"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["=",[".flag"],true]}"#, [#"["p4"]"#]),
        // arithmetic, concatenation, CASE
        (#"{"WHAT":[["/",[".age"],2],["/",[".age"],2.0],["||",[".name.first"]," ",[".name.last"]]],"WHERE":["=",["._id"],"p1"]}"#, [#"[15,15.5,"Ann Lee"]"#]),
        (#"{"WHAT":[["CASE",null,[">",[".age"],30],"old","young"]],"ORDER_BY":[["._id"]]}"#, [#"["old"]"#, #"["young"]"#, #"["old"]"#, #"["young"]"#]),
        // IN, BETWEEN, LIKE (case-sensitive), NOT
        (#"{"WHAT":[["._id"]],"WHERE":["IN",[".name.last"],["[]","Ray","Zola"]],"ORDER_BY":[["._id"]]}"#, [#"["p2"]"#, #"["p3"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["BETWEEN",[".age"],25,30],"ORDER_BY":[["._id"]]}"#, [#"["p2"]"#, #"["p4"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["LIKE",[".name.first"],"B%"]}"#, []),
        (#"{"WHAT":[["._id"]],"WHERE":["LIKE",[".name.first"],"_ob"]}"#, [#"["p2"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["NOT",["LIKE",[".name.first"],"%e%"]],"ORDER_BY":[["._id"]]}"#, [#"["p1"]"#, #"["p2"]"#]),
        // ANY / EVERY / ANY AND EVERY
        (#"{"WHAT":[["._id"]],"WHERE":["ANY","x",[".likes"],["=",["?x"],"chess"]]}"#, [#"["p1"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["EVERY","x",[".likes"],["=",["?x"],"tea"]],"ORDER_BY":[["._id"]]}"#, [#"["p2"]"#, #"["p3"]"#, #"["p4"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["ANY AND EVERY","x",[".likes"],["=",["?x"],"tea"]]}"#, [#"["p3"]"#]),
        // UNNEST
        (#"{"WHAT":[[".d._id"],[".l"]],"FROM":[{"AS":"d"},{"UNNEST":[".d.likes"],"AS":"l"}],"ORDER_BY":[[".d._id"],[".l"]]}"#,
         [#"["p1","chess"]"#, #"["p1","tea"]"#, #"["p3","tea"]"#]),
        // GROUP BY / HAVING / aggregates
        (#"{"WHAT":[[".name.last"],["count()",["."]],["max()",[".age"]]],"GROUP_BY":[[".name.last"]],"HAVING":[">",["count()",["."]],1]}"#,
         [#"["Lee",2,31]"#]),
        // ORDER BY across kinds: MISSING < null < strings
        (#"{"WHAT":[[".nick"]],"ORDER_BY":[[".nick"]]}"#, ["[?]", "[?]", "[null]", #"["Em"]"#]),
        (#"{"WHAT":[["._id"]],"ORDER_BY":[["DESC",[".age"]]],"LIMIT":2,"OFFSET":1}"#, [#"["p1"]"#, #"["p4"]"#]),
        (#"{"WHAT":[[".age"]],"DISTINCT":true,"WHERE":["<",[".age"],26],"ORDER_BY":[[".age"]]}"#, ["[25]", "[25.5]"]),
        // collation: case-insensitive and diacritic-insensitive Unicode
        (#"{"WHAT":[["._id"]],"WHERE":["COLLATE",{"UNICODE":true,"CASE":false},["=",[".name.first"],"BOB"]]}"#, [#"["p2"]"#]),
        (#"{"WHAT":[["._id"]],"WHERE":["COLLATE",{"UNICODE":true,"DIAC":false},["=",[".name.first"],"Emile"]]}"#, [#"["p3"]"#]),
        (#"{"WHAT":[[".name.first"]],"ORDER_BY":[["COLLATE",{"UNICODE":true,"CASE":false},[".name.first"]]]}"#,
         [#"["Ann"]"#, #"["bob"]"#, #"["Dee"]"#, #"["Émile"]"#]),
        // paths: escapes, indexes, negative indexes, _. and meta()
        (#"{"WHAT":[[".we\\.ird.x"]],"WHERE":["IS VALUED",[".we\\.ird"]]}"#, ["[1]"]),
        (#"{"WHAT":[[".likes[-1]"],[".likes[0]"]],"WHERE":["=",["._id"],"p1"]}"#, [#"["chess","tea"]"#]),
        (#"{"WHAT":[["_.",[".name"],".last"],["_.",["meta()"],".id"]],"WHERE":["=",[".age"],40]}"#, [#"["Zola","p3"]"#]),
        (#"{"WHAT":[["_.",["meta()"],".id"]],"WHERE":["_.",["meta()"],".deleted"]}"#, [#"["gone"]"#]),
        // parameters
        (#"{"WHAT":[["._id"]],"WHERE":["=",[".name.first"],["$who"]]}"#, [#"["p1"]"#]),
        // literals: arrays and dictionaries
        (#"{"WHAT":[["[]",1,[".age"]],{"k":[".nick"]}],"WHERE":["=",["._id"],"p3"]}"#, [#"[[1,40],{"k":"Em"}]"#]),
    ])
    func rows(query: String, expected: [String]) throws {
        let db = try Self.db()
        #expect(try db.rows(query, ["who": "Ann"]) == expected, "\(query)")
    }

    @Test(arguments: [
        (#"{"WHAT":[[".name.first"],[".age"],["+",[".age"],1],["AS",[".age"],"years"],["."],["_.",["meta()"],".id"]]}"#,
         ["first", "age", "$1", "years", "_doc", "id"]),
        (#"{"WHAT":[[".name"],[".name"],["lower()",[".a"]],["AS",1,"$1"],["array_count()",[".likes"]],".gender"]}"#,
         ["name", "name #2", "$2", "$1", "likes", "gender"]),
        (#"{"WHAT":[["."]],"FROM":[{"AS":"d"}]}"#, ["d"]),
        (#"{"WHAT":[[".d."],[".d.age"]],"FROM":[{"COLLECTION":"_default","AS":"d"}]}"#, ["d", "age"]),
    ])
    func titles(query: String, expected: [String]) throws {
        #expect(try Self.db().titles(query) == expected)
    }

    @Test(arguments: [
        (#"["SELEKT", {}]"#, "unknown operator 'SELEKT'"),
        (#"["SELECT", {}, 1]"#, "takes one dictionary"),
        (#"["SELECT", [1]]"#, "must be a dictionary"),
        (#"{"WHAT":[["frobnicate()",1]]}"#, "unknown function 'frobnicate()'"),
        (#"{"WHAT":[["lower()",1,2]]}"#, "takes 1 argument"),
        (#"{"WHAT":[["BETWEEN",1]]}"#, "'BETWEEN' takes 3 operands"),
        (#"{"WHAT":[[".a[x]"]]}"#, "invalid property path"),
        (#"{"FROM":[{"COLLECTION":"nope"}]}"#, "no such collection"),
        (#"{"FROM":[{"COLLECTION":"x\"; DROP TABLE kv_default; --"}]}"#, "bad collection"),
        (#"{"WHAT":[["?nope"]]}"#, "unknown variable"),
        (#"{"WHERE":["MATCH()","nope","x"]}"#, "no full-text index 'nope'"),
        (#"{"WHAT":1}"#, "WHAT must be"),
        (#"{"WHAT":[["=",1,2,3]]}"#, "takes 2 operands"),
        (#"{"LIMMIT":1}"#, "unknown key 'LIMMIT'"),
    ])
    func badQueries(query: String, message: String) throws {
        let db = try Self.db()
        do {
            _ = try db.compile(try JSON.parse(query))
            Issue.record("\(query) compiled")
        } catch let error as SofaError {
            #expect(error.sofaCode == .invalidQuery, "\(error)")
            #expect(error.message.contains(message), "\(error.message)")
        }
    }

    /// Property names and parameters are data, never SQL: these read (nothing), and the table is
    /// still there afterwards.
    @Test func injectionThroughNamesAndParameters() throws {
        let db = try Self.db()
        #expect(try db.rows(#"{"WHAT":[[".a'); DELETE FROM kv_default; --"]]}"#).count == 4)
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["=",[".name.first"],["$p"]]}"#, ["p": "x' OR '1'='1"]).isEmpty)
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["=",[".name.first"],"x' OR '1'='1"]}"#).isEmpty)
        #expect(try db.rows(#"{"WHAT":[["count()",["."]]]}"#) == ["[4]"])
    }

    @Test(arguments: [
        (#"{"WHAT":[["_.",["meta()","a"],".id"],["_.",["meta()","b"],".id"]],"FROM":[{"AS":"a"},{"AS":"b","JOIN":"INNER","ON":["AND",["=",[".a.name.last"],[".b.name.last"]],["<",["_.",["meta()","a"],".id"],["_.",["meta()","b"],".id"]]]}]}"#,
         [#"["p1","p4"]"#]),
        (#"{"WHAT":[["_.",["meta()","p"],".id"],[".o.pet"]],"FROM":[{"AS":"p"},{"COLLECTION":"other","AS":"o","JOIN":"LEFT OUTER","ON":["=",[".o.owner"],["_.",["meta()","p"],".id"]]}],"ORDER_BY":[["_.",["meta()","p"],".id"]]}"#,
         [#"["p1","cat"]"#, #"["p2",?]"#, #"["p3",?]"#, #"["p4",?]"#]),
        (#"{"WHAT":[["count()",["."]]],"FROM":[{"AS":"p"},{"COLLECTION":"other","AS":"o","JOIN":"CROSS"}]}"#, ["[4]"]),
        (#"{"WHAT":[[".o.pet"]],"FROM":[{"COLLECTION":"other","AS":"o"}]}"#, [#"["cat"]"#]),
    ])
    func joins(query: String, expected: [String]) throws {
        let db = try Self.db()
        try db.put("o1", #"{"owner":"p1","pet":"cat"}"#, table: "kv_.other")
        #expect(try db.rows(query) == expected, "\(query)")
    }

    @Test func readOnlyConnectionRefusesWrites() throws {
        let db = try Self.db()
        for sql in ["DELETE FROM kv_default", "DROP TABLE kv_default", "ATTACH DATABASE '/tmp/x.db' AS x",
                    "PRAGMA query_only=0", "CREATE TABLE t (x)"] {
            #expect(throws: SofaError.self, "\(sql)") { try db.read { (connection) throws(SofaError) in try connection.execute(sql) } }
        }
        #expect(try db.rows(#"{"WHAT":[["count()",["."]]]}"#) == ["[4]"])
    }

    @Test func valueIndexIsUsedAndKeptCurrent() throws {
        let db = try Self.db()
        try db.createIndex(IndexSpec(name: "byLast", kind: .value, collection: .default, expressions: [[".name.last"]]))
        let compiled = try db.compile(try JSON.parse(#"{"WHAT":[["._id"]],"WHERE":["=",[".name.last"],"Zola"]}"#))
        #expect(try db.read { (connection) throws(SofaError) in try connection.explain(compiled) }.contains("kv_default:value:byLast"))
        try db.put("p5", #"{"name":{"last":"Zola"}}"#)
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["=",[".name.last"],"Zola"]}"#) == [#"["p3"]"#, #"["p5"]"#])
    }

    @Test func fullTextIndexMatchesStemsAndRanks() throws {
        let db = try TestDatabase([
            ("a", #"{"text":"The dogs were running in the park"}"#),
            ("b", #"{"text":"A cat sleeps"}"#),
            ("c", #"{"text":"Run, dog, run! A dog runs."}"#),
        ])
        try db.createIndex(IndexSpec(name: "byText", kind: .fullText, collection: .default, expressions: [[".text"]]))
        let match = #"{"WHAT":[["._id"]],"WHERE":["MATCH()","byText","run dog"],"ORDER_BY":[["DESC",["RANK()","byText"]]]}"#
        #expect(try db.rows(match) == [#"["c"]"#, #"["a"]"#])
        // Stop words in MATCH text are ignored: neither document has "the" and "of" both.
        #expect(Set(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","byText","the dog of"]}"#)) == [#"["a"]"#, #"["c"]"#])
        // Kept current: an update and a deletion.
        try db.put("b", #"{"text":"A cat runs from the dog"}"#)
        try db.put("a", #"{"text":"The dogs were running in the park"}"#, flags: 1)
        #expect(Set(try db.rows(match)) == [#"["b"]"#, #"["c"]"#])
    }

    /// Stemming follows the index's language (Snowball).
    @Test func fullTextStemsPerLanguage() throws {
        let db = try TestDatabase([
            ("fr", #"{"text":"Les enfants mangeaient des pommes"}"#),
            ("de", #"{"text":"Die Häuser waren groß"}"#),
            ("en", #"{"text":"The children were eating apples"}"#),
        ])
        try db.createIndex(IndexSpec(name: "fr", kind: .fullText, collection: .default, expressions: [[".text"]], language: "fr"))
        try db.createIndex(IndexSpec(name: "de", kind: .fullText, collection: .default, expressions: [[".text"]], language: "german"))
        try db.createIndex(IndexSpec(name: "plain", kind: .fullText, collection: .default, expressions: [[".text"]], language: "none"))
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","fr","manger pomme"]}"#) == [#"["fr"]"#])
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","de","haus"]}"#) == [#"["de"]"#])
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","plain","apple"]}"#).isEmpty)
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","plain","apples"]}"#) == [#"["en"]"#])
        // A language without a stemmer splits words without stemming, as LiteCore's index does.
        try db.createIndex(IndexSpec(name: "xx", kind: .fullText, collection: .default, expressions: [[".text"]], language: "klingon"))
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","xx","apple"]}"#).isEmpty)
        #expect(try db.rows(#"{"WHAT":[["._id"]],"WHERE":["MATCH()","xx","apples"]}"#) == [#"["en"]"#])
    }

    @Test(arguments: [
        ("the dog", "dog"), ("dog AND the cat", "dog AND cat"), ("\"the dog\" of", "\"the dog\""),
        ("the", "the"), ("run* OR the", "run*"), ("Dogs", "Dogs"),
    ])
    func stopWords(text: String, expected: String) {
        #expect(FullText.withoutStopWords(text) == expected)
    }

    /// A nested array index (`classes[].students`) serves a two-level UNNEST: one table per level.
    @Test func nestedArrayIndexServesNestedUnnest() throws {
        let db = try TestDatabase([
            ("s1", #"{"classes":[{"name":"math","students":["ann","bob"]},{"name":"art","students":["cy"]}]}"#),
            ("s2", #"{"classes":[{"name":"music","students":[]},{"name":"math","students":["dee"]}]}"#),
            ("s3", #"{"classes":"none"}"#),
        ])
        let query = #"{"WHAT":[[".d._id"],[".c.name"],[".s"]],"FROM":[{"AS":"d"},{"UNNEST":[".d.classes"],"AS":"c"},{"UNNEST":[".c.students"],"AS":"s"}],"ORDER_BY":[[".d._id"],[".s"]]}"#
        let expected = [#"["s1","math","ann"]"#, #"["s1","math","bob"]"#, #"["s1","art","cy"]"#, #"["s2","math","dee"]"#]
        #expect(try db.rows(query) == expected)
        try db.createIndex(IndexSpec(name: "roster", kind: .array, collection: .default, arrayPath: "classes[].students"))
        let compiled = try db.compile(try JSON.parse(query))
        #expect(compiled.sql.contains("kv_default:unnest:roster:0") && compiled.sql.contains("\"kv_default:unnest:roster\""), "\(compiled.sql)")
        #expect(try db.rows(query) == expected)
        // Kept current through an update and a deletion, at both levels.
        try db.put("s2", #"{"classes":[{"name":"math","students":["eve"]}]}"#)
        try db.put("s1", #"{"classes":[]}"#, flags: 1)
        #expect(try db.rows(query) == [#"["s2","math","eve"]"#])
        // s2's one class, and s3's "none" (a string unnests to itself, as in LiteCore).
        #expect(try db.rows(#"{"WHAT":[["count()",["."]]],"FROM":[{"AS":"d"},{"UNNEST":[".d.classes"],"AS":"c"}]}"#) == ["[2]"])
    }

    @Test func arrayIndexServesUnnestAndAny() throws {
        let db = try Self.db()
        let unnest = #"{"WHAT":[[".d._id"],[".l"]],"FROM":[{"AS":"d"},{"UNNEST":[".d.likes"],"AS":"l"}],"ORDER_BY":[[".d._id"],[".l"]]}"#
        let any = #"{"WHAT":[["._id"]],"WHERE":["ANY","x",[".likes"],["=",["?x"],"tea"]],"ORDER_BY":[["._id"]]}"#
        let before = (try db.rows(unnest), try db.rows(any))
        try db.createIndex(IndexSpec(name: "likes", kind: .array, collection: .default, arrayPath: "likes"))
        let reader = try TestDatabase.open(db.path, .queryWorker)
        let schema = try reader.sync { (connection) throws(SofaError) in try connection.schema() }
        let compiled = try QueryCompiler.compile(try JSON.parse(unnest), schema: schema)
        #expect(compiled.sql.contains("kv_default:unnest:likes"))
        #expect(try db.rows(unnest) == before.0)
        #expect(try db.rows(any) == before.1)
        try db.put("p2", #"{"name":{"first":"bob"},"likes":["tea"]}"#)
        #expect(try db.rows(any) == [#"["p1"]"#, #"["p2"]"#, #"["p3"]"#])
    }
}

/// Trees as tall as the JSON parser lets through (512) compile and run, or are refused with an
/// error that names the limit; none exhausts a thread's stack.
@Suite struct TallTreeTests {
    @Test(arguments: [100, 255, 300, 500])
    func tallSumsRunOrAreRefused(_ height: Int) throws {
        let db = try QueryCompilerTests.db()
        var tree: JSON = 1
        for _ in 0..<height { tree = ["+", tree, 1] }
        let query = JSON.object(["WHAT": [tree], "WHERE": ["=", ["._id"], "p1"]]).compactString
        do {
            #expect(try db.rows(query) == ["[\(height + 1)]"])
        } catch let error as SofaError {
            #expect(error.is(.invalidQuery), "\(error)")
            if height >= QueryLimits.maxExpressionDepth {
                #expect(error.message.contains("at most 256 levels deep"), "\(error)")
            }
        }
    }
}
