internal import Hummingbird
internal import HTTPTypes
internal import NIOCore
internal import SofaClient
internal import SofaCore
internal import SofaWire
internal import Foundation

// Attachments: CouchDB's `_attachments` member, whose bytes sofa-blob keeps (content-addressed:
// the stub's `digest` is the blob's key). Inline `data` is stored as a blob and replaced by a
// stub; `attachments=true` puts the bytes back inline; `/db/id/name` streams one both ways.

extension CouchAPI {
    /// The body with every inline attachment (`data`, base64, or the bytes of a multipart part
    /// in `followed`) stored and replaced by its stub. A stub without a Sofa blob key (none, or a
    /// peer's `md5-…`) is matched by name with the attachment of the revision the write follows
    /// (`parent`; nil or gone: the current one) and given its key; none there (or, for a bare
    /// stub, one of another revpos than it names) is `missing_stub`. Revision IDs are never
    /// changed by any of it.
    func storeInlineAttachments(_ body: JSONObject, _ database: Database, id: String, parent: String? = nil, revpos: Int64 = 1,
                                followed: [String: [UInt8]] = [:]) async throws -> JSONObject {
        guard let given = body["_attachments"] else { return body }
        // CouchDB's words for `_attachments` that is not an object of attachments.
        guard case .object(var attachments) = given else {
            throw CouchError(.badRequest, "doc_validation", "Bad special document member: _attachments")
        }
        var changed = false
        var current: JSONObject?? = .none
        for (name, value) in attachments {
            guard var attachment = value.objectValue, attachment["data"].map({ $0.stringValue != nil }) ?? true else {
                throw CouchError(.badRequest, "bad_request", "Invalid attachment data for \(name)")
            }
            var bytes: [UInt8]?
            // A new attachment's name follows CouchDB's rule (one stored before is left alone).
            if attachment["data"] != nil || attachment["follows"] != nil { try Self.checkAttachmentName(name) }
            if let data = attachment["data"]?.stringValue {
                // Strict base64 (line breaks and spaces aside), as CouchDB decodes it.
                let compact = data.contains(where: \.isWhitespace) ? data.filter { !$0.isWhitespace } : data
                guard Self.isStrictBase64(compact), let decoded = Data(base64Encoded: compact) else {
                    throw CouchError(.badRequest, "bad_request", "Invalid attachment data for \(name)")
                }
                bytes = Array(decoded)
            } else if attachment["follows"]?.boolValue == true {
                guard let part = followed[name] else {
                    throw CouchError(.badRequest, "bad_request", "attachment \(name) follows, but no part holds it")
                }
                bytes = part
            } else if attachment["digest"]?.stringValue?.hasPrefix("sha1-") != true,
                      attachment["stub"]?.boolValue == true || attachment["digest"] != nil {
                // A stub without Sofa's key (none, or a peer's digest) is the current attachment
                // of that name; one with no digest, at the revpos it names if any (CouchDB's rule).
                if current == .none {
                    // The parent's attachments (the current document's when the parent's body is gone).
                    var read = parent == nil ? nil : try? await database.get(id: id, rev: parent)
                    if read == nil { read = try? await database.get(id: id) }
                    current = .some(read.flatMap { try? $0.json() }?["_attachments"]?.objectValue)
                }
                guard let known = current??[name]?.objectValue, let key = known["digest"]?.stringValue,
                      attachment["digest"] != nil || attachment["revpos"] == nil
                        || attachment["revpos"]?.intValue == known["revpos"]?.intValue else {
                    throw CouchError(.preconditionFailed, "missing_stub", "Invalid attachment stub in \(id) for \(name)")
                }
                let hadDigest = attachment["digest"] != nil
                attachment["digest"] = .string(key)
                attachment["length"] = known["length"] ?? attachment["length"]
                if !hadDigest {
                    // A bare stub is the stored attachment as it is.
                    attachment["revpos"] = known["revpos"] ?? attachment["revpos"]
                    attachment["content_type"] = known["content_type"] ?? attachment["content_type"]
                }
                attachment["stub"] = true
                attachments[name] = .object(attachment)
                changed = true
                continue
            }
            guard let bytes else { continue }
            let blob = try await database.putBlob(bytes)
            attachment["data"] = nil
            attachment["follows"] = nil
            attachment["digest"] = .string(blob.key)
            attachment["length"] = .int(Int64(blob.length))
            attachment["stub"] = true
            if attachment["content_type"] == nil { attachment["content_type"] = "application/octet-stream" }
            if attachment["revpos"] == nil { attachment["revpos"] = .int(revpos) }
            attachments[name] = .object(attachment)
            changed = true
        }
        guard changed else { return body }
        var result = body
        result["_attachments"] = .object(attachments)
        return result
    }

    /// Whether `text` is base64 with its padding: a multiple of 4 characters of the alphabet,
    /// `=` only in the last two places.
    static func isStrictBase64(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count % 4 == 0 else { return false }
        let padding = bytes.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard padding <= 2 else { return false }
        return bytes.dropLast(padding).allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/")
        }
    }

    /// A stored body with its attachments' bytes inline (`data`, base64) instead of stubs.
    /// With `since` (the generation of the newest revision the client has, from `atts_since`),
    /// an attachment added at or before it stays a stub: the client has its bytes.
    func inlineAttachments(_ body: [UInt8], _ database: Database, since: Int64? = nil) async throws -> [UInt8] {
        guard var object = JSON.tryParse(body)?.objectValue, case .object(var attachments)? = object["_attachments"] else { return body }
        for (name, value) in attachments {
            guard var attachment = value.objectValue, let digest = attachment["digest"]?.stringValue else { continue }
            if let since, let revpos = attachment["revpos"]?.intValue, revpos <= since { continue }
            let bytes = try await database.blob(digest)
            attachment["stub"] = nil
            attachment["data"] = .string(Data(bytes).base64EncodedString())
            attachments[name] = .object(attachment)
        }
        object["_attachments"] = .object(attachments)
        return JSON.object(object).compactBytes()
    }

    /// CouchDB's rule: a name starting with `_` is reserved (`_design/x/_view/…` and the like
    /// are not attachments).
    static func checkAttachmentName(_ name: String) throws(CouchError) {
        if name.hasPrefix("_") {
            throw CouchError(.badRequest, "bad_request", "Attachment name '\(name)' starts with prohibited character '_'")
        }
    }

    func attachmentRoute(_ call: inout CouchCall, _ database: Database, id: String, name: String) async throws -> Response {
        if call.method == .put { try Self.checkAttachmentName(name) }
        switch call.method {
        case .get, .head:
            let document = try await database.get(id: id, rev: call.query["rev"])
            guard let attachment = (try? document.json())?["_attachments"]?[name]?.objectValue,
                  let digest = attachment["digest"]?.stringValue else {
                throw CouchError(.notFound, "not_found", "Document is missing attachment")
            }
            return try await readAttachment(call, database, digest: digest, attachment: attachment)
        case .put:
            let rev = call.query["rev"] ?? Self.ifMatch(call)
            var object = JSONObject()
            var generation: Int64 = 0
            if let rev {
                let current = try await database.get(id: id, rev: nil)
                guard current.rev == rev else { throw CouchError(.conflict, "conflict", "Document update conflict.") }
                object = (try current.json()).objectValue ?? [:]
                generation = Int64(rev.prefix { $0 != "-" }) ?? 0
            }
            let type = call.header(.contentType) ?? "application/octet-stream"
            let chunks = call.request.body.map { Array($0.readableBytesView) }
            let blob = try await database.putBlob(chunks, window: Self.uploadWindow)
            HeapTrimmer.shared.note(bytes: Int(clamping: blob.length))
            var attachments = object["_attachments"]?.objectValue ?? [:]
            attachments[name] = ["content_type": .string(type), "digest": .string(blob.key), "length": .int(Int64(blob.length)),
                                 "revpos": .int(generation + 1), "stub": true]
            object["_attachments"] = .object(attachments)
            let result = try await database.put(id: id, body: JSON.object(object).compactBytes(), rev: rev)
            return located(Self.written(result, batch: false), call, path: call.request.uri.path)
        case .delete:
            guard let rev = call.query["rev"] ?? Self.ifMatch(call) else {
                throw CouchError(.conflict, "conflict", "Document update conflict.")
            }
            let current = try await database.get(id: id, rev: nil)
            guard current.rev == rev else { throw CouchError(.conflict, "conflict", "Document update conflict.") }
            var object = (try current.json()).objectValue ?? [:]
            var attachments = object["_attachments"]?.objectValue ?? [:]
            guard attachments.removeValue(forKey: name) != nil else {
                throw CouchError(.notFound, "not_found", "Document is missing attachment")
            }
            object["_attachments"] = attachments.isEmpty ? nil : .object(attachments)
            let result = try await database.put(id: id, body: JSON.object(object).compactBytes(), rev: rev)
            return Self.written(result, batch: false, status: .ok)
        default:
            throw CouchError(.methodNotAllowed, "method_not_allowed", "Only GET,HEAD,PUT,DELETE allowed")
        }
    }

    /// Chunks of an attachment PUT in flight to sofa-blob at once: fewer than the SDK's, as each
    /// holds a megabyte here twice (the chunk and its message) and this process keeps within 64 MiB
    /// whatever its clients send; four still overlap the round trips (measured with 1 GiB: 231 MB/s
    /// up, against 221 with six, a peak of 62.8 MiB against 66–67).
    static let uploadWindow = 4

    /// An attachment's bytes, streamed from sofa-blob chunk by chunk (one `Range` honoured).
    private func readAttachment(_ call: CouchCall, _ database: Database, digest: String, attachment: JSONObject) async throws -> Response {
        let length = UInt64(attachment["length"]?.intValue ?? 0)
        var headers: HTTPFields = [:]
        headers[.contentType] = attachment["content_type"]?.stringValue ?? "application/octet-stream"
        headers[.eTag] = "\"\(digest)\""
        headers[.acceptRanges] = "bytes"
        if call.ifNoneMatch("\"\(digest)\"") { return Response(status: .notModified, headers: headers) }
        var start: UInt64 = 0, end = length == 0 ? 0 : length - 1
        var status = HTTPResponse.Status.ok
        if let range = call.header(.range), range.hasPrefix("bytes="), length > 0, !range.contains(",") {
            let bounds = range.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            var parsed = false
            if bounds.count == 2 {
                if bounds[0].isEmpty, let suffix = UInt64(bounds[1]) {
                    start = length - min(length, suffix)
                    parsed = true
                } else if let first = UInt64(bounds[0]), bounds[1].isEmpty || UInt64(bounds[1]) != nil {
                    start = first
                    if let last = UInt64(bounds[1]) { end = min(last, length - 1) }
                    parsed = true
                }
            }
            if parsed {
                guard start <= end, start < length else {
                    headers[.contentRange] = "bytes */\(length)"
                    return Response(status: .rangeNotSatisfiable, headers: headers)
                }
                // `bytes=0-` is the whole attachment (CouchDB's 200); any other range, even one
                // that covers it all, is a part (206).
                if !(start == 0 && bounds[1].isEmpty && !bounds[0].isEmpty) {
                    status = .partialContent
                    headers[.contentRange] = "bytes \(start)-\(end)/\(length)"
                }
            }
        }
        let count = length == 0 ? 0 : end - start + 1
        headers[.contentLength] = "\(count)"
        if call.method == .head || count == 0 { return Response(status: status, headers: headers) }
        let body = ResponseBody(contentLength: Int(count)) { [start] writer in
            try await Self.writeBlob(digest, from: start, count: count, of: database, to: &writer)
            try await writer.finish(nil)
            HeapTrimmer.shared.note(bytes: Int(clamping: count))
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// Writes `count` bytes of a blob from `offset` to a response, read from sofa-blob a chunk
    /// at a time; a blob that ends early fails the response (its length was promised).
    static func writeBlob(_ digest: String, from offset: UInt64, count: UInt64, of database: Database,
                          to writer: inout any ResponseBodyWriter) async throws {
        var offset = offset, left = count
        while left > 0 {
            let (bytes, _) = try await database.readBlob(digest, offset: offset, length: Int(min(UInt64(Database.blobChunkSize), left)))
            guard !bytes.isEmpty else { throw SofaError(.unexpectedError, "blob \(digest) ended \(left) bytes early") }
            try await writer.write(ByteBuffer(bytes: bytes))
            offset += UInt64(bytes.count)
            left -= UInt64(min(UInt64(bytes.count), left))
        }
    }
}
