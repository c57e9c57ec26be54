internal import SofaBus
internal import SofaServer
internal import SofaCore
internal import SofaWire

// The `_users` database through the gateway: user documents are checked and their passwords
// hashed on write, their credentials removed on read, and a user reads and changes only their
// own document (not their roles); server admins do all. The cluster's own services (the
// replicator, replicating `_users`) read and write it as stored.

extension GatewayService {
    func usersRequest(_ request: Request, principal: Principal?) async -> Response {
        guard let principal else { return .failure(request.id, AccessRules.notSignedIn(request.operation.kind)) }
        // The cluster's own calls are routed as any other (a long poll waits here for a change:
        // storage answers at once, and sofa-http's follower of `_users` would ask again at once).
        if principal == .cluster { return await route(request, principal: principal) }
        switch request.operation {
        case .getDocument(let id, _, _, _):
            if let refusal = ownDocumentOnly(id, principal) { return .failure(request.id, refusal) }
            return Self.withoutCredentials(await storage.send(request, timeout: Route.defaultTimeout))
        case .allDocs where principal.isServerAdmin:
            return Self.withoutCredentials(await storage.send(request, timeout: Route.defaultTimeout))
        // A server admin follows the users' changes, as in CouchDB (bodies without credentials).
        case .changes where principal.isServerAdmin:
            return Self.withoutCredentials(await route(request, principal: principal))
        case .putDocument(let id, let rev, let body, let deleted):
            return await writeUser(request, id: id, rev: rev, body: body, deleted: deleted, principal: principal)
        case .deleteDocument(let id, let rev):
            return await writeUser(request, id: id, rev: rev, body: [], deleted: true, principal: principal)
        case .databaseInfo, .getSecurity:
            return await storage.send(request, timeout: Route.defaultTimeout)
        default:
            return .failure(request.id, .forbidden(
                "\(request.operation.name) is not open on _users: read and write user documents one at a time "
                    + "(server admins may list them)"))
        }
    }

    /// A non-admin may touch only their own document: to them, no other exists (CouchDB's 404,
    /// which tells nobody which users there are).
    private func ownDocumentOnly(_ id: String, _ principal: Principal) -> SofaError? {
        if principal.isServerAdmin || UsersDatabase.name(ofDocument: id) == principal.name { return nil }
        return SofaError(.notFound, "missing")
    }

    private func writeUser(_ request: Request, id: String, rev: String, body: [UInt8], deleted: Bool,
                           principal: Principal) async -> Response {
        if let refusal = ownDocumentOnly(id, principal) { return .failure(request.id, refusal) }
        let current = await storage.send(Request(database: request.database, operation: .getDocument(id: id, rev: "")),
                                         timeout: Route.defaultTimeout)
        let stored: [UInt8]?
        switch current.outcome {
        case .success(.document(let document)): stored = document.deleted ? nil : document.body
        case .failure(let error) where error.is(.notFound): stored = nil
        case .failure(let error): return .failure(request.id, error)
        case .success: return .failure(request.id, SofaError(.unexpectedError, "storage answered a user's document with something else"))
        }
        let prepared: [UInt8]
        do {
            prepared = try UsersDatabase.prepare(id: id, body: body, deleted: deleted, principal: principal, stored: stored)
        } catch {
            audit(principal, BusServer.peer, request.operation.name, database: request.database, refused: error, user: principal.name)
            return .failure(request.id, error)
        }
        if stored == nil, let error = await ensureUsersDatabase() { return .failure(request.id, error) }
        var write = request
        write.operation = deleted ? .deleteDocument(id: id, rev: rev) : .putDocument(id: id, rev: rev, body: prepared, deleted: false)
        let response = await storage.send(write, timeout: Route.defaultTimeout)
        if let name = UsersDatabase.name(ofDocument: id) {
            identities.userChanged(name)
            if case .success = response.outcome, !deleted, name == principal.name, let salt = UsersDatabase.user(from: prepared)?.password?.salt {
                identities.renew(BusServer.peer, name: name, salt: salt)
            }
        }
        if case .success = response.outcome {
            audit(principal, BusServer.peer, deleted ? "deleteUser" : (stored == nil ? "createUser" : "updateUser"),
                  database: request.database, done: id)
        }
        return response
    }

    static func withoutCredentials(_ response: Response) -> Response {
        var response = response
        switch response.outcome {
        case .success(.document(var document)):
            document.body = UsersDatabase.withoutCredentials(document.body)
            response.outcome = .success(.document(document))
        case .success(.documents(let documents)):
            response.outcome = .success(.documents(documents.map { document in
                var document = document
                document.body = UsersDatabase.withoutCredentials(document.body)
                return document
            }))
        case .success(.changes(var batch)):
            for index in batch.changes.indices where !batch.changes[index].body.isEmpty {
                batch.changes[index].body = UsersDatabase.withoutCredentials(batch.changes[index].body)
            }
            response.outcome = .success(.changes(batch))
        default: break
        }
        return response
    }
}
