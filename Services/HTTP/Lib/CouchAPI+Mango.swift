internal import SofaQL
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
        try Self.checkFindOptions(body)
        let find = try Mango.find(body)
        let started = ContinuousClock.now
        let executionStats = body["execution_stats"]?.boolValue == true
        let choice = try MangoIndexChoice.choose(find, useIndex: body["use_index"], indexes: try await mangoIndexes(database))
        // A partial index answers for the documents its selector takes: so does the find it serves.
        let query = try Mango.query(find, alsoMatching: choice.index?["def"]?["partial_filter_selector"])
        if explain {
            let plan = try await database.explain(json: query)
            let descending = find.sort.first?.descending ?? false
            let fields: JSON = find.fields.map { .array($0.map { .string($0) }) } ?? "all_fields"
            return Self.json([
                "dbname": .string(database.name), "index": choice.index ?? Self.allDocsIndex, "selector": find.selector,
                "opts": ["use_index": body["use_index"].map { $0.arrayValue != nil ? $0 : [$0] } ?? [], "bookmark": "nil",
                         "limit": .int(Int64(find.limit)), "skip": .int(Int64(find.skip)), "sort": [:], "fields": fields, "r": [49],
                         "conflicts": false],
                "limit": .int(Int64(find.limit)), "skip": .int(Int64(find.skip)), "fields": fields,
                "mrargs": ["include_docs": true, "view_type": "map", "reduce": false, "partition": .null, "start_key": [],
                           "end_key": ["<MAX>"], "direction": descending ? "rev" : "fwd", "stable": false, "update": true,
                           "conflicts": "undefined", "skip": .int(Int64(find.skip)), "limit": .int(Int64(find.limit)), "sorted": true],
                "covering": false,
                "sofa_query": query, "sofa_plan": .string(plan),
            ])
        }
        // Streamed a page of rows at a time: memory stays bounded however many documents match.
        // The first page is read before the answer starts, so a query that fails is a clear error.
        var pages = database.queryPages(json: query, pageRows: Self.findPageRows).makeAsyncIterator()
        let first = try await pages.next()
        let fields = find.fields, skip = find.skip, warnings = choice.warnings
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
            var tail = Array("],\"bookmark\":".utf8) + bookmark
            if !warnings.isEmpty { tail += Array(",\"warning\":".utf8) + JSON.string(warnings.joined(separator: "\n")).compactBytes() }
            if executionStats {
                // What Sofa can tell: the documents it read are the ones it returned.
                let elapsed = ContinuousClock.now - started
                let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
                tail += Array(",\"execution_stats\":".utf8) + JSON.object([
                    "total_keys_examined": 0, "total_docs_examined": .int(Int64(sent)), "total_quorum_docs_examined": 0,
                    "results_returned": .int(Int64(sent)), "execution_time_ms": .double(max(ms, 0.001)),
                ]).compactBytes()
            }
            try await writer.write(ByteBuffer(bytes: tail + Array("}\n".utf8)))
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "application/json"], body: streamed)
    }

    /// Rows of a `_find` read from the query workers at once.
    static let findPageRows = 500

    /// The options of a find CouchDB checks before Sofa reads it: `r` an integer, `conflicts` a
    /// boolean, and a bookmark of Sofa's making (CouchDB's words for one that is not).
    static func checkFindOptions(_ body: JSONObject) throws {
        if let r = body["r"], (r.intValue ?? 0) < 1 { throw CouchError(.badRequest, "bad_request", "`r` must be a positive integer") }
        if let conflicts = body["conflicts"], conflicts.boolValue == nil {
            throw CouchError(.badRequest, "bad_request", "`conflicts` must be a boolean")
        }
        if let bookmark = body["bookmark"] {
            let text = bookmark.stringValue ?? ""
            let readable = text.isEmpty || text == "nil" || (text.hasPrefix("o-") && Int(text.dropFirst(2)).map { $0 >= 0 } == true)
            guard bookmark.stringValue != nil, readable else {
                throw CouchError(.badRequest, "invalid_bookmark", "Invalid bookmark value: \(bookmark.compactString)")
            }
        }
    }

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
                default: if index + 2 < row.count, let value = row[index + 2] { set(&doc, path: Self.steps(of: field), value) }
                }
            }
            return .object(doc)
        }
        var doc = JSONObject([("_id", .string(id)), ("_rev", .string(rev))])
        for (key, value) in row.count > 2 ? row[2]?.objectValue ?? [:] : [:] { doc[key] = value }
        return .object(doc)
    }

    /// A Mango field name's steps: split at its dots, but not at escaped ones (`dot\.key`).
    static func steps(of field: String) -> [String] {
        var steps: [String] = [], step = ""
        var escaped = false
        for character in field {
            if escaped {
                step.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "." {
                steps.append(step)
                step = ""
            } else {
                step.append(character)
            }
        }
        return steps + [step]
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

    static let allDocsIndex: JSON = ["ddoc": .null, "name": "_all_docs", "type": "special", "def": ["fields": [["_id": "asc"]]],
                                     "build_status": "ready"]

    func index(_ call: inout CouchCall, _ database: Database) async throws -> Response {
        switch call.method {
        case .get:
            guard call.segments.count == 2 else {
                throw CouchError(.methodNotAllowed, "method_not_allowed", "Only DELETE allowed")
            }
            let skip = try Self.listingCount(call, "skip") ?? 0
            let limit = try Self.listingCount(call, "limit", positive: true)
            let indexes = [Self.allDocsIndex] + (try await mangoIndexes(database))
            let listed = Array(indexes.dropFirst(skip).prefix(limit ?? Int.max))
            return Self.json(["total_rows": .int(Int64(indexes.count)), "indexes": .array(listed)])
        case .post where call.segments.count == 3 && call.segments[2] == "_bulk_delete":
            return try await bulkDeleteIndexes(&call, database)
        case .post:
            guard call.segments.count == 2 else {
                throw CouchError(.methodNotAllowed, "method_not_allowed", "Only DELETE allowed")
            }
            let body = try await call.objectBody(limit: 1 << 20)
            let spec = try Self.mangoIndexSpec(body)
            let existing = try await database.indexes().contains { $0.name == spec.sofaName }
            if !existing {
                if let partial = spec.partialSelector { _ = try Mango.condition(partial, at: nil) }  // refused before anything is made
                // (A selector left by an index of that name deleted another way goes.)
                try await Self.savePartialSelector(spec.partialSelector, of: spec.sofaName, in: database)
                try await database.createIndex(spec.sofaName, kind: .value, expressions: spec.fields.map { .array([.string("." + $0)]) })
            }
            return Self.json(["result": existing ? "exists" : "created", "id": .string("_design/" + spec.ddoc), "name": .string(spec.name)])
        case .delete:
            // /db/_index/{ddoc}/{type}/{name}, the ddoc with or without its `_design/`.
            var segments = Array(call.segments.dropFirst(2))
            // (`_design%2Fname`, as a client that encodes the ID sends it, is one segment.)
            if segments.first == "_design" { segments.removeFirst() }
            guard segments.count == 3, segments[1] == "json" else { throw CouchError(.notFound, "not_found", "Index not found") }
            let ddoc = segments[0].hasPrefix("_design/") ? segments[0] : "_design/" + segments[0]
            guard let name = try await mangoIndexEntries(database).first(where: {
                $0.entry["ddoc"]?.stringValue == ddoc && $0.entry["name"]?.stringValue == segments[2]
            })?.sofaName else { throw CouchError(.notFound, "not_found", "Index not found") }
            try await database.deleteIndex(name)
            try await Self.savePartialSelector(nil, of: name, in: database)
            return Self.json(Self.ok)
        default:
            throw CouchError(.methodNotAllowed, "method_not_allowed", "Only GET,POST,DELETE allowed")
        }
    }

    /// `POST _index/_bulk_delete` with `{"docids": [design document IDs]}`: every index of each
    /// design document deleted; `{"success": [{"id", "ok"}], "fail": [{"id", "error"}]}`.
    func bulkDeleteIndexes(_ call: inout CouchCall, _ database: Database) async throws -> Response {
        guard let ids = try await call.objectBody(limit: 1 << 20)["docids"]?.arrayValue?.compactMap(\.stringValue) else {
            throw CouchError(.badRequest, "bad_request", "`docids` must be a list of design document IDs")
        }
        let listed = try await mangoIndexEntries(database)
        var success: [JSON] = [], fail: [JSON] = []
        for id in ids {
            let ddoc = id.hasPrefix("_design/") ? id : "_design/" + id
            let sofaNames = listed.filter { $0.entry["ddoc"]?.stringValue == ddoc }.map(\.sofaName)
            guard !sofaNames.isEmpty else {
                fail.append(["id": .string(id), "error": "not_found"])
                continue
            }
            for sofaName in sofaNames {
                try await database.deleteIndex(sofaName)
                try await Self.savePartialSelector(nil, of: sofaName, in: database)
            }
            success.append(["id": .string(id), "ok": true])
        }
        return Self.json(["success": .array(success), "fail": .array(fail)])
    }

    /// A Mango index asked for: its fields, name and design document (without `_design/`), and
    /// the name of the Sofa index that serves it.
    struct MangoIndexSpec {
        var fields: [String]
        var name: String
        var ddoc: String
        /// `partial_filter_selector`: the documents the index is for.
        var partialSelector: JSON?
        var sofaName: String { CouchAPI.sofaIndexName(ddoc: ddoc, name: name) }
    }

    /// The Sofa index of design document `ddoc`'s index `name`: the name alone when the design
    /// document is named after it (Mango's default), else both, joined by `%`.
    static func sofaIndexName(ddoc: String, name: String) -> String { ddoc == name ? name : ddoc + "%" + name }

    /// A `POST _index` body read and checked as CouchDB checks it (400 for anything else).
    static func mangoIndexSpec(_ body: JSONObject) throws -> MangoIndexSpec {
        func refuse(_ reason: String) -> CouchError { CouchError(.badRequest, "bad_request", reason) }
        guard let fields = body["index"]?["fields"]?.arrayValue, !fields.isEmpty else { throw refuse("index.fields must be a non-empty list") }
        if body["index"]?["selector"] != nil { throw refuse("`selector` is not a valid field of an index; use `partial_filter_selector`") }
        var names: [String] = [], directions: Set<String> = []
        for field in fields {
            if let name = field.stringValue, !name.isEmpty {
                names.append(name)
                directions.insert("asc")
            } else if let object = field.objectValue, object.count == 1, let direction = object.values[0].stringValue,
                      ["asc", "desc"].contains(direction), !object.keys[0].isEmpty {
                names.append(object.keys[0])
                directions.insert(direction)
            } else {
                throw refuse("Invalid sort field: \(field.compactString)")
            }
        }
        guard directions.count == 1 else { throw refuse("Sorts currently only support a single direction for all fields.") }
        if let type = body["type"] {
            guard type.stringValue == "json" else { throw refuse("Invalid index type: \(type.compactString); Sofa's Mango indexes are of type json") }
        }
        if let name = body["name"], name.stringValue?.isEmpty ?? true { throw refuse("Invalid index name: \(name.compactString)") }
        if let ddoc = body["ddoc"], ddoc.stringValue.map({ $0.isEmpty || $0 == "_design/" }) ?? true {
            throw refuse("Invalid design document id: \(ddoc.compactString)")
        }
        let digest = (try? sha256(Array(names.joined(separator: ",").utf8)).hexString) ?? "index"
        let name = body["name"]?.stringValue ?? String(digest.prefix(40))
        var ddoc = body["ddoc"]?.stringValue ?? name
        if ddoc.hasPrefix("_design/") { ddoc.removeFirst("_design/".count) }
        // `%` joins the two in Sofa's index name: it cannot be part of either.
        if name.contains("%") { throw refuse("Invalid index name: \(JSON.string(name).compactString): `%` is not allowed") }
        if ddoc.contains("%") { throw refuse("Invalid design document id: \(JSON.string(ddoc).compactString): `%` is not allowed") }
        let partial = body["index"]?["partial_filter_selector"]
        if let partial, partial.objectValue == nil { throw refuse("`partial_filter_selector` must be a selector object") }
        return MangoIndexSpec(fields: names, name: name, ddoc: ddoc, partialSelector: partial)
    }

    /// `skip` or `limit` of the index listing: a non-negative (positive, for `limit`) integer.
    static func listingCount(_ call: CouchCall, _ name: String, positive: Bool = false) throws -> Int? {
        guard let text = call.query[name] else { return nil }
        guard let value = Int(text), value >= (positive ? 1 : 0) else {
            throw CouchError(.badRequest, "query_parse_error", "Invalid value for \(positive ? "positive " : "")integer: \"\(text)\"")
        }
        return value
    }

    /// Where the partial selector of Sofa index `name` is kept: a local document (not replicated,
    /// as an index is not).
    static func partialSelectorID(_ name: String) -> String { "_local/sofa-mango-partial:" + name }

    /// Keeps (or, nil, forgets) the partial selector of Sofa index `name`.
    static func savePartialSelector(_ selector: JSON?, of name: String, in database: Database) async throws {
        let id = partialSelectorID(name)
        let current = try? await database.getLocal(id: id)
        if let selector {
            _ = try await database.putLocal(id: id, json: JSON.object(["partial_filter_selector": selector]).compactString, rev: current?.rev)
        } else if let current {
            _ = try await database.deleteLocal(id: id, rev: current.rev)
        }
    }

    /// The database's value indexes in Mango's listing shape.
    func mangoIndexes(_ database: Database) async throws -> [JSON] {
        try await mangoIndexEntries(database).map(\.entry)
    }

    /// The same, each with the name of the Sofa index it is.
    func mangoIndexEntries(_ database: Database) async throws -> [(sofaName: String, entry: JSON)] {
        let indexes = try await database.indexes().filter { $0.kind == 0 }
        // The partial selectors, all in one read of their local documents (none without an index:
        // a find on a database without one costs one call here).
        let prefix = Self.partialSelectorID("")
        var partials: [String: JSON] = [:]
        let kept = indexes.isEmpty ? [] : try await database.allDocs(AllDocsQuery(includeBodies: true, startKey: prefix,
                                                                                 endKey: prefix + "\u{10FFFF}"))
        for document in kept {
            partials[String(document.id.dropFirst(prefix.count))] = (try? document.json())?["partial_filter_selector"]
        }
        return indexes.map { index -> (sofaName: String, entry: JSON) in
            let fields = (index.descriptor["expressions"]?.arrayValue ?? []).map { expression -> JSON in
                let path = expression.arrayValue?.first?.stringValue ?? ""
                return .object(JSONObject([(String(path.drop { $0 == "." }), "asc")]))
            }
            let parts = index.name.split(separator: "%", maxSplits: 1).map(String.init)
            let (ddoc, name) = parts.count == 2 ? (parts[0], parts[1]) : (index.name, index.name)
            var def: JSONObject = ["fields": .array(fields)]
            if let partial = partials[index.name] { def["partial_filter_selector"] = partial }
            let entry: JSON = ["ddoc": .string("_design/" + ddoc), "name": .string(name), "type": "json", "def": .object(def),
                               "build_status": "ready"]
            return (index.name, entry)
        }
    }
}
