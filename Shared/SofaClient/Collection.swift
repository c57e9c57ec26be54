public import SofaCore
internal import SofaWire

/// The document API shared by a `Database` (its default collection) and a `Collection`: every
/// method of the `DocumentStore` extensions (`Database+Documents.swift`, `+Revisions`,
/// `+Expiration`, `+Changes`) works on `collectionPath` of `databaseName`.
public protocol DocumentStore: Sendable {
    var client: SofaClient { get }
    var databaseName: String { get }
    /// "scope.collection"; "" for the default collection.
    var collectionPath: String { get }
}

extension DocumentStore {
    func call(_ operation: Op) async throws(SofaError) -> Reply {
        try await client.call(operation, database: databaseName, collection: collectionPath)
    }
}

/// A collection of a database, named "scope.collection" (or "collection" in scope `_default`).
/// A handle only: no call is made until it is used, and using one that does not exist fails
/// with `.notFound` (or `.notOpen` once it has been deleted).
public struct Collection: DocumentStore, Hashable {
    public let database: Database
    /// As given: "scope.collection" or "collection".
    public let path: String

    public var client: SofaClient { database.client }
    public var databaseName: String { database.name }
    public var collectionPath: String { path }

    /// The scope: the part before the dot, or `_default`.
    public var scope: String {
        guard let dot = path.firstIndex(of: ".") else { return "_default" }
        return String(path[..<dot])
    }

    /// The collection's name within its scope.
    public var name: String {
        guard let dot = path.firstIndex(of: ".") else { return path }
        return String(path[path.index(after: dot)...])
    }

    public static func == (lhs: Collection, rhs: Collection) -> Bool {
        lhs.database.name == rhs.database.name && lhs.path == rhs.path && lhs.client === rhs.client
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(database.name)
        hasher.combine(path)
    }
}

extension Database {
    /// A handle on a collection ("scope.collection", "collection" in `_default`, or "" for the
    /// default collection).
    public func collection(_ path: String) -> Collection { Collection(database: self, path: path) }

    /// Creates a collection (and its scope if new), or answers the one that exists, as Couchbase
    /// Lite does; `.invalidParameter` for a bad name.
    @discardableResult
    public func createCollection(_ path: String) async throws(SofaError) -> Collection {
        _ = try await client.call(.createCollection, database: name, collection: path)
        return collection(path)
    }

    /// Deletes a collection and its documents; the default collection cannot be deleted.
    public func deleteCollection(_ path: String) async throws(SofaError) {
        _ = try await client.call(.deleteCollection, database: name, collection: path)
    }

    /// Every collection, as "scope.collection".
    public func collections() async throws(SofaError) -> [String] {
        guard case .collections(let names) = try await client.call(.listCollections, database: name) else {
            throw unexpected("listCollections")
        }
        return names
    }
}
