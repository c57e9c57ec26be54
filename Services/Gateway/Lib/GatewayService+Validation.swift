internal import SofaBus
internal import SofaServer
public import SofaCore
public import SofaWire
internal import Synchronization

/// What the gateway knows of each database's `validate_doc_update` functions: whether it has
/// any. A database it knows has none gets its writes passed on undecoded; one it does not know
/// (or knows has some) gets them decoded and checked first. A design document written, a purge,
/// a database created or deleted makes it forget (every write passes through the gateway, so it
/// sees each of those).
public final class DesignValidators: Sendable {
    private struct Entry {
        var hasFunctions: Bool?
        /// Counts the times it was forgotten: a load that began before one is not kept.
        var generation: UInt64 = 0
    }
    private let entries = Mutex<[String: Entry]>([:])

    public init() {}

    /// Whether the database has validation functions; nil when not known.
    public func known(_ database: String) -> Bool? { entries.withLock { $0[database]?.hasFunctions } }

    func generation(_ database: String) -> UInt64 { entries.withLock { $0[database]?.generation ?? 0 } }

    /// Records what a load begun at `generation` found, unless the database was forgotten since.
    func record(_ database: String, hasFunctions: Bool, loadedAt generation: UInt64) {
        entries.withLock { entries in
            guard (entries[database]?.generation ?? 0) == generation else { return }
            entries[database] = Entry(hasFunctions: hasFunctions, generation: generation)
        }
    }

    public func forget(_ database: String) {
        entries.withLock { entries in
            entries[database] = Entry(hasFunctions: nil, generation: (entries[database]?.generation ?? 0) + 1)
        }
    }
}

/// Validation of writes by design documents' `validate_doc_update(newDoc, oldDoc, userCtx,
/// secObj)`, as CouchDB runs it: on every write to the database — a client's, sofa-http's, or a
/// replication's — except of design documents (database admins only) and `_local/` documents.
/// The functions run in a query worker (`DesignCall.validate`), which reads each document's
/// current revision; a refused document is not written and its writer gets the function's
/// `forbidden` or `unauthorized` reason.
extension GatewayService {
    /// The writes that are validated.
    static let validatedKinds: Set<OperationKind> = [.putDocument, .deleteDocument, .insertRevision, .bulkWrite]

    /// Whether a write may go on undecoded as far as validation goes (on the socket thread).
    func passesUnvalidated(_ kind: OperationKind, database: String) -> Bool {
        !Self.validatedKinds.contains(kind) || database.isEmpty || validators.known(database) == false
    }

    /// A bulk write refused for its design documents (its writer is no admin of the database):
    /// each of them is refused in its place and the others are written, if the writer may write
    /// those (as CouchDB answers a bulk, and as a replication into a database whose admin it is
    /// not counts a failure and goes on); nil when the refusal stands for the whole request.
    func bulkWithoutDesignDocuments(_ request: Request, refused: SofaError) async -> Response? {
        guard refused.is(.forbidden), case .bulkWrite(let items) = request.operation else { return nil }
        let design = items.map { AccessRules.writesDesignDocument(.bulkWrite([$0])) }
        guard design.contains(true) else { return nil }
        var rest = request
        rest.operation = .bulkWrite(zip(items, design).filter { !$0.1 }.map(\.0))
        // The others must be the writer's to write (a member's): `handle` checks that as it
        // writes them, and its refusal is the whole request's.
        var written: [BulkItemResult] = []
        if design.contains(false) {
            let response = await handle(rest)
            guard case .success(.bulk(let results)) = response.outcome else { return response }
            written = results
        } else {
            guard case .success = await authorize(rest, peer: BusServer.peer) else { return nil }
        }
        return .ok(request.id, .bulk(Self.merged(items, refusals: design.map { $0 ? refused : nil }, written: written)))
    }

    /// A bulk's results in the order of its items: each refused one's refusal in its place, the
    /// others' results (of the bulk of those alone, `written`) in theirs.
    static func merged(_ items: [BulkItem], refusals: [SofaError?], written: [BulkItemResult]) -> [BulkItemResult] {
        var next = written.makeIterator()
        var merged: [BulkItemResult] = []
        for (item, refusal) in zip(items, refusals) {
            if let refusal {
                merged.append(BulkItemResult(id: writtenID(item), rev: "", sequence: 0, error: refusal))
            } else if let result = next.next() {
                merged.append(result)
            }
        }
        return merged
    }

    /// Validates a write to a database with validation functions. nil: it goes on as it is;
    /// otherwise the answer (a refusal; or, for a bulk write of which some documents were
    /// refused, the others' results with the refusals in their places).
    func validatedWrite(_ request: Request, principal: Principal?) async -> Response? {
        guard Self.validatedKinds.contains(request.operation.kind), !request.database.isEmpty,
              request.database != Identities.usersDatabase, request.database != ReplicationDocument.database else { return nil }
        var request = request
        let revisions = Self.newRevisions(&request.operation)
        guard revisions.contains(where: { $0 != nil }) else { return nil }
        let verdicts: [SofaError?]
        do {
            guard try await hasValidators(request.database) else { return nil }
            verdicts = try await validate(request, revisions, principal: principal)
        } catch {
            return .failure(request.id, error)
        }
        guard verdicts.contains(where: { $0 != nil }) else { return await route(request, principal: principal) }
        guard case .bulkWrite(let items) = request.operation else {
            return .failure(request.id, verdicts.compactMap { $0 }.first!)
        }
        // The accepted documents are written; the refused ones answered in their places.
        let accepted = zip(items, verdicts).filter { $0.1 == nil }.map(\.0)
        var results: [BulkItemResult] = []
        if !accepted.isEmpty {
            var rest = request
            rest.operation = .bulkWrite(accepted)
            let response = await route(rest, principal: principal)
            guard case .success(.bulk(let written)) = response.outcome else { return response }
            results = written
        }
        return .ok(request.id, .bulk(Self.merged(items, refusals: verdicts, written: results)))
    }

    /// Each document a write makes a new revision of, as the functions see it (`_id`, `_rev`,
    /// `_deleted`, `_revisions` for a replicated one); nil for one not validated (a design or
    /// local document, or a body that is not a JSON object: storage refuses that one). A write
    /// without an ID gets its generated ID here, so that the functions see it.
    public static func newRevisions(_ operation: inout Op) -> [JSON?] {
        func revision(_ id: String, rev: String, body: [UInt8], deleted: Bool, history: [String] = []) -> JSON? {
            guard !id.hasPrefix("_design/"), !id.hasPrefix("_local/") else { return nil }
            guard var object = body.isEmpty ? JSONObject() : JSON.tryParse(body)?.objectValue else { return nil }
            object["_id"] = .string(id)
            if !rev.isEmpty { object["_rev"] = .string(rev) }
            if deleted { object["_deleted"] = true }
            if history.count > 1, let start = Int64(history[0].prefix { $0 != "-" }) {
                object["_revisions"] = ["start": .int(start),
                                        "ids": .array(history.map { .string(String($0.drop { $0 != "-" }.dropFirst())) })]
            }
            return .object(object)
        }
        switch operation {
        case .putDocument(let id, let rev, let body, let deleted):
            let named = id.isEmpty ? DocumentID.generate() : id
            operation = .putDocument(id: named, rev: rev, body: body, deleted: deleted)
            return [revision(named, rev: rev, body: body, deleted: deleted)]
        case .deleteDocument(let id, let rev):
            return [revision(id, rev: rev, body: [], deleted: true)]
        case .insertRevision(let insert):
            return [revision(insert.id, rev: insert.history.first ?? "", body: insert.body, deleted: insert.deleted,
                             history: insert.history)]
        case .bulkWrite(let items):
            var named: [BulkItem] = []
            var revisions: [JSON?] = []
            for item in items {
                switch item {
                case .put(let id, let rev, let body, let deleted):
                    let given = id.isEmpty ? DocumentID.generate() : id
                    named.append(.put(id: given, rev: rev, body: body, deleted: deleted))
                    revisions.append(revision(given, rev: rev, body: body, deleted: deleted))
                case .insert(let insert):
                    named.append(item)
                    revisions.append(revision(insert.id, rev: insert.history.first ?? "", body: insert.body,
                                              deleted: insert.deleted, history: insert.history))
                }
            }
            operation = .bulkWrite(named)
            return revisions
        default:
            return []
        }
    }

    private static func writtenID(_ item: BulkItem) -> String {
        switch item {
        case .put(let id, _, _, _): id
        case .insert(let insert): insert.id
        }
    }

    /// Whether the database has validation functions: known, or read from its design documents.
    func hasValidators(_ database: String) async throws(SofaError) -> Bool {
        if let known = validators.known(database) { return known }
        let generation = validators.generation(database)
        let request = Request(database: database, operation: .allDocs(AllDocsQuery(
            includeBodies: true, startKey: "_design/", endKey: "_design/\u{10FFFF}")))
        let found: Bool
        switch await storage.send(request, timeout: Route.defaultTimeout).outcome {
        case .success(.documents(let designs)):
            found = designs.contains { JSON.tryParse($0.body)?["validate_doc_update"]?.stringValue != nil }
        case .success: throw SofaError(.unexpectedError, "storage answered a listing of design documents with something else")
        // No database: the write is refused by storage as usual.
        case .failure(let error) where error.is(.notFound): return false
        case .failure(let error): throw error
        }
        validators.record(database, hasFunctions: found, loadedAt: generation)
        return found
    }

    /// The functions' verdict on each revision (nil: accepted or not validated).
    private func validate(_ request: Request, _ revisions: [JSON?], principal: Principal?) async throws(SofaError) -> [SofaError?] {
        let security = try await securityObject(request.database)
        let user: JSON = ["db": .string(request.database),
                          "name": principal.map { $0 == .cluster ? JSON.null : .string($0.name) } ?? .null,
                          "roles": .array((principal?.roles ?? []).map { .string($0) })]
        let checked = revisions.enumerated().compactMap { entry in entry.element.map { (entry.offset, $0) } }
        let call = Request(id: request.id, database: request.database, collection: request.collection,
                           deadline: request.deadline, actingUser: request.actingUser,
                           operation: .designCall(DesignCall(.validate, documents: checked.map(\.1),
                                                             context: ["userCtx": user, "secObj": security.json])))
        let response = await broker.submit(call, client: Self.fairShareKey(BusServer.client, actingUser: request.actingUser),
                                           timeout: .milliseconds(Int(maxQueryMs)))
        let answers: [JSON]
        switch response.outcome {
        case .success(.json(let json)):
            guard let array = json.arrayValue, array.count == checked.count else {
                throw SofaError(.unexpectedError, "a query worker answered validation with something else")
            }
            answers = array
        case .success: throw SofaError(.unexpectedError, "a query worker answered validation with something else")
        case .failure(let error): throw error
        }
        var verdicts = [SofaError?](repeating: nil, count: revisions.count)
        for ((position, _), answer) in zip(checked, answers) { verdicts[position] = Self.verdict(answer) }
        return verdicts
    }

    /// A function's answer for one document as an error (nil: accepted).
    public static func verdict(_ answer: JSON) -> SofaError? {
        guard let object = answer.objectValue else { return nil }
        func reason(_ value: JSON) -> String { value.stringValue ?? value.compactString }
        if let forbidden = object["forbidden"] { return .forbidden(reason(forbidden)) }
        if let unauthorized = object["unauthorized"] { return SofaError(.unauthorized, reason(unauthorized)) }
        return SofaError(.unexpectedError, "validate_doc_update failed: \(object["reason"].map(reason) ?? answer.compactString)")
    }
}
