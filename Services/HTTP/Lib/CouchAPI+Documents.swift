internal import Hummingbird
internal import HTTPTypes
internal import NIOCore
internal import SofaClient
internal import SofaCore
internal import SofaFiles
internal import SofaWire
internal import SofaRows
internal import Foundation

// `/db/id` (also `_design/…` and `_local/…`): read, write, delete, copy; and `/db/id/attachment`.

extension CouchAPI {
    func documentRoute(_ call: inout CouchCall, _ database: Database, id: String, attachment: [String]) async throws -> Response {
        if !attachment.isEmpty {
            return try await attachmentRoute(&call, database, id: id, name: attachment.joined(separator: "/"))
        }
        switch call.method {
        case .get, .head: return try await getDocument(call, database, id: id)
        case .put:
            var followed: [String: [UInt8]] = [:]
            var object: JSONObject
            if let boundary = Multipart.boundary(of: call.header(.contentType)) {
                (object, followed) = try await multipartDocument(&call, boundary: boundary)
            } else {
                object = try await call.objectBody(limit: limits.body(call, otherwise: limits.maxDocumentBytes), what: "Document")
            }
            if let rev = try Self.givenRev(call, body: object["_rev"]?.stringValue) { object["_rev"] = .string(rev) }
            object["_id"] = .string(id)
            let newEdits = call.flag("new_edits", default: true)
            return located(try await Self.batched(call, id: id) {
                try await Self.conflictForForeignRevision(newEdits ? object["_rev"]?.stringValue : nil) {
                    try await write(IncomingDocument(object), database, newEdits: newEdits, followed: followed)
                }
            }, call, path: call.request.uri.path)
        case .delete:
            guard let rev = try Self.givenRev(call, body: nil) else {
                // CouchDB looks the document up first: one that is not there is 404.
                _ = try await read(call, database, id: id, rev: nil, history: false)
                throw CouchError(.conflict, "conflict", "Document update conflict.")
            }
            let result = try await Self.conflictForForeignRevision(rev) { try await database.delete(id: id, rev: rev) }
            return Self.written(result, batch: false, status: .ok)
        case .init("COPY")!:
            return try await copy(call, database, id: id)
        default:
            throw CouchError(.methodNotAllowed, "method_not_allowed", "Only GET,HEAD,PUT,DELETE,COPY allowed")
        }
    }

    func postDocument(_ call: inout CouchCall, _ database: Database) async throws -> Response {
        var object = try await call.objectBody(limit: limits.body(call, otherwise: limits.maxDocumentBytes), what: "Document")
        if object["_id"] == nil { object["_id"] = .string(try Self.uuids.next()) }
        let id = object["_id"]?.stringValue ?? ""
        return located(try await Self.batched(call, id: id) { try await write(IncomingDocument(object), database, newEdits: true) },
                            call, path: Self.documentPath(database.name, id))
    }

    /// A created document's (or attachment's) answer with its `Location`, absolute as CouchDB
    /// sends it, from the `Host` the client used.
    func located(_ response: Response, _ call: CouchCall, path: String) -> Response {
        guard response.status == .created else { return response }
        var response = response
        response.headers[.location] = "\(scheme)://\(call.request.head.authority ?? "127.0.0.1")\(path)"
        return response
    }

    /// A document's path in a `Location` (a design document's `/` kept, as CouchDB writes it).
    static func documentPath(_ database: String, _ id: String) -> String {
        "/" + pathSegment(database) + "/"
            + (id.hasPrefix("_design/") ? "_design/" + pathSegment(String(id.dropFirst(8))) : pathSegment(id))
    }

    /// Text as one URL path segment (percent-encoded, `/` included).
    static func pathSegment(_ text: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove("/")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// A document write's answer; with `batch=ok`, CouchDB's batch mode: 202 once the request is
    /// understood, and a write that then loses to another (a conflict) is not the client's
    /// error, as CouchDB does not tell a batch writer either.
    static func batched(_ call: CouchCall, id: String, _ write: () async throws -> DocumentRevision) async throws -> Response {
        guard call.query["batch"] == "ok" else { return written(try await write(), batch: false) }
        do {
            return written(try await write(), batch: true)
        } catch let error as SofaError where error.sofaCode == .conflict {
            return json(["ok": true, "id": .string(id)], status: .accepted)
        }
    }

    /// One document written as CouchDB would: a new edit (MVCC on `_rev`), or with
    /// `new_edits=false` a revision with its ancestry as given.
    func write(_ document: IncomingDocument, _ database: Database, newEdits: Bool,
               followed: [String: [UInt8]] = [:]) async throws -> DocumentRevision {
        guard let id = document.id else { throw CouchError(.badRequest, "bad_request", "Document must have an _id") }
        let body = try await storeInlineAttachments(document.body, database, id: id,
                                                    parent: Self.parentRev(document, newEdits: newEdits),
                                                    revpos: Self.nextGeneration(document, newEdits: newEdits), followed: followed)
        if newEdits {
            let failure: SofaError
            do {
                return try await database.put(id: id, body: JSON.object(body).compactBytes(), rev: document.rev, deleted: document.deleted)
            } catch {
                failure = error
            }
            // A new document written deleted is stored as a tombstone (CouchDB's answer; Sofa's own
            // delete of a document that is not there stays not found). Not one deleted before: a
            // tombstone is written over with its `_rev`.
            guard document.deleted, document.rev == nil, failure.is(.notFound), try await Self.hasNoRevision(id, database) else {
                throw failure
            }
            let inserted = try await database.insert(id: id, history: [Self.tombstoneRevision(body)], body: JSON.object(body).compactBytes(),
                                                     deleted: true, winnerByRevID: true)
            return DocumentRevision(id: inserted.id, rev: inserted.rev, sequence: inserted.sequence)
        }
        let inserted = try await database.insert(id: id, history: try document.ancestry(), body: JSON.object(body).compactBytes(),
                                                 deleted: document.deleted, winnerByRevID: true)
        return DocumentRevision(id: inserted.id, rev: inserted.rev, sequence: inserted.sequence)
    }

    /// The revision a write follows: the one it names, or with `new_edits=false` the second of
    /// its ancestry (nil: none, a new document).
    static func parentRev(_ document: IncomingDocument, newEdits: Bool) -> String? {
        guard !newEdits else { return document.rev }
        guard let history = document.history else { return nil }
        return history.count > 1 ? history[1] : nil
    }

    /// A write's answer: 201 (200 for a deletion, 202 with `batch=ok`), the new revision as ETag.
    /// The generation the write makes (an attachment added by it has this `revpos`).
    static func nextGeneration(_ document: IncomingDocument, newEdits: Bool) -> Int64 {
        let rev = newEdits ? document.rev : (document.history?.first ?? document.rev)
        let generation = rev.flatMap { Int64($0.prefix { $0 != "-" }) } ?? 0
        return newEdits ? generation + 1 : max(1, generation)
    }

    static func written(_ result: DocumentRevision, batch: Bool, status: HTTPResponse.Status = .created) -> Response {
        // A batch writer is told the document was accepted, not its revision (CouchDB's answer).
        if batch { return json(["ok": true, "id": .string(result.id)], status: .accepted) }
        return json(["ok": true, "id": .string(result.id), "rev": .string(result.rev)], status: status,
                    headers: [.eTag: "\"\(result.rev)\""])
    }

    /// The revision a write names: the body's `_rev`, the `rev` parameter or the `If-Match`
    /// header, which must agree (CouchDB's rule and words).
    static func givenRev(_ call: CouchCall, body: String?) throws(CouchError) -> String? {
        let query = call.query["rev"]
        if let body, let query, body != query {
            throw CouchError(.badRequest, "bad_request", "Document rev from request body and query string have different values")
        }
        let explicit = body ?? query
        if let etag = ifMatch(call), let explicit, etag != explicit {
            throw CouchError(.badRequest, "bad_request", "Document rev and etag have different values")
        }
        return explicit ?? ifMatch(call)
    }

    static func ifMatch(_ call: CouchCall) -> String? {
        call.header(.ifMatch).map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
    }

    private func getDocument(_ call: CouchCall, _ database: Database, id: String) async throws -> Response {
        if let openRevs = call.query["open_revs"] { return try await openRevisions(call, database, id: id, openRevs) }
        var rev = call.query["rev"]
        let revs = call.flag("revs"), revsInfo = call.flag("revs_info") || call.flag("meta")
        // `latest`: the newest leaf descending from the revision asked for.
        if let asked = rev, call.flag("latest") { rev = try await Self.latestLeaves(of: asked, id: id, database).first?.rev ?? asked }
        let document = try await read(call, database, id: id, rev: rev, history: revs || revsInfo)
        let etag = Self.etag(document.rev)
        if call.ifNoneMatch(etag) { return Response(status: .notModified, headers: [.eTag: etag]) }
        let bytes = try await documentBytes(document, call, database)
        return Self.json(bytes: bytes, headers: [.eTag: etag])
    }

    static func etag(_ rev: String) -> String { "\"\(rev)\"" }

    /// A plain GET `DirectGets` holds to answer itself: which document, for whom.
    struct DirectGet {
        var database: String
        var wanted: HTTPReads.Wanted
    }

    /// The plain GET `head` is, when `DirectGets` may answer it itself (nil: the whole route
    /// answers it): a `GET /db/id` of a document (neither name starting with `_`, nothing
    /// percent-encoded) with no query, no conditions, no CORS origin and no `Connection` header,
    /// from a user this process already knows (a checked `Authorization` header) or from nobody
    /// (neither credentials nor a cookie). Exactly what `getDocument` answers with no query
    /// parameters.
    func directGet(_ head: HTTPRequest) -> DirectGet? {
        guard reads != nil, head.method == .get, let path = head.path, let (database, id) = Self.plainDocumentPath(path) else {
            return nil
        }
        let fields = head.headerFields
        // A body (which a GET may carry) arrives as a part of its own, and passes the request on.
        guard fields[.origin] == nil, fields[.ifNoneMatch] == nil, fields[.connection] == nil else { return nil }
        var user: String?
        if let authorization = fields[.authorization] {
            guard let known = sessions.knownUser(authorization: authorization) else { return nil }
            user = known
        } else if fields[.cookie] != nil {
            return nil
        }
        return DirectGet(database: database, wanted: HTTPReads.Wanted(id: id, user: user))
    }

    /// The answers to `gets`, each database's documents read in one read transaction: an answer
    /// when the file here has the document and the user may read it, nil when the whole route
    /// answers instead (the document missing or refused included).
    func directGets(_ gets: [DirectGet]) -> [JSONAnswer?] {
        var answers = [JSONAnswer?](repeating: nil, count: gets.count)
        guard let reads else { return answers }
        for (database, indices) in DocumentFiles.byDatabase(gets.map(\.database)) {
            for (index, read) in zip(indices, reads.get(database: database, indices.map { gets[$0].wanted })) {
                guard case .success(let document)? = read else { continue }
                answers[index] = Self.jsonAnswer(bytes: OutgoingDocument.bytes(document, extras: []),
                                                 headers: [.eTag: Self.etag(document.rev)])
            }
        }
        return answers
    }

    /// `/db/id` (a trailing `/` allowed, as the route splits paths) with neither starting with
    /// `_`, and no query or percent-encoding.
    static func plainDocumentPath(_ path: String) -> (database: String, id: String)? {
        guard !path.utf8.contains(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "%") }) else { return nil }
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        guard segments.count == 2, segments[0].first != "_", segments[1].first != "_" else { return nil }
        return (String(segments[0]), String(segments[1]))
    }

    /// A document (revision `rev`, nil: the current one) as the request's user may read it:
    /// from the file here when `HTTPReads` can answer, else from the gateway.
    func read(_ call: CouchCall, _ database: Database, id: String, rev: String?, history: Bool) async throws -> StoredDocument {
        do {
            if let reads, let document = try reads.get(database: database.name, id: id, rev: rev, history: history, user: call.user?.name) {
                return document
            }
            return try await database.get(id: id, rev: rev, history: history)
        } catch {
            // A revision ID Sofa cannot hold (`1-abc`) names no revision it has: CouchDB reads any
            // `N-text` and finds it missing.
            if error.is(.badRevisionID), rev.map(Self.couchRevisionForm) == true { throw SofaError(.notFound, "missing") }
            throw error
        }
    }

    /// A write naming a revision ID Sofa cannot hold (`1-abc`, a stale one from elsewhere) names
    /// no revision of the document: CouchDB's update conflict, not a malformed request.
    static func conflictForForeignRevision<T>(_ rev: String?, _ write: () async throws -> T) async throws -> T {
        do {
            return try await write()
        } catch let error as SofaError where error.is(.badRevisionID) && rev.map(couchRevisionForm) == true {
            throw SofaError(.conflict, "Document update conflict.")
        }
    }

    /// `N-text`: the form of a revision ID CouchDB parses (a generation, a dash, anything).
    static func couchRevisionForm(_ rev: String) -> Bool {
        guard let dash = rev.firstIndex(of: "-"), dash != rev.startIndex, rev.index(after: dash) != rev.endIndex else { return false }
        return rev[..<dash].utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// Whether the database holds no revision at all of `id` (not even a tombstone).
    static func hasNoRevision(_ id: String, _ database: Database) async throws -> Bool {
        do { return try await database.openLeaves(id: id).isEmpty } catch where error.is(.notFound) { return true }
    }

    /// The first revision of a new document written deleted, named as storage names revisions.
    static func tombstoneRevision(_ body: JSONObject) -> String {
        RevID.generate(parent: nil, deleted: true, body: .object(body)).ascii
    }

    /// The most older revisions `revs_info` reads to tell whether their bodies are kept.
    static let revsInfoReads = 100

    /// A document with the members the query asks for (`revs`, `revs_info`, `conflicts`,
    /// `deleted_conflicts`, `local_seq`, `attachments`). `attsSince` (a `_bulk_get` item's own
    /// `atts_since`) asks for the attachments too, as the query's `atts_since` does.
    func documentBytes(_ document: StoredDocument, _ call: CouchCall, _ database: Database,
                       attsSince: [String]? = nil) async throws -> [UInt8] {
        let extras = try await documentExtras(document, call, database)
        // A stub has a `digest`: a body the compact scan finds none in has no attachments.
        if call.flag("attachments") || attsSince != nil || call.query["atts_since"] != nil,
           JSON.scanCompactObject(document.body)?.hasDigestKey ?? true {
            var stored = document
            stored.body = try await inlineAttachments(document.body, database,
                                                      since: try Self.attachmentGeneration(document, call, attsSince: attsSince))
            return OutgoingDocument.bytes(stored, extras: extras)
        }
        return OutgoingDocument.bytes(document, extras: extras)
    }

    /// The members a document's answer adds to its body for the query's flags.
    func documentExtras(_ document: StoredDocument, _ call: CouchCall, _ database: Database) async throws -> [(String, JSON)] {
        var extras: [(String, JSON)] = []
        if call.flag("revs"), let revisions = OutgoingDocument.revisions(document.history) {
            extras.append(("_revisions", revisions))
        }
        // `meta`: revs_info, conflicts and deleted_conflicts together (CouchDB's).
        let meta = call.flag("meta")
        if call.flag("revs_info") || meta {
            // An older revision is available while its body is kept (until compaction): the
            // newest `revsInfoReads` are read to tell; older ones are said missing.
            let older = await Self.inOrder(Array(document.history.dropFirst().prefix(Self.revsInfoReads)),
                                           width: Self.bulkGetReadsInFlight) { rev -> Result<String, any Error> in
                do {
                    return .success(try await self.read(call, database, id: document.id, rev: rev, history: false).deleted ? "deleted" : "available")
                } catch let error as SofaError where error.is(.notFound) {
                    return .success("missing")
                } catch {
                    return .failure(error)
                }
            }
            var statuses = [document.deleted ? "deleted" : "available"]
            for status in older { statuses.append(try status.get()) }
            statuses += Array(repeating: "missing", count: max(0, document.history.count - statuses.count))
            extras.append(("_revs_info", .array(zip(document.history, statuses).map { rev, status in
                ["rev": .string(rev), "status": .string(status)]
            })))
        }
        let conflicts = call.flag("conflicts") || meta, deletedConflicts = call.flag("deleted_conflicts") || meta
        // Deleted leaves do not make a document conflicted: asking for them reads the leaves.
        if (conflicts && document.conflicted) || deletedConflicts {
            let leaves = try await database.openLeaves(id: document.id).filter { $0.rev != document.rev }
            let live = leaves.filter { !$0.deleted }.map { JSON.string($0.rev) }
            let deleted = leaves.filter(\.deleted).map { JSON.string($0.rev) }
            if conflicts, !live.isEmpty { extras.append(("_conflicts", .array(live))) }
            if deletedConflicts, !deleted.isEmpty { extras.append(("_deleted_conflicts", .array(deleted))) }
        }
        if call.flag("local_seq") { extras.append(("_local_seq", .int(Int64(document.sequence)))) }
        return extras
    }

    /// `atts_since` (given, or the query's): revisions the client has; the newest generation
    /// among them that is this revision's ancestor bounds the attachments it needs (nil: all).
    static func attachmentGeneration(_ document: StoredDocument, _ call: CouchCall, attsSince: [String]?) throws -> Int64? {
        let revs = try attsSince ?? call.json("atts_since")?.arrayValue?.compactMap(\.stringValue)
        return revs?.filter { document.history.isEmpty || document.history.contains($0) }
            .compactMap { Int64($0.prefix { $0 != "-" }) }.max()
    }

    /// `open_revs=all` or `open_revs=["rev", …]`: each as `{"ok": doc}` or `{"missing": rev}`;
    /// for a client that accepts `multipart/mixed` and not JSON (CouchDB's replicator), each
    /// document with the bytes of its attachments following it (all of them, or those newer than
    /// `atts_since`: that answer never leaves attachment data out), as `_bulk_get` sends them,
    /// and each missing revision as an `error="true"` part.
    private func openRevisions(_ call: CouchCall, _ database: Database, id: String, _ given: String) async throws -> Response {
        var found: [Result<[StoredDocument], any Error>] = []
        var asked: [BulkGetItem] = []
        if given == "all" {
            for leaf in try await database.openLeaves(id: id) {
                asked.append(BulkGetItem(id: id, rev: leaf.rev))
                found.append(.success([leaf]))
            }
        } else {
            guard let revs = JSON.tryParse(given)?.arrayValue?.compactMap(\.stringValue) else {
                throw CouchError(.badRequest, "bad_request", "open_revs must be \"all\" or a JSON list of revisions")
            }
            let latest = call.flag("latest")
            var sent = Set<String>()
            for rev in revs {
                asked.append(BulkGetItem(id: id, rev: rev))
                do {
                    // `latest`: each leaf descending from the revision, in its place (once each).
                    let documents = latest ? try await Self.latestLeaves(of: rev, id: id, database)
                        : [try await read(call, database, id: id, rev: rev, history: true)]
                    if documents.isEmpty { throw SofaError(.notFound, "no leaf descends from \(rev)") }
                    found.append(.success(documents.filter { sent.insert($0.rev).inserted }))
                } catch {
                    guard let sofa = error as? SofaError, sofa.is(.notFound) else { throw error }
                    found.append(.failure(sofa))
                }
            }
        }
        if let accept = call.header(.accept), accept.contains("multipart/mixed"), !accept.contains("application/json") {
            return multipartBulkGet(call, database, items: asked, results: found, kind: "multipart/mixed") { item, _ in
                ["missing": .string(item.rev ?? "")]
            }
        }
        var bytes: [UInt8] = [0x5B]
        for (item, result) in zip(asked, found) {
            switch result {
            case .success(let documents):
                for document in documents {
                    if bytes.count > 1 { bytes.append(0x2C) }
                    bytes += Array("{\"ok\":".utf8) + (try await documentBytes(document, call, database)) + [0x7D]
                }
            case .failure:
                if bytes.count > 1 { bytes.append(0x2C) }
                bytes += JSON.object(["missing": .string(item.rev ?? "")]).compactBytes()
            }
        }
        bytes.append(0x5D)
        return Self.json(bytes: bytes)
    }

    /// The document's open leaves that are `rev` or descend from it (with their ancestry), the
    /// winner first.
    static func latestLeaves(of rev: String, id: String, _ database: Database) async throws -> [StoredDocument] {
        var found: [StoredDocument] = []
        for leaf in try await database.openLeaves(id: id) {
            let document = try await database.get(id: id, rev: leaf.rev, history: true)
            if document.rev == rev || document.history.contains(rev) { found.append(document) }
        }
        return found
    }

    /// A `multipart/related` write: the document (first part), and the bytes of each attachment
    /// marked `"follows": true`, by name, in the order of `_attachments`.
    private func multipartDocument(_ call: inout CouchCall, boundary: String) async throws -> (JSONObject, [String: [UInt8]]) {
        let body = try await call.body(limit: limits.maxBodyWithAttachments)
        guard let parts = Multipart.parts(body, boundary: boundary), let first = parts.first,
              let object = JSON.tryParse(first.body)?.objectValue else {
            throw CouchError(.badRequest, "bad_request", "invalid multipart/related body: the first part must be the JSON document")
        }
        var followed: [String: [UInt8]] = [:]
        var next = 1
        for (name, value) in object["_attachments"]?.objectValue ?? [:] where value["follows"]?.boolValue == true {
            guard next < parts.count else { throw CouchError(.badRequest, "bad_request", "attachment \(name) has no part") }
            followed[name] = parts[next].body
            next += 1
        }
        return (object, followed)
    }

    private func copy(_ call: CouchCall, _ database: Database, id: String) async throws -> Response {
        guard var destination = call.header(HTTPField.Name("Destination")!), !destination.isEmpty else {
            throw CouchError(.badRequest, "bad_request", "Destination header is mandatory for COPY.")
        }
        if ["http://", "https://"].contains(where: { destination.lowercased().hasPrefix($0) }) {
            throw CouchError(.badRequest, "bad_request", "Destination URL must be relative.")
        }
        var targetRev: String?
        if let question = destination.firstIndex(of: "?") {
            let query = destination[destination.index(after: question)...]
            targetRev = query.split(separator: "&").first { $0.hasPrefix("rev=") }.map { String($0.dropFirst(4)) }
            destination = String(destination[..<question])
        }
        let source = try await database.get(id: id, rev: call.query["rev"])
        let target = destination.removingPercentEncoding ?? destination
        // Bytes that are not UTF-8 (a header sent as Latin-1) name no ID: refused, not repaired.
        if destination.unicodeScalars.contains("\u{FFFD}") || target.unicodeScalars.contains("\u{FFFD}") {
            throw CouchError(.badRequest, "illegal_docid", "Document id must be valid UTF-8")
        }
        let result = try await database.put(id: target, body: source.body, rev: targetRev)
        return located(Self.written(result, batch: false), call, path: Self.documentPath(database.name, target))
    }
}
