internal import Hummingbird
internal import HTTPTypes
internal import NIOCore
internal import SofaCore
internal import Foundation

/// One HTTP request as the API reads it: its method, its path split into percent-decoded segments
/// (a `/` written `%2F` stays inside its segment, as CouchDB database names and document IDs
/// need), its query parameters, its headers and its body.
struct CouchCall: Sendable {
    var request: Request
    let method: HTTPRequest.Method
    let segments: [String]
    let query: [String: String]
    /// Who is asking (nil: nobody signed in).
    var user: HTTPUser?
    /// The client's IP address ("" when unknown).
    var clientAddress = ""

    init(_ request: Request) throws(CouchError) {
        self.request = request
        // CouchDB lets a client that can only POST name the method it means (PUT, DELETE, …).
        if request.method == .post, let override = request.headers[Self.methodOverride]?.uppercased(),
           Self.overridable.contains(override), let named = HTTPRequest.Method(override) {
            method = named
        } else {
            method = request.method
        }
        let path = request.uri.path
        var segments: [String] = []
        for raw in path.split(separator: "/", omittingEmptySubsequences: true) {
            guard raw.contains("%") else {
                segments.append(String(raw))
                continue
            }
            guard let decoded = String(raw).removingPercentEncoding else {
                throw CouchError(.badRequest, "bad_request", "the path is not valid percent-encoded UTF-8")
            }
            segments.append(decoded)
        }
        self.segments = segments
        var query: [String: String] = [:]
        for pair in (request.uri.query ?? "").split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = Self.formDecoded(parts[0]), value = parts.count > 1 ? Self.formDecoded(parts[1]) : ""
            guard let key, let value else {
                throw CouchError(.badRequest, "bad_request", "the query string is not valid percent-encoded UTF-8")
            }
            query[key] = value
        }
        self.query = query
    }

    static let methodOverride = HTTPField.Name("X-HTTP-Method-Override")!
    /// The methods a POST may name (CouchDB's list).
    static let overridable: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "TRACE", "CONNECT", "COPY"]

    static func formDecoded(_ text: Substring) -> String? {
        guard text.contains("%") || text.contains("+") else { return String(text) }
        return text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    func header(_ name: HTTPField.Name) -> String? { request.headers[name] }

    // MARK: Query parameters

    /// A document's or a feed's flag, as CouchDB reads those: `true` and `false` written so, any
    /// other value ignored (`conflicts=True` is no flag, not an error: chttpd's "unknown key value
    /// pair, ignore").
    func flag(_ name: String, default value: Bool = false) -> Bool {
        switch query[name] {
        case "true": return true
        case "false": return false
        default: return value
        }
    }

    /// A listing's boolean (`_all_dbs`, `_all_docs`, views), as CouchDB parses those: `true` or
    /// `false` in any case; another value is refused, naming it.
    func boolean(_ name: String, default value: Bool = false) throws(CouchError) -> Bool {
        guard let text = query[name] else { return value }
        guard let flag = Self.boolean(text) else { throw Self.invalidBoolean(text) }
        return flag
    }

    static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true": return true
        case "false": return false
        default: return nil
        }
    }

    static func invalidBoolean(_ text: String) -> CouchError {
        CouchError(.badRequest, "query_parse_error", "Invalid boolean parameter: \"\(text)\"")
    }

    func integer(_ name: String) throws(CouchError) -> Int? {
        guard let text = query[name] else { return nil }
        guard let value = Int(text), value >= 0 else {
            throw CouchError(.badRequest, "query_parse_error", "Invalid value for integer: \"\(name)\"")
        }
        return value
    }

    /// A parameter holding JSON (`startkey="a"`, `keys=[…]`, `open_revs=[…]`).
    func json(_ name: String) throws(CouchError) -> JSON? {
        guard let text = query[name] else { return nil }
        guard let value = JSON.tryParse(text) else {
            throw CouchError(.badRequest, "bad_request", "invalid JSON in the query parameter \"\(name)\"")
        }
        return value
    }

    // MARK: Body

    /// The body, at most `limit` bytes (beyond: 413), inflated when it is sent compressed
    /// (`Content-Encoding: gzip` or `deflate`, as CouchDB clients send by default).
    mutating func body(limit: Int) async throws(CouchError) -> [UInt8] {
        let bytes: [UInt8]
        do {
            let buffer = try await request.collectBody(upTo: limit)
            bytes = Array(buffer.readableBytesView)
            HeapTrimmer.shared.note(bytes: bytes.count)
        } catch {
            throw CouchError(.contentTooLarge, "too_large", "the request body is larger than \(limit) bytes")
        }
        switch header(.contentEncoding)?.lowercased() {
        case nil, "identity": return bytes
        case "gzip", "deflate", "x-gzip":
            do { return try Gzip.inflate(bytes, limit: limit) } catch {
                switch error {
                case .tooLarge: throw CouchError(.contentTooLarge, "too_large", "the request body inflates beyond \(limit) bytes")
                case .invalid: throw CouchError(.badRequest, "bad_request", "the request body is not valid \(header(.contentEncoding) ?? "")")
                }
            }
        case let other?:
            throw CouchError(.unsupportedMediaType, "bad_content_type", "Content-Encoding \(other) is not supported")
        }
    }

    /// The body as JSON: CouchDB's `bad_request` for anything else. A POST must say it is JSON
    /// (415 otherwise, as CouchDB answers); other methods are read as JSON whatever they say.
    mutating func jsonBody(limit: Int) async throws(CouchError) -> JSON {
        if method == .post, let type = header(.contentType)?.lowercased(), !type.isEmpty,
           !type.hasPrefix("application/json"), !type.hasPrefix("text/plain") {
            throw CouchError(.unsupportedMediaType, "bad_content_type", "Content-Type must be application/json")
        }
        let bytes = try await body(limit: limit)
        do throws(SofaError) {
            return try JSON.parse(bytes)
        } catch {
            // CouchDB's words, then what is wrong (nesting, a number out of range, a NUL…).
            throw CouchError(.badRequest, "bad_request", "invalid UTF-8 JSON: \(error.message)")
        }
    }

    /// The body, a JSON object; `what` names it in the refusal of anything else ("Document" for
    /// a document's body, as CouchDB words it).
    mutating func objectBody(limit: Int, what: String = "Request body") async throws(CouchError) -> JSONObject {
        guard let object = try await jsonBody(limit: limit).objectValue else {
            throw CouchError(.badRequest, "bad_request", "\(what) must be a JSON object")
        }
        return object
    }

    /// Whether `If-None-Match` names `etag` (strong or weak, alone or in a list).
    func ifNoneMatch(_ etag: String) -> Bool {
        guard let header = header(.ifNoneMatch) else { return false }
        return header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || (tag.hasPrefix("W/") && tag.dropFirst(2) == etag)
        }
    }
}

/// A failure answered as CouchDB answers it: a status and `{"error": …, "reason": …}`.
struct CouchError: Error, Sendable {
    var status: HTTPResponse.Status
    var error: String
    var reason: String

    init(_ status: HTTPResponse.Status, _ error: String, _ reason: String) {
        self.status = status
        self.error = error
        self.reason = reason
    }

    /// A Sofa failure in CouchDB's words.
    init(_ sofa: SofaError) {
        switch sofa.sofaCode {
        // A write naming a revision of a missing document: CouchDB's update conflict.
        case .notFound where sofa.isRevisionOfMissingDocument: self.init(.conflict, "conflict", "Document update conflict.")
        case .notFound: self.init(.notFound, "not_found", sofa.message.isEmpty ? "missing" : Self.missing(sofa.message))
        case .conflict: self.init(.conflict, "conflict", "Document update conflict.")
        case .databaseExists:
            self.init(.preconditionFailed, "file_exists", "The database could not be created, the file already exists.")
        case .badDatabaseName: self.init(.badRequest, "illegal_database_name", sofa.message)
        case .badDocID: self.init(.badRequest, "illegal_docid", sofa.message)
        case .badRevisionID: self.init(.badRequest, "bad_request", "Invalid rev format")
        case .badJSON, .invalidParameter, .invalidQuery, .wrongFormat, .malformedMessage:
            self.init(.badRequest, "bad_request", sofa.message)
        case .unauthorized: self.init(.unauthorized, "unauthorized", sofa.message)
        case .forbidden: self.init(.forbidden, "forbidden", sofa.message)
        case .invalidDesignDoc: self.init(.badRequest, "invalid_design_doc", sofa.message)
        case .compilationError: self.init(.badRequest, "compilation_error", sofa.message)
        case .messageTooLarge: self.init(.contentTooLarge, "too_large", sofa.message)
        case .unsupported, .unimplemented: self.init(.notImplemented, "not_implemented", sofa.message)
        case .unavailable, .busy, .shuttingDown: self.init(.serviceUnavailable, "service_unavailable", sofa.message)
        case .timeout: self.init(.gatewayTimeout, "timeout", sofa.message)
        default: self.init(.internalServerError, "unknown_error", sofa.description)
        }
    }

    /// CouchDB says "missing" for a document that never was and "deleted" for a tombstone; a
    /// missing database is "Database does not exist.".
    static func missing(_ message: String) -> String {
        if message.hasPrefix("database '") {
            return "Database does not exist."
        }
        // A design document without the view asked for (CouchDB's word for it).
        if message.hasPrefix("no view '") { return "missing_named_view" }
        return message.contains("deleted") ? "deleted" : "missing"
    }

    var json: JSON { .object(JSONObject([("error", .string(error)), ("reason", .string(reason))])) }
}
