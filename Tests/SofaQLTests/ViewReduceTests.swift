import SofaCore
import Testing
@testable import SofaQL

/// View keys in CouchDB's collation, and CouchDB's built-in reduce functions.
@Suite struct ViewReduceTests {
    /// CouchDB's documented order of view keys (its "Views Collation" list, in part), shuffled
    /// and sorted back.
    @Test func keysSortByCouchDBsCollation() throws {
        let ordered: [JSON] = try [
            "null", "false", "true", "1", "2", "3.0", "4",
            #""a""#, #""A""#, #""aa""#, #""b""#, #""B""#, #""ba""#, #""bb""#,
            #"["a"]"#, #"["b"]"#, #"["b","c"]"#, #"["b","c","a"]"#, #"["b","d"]"#, #"["b","d","e"]"#,
            #"{"a":1}"#, #"{"a":2}"#, #"{"b":1}"#, #"{"b":2}"#, #"{"b":2,"a":1}"#, #"{"b":2,"c":2}"#,
        ].map { (text: String) throws(SofaError) -> JSON in try JSON.parse(text) }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let sorted = ordered.shuffled(using: &generator).sorted(by: ViewCollation.isOrdered)
            #expect(sorted == ordered)
        }
        #expect(ViewCollation.compare(.int(3), .double(3.0)) == 0)
        #expect(ViewCollation.compare(.string("é"), .string("f")) < 0)  // by Unicode rules, not bytes
    }

    @Test func countSumAndStatsReduceAndRereduce() throws {
        let values: [JSON] = [1, 2, 3.5, 4]
        let keys = values.map { _ in JSON.null }
        #expect(try BuiltinReduce.count.reduce(keys: keys, values: values) == 4)
        #expect(try BuiltinReduce.count.rereduce([4, 6]) == 10)
        #expect(try BuiltinReduce.sum.reduce(keys: keys, values: values) == .double(10.5))
        #expect(try BuiltinReduce.sum.reduce(keys: [nil, nil], values: [[1, 2], [10, 20, 30]]) == [11, 22, 30])
        #expect(try BuiltinReduce.sum.reduce(keys: [nil], values: ["x"])["caused_by"] == "x")
        let first = try BuiltinReduce.stats.reduce(keys: [nil, nil], values: [2, 4])
        #expect(first == ["sum": 6, "count": 2, "min": 2, "max": 4, "sumsqr": 20])
        let second = try BuiltinReduce.stats.reduce(keys: [nil], values: [-1])
        #expect(try BuiltinReduce.stats.rereduce([first, second]) == ["sum": 5, "count": 3, "min": -1, "max": 4, "sumsqr": 21])
        // Arrays of numbers, element by element; statistics objects (pre-aggregated) merged.
        let columns = try BuiltinReduce.stats.reduce(keys: [nil, nil], values: [[1, 10], [3, 20]])
        #expect(columns == [["sum": 4, "count": 2, "min": 1, "max": 3, "sumsqr": 10],
                            ["sum": 30, "count": 2, "min": 10, "max": 20, "sumsqr": 500]])
        #expect(try BuiltinReduce.stats.rereduce([columns, columns]).arrayValue?.first?["count"] == 4)
        let merged = try BuiltinReduce.stats.reduce(keys: [nil, nil], values: [first, 5])
        #expect(merged == ["sum": 11, "count": 3, "min": 2, "max": 5, "sumsqr": 45])
        #expect(throws: SofaError.self) { try BuiltinReduce.stats.reduce(keys: [nil], values: ["x"]) }
        #expect(throws: SofaError.self) { try BuiltinReduce.stats.reduce(keys: [nil, nil], values: [[1], [1, 2]]) }
    }

    @Test func approximateDistinctCountsMergeAndStayClose() throws {
        let reduce = BuiltinReduce.approxCountDistinct
        var parts: [JSON] = []
        for part in 0..<10 {
            // 10 parts of 1,000 keys each, half of every part repeated in the next.
            let keys = (0..<1000).map { JSON.string("key-\(part * 500 + $0)") }
            parts.append(try reduce.reduce(keys: keys, values: keys.map { _ in nil }))
        }
        let estimate = try #require(reduce.present(try reduce.rereduce(parts)).intValue)
        #expect(abs(Double(estimate) - 5500) / 5500 < 0.08, "\(estimate) for 5,500 distinct keys")
        let small = try reduce.reduce(keys: ["a", "b", "a", "c"], values: [nil, nil, nil, nil])
        #expect(reduce.present(small) == 3)
    }
}

extension ViewReduceTests {
    /// A built-in is named by its name first (CouchDB reads `_sum\nare\nawesome` as `_sum`).
    @Test func builtinsAreNamedByTheirPrefix() {
        #expect(BuiltinReduce(named: " _sum\nare\nawesome") == .sum)
        #expect(BuiltinReduce(named: "_sumorama") == .sum)
        #expect(BuiltinReduce(named: "_count\n") == .count)
        #expect(BuiltinReduce(named: "_approx_count_distinct") == .approxCountDistinct)
        #expect(BuiltinReduce(named: "_foobar") == nil)
        #expect(BuiltinReduce(named: "function (k, v) { return sum(v); }") == nil)
    }

    /// `_sum` adds numbers (integers stay integers), arrays element by element (a number is a
    /// one-element array) and objects member by member; anything else makes the reduction
    /// CouchDB's `builtin_reduce_error` object, which a rereduce passes on.
    @Test func sumAddsNumbersArraysAndObjects() throws {
        func sum(_ values: String) throws -> String {
            try BuiltinReduce.sum(try #require(JSON.tryParse(values)?.arrayValue)).compactString
        }
        #expect(try sum("[1,2,3]") == "6")
        #expect(try sum("[1,2.5]") == "3.5")
        #expect(try sum("[]") == "0")
        #expect(try sum("[[1,2],[3],4]") == "[8,2]")
        #expect(try sum(#"[{"a":1,"b":{"c":2}},{"a":2.5,"d":[1,2]},{"b":{"c":1}}]"#) == #"{"a":3.5,"b":{"c":3},"d":[1,2]}"#)
        let failures = [(#"["x"]"#, #""x""#), (#"[1,{"a":1}]"#, #"{"a":1}"#), (#"[{"a":"x"}]"#, #"{"a":"x"}"#),
                        ("[true]", "true"), ("[[1,null]]", "[1,null]")]
        for (bad, culprit) in failures {
            let reduction = try #require(JSON.tryParse(try sum(bad)))
            #expect(reduction["error"] == "builtin_reduce_error" && reduction["caused_by"]?.compactString == culprit, "\(bad)")
            #expect(reduction["reason"]?.stringValue?.hasPrefix("The _sum function requires that map values be numbers") == true)
            #expect(try BuiltinReduce.sum.rereduce([3, reduction, 4]) == reduction)
        }
    }
}
