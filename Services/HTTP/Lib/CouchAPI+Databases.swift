internal import Hummingbird
internal import HTTPTypes
internal import SofaClient
internal import SofaCore
internal import SofaWire
internal import Foundation

// `/db` and what is under it: the database itself, its special endpoints, its documents.

extension CouchAPI {
    func databaseRoute(_ call: inout CouchCall) async throws -> Response {
        var segments = call.segments
        // `_design%2Fname` and `_local%2Fname` (the ID encoded whole) are the paths written out.
        if segments.count > 1, let slash = segments[1].firstIndex(of: "/"), ["_design", "_local"].contains(segments[1][..<slash]),
           segments[1].index(after: slash) < segments[1].endIndex {
            let whole = segments[1]
            segments = [segments[0], String(whole[..<slash]), String(whole[whole.index(after: slash)...])] + segments.dropFirst(2)
        }
        let name = segments[0]
        let database = client(call).database(name)
        guard segments.count > 1 else {
            switch call.method {
            case .put:
                _ = try await client(call).createDatabase(name)
                return Self.json(Self.ok, status: .created, headers: [.location: "/\(name)"])
            case .get, .head: return Self.json(try await databaseInfo(database))
            case .delete:
                if call.query["rev"] != nil {
                    throw CouchError(.badRequest, "bad_request", "You tried to DELETE a database with a ?=rev parameter. "
                                         + "Did you mean to DELETE a document instead?")
                }
                try await client(call).deleteDatabase(name)
                return Self.json(Self.ok)
            case .post: return try await postDocument(&call, database)
            default: throw CouchError(.methodNotAllowed, "method_not_allowed", "Only GET,HEAD,PUT,POST,DELETE allowed")
            }
        }
        switch segments[1] {
        case "_all_docs" where segments.count == 2: return try await allDocs(&call, database)
        case "_design_docs" where segments.count == 2: return try await allDocs(&call, database, idPrefix: "_design/")
        case "_local_docs" where segments.count == 2: return try await allDocs(&call, database, idPrefix: "_local/")
        case "_bulk_docs" where segments.count == 2: return try await bulkDocs(&call, database)
        case "_bulk_get" where segments.count == 2: return try await bulkGet(&call, database)
        case "_changes" where segments.count == 2: return try await changes(&call, database)
        case "_revs_diff" where segments.count == 2: return try await revsDiff(&call, database, missingRevs: false)
        case "_missing_revs" where segments.count == 2: return try await revsDiff(&call, database, missingRevs: true)
        case "_security" where segments.count == 2: return try await security(&call, database)
        case "_compact" where segments.count == 2:
            try Self.requireMethod(call, .post)
            try await database.compact()
            return Self.json(Self.ok, status: .accepted)
        case "_compact" where segments.count == 3:
            try Self.requireMethod(call, .post)
            // A design document that does not exist is 404, as CouchDB opens it first.
            _ = try await database.get(id: "_design/" + segments[2])
            try await database.compactViews(design: segments[2])
            return Self.json(Self.ok, status: .accepted)
        case "_view_cleanup" where segments.count == 2:
            try Self.requireMethod(call, .post)
            try await database.cleanupViews()
            return Self.json(Self.ok, status: .accepted)
        case "_ensure_full_commit" where segments.count == 2:
            // Every acknowledged write is already durable; the database must exist (404 else).
            try Self.requireMethod(call, .post)
            _ = try await database.info()
            return Self.json(["ok": true, "instance_start_time": "0"], status: .created)
        case "_revs_limit" where segments.count == 2: return try await revsLimit(&call, database)
        case "_purge" where segments.count == 2: return try await purge(&call, database)
        case "_find" where segments.count == 2: return try await find(&call, database, explain: false)
        case "_explain" where segments.count == 2: return try await find(&call, database, explain: true)
        case "_index": return try await index(&call, database)
        case "_temp_view" where segments.count == 2:
            throw CouchError(.init(code: 410), "gone", "Temporary views are not supported in CouchDB")
        case "_design" where segments.count == 5 && segments[3] == "_view":
            return try await viewQuery(&call, database, design: segments[2], view: segments[4])
        case "_design" where segments.count == 6 && segments[3] == "_view" && segments[5] == "queries":
            return try await viewQueries(&call, database, design: segments[2], view: segments[4])
        case "_design" where segments.count == 4 && segments[3] == "_info":
            try Self.requireMethod(call, .get, .head)
            return Self.json(try await database.designInfo(segments[2]))
        case "_local":
            // A local document has a name and no attachments (CouchDB's 400 for anything else).
            guard segments.count == 3 else { throw CouchError(.badRequest, "bad_request", "_local documents do not accept attachments.") }
            return try await documentRoute(&call, database, id: "_local/" + segments[2], attachment: [])
        case "_design" where segments.count >= 4 && Self.designFunctions.contains(segments[3]):
            throw CouchError(.init(code: 501), "not_implemented",
                             "Sofa does not run \(segments[3]) functions: query a view or _find, and write documents as they are")
        case "_design":
            guard segments.count >= 3 else { throw CouchError(.notFound, "not_found", "missing") }
            return try await documentRoute(&call, database, id: "_design/" + segments[2], attachment: Array(segments.dropFirst(3)))
        case let special where special.hasPrefix("_local"):
            throw CouchError(.badRequest, "bad_request", "Invalid _local document id.")
        case let special where special.hasPrefix("_"):
            throw CouchError(.badRequest, "illegal_docid", "Only reserved document ids may start with underscore.")
        default:
            return try await documentRoute(&call, database, id: segments[1], attachment: Array(segments.dropFirst(2)))
        }
    }

    /// The design-document functions CouchDB runs that Sofa does not (its 501).
    static let designFunctions: Set<String> = ["_show", "_list", "_update", "_rewrite"]

    /// `GET /db/_design/ddoc/_view/name` (options in the query, each JSON) or `POST` (options,
    /// `keys` among them, in the body).
    func viewQuery(_ call: inout CouchCall, _ database: Database, design: String, view: String) async throws -> Response {
        try Self.requireJSONKeys(call)
        var options = try QueryOptions(call.query)
        if call.method == .post {
            let body = try await call.objectBody(limit: limits.maxRequestBytes)
            if let keys = body["keys"], keys.arrayValue == nil {
                throw CouchError(.badRequest, "bad_request", "`keys` member must be an array.")
            }
            // The query string wins over the body, as in CouchDB.
            for (key, value) in body where call.query[key] == nil { options.values[key] = value }
        } else {
            try Self.requireMethod(call, .get, .head)
        }
        var given = JSONObject()
        for (key, value) in options.values.sorted(by: { $0.key < $1.key }) {
            // `update` and `stale` are words, and document IDs are taken as written; the rest are JSON.
            if ["update", "stale"].contains(key) || Self.docIDParameters.contains(key) {
                given[key] = .string(call.query[key] ?? value.stringValue ?? value.compactString)
            } else {
                given[key] = value
            }
        }
        return Self.json(try await viewAnswer(database, design + "/" + view, options: given))
    }

    /// `POST …/_view/name/queries` with `{"queries": [options, …]}`: `{"results": [answer, …]}`.
    func viewQueries(_ call: inout CouchCall, _ database: Database, design: String, view: String) async throws -> Response {
        try Self.requireMethod(call, .post)
        guard let queries = try await call.objectBody(limit: limits.maxRequestBytes)["queries"]?.arrayValue else {
            throw CouchError(.badRequest, "bad_request", "`queries` member must be an array.")
        }
        var results: [JSON] = []
        for query in queries {
            guard let options = query.objectValue else { throw CouchError(.badRequest, "bad_request", "each query must be an object") }
            results.append(try await viewAnswer(database, design + "/" + view, options: options))
        }
        return Self.json(["results": .array(results)])
    }

    /// A view's answer; options it refuses are CouchDB's `query_parse_error`. With `include_docs`
    /// and `attachments=true`, the documents' attachments are inline.
    func viewAnswer(_ database: Database, _ name: String, options: JSONObject) async throws -> JSON {
        var answer: JSON
        do {
            answer = try await database.view(name, options: options)
        } catch {
            if error.sofaCode == .invalidParameter { throw CouchError(.badRequest, "query_parse_error", error.message) }
            throw error
        }
        guard options["include_docs"]?.boolValue == true, options["attachments"]?.boolValue == true,
              case .object(var object) = answer, case .array(var rows)? = object["rows"] else { return answer }
        for (index, row) in rows.enumerated() {
            guard case .object(var item) = row, let doc = item["doc"], doc["_attachments"] != nil else { continue }
            item["doc"] = JSON.tryParse(try await inlineAttachments(doc.compactBytes(), database)) ?? doc
            rows[index] = .object(item)
        }
        object["rows"] = .array(rows)
        answer = .object(object)
        return answer
    }

    /// The view options that name a document: their text is the ID, not JSON.
    static let docIDParameters: Set<String> = ["startkey_docid", "start_key_docid", "start_key_doc_id",
                                               "endkey_docid", "end_key_docid", "end_key_doc_id"]

    /// The keys of a view or `_all_docs` query in its query string are JSON: text that is not is
    /// refused (CouchDB's answer), rather than read as a string.
    static func requireJSONKeys(_ call: CouchCall) throws {
        for name in ["key", "keys", "startkey", "start_key", "endkey", "end_key"] {
            if let text = call.query[name], JSON.tryParse(text) == nil {
                throw CouchError(.badRequest, "bad_request", "invalid UTF-8 JSON")
            }
        }
    }

    func databaseInfo(_ database: Database) async throws -> JSON {
        let info = try await database.info()
        return [
            "db_name": .string(database.name), "doc_count": .int(Int64(info.documentCount)), "doc_del_count": .int(Int64(info.deletedCount)),
            "update_seq": .string(CouchSequence.text(info.lastSequence)), "purge_seq": .string(CouchSequence.text(info.purgeCount)), "compact_running": false,
            "sizes": ["file": .int(Int64(info.fileBytes + info.walBytes)), "active": .int(Int64(info.fileBytes)),
                      "external": .int(Int64(info.fileBytes))],
            "instance_start_time": "0", "disk_format_version": 8, "props": [:],
            "cluster": ["q": 1, "n": 1, "w": 1, "r": 1],
        ]
    }

    private func security(_ call: inout CouchCall, _ database: Database) async throws -> Response {
        switch call.method {
        case .get: return Self.json(try await database.securityObject().json)
        case .put:
            var given = try await call.jsonBody(limit: 1 << 20)
            // CouchDB's older name for the members, still honoured when `members` is not given.
            if case .object(var object) = given, object["members"] == nil, let readers = object["readers"] {
                object["members"] = readers
                given = .object(object)
            }
            try await database.setSecurityObject(json: given)
            return Self.json(Self.ok)
        default: throw CouchError(.methodNotAllowed, "method_not_allowed", "Only GET,PUT allowed")
        }
    }

    /// The database's revs limit; one never set is answered as CouchDB's default (a history is
    /// then kept whole until compaction prunes it to the server's depth).
    private func revsLimit(_ call: inout CouchCall, _ database: Database) async throws -> Response {
        switch call.method {
        case .get:
            let limit = try await database.info().revsLimit
            return Self.json(.int(limit == 0 ? 1000 : Int64(limit)))
        case .put:
            guard let limit = try await call.jsonBody(limit: 1024).intValue, limit > 0, limit <= Int(Int32.max) else {
                throw CouchError(.badRequest, "bad_request", "The revs limit must be a positive integer")
            }
            try await database.setRevsLimit(Int(limit))
            return Self.json(Self.ok)
        default: throw CouchError(.methodNotAllowed, "method_not_allowed", "Only GET,PUT allowed")
        }
    }

    /// `{"id": ["rev", …]}`: each listed leaf revision purged (the document when it is its only one).
    private func purge(_ call: inout CouchCall, _ database: Database) async throws -> Response {
        try Self.requireMethod(call, .post)
        let body = try await call.objectBody(limit: limits.maxRequestBytes)
        var purged = JSONObject()
        for (id, revs) in body {
            guard let revs = revs.arrayValue?.compactMap(\.stringValue) else {
                throw CouchError(.badRequest, "bad_request", "each document's revisions must be a list")
            }
            var done: [JSON] = []
            for rev in revs {
                let outcome: SofaError? = await { () async -> SofaError? in
                    do { try await database.purge(id: id, rev: rev) } catch { return error as? SofaError }
                    return nil
                }()
                if let outcome, !outcome.is(.notFound) { throw CouchError(outcome) }
                if outcome == nil { done.append(.string(rev)) }
            }
            purged[id] = .array(done)
        }
        return Self.json(["purge_seq": .null, "purged": .object(purged)], status: .created)
    }
}

/// Sequences as HTTP clients see them: opaque strings, taken back as given (a number, the same
/// number as a string, or `now`).
enum CouchSequence {
    static func text(_ sequence: UInt64) -> String { "\(sequence)" }

    static func json(_ sequence: UInt64) -> JSON { .string(text(sequence)) }

    /// A `since` as given; nil for `now`.
    static func parse(_ given: String) throws(CouchError) -> UInt64? {
        var text = given
        if text == "now" { return nil }
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        if let dash = text.firstIndex(of: "-") { text = String(text[..<dash]) }
        guard let value = UInt64(text) else {
            throw CouchError(.badRequest, "bad_request", "Malformed sequence supplied in 'since' parameter.")
        }
        return value
    }
}
