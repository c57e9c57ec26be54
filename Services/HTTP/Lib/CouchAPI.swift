internal import Hummingbird
internal import HTTPTypes
internal import NIOCore
internal import SofaClient
internal import SofaCore
internal import SofaFiles
internal import SofaServer
internal import Logging
internal import Foundation

struct CouchLimits: Sendable {
    var maxRequestBytes: Int
    var maxDocumentBytes: Int

    /// The largest body that may carry attachments' bytes (a document or a `_bulk_docs` with
    /// attachments inline, as PouchDB pushes them; a `multipart/related` document): it is read
    /// whole, the attachments go to sofa-blob, and what is left must pass the request and
    /// document limits on its way to storage. A larger attachment is PUT on its own, streamed.
    var maxBodyWithAttachments: Int { max(maxRequestBytes, maxDocumentBytes, 64 << 20) }

    /// `maxBodyWithAttachments` for a signed-in user; `otherwise` for an anonymous request (its
    /// body is read before the gateway says whether it may write at all).
    func body(_ call: CouchCall, otherwise: Int) -> Int { call.user == nil ? otherwise : maxBodyWithAttachments }
}

/// CouchDB's HTTP API over the gateway: each request is routed by its path (`/`, `/_session`,
/// `/db`, `/db/_bulk_docs`, `/db/doc`, …) and sent on as its user.
final class CouchAPI: Sendable {
    let gateway: GatewayPool
    let sessions: HTTPSessions
    let logger: Logger
    let limits: CouchLimits
    let cors: CORSRules
    let uuid: String
    /// Plain gets read here from the database files (nil: the data directory is not reachable).
    let reads: HTTPReads?
    /// "https" when sofa-http serves TLS (a `Location` names it), else "http".
    let scheme: String
    /// The port sofa-http listens on (a URL naming it names this server, whichever proxy the
    /// request came through).
    let listenPort: String?

    init(gateway: GatewayPool, sessions: HTTPSessions, logger: Logger, limits: CouchLimits, cors: CORSRules, uuid: String,
         reads: HTTPReads? = nil, scheme: String = "http", listenPort: String? = nil) {
        self.reads = reads
        self.scheme = scheme
        self.listenPort = listenPort
        self.gateway = gateway
        self.sessions = sessions
        self.logger = logger
        self.limits = limits
        self.cors = cors
        self.uuid = uuid
    }

    /// Every request's answer: an error of the API or of Sofa becomes CouchDB's error body.
    func respond(_ request: Request, _ context: CouchContext) async -> Response {
        let origin = request.headers[.origin]
        if request.method == .options, let preflight = cors.preflight(request) { return preflight }
        var response: Response
        var routed: CouchCall?
        do {
            var call = try CouchCall(request)
            call.clientAddress = context.clientAddress
            call.user = try await sessions.user(of: call)
            routed = call
            response = try await route(&call)
            // A write to `_users` through this process is forgotten at once (a password changed
            // here stops working on the next request); other writers' reach it through the feed.
            if call.segments.first == "_users", call.method != .get, call.method != .head {
                sessions.forgetEveryone()
            }
            if let renewed = call.user?.renewedCookie { response.headers[.setCookie] = sessions.setCookieHeader(renewed) }
        } catch let error as CouchError {
            response = Self.error(error)
        } catch let error as SofaError {
            if error.is(.forbidden), let routed, let reason = Self.adminOnly(routed) {
                response = Self.error(CouchError(.unauthorized, "unauthorized", reason))
            } else {
                response = Self.error(CouchError(error))
            }
        } catch {
            response = Self.error(CouchError(.internalServerError, "unknown_error", "\(error)"))
        }
        cors.decorate(&response, origin: origin)
        return response
    }

    /// CouchDB's refusal of a signed-in user who is not an admin, for the requests only an admin
    /// makes (chttpd's `require_admin` and `require_db_admin`): 401, not the 403 of a database's
    /// other refusals. Nil for other requests.
    static func adminOnly(_ call: CouchCall) -> String? {
        let segments = call.segments
        if segments == ["_all_dbs"] || (segments == ["_dbs_info"] && call.method == .get)
            || (segments.count == 1 && (call.method == .put || call.method == .delete)) {
            return "You are not a server admin."
        }
        // The system databases' listings are for server admins (their documents, for their owners).
        if segments.count >= 2, ["_users", "_replicator"].contains(segments[0]), ["_all_docs", "_changes"].contains(segments[1]) {
            return "You are not a server admin."
        }
        if segments.count >= 2, ["_compact", "_view_cleanup"].contains(segments[1]) {
            return "You are not a server or db admin."
        }
        return nil
    }

    /// The client for the request's user.
    func client(_ call: CouchCall) -> SofaClient { gateway.acting(as: call.user?.name) }

    private func route(_ call: inout CouchCall) async throws -> Response {
        let segments = call.segments
        guard let first = segments.first else { return try welcome(call) }
        if first.hasPrefix("_") {
            switch (first, segments.count) {
            case ("_up", 1): return try await up(call)
            case ("_uuids", 1): return try uuids(call)
            case ("_all_dbs", 1): return try await allDatabases(call)
            case ("_dbs_info", 1): return try await databasesInfo(&call)
            case ("_session", 1): return try await session(&call)
            case ("_active_tasks", 1): return try await activeTasks(call)
            case ("_scheduler", 2) where segments[1] == "jobs": return try await schedulerJobs(call)
            case ("_replicate", 1): return try await replicate(&call)
            case ("_users", _), ("_replicator", _): break  // databases of their own
            default: throw CouchError(.notFound, "not_found", "Database does not exist.")
            }
        }
        return try await databaseRoute(&call)
    }

    // MARK: Responses

    static func json(_ value: JSON, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        json(bytes: value.compactBytes(), status: status, headers: headers)
    }

    static func json(bytes: [UInt8], status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        let answer = jsonAnswer(bytes: bytes, headers: headers)
        HeapTrimmer.shared.note(bytes: answer.body.count)
        return Response(status: status, headers: answer.headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// A JSON answer's headers and body (the JSON and a newline), before the server adds its own.
    struct JSONAnswer {
        var headers: HTTPFields
        var body: [UInt8]
    }

    static func jsonAnswer(bytes: [UInt8], headers: HTTPFields = [:]) -> JSONAnswer {
        var fields = headers
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "must-revalidate"
        var body = bytes
        body.append(0x0A)
        return JSONAnswer(headers: fields, body: body)
    }

    static func error(_ error: CouchError) -> Response {
        var headers: HTTPFields = [:]
        if error.status == .unauthorized { headers[.wwwAuthenticate] = "Basic realm=\"sofa\"" }
        return json(error.json, status: error.status, headers: headers)
    }

    static let ok: JSON = ["ok": true]
    /// The IDs of `_uuids` and of documents POSTed without one.
    static let uuids = SequentialUUIDs()

    static func requireMethod(_ call: CouchCall, _ allowed: HTTPRequest.Method...) throws(CouchError) {
        guard allowed.contains(call.method) else {
            throw CouchError(.methodNotAllowed, "method_not_allowed",
                             "Only \(allowed.map(\.rawValue).joined(separator: ",")) allowed")
        }
    }

    // MARK: Server

    private func welcome(_ call: CouchCall) throws -> Response {
        try Self.requireMethod(call, .get, .head)
        return Self.json([
            "couchdb": "Welcome", "version": "3.4.3", "uuid": .string(uuid),
            "vendor": ["name": "Sofa", "version": .string(ServiceRuntime.version)],
            "features": ["access-ready", "scheduler"],
        ])
    }

    private func up(_ call: CouchCall) async throws -> Response {
        try Self.requireMethod(call, .get, .head)
        do {
            _ = try await gateway.cluster.health()
            return Self.json(["status": "ok", "seeds": [:]])
        } catch {
            return Self.json(["status": "maintenance_mode"], status: .notFound)
        }
    }

    private func uuids(_ call: CouchCall) throws -> Response {
        try Self.requireMethod(call, .get)
        let count = try call.integer("count") ?? 1
        guard count <= 1000 else { throw CouchError(.badRequest, "bad_request", "count parameter too large") }
        let ids = try (0..<count).map { _ in JSON.string(try Self.uuids.next()) }
        var response = Self.json(["uuids": .array(ids)])
        // Never cached: each answer's IDs are new (CouchDB's headers).
        response.headers[.cacheControl] = "must-revalidate, no-cache"
        response.headers[HTTPField.Name("Pragma")!] = "no-cache"
        response.headers[.eTag] = "\"\(try randomBytes(8).hexString)\""
        return response
    }

    private func allDatabases(_ call: CouchCall) async throws -> Response {
        try Self.requireMethod(call, .get)
        var names = try await client(call).databases().sorted()
        let descending = try call.boolean("descending")
        // `start_key`/`startkey` and `end_key`/`endkey` (JSON strings, inclusive), in the order asked.
        let start = try (call.json("start_key") ?? call.json("startkey"))?.stringValue
        let end = try (call.json("end_key") ?? call.json("endkey"))?.stringValue
        names = names.filter { name in
            let low = descending ? end : start, high = descending ? start : end
            return (low.map { name >= $0 } ?? true) && (high.map { name <= $0 } ?? true)
        }
        if descending { names.reverse() }
        let skip = try call.integer("skip") ?? 0
        names = Array(names.dropFirst(skip))
        if let limit = try call.integer("limit") { names = Array(names.prefix(limit)) }
        return Self.json(.array(names.map { .string($0) }))
    }

    /// `POST /_dbs_info` with `{"keys": [names]}`: each database's info (as `GET /db`) or
    /// `not_found`, in the order asked; `GET /_dbs_info`: every database's, in name order.
    private func databasesInfo(_ call: inout CouchCall) async throws -> Response {
        let names: [String]
        if call.method == .post {
            guard let keys = try await call.objectBody(limit: limits.maxRequestBytes)["keys"]?.arrayValue else {
                throw CouchError(.badRequest, "bad_request", "`keys` member must exist.")
            }
            guard keys.count <= 100 else { throw CouchError(.badRequest, "bad_request", "`keys` member must be less than or equal to 100") }
            names = keys.map { $0.stringValue ?? $0.compactString }
        } else {
            try Self.requireMethod(call, .get, .post)
            names = try await client(call).databases().sorted()
        }
        var rows: [JSON] = []
        for name in names {
            do {
                rows.append(["key": .string(name), "info": try await databaseInfo(client(call).database(name))])
            } catch let error as SofaError where error.is(.notFound) || error.is(.badDatabaseName) {
                rows.append(["key": .string(name), "error": "not_found"])
            }
        }
        return Self.json(.array(rows))
    }

    private func session(_ call: inout CouchCall) async throws -> Response {
        switch call.method {
        case .get, .head:
            var roles: [String] = []
            if call.user != nil { roles = try await client(call).session().roles }
            let context: JSON = ["name": call.user.map { .string($0.name) } ?? .null, "roles": .array(roles.map { .string($0) })]
            var info: JSONObject = ["authentication_handlers": ["cookie", "default"], "authentication_db": "_users"]
            if let user = call.user { info["authenticated"] = .string(user.method) }
            return Self.json(["ok": true, "userCtx": context, "info": .object(info)])
        case .post:
            let (name, password) = try await credentials(&call)
            // `next` and `fail`: where a form's sign-in goes on (a path of this server only).
            let next = call.query["next"].flatMap(Self.localPath), fail = call.query["fail"].flatMap(Self.localPath)
            let roles: [String], cookie: String
            switch await signIn(name, password, call) {
            case .success(let made): (roles, cookie) = made
            case .failure(let error):
                if let fail { return Response(status: .found, headers: [.location: fail]) }
                throw error
            }
            var headers: HTTPFields = [:]
            headers[.setCookie] = sessions.setCookieHeader(cookie)
            if let next { headers[.location] = next }
            return Self.json(["ok": true, "name": .string(name), "roles": .array(roles.map { .string($0) })],
                             status: next == nil ? .ok : .found, headers: headers)
        case .delete:
            var headers: HTTPFields = [:]
            headers[.setCookie] = sessions.setCookieHeader("", maxAge: 0)
            return Self.json(Self.ok, headers: headers)
        default:
            throw CouchError(.methodNotAllowed, "method_not_allowed", "Only GET,HEAD,POST,DELETE allowed")
        }
    }

    /// Checks a name and password and makes the session's cookie: the user's roles and the cookie.
    private func signIn(_ name: String, _ password: String, _ call: CouchCall) async -> Result<([String], String), CouchError> {
        do {
            try await sessions.check(name: name, password: password, from: call.clientAddress)
            let roles = try await gateway.acting(as: name).session().roles
            guard let cookie = await sessions.makeCookie(for: name) else {
                return .failure(CouchError(.unauthorized, "unauthorized", "Name or password is incorrect."))
            }
            return .success((roles, cookie))
        } catch {
            return .failure((error as? CouchError) ?? (error as? SofaError).map { CouchError($0) }
                ?? CouchError(.internalServerError, "unknown_error", "\(error)"))
        }
    }

    /// A redirect target given by a client: a path of this server (`/…`, not `//host`), in
    /// printable ASCII with no space or backslash (a browser drops tabs and would read
    /// `/<tab>/host` as `//host`), else nil.
    static func localPath(_ text: String) -> String? {
        guard text.hasPrefix("/"), !text.hasPrefix("//"),
              text.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\\") }) else { return nil }
        return text
    }

    /// `POST /_session`'s name and password: JSON or a form.
    private func credentials(_ call: inout CouchCall) async throws(CouchError) -> (String, String) {
        let type = call.header(.contentType)?.lowercased() ?? ""
        if type.hasPrefix("application/x-www-form-urlencoded") {
            let text = String(decoding: try await call.body(limit: 64 * 1024), as: UTF8.self)
            var fields: [String: String] = [:]
            for pair in text.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if let key = CouchCall.formDecoded(parts[0]) {
                    fields[key] = parts.count > 1 ? CouchCall.formDecoded(parts[1]) : ""
                }
            }
            guard let name = fields["name"] ?? fields["username"], let password = fields["password"] else {
                throw CouchError(.badRequest, "bad_request", "name and password are required")
            }
            return (name, password)
        }
        let body = try await call.objectBody(limit: 64 * 1024)
        guard let name = (body["name"] ?? body["username"])?.stringValue, let password = body["password"]?.stringValue else {
            throw CouchError(.badRequest, "bad_request", "name and password are required")
        }
        return (name, password)
    }
}
