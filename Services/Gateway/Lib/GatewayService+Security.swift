internal import SofaBus
internal import SofaQL
public import SofaServer
internal import SofaCore
public import SofaWire
internal import Logging

// Every request runs as someone and is checked before it reaches a service: the gate decides a
// request passed on undecoded from what is cached (on the socket thread), and the decoded path
// decides the rest, loading what it needs (a user's record, a database's security object).

extension GatewayService {
    /// The decision for a request that may go on undecoded (on the server's socket thread; it
    /// never waits): pass it, refuse it, or have it decoded when deciding needs more — a user or
    /// security object not cached, the `_users` database (whose documents the gateway rewrites).
    /// (A write of a design document never gets here undecoded: `passesOn` sends it the decoded
    /// way, where its writer is checked for a database admin.)
    public func gate(_ forwarded: ForwardedRequest, _ peer: BusServer.Peer) -> BusServer.GateDecision {
        let principal: Principal?
        switch identities.cachedPrincipal(of: peer, acting: forwarded.actingUser) {
        case .anonymous: principal = nil
        case .principal(let known): principal = known
        case .unknownUser: return .decode
        }
        // `_users` and `_replicator` are decoded: their documents are rewritten on the way.
        guard let kind = OperationKind(rawValue: forwarded.operationField), forwarded.database != Identities.usersDatabase,
              forwarded.database != ReplicationDocument.database else { return .decode }
        // A request that names no database is refused as it is passed on (with what it lacks).
        if kind.route.needsDatabase && forwarded.database.isEmpty { return .pass }
        let need = AccessRules.need(kind)
        var security: SecurityObject?
        if need == .member || need == .databaseAdmin {
            guard let cached = cachedSecurity(forwarded.database) else { return .decode }
            security = cached
        }
        if let refusal = AccessRules.check(kind, database: forwarded.database, principal: principal, security: security) {
            audit(principal, peer, kind.name, database: forwarded.database, refused: refusal)
            return .refuse(refusal)
        }
        // A write to a database that has (or may have) validation functions is checked decoded.
        return passesUnvalidated(kind, database: forwarded.database) ? .pass : .decode
    }

    /// Whom a decoded request runs as, and whether it may run; the refusal when it may not.
    func authorize(_ request: Request, peer: BusServer.Peer) async -> Result<Principal?, SofaError> {
        let principal: Principal?
        do {
            principal = try await identities.principal(of: peer, acting: request.actingUser, load: loadUser)
        } catch {
            return .failure(error)
        }
        let kind = request.operation.kind
        let designWrite = AccessRules.writesDesignDocument(request.operation)
        let need = AccessRules.need(kind, designWrite: designWrite)
        var security: SecurityObject?
        if request.database == Identities.usersDatabase {
            // Its documents are each their user's (see `usersRequest`); its admins are the server's.
            security = SecurityObject()
        } else if kind.route.needsDatabase, need == .member || need == .databaseAdmin {
            do { security = try await securityObject(request.database) } catch { return .failure(error) }
        }
        if let refusal = AccessRules.check(kind, database: request.database, designWrite: designWrite, principal: principal,
                                           security: security) {
            audit(principal, peer, kind.name, database: request.database, refused: refusal)
            return .failure(refusal)
        }
        // A design document is checked as CouchDB checks it, once its writer may write it. (Not
        // the cluster's own writes: a replication copies what its source holds, and one such
        // document refused would hold back its whole batch for good.)
        if designWrite, principal != .cluster, let refusal = Self.invalidDesignDocument(request.operation) { return .failure(refusal) }
        if designWrite, principal != .cluster, let refusal = await uncompiledDesignDocument(request) { return .failure(refusal) }
        return .success(principal)
    }

    /// Why a design document written alone would not be stored: a view's JavaScript that does not
    /// compile (a query worker compiles it, `DesignCall.compile`), as CouchDB refuses it. Nil when
    /// it compiles, has no views, or no worker could say (the write goes on: its views fail when
    /// queried, as before).
    func uncompiledDesignDocument(_ request: Request) async -> SofaError? {
        let body: [UInt8]
        switch request.operation {
        case .putDocument(let id, _, let given, let deleted) where id.hasPrefix("_design/") && !deleted: body = given
        case .insertRevision(let insert) where insert.id.hasPrefix("_design/") && !insert.deleted: body = insert.body
        default: return nil
        }
        guard let document = JSON.tryParse(body), let views = document["views"]?.objectValue, !views.isEmpty else { return nil }
        let call = Request(id: request.id, database: request.database, collection: request.collection, deadline: request.deadline,
                           actingUser: request.actingUser, operation: .designCall(DesignCall(.compile, documents: [document])))
        let response = await broker.submit(call, client: Self.fairShareKey(BusServer.client, actingUser: request.actingUser),
                                           timeout: .seconds(10))
        if case .failure(let error) = response.outcome, error.is(.compilationError) { return error }
        return nil
    }

    /// Why a design document the operation writes would not be stored (`DesignDocumentRules`);
    /// nil when each is fine (a deletion always is).
    static func invalidDesignDocument(_ operation: Op) -> SofaError? {
        var written: [(id: String, body: [UInt8], deleted: Bool)] = []
        switch operation {
        case .putDocument(let id, _, let body, let deleted): written = [(id, body, deleted)]
        case .insertRevision(let insert): written = [(insert.id, insert.body, insert.deleted)]
        case .bulkWrite(let items):
            // New edits only: a bulk of revisions with their history is a replication's.
            written = items.compactMap { item in
                if case .put(let id, _, let body, let deleted) = item { (id, body, deleted) } else { nil }
            }
        default: return nil
        }
        for document in written where document.id.hasPrefix("_design/") && !document.deleted {
            guard let body = JSON.tryParse(document.body)?.objectValue else { continue }
            do throws(SofaError) {
                try DesignDocumentRules.check(body)
            } catch {
                return error
            }
        }
        return nil
    }

    /// A user's record from `_users` (nil: no such user).
    func loadUser(_ name: String) async throws(SofaError) -> Identities.User? {
        let request = Request(database: Identities.usersDatabase,
                              operation: .getDocument(id: Identities.documentID(name), rev: ""))
        switch await storage.send(request, timeout: .seconds(10)).outcome {
        case .success(.document(let document)): return document.deleted ? nil : UsersDatabase.user(from: document.body)
        case .success: throw SofaError(.unexpectedError, "storage answered a user's document with something else")
        case .failure(let error) where error.is(.notFound): return nil
        case .failure(let error): throw error
        }
    }

    // MARK: Security objects

    func cachedSecurity(_ database: String) -> SecurityObject? {
        securityObjects.withLock { $0[database] }
    }

    /// A database's security object (admin-only when it has none), cached until it is set.
    func securityObject(_ database: String) async throws(SofaError) -> SecurityObject {
        if let cached = cachedSecurity(database) { return cached }
        let request = Request(database: database, operation: .rawGet(store: "info", key: SecurityObject.storeKey))
        let object: SecurityObject
        switch await storage.send(request, timeout: .seconds(10)).outcome {
        case .success(.raw(_, let body)):
            guard let json = JSON.tryParse(body) else {
                throw SofaError(.corruptData, "database '\(database)' holds a security object that is not JSON")
            }
            object = try SecurityObject(json: json)
        case .success: throw SofaError(.unexpectedError, "storage answered a security object with something else")
        // A database that does not exist is not found, for anyone (CouchDB's answer: its
        // security object is in it); one without a security object is for its admins only.
        case .failure(let error) where error.isDatabaseNotFound: throw error
        case .failure(let error) where error.is(.notFound): object = .adminOnly
        case .failure(let error): throw error
        }
        securityObjects.withLock { $0[database] = object }
        return object
    }

    func setSecurity(_ request: Request, _ json: JSON, principal: Principal?) async -> Response {
        let object: SecurityObject
        do { object = try SecurityObject(json: json) } catch { return .failure(request.id, error) }
        var put = request
        put.operation = .rawPut(store: "info", key: SecurityObject.storeKey, version: [], body: object.json.compactBytes())
        let response = await storage.send(put, timeout: Route.defaultTimeout)
        securityObjects.withLock { $0[request.database] = nil }
        if case .success = response.outcome {
            securityObjects.withLock { $0[request.database] = object }
            audit(principal, BusServer.peer, "setSecurity", database: request.database, done: object.json.compactString)
        }
        return response
    }

    /// A database created or deleted: its security object is read again when next needed.
    func forgetSecurity(_ database: String) {
        _ = securityObjects.withLock { $0.removeValue(forKey: database) }
    }

    // MARK: Sign-in

    func signIn(_ request: Request, name: String, password: String) async -> Response {
        let peer = BusServer.peer
        do {
            let principal = try await identities.signIn(name: name, password: password, peer: peer, load: loadUser)
            return .ok(request.id, .session(name: principal.name, roles: principal.roles))
        } catch {
            audit(nil, peer, "authenticate", database: "", refused: error, user: name)
            return .failure(request.id, error)
        }
    }

    // MARK: Audit

    /// One audit line: who (user, peer), what (operation, database) and the outcome.
    func audit(_ principal: Principal?, _ peer: BusServer.Peer, _ operation: String, database: String,
               refused: SofaError? = nil, done: String? = nil, user: String? = nil) {
        var metadata: Logger.Metadata = [
            "user": "\(user ?? principal?.name ?? "")", "peer": "\(peer.address)", "op": "\(operation)",
            "outcome": "\(refused.map { "refused: \($0.name): \($0.message)" } ?? "done")",
        ]
        if !database.isEmpty { metadata["db"] = "\(database)" }
        if let done { metadata["detail"] = "\(done)" }
        logger.notice("audit", metadata: metadata)
    }

    /// Whether an operation is an admin action that the audit log records when it is done.
    static func isAudited(_ kind: OperationKind) -> Bool {
        [.createDatabase, .deleteDatabase, .setSecurity, .startReplication, .stopReplication, .rekeyDatabase].contains(kind)
    }
}

extension GatewayService {
    /// Makes the `_users` database when it does not exist yet (as the first user is written).
    func ensureUsersDatabase() async -> SofaError? {
        let response = await storage.send(Request(database: Identities.usersDatabase, operation: .createDatabase()),
                                          timeout: Route.defaultTimeout)
        switch response.outcome {
        case .success: return nil
        case .failure(let error) where error.is(.databaseExists): return nil
        case .failure(let error): return error
        }
    }
}
