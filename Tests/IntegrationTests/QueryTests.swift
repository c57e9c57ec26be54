import Foundation
import SofaClient
import SofaCore
import SofaWire
import Testing

/// Queries through real processes: the SDK → gateway → broker → a query worker reading the
/// database file storage writes; index DDL through storage; live queries over the change feed.
@Suite(.serialized) struct QueryTests {
    static func seed(_ db: Database) async throws {
        let docs: [(String, String)] = [
            ("a", #"{"name":"Ann","age":31,"tags":["x","y"],"bio":"She was running a marathon"}"#),
            ("b", #"{"name":"Bob","age":25,"tags":["y"],"bio":"A calm reader of books"}"#),
            ("c", #"{"name":"Cy","age":40,"nick":null,"bio":"Runs every day with the dog"}"#),
        ]
        _ = try await db.bulk(docs.map { .put(id: $0.0, rev: "", body: Array($0.1.utf8), deleted: false) })
    }

    @Test func n1qlAndJSONQueriesThroughTheCluster() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("q")
            try await Self.seed(db)
            let result = try await db.query(n1ql: "SELECT name, age, nick FROM _ WHERE age >= $min ORDER BY age", parameters: ["min": 30])
            #expect(result.columns == ["name", "age", "nick"])
            #expect(result.rows == [[.string("Ann"), .int(31), nil], [.string("Cy"), .int(40), .null]])

            let json = try await db.query(json: [
                "WHAT": [["._id"]], "WHERE": ["ANY", "t", [".tags"], ["=", ["?t"], "y"]], "ORDER_BY": [["._id"]],
            ])
            #expect(json.rows == [[.string("a")], [.string("b")]])

            // A document written now is visible to the next query.
            try await db.put(id: "d", json: #"{"name":"Dee","age":50}"#)
            let count = try await db.query(n1ql: "SELECT COUNT(*) AS n FROM _")
            #expect(count.rows == [[.int(4)]])
            #expect(count.dictionaries == [["n": 4]])
        }
    }

    @Test func badQueriesAnswerInvalidQueryAndTheWorkerKeepsServing() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("bad")
            try await Self.seed(db)
            let cases: [(String, String)] = [
                ("SELECT frob(name) FROM _", "no function named 'frob'"),
                ("SELECT lower(name, 1) FROM _", "takes 1 argument"),
                ("SELECT name FROM nope", "no such collection"),
                ("SELECT name FROM _ WHERE", "syntax error"),
                ("SELECT name FROM `x\"; DROP TABLE kv_default; --`", "bad collection"),
            ]
            for (query, message) in cases {
                do throws(SofaError) {
                    _ = try await db.query(n1ql: query)
                    Issue.record("\(query) ran")
                } catch {
                    #expect(error.sofaCode == .invalidQuery, "\(query): \(error)")
                    #expect(error.message.contains(message), "\(query): \(error.message)")
                }
            }
            await #expect(throws: SofaError.self) { _ = try await db.query(json: ["WHAT": 1]) }
            // Nothing was modified, and the database next door was not reachable.
            #expect(try await db.query(n1ql: "SELECT COUNT(*) FROM _").rows == [[.int(3)]])
            let missing = cluster.client.database("nosuchdb")
            await #expect(throws: SofaError.self) { _ = try await missing.query(n1ql: "SELECT 1 FROM _") }
        }
    }

    @Test func indexesThroughStorageAreUsedByWorkers() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("idx")
            try await Self.seed(db)
            try await db.createIndex("byAge", kind: .value, expressions: [[".age"]])
            try await db.createIndex("byBio", kind: .fullText(), expressions: [[".bio"]])
            try await db.createIndex("byTag", kind: .array(path: "tags"))
            #expect(try await db.indexes().map(\.name) == ["byAge", "byBio", "byTag"])

            let plan = try await db.explain(n1ql: "SELECT name FROM _ WHERE age = 25")
            #expect(plan.contains("kv_default:value:byAge"), "\(plan)")
            let text = try await db.query(n1ql: "SELECT META().id FROM _ WHERE MATCH(byBio, 'run') ORDER BY RANK(byBio) DESC, META().id")
            #expect(Set(text.rows.map { $0[0] }) == [.string("a"), .string("c")])
            let unnest = try await db.query(n1ql: "SELECT META(d).id, t FROM _ AS d UNNEST d.tags AS t ORDER BY META(d).id, t")
            #expect(unnest.rows == [[.string("a"), .string("x")], [.string("a"), .string("y")], [.string("b"), .string("y")]])
            #expect(try await db.explain(n1ql: "SELECT t FROM _ AS d UNNEST d.tags AS t").contains("kv_default:unnest:byTag"))

            // Kept current by storage's writes.
            try await db.put(id: "e", json: #"{"name":"Eve","age":25,"tags":["x"],"bio":"runner"}"#)
            #expect(try await db.query(n1ql: "SELECT name FROM _ WHERE age = 25 ORDER BY name").rows == [[.string("Bob")], [.string("Eve")]])
            let tagged = try await db.query(n1ql: "SELECT META().id FROM _ WHERE ANY t IN tags SATISFIES t = 'x' END ORDER BY META().id")
            #expect(tagged.rows == [[.string("a")], [.string("e")]])

            try await db.deleteIndex("byBio")
            #expect(try await db.indexes().map(\.name) == ["byAge", "byTag"])
            try await db.deleteIndex("byBio")  // a missing index: nothing to do (LiteCore's rule)
            await #expect(throws: SofaError.self) { _ = try await db.query(n1ql: "SELECT name FROM _ WHERE MATCH(byBio, 'run')") }
            await #expect(throws: SofaError.self) { try await db.createIndex("bad name!", kind: .value, expressions: [[".a"]]) }
        }
    }

    /// A result fetched page by page: every row once, in order, no page over its size.
    @Test func pagedResultsArriveInBatches() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("pages")
            let items: [BulkItem] = (0..<2500).map { .put(id: String(format: "d%05d", $0), rev: "", body: Array(#"{"n":\#($0)}"#.utf8), deleted: false) }
            _ = try await db.bulk(items)
            var seen: [Int64] = []
            var pages = 0
            for try await page in db.queryPages(n1ql: "SELECT n FROM _ WHERE n >= $min ORDER BY n", parameters: ["min": 100], pageRows: 700) {
                #expect(page.columns == ["n"])
                #expect(page.rows.count <= 700)
                seen += page.rows.compactMap { $0[0]?.intValue }
                pages += 1
            }
            #expect(seen == Array(100..<2500))
            #expect(pages == 4)
        }
    }

    @Test func liveQueryDeliversNewResultsAfterCommits() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("live")
            try await Self.seed(db)
            let results = try await withDeadline(.seconds(30)) {
                var seen: [[String]] = []
                var iterator = db.liveQuery(n1ql: "SELECT name FROM _ WHERE age < 30 ORDER BY name").makeAsyncIterator()
                while let result = try await iterator.next() {
                    seen.append(result.rows.compactMap { $0[0]?.stringValue })
                    if seen.count == 1 {
                        // Not a match: no new result. Then a match: a new result.
                        try await db.put(id: "old", json: #"{"name":"Old","age":90}"#)
                        try await db.put(id: "kid", json: #"{"name":"Kid","age":9}"#)
                    }
                    if seen.count == 2 { break }
                }
                return seen
            }
            #expect(results == [["Bob"], ["Bob", "Kid"]])
        }
    }
}

extension QueryTests {
    /// A query prepared once runs with each set of parameters, in N1QL and JSON, whole, in pages
    /// and live; one that does not compile fails when it is prepared, naming the problem.
    @Test func preparedQueriesRunWithParameters() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("prepared")
            try await Self.seed(db)
            let byAge = try await db.prepare(n1ql: "SELECT name FROM _ WHERE age < $max ORDER BY name")
            #expect(byAge.explanation.contains("SELECT"), "\(byAge.explanation)")
            #expect(try await byAge.run(["max": 30]).rows == [[.string("Bob")]])
            #expect(try await byAge.run(["max": 35]).rows == [[.string("Ann")], [.string("Bob")]])
            #expect(try await byAge.run(["max": 0]).rows.isEmpty)

            let json = try await db.prepare(json: JSON.parse(#"{"WHAT":[[".name"]],"WHERE":["=",[".age"],["$age"]]}"#))
            #expect(try await json.run(["age": 40]).rows == [[.string("Cy")]])

            var paged: [String] = []
            for try await page in byAge.pages(["max": 100], pageRows: 2) {
                #expect(page.rows.count <= 2)
                paged += page.rows.compactMap { $0[0]?.stringValue }
            }
            #expect(paged == ["Ann", "Bob", "Cy"])

            let first = try await withDeadline(.seconds(30)) {
                var iterator = byAge.live(["max": 30]).makeAsyncIterator()
                return try await iterator.next()
            }
            #expect(first?.rows == [[.string("Bob")]])

            let refused = await #expect(throws: SofaError.self) { _ = try await db.prepare(n1ql: "SELECT FROM WHERE") }
            #expect(refused?.is(.invalidQuery) == true, "\(String(describing: refused))")
        }
    }

    /// BLOB(path) reads a referenced blob's bytes (base64, as JSON carries data).
    @Test func blobFunctionReturnsContents() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("blobq")
            let content = Array("This is a blob to store in the store!".utf8)
            let info = try await db.putBlob(content)
            try await db.put(id: "doc", json: #"{"photo":{"@type":"blob","digest":"\#(info.key)","length":\#(content.count)}}"#)
            let result = try await db.query(n1ql: "SELECT BLOB(photo) AS data, BLOB(nothing) AS none FROM _")
            #expect(result.rows == [[.string(Data(content).base64EncodedString()), nil]])
        }
    }

    /// LiteCore's blob-access queries in the JSON schema: a blob in an array, read by BLOB(), and
    /// the same wrapped in an array.
    @Test func blobFunctionInTheJSONSchema() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("blobj")
            let content = Array("This is a blob to store in the store!".utf8)
            let info = try await db.putBlob(content)
            try await db.put(id: "doc1", json: #"{"attached":[{"@type":"blob","content_type":"text/plain","digest":"\#(info.key)","length":\#(content.count)}]}"#)
            try await db.put(id: "doc2", json: #"{"attached":[]}"#)
            let data = JSON.string(Data(content).base64EncodedString())
            let plain = try await db.query(json: JSON.parse(#"["SELECT", {"WHAT": [["BLOB", ".attached[0]"]], "WHERE": ["=", ["._id"], "doc1"]}]"#))
            #expect(plain.rows == [[data]])
            let wrapped = try await db.query(json: JSON.parse(#"["SELECT", {"WHAT": [["[]", ["BLOB", ".attached[0]"]]], "WHERE": ["=", ["._id"], "doc1"]}]"#))
            #expect(wrapped.rows == [[.array([data])]])
            for path in [#""$.attached[0]""#, #""attached[0]""#, #"[".attached[0]"]"#] {
                let other = try await db.query(json: JSON.parse(#"["SELECT", {"WHAT": [["BLOB", \#(path)]], "WHERE": ["=", ["._id"], "doc1"]}]"#))
                #expect(other.rows == [[data]], "\(path)")
            }
        }
    }
}

extension QueryTests {
    /// `sofa query` and `sofa index` against a dataset imported with `sofa import`.
    @Test func cliQueriesAndIndexes() async throws {
        try await Cluster.with { cluster in
            let gw = cluster.supervisor.gatewayEndpoint
            let names = litecoreData.appendingPathComponent("names_100.json").path
            func sofa(_ arguments: [String]) async throws -> String {
                let run = try await runSofa(arguments, gateway: gw)
                #expect(run.status == 0, "sofa \(arguments): \(run.err)")
                return run.out
            }
            _ = try await sofa(["db", "create", "people"])
            _ = try await sofa(["import", "people", names])
            let out = try await sofa(["query", "people", "SELECT META().id, name.first FROM _ WHERE name.last = $last ORDER BY META().id",
                                      "--param", "last=Laserna", "--titles"])
            #expect(out == "[\"id\",\"first\"]\n[\"0000001\",\"Lue\"]\n")
            _ = try await sofa(["index", "create", "people", "byLast", "name.last"])
            let plan = try await sofa(["query", "people", "--explain", "SELECT name FROM _ WHERE name.last = 'Laserna'"])
            #expect(plan.contains("kv_default:value:byLast"))
            #expect(try await sofa(["index", "list", "people"]).contains("\"name\":\"byLast\""))
            let json = try await sofa(["query", "people", "--json", #"{"WHAT":[["count()",["."]]]}"#])
            #expect(json == "[100]\n")
            let bad = try await runSofa(["query", "people", "SELECT nosuchfn(x) FROM _"], gateway: gw)
            #expect(bad.status != 0)
            expectErrorLine(bad.err, .invalidQuery)
            _ = try await sofa(["index", "delete", "people", "byLast"])
            #expect(try await sofa(["index", "list", "people"]).isEmpty)
        }
    }
}

extension QueryTests {
    /// A database deleted and created again under the same name is queried afresh, never
    /// through the worker's connection to the old file.
    @Test func recreatedDatabaseIsQueriedAfresh() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("again")
            try await Self.seed(db)
            #expect(try await db.query(n1ql: "SELECT COUNT(*) FROM _").rows == [[.int(3)]])
            try await cluster.client.deleteDatabase("again")
            await #expect(throws: SofaError.self) { _ = try await db.query(n1ql: "SELECT COUNT(*) FROM _") }
            let fresh = try await cluster.client.createDatabase("again")
            try await fresh.put(id: "only", json: #"{"x":1}"#)
            #expect(try await fresh.query(n1ql: "SELECT COUNT(*) FROM _").rows == [[.int(1)]])
        }
    }
}

extension QueryTests {
    /// A seeded database with a collection `store.orders` holding one order, o1 (Ann's).
    static func seedWithOrders(_ cluster: Cluster, _ name: String) async throws -> (Database, Collection) {
        let db = try await cluster.client.createDatabase(name)
        try await seed(db)
        let orders = try await db.createCollection("store.orders")
        try await orders.put(id: "o1", json: #"{"total":3,"customer":"a"}"#)
        return (db, orders)
    }

    /// A collection's query reads that collection when it has no FROM; FROM names others.
    @Test func collectionQueriesReadTheirCollection() async throws {
        try await Cluster.with { cluster in
            let (db, orders) = try await Self.seedWithOrders(cluster, "colls")
            try await orders.put(id: "o2", json: #"{"total":5,"customer":"c"}"#)
            #expect(try await orders.query(n1ql: "SELECT META().id, total ORDER BY total").rows
                    == [[.string("o1"), .int(3)], [.string("o2"), .int(5)]])
            #expect(try await orders.query(json: ["WHAT": [["count()", ["."]]]]).rows == [[.int(2)]])
            let joined = try await db.query(n1ql: """
                SELECT c.name, o.total FROM _ AS c JOIN store.orders AS o ON o.customer = META(c).id ORDER BY o.total
                """)
            #expect(joined.rows == [[.string("Ann"), .int(3)], [.string("Cy"), .int(5)]])
            #expect(try await orders.query(n1ql: "SELECT COUNT(*) FROM _").rows == [[.int(3)]])
        }
    }
}

extension QueryTests {
    /// A live query joining two collections gets a new result after a commit in either one.
    @Test func liveQueryFollowsEveryCollectionItReads() async throws {
        try await Cluster.with { cluster in
            let (db, orders) = try await Self.seedWithOrders(cluster, "livejoin")
            let results = try await withDeadline(.seconds(30)) {
                var seen: [[[JSON?]]] = []
                let live = db.liveQuery(n1ql: """
                    SELECT c.name, o.total FROM _ AS c JOIN store.orders AS o ON o.customer = META(c).id ORDER BY o.total
                    """)
                var iterator = live.makeAsyncIterator()
                while let result = try await iterator.next() {
                    seen.append(result.rows)
                    switch seen.count {
                    case 1: try await orders.put(id: "o2", json: #"{"total":5,"customer":"c"}"#)  // the other collection
                    case 2: try await db.put(id: "c", json: #"{"name":"Cyd","age":41}"#, rev: try await db.get(id: "c").rev)
                    default: break
                    }
                    if seen.count == 3 { break }
                }
                return seen
            }
            #expect(results == [
                [[.string("Ann"), .int(3)]],
                [[.string("Ann"), .int(3)], [.string("Cy"), .int(5)]],
                [[.string("Ann"), .int(3)], [.string("Cyd"), .int(5)]],
            ])
        }
    }
}
