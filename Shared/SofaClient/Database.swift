public import SofaWire
public import SofaCore
import Foundation

/// A revision just written: the document's ID, its new revision ID and sequence.
public struct DocumentRevision: Sendable, Equatable, Codable {
    public var id: String
    public var rev: String
    public var sequence: UInt64

    public init(id: String, rev: String, sequence: UInt64) {
        self.id = id
        self.rev = rev
        self.sequence = sequence
    }
}

/// A document as read: ID, a revision and the body (compact JSON without `_id`/`_rev`), with the
/// ancestry when asked for and whether it has conflicting leaves. It is the wire's own value; the
/// SDK adds ways to read the body.
public typealias Document = StoredDocument

extension Change {
    /// The change's document as CouchDB shows it to a filter function: `_id`, `_rev`, and the
    /// body of a live revision, or `_deleted` for a deletion.
    public var shownDocument: JSON {
        StoredDocument(id: id, rev: rev, body: deleted ? [] : body, deleted: deleted, sequence: sequence).metadataObject()
    }
}

extension StoredDocument {
    /// The body parsed.
    public func json() throws(SofaError) -> JSON { try JSON.parse(body) }

    /// The body with `_id` and `_rev` in front, as CouchDB shows a document.
    public var jsonWithMetadata: String { metadataObject().compactString }

    /// The body with `_id`, `_rev`, `_deleted` (for a tombstone) and, with `revisions`, CouchDB's
    /// `_revisions` (`{"start": generation, "ids": [digests]}` for revision-tree IDs; the full
    /// version strings as `ids` otherwise).
    public func metadataObject(revisions: Bool = false) -> JSON {
        var object = JSONObject([("_id", .string(id)), ("_rev", .string(rev))])
        if deleted { object["_deleted"] = .bool(true) }
        if revisions {
            let parsed = history.compactMap { RevID.tryParse($0) }
            if !parsed.isEmpty, parsed.count == history.count, let first = parsed.first {
                object["_revisions"] = .object(JSONObject([
                    ("start", .int(Int64(first.generation))),
                    ("ids", .array(history.map { .string(String($0.drop(while: { $0 != "-" }).dropFirst())) })),
                ]))
            } else {
                object["_revisions"] = .object(JSONObject([("ids", .array(history.map { .string($0) }))]))
            }
        }
        if conflicted { object["_conflicted"] = .bool(true) }
        if let parsed = try? JSON.parse(body), let fields = parsed.objectValue {
            for (key, value) in fields { object[key] = value }
        }
        return .object(object)
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

/// One database of the cluster. Its document API (`put`, `get`, `changes`, … — see
/// `DocumentStore`) works on its default collection; `collection(_:)` names another.
public struct Database: DocumentStore {
    public let client: SofaClient
    public let name: String

    public init(client: SofaClient, name: String) {
        self.client = client
        self.name = name
    }

    public var databaseName: String { name }
    public var collectionPath: String { "" }

    /// Document count, sequences, sizes, UUIDs, versioning and number of collections.
    public func info() async throws(SofaError) -> DatabaseInfo {
        guard case .databaseInfo(let info) = try await client.call(.databaseInfo, database: name) else {
            throw unexpected("databaseInfo")
        }
        return info
    }

    /// Prunes revision trees, drops bodies of old revisions, deletes every blob that no revision
    /// still kept references (an upload whose document is not saved yet included: save that
    /// document and it is refused with `.notFound` until the blob is uploaded again) and
    /// reclaims space.
    public func compact() async throws(SofaError) {
        _ = try await client.call(.compact, database: name)
    }

    /// Keeps at most `limit` revisions of each document's history (CouchDB's `_revs_limit`): the
    /// histories held are pruned to it now, and every later write prunes its document's. A
    /// database admin's call. `info().revsLimit` tells the limit set (0: none).
    public func setRevsLimit(_ limit: Int) async throws(SofaError) {
        guard limit >= 1, let limit = UInt32(exactly: limit), limit <= UInt32(Int32.max) else {
            throw SofaError(.invalidParameter, "the revs limit must be a positive integer, not \(limit)")
        }
        _ = try await client.call(.setRevsLimit(limit), database: name)
    }
}

extension Collection {
    /// The database's info with this collection's document count and sequences.
    public func info() async throws(SofaError) -> DatabaseInfo {
        guard case .databaseInfo(let info) = try await call(.databaseInfo) else { throw unexpected("databaseInfo") }
        return info
    }
}
