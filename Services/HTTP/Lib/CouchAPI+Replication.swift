internal import Hummingbird
internal import HTTPTypes
internal import SofaClient
internal import SofaCore
internal import SofaWire

// `/_replicate`, `/_active_tasks` and `/_scheduler/jobs`, on sofa-replicator. A source or target
// is a database of this cluster ("db", or CouchDB's `{"url": …}` naming a database here) or another
// cluster's gateway (`tcp://host:port/db`).

extension CouchAPI {
    func replicate(_ call: inout CouchCall) async throws -> Response {
        try Self.requireMethod(call, .post)
        let body = try await call.objectBody(limit: 1 << 20)
        guard let source = try Self.endpoint(body["source"], call), let target = try Self.endpoint(body["target"], call) else {
            throw CouchError(.badRequest, "bad_request", "source and target are required")
        }
        let continuous = body["continuous"]?.boolValue ?? false
        let client = client(call)
        if body["cancel"]?.boolValue == true {
            let running = try await client.replications().filter { $0.source == source && $0.target == target && !$0.state.isFinal }
            guard !running.isEmpty else { throw CouchError(.notFound, "not_found", "Replication not found") }
            for replication in running { try await client.stopReplication(replication.id) }
            return Self.json(["ok": true, "_local_id": .string(running[0].id)])
        }
        var filter = ReplicationFilter.none
        if let ids = body["doc_ids"]?.arrayValue { filter.docIDs = ids.compactMap(\.stringValue) }
        // `filter`: a design document's filter "ddoc/name" (with `query_params`), as in CouchDB;
        // Sofa's query condition otherwise.
        if let given = body["filter"]?.stringValue, !given.isEmpty {
            if ReplicationSpec.isDesignFilter(given) {
                filter.design = given
                filter.queryParams = body["query_params"]?.objectValue ?? [:]
            } else {
                filter.expression = given
            }
        }
        // CouchDB's replication keeps conflicts for the application, the winner chosen by its rule
        // on every replica (Sofa's `auto` would resolve them); `"conflicts": "auto"` asks for Sofa's.
        let conflicts = try ConflictPolicy.parse(body["conflicts"]?.stringValue ?? ConflictPolicy.couchdb.rawValue)
        let handle = try await client.replicate(from: source, to: target, mode: continuous ? .continuous : .oneShot, filter: filter,
                                                conflicts: conflicts)
        guard let id = handle.ids.first else { throw CouchError(.internalServerError, "unknown_error", "no replication started") }
        if continuous { return Self.json(["ok": true, "_local_id": .string(id)], status: .accepted) }
        let finished = try await handle.wait(timeout: .seconds(3600))
        let failed = finished.first { $0.state == .failed }
        if let failed { throw CouchError(.internalServerError, "replication_failed", failed.lastError) }
        let written = finished.reduce(UInt64(0)) { $0 + $1.docsWritten }
        let checked = finished.reduce(UInt64(0)) { $0 + $1.docsChecked }
        return Self.json(["ok": true, "session_id": .string(id), "docs_read": .int(Int64(checked)),
                          "docs_written": .int(Int64(written)), "doc_write_failures": 0])
    }

    /// A replication endpoint as CouchDB gives it: a name, a URL (whose last segment names a
    /// database of this cluster, unless it is another cluster's `tcp://` gateway), or `{"url": …}`.
    /// An HTTP URL must name this server (its host as the request reached it, or loopback): Sofa
    /// replicates with another server through its gateway, never by HTTP.
    static func endpoint(_ value: JSON?, _ call: CouchCall) throws(CouchError) -> String? {
        var text = value?.stringValue ?? value?["url"]?.stringValue
        guard var given = text, !given.isEmpty else { return nil }
        if given.hasPrefix("http://") || given.hasPrefix("https://") {
            while given.hasSuffix("/") { given.removeLast() }
            let parts = given.split(separator: "/", omittingEmptySubsequences: true)
            guard parts.count >= 3, isThisServer(String(parts[1]), secure: given.hasPrefix("https"), call) else {
                throw CouchError(.badRequest, "bad_request",
                                 "\(given) is not a database of this server: replicate with another Sofa cluster through its gateway (tcp://host:port/db)")
            }
            text = parts.last.map { String($0).removingPercentEncoding ?? String($0) }
        }
        return text
    }

    /// Whether `authority` (`user:password@host:port`) is this server: the port the request was
    /// sent to, on the host it was sent to or a loopback name.
    static func isThisServer(_ authority: String, secure: Bool, _ call: CouchCall) -> Bool {
        let named = hostAndPort(authority.split(separator: "@").last.map(String.init) ?? authority, secure: secure)
        guard let reached = call.request.head.authority.map({ hostAndPort($0, secure: secure) }) else {
            return false
        }
        return named.port == reached.port && (named.host == reached.host || ["localhost", "127.0.0.1", "::1"].contains(named.host))
    }

    /// `host:port` (`[v6]:port`) taken apart, lower-cased; the scheme's port when none is given.
    static func hostAndPort(_ text: String, secure: Bool) -> (host: String, port: String) {
        let host: Substring, rest: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            rest = text[text.index(after: close)...]
        } else {
            host = text.prefix { $0 != ":" }
            rest = text.dropFirst(host.count)
        }
        let port = rest.hasPrefix(":") ? String(rest.dropFirst()) : (secure ? "443" : "80")
        return (host.lowercased(), port)
    }

    func activeTasks(_ call: CouchCall) async throws -> Response {
        try Self.requireMethod(call, .get)
        let tasks = try await client(call).replications().filter { !$0.state.isFinal }.map { status -> JSON in
            ["type": "replication", "replication_id": .string(status.id), "doc_id": .null,
             "source": .string(status.source), "target": .string(status.target), "continuous": .bool(status.continuous),
             "docs_read": .int(Int64(status.docsChecked)), "docs_written": .int(Int64(status.docsWritten)),
             "doc_write_failures": 0, "checkpointed_source_seq": .string("\(status.checkpoint)")]
        }
        return Self.json(.array(tasks))
    }

    func schedulerJobs(_ call: CouchCall) async throws -> Response {
        try Self.requireMethod(call, .get)
        let jobs = try await client(call).replications().map { status -> JSON in
            ["id": .string(status.id), "database": "_replicator", "doc_id": .null, "source": .string(status.source),
             "target": .string(status.target), "state": .string(Self.schedulerState(status.state)),
             "info": ["docs_read": .int(Int64(status.docsChecked)), "docs_written": .int(Int64(status.docsWritten)),
                      "doc_write_failures": 0, "checkpointed_source_seq": .string("\(status.checkpoint)"),
                      "error": status.lastError.isEmpty ? .null : .string(status.lastError)]]
        }
        return Self.json(["total_rows": .int(Int64(jobs.count)), "offset": 0, "jobs": .array(jobs)])
    }

    static func schedulerState(_ state: ReplicationStatus.State) -> String {
        switch state {
        case .completed: "completed"
        case .failed: "failed"
        case .stopped: "stopped"
        default: "running"
        }
    }
}

/// Which browser origins may call the API (`SOFA_CORS_ORIGINS`: comma-separated, or `*`).
struct CORSRules: Sendable {
    let origins: Set<String>
    let any: Bool

    init(_ setting: String) {
        let list = setting.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        any = list.contains("*")
        origins = Set(list)
    }

    func allows(_ origin: String?) -> Bool {
        guard let origin else { return false }
        return any || origins.contains(origin)
    }

    /// The answer to a preflight (`OPTIONS` with `Access-Control-Request-Method`) from an allowed origin.
    func preflight(_ request: Request) -> Response? {
        guard let origin = request.headers[.origin], allows(origin), request.headers[.accessControlRequestMethod] != nil else {
            return nil
        }
        var response = Response(status: .ok)
        decorate(&response, origin: origin)
        response.headers[.accessControlAllowMethods] = "GET, HEAD, POST, PUT, DELETE, COPY, OPTIONS"
        response.headers[.accessControlAllowHeaders] = request.headers[.accessControlRequestHeaders]
            ?? "accept, authorization, content-type, origin, referer, if-match, destination, x-requested-with"
        response.headers[.accessControlMaxAge] = "600"
        return response
    }

    func decorate(_ response: inout Response, origin: String?) {
        guard let origin, allows(origin) else { return }
        response.headers[.accessControlAllowOrigin] = origin
        response.headers[.accessControlAllowCredentials] = "true"
        response.headers[.accessControlExposeHeaders] = "content-type, cache-control, etag, x-couch-request-id, x-couchdb-body-time"
        response.headers[.vary] = "Origin"
    }
}
