public import SofaCore

/// One call: who asked (`id`), about which database, until when, and what to do.
public struct Request: Sendable, Equatable {
    public var id: UInt64
    public var database: String
    /// "scope.collection", or "collection" in scope `_default`; "" = `_default._default`.
    public var collection: String
    /// Milliseconds since the Unix epoch after which the caller no longer waits; 0 = none.
    public var deadline: UInt64
    /// The user the request runs as, named by a service of the cluster on behalf of its own
    /// client (sofa-http); "" = the connection's own. The gateway honours it only from a peer
    /// that holds the cluster's key.
    public var actingUser: String
    /// The `actingUser` of a request that runs as nobody (user names cannot start with `_`).
    public static let anonymousActor = "_anonymous"
    public var operation: Op

    public init(id: UInt64 = 0, database: String = "", collection: String = "", deadline: UInt64 = 0,
                actingUser: String = "", operation: Op) {
        self.id = id
        self.database = database
        self.collection = collection
        self.deadline = deadline
        self.actingUser = actingUser
        self.operation = operation
    }
}

/// The operations of the wire. Each maps to one `oneof op` case of `sofa.proto`.
public enum Op: Sendable, Equatable {
    /// Ask a process how it is; through the gateway, `service` names which one ("" = the gateway).
    case health(service: String)
    /// The gateway's view of every service of the cluster.
    case clusterStatus
    /// `encryptionKey`: the database's blobs are stored encrypted with it (sofa-blob keeps it).
    case createDatabase(versioning: Versioning = .revisionTrees, encryptionKey: EncryptionKey? = nil)
    case deleteDatabase
    case listDatabases
    case databaseInfo
    /// The envelope's collection.
    case createCollection
    case deleteCollection
    case listCollections
    /// Write a revision. `id` empty = generate one; `rev` empty = a new document.
    /// An ID starting with `_local/` is a local document (no history, not replicated).
    case putDocument(id: String, rev: String, body: [UInt8], deleted: Bool)
    /// `rev` empty = the current revision; `history` adds the ancestry; `openLeaves` returns
    /// every open leaf (as `.documents`).
    case getDocument(id: String, rev: String, history: Bool = false, openLeaves: Bool = false)
    case deleteDocument(id: String, rev: String)
    /// Replication's write: a revision with its ancestry, no MVCC check.
    case insertRevision(RevisionInsert)
    /// Many writes in one transaction, each with its own result.
    case bulkWrite([BulkItem])
    /// The open leaves that conflict with the current revision.
    case conflicts(id: String)
    case resolveConflict(ConflictResolution)
    /// `rev` empty = the whole document; else one leaf revision.
    case purge(id: String, rev: String)
    /// `expiration` in ms since the epoch; 0 cancels.
    case setExpiration(id: String, expiration: Int64)
    case getExpiration(id: String)
    case nextExpiration
    case changes(ChangesQuery)
    case allDocs(AllDocsQuery)
    /// Raw key/value access to a named key store (internal metadata).
    case rawPut(store: String, key: String, version: [UInt8], body: [UInt8])
    case rawGet(store: String, key: String)
    case rawDelete(store: String, key: String)
    /// Prune revision trees, drop old bodies, reclaim space.
    case compact
    /// A diagnostic round trip, answered by `service` ("" = whoever receives it) after `delayMs`.
    case echo(payload: [UInt8], delayMs: UInt32, service: String)
    /// Blob transfer (sofa-blob); see `Messages+Blobs.swift`. `expectedKey` "" = no check.
    case blobWriteBegin(expectedKey: String)
    case blobWriteChunk(writeID: UInt64, offset: UInt64, bytes: [UInt8])
    case blobWriteEnd(writeID: UInt64, length: UInt64)
    case blobWriteAbort(writeID: UInt64)
    /// Queries (sofa-query workers); index DDL (sofa-storage).
    case query(QuerySpec)
    case createIndex(IndexDefinition)
    case deleteIndex(name: String)
    case listIndexes
    case blobRead(key: String, offset: UInt64, length: UInt32)
    case blobStat(key: String)
    /// Re-encrypt every blob of the database (sofa-blob): `currentKey` must be the key it has
    /// (nil: it is plain); `newKey` nil decrypts.
    case rekeyDatabase(currentKey: EncryptionKey?, newKey: EncryptionKey?)
    /// Compaction's request to sofa-blob (sofa-storage sends it, not clients): delete these
    /// blobs of the database, which no kept revision references; missing ones are skipped.
    case deleteBlobs(keys: [String])
    /// The database is being deleted (sofa-storage sends it, not clients): sofa-blob deletes every
    /// blob of it, its key file and its folder, and forgets its open uploads.
    case dropBlobs
    /// How many revisions of each document's history the database keeps, from now on and in
    /// what it holds already (CouchDB's `_revs_limit`; at least 1). `databaseInfo` tells it.
    case setRevsLimit(UInt32)
    /// Which of these revisions the database lacks (storage; replication), answered `.revsDiff`.
    case revsDiff([RevsDiffEntry])
    /// Replication control (sofa-replicator, through the gateway; no database), answered
    /// `.replications`. `listReplications` with `waitMs` waits until the named replication's
    /// status version is beyond `afterVersion`.
    case startReplication(ReplicationSpec)
    case stopReplication(id: String)
    case listReplications(id: String = "", afterVersion: UInt64 = 0, waitMs: UInt32 = 0)
    /// Signs the connection in (the gateway), answered `.session`.
    case authenticate(name: String, password: String)
    /// Who the connection is signed in as, answered `.session`.
    case session
    /// The envelope's database's security object, answered `.json`; `setSecurity` replaces it.
    case getSecurity
    case setSecurity(JSON)
    /// A design document's view (query workers), answered `.json` in CouchDB's shape; see
    /// `ViewQuery` in sofa.proto for the options.
    case viewQuery(design: String, view: String, options: JSON)
    /// A design document's validation or filter functions, or its views' upkeep (query workers),
    /// answered `.json`.
    case designCall(DesignCall)
}

/// The answer to one request: its id and either a reply or an error.
public struct Response: Sendable, Equatable {
    public var id: UInt64
    public var outcome: Result<Reply, SofaError>

    public init(id: UInt64, outcome: Result<Reply, SofaError>) {
        self.id = id
        self.outcome = outcome
    }

    public static func ok(_ id: UInt64, _ reply: Reply = .none) -> Response {
        Response(id: id, outcome: .success(reply))
    }

    public static func failure(_ id: UInt64, _ error: SofaError) -> Response {
        Response(id: id, outcome: .failure(error))
    }
}

public enum Reply: Sendable, Equatable {
    case none
    case health(HealthInfo)
    case cluster([ServiceStatus])
    case databases([String])
    case document(StoredDocument)
    case revision(id: String, rev: String, sequence: UInt64)
    case echo(payload: [UInt8], instance: String)
    case databaseInfo(DatabaseInfo)
    case collections([String])
    case documents([StoredDocument])
    case bulk([BulkItemResult])
    /// Leaf revIDs.
    case conflicts([String])
    /// ms since the epoch; 0 = none.
    case expiration(Int64)
    case changes(ChangesBatch)
    case raw(version: [UInt8], body: [UInt8])
    case inserted(InsertResult)
    case blobWriteStarted(writeID: UInt64)
    case blob(BlobInfo)
    /// A range of a blob and the whole blob's length.
    case blobData(bytes: [UInt8], totalLength: UInt64)
    case query(QueryRows)
    case indexes([IndexDefinition])
    /// Per document: the missing revisions and possible ancestors (documents lacking nothing are left out).
    case revsDiff([RevsDiffEntry])
    case replications([ReplicationStatus])
    /// A signed-in user's name ("" for nobody) and roles (`_admin`: a server admin).
    case session(name: String, roles: [String])
    case json(JSON)
}

public struct HealthInfo: Sendable, Equatable {
    public var service: String
    public var version: String
    public var pid: UInt32
    public var uptimeMs: UInt64
    public var instance: String
    /// Whether the server takes several calls in one message (`WireBatch`): every Sofa server
    /// does, and a client sends batches only to one that says so.
    public var batches: Bool

    public init(service: String, version: String, pid: UInt32, uptimeMs: UInt64, instance: String, batches: Bool = false) {
        self.service = service
        self.version = version
        self.pid = pid
        self.uptimeMs = uptimeMs
        self.instance = instance
        self.batches = batches
    }
}

public struct ServiceStatus: Sendable, Equatable {
    public var name: String
    public var healthy: Bool
    public var detail: String
    public var instances: UInt32

    public init(name: String, healthy: Bool, detail: String, instances: UInt32) {
        self.name = name
        self.healthy = healthy
        self.detail = detail
        self.instances = instances
    }
}

/// A frame between the gateway's broker and a worker.
public struct WorkerFrame: Sendable, Equatable {
    public enum Kind: Int32, Sendable {
        case ready = 0, heartbeat = 1, request = 2, reply = 3, disconnect = 4
        /// Broker → worker: stop the request `requestID`, its client went away.
        case cancel = 5
    }

    public var kind: Kind
    public var instance: String
    public var pid: UInt32
    public var service: String
    public var payload: [UInt8]
    /// `.cancel`: the id of the request to stop.
    public var requestID: UInt64
    /// `.ready`: how many jobs the worker takes at once (0 = 1).
    public var capacity: UInt32
    /// `.ready`: the worker takes several frames in one message (`WireBatch`).
    public var batches: Bool

    public init(kind: Kind, instance: String = "", pid: UInt32 = 0, service: String = "", payload: [UInt8] = [],
                requestID: UInt64 = 0, capacity: UInt32 = 0, batches: Bool = false) {
        self.requestID = requestID
        self.capacity = capacity
        self.batches = batches
        self.kind = kind
        self.instance = instance
        self.pid = pid
        self.service = service
        self.payload = payload
    }
}
