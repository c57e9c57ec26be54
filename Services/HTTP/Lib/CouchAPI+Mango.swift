internal import Hummingbird
internal import HTTPTypes
internal import SofaClient
internal import SofaCore
internal import SofaFiles
internal import SofaWire

// Mango: `_find`, `_explain` and `_index`, on Sofa's JSON queries and value indexes.

extension CouchAPI {
    func find(_ call: inout CouchCall, _ database: Database, explain: Bool) async throws -> Response {
        try Self.requireMethod(call, .post)
        let body = try await call.objectBody(limit: limits.maxRequestBytes)
        let find = try Mango.find(body)
        let query = try Mango.query(find)
        if explain {
            let plan = try await database.explain(json: query)
            let index = try await mangoIndexes(database).first { index in
                guard let fields = index["def"]?["fields"]?.arrayValue?.first?.objectValue?.keys.first else { return false }
                return Self.mentions(find.selector, fields)
            } ?? Self.allDocsIndex
            return Self.json([
                "dbname": .string(database.name), "index": index, "selector": find.selector,
                "opts": ["use_index": [], "bookmark": "nil", "limit": .int(Int64(find.limit)), "skip": .int(Int64(find.skip)),
                         "sort": [:], "fields": find.fields.map { .array($0.map { .string($0) }) } ?? "all_fields", "r": [49],
                         "conflicts": false],
                "limit": .int(Int64(find.limit)), "skip": .int(Int64(find.skip)),
                "fields": find.fields.map { .array($0.map { .string($0) }) } ?? "all_fields",
                "sofa_query": query, "sofa_plan": .string(plan),
            ])
        }
        // Streamed a page of rows at a time: memory stays bounded however many documents match.
        // The first page is read before the answer starts, so a query that fails is a clear error.
        var pages = database.queryPages(json: query, pageRows: Self.findPageRows).makeAsyncIterator()
        let first = try await pages.next()
        let fields = find.fields, skip = find.skip
        let streamed = ResponseBody { [pages] writer in
            var pages = pages
            var sent = 0
            try await writer.write(ByteBuffer(bytes: Array("{\"docs\":[".utf8)))
            var page = first
            while let current = page {
                var chunk: [UInt8] = []
                for row in current.rows {
                    guard let doc = Self.foundDocument(row, fields: fields) else { continue }
                    if sent > 0 { chunk.append(UInt8(ascii: ",")) }
                    chunk += doc.compactBytes()
                    sent += 1
                }
                if !chunk.isEmpty { try await writer.write(ByteBuffer(bytes: chunk)) }
                page = try await pages.next()
            }
            let bookmark = JSON.string(Mango.bookmark(after: skip + sent)).compactBytes()
            try await writer.write(ByteBuffer(bytes: Array("],\"bookmark\":".utf8) + bookmark + Array("}\n".utf8)))
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "application/json"], body: streamed)
    }

    /// Rows of a `_find` read from the query workers at once.
    static let findPageRows = 500

    /// One row of a `_find` query (`_id`, `_rev`, then the fields or the whole document) as the
    /// document it answers.
    static func foundDocument(_ row: [JSON?], fields: [String]?) -> JSON? {
        guard row.count >= 2, let id = row[0]?.stringValue, let rev = row[1]?.stringValue else { return nil }
        if let fields {
            var doc = JSONObject()
            for (index, field) in fields.enumerated() {
                switch field {
                case "_id": doc["_id"] = .string(id)
                case "_rev": doc["_rev"] = .string(rev)
                default: if index + 2 < row.count, let value = row[index + 2] { set(&doc, path: field.split(separator: ".").map(String.init), value) }
                }
            }
            return .object(doc)
        }
        var doc = JSONObject([("_id", .string(id)), ("_rev", .string(rev))])
        for (key, value) in row.count > 2 ? row[2]?.objectValue ?? [:] : [:] { doc[key] = value }
        return .object(doc)
    }

    /// `value` at `path` inside `object`, making the objects on the way.
    static func set(_ object: inout JSONObject, path: [String], _ value: JSON) {
        guard let first = path.first else { return }
        if path.count == 1 {
            object[first] = value
            return
        }
        var inner = object[first]?.objectValue ?? [:]
        set(&inner, path: Array(path.dropFirst()), value)
        object[first] = .object(inner)
    }

    /// Whether a selector names `field` (at its top level or in a combination).
    static func mentions(_ selector: JSON, _ field: String) -> Bool {
        if let object = selector.objectValue {
            return object.contains { $0.key == field || mentions($0.value, field) }
        }
        return selector.arrayValue?.contains { mentions($0, field) } ?? false
    }

    static let allDocsIndex: JSON = ["ddoc": .null, "name": "_all_docs", "type": "special", "def": ["fields": [["_id": "asc"]]]]

    func index(_ call: inout CouchCall, _ database: Database) async throws -> Response {
        switch call.method {
        case .get:
            let indexes = [Self.allDocsIndex] + (try await mangoIndexes(database))
            return Self.json(["total_rows": .int(Int64(indexes.count)), "indexes": .array(indexes)])
        case .post:
            let body = try await call.objectBody(limit: 1 << 20)
            guard let fields = body["index"]?["fields"]?.arrayValue, !fields.isEmpty else {
                throw CouchError(.badRequest, "bad_request", "index.fields must be a non-empty list")
            }
            var names: [String] = []
            for field in fields {
                if let name = field.stringValue { names.append(name) } else if let name = field.objectValue?.keys.first { names.append(name) }
            }
            guard names.count == fields.count else { throw CouchError(.badRequest, "bad_request", "invalid index field") }
            if let type = body["type"]?.stringValue, type != "json" {
                throw CouchError(.badRequest, "bad_request", "Sofa's Mango indexes are of type json")
            }
            let digest = (try? sha256(Array(names.joined(separator: ",").utf8)).hexString) ?? "index"
            let name = body["name"]?.stringValue ?? String(digest.prefix(40))
            let existing = try await database.indexes().contains { $0.name == name }
            if !existing {
                try await database.createIndex(name, kind: .value, expressions: names.map { .array([.string("." + $0)]) })
            }
            let ddoc = body["ddoc"]?.stringValue.map { $0.hasPrefix("_design/") ? $0 : "_design/" + $0 } ?? "_design/" + name
            return Self.json(["result": existing ? "exists" : "created", "id": .string(ddoc), "name": .string(name)])
        case .delete:
            guard call.segments.count >= 4, let name = call.segments.last else {
                throw CouchError(.notFound, "not_found", "Index not found")
            }
            try await database.deleteIndex(name)
            return Self.json(Self.ok)
        default:
            throw CouchError(.methodNotAllowed, "method_not_allowed", "Only GET,POST,DELETE allowed")
        }
    }

    /// The database's value indexes in Mango's listing shape.
    func mangoIndexes(_ database: Database) async throws -> [JSON] {
        try await database.indexes().filter { $0.kind == 0 }.map { index -> JSON in
            let fields = (index.descriptor["expressions"]?.arrayValue ?? []).map { expression -> JSON in
                let path = expression.arrayValue?.first?.stringValue ?? ""
                return .object(JSONObject([(String(path.drop { $0 == "." }), "asc")]))
            }
            return ["ddoc": .string("_design/" + index.name), "name": .string(index.name), "type": "json",
                    "def": ["fields": .array(fields)]]
        }
    }
}
