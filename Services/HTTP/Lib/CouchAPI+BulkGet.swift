internal import Hummingbird
internal import HTTPTypes
internal import NIOCore
internal import SofaClient
internal import SofaCore
internal import SofaWire
internal import Foundation

// `_bulk_get`: many documents (each at a revision, or its winner) in one request, as JSON or, for
// a client that accepts only multipart (CouchDB's replicator, PouchDB), as `multipart/mixed` with
// each document that has attachments in a `multipart/related` part of its own, their bytes
// following as binary parts instead of base64.

extension CouchAPI {
    /// One item of a `_bulk_get` request.
    struct BulkGetItem: Sendable {
        var id: String
        var rev: String?
        /// The item's own `atts_since` (it asks for attachments newer than these revisions).
        var attsSince: [String]?
    }

    /// How many documents a `_bulk_get` reads at once (the answer keeps the request's order).
    static let bulkGetReadsInFlight = 16

    /// `{"docs": [{"id", "rev"?, "atts_since"?}]}`: each as `{"ok": doc}` or `{"error": …}`,
    /// grouped by ID; or multipart when the client accepts multipart and not JSON.
    func bulkGet(_ call: inout CouchCall, _ database: Database) async throws -> Response {
        try Self.requireMethod(call, .post)
        let body = try await call.objectBody(limit: limits.maxRequestBytes)
        guard let requests = body["docs"]?.arrayValue else {
            throw CouchError(.badRequest, "bad_request", "POST body must include `docs` parameter.")
        }
        let items = requests.map { request in
            BulkGetItem(id: request["id"]?.stringValue ?? "", rev: request["rev"]?.stringValue,
                        attsSince: request["atts_since"]?.arrayValue?.compactMap(\.stringValue))
        }
        let results = await read(items, call, database, latest: call.flag("latest"))
        if let kind = Self.acceptedMultipart(call) {
            return multipartBulkGet(call, database, items: items, results: results, kind: kind)
        }
        var out: [UInt8] = Array("{\"results\":[".utf8)
        for (index, (item, result)) in zip(items, results).enumerated() {
            if index > 0 { out.append(0x2C) }
            out += Array("{\"id\":".utf8) + JSON.string(item.id).compactBytes() + Array(",\"docs\":[".utf8)
            do {
                for (offset, document) in try result.get().enumerated() {
                    if offset > 0 { out.append(0x2C) }
                    out += Array("{\"ok\":".utf8) + (try await documentBytes(document, call, database, attsSince: item.attsSince)) + [0x7D]
                }
            } catch {
                out += JSON.object(["error": Self.failure(item, error)]).compactBytes()
            }
            out += Array("]}".utf8)
        }
        out += Array("]}".utf8)
        return Self.json(bytes: out)
    }

    /// Every item's document (with its history), read `bulkGetReadsInFlight` at a time, in order
    /// (from the files here where `read(_:_:id:rev:history:)` can, as a single GET is); with
    /// `latest`, an item's revision is answered by each leaf descending from it (`latest(…)`).
    func read(_ items: [BulkGetItem], _ call: CouchCall, _ database: Database,
              latest: Bool) async -> [Result<[StoredDocument], any Error>] {
        await Self.inOrder(items, width: Self.bulkGetReadsInFlight) { item in
            guard !item.id.isEmpty else { return .failure(CouchError(.badRequest, "bad_request", "document id missed")) }
            do {
                if latest, let rev = item.rev { return .success(try await self.latest(call, database, id: item.id, rev: rev)) }
                return .success([try await self.read(call, database, id: item.id, rev: item.rev, history: true)])
            } catch {
                return .failure(error)
            }
        }
    }

    /// `latest=true`: each leaf descending from `rev` (the winner first; `rev` itself when it is a
    /// leaf), as CouchDB answers it whatever `rev`'s own body has become. The winner is read
    /// first: a replicator asks for it most of the time, and when the document has no other leaf
    /// nothing more is read.
    func latest(_ call: CouchCall, _ database: Database, id: String, rev: String) async throws -> [StoredDocument] {
        if let winner = try? await read(call, database, id: id, rev: nil, history: true), !winner.conflicted,
           winner.rev == rev || winner.history.contains(rev) {
            return [winner]
        }
        let leaves = try await Self.latestLeaves(of: rev, id: id, database)
        return leaves.isEmpty ? [try await read(call, database, id: id, rev: rev, history: true)] : leaves
    }

    /// `body` of each item, `width` at a time, the answers in the items' order.
    static func inOrder<Item: Sendable, Answer: Sendable>(_ items: [Item], width: Int,
                                                          _ body: @escaping @Sendable (Item) async -> Answer) async -> [Answer] {
        var answers: [Answer] = []
        answers.reserveCapacity(items.count)
        for start in stride(from: 0, to: items.count, by: width) {
            let window = Array(items[start..<min(items.count, start + width)])
            var answered = [Answer?](repeating: nil, count: window.count)
            await withTaskGroup(of: (Int, Answer).self) { group in
                for (offset, item) in window.enumerated() { group.addTask { (offset, await body(item)) } }
                for await (offset, answer) in group { answered[offset] = answer }
            }
            answers += answered.map { $0! }
        }
        return answers
    }

    /// `multipart/mixed` (or `related`) when the client's `Accept` names it and not
    /// `application/json` (CouchDB's rule: JSON stays the answer for `*/*` and for both).
    static func acceptedMultipart(_ call: CouchCall) -> String? {
        guard let accept = call.header(.accept)?.lowercased(), !accept.contains("application/json") else { return nil }
        if accept.contains("multipart/mixed") { return "multipart/mixed" }
        if accept.contains("multipart/related") { return "multipart/related" }
        return nil
    }

    /// An item that could not be read, as both answers give it: `{id, rev, error, reason}`.
    static func failure(_ item: BulkGetItem, _ error: any Error) -> JSON {
        let couch = (error as? CouchError) ?? (error as? SofaError).map(CouchError.init)
            ?? CouchError(.internalServerError, "unknown_error", "\(error)")
        return ["id": .string(item.id), "rev": item.rev.map { .string($0) } ?? "undefined",
                "error": .string(couch.error), "reason": .string(couch.reason)]
    }

    /// The multipart answer, streamed: a document without attachments to send is an
    /// `application/json` part; one with them a `multipart/related` part (`X-Doc-Id`, `X-Rev-Id`)
    /// holding the JSON (those attachments marked `"follows": true`) and then each attachment's
    /// bytes, read from sofa-blob a chunk at a time; a failure is an
    /// `application/json; error="true"` part (`failurePart`'s JSON).
    func multipartBulkGet(_ call: CouchCall, _ database: Database, items: [BulkGetItem],
                          results: [Result<[StoredDocument], any Error>], kind: String,
                          failurePart: @escaping @Sendable (BulkGetItem, any Error) -> JSON = { failure($0, $1) }) -> Response {
        let boundary = Multipart.newBoundary()
        let body = ResponseBody { writer in
            for (item, result) in zip(items, results) {
                let documents: [StoredDocument]
                switch result {
                case .success(let found): documents = found
                case .failure(let error):
                    try await writer.write(ByteBuffer(bytes: Array("--\(boundary)\r\nContent-Type: application/json; error=\"true\"\r\n\r\n".utf8)
                                                      + failurePart(item, error).compactBytes() + Array("\r\n".utf8)))
                    continue
                }
                for document in documents {
                    let (json, following) = try await self.followingAttachments(document, call, database, attsSince: item.attsSince)
                    guard !following.isEmpty else {
                        try await writer.write(ByteBuffer(bytes: Array("--\(boundary)\r\nContent-Type: application/json\r\n\r\n".utf8)
                                                          + json + Array("\r\n".utf8)))
                        continue
                    }
                    let inner = Multipart.newBoundary()
                    try await writer.write(ByteBuffer(bytes: Array(("--\(boundary)\r\nX-Doc-Id: \(document.id)\r\nX-Rev-Id: \(document.rev)\r\n"
                        + "Content-Type: multipart/related; boundary=\"\(inner)\"\r\n\r\n"
                        + "--\(inner)\r\nContent-Type: application/json\r\n\r\n").utf8) + json + Array("\r\n".utf8)))
                    for attachment in following {
                        let filename = Self.quoted(attachment.name), type = Self.headerValue(attachment.contentType)
                        try await writer.write(ByteBuffer(bytes: Array(("--\(inner)\r\nContent-Disposition: attachment; filename=\(filename)\r\n"
                            + "Content-Type: \(type)\r\nContent-Length: \(attachment.length)\r\n\r\n").utf8)))
                        try await Self.writeBlob(attachment.digest, from: 0, count: attachment.length, of: database, to: &writer)
                        try await writer.write(ByteBuffer(bytes: Array("\r\n".utf8)))
                    }
                    try await writer.write(ByteBuffer(bytes: Array("--\(inner)--\r\n".utf8)))
                }
            }
            try await writer.write(ByteBuffer(bytes: Array("--\(boundary)--".utf8)))
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "\(kind); boundary=\"\(boundary)\"", .cacheControl: "must-revalidate"],
                        body: body)
    }

    /// A header value made of what a document gave (an attachment's content type): line breaks
    /// and other control characters, which would end the header or the part, become spaces.
    static func headerValue(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
    }

    /// A quoted-string for a header parameter (RFC 9110): `"` and `\` escaped, control characters
    /// made spaces (an attachment's name is the document's to choose).
    static func quoted(_ text: String) -> String {
        var out = "\""
        for character in headerValue(text) {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out + "\""
    }

    /// An attachment whose bytes follow the document in its multipart part.
    struct FollowingAttachment: Sendable {
        var name: String
        var digest: String
        var contentType: String
        var length: UInt64
    }

    /// The document's JSON for a multipart answer, and the attachments that follow it: all of
    /// them, but those added at or before `atts_since`'s newest ancestor, which stay stubs.
    func followingAttachments(_ document: StoredDocument, _ call: CouchCall, _ database: Database,
                              attsSince: [String]?) async throws -> ([UInt8], [FollowingAttachment]) {
        let extras = try await documentExtras(document, call, database)
        guard JSON.scanCompactObject(document.body)?.hasDigestKey ?? true,
              var object = JSON.tryParse(document.body)?.objectValue, case .object(var attachments)? = object["_attachments"] else {
            return (OutgoingDocument.bytes(document, extras: extras), [])
        }
        let since = try Self.attachmentGeneration(document, call, attsSince: attsSince)
        var following: [FollowingAttachment] = []
        for (name, value) in attachments {
            guard var attachment = value.objectValue, let digest = attachment["digest"]?.stringValue else { continue }
            if let since, let revpos = attachment["revpos"]?.intValue, revpos <= since { continue }
            attachment["stub"] = nil
            attachment["follows"] = true
            attachments[name] = .object(attachment)
            following.append(FollowingAttachment(name: name, digest: digest,
                                                 contentType: attachment["content_type"]?.stringValue ?? "application/octet-stream",
                                                 length: UInt64(max(0, attachment["length"]?.intValue ?? 0))))
        }
        object["_attachments"] = .object(attachments)
        var stored = document
        stored.body = JSON.object(object).compactBytes()
        return (OutgoingDocument.bytes(stored, extras: extras), following)
    }
}
