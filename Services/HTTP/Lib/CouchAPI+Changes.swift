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

struct ChangesOptions: Sendable {
    var feed = "normal"
    var query = ChangesQuery()
    var limit: Int?
    var heartbeatMs: Int?
    var timeoutMs = 60_000
    var designOnly = false

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
        if call.method == .post {
            let body = try await call.objectBody(limit: limits.maxRequestBytes)
            if let ids = body["doc_ids"]?.arrayValue { docIDs = ids.compactMap(\.stringValue) }
        } else {
            try Self.requireMethod(call, .get, .head)
        }
        switch call.query["filter"] {
        case nil: break
        case "_doc_ids":
            guard let docIDs else { throw CouchError(.badRequest, "bad_request", "Filter _doc_ids needs doc_ids") }
            options.query.docIDs = docIDs
        case "_design": options.designOnly = true
        case let other?:
            throw CouchError(.notFound, "not_found", "filter \(other) is not available")
        }
        options.feed = call.query["feed"] ?? "normal"
        guard ["normal", "longpoll", "continuous", "eventsource"].contains(options.feed) else {
            throw CouchError(.badRequest, "bad_request", "Supported `feed` types: normal, continuous, live, longpoll, eventsource")
        }
        if let since = call.query["since"] {
            if let given = try CouchSequence.parse(since) {
                options.query.since = given
            } else {
                options.query.since = try await database.info().lastSequence
            }
        }
        options.limit = try call.integer("limit")
        options.query.descending = try call.flag("descending")
        options.query.includeBodies = try call.flag("include_docs")
        options.query.allLeaves = call.query["style"] == "all_docs"
        options.query.includeDeleted = true
        if let heartbeat = call.query["heartbeat"] {
            options.heartbeatMs = heartbeat == "true" ? 60_000 : try call.integer("heartbeat").map { max(100, $0) }
        }
        if let timeout = try call.integer("timeout") { options.timeoutMs = max(0, timeout) }
        let options0 = options
        let body: ResponseBody
        switch options.feed {
        case "continuous", "eventsource":
            body = ResponseBody { writer in
                try await self.stream(options0, database) { bytes in try await writer.write(ByteBuffer(bytes: bytes)) }
                try await writer.finish(nil)
            }
        default:
            body = ResponseBody { writer in
                try await writer.write(ByteBuffer(bytes: Array("{\"results\":[\n".utf8)))
                let last = try await self.collect(options0, database) { bytes in try await writer.write(ByteBuffer(bytes: bytes)) }
                try await writer.write(ByteBuffer(bytes: Array("],\n\"last_seq\":\"\(last)\",\"pending\":0}\n".utf8)))
                try await writer.finish(nil)
            }
        }
        let type = options.feed == "eventsource" ? "text/event-stream" : "application/json"
        return Response(status: .ok, headers: [.contentType: type, .cacheControl: "must-revalidate"], body: body)
    }

    /// `normal` and `longpoll`: the changes since `since`, page by page (`longpoll` first waits
    /// for one); the last sequence.
    private func collect(_ options: ChangesOptions, _ database: Database,
                         write: (_ bytes: [UInt8]) async throws -> Void) async throws -> UInt64 {
        var query = options.query
        if options.feed == "longpoll" && !query.descending {
            // Wait (in the gateway, a commit away) until there is a change to answer, or the timeout.
            let deadline = ContinuousClock.now + .milliseconds(options.timeoutMs)
            while true {
                var probe = query
                probe.limit = 1
                probe.includeBodies = false
                let left = deadline - ContinuousClock.now
                probe.waitMs = UInt32(max(0, min(ChangesOptions.maxWaitMs, Int(left.components.seconds * 1000))))
                let batch = try await database.changes(probe)
                if !batch.changes.isEmpty || ContinuousClock.now >= deadline { break }
            }
        }
        var sent = 0
        var first = true
        var last = query.since
        while options.limit.map({ sent < $0 }) ?? true {
            query.limit = UInt32(min(options.pageSize, (options.limit ?? Int.max) - sent))
            let batch = try await database.changes(query)
            var chunk: [UInt8] = []
            for change in batch.changes {
                guard let line = Self.changeLine(change, options) else { continue }
                if !first { chunk += Array(",\n".utf8) }
                first = false
                chunk += line
                sent += 1
            }
            if !chunk.isEmpty { try await write(chunk) }
            if query.descending {
                last = batch.lastSequence
                break
            }
            last = batch.changes.last.map(\.sequence) ?? max(last, batch.lastSequence)
            guard batch.changes.count == Int(query.limit), query.limit > 0 else { break }
            query.since = last
        }
        return last
    }

    /// `continuous` and `eventsource`: a line (or event) per change, a newline every heartbeat,
    /// ending after `timeout` without a change (with no heartbeat) or at the limit.
    private func stream(_ options: ChangesOptions, _ database: Database, write: (_ bytes: [UInt8]) async throws -> Void) async throws {
        var query = options.query
        var sent = 0
        let wait = min(ChangesOptions.maxWaitMs, options.heartbeatMs ?? options.timeoutMs)
        var quietSince = ContinuousClock.now
        while options.limit.map({ sent < $0 }) ?? true {
            query.limit = UInt32(min(options.pageSize, (options.limit ?? Int.max) - sent))
            query.waitMs = UInt32(max(0, wait))
            let batch = try await database.changes(query)
            var chunk: [UInt8] = []
            for change in batch.changes {
                guard let line = Self.changeLine(change, options) else { continue }
                if options.feed == "eventsource" {
                    chunk += Array("data: ".utf8) + line + Array("\nid: \(change.sequence)\n\n".utf8)
                } else {
                    chunk += line + [0x0A]
                }
                sent += 1
            }
            if let last = batch.changes.last { query.since = last.sequence }
            if !chunk.isEmpty {
                try await write(chunk)
                quietSince = ContinuousClock.now
            } else if batch.changes.isEmpty {
                if options.heartbeatMs != nil {
                    try await write([0x0A])
                } else if ContinuousClock.now - quietSince >= .milliseconds(options.timeoutMs) {
                    break
                }
            }
        }
        if options.feed == "continuous" { try await write(Array("{\"last_seq\":\"\(query.since)\",\"pending\":0}\n".utf8)) }
    }

    /// One change as CouchDB lists it; nil for one left out (a purged document, a filter).
    static func changeLine(_ change: Change, _ options: ChangesOptions) -> [UInt8]? {
        guard !change.rev.isEmpty else { return nil }
        if options.designOnly && !change.id.hasPrefix("_design/") { return nil }
        let revs = options.query.allLeaves && !change.leaves.isEmpty ? change.leaves : [change.rev]
        var out = Array("{\"seq\":\"\(change.sequence)\",\"id\":".utf8) + JSON.string(change.id).compactBytes()
        out += Array(",\"changes\":".utf8) + JSON.array(revs.map { ["rev": .string($0)] }).compactBytes()
        if change.deleted { out += Array(",\"deleted\":true".utf8) }
        if options.query.includeBodies {
            let document = StoredDocument(id: change.id, rev: change.rev, body: change.body.isEmpty ? Array("{}".utf8) : change.body,
                                          deleted: change.deleted, sequence: change.sequence)
            out += Array(",\"doc\":".utf8) + OutgoingDocument.bytes(document)
        }
        out.append(0x7D)
        return out
    }
}
