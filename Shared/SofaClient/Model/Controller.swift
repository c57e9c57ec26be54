public import SofaCore
internal import SofaWire
import Foundation

/// The controller of one managed type in one database: typed create/load/save/delete, queries
/// (its design document's views, installed when it opens, or N1QL), a cache that hands out the
/// same instance for the same document until it is deleted, change notifications per kind —
/// driven by the database's changes feed, so a local save and a change that arrived by
/// replication are announced alike, each once — and the type's conflict policy, applied to
/// every conflict the feed shows.
@MainActor
public final class Controller<T: ManagedObject> {
    public let database: Database
    /// The signed-in user, recorded as creator and editor.
    public let user: String

    struct Entry {
        var object: T
        var fields: ManagedFields
        /// The document's properties the type does not know, kept for the next save.
        var unknown: JSONObject
    }

    private var cache: [String: Entry] = [:]
    private var idsByObject: [ObjectIdentifier: String] = [:]
    /// The IDs of the type's live documents, as the feed has shown them.
    private var known: Set<String> = []
    private var subscribers: [UUID: (kinds: Set<ObjectChangeKind>, continuation: AsyncStream<ObjectChange>.Continuation)] = [:]
    private var feed: Task<Void, Never>?

    static var design: String { T.objectType }

    /// Opens the controller: installs or updates the type's design document (where the user may),
    /// reads which objects exist, and starts following the changes feed from now.
    public init(database: Database) async throws {
        self.database = database
        user = (try? await database.client.session().name) ?? ""
        try await installDesign()
        let start = try await database.info().lastSequence
        let all = try await database.view("\(Self.design)/all", options: ["reduce": false])
        known = Set(all["rows"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
        feed = Task { [weak self] in await self?.follow(since: start) }
    }

    /// Stops following the feed and ends every notification stream.
    public func close() {
        feed?.cancel()
        feed = nil
        for subscriber in subscribers.values { subscriber.continuation.finish() }
        subscribers = [:]
    }

    // MARK: Objects

    /// The object with this ID (the cached instance when there is one); nil when there is none
    /// of this type.
    public func load(id: String) async throws -> T? {
        if let entry = cache[id] { return entry.object }
        let document: Document
        do {
            document = try await database.get(id: id)
        } catch {
            guard error.is(.notFound) else { throw error }
            return nil
        }
        guard !document.deleted, let object = try? document.json().objectValue else { return nil }
        return try materialize(id: id, rev: document.rev, body: object)
    }

    /// Saves an object: a new document for one this controller has not seen, else a new revision
    /// of its document. Sets `updatedAt` (and `createdAt`, `creator` the first time) and adds
    /// the user to `editors`. Answers its ID.
    @discardableResult
    public func save(_ object: T) async throws -> String {
        let id = idsByObject[ObjectIdentifier(object)] ?? DocumentID.generate()
        let previous = cache[id]
        var body = try Self.encode(object, over: previous?.unknown ?? [:])
        let now = Self.timestamp()
        body["objectType"] = .string(T.objectType)
        body["createdAt"] = .string(previous.map(\.fields.createdAt).flatMap { $0.isEmpty ? nil : $0 } ?? now)
        body["updatedAt"] = .string(now)
        body["creator"] = .string(previous.map(\.fields.creator).flatMap { $0.isEmpty ? nil : $0 } ?? user)
        var editors = previous?.fields.editors ?? []
        if !user.isEmpty, !editors.contains(user) { editors.append(user) }
        body["editors"] = .array(editors.map { .string($0) })
        let written = try await database.put(id: id, body: JSON.object(body).compactBytes(), rev: previous?.fields.rev)
        body["_id"] = .string(id)
        body["_rev"] = .string(written.rev)
        cache[id] = Entry(object: object, fields: ManagedFields(document: body), unknown: previous?.unknown ?? [:])
        idsByObject[ObjectIdentifier(object)] = id
        return id
    }

    /// Deletes an object's document; the instance leaves the cache.
    public func delete(_ object: T) async throws {
        guard let id = idsByObject[ObjectIdentifier(object)], let entry = cache[id] else {
            throw SofaError(.notFound, "this \(T.objectType) was never saved or loaded")
        }
        _ = try await database.delete(id: id, rev: entry.fields.rev)
        forget(id)
    }

    /// The cached instance of a document, if the controller holds one (no round trip).
    public func cached(id: String) -> T? { cache[id]?.object }

    /// The layer's fields of an object (its ID, revision, times and authors); nil for one not
    /// saved or loaded.
    public func fields(of object: T) -> ManagedFields? {
        idsByObject[ObjectIdentifier(object)].flatMap { cache[$0]?.fields }
    }

    // MARK: Queries

    /// Every object of the type, by ID.
    public func all() async throws -> [T] { try await objects(view: "all") }

    /// The objects of a view of the type's design document (its rows' documents), with
    /// CouchDB's view options.
    public func objects(view: String, options: JSONObject = [:]) async throws -> [T] {
        var asked = options
        asked["include_docs"] = true
        asked["reduce"] = false
        let answer = try await database.view("\(Self.design)/\(view)", options: asked)
        var objects: [T] = []
        for row in answer["rows"]?.arrayValue ?? [] {
            guard let id = row["id"]?.stringValue, let document = row["doc"]?.objectValue,
                  document["objectType"]?.stringValue == T.objectType else { continue }
            objects.append(try materialize(id: id, rev: document["_rev"]?.stringValue ?? "", body: document))
        }
        return objects
    }

    /// The objects of the type matching a N1QL condition, in ID order.
    public func objects(where condition: String, parameters: JSONObject = [:]) async throws -> [T] {
        var given = parameters
        given["sofaObjectType"] = .string(T.objectType)
        let result = try await database.query(n1ql: "SELECT META().id FROM _ WHERE objectType = $sofaObjectType AND (\(condition)) "
                                              + "ORDER BY META().id", parameters: given)
        var objects: [T] = []
        for row in result.rows {
            guard let id = row.first??.stringValue, let object = try await load(id: id) else { continue }
            objects.append(object)
        }
        return objects
    }

    // MARK: Notifications

    /// The changes to the type's objects from now on, as they are committed; only those of
    /// `kinds` (all by default).
    public func changes(_ kinds: Set<ObjectChangeKind> = [.added, .updated, .deleted]) -> AsyncStream<ObjectChange> {
        let (stream, continuation) = AsyncStream<ObjectChange>.makeStream()
        let key = UUID()
        subscribers[key] = (kinds, continuation)
        return stream
    }

    private func follow(since start: UInt64) async {
        var changes = database.liveChanges(since: start, includeBodies: true, allLeaves: true).makeAsyncIterator()
        while !Task.isCancelled {
            guard let batch = try? await changes.next() else { return }
            for change in batch.changes { await apply(change) }
        }
    }

    private func apply(_ change: Change) async {
        let body = change.deleted ? nil : JSON.tryParse(change.body)?.objectValue
        guard let body, body["objectType"]?.stringValue == T.objectType else {
            // Deleted (or no longer of this type): announced if it was one of the type's.
            guard known.remove(change.id) != nil else { return }
            forget(change.id)
            announce(ObjectChange(kind: .deleted, id: change.id, rev: "", sequence: change.sequence))
            return
        }
        let kind: ObjectChangeKind = known.insert(change.id).inserted ? .added : .updated
        var document = body
        document["_id"] = .string(change.id)
        document["_rev"] = .string(change.rev)
        guard (try? materialize(id: change.id, rev: change.rev, body: document)) != nil else { return }
        announce(ObjectChange(kind: kind, id: change.id, rev: change.rev, sequence: change.sequence))
        // (A conflict another controller or client resolved meanwhile is theirs: nothing to do.)
        if change.leaves.count > 1 { try? await resolveConflicts(id: change.id) }
    }

    private func announce(_ change: ObjectChange) {
        for (key, subscriber) in subscribers where subscriber.kinds.contains(change.kind) {
            // A stream its reader ended is dropped.
            if case .terminated = subscriber.continuation.yield(change) { subscribers[key] = nil }
        }
    }

    // MARK: Conflicts

    /// Resolves the document's conflicts by the type's policy: each other open leaf either
    /// merged into the winner (`T.resolve`) or closed, keeping the winner.
    public func resolveConflicts(id: String) async throws {
        let current = try await database.get(id: id)
        for leaf in try await database.openLeaves(id: id) where leaf.rev != current.rev && !leaf.deleted {
            let winner = try await database.get(id: id)
            guard let mine = try? Self.decode(winner.json().objectValue ?? [:]),
                  let theirs = try? Self.decode(leaf.json().objectValue ?? [:]),
                  let merged = T.resolve(mine: mine, theirs: theirs) else {
                _ = try await database.resolve(id: id, winner: winner.rev, loser: leaf.rev)
                continue
            }
            var body = try Self.encode(merged, over: (try? winner.json().objectValue) ?? [:])
            body["updatedAt"] = .string(Self.timestamp())
            _ = try await database.resolve(id: id, winner: winner.rev, loser: leaf.rev, merged: JSON.object(body).compactBytes())
        }
    }

    // MARK: Documents and objects

    /// The cached instance of a document's revision (refreshed when the revision is newer), or
    /// a new one, cached.
    private func materialize(id: String, rev: String, body: JSONObject) throws -> T {
        var document = body
        document["_id"] = .string(id)
        document["_rev"] = .string(rev)
        let fields = ManagedFields(document: document)
        if var entry = cache[id] {
            if entry.fields.rev != rev {
                entry.object.refresh(from: try Self.decode(document))
                entry.fields = fields
                entry.unknown = try Self.unknown(in: document, of: entry.object)
                cache[id] = entry
            }
            return entry.object
        }
        let object = try Self.decode(document)
        cache[id] = Entry(object: object, fields: fields, unknown: try Self.unknown(in: document, of: object))
        idsByObject[ObjectIdentifier(object)] = id
        return object
    }

    private func forget(_ id: String) {
        if let entry = cache.removeValue(forKey: id) { idsByObject[ObjectIdentifier(entry.object)] = nil }
    }

    /// The properties of a document that neither the type nor the layer knows.
    static func unknown(in document: JSONObject, of object: T) throws -> JSONObject {
        let own = try encode(object, over: [:])
        return JSONObject(document.filter { own[$0.key] == nil && !ManagedFields.names.contains($0.key) }.map { ($0.key, $0.value) })
    }

    static func encode(_ object: T, over base: JSONObject) throws -> JSONObject {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        guard let own = try JSON.parse(Array(encoder.encode(object))).objectValue else {
            throw SofaError(.invalidParameter, "a \(T.objectType) does not encode as a JSON object")
        }
        var body = base
        for (key, value) in own where !ManagedFields.names.contains(key) { body[key] = value }
        body["_id"] = nil
        body["_rev"] = nil
        return body
    }

    static func decode(_ document: JSONObject) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(T.self, from: Data(JSON.object(document).compactBytes()))
    }

    static func timestamp() -> String {
        Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    private func installDesign() async throws {
        var views: JSONObject = ["all": ["map": .string("function (doc) { if (doc.objectType === \(JSON.string(T.objectType).compactString)) { emit(doc._id, null); } }")]]
        for (name, source) in T.views {
            var code: JSONObject = ["map": .string(source.map)]
            if let reduce = source.reduce { code["reduce"] = .string(reduce) }
            views[name] = .object(code)
        }
        let id = "_design/" + Self.design
        var rev: String?
        if let existing = try? await database.get(id: id), !existing.deleted {
            if (try? existing.json())?["views"] == .object(views) { return }
            rev = existing.rev
        }
        do {
            try await database.putDesignDocument(id, ["language": "javascript", "views": .object(views)], rev: rev)
        } catch {
            // Not a database admin (the design document is then the admins' to install), or
            // another controller installed it meanwhile.
            guard error.is(.forbidden) || error.is(.conflict) else { throw error }
        }
    }
}
