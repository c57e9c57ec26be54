internal import SofaCore
internal import SofaWire
internal import SofaClient

/// One side of a replication as `Replication` uses it: a database, in the replicated collection
/// (documents, changes, queries, revs-diff, conflicts), with its blobs and local documents.
/// `ClusterPeer` is a database of a Sofa cluster through the SDK; tests drive a replication
/// with peers of their own.
protocol ReplicationPeer: Sendable {
    /// The database's name, for errors.
    var name: String { get }
    func info() async throws(SofaError) -> DatabaseInfo

    // The replicated collection.
    func changes(_ query: ChangesQuery) async throws(SofaError) -> ChangesBatch
    /// The rows of a query on the collection: N1QL text, or a JSON query's text.
    func query(_ text: String, isN1QL: Bool, parameters: JSONObject) async throws(SofaError) -> [[JSON?]]
    func revsDiff(_ entries: [RevsDiffEntry]) async throws(SofaError) -> [RevsDiffEntry]
    func get(id: String, rev: String, history: Bool) async throws(SofaError) -> StoredDocument
    func bulk(_ items: [BulkItem]) async throws(SofaError) -> [BulkItemResult]
    func openLeaves(id: String) async throws(SofaError) -> [StoredDocument]
    /// Closes the leaf `loser` of `id` in favour of `winner`.
    func resolve(id: String, winner: String, loser: String) async throws(SofaError)
    /// Whether each document passes the design document's filter "ddoc/name" (run by the
    /// peer's query workers), with CouchDB's request object.
    func filter(_ name: String, documents: [JSON], request: JSON) async throws(SofaError) -> [Bool]

    // The database's blobs and local documents.
    func blobInfo(_ key: String) async throws(SofaError) -> BlobInfo
    /// The blob's bytes, checked against its key as they arrive.
    func blobChunks(_ key: String) -> any AsyncSequence<[UInt8], SofaError> & Sendable
    func putBlob(_ chunks: any AsyncSequence<[UInt8], SofaError> & Sendable, expectedKey: String) async throws(SofaError)
    func getLocal(id: String) async throws(SofaError) -> StoredDocument
    /// Writes a local document; answers its new revision.
    func putLocal(id: String, json: String, rev: String?) async throws(SofaError) -> String
}

/// Where a replication finds its two sides (`Connections`: the SDK's connections to clusters).
protocol PeerProvider: Sendable {
    /// A database of `endpoint`'s cluster, in the replicated collection ("" = the default one),
    /// used as `owner` ("" = the cluster) or, with `access`, as that user of another cluster.
    func peer(_ endpoint: ReplicationEndpoint, collection: String, owner: String,
              access: RemoteAccess?) async throws(SofaError) -> any ReplicationPeer
}

/// A database of a Sofa cluster, through the SDK.
struct ClusterPeer: ReplicationPeer {
    let database: Database
    /// The replicated collection of `database`.
    let store: any DocumentStore

    init(_ database: Database, collection: String) {
        self.database = database
        self.store = collection.isEmpty ? database : database.collection(collection)
    }

    var name: String { database.name }
    func info() async throws(SofaError) -> DatabaseInfo { try await database.info() }
    func changes(_ query: ChangesQuery) async throws(SofaError) -> ChangesBatch { try await store.changes(query) }
    func query(_ text: String, isN1QL: Bool, parameters: JSONObject) async throws(SofaError) -> [[JSON?]] {
        if isN1QL { return try await store.query(n1ql: text, parameters: parameters).rows }
        guard let query = JSON.tryParse(text) else { throw SofaError(.invalidQuery, "the filter's JSON query is not valid JSON") }
        return try await store.query(json: query, parameters: parameters).rows
    }
    func revsDiff(_ entries: [RevsDiffEntry]) async throws(SofaError) -> [RevsDiffEntry] { try await store.revsDiff(entries) }
    func get(id: String, rev: String, history: Bool) async throws(SofaError) -> StoredDocument {
        try await store.get(id: id, rev: rev, history: history)
    }
    func bulk(_ items: [BulkItem]) async throws(SofaError) -> [BulkItemResult] { try await store.bulk(items) }
    func openLeaves(id: String) async throws(SofaError) -> [StoredDocument] { try await store.openLeaves(id: id) }
    func resolve(id: String, winner: String, loser: String) async throws(SofaError) {
        _ = try await store.resolve(id: id, winner: winner, loser: loser)
    }
    func filter(_ name: String, documents: [JSON], request: JSON) async throws(SofaError) -> [Bool] {
        try await database.filter(name, documents: documents, request: request)
    }
    func blobInfo(_ key: String) async throws(SofaError) -> BlobInfo { try await database.blobInfo(key) }
    func blobChunks(_ key: String) -> any AsyncSequence<[UInt8], SofaError> & Sendable { database.blobChunks(key) }
    func putBlob(_ chunks: any AsyncSequence<[UInt8], SofaError> & Sendable, expectedKey: String) async throws(SofaError) {
        _ = try await database.putBlob(chunks, expectedKey: expectedKey)
    }
    func getLocal(id: String) async throws(SofaError) -> StoredDocument { try await database.getLocal(id: id) }
    func putLocal(id: String, json: String, rev: String?) async throws(SofaError) -> String {
        try await database.putLocal(id: id, json: json, rev: rev).rev
    }
}
