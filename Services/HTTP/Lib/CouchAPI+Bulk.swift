internal import Hummingbird
internal import HTTPTypes
internal import NIOCore
internal import SofaClient
internal import SofaCore
internal import SofaQL
internal import SofaFiles
internal import SofaWire
internal import Foundation

// Many documents at once: `_bulk_docs`, `_all_docs`, `_revs_diff` (`_bulk_get`: CouchAPI+BulkGet).

extension CouchAPI {
    /// `{"docs": [...], "new_edits": bool}`: one transaction of Sofa's, each document with its own
    /// result. With `new_edits=false` only failures are listed, as CouchDB does.
    func bulkDocs(_ call: inout CouchCall, _ database: Database) async throws -> Response {
        try Self.requireMethod(call, .post)
        let body = try await call.objectBody(limit: limits.body(call, otherwise: limits.maxRequestBytes))
        guard let given = body["docs"] else {
            throw CouchError(.badRequest, "bad_request", "POST body must include `docs` parameter.")
        }
        guard let docs = given.arrayValue else { throw CouchError(.badRequest, "bad_request", "`docs` parameter must be an array.") }
        if let flag = body["new_edits"], flag.boolValue == nil {
            throw CouchError(.badRequest, "bad_request", "`new_edits` parameter must be a boolean.")
        }
        let newEdits = body["new_edits"]?.boolValue ?? true
        if body["all_or_nothing"]?.boolValue == true {
            // CouchDB 2 and later refuse it, each document in its place, with 417.
            let refusals: [JSON] = docs.map { ["id": $0["_id"] ?? .null, "error": "not_implemented",
                                               "reason": "all_or_nothing is not supported"] }
            return Self.json(.array(refusals), status: .expectationFailed)
        }
        // An ID CouchDB would never store, or an item that is no document, fails the whole request, as there.
        for value in docs {
            guard value.objectValue != nil else { throw CouchError(.badRequest, "bad_request", "Document must be a JSON object") }
            guard let id = value["_id"] else { continue }
            guard let text = id.stringValue else { throw CouchError(.badRequest, "illegal_docid", "Document id must be a string") }
            if text.hasPrefix("_"), !DocumentID.reservedPrefixes.contains(where: { text.hasPrefix($0) }) {
                throw CouchError(.badRequest, "illegal_docid", "Only reserved document ids may start with underscore.")
            }
        }
        var items: [BulkItem] = []
        items.reserveCapacity(docs.count)
        var refused: [Int: JSON] = [:]
        /// Local documents (written one by one after the others: they have no revision tree).
        var local: [Int: IncomingDocument] = [:]
        for (index, value) in docs.enumerated() {
            do {
                guard let object = value.objectValue else { throw CouchError(.badRequest, "bad_request", "Document must be a JSON object") }
                var document = try IncomingDocument(object)
                if document.id == nil { document.id = try Self.uuids.next() }
                if document.id!.hasPrefix("_local/") {
                    local[index] = document
                    refused[index] = .null  // answered below
                    items.append(.put(id: "", rev: "", body: [], deleted: false))
                    continue
                }
                // Each design document checked in its place (the gateway would refuse the whole bulk).
                if document.id!.hasPrefix("_design/"), !document.deleted {
                    do throws(SofaError) { try DesignDocumentRules.check(document.body) } catch { throw CouchError(error) }
                }
                let stored = try await storeInlineAttachments(document.body, database, id: document.id!,
                                                              parent: Self.parentRev(document, newEdits: newEdits),
                                                              revpos: Self.nextGeneration(document, newEdits: newEdits))
                let bytes = JSON.object(stored).compactBytes()
                if newEdits, document.deleted, document.rev == nil, try await Self.hasNoRevision(document.id!, database) {
                    // A new document written deleted: a tombstone, as a single write stores it.
                    items.append(.insert(RevisionInsert(id: document.id!, history: [Self.tombstoneRevision(stored)], body: bytes,
                                                        deleted: true, winnerByRevID: true)))
                } else if newEdits {
                    items.append(.put(id: document.id!, rev: document.rev ?? "", body: bytes, deleted: document.deleted))
                } else {
                    items.append(.insert(RevisionInsert(id: document.id!, history: try document.ancestry(), body: bytes,
                                                        deleted: document.deleted, winnerByRevID: true)))
                }
            } catch let error as CouchError {
                refused[index] = ["id": value["_id"] ?? .null, "error": .string(error.error), "reason": .string(error.reason)]
                items.append(.put(id: "", rev: "", body: [], deleted: false))  // a placeholder, dropped below
            }
        }
        var results = try await write(items, refused: refused, database)  // design documents refused in place by the gateway
        for (index, document) in local.sorted(by: { $0.key < $1.key }) {
            refused[index] = try await writeLocal(document, database, newEdits: newEdits)
        }
        var answers: [JSON] = []
        for index in docs.indices {
            if local[index] != nil {
                if let answer = refused[index] { answers.append(answer) }
                continue
            }
            if let refusal = refused[index] {
                answers.append(refusal)
                continue
            }
            guard let result = results.popFirst() else { break }
            if let error = result.error, error.is(.forbidden), error.message.contains(Self.designRefusal) {
                // A member who is not the database's admin: the gateway refused the design
                // document in its place; CouchDB's words for it.
                answers.append(["id": .string(result.id), "error": "unauthorized", "reason": "You are not a db or server admin."])
            } else if let error = result.error, newEdits, error.is(.badRevisionID),
                      docs[index]["_rev"]?.stringValue.map(Self.couchRevisionForm) == true {
                // A stale revision ID from elsewhere (`1-abc`) names none of the document's.
                answers.append(["id": .string(result.id), "error": "conflict", "reason": "Document update conflict."])
            } else if let error = result.error {
                let couch = CouchError(error)
                answers.append(["id": .string(result.id), "error": .string(couch.error), "reason": .string(couch.reason)])
            } else if newEdits {
                answers.append(["ok": true, "id": .string(result.id), "rev": .string(result.rev)])
            }
        }
        return Self.json(.array(answers), status: .created)
    }

    /// A local document of a bulk, written on its own: its answer (nil: none, a success with
    /// `new_edits=false`).
    private func writeLocal(_ document: IncomingDocument, _ database: Database, newEdits: Bool) async throws -> JSON? {
        let id = document.id ?? ""
        do {
            let written = try await database.put(id: id, body: JSON.object(document.body).compactBytes(),
                                                 rev: document.rev, deleted: document.deleted)
            return newEdits ? ["ok": true, "id": .string(written.id), "rev": .string(written.rev)] : nil
        } catch {
            let couch = CouchError(error)
            return ["id": .string(id), "error": .string(couch.error), "reason": .string(couch.reason)]
        }
    }

    /// The results of writing the items not refused, in their order.
    private func write(_ items: [BulkItem], refused: [Int: JSON], _ database: Database) async throws -> ArraySlice<BulkItemResult> {
        let sent = items.enumerated().filter { refused[$0.offset] == nil }.map(\.element)
        return sent.isEmpty ? [] : try await database.bulk(sent)[...]
    }

    /// How the gateway's refusal of a design document to a member who is not an admin ends
    /// (`AccessRules.check`): "… needs one" after these words.
    static let designRefusal = "writing a design document needs one"

    /// `GET` (or `POST`, its options in the body) `_all_docs`: rows by ID, streamed page by page.
    /// `idPrefix`: the listing of `_design_docs` or `_local_docs` (IDs with that prefix only).
    func allDocs(_ call: inout CouchCall, _ database: Database, idPrefix: String? = nil) async throws -> Response {
        try Self.requireJSONKeys(call)
        var options = try QueryOptions(call.query)
        if call.method == .post {
            // The query string wins over the body, as in CouchDB.
            for (key, value) in try await call.objectBody(limit: limits.maxRequestBytes) where options.values[key] == nil {
                options.values[key] = value
            }
        } else {
            try Self.requireMethod(call, .get, .head)
        }
        var keys = try options.strings("keys")
        if let key = options.values["key"]?.stringValue { keys = [key] }
        let includeDocs = try options.bool("include_docs")
        // `conflicts=true` (with the documents): each conflicted one lists its other live leaves.
        let conflicts = try includeDocs && options.bool("conflicts")
        // `attachments=true` (with the documents): their bytes inline, as PouchDB's allDocs asks.
        let attachments = try includeDocs && options.bool("attachments")
        let descending = try options.bool("descending")
        let info = try await database.info()
        let skip = try options.count("skip") ?? 0
        var total = Int64(info.documentCount)
        if idPrefix == "_design/" {
            // `_design_docs` counts the design documents (CouchDB's test suite says so).
            total = Int64(try await database.allDocs(AllDocsQuery(includeBodies: false, limit: 0, startKey: "_design/",
                                                                  endKey: "_design/\u{FFFF}")).count)
        }
        var head = JSONObject([("total_rows", .int(total)), ("offset", .int(Int64(skip)))])
        if try options.bool("update_seq") { head["update_seq"] = CouchSequence.json(info.lastSequence) }
        if idPrefix == "_local/" {
            // CouchDB counts no local documents: `total_rows`, `offset` and `update_seq` are null.
            for name in ["total_rows", "offset"] { head[name] = .null }
            if head["update_seq"] != nil { head["update_seq"] = .null }
        }
        let prefix = Array(JSON.object(head).compactBytes().dropLast()) + Array(",\"rows\":[".utf8)
        if var keys {
            // `descending`, `skip` and `limit` apply to the keys as given.
            if descending { keys.reverse() }
            keys = Array(keys.dropFirst(skip).prefix(try options.count("limit") ?? Int.max))
            // Each key is read on its own, `bulkGetReadsInFlight` at a time.
            let found = await Self.inOrder(keys, width: Self.bulkGetReadsInFlight) { key -> Result<StoredDocument?, any Error> in
                do {
                    return .success(try await database.allDocs(AllDocsQuery(includeBodies: includeDocs, includeDeleted: true, limit: 1,
                                                                            startKey: key, endKey: key)).first)
                } catch {
                    return .failure(error)
                }
            }
            var rows: [UInt8] = []
            for (index, (key, result)) in zip(keys, found).enumerated() {
                if index > 0 { rows.append(0x2C) }
                if let document = try result.get(), document.id == key {
                    rows += try await listedRow(document, includeDocs: includeDocs,
                                                extras: conflicts ? try await conflictList(document, database) : [],
                                                attachments: attachments, database)
                } else {
                    rows += JSON.object(["key": .string(key), "error": "not_found"]).compactBytes()
                }
            }
            return Self.json(bytes: prefix + rows + Array("]}".utf8))
        }
        var query = AllDocsQuery(includeBodies: includeDocs, limit: 0, skip: UInt32(skip), descending: descending)
        // Within a prefix, the bounds stay inside it: from `prefix` to `prefix` + U+FFFF.
        let (lowest, highest) = idPrefix.map { ($0, $0 + "\u{FFFF}") } ?? ("", "")
        query.startKey = (options.values["startkey"] ?? options.values["start_key"])?.stringValue ?? (descending ? highest : lowest)
        query.endKey = (options.values["endkey"] ?? options.values["end_key"])?.stringValue ?? (descending ? lowest : highest)
        let inclusiveEnd = try options.bool("inclusive_end", default: true)
        let limit = try options.count("limit")
        // With attachments inline, a page holds their bytes: a few documents at a time.
        let page = attachments ? 8 : 1000
        let first = query
        // The first page is read before the answer starts: a refusal (a `_users` listing by a
        // user, a database gone) is answered with its status, not as a listing broken off.
        var firstPage = query
        firstPage.limit = UInt32(min(page, limit ?? Int.max) + 1)
        let prefetched = limit == 0 ? [] : try await database.allDocs(firstPage)
        let body = ResponseBody { writer in
            let query = first
            try await writer.write(ByteBuffer(bytes: prefix))
            var sent = 0
            var isFirst = true
            var next = query
            var pending: [StoredDocument]? = prefetched
            while limit.map({ sent < $0 }) ?? true {
                next.limit = UInt32(min(page, (limit ?? Int.max) - sent) + 1)
                let documents: [StoredDocument]
                if let taken = pending {
                    documents = taken
                    pending = nil
                } else {
                    documents = try await database.allDocs(next)
                }
                var chunk: [UInt8] = []
                var last: String?
                for document in documents.prefix(Int(next.limit) - 1) {
                    last = document.id
                    if !inclusiveEnd, !query.endKey.isEmpty, document.id == query.endKey { continue }
                    if !isFirst { chunk.append(0x2C) }
                    isFirst = false
                    chunk += try await self.listedRow(document, includeDocs: includeDocs,
                                                      extras: conflicts ? try await self.conflictList(document, database) : [],
                                                      attachments: attachments, database)
                    sent += 1
                }
                if !chunk.isEmpty { try await writer.write(ByteBuffer(bytes: chunk)) }
                guard documents.count == Int(next.limit), let last else { break }
                next.startKey = last
                next.skip = 1
            }
            try await writer.write(ByteBuffer(bytes: Array("]}\n".utf8)))
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "application/json", .cacheControl: "must-revalidate"], body: body)
    }

    func row(_ document: StoredDocument, includeDocs: Bool, extras: [(String, JSON)] = []) -> [UInt8] {
        var out = Array("{\"id\":".utf8) + JSON.string(document.id).compactBytes()
        out += Array(",\"key\":".utf8) + JSON.string(document.id).compactBytes()
        out += Array(",\"value\":{\"rev\":".utf8) + JSON.string(document.rev).compactBytes()
        if document.deleted { out += Array(",\"deleted\":true".utf8) }
        out.append(0x7D)
        if includeDocs {
            out += Array(",\"doc\":".utf8) + (document.deleted ? Array("null".utf8) : OutgoingDocument.bytes(document, extras: extras))
        }
        out.append(0x7D)
        return out
    }

    /// A row of `_all_docs`; with `attachments`, its document's attachments inline.
    func listedRow(_ document: StoredDocument, includeDocs: Bool, extras: [(String, JSON)], attachments: Bool,
                   _ database: Database) async throws -> [UInt8] {
        guard attachments, includeDocs, !document.deleted else { return row(document, includeDocs: includeDocs, extras: extras) }
        let doc = try await inlineAttachments(OutgoingDocument.bytes(document, extras: extras), database)
        var out = row(document, includeDocs: false)
        out.removeLast()  // the row's closing brace
        out += Array(",\"doc\":".utf8) + doc
        out.append(0x7D)
        return out
    }

    /// `_conflicts` of a listed (current) document: storage's list of the live leaves other
    /// than the winner; no call for one that is not conflicted.
    func conflictList(_ document: StoredDocument, _ database: Database) async throws -> [(String, JSON)] {
        guard document.conflicted, !document.deleted else { return [] }
        let live = try await database.conflicts(id: document.id)
        return live.isEmpty ? [] : [("_conflicts", .array(live.map { .string($0) }))]
    }

    /// `{"id": ["rev", …]}` → the revisions the database lacks (`_revs_diff`, or `_missing_revs`).
    func revsDiff(_ call: inout CouchCall, _ database: Database, missingRevs: Bool) async throws -> Response {
        try Self.requireMethod(call, .post)
        let body = try await call.objectBody(limit: limits.maxRequestBytes)
        var asked: [String: [String]] = [:]
        for (id, revs) in body {
            guard let list = revs.arrayValue?.compactMap(\.stringValue) else {
                throw CouchError(.badRequest, "bad_request", "each document's revisions must be a list")
            }
            asked[id] = list
        }
        // A revision ID Sofa cannot hold (CouchDB takes any `N-text`) is missing, on its own: it
        // does not fail the whole request.
        var unheld: [String: [String]] = [:]
        for (id, list) in asked {
            let (valid, invalid) = list.reduce(into: ([String](), [String]())) { split, rev in
                if (try? RevID.parse(rev)) != nil { split.0.append(rev) } else { split.1.append(rev) }
            }
            if !invalid.isEmpty { unheld[id] = invalid; asked[id] = valid }
        }
        let held = asked.filter { !$0.value.isEmpty }
        var entries = held.isEmpty ? [] : try await database.revsDiff(held)
        for (id, invalid) in unheld {
            if let index = entries.firstIndex(where: { $0.id == id }) { entries[index].revs += invalid } else {
                entries.append(RevsDiffEntry(id: id, revs: invalid, possibleAncestors: []))
            }
        }
        var out = JSONObject()
        for entry in entries where !entry.revs.isEmpty {
            if missingRevs {
                out[entry.id] = .array(entry.revs.map { .string($0) })
            } else {
                var item: JSONObject = ["missing": .array(entry.revs.map { .string($0) })]
                if !entry.possibleAncestors.isEmpty { item["possible_ancestors"] = .array(entry.possibleAncestors.map { .string($0) }) }
                out[entry.id] = .object(item)
            }
        }
        return Self.json(missingRevs ? ["missing_revs": .object(out)] : .object(out))
    }
}

/// A listing's options, from the query string (each value JSON, or text when it is not) and, for
/// a POST, the body's members.
struct QueryOptions {
    var values: [String: JSON] = [:]

    init(_ query: [String: String]) throws(CouchError) {
        for (key, text) in query {
            // A boolean in any case (`descending=True`), as CouchDB's view parameters read it.
            if Self.booleans.contains(key) {
                guard let flag = CouchCall.boolean(text) else { throw CouchCall.invalidBoolean(text) }
                values[key] = .bool(flag)
            } else {
                values[key] = JSON.tryParse(text) ?? .string(text)
            }
        }
    }

    /// The boolean parameters of `_all_docs` and views (`couch_mrview_http`'s).
    static let booleans: Set<String> = ["reduce", "descending", "group", "include_docs", "inclusive_end", "update_seq",
                                        "conflicts", "sorted", "attachments", "att_encoding_info", "stable"]

    func bool(_ name: String, default value: Bool = false) throws(CouchError) -> Bool {
        guard let given = values[name] else { return value }
        guard let flag = given.boolValue ?? given.stringValue.flatMap(CouchCall.boolean) else {
            throw CouchCall.invalidBoolean(given.stringValue ?? given.compactString)
        }
        return flag
    }

    func count(_ name: String) throws(CouchError) -> Int? {
        guard let given = values[name] else { return nil }
        guard let number = given.intValue, number >= 0 else {
            throw CouchError(.badRequest, "query_parse_error", "Invalid value for integer: \"\(name)\"")
        }
        return Int(number)
    }

    func strings(_ name: String) throws(CouchError) -> [String]? {
        guard let given = values[name] else { return nil }
        guard let list = given.arrayValue else {
            throw CouchError(.badRequest, "bad_request", name == "keys" ? "`keys` body member must be an array." : "`\(name)` must be a list")
        }
        return list.compactMap(\.stringValue)
    }
}
