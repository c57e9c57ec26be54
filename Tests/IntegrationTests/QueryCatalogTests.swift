import Foundation
import SofaClient
import Testing

/// Every case of `QueryCatalog/catalog.json` through the SDK against a real cluster: SQL++ and
/// JSON-schema queries over LiteCore's own test datasets, with the columns and rows LiteCore
/// returns for them. The expected results were derived independently of Sofa, by evaluating each
/// query's meaning in Python (`QueryCatalog/derive.py`, which also lists the LiteCore facts it
/// relies on). Regenerate with `python3 Tests/IntegrationTests/QueryCatalog/derive.py`.
@Suite(.serialized) struct QueryCatalogTests {
    @Test func everyCaseReturnsLiteCoresRows() async throws {
        let catalog = try QueryCatalog.load()
        try #require(!catalog.cases.isEmpty)
        try await Cluster.with(clientTimeout: .seconds(60)) { cluster in
            var databases: [String: Database] = [:]
            for dataset in catalog.datasets {
                databases[dataset] = try await QueryCatalog.importDataset(dataset, client: cluster.client)
            }
            // Cases without an index first, so that none of them runs over an index made for another.
            for entry in catalog.cases where entry.index == nil {
                let db = try #require(databases[entry.dataset])
                await Self.check(entry, on: db)
            }
            // The others run without their index, then with it: the rows must not change.
            // (MATCH needs its full-text index, so those run with it only.)
            var created = Set<String>()
            for entry in catalog.cases {
                guard let index = entry.index else { continue }
                let db = try #require(databases[entry.dataset])
                if index.kindName != "fts" {
                    await Self.check(entry, on: db, note: "before creating index \(index.name)")
                }
                if created.insert("\(entry.dataset)/\(index.name)").inserted {
                    try await db.createIndex(index.name, kind: try index.kind, expressions: index.expressions)
                }
                await Self.check(entry, on: db, note: "with index \(index.name)")
            }
        }
    }

    /// Runs one case and records an issue with the case name, the query and a diff on any mismatch.
    static func check(_ entry: QueryCase, on db: Database, note: String = "") async {
        let label = note.isEmpty ? entry.name : "\(entry.name) (\(note))"
        let result: QueryResult
        do {
            switch entry.query {
            case .n1ql(let text): result = try await db.query(n1ql: text, parameters: entry.parameters)
            case .json(let tree): result = try await db.query(json: tree, parameters: entry.parameters)
            }
        } catch {
            Issue.record("\(label): query failed: \(error)\n\(entry.description)")
            return
        }
        if result.columns != entry.columns {
            Issue.record("\(label): columns \(result.columns), expected \(entry.columns)\n\(entry.description)")
        }
        if let diff = RowDiff(expected: entry.rows, actual: result.rows, ordered: entry.ordered) {
            let how = entry.ordered ? "in order" : "as multisets"
            Issue.record("\(label): rows differ (\(how))\n\(entry.description)\n\(diff)")
        }
    }
}

/// One catalog case.
struct QueryCase: Sendable, CustomStringConvertible {
    enum Query: Sendable {
        case n1ql(String)
        case json(JSON)
    }

    var name: String
    var dataset: String
    var query: Query
    var parameters: JSONObject
    var ordered: Bool
    var columns: [String]
    var rows: [[JSON?]]
    var index: IndexRequirement?

    var description: String {
        let text: String
        switch query {
        case .n1ql(let n1ql): text = "n1ql: \(n1ql)"
        case .json(let tree): text = "json: \(tree.compactString)"
        }
        return parameters.isEmpty ? text : "\(text)\nparameters: \(JSON.object(parameters).compactString)"
    }
}

/// The index a case needs: the rows are the same with and without it, except that a full-text
/// MATCH cannot run without its index.
struct IndexRequirement: Sendable {
    var name: String
    var kindName: String
    var expressions: [JSON]
    var language: String?
    var unnestPath: String?

    /// The SDK's kind. An array index's unnest path ("contacts", "contacts[].phones") comes
    /// separately from its expressions, as LiteCore's C4IndexOptions.unnestPath does.
    var kind: IndexKind {
        get throws {
            switch kindName {
            case "value": return .value
            case "fts": return .fullText(language: language)
            case "array":
                guard let unnestPath else { throw SofaError(.badJSON, "index \(name): array without unnestPath") }
                return .array(path: unnestPath)
            default: throw SofaError(.badJSON, "index \(name): unknown kind '\(kindName)'")
            }
        }
    }
}

/// The parsed catalog and the dataset import.
enum QueryCatalog {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("QueryCatalog/catalog.json")

    struct Loaded {
        var cases: [QueryCase]
        var datasets: [String] { Array(Set(cases.map(\.dataset))).sorted() }
    }

    static func load() throws -> Loaded {
        let bytes = try Data(contentsOf: file)
        guard let entries = try JSON.parse(bytes).arrayValue else { throw malformed("the top level is not an array") }
        return Loaded(cases: try entries.map(parseCase))
    }

    private static func parseCase(_ value: JSON) throws -> QueryCase {
        guard let entry = value.objectValue, let name = entry["name"]?.stringValue,
              let dataset = entry["dataset"]?.stringValue, let expected = entry["expected"]?.objectValue,
              let columns = expected["columns"]?.arrayValue?.compactMap(\.stringValue),
              let rows = expected["rows"]?.arrayValue else {
            throw malformed("a case lacks name, dataset or expected columns/rows: \(value.compactString)")
        }
        let query: QueryCase.Query
        if let text = entry["n1ql"]?.stringValue {
            query = .n1ql(text)
        } else if let tree = entry["json"] {
            query = .json(tree)
        } else {
            throw malformed("\(name): neither n1ql nor json")
        }
        let missing: JSON = ["$missing": true]
        let expectedRows: [[JSON?]] = try rows.map { row -> [JSON?] in
            guard let cells = row.arrayValue, cells.count == columns.count else {
                throw malformed("\(name): row \(row.compactString) does not have \(columns.count) cells")
            }
            return cells.map { cell -> JSON? in cell == missing ? .none : .some(cell) }  // (`nil` alone would be JSON.null)
        }
        var index: IndexRequirement?
        if let spec = entry["needs_index"]?.objectValue {
            guard let indexName = spec["name"]?.stringValue, let kind = spec["kind"]?.stringValue,
                  let expressions = spec["expressions"]?.arrayValue else {
                throw malformed("\(name): needs_index lacks name, kind or expressions")
            }
            index = IndexRequirement(name: indexName, kindName: kind, expressions: expressions,
                                     language: spec["language"]?.stringValue,
                                     unnestPath: spec["unnestPath"]?.stringValue)
        }
        return QueryCase(name: name, dataset: dataset, query: query,
                         parameters: entry["params"]?.objectValue ?? JSONObject(),
                         ordered: entry["ordered"]?.boolValue ?? false,
                         columns: columns, rows: expectedRows, index: index)
    }

    private static func malformed(_ what: String) -> SofaError {
        SofaError(.badJSON, "QueryCatalog/catalog.json: \(what)")
    }

    /// Creates database `qc-<dataset>` and writes the dataset into its default collection with
    /// LiteCore's test IDs: "0000001"... by 1-based line number (JSON lines) or array position.
    static func importDataset(_ dataset: String, client: SofaClient) async throws -> Database {
        let bytes = try Data(contentsOf: litecoreData.appendingPathComponent("\(dataset).json"))
        let bodies: [String]
        if bytes.first(where: { !$0.isWhitespace }) == UInt8(ascii: "[") {
            guard let items = try JSON.parse(bytes).arrayValue else { throw malformed("\(dataset).json") }
            bodies = items.map(\.compactString)
        } else {
            bodies = String(decoding: bytes, as: UTF8.self).split(separator: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        let db = try await client.createDatabase("qc-\(dataset)")
        let items = bodies.enumerated().map { BulkItem.put(id: String(format: "%07d", $0.offset + 1), json: $0.element) }
        for start in stride(from: 0, to: items.count, by: 50) {
            let results = try await db.bulk(Array(items[start..<min(start + 50, items.count)]))
            if let failed = results.first(where: { $0.error != nil }) {
                throw SofaError(.badJSON, "importing \(dataset): \(failed.id): \(String(describing: failed.error))")
            }
        }
        return db
    }
}

private extension UInt8 {
    var isWhitespace: Bool { self == 0x20 || self == 0x0A || self == 0x0D || self == 0x09 }
}

/// The difference between expected and actual rows, or nil when they match. Numbers compare by
/// value (an integral double equals the integer; doubles within a relative 1e-9), objects
/// regardless of key order, MISSING (nil) only with MISSING.
struct RowDiff: CustomStringConvertible {
    var lines: [String]

    init?(expected: [[JSON?]], actual: [[JSON?]], ordered: Bool) {
        if ordered {
            var lines: [String] = []
            if expected.count != actual.count { lines.append("expected \(expected.count) rows, got \(actual.count)") }
            for i in 0..<max(expected.count, actual.count) {
                let e = i < expected.count ? expected[i] : nil
                let a = i < actual.count ? actual[i] : nil
                if let e, let a, Self.same(e, a) { continue }
                lines.append("row \(i): expected \(e.map(Self.text) ?? "(none)")")
                lines.append("row \(i):   actual \(a.map(Self.text) ?? "(none)")")
            }
            if lines.isEmpty { return nil }
            self.lines = lines
        } else {
            var remaining = actual.sorted { Self.key($0) < Self.key($1) }
            var missing: [[JSON?]] = []
            for row in expected.sorted(by: { Self.key($0) < Self.key($1) }) {
                if let i = remaining.firstIndex(where: { Self.same(row, $0) }) {
                    remaining.remove(at: i)
                } else {
                    missing.append(row)
                }
            }
            if missing.isEmpty && remaining.isEmpty { return nil }
            self.lines = ["expected \(expected.count) rows, got \(actual.count)"]
                + missing.map { "- missing    \(Self.text($0))" } + remaining.map { "+ unexpected \(Self.text($0))" }
        }
    }

    var description: String {
        (lines.prefix(40) + (lines.count > 40 ? ["… \(lines.count - 40) more lines"] : [])).joined(separator: "\n")
    }

    static func same(_ a: [JSON?], _ b: [JSON?]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
    }

    static func same(_ a: JSON?, _ b: JSON?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (.int(let x)?, .int(let y)?): return x == y
        case (.array(let x)?, .array(let y)?): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.object(let x)?, .object(let y)?):
            return x.count == y.count && x.allSatisfy { member in y[member.key].map { same(member.value, $0) } ?? false }
        case (let x?, let y?):
            if let p = x.doubleValue, let q = y.doubleValue {  // .int or .double only
                return p == q || abs(p - q) <= 1e-9 * max(1, abs(p), abs(q))
            }
            return x == y
        default: return false
        }
    }

    /// A canonical text for sorting rows: numbers by value, object keys sorted.
    static func key(_ row: [JSON?]) -> String { row.map { $0.map(canonical) ?? "MISSING" }.joined(separator: "|") }

    private static func canonical(_ value: JSON) -> String {
        switch value {
        case .int(let i): return String(i)
        case .double(let d): return d.rounded() == d && abs(d) < 0x1p53 ? String(Int64(d)) : String(format: "%.12g", d)
        case .array(let items): return "[" + items.map(canonical).joined(separator: ",") + "]"
        case .object(let object):
            return "{" + object.sorted { $0.key < $1.key }.map { "\($0.key):\(canonical($0.value))" }.joined(separator: ",") + "}"
        default: return value.compactString
        }
    }

    static func text(_ row: [JSON?]) -> String { "[" + row.map { $0?.compactString ?? "MISSING" }.joined(separator: ", ") + "]" }
}
