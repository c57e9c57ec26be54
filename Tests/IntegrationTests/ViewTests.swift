import Foundation
import SofaClient
import SofaCore
import SofaWire
import Testing

/// Views through real processes (SDK → gateway → a query worker running the map functions in
/// sofa-js, the index in the database's views file), over LiteCore's names dataset: every
/// query option, reductions with group levels, incremental updates, collation, and maps that
/// throw or loop. The expected answers are computed here from the dataset file itself.
@Suite(.serialized) struct ViewTests {
    struct Person {
        var id: String, first: String, last: String, gender: String, year: Int, month: Int
    }

    static func people() throws -> [Person] {
        let text = try String(contentsOf: litecoreData.appendingPathComponent("names_100.json"), encoding: .utf8)
        return try text.split(separator: "\n").filter { !$0.isEmpty }.enumerated().map { entry in
            let doc = try JSON.parse(Array(entry.element.utf8))
            let born = (doc["birthday"]?.stringValue ?? "").split(separator: "-").compactMap { Int($0) }
            return Person(id: String(format: "%07d", entry.offset + 1), first: doc["name"]?["first"]?.stringValue ?? "",
                          last: doc["name"]?["last"]?.stringValue ?? "", gender: doc["gender"]?.stringValue ?? "",
                          year: born[0], month: born[1])
        }
    }

    static let design: JSON = [
        "language": "javascript",
        "views": [
            "by_last": ["map": "function (doc) { if (doc.name) { emit(doc.name.last, doc.name.first); } }"],
            "gender": ["map": "function (doc) { emit(doc.gender, 1); }", "reduce": "_count"],
            "born": ["map": """
                function (doc) { var p = doc.birthday.split('-'); var y = parseInt(p[0], 10);
                  emit([y, parseInt(p[1], 10)], 2020 - y); }
                """, "reduce": "_stats"],
        ],
    ]

    static func ids(_ answer: JSON) -> [String] { answer["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [] }

    @Test func litecoreNamesByLastNameGenderAndBirthMonth() async throws {
        let people = try Self.people()
        try await Cluster.with { cluster in
            let db = try await QueryCatalog.importDataset("names_100", client: cluster.client)
            try await db.putDesignDocument("people", Self.design)

            // Every row, by CouchDB's collation (these names differ below case, so by lower case).
            let byLast = people.sorted { $0.last.lowercased() < $1.last.lowercased() }
            let all = try await db.view("people/by_last")
            #expect(all["total_rows"]?.intValue == 100)
            #expect(all["offset"]?.intValue == 0)
            #expect(Self.ids(all) == byLast.map(\.id))
            #expect(all["rows"]?.arrayValue?.first?["value"]?.stringValue == byLast[0].first)

            // key, keys, ranges, inclusive_end, descending, limit, skip, include_docs, update_seq.
            let one = try await db.view("people/by_last", options: ["key": .string(byLast[10].last), "include_docs": true])
            #expect(Self.ids(one) == [byLast[10].id])
            #expect(one["offset"]?.intValue == 10)
            #expect(one["rows"]?.arrayValue?.first?["doc"]?["name"]?["first"]?.stringValue == byLast[10].first)
            let keys = try await db.view("people/by_last", options: ["keys": [.string(byLast[5].last), .string(byLast[2].last), "Nobody"]])
            #expect(Self.ids(keys) == [byLast[5].id, byLast[2].id])
            let range = try await db.view("people/by_last", options: ["startkey": .string(byLast[20].last),
                                                                       "endkey": .string(byLast[30].last), "inclusive_end": false])
            #expect(Self.ids(range) == byLast[20..<30].map(\.id))
            let down = try await db.view("people/by_last", options: ["descending": true, "limit": 5, "skip": 3, "update_seq": true])
            #expect(Self.ids(down) == byLast.reversed().dropFirst(3).prefix(5).map(\.id))
            #expect(Int(down["update_seq"]?.stringValue ?? "") ?? 0 >= 100)

            // Counts by gender: a group per key, the whole, and rows of one key with docid bounds.
            let counts = Dictionary(grouping: people, by: \.gender).mapValues(\.count)
            let grouped = try await db.view("people/gender", options: ["group": true])
            #expect(grouped["rows"]?.arrayValue?.map { [$0["key"]!, $0["value"]!] } == counts.keys.sorted().map { [.string($0), .int(Int64(counts[$0]!))] })
            #expect(try await db.view("people/gender")["rows"]?.arrayValue?.first?["value"]?.intValue == 100)
            let women = people.filter { $0.gender == "female" }.map(\.id).sorted()
            let paged = try await db.view("people/gender", options: ["reduce": false, "key": "female",
                                                                      "startkey_docid": .string(women[3]), "endkey_docid": .string(women[9])])
            #expect(Self.ids(paged) == Array(women[3...9]))

            // Stats of ages by [year, month], at group levels 1 and 2, and over everything.
            func stats(_ group: [Person]) -> (Int, Int, Int, Int) {
                let ages = group.map { 2020 - $0.year }
                return (ages.reduce(0, +), ages.count, ages.min()!, ages.max()!)
            }
            func shown(_ value: JSON?) -> (Int, Int, Int, Int)? {
                guard let value, let sum = value["sum"]?.intValue, let count = value["count"]?.intValue,
                      let min = value["min"]?.intValue, let max = value["max"]?.intValue else { return nil }
                return (Int(sum), Int(count), Int(min), Int(max))
            }
            let years = Dictionary(grouping: people, by: \.year)
            let level1 = try await db.view("people/born", options: ["group_level": 1])
            #expect(level1["rows"]?.arrayValue?.count == years.count)
            for row in level1["rows"]?.arrayValue ?? [] {
                let year = Int(row["key"]?.arrayValue?.first?.intValue ?? 0)
                #expect(shown(row["value"]).map { [$0.0, $0.1, $0.2, $0.3] } == years[year].map(stats).map { [$0.0, $0.1, $0.2, $0.3] })
            }
            let months = Dictionary(grouping: people) { [$0.year, $0.month] }
            let level2 = try await db.view("people/born", options: ["group_level": 2])
            #expect(level2["rows"]?.arrayValue?.map { $0["key"]?.compactString ?? "" }
                    == months.keys.sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }.map { "[\($0[0]),\($0[1])]" })
            let whole = try await db.view("people/born")
            #expect(shown(whole["rows"]?.arrayValue?.first?["value"]).map { [$0.0, $0.1, $0.2, $0.3] } == [stats(people)].map { [$0.0, $0.1, $0.2, $0.3] }.first)
        }
    }

    @Test func editsDeletionsAndPurgesUpdateTheIndexAndKeysCollateAsCouchDB() async throws {
        try await Cluster.with { cluster in
            let db = try await cluster.client.createDatabase("mixed")
            // One value of each kind, written out of order.
            let values: [JSON] = [["b": 1], [1, "a"], "B", "a", 2.5, true, .null, [1], "aa", false, 1, ["a": 1], [], "A"]
            _ = try await db.bulk(values.enumerated().map { BulkItem.put(id: String(format: "d%02d", $0.offset),
                                                                        json: JSON.object(["v": $0.element]).compactString) })
            try await db.putDesignDocument("m", ["views": ["by_v": ["map": "function (doc) { emit(doc.v, null); }"]]])
            let order: [JSON] = [.null, false, true, 1, 2.5, "a", "A", "aa", "b", "B", [], [1], [1, "a"], ["a": 1], ["b": 1]]
            let keys = try await db.view("m/by_v")["rows"]?.arrayValue?.compactMap { $0["key"] }
            #expect(keys == order.filter { value in values.contains(value) })

            // An edit moves a document's row; a deletion and a purge remove theirs.
            let d10 = try await db.get(id: "d10")
            try await db.put(id: "d10", json: #"{"v":"zz"}"#, rev: d10.rev)
            let d00 = try await db.get(id: "d00")
            _ = try await db.delete(id: "d00", rev: d00.rev)
            try await db.purge(id: "d01")
            let after = try await db.view("m/by_v")
            #expect(after["total_rows"]?.intValue == Int64(values.count - 2))
            let ids = Self.ids(after)
            #expect(!ids.contains("d00") && !ids.contains("d01"))
            #expect(after["rows"]?.arrayValue?.last(where: { $0["key"]?.stringValue != nil })?["id"]?.stringValue == "d10")

            // A design document CouchDB would not store is refused through the SDK too, in CouchDB's words.
            for (body, reason) in [(#"{"views":{"v":{"reduce":"_count"}}}"#, "View `v` must contain map function"),
                                   (#"{"views":{"v":{"map":"function (doc) {}","reduce":"_foobar"}}}"#,
                                    "`_foobar` is not a supported reduce function.")] {
                do throws(SofaError) {
                    try await db.put(id: "_design/bad", json: body)
                    Issue.record("\(body) was stored")
                } catch {
                    #expect(error.sofaCode == .invalidDesignDoc && error.message == reason, "\(error)")
                }
            }
            // A view query's options CouchDB refuses are refused in its words.
            do throws(SofaError) {
                _ = try await db.view("m/by_v", options: ["group": true])
                Issue.record("grouping a map-only view was answered")
            } catch {
                #expect(error.sofaCode == .invalidParameter && error.message == "Invalid use of grouping on a map view.", "\(error)")
            }
        }
    }

    /// What one database's functions leave in JavaScript's globals, another database's functions
    /// run by the same worker cannot see (each database's functions get a heap of their own).
    @Test func oneDatabasesFunctionsCannotSeeAnothersGlobals() async throws {
        try await Cluster.with(queryWorkers: 1) { cluster in
            let first = try await cluster.client.createDatabase("tenant-a")
            let second = try await cluster.client.createDatabase("tenant-b")
            for db in [first, second] { _ = try await db.put(id: "d", json: #"{"v":1}"#) }
            try await first.putDesignDocument("t", ["views": ["leak": ["map": "function (doc) { LEAKED = 'secret'; emit(typeof LEAKED, null); }"]]])
            try await second.putDesignDocument("t", ["views": ["look": ["map": "function (doc) { emit(typeof LEAKED, null); }"]]])
            for _ in 0..<2 {
                #expect(try await first.view("t/leak")["rows"]?.arrayValue?.first?["key"] == "string")
                #expect(try await second.view("t/look")["rows"]?.arrayValue?.first?["key"] == "undefined")
                _ = try await first.put(id: "d\(UUID().uuidString)", json: #"{"v":2}"#)
                _ = try await second.put(id: "d\(UUID().uuidString)", json: #"{"v":2}"#)
            }
            let rows = try await second.view("t/look")["rows"]?.arrayValue ?? []
            #expect(rows.count == 3 && rows.allSatisfy { $0["key"] == "undefined" })
        }
    }

    @Test func mapsThatThrowOrLoopAreBoundedAndOtherQueriesGoOn() async throws {
        try await Cluster.with(queryWorkers: 2, clientTimeout: .seconds(60)) { cluster in
            let db = try await cluster.client.createDatabase("js")
            _ = try await db.bulk((0..<6).map { BulkItem.put(id: "k\($0)", json: #"{"n":\#($0)}"#) })
            try await db.putDesignDocument("f", ["views": [
                "odd": ["map": "function (doc) { if (doc.n % 2 === 0) { throw new Error('even'); } emit(doc.n, null); }"],
                "spin": ["map": "function (doc) { if (doc.n === 3) { while (true) {} } emit(doc.n, null); }"],
            ]])
            // A map that throws leaves those documents out.
            #expect(Self.ids(try await db.view("f/odd")) == ["k1", "k3", "k5"])
            // A map that loops on one document fails the view's update once its time runs out (the
            // child is killed and restarted), as CouchDB's does; meanwhile queries of the other
            // worker answer, and the worker is free again at once.
            async let spun: SofaError? = { () async -> SofaError? in
                do { _ = try await db.view("f/spin"); return nil } catch { return error as? SofaError }
            }()
            let started = ContinuousClock.now
            let other = try await db.query(n1ql: "SELECT COUNT(*) FROM _ WHERE n >= 0")
            #expect(other.rows == [[.int(6)]])
            let failure = await spun
            #expect(failure?.is(.timeout) == true, "\(String(describing: failure))")
            #expect(ContinuousClock.now - started < .seconds(60))
            #expect(Self.ids(try await db.view("f/odd")) == ["k1", "k3", "k5"])
        }
    }
}
