internal import SofaQL
internal import Hummingbird
internal import HTTPTypes
internal import SofaClient
internal import SofaCore
internal import SofaWire
internal import Foundation

// `/_replicate`, `/_active_tasks` and `/_scheduler/jobs`, on sofa-replicator. A source or target
// is a database of this cluster ("db", or CouchDB's `{"url": …}` naming a database here) or another
// cluster's gateway (`tcp://host:port/db`).

extension CouchAPI {
    func replicate(_ call: inout CouchCall) async throws -> Response {
        try Self.requireMethod(call, .post)
        let body = try await call.objectBody(limit: 1 << 20)
        let client = client(call)
        // A cancel names the replication by its ID (as `_active_tasks` lists it), or by its ends.
        if body["cancel"]?.boolValue == true, let id = body["replication_id"]?.stringValue {
            let running = try await client.replications().filter { $0.id == id && !$0.state.isFinal }
            guard !running.isEmpty else { throw CouchError(.notFound, "not_found", "Replication not found") }
            try await client.stopReplication(id)
            return Self.json(["ok": true, "_local_id": .string(id)])
        }
        guard let source = try Self.endpoint(body["source"], call, listenPort: listenPort),
              let target = try Self.endpoint(body["target"], call, listenPort: listenPort) else {
            throw CouchError(.badRequest, "bad_request", "source and target are required")
        }
        let continuous = body["continuous"]?.boolValue ?? false
        if body["cancel"]?.boolValue == true {
            let running = try await client.replications().filter { $0.source == source && $0.target == target && !$0.state.isFinal }
            guard !running.isEmpty else { throw CouchError(.notFound, "not_found", "Replication not found") }
            for replication in running { try await client.stopReplication(replication.id) }
            return Self.json(["ok": true, "_local_id": .string(running[0].id)])
        }
        var filter = ReplicationFilter.none
        try ReplicationDocument.checkOneWay(body)
        if let selector = body["selector"], selector != .null {
            // A Mango selector, kept as the JSON query condition it is (as `_changes`' `_selector`).
            guard selector.objectValue != nil else { throw CouchError(.badRequest, "bad_request", "`selector` must be a JSON object") }
            do throws(SofaError) {
                filter.expression = ReplicationSpec.jsonFilter(try Mango.condition(selector, at: nil))
            } catch {
                throw CouchError(.badRequest, "bad_request", error.message)
            }
        }
        if let ids = body["doc_ids"]?.arrayValue {
            // A design document's ID may come with its slash encoded (`_design%2Ffoo`), as in
            // CouchDB's replication tests; other IDs are taken as written.
            filter.docIDs = ids.compactMap(\.stringValue).map { id in
                id.lowercased().hasPrefix("_design%2f") ? "_design/" + id.dropFirst("_design%2f".count) : id
            }
        }
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
        let since: UInt64
        do { since = try ReplicationSpec.sinceSequence(body["since_seq"]) } catch {
            throw CouchError(.badRequest, "bad_request", error.message)
        }
        try await Self.prepareEnds(client, source: source, target: target, create: body["create_target"]?.boolValue == true)
        // A design filter the source does not have is 404 before anything starts (it would fail
        // the replication as it ran).
        if !filter.design.isEmpty, !source.hasPrefix("tcp://"),
           let failure = await Self.outcome({ _ = try await client.database(source).filter(filter.design, documents: [], request: [:]) }) {
            guard (failure as? SofaError)?.is(.notFound) == true else { throw failure }
            throw CouchError(.notFound, "not_found", "filter \(filter.design) is not in the source: \((failure as? SofaError)?.message ?? "")")
        }
        // No document named: nothing to replicate (Sofa's empty list would mean every document).
        if let ids = body["doc_ids"]?.arrayValue, ids.isEmpty { return Self.json(["ok": true, "no_changes": true]) }
        let started = Date()
        let handle = try await client.replicate(from: source, to: target, mode: continuous ? .continuous : .oneShot, filter: filter,
                                                conflicts: conflicts, since: since)
        guard let id = handle.ids.first else { throw CouchError(.internalServerError, "unknown_error", "no replication started") }
        if continuous { return Self.json(["ok": true, "_local_id": .string(id)], status: .accepted) }
        let finished = try await handle.wait(timeout: .seconds(3600))
        let failed = finished.first { $0.state == .failed }
        if let failed { throw CouchError(.internalServerError, "replication_failed", failed.lastError) }
        return Self.json(Self.oneShotAnswer(finished, started: started))
    }

    /// The ends of a replication asked for over HTTP, checked before it starts: a database of this
    /// cluster must exist (CouchDB's 404 `db_not_found`), except a target `create_target` asks
    /// for, which is made here in the versioning of the source (a server admin's right).
    static func prepareEnds(_ client: SofaClient, source: String, target: String, create: Bool) async throws {
        func local(_ name: String) -> Bool { !name.hasPrefix("tcp://") }
        var sourceInfo: DatabaseInfo?
        if local(source) {
            sourceInfo = try await existing(client, source)
            if sourceInfo == nil { throw CouchError(.notFound, "db_not_found", "could not open \(source)") }
        }
        guard local(target), try await existing(client, target) == nil else { return }
        guard create else { throw CouchError(.notFound, "db_not_found", "could not open \(target)") }
        let made = await outcome { _ = try await client.createDatabase(target, versioning: sourceInfo?.versioning ?? .revisionTrees) }
        if let made, (made as? SofaError)?.is(.databaseExists) != true { throw made }  // made meanwhile: fine
    }

    /// The database's info; nil when it does not exist.
    private static func existing(_ client: SofaClient, _ name: String) async throws(SofaError) -> DatabaseInfo? {
        let database = client.database(name)
        let found: Result<DatabaseInfo, SofaError> = await { () async -> Result<DatabaseInfo, SofaError> in
            do throws(SofaError) { return .success(try await database.info()) } catch { return .failure(error) }
        }()
        switch found {
        case .success(let info): return info
        case .failure(let error) where error.is(.notFound): return nil
        case .failure(let error): throw error
        }
    }

    /// The error a call ended with; nil when it succeeded.
    private static func outcome(_ call: () async throws -> Void) async -> (any Error)? {
        do { try await call() } catch { return error }
        return nil
    }

    /// A one-shot replication's answer, in CouchDB's shape: this session's figures, at the top and
    /// as the one entry of `history` (Sofa keeps no history of earlier sessions), `no_changes`
    /// when the target lacked nothing. `docs_read` counts the revisions fetched from the source,
    /// `missing_checked` those compared with the target.
    static func oneShotAnswer(_ finished: [ReplicationStatus], started: Date) -> JSON {
        func sum(_ figure: (ReplicationStatus) -> UInt64) -> JSON { .int(Int64(clamping: finished.reduce(0) { $0 + figure($1) })) }
        let session = JSON.string(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())
        let lastSeq = JSON.string("\(finished.map(\.checkpoint).max() ?? 0)")
        let read = sum(\.revisionsSent), written = sum(\.docsWritten), failures = sum(\.docWriteFailures)
        let entry: JSON = .object(JSONObject([
            ("session_id", session), ("start_time", .string(IMFDate.text(time_t(started.timeIntervalSince1970)))),
            ("end_time", .string(IMFDate.text(time(nil)))),
            ("start_last_seq", "0"), ("end_last_seq", lastSeq), ("recorded_seq", lastSeq),
            ("missing_checked", sum(\.docsChecked)), ("missing_found", read), ("docs_read", read), ("docs_written", written),
            ("doc_write_failures", failures),
        ]))
        var answer = JSONObject([("ok", true), ("session_id", session), ("source_last_seq", lastSeq),
                                 ("replication_id_version", 4), ("docs_read", read), ("docs_written", written),
                                 ("doc_write_failures", failures), ("history", [entry])])
        if read == .int(0) && failures == .int(0) { answer["no_changes"] = true }
        return .object(answer)
    }


    /// A replication endpoint as CouchDB gives it: a name, a URL (whose last segment names a
    /// database of this cluster, unless it is another cluster's `tcp://` gateway), or `{"url": …}`.
    /// An HTTP URL must name this server (its host as the request reached it, or loopback): Sofa
    /// replicates with another server through its gateway, never by HTTP.
    static func endpoint(_ value: JSON?, _ call: CouchCall, listenPort: String? = nil) throws(CouchError) -> String? {
        let text = value?.stringValue ?? value?["url"]?.stringValue
        guard let given = text, !given.isEmpty else { return nil }
        let lower = given.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return given }
        guard let named = ReplicationDocument.httpDatabaseURL(given),
              isThisServer(host: named.host, port: named.port, secure: lower.hasPrefix("https"), call, listenPort: listenPort) else {
            throw CouchError(.badRequest, "bad_request", "\(ReplicationEndpoint.redacted(given)) is not a database of this "
                             + "server: replicate with another Sofa cluster through its gateway (tcp://host:port/db)")
        }
        return named.database
    }

    /// Whether `host:port` is this server: the port the request was sent to, on the host it was
    /// sent to or a loopback name; or the port sofa-http listens on, on a loopback name (a request
    /// that came through a proxy on another port).
    static func isThisServer(host: String, port: String, secure: Bool, _ call: CouchCall, listenPort: String? = nil) -> Bool {
        let loopback = ReplicationDocument.isLoopback(host)
        if loopback, let listenPort, port == listenPort { return true }
        guard let reached = call.request.head.authority.map({ ReplicationDocument.hostAndPort($0, secure: secure) }) else {
            return false
        }
        return port == reached.port && (host == reached.host || loopback)
    }

    func activeTasks(_ call: CouchCall) async throws -> Response {
        try Self.requireMethod(call, .get)
        let tasks = try await client(call).replications().filter { !$0.state.isFinal }.map { status -> JSON in
            ["type": "replication", "replication_id": .string(status.id), "doc_id": .null,
             "source": .string(status.source), "target": .string(status.target), "continuous": .bool(status.continuous),
             "docs_read": .int(Int64(status.revisionsSent)), "docs_written": .int(Int64(status.docsWritten)),
             "doc_write_failures": .int(Int64(clamping: status.docWriteFailures)),
             "revisions_checked": .int(Int64(clamping: status.docsChecked)), "missing_revisions_found": .int(Int64(clamping: status.revisionsSent)),
             "checkpointed_source_seq": .string("\(status.checkpoint)"), "through_seq": .string("\(status.checkpoint)")]
        }
        return Self.json(.array(tasks))
    }

    func schedulerJobs(_ call: CouchCall) async throws -> Response {
        try Self.requireMethod(call, .get)
        let jobs = try await client(call).replications().map { status -> JSON in
            ["id": .string(status.id), "database": "_replicator", "doc_id": .null, "source": .string(status.source),
             "target": .string(status.target), "state": .string(Self.schedulerState(status.state)),
             "info": ["docs_read": .int(Int64(status.revisionsSent)), "docs_written": .int(Int64(status.docsWritten)),
                      "doc_write_failures": .int(Int64(clamping: status.docWriteFailures)), "checkpointed_source_seq": .string("\(status.checkpoint)"),
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
