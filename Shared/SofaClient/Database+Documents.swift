public import SofaCore
internal import SofaWire
import Foundation

/// Documents: write, read (a revision, its history, the open leaves), delete; local documents.
extension DocumentStore {
    /// Writes a document from raw JSON (an object). No `rev` (and no `_rev` in the body) creates
    /// it; otherwise `rev` must be its current revision or another live leaf (a conflict's
    /// losing branch), or the write fails with `.conflict` (`.notFound` when the document does
    /// not exist, as LiteCore answers).
    /// A nil `id` lets storage generate one.
    @discardableResult
    public func put(id: String? = nil, json: String, rev: String? = nil) async throws(SofaError) -> DocumentRevision {
        try await put(id: id, body: Array(json.utf8), rev: rev)
    }

    @discardableResult
    public func put(id: String? = nil, body: [UInt8], rev: String? = nil, deleted: Bool = false) async throws(SofaError) -> DocumentRevision {
        // On the wire an empty ID asks storage to generate one; an empty ID given here is a mistake.
        if let id { try DocumentID.validate(id) }
        let reply = try await call(.putDocument(id: id ?? "", rev: rev ?? "", body: body, deleted: deleted))
        return try revision(reply, "put")
    }

    /// Writes an `Encodable` value as the document's body.
    @discardableResult
    public func put<T: Encodable>(_ value: T, id: String? = nil, rev: String? = nil) async throws(SofaError) -> DocumentRevision {
        try await put(id: id, body: try encodeBody(value), rev: rev)
    }

    /// The current revision (or the one named by `rev`); `.notFound` if missing or deleted.
    /// With `history`, `Document.history` holds the revision's ancestry, newest first.
    public func get(id: String, rev: String? = nil, history: Bool = false) async throws(SofaError) -> Document {
        let reply = try await call(.getDocument(id: id, rev: rev ?? "", history: history))
        guard case .document(let doc) = reply else { throw unexpected("get") }
        return doc
    }

    public func get<T: Decodable>(_ type: T.Type, id: String) async throws(SofaError) -> T {
        try await get(id: id).decode(T.self)
    }

    /// Every open leaf of the document (the current revision first), deleted ones included, each
    /// with its history.
    public func openLeaves(id: String) async throws(SofaError) -> [Document] {
        switch try await call(.getDocument(id: id, rev: "", history: true, openLeaves: true)) {
        case .documents(let docs): return docs
        case .document(let doc): return [doc]
        default: throw unexpected("openLeaves")
        }
    }

    /// Deletes a document (writes a tombstone revision); `rev` must be its current revision.
    @discardableResult
    public func delete(id: String, rev: String) async throws(SofaError) -> DocumentRevision {
        try revision(try await call(.deleteDocument(id: id, rev: rev)), "delete")
    }

    // MARK: Local documents

    /// Writes a local document (`_local/ID`: not replicated, no history, MVCC by its own revs).
    /// `id` may be given with or without the `_local/` prefix.
    @discardableResult
    public func putLocal(id: String, json: String, rev: String? = nil) async throws(SofaError) -> DocumentRevision {
        try await put(id: Self.localID(id), json: json, rev: rev)
    }

    @discardableResult
    public func putLocal<T: Encodable>(_ value: T, id: String, rev: String? = nil) async throws(SofaError) -> DocumentRevision {
        try await put(value, id: Self.localID(id), rev: rev)
    }

    public func getLocal(id: String) async throws(SofaError) -> Document {
        try await get(id: Self.localID(id))
    }

    @discardableResult
    public func deleteLocal(id: String, rev: String) async throws(SofaError) -> DocumentRevision {
        try await delete(id: Self.localID(id), rev: rev)
    }

    static func localID(_ id: String) -> String { id.hasPrefix("_local/") ? id : "_local/" + id }
}

func revision(_ reply: Reply, _ what: String) throws(SofaError) -> DocumentRevision {
    guard case .revision(let id, let rev, let sequence) = reply else { throw unexpected(what) }
    return DocumentRevision(id: id, rev: rev, sequence: sequence)
}

func encodeBody<T: Encodable>(_ value: T) throws(SofaError) -> [UInt8] {
    do {
        return Array(try JSONEncoder().encode(value))
    } catch {
        throw SofaError(.badJSON, "cannot encode \(T.self) as JSON: \(error)")
    }
}
