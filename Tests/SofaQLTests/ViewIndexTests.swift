import Dispatch
import Foundation
import SofaCore
import Testing
@testable import SofaQL

/// A view's persistent index: rows in CouchDB's key order, incremental updates, every query
/// option, and reductions with group levels.
@Suite struct ViewIndexTests {
    /// Runs `body` with a view index in a temporary file, on the connection's queue.
    func withIndex<T>(signature: String = "v1", file: URL? = nil,
                      _ body: (ViewIndex) throws -> T) throws -> T {
        let path = file ?? FileManager.default.temporaryDirectory.appendingPathComponent("view-\(UUID().uuidString).sqlite3")
        defer { if file == nil { try? FileManager.default.removeItem(at: path) } }
        let queue = DispatchQueue(label: "view-index-test")
        return try queue.sync {
            let connection = try SQLiteConnection(path: path.path, queue: queue, options: .scratch)
            return try body(try ViewIndex(connection: connection, name: "app/by_key", signature: signature))
        }
    }

    static let mixed: [JSON] = [nil, false, true, 1, 2.5, "a", "A", "b", ["a"], ["a", 1], ["b"], ["x": 1]]

    /// Raw collation's keys: Erlang's order of terms, strings by their bytes (a NUL inside one
    /// included), a prefix before what extends it.
    @Test func rawSortKeysOrderAsErlangOrdersTerms() throws {
        let ordered: [JSON] = [-1.5, 2, false, .null, true, ["a": 1], ["b": 2], ["b": 2, "a": 1], [], ["b"], ["b", "c"],
                               "", "A", "a", "a\u{0}", "a\u{0}b", "a\u{1}", "ab", "é"]
        for (lower, higher) in zip(ordered, ordered.dropFirst()) {
            #expect(ViewSortKey.raw(lower).lexicographicallyPrecedes(ViewSortKey.raw(higher)), "\(lower) < \(higher)")
            #expect(ViewCollation.compare(lower, higher, raw: true) == -1)
        }
        #expect(ViewCollation.compare(1, 1.0, raw: true) == 0)
    }

    @Test func rowsComeInCollationOrderWithEveryRangeOption() throws {
        try withIndex { index in
            // One document per key, IDs in reverse so that byte order of IDs cannot explain the order.
            let documents = Self.mixed.enumerated().map { offset, key in
                (id: "d\(99 - offset)", rows: [(key: key, value: JSON.int(Int64(offset)))])
            }
            try index.apply(documents, through: 12)
            guard case .rows(let total, let offset, let rows) = try index.query(ViewQueryOptions()) else { throw Failure("no rows") }
            #expect(total == 12 && offset == 0)
            #expect(rows.map(\.key) == Self.mixed)

            var options = ViewQueryOptions()
            options.startKey = "a"
            options.endKey = ["a", 1]
            guard case .rows(_, let from, let slice) = try index.query(options) else { throw Failure("no rows") }
            #expect(slice.map(\.key) == ["a", "A", "b", ["a"], ["a", 1]])
            #expect(from == 5)
            options.inclusiveEnd = false
            guard case .rows(_, _, let exclusive) = try index.query(options) else { throw Failure("no rows") }
            #expect(exclusive.last?.key == ["a"])

            var descending = ViewQueryOptions()
            descending.descending = true
            descending.startKey = "b"
            descending.limit = 3
            descending.skip = 1
            guard case .rows(_, _, let down) = try index.query(descending) else { throw Failure("no rows") }
            #expect(down.map(\.key) == ["A", "a", 2.5])

            var keys = ViewQueryOptions()
            keys.keys = [true, "b", "nope", nil]
            guard case .rows(_, _, let picked) = try index.query(keys) else { throw Failure("no rows") }
            #expect(picked.map(\.key) == [true, "b", nil])
        }
    }

    /// CouchDB's `offset` counts the rows before the first answered: with `startkey_docid`, the
    /// start key's rows of lower document IDs too (higher ones when descending).
    @Test func theOffsetCountsTheStartKeysRowsBeforeTheStartDocument() throws {
        try withIndex { index in
            let documents = ["a", "b", "c", "d"].map { (id: $0, rows: [(key: JSON.int(1), value: JSON.null)]) }
                + [(id: "z", rows: [(key: JSON.int(0), value: JSON.null)])]
            try index.apply(documents, through: 5)
            for (descending, startID, offset, first) in [(false, "c", 3, "c"), (false, "a", 1, "a"), (true, "b", 2, "b"),
                                                         (true, "d", 0, "d")] {
                var options = ViewQueryOptions()
                (options.startKey, options.startKeyDocID, options.descending) = (1, startID, descending)
                guard case .rows(_, let from, let rows) = try index.query(options) else { throw Failure("no rows") }
                #expect(from == offset, "descending: \(descending), startkey_docid: \(startID)")
                #expect(rows.first?.id == first)
            }
        }
    }

    @Test func updatesReplaceADocumentsRowsAndTheLastSequenceIsKept() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("view-\(UUID().uuidString).sqlite3")
        defer { try? FileManager.default.removeItem(at: file) }
        try withIndex(file: file) { (index) throws -> Void in
            try index.apply([("a", [("x", 1), ("y", 2)]), ("b", [("x", 3)])], through: 2)
            try index.apply([("a", [("z", 9)]), ("b", [])], through: 4)  // a changed, b deleted
            guard case .rows(let total, _, let rows) = try index.query(ViewQueryOptions()) else { throw Failure("no rows") }
            #expect(total == 1 && rows == [ViewRow(id: "a", key: "z", value: 9)])
        }
        // Reopened with the same code: where it was. With new code: empty, from sequence 0.
        try withIndex(file: file) { (index) throws -> Void in
            #expect(index.lastSequence == 4)
            #expect(try index.count() == 1)
        }
        try withIndex(signature: "v2", file: file) { (index) throws -> Void in
            #expect(index.lastSequence == 0)
            #expect(try index.count() == 0)
        }
    }

    @Test func reductionsByGroupLevel() throws {
        try withIndex { index in
            // Ages by [year, month] of birth.
            let people: [(String, JSON, Int64)] = [("p1", [1990, 1], 30), ("p2", [1990, 1], 40), ("p3", [1990, 5], 20),
                                                   ("p4", [1991, 2], 50), ("p5", [1992, 7], 10)]
            try index.apply(people.map { (id: $0.0, rows: [(key: $0.1, value: JSON.int($0.2))]) }, through: 5)
            let reduce = ViewReducer(.stats)
            let whole = try index.query(ViewQueryOptions(), reduce: reduce)
            #expect(whole == .reduced([ViewGroup(key: nil, value: ["sum": 150, "count": 5, "min": 10, "max": 50, "sumsqr": 5500])]),
                    "\(whole)")
            var byYear = ViewQueryOptions()
            byYear.groupLevel = 1
            guard case .reduced(let years) = try index.query(byYear, reduce: reduce) else { throw Failure("not reduced") }
            #expect(years.map(\.key) == [[1990], [1991], [1992]])
            #expect(years.map { $0.value["count"] } == [3, 1, 1])
            var exact = ViewQueryOptions()
            exact.group = true
            exact.startKey = [1990, 1]
            exact.endKey = [1990, 12]
            guard case .reduced(let months) = try index.query(exact, reduce: reduce) else { throw Failure("not reduced") }
            #expect(months.map(\.key) == [[1990, 1], [1990, 5]])
            #expect(months.map { $0.value["sum"] } == [70, 20])
            var plain = ViewQueryOptions()
            plain.reduce = false
            plain.limit = 2
            guard case .rows(_, _, let rows) = try index.query(plain, reduce: reduce) else { throw Failure("not rows") }
            #expect(rows.map(\.id) == ["p1", "p2"])
        }
    }

    @Test func theWholeReductionIsKeptPerBucketAndFollowsChanges() throws {
        try withIndex { index in
            // 3,000 rows: three buckets of rowids.
            var values = (0..<3000).map { Int64($0 % 7) }
            try index.apply(values.enumerated().map { (id: String(format: "d%05d", $0.offset), rows: [(key: JSON.int(Int64($0.offset)), value: JSON.int($0.element))]) },
                            through: 3000)
            var reads = 0
            let counted = ViewReducer(reduce: { (keys, rows) throws(SofaError) -> JSON in
                reads += rows.count
                return try BuiltinReduce.sum.reduce(keys: keys, values: rows)
            }, rereduce: { (reductions) throws(SofaError) -> JSON in try BuiltinReduce.sum.rereduce(reductions) })
            func whole() throws -> JSON {
                guard case .reduced(let groups) = try index.query(ViewQueryOptions(), reduce: counted), let value = groups.first?.value else {
                    throw Failure("not reduced")
                }
                return value
            }
            #expect(try whole() == .int(values.reduce(0, +)))
            #expect(reads == 3000)
            // Asked again: every bucket's reduction is stored; no row is read.
            reads = 0
            #expect(try whole() == .int(values.reduce(0, +)))
            #expect(reads == 0)
            // One document changes: only its old and new rows' buckets are read again.
            values[5] = 100
            try index.apply([(id: "d00005", rows: [(key: 5, value: 100)])], through: 3001)
            reads = 0
            #expect(try whole() == .int(values.reduce(0, +)))
            #expect(reads > 0 && reads <= 2048)
            // A deleted document's rows leave the reduction too.
            try index.apply([(id: "d02999", rows: [])], through: 3002)
            #expect(try whole() == .int(values.dropLast().reduce(0, +)))
        }
    }

    @Test func sortKeysOrderAsTheCollation() {
        let values: [JSON] = [nil, false, true, -1e300, -2, -0.5, 0, 0.5, 1, 3, 1e300, "", " ", "a", "A", "á", "Á", "aa", "ab", "a b",
                              "b", "B", "é", "f", "z", "Z", "ü", "日本", [], [nil], [1], [1, 2], [1, "a"], ["a"], [["a"]], [:],
                              ["a": 1], ["a": 1, "b": 2], ["a": 2], ["b": 1]]
        for a in values {
            for b in values {
                let bytes = ViewSortKey.of(a).lexicographicallyPrecedes(ViewSortKey.of(b)) ? -1 : (ViewSortKey.of(a) == ViewSortKey.of(b) ? 0 : 1)
                #expect(bytes == ViewCollation.compare(a, b), "\(a.compactString) vs \(b.compactString)")
            }
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
