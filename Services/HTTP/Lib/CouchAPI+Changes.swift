internal import SofaQL
internal import Hummingbird
internal import HTTPTypes
internal import NIOCore
internal import SofaClient
internal import SofaCore
internal import SofaWire
internal import Foundation

// `_changes`: `feed=normal|longpoll|continuous|eventsource`, streamed page by page from the
// gateway's changes feed (which holds a long poll until a commit or its timeout), with
// backpressure: a client that stops reading stops the feed, nothing piles up here.

enum ChangesFilter: Sendable {
    /// A Mango selector, as a JSON query condition.
    case selector(JSON)
    /// A N1QL condition.
    case n1ql(String)
    /// A design document's JavaScript filter ("ddoc/name"), run by the query workers on each
    /// changed document with CouchDB's request object.
    case javascript(String, request: JSON)
}

struct ChangesOptions: Sendable {
    var feed = "normal"
    var query = ChangesQuery()
    var limit: Int?
    var heartbeatMs: Int?
    var timeoutMs = 60_000
    var designOnly = false
    /// `style=all_docs`: every leaf in `changes` (the feed is also asked for leaves to tell
    /// conflicts, `conflicts`).
    var allDocsStyle = false
    /// `conflicts=true` with the documents: each conflicted one lists its other live leaves.
    var conflicts = false
    /// `attachments=true` with the documents: their attachments' bytes inline.
    var attachments = false
    /// A `_selector` (a Mango selector) or `_sofa_where` (a N1QL condition) filter: the feed runs
    /// it as a query over the documents changed since `since`, in sequence order, so an index on
    /// the fields it names serves it.
    var filter: ChangesFilter?

    static let page = 1000
    /// With bodies, pages are smaller: a page is held here while it is written to a client that
    /// may read slowly (documents of up to 8 MB each still make a page of a few).
    static let pageWithBodies = 50
    var pageSize: Int { query.includeBodies ? Self.pageWithBodies : Self.page }
    /// The longest wait asked of the gateway at once (its calls time out after a minute).
    static let maxWaitMs = 30_000
}

extension CouchAPI {
    func changes(_ call: inout CouchCall, _ database: Database) async throws -> Response {
        var options = ChangesOptions()
        var docIDs = try call.json("doc_ids")?.arrayValue?.compactMap(\.stringValue)
        var body: JSONObject?
        if call.method == .post {
            body = try await call.objectBody(limit: limits.maxRequestBytes)
            if let ids = body?["doc_ids"]?.arrayValue { docIDs = ids.compactMap(\.stringValue) }
        } else {
            try Self.requireMethod(call, .get, .head)
        }
        switch call.query["filter"] {
        case nil: break
        case "_doc_ids":
            guard let docIDs else { throw CouchError(.badRequest, "bad_request", "Filter _doc_ids needs doc_ids") }
            options.query.docIDs = docIDs
        case "_design": options.designOnly = true
        case "_selector":
            guard let selector = try body?["selector"] ?? call.json("selector"), selector.objectValue != nil else {
                throw CouchError(.badRequest, "bad_request", "Filter _selector needs a selector object")
            }
            options.filter = .selector(try Mango.condition(selector, at: nil))
        case "_sofa_where":
            guard let condition = call.query["where"] ?? body?["where"]?.stringValue, !condition.isEmpty else {
                throw CouchError(.badRequest, "bad_request", "Filter _sofa_where needs a N1QL condition in `where`")
            }
            options.filter = .n1ql(condition)
        case let name? where (!name.hasPrefix("_") && name.contains("/")) || name == "_view":
            var name = name
            if name == "_view" {
                // CouchDB's `_view` filter (`view=design/view`): the documents the view's map emits for.
                let parts = (call.query["view"] ?? "").split(separator: "/").map(String.init).filter { $0 != "_design" && $0 != "_view" }
                guard parts.count == 2 else { throw CouchError(.badRequest, "bad_request", "filter=_view needs view=designname/viewname") }
                name = parts[0] + "/" + DesignCall.viewFilterPrefix + parts[1]
            }
            let query = JSONObject(call.query.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) })
            let user: JSON = ["db": .string(database.name), "name": call.user.map { .string($0.name) } ?? .null]
            options.filter = .javascript(name, request: ["method": .string(call.method.rawValue), "query": .object(query),
                                                         "path": .array(call.segments.map { .string($0) }), "userCtx": user,
                                                         "body": .string(body.map { JSON.object($0).compactString } ?? "undefined")])
        case let other?:
            throw CouchError(.notFound, "not_found", "filter \(other) is not available")
        }
        // A filter that does not exist is answered 404 before the feed starts streaming.
        if case .javascript(let name, let request) = options.filter { _ = try await database.filter(name, documents: [], request: request) }
        options.feed = call.query["feed"] ?? "normal"
        if options.feed == "live" { options.feed = "continuous" }  // CouchDB's other name for it
        guard ["normal", "longpoll", "continuous", "eventsource"].contains(options.feed) else {
            throw CouchError(.badRequest, "bad_request", "Supported `feed` types: normal, continuous, live, longpoll, eventsource")
        }
        // An EventSource that reconnects says where it was (CouchDB reads it as `since`).
        let lastEventID = options.feed == "eventsource" ? call.header(HTTPField.Name("Last-Event-ID")!) : nil
        if let since = lastEventID ?? call.query["since"] {
            if let given = try CouchSequence.parse(since) {
                options.query.since = given
            } else {
                options.query.since = try await database.info().lastSequence
            }
        }
        options.limit = try call.integer("limit")
        options.query.descending = call.flag("descending")
        options.query.includeBodies = call.flag("include_docs")
        options.allDocsStyle = call.query["style"] == "all_docs"
        options.conflicts = options.query.includeBodies && call.flag("conflicts")
        options.attachments = options.query.includeBodies && call.flag("attachments")
        options.query.allLeaves = options.allDocsStyle || options.conflicts
        options.query.includeDeleted = true
        if let heartbeat = call.query["heartbeat"] {
            // CouchDB's rule and words: `true` (a minute) or a positive number of milliseconds.
            if heartbeat == "true" {
                options.heartbeatMs = 60_000
            } else if let value = Int(heartbeat) {
                guard value > 0 else {
                    throw CouchError(.badRequest, "bad_request", "The heartbeat value should be a positive integer (in milliseconds).")
                }
                options.heartbeatMs = max(100, value)
            } else {
                throw CouchError(.badRequest, "bad_request", "Invalid heartbeat value. Expecting a positive integer value (in milliseconds).")
            }
        }
        if let timeout = try call.integer("timeout") { options.timeoutMs = max(0, timeout) }
        let options0 = options
        // The first page is read before the answer starts (without waiting for a change), so that
        // a database that does not exist, or a client that may not read it, gets its status and
        // CouchDB's error body (404, 401, 403) rather than a 200 whose body breaks off.
        let firstLimit = min(options.pageSize, options.limit ?? Int.max)
        let first = firstLimit > 0 ? try await page(options, database, since: options.query.since, limit: firstLimit, waitMs: 0) : nil
        if first == nil { _ = try await database.info() }
        let response: ResponseBody
        switch options.feed {
        case "continuous", "eventsource":
            response = ResponseBody { writer in
                try await self.stream(options0, database, first: first) { bytes in try await writer.write(ByteBuffer(bytes: bytes)) }
                try await writer.finish(nil)
            }
        default:
            response = ResponseBody { writer in
                try await writer.write(ByteBuffer(bytes: Array("{\"results\":[\n".utf8)))
                let (last, full) = try await self.collect(options0, database, first: first) { bytes in
                    try await writer.write(ByteBuffer(bytes: bytes))
                }
                let pending = full ? await self.pending(database, after: last) : 0
                try await writer.write(ByteBuffer(bytes: Array("],\n\"last_seq\":\"\(last)\",\"pending\":\(pending)}\n".utf8)))
                try await writer.finish(nil)
            }
        }
        let type = options.feed == "eventsource" ? "text/event-stream" : "application/json"
        return Response(status: .ok, headers: [.contentType: type, .cacheControl: "must-revalidate"], body: response)
    }

    /// `pending`: how many documents changed after `last` (CouchDB's count, unfiltered), which a
    /// replicator shows as its progress. Asked only when the answer reached its `limit` (one that
    /// did not read the feed to its end); 0 when it cannot be counted (the answer is under way: a
    /// count that fails does not end it).
    private func pending(_ database: Database, after last: UInt64) async -> Int64 {
        guard let counted = try? await database.query(
                  n1ql: "SELECT COUNT(*) FROM _ WHERE META().sequence > $last AND (META().deleted OR NOT (META().deleted))",
                  parameters: ["last": .int(Int64(clamping: last))]) else { return 0 }
        return counted.rows.first?.first??.intValue ?? 0
    }

    /// `normal` and `longpoll`: the changes since `since`, page by page (`longpoll` first waits
    /// until there is one to answer, or the timeout); the last sequence, and whether the answer
    /// reached its `limit` (changes may follow). `prefetched`: the first page, read without
    /// waiting (a long poll that found nothing in it waits for the next).
    private func collect(_ options: ChangesOptions, _ database: Database, first prefetched: ChangesBatch?,
                         write: (_ bytes: [UInt8]) async throws -> Void) async throws -> (last: UInt64, full: Bool) {
        var since = options.query.since
        var sent = 0
        var first = true
        var prefetched = prefetched
        let deadline = ContinuousClock.now + .milliseconds(options.timeoutMs)
        let waits = options.feed == "longpoll" && !options.query.descending
        // A long poll with a heartbeat writes a newline each heartbeat while it waits, and waits
        // until there is a change (CouchDB's: the heartbeat takes the timeout's place).
        let heartbeat = waits ? options.heartbeatMs : nil
        while options.limit.map({ sent < $0 }) ?? true {
            let limit = min(options.pageSize, (options.limit ?? Int.max) - sent)
            let left = deadline - ContinuousClock.now
            let leftMs = heartbeat ?? Int(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)
            let waitMs = waits && sent == 0 ? max(0, min(ChangesOptions.maxWaitMs, leftMs)) : 0
            let batch: ChangesBatch
            if let ready = prefetched, !(waitMs > 0 && ready.changes.isEmpty) {
                batch = ready
            } else {
                batch = try await page(options, database, since: since, limit: limit, waitMs: waitMs)
            }
            prefetched = nil
            var chunk: [UInt8] = []
            for change in batch.changes {
                guard Self.isListed(change, options) else { continue }
                let line = Self.changeLine(change, options, document: await changeDocument(change, options, database))
                if !first { chunk += Array(",\n".utf8) }
                first = false
                chunk += line
                sent += 1
            }
            if !chunk.isEmpty { try await write(chunk) }
            if options.query.descending { return (batch.lastSequence, false) }
            since = Self.next(after: since, batch, limit: limit)
            if batch.changes.count == limit, limit > 0 { continue }
            // A short page: everything up to now is answered, unless a long poll still waits.
            if waits && sent == 0 && heartbeat != nil {
                try await write([0x0A])
                continue
            }
            if waits && sent == 0 && ContinuousClock.now < deadline { continue }
            break
        }
        return (since, options.limit.map { sent >= $0 } ?? false)
    }

    /// `continuous` and `eventsource`: a line (or event) per change, a newline every heartbeat,
    /// ending after `timeout` without a change (with no heartbeat) or at the limit.
    private func stream(_ options: ChangesOptions, _ database: Database, first prefetched: ChangesBatch?,
                        write: (_ bytes: [UInt8]) async throws -> Void) async throws {
        var since = options.query.since
        var sent = 0
        let wait = min(ChangesOptions.maxWaitMs, options.heartbeatMs ?? options.timeoutMs)
        var quietSince = ContinuousClock.now
        var prefetched = prefetched
        while options.limit.map({ sent < $0 }) ?? true {
            let limit = min(options.pageSize, (options.limit ?? Int.max) - sent)
            let batch: ChangesBatch
            if let ready = prefetched, !ready.changes.isEmpty {
                batch = ready
            } else {
                batch = try await page(options, database, since: since, limit: limit, waitMs: max(0, wait))
            }
            prefetched = nil
            var chunk: [UInt8] = []
            for change in batch.changes {
                guard Self.isListed(change, options) else { continue }
                let line = Self.changeLine(change, options, document: await changeDocument(change, options, database))
                if options.feed == "eventsource" {
                    chunk += Array("data: ".utf8) + line + Array("\nid: \(change.sequence)\n\n".utf8)
                } else {
                    chunk += line + [0x0A]
                }
                sent += 1
            }
            since = Self.next(after: since, batch, limit: limit)
            if !chunk.isEmpty {
                try await write(chunk)
                quietSince = ContinuousClock.now
            } else if batch.changes.isEmpty {
                if options.heartbeatMs != nil {
                    // An EventSource client sees a heartbeat only as an event (CouchDB's).
                    try await write(options.feed == "eventsource" ? Array("event: heartbeat\ndata: \n\n".utf8) : [0x0A])
                } else if ContinuousClock.now - quietSince >= .milliseconds(options.timeoutMs) {
                    break
                }
            }
        }
        if options.feed == "continuous" { try await write(Array("{\"last_seq\":\"\(since)\",\"pending\":0}\n".utf8)) }
    }

    /// One page of the feed after `since`: the changes feed itself (waiting up to `waitMs` in the
    /// gateway for a commit when there is none), or, with a query filter, the matching documents
    /// changed since then, in sequence order (`lastSequence`: how far the page answers for).
    private func page(_ options: ChangesOptions, _ database: Database, since: UInt64, limit: Int,
                      waitMs: Int) async throws -> ChangesBatch {
        var query = options.query
        query.since = since
        query.limit = UInt32(limit)
        query.waitMs = UInt32(waitMs)
        guard let filter = options.filter else { return try await database.changes(query) }
        if case .javascript(let name, let request) = filter {
            return try await javascriptPage(query, database, filter: name, request: request, includeBodies: options.query.includeBodies)
        }
        if waitMs > 0 {
            var probe = query
            probe.limit = 1
            probe.includeBodies = false
            _ = try await database.changes(probe)
        }
        // Read before the query: whatever commits later is either in its answer or after this.
        let before = try await database.info().lastSequence
        let result: QueryResult
        switch filter {
        case .selector(let condition):
            result = try await database.query(json: [
                "WHAT": [["._id"], ["._revisionID"], ["._sequence"], ["."]],
                "WHERE": ["AND", [">", ["._sequence"], .int(Int64(clamping: since))], condition],
                "ORDER_BY": [["._sequence"]], "LIMIT": .int(Int64(limit)),
            ])
        case .javascript:
            throw CouchError(.badRequest, "bad_request", "a JavaScript filter is not a query")
        case .n1ql(let condition):
            result = try await database.query(
                n1ql: "SELECT META().id, META().revisionID, META().sequence, * FROM _ WHERE META().sequence > $since AND (\(condition)) "
                    + "ORDER BY META().sequence LIMIT \(limit)", parameters: ["since": .int(Int64(clamping: since))])
        }
        var changes = result.rows.compactMap { row -> Change? in
            guard row.count >= 4, let id = row[0]?.stringValue, let rev = row[1]?.stringValue, let sequence = row[2]?.intValue else {
                return nil
            }
            var body: [UInt8] = []
            if options.query.includeBodies, let document = row[3] {
                body = (document.objectValue.map { $0["_"]?.objectValue ?? $0 }).map { JSON.object($0).compactBytes() } ?? []
            }
            return Change(sequence: UInt64(sequence), id: id, rev: rev, body: body)
        }
        let last = changes.count == limit ? changes.last!.sequence : max(before, changes.last?.sequence ?? since)
        if options.query.allLeaves, !changes.isEmpty {
            // `style=all_docs` and `conflicts`: each matching document's leaves, as the feed has them.
            let feed = try await database.changes(ChangesQuery(since: since, allLeaves: true, docIDs: changes.map(\.id)))
            let leaves = Dictionary(feed.changes.map { ($0.id, $0.leaves) }, uniquingKeysWith: { $1 })
            for index in changes.indices { changes[index].leaves = leaves[changes[index].id] ?? [] }
        }
        return ChangesBatch(changes: changes, lastSequence: last)
    }

    /// A page of the changes that pass a JavaScript filter: pages of the feed (the first one
    /// waiting as asked) with their documents, each run through the filter by a query worker,
    /// until `limit` passed or the feed has no more.
    private func javascriptPage(_ query: ChangesQuery, _ database: Database, filter: String, request: JSON,
                                includeBodies: Bool) async throws -> ChangesBatch {
        var fetch = query
        fetch.includeBodies = true
        let limit = Int(query.limit)
        var kept: [Change] = []
        while true {
            let batch = try await database.changes(fetch)
            let documents = batch.changes.map(\.shownDocument)
            let passed = documents.isEmpty ? [] : try await database.filter(filter, documents: documents, request: request)
            for (change, passes) in zip(batch.changes, passed) where passes {
                var shown = change
                if !includeBodies { shown.body = [] }
                kept.append(shown)
                if kept.count == limit { return ChangesBatch(changes: kept, lastSequence: change.sequence) }
            }
            guard batch.changes.count == limit, let last = batch.changes.last, limit > 0 else {
                return ChangesBatch(changes: kept, lastSequence: max(batch.lastSequence, batch.changes.last?.sequence ?? 0))
            }
            fetch.since = last.sequence
            fetch.waitMs = 0
        }
    }

    /// Where the feed goes on from after a page: its last change when the page is full (there may
    /// be more), else as far as the page answers for.
    static func next(after since: UInt64, _ batch: ChangesBatch, limit: Int) -> UInt64 {
        if batch.changes.count == limit, let last = batch.changes.last { return last.sequence }
        return max(since, batch.changes.last?.sequence ?? 0, batch.lastSequence)
    }

    /// One listed change (`isListed`) as CouchDB lists it; `document`: its `doc` member, when the
    /// feed includes the documents.
    static func changeLine(_ change: Change, _ options: ChangesOptions, document: [UInt8]?) -> [UInt8] {
        let revs = options.allDocsStyle && !change.leaves.isEmpty ? change.leaves : [change.rev]
        var out = Array("{\"seq\":\"\(change.sequence)\",\"id\":".utf8) + JSON.string(change.id).compactBytes()
        out += Array(",\"changes\":".utf8) + JSON.array(revs.map { ["rev": .string($0)] }).compactBytes()
        if change.deleted { out += Array(",\"deleted\":true".utf8) }
        if let document { out += Array(",\"doc\":".utf8) + document }
        out.append(0x7D)
        return out
    }

    /// Whether a change is listed: not a purged document's, and a design document's with the
    /// `_design` filter.
    static func isListed(_ change: Change, _ options: ChangesOptions) -> Bool {
        !change.rev.isEmpty && (!options.designOnly || change.id.hasPrefix("_design/"))
    }

    /// The `doc` of a change when the feed includes the documents: with `_conflicts` (a change
    /// with several leaves costs a look at storage's list of them) and the attachments inline
    /// when asked. The answer is already under way: a look that fails (the document purged
    /// meanwhile, a blob gone) leaves the document as the page has it; a document changed since
    /// lists its conflicts as they are now, never its own revision.
    func changeDocument(_ change: Change, _ options: ChangesOptions, _ database: Database) async -> [UInt8]? {
        guard options.query.includeBodies, !change.rev.isEmpty else { return nil }
        var document = StoredDocument(id: change.id, rev: change.rev, body: change.body.isEmpty ? Array("{}".utf8) : change.body,
                                      deleted: change.deleted, sequence: change.sequence)
        var extras: [(String, JSON)] = []
        if options.conflicts, change.leaves.count > 1, !change.deleted,
           let live = try? await database.conflicts(id: change.id).filter({ $0 != change.rev }), !live.isEmpty {
            extras.append(("_conflicts", .array(live.map { .string($0) })))
        }
        if options.attachments, !change.deleted, JSON.scanCompactObject(document.body)?.hasDigestKey ?? true,
           let inline = try? await inlineAttachments(document.body, database, since: nil) {
            document.body = inline
        }
        return OutgoingDocument.bytes(document, extras: extras)
    }
}
