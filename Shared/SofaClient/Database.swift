public import SofaCore
internal import SofaWire
public import Foundation

/// A revision just written: the document's ID, its new revision ID and sequence.
public struct DocumentRevision: Sendable, Equatable, Codable {
    public var id: String
    public var rev: String
    public var sequence: UInt64
}

/// A document as read: ID, current revision and the body (compact JSON without `_id`/`_rev`).
public struct Document: Sendable, Equatable {
    public var id: String
    public var rev: String
    public var body: [UInt8]
    public var deleted: Bool
    public var sequence: UInt64

    /// The body parsed.
    public func json() throws(SofaError) -> JSON { try JSON.parse(body) }

    /// The body with `_id` and `_rev` in front, as CouchDB shows a document.
    public var jsonWithMetadata: String {
        var object = JSONObject([("_id", .string(id)), ("_rev", .string(rev))])
        if deleted { object["_deleted"] = .bool(true) }
        if let parsed = try? JSON.parse(body), let fields = parsed.objectValue {
            for (key, value) in fields { object[key] = value }
        }
        return JSON.object(object).compactString
    }

    /// The body decoded into a `Decodable` type.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws(SofaError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch {
            throw SofaError(.badJSON, "document '\(id)' does not decode as \(T.self): \(error)")
        }
    }
}

/// One database of the cluster.
public struct Database: Sendable {
    public let client: SofaClient
    public let name: String

    /// Writes a document from raw JSON (an object). No `rev` (and no `_rev` in the body) creates
    /// it; otherwise `rev` must be its current revision, or the write fails with `.conflict`.
    /// A nil `id` lets storage generate one.
    @discardableResult
    public func put(id: String? = nil, json: String, rev: String? = nil) async throws(SofaError) -> DocumentRevision {
        try await put(id: id, body: Array(json.utf8), rev: rev)
    }

    @discardableResult
    public func put(id: String? = nil, body: [UInt8], rev: String? = nil, deleted: Bool = false) async throws(SofaError) -> DocumentRevision {
        // On the wire an empty ID asks storage to generate one; an empty ID given here is a mistake.
        if let id { try DocumentID.validate(id) }
        let reply = try await client.call(.putDocument(id: id ?? "", rev: rev ?? "", body: body, deleted: deleted),
                                          database: name)
        guard case .revision(let id, let rev, let sequence) = reply else { throw unexpected("put") }
        return DocumentRevision(id: id, rev: rev, sequence: sequence)
    }

    /// Writes an `Encodable` value as the document's body.
    @discardableResult
    public func put<T: Encodable>(_ value: T, id: String? = nil, rev: String? = nil) async throws(SofaError) -> DocumentRevision {
        let data: Data
        do {
            data = try JSONEncoder().encode(value)
        } catch {
            throw SofaError(.badJSON, "cannot encode \(T.self) as JSON: \(error)")
        }
        return try await put(id: id, body: Array(data), rev: rev)
    }

    /// The current revision (or the one named by `rev`); `.notFound` if missing or deleted.
    public func get(id: String, rev: String? = nil) async throws(SofaError) -> Document {
        guard case .document(let doc) = try await client.call(.getDocument(id: id, rev: rev ?? ""), database: name) else {
            throw unexpected("get")
        }
        return Document(id: doc.id, rev: doc.rev, body: doc.body, deleted: doc.deleted, sequence: doc.sequence)
    }

    public func get<T: Decodable>(_ type: T.Type, id: String) async throws(SofaError) -> T {
        try await get(id: id).decode(T.self)
    }

    /// Deletes a document (writes a tombstone revision); `rev` must be its current revision.
    @discardableResult
    public func delete(id: String, rev: String) async throws(SofaError) -> DocumentRevision {
        let reply = try await client.call(.deleteDocument(id: id, rev: rev), database: name)
        guard case .revision(let id, let rev, let sequence) = reply else { throw unexpected("delete") }
        return DocumentRevision(id: id, rev: rev, sequence: sequence)
    }
}
