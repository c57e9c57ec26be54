/// Every operation of the wire, numbered as its field of `Request.op` in `sofa.proto` (a test
/// checks each number against what the encoder writes). The name of a case is the operation's
/// name in logs, metrics and errors.
public enum OperationKind: UInt32, Sendable, CaseIterable {
    case health = 10, clusterStatus, createDatabase, deleteDatabase, listDatabases, putDocument, getDocument,
         deleteDocument, echo, databaseInfo, createCollection, deleteCollection, listCollections, insertRevision,
         bulkWrite, conflicts, resolveConflict, purge, setExpiration, getExpiration, nextExpiration, changes, allDocs,
         rawPut, rawGet, rawDelete, compact, blobWriteBegin, blobWriteChunk, blobWriteEnd, blobWriteAbort, blobRead,
         blobStat, query, createIndex, deleteIndex, listIndexes, rekeyDatabase, deleteBlobs, dropBlobs,
         setRevsLimit
    case revsDiff = 60, startReplication, stopReplication, listReplications
    case authenticate = 70, session, getSecurity, setSecurity
    case viewQuery = 80, designCall

    public var name: String { String(describing: self) }
}

/// How the cluster routes one operation: which service answers it, whether it is about one
/// database, whether the gateway passes it on undecoded, whether it changes stored data, and how
/// long the gateway waits for its answer.
public struct Route: Sendable, Equatable {
    /// The processes of a cluster, as `health(service:)` names them.
    public enum Service: String, Sendable, CaseIterable {
        case gateway, storage, blob, replicator
        /// The query workers, through the gateway's broker.
        case query
    }

    public var service: Service
    /// The request must name a database (the envelope's `database`).
    public var needsDatabase: Bool
    /// The gateway forwards the request and its answer as bytes, without decoding either.
    public var passedThrough: Bool
    public var isWrite: Bool
    public var timeout: Duration
    /// False for a request one service sends another directly: the gateway refuses it.
    public var fromClients: Bool

    /// The gateway's usual wait for a service's answer.
    public static let defaultTimeout: Duration = .seconds(30)

    init(_ service: Service, database: Bool = true, passedThrough: Bool = false, write: Bool = false,
         timeout: Duration = Route.defaultTimeout, fromClients: Bool = true) {
        self.service = service
        self.needsDatabase = database
        self.passedThrough = passedThrough
        self.isWrite = write
        self.timeout = timeout
        self.fromClients = fromClients
    }
}

extension OperationKind {
    /// The routing table. The gateway builds its pass-through set and its handler from it; a
    /// request whose route needs a database and names none is refused there.
    public var route: Route {
        switch self {
        // `health` and `echo` go to the service they name ("" = the gateway itself).
        case .health, .echo: Route(.gateway, database: false)
        case .clusterStatus: Route(.gateway, database: false)
        // An encrypted database is created by storage, then keyed by sofa-blob (the gateway's own work).
        case .createDatabase: Route(.storage, write: true)
        case .deleteDatabase: Route(.storage, write: true)
        case .listDatabases: Route(.storage, database: false)
        case .databaseInfo, .listCollections, .conflicts, .getExpiration, .nextExpiration, .rawGet, .listIndexes:
            Route(.storage)
        case .createCollection, .deleteCollection, .resolveConflict, .purge, .setExpiration, .rawPut, .rawDelete,
             .compact, .createIndex, .deleteIndex, .setRevsLimit:
            Route(.storage, write: true)
        case .putDocument, .deleteDocument, .insertRevision, .bulkWrite:
            Route(.storage, passedThrough: true, write: true)
        // A changes request that waits (a long poll) is held by the gateway, not passed through.
        case .getDocument, .changes, .allDocs, .revsDiff: Route(.storage, passedThrough: true)
        case .blobWriteBegin, .blobWriteChunk, .blobWriteEnd, .blobWriteAbort:
            Route(.blob, passedThrough: true, write: true)
        case .blobRead, .blobStat: Route(.blob, passedThrough: true)
        // Every blob is rewritten: allow as long as a big store takes.
        case .rekeyDatabase: Route(.blob, write: true, timeout: .seconds(3600))
        // Only sofa-blob deletes in a store; storage's compaction asks it to, directly.
        case .deleteBlobs: Route(.blob, write: true, fromClients: false)
        // A database's blobs go with it: storage asks sofa-blob as it deletes the database.
        case .dropBlobs: Route(.blob, write: true, fromClients: false)
        // Cut to the server's longest query (SOFA_MAX_QUERY_MS) by the gateway.
        case .query: Route(.query, passedThrough: true)
        case .startReplication, .stopReplication: Route(.replicator, database: false, write: true)
        // A status wait is held by the replicator: the gateway adds it to this.
        case .listReplications: Route(.replicator, database: false)
        case .authenticate, .session: Route(.gateway, database: false)
        // Kept in the database's `info` store; the gateway reads and writes it there.
        case .getSecurity: Route(.gateway)
        case .setSecurity: Route(.gateway, write: true)
        // It may bring a view's index up to date first: as long as a query may run (the gateway
        // cuts it to SOFA_MAX_QUERY_MS as a query's).
        case .viewQuery: Route(.query, passedThrough: true)
        // Validation is the gateway's own call on a write; filters, an HTTP changes feed's.
        case .designCall: Route(.query)
        }
    }
}

extension Op {
    public var kind: OperationKind {
        switch self {
        case .health: .health
        case .clusterStatus: .clusterStatus
        case .createDatabase: .createDatabase
        case .deleteDatabase: .deleteDatabase
        case .listDatabases: .listDatabases
        case .putDocument: .putDocument
        case .getDocument: .getDocument
        case .deleteDocument: .deleteDocument
        case .echo: .echo
        case .databaseInfo: .databaseInfo
        case .createCollection: .createCollection
        case .deleteCollection: .deleteCollection
        case .listCollections: .listCollections
        case .insertRevision: .insertRevision
        case .bulkWrite: .bulkWrite
        case .conflicts: .conflicts
        case .resolveConflict: .resolveConflict
        case .purge: .purge
        case .setExpiration: .setExpiration
        case .getExpiration: .getExpiration
        case .nextExpiration: .nextExpiration
        case .changes: .changes
        case .allDocs: .allDocs
        case .rawPut: .rawPut
        case .rawGet: .rawGet
        case .rawDelete: .rawDelete
        case .compact: .compact
        case .blobWriteBegin: .blobWriteBegin
        case .blobWriteChunk: .blobWriteChunk
        case .blobWriteEnd: .blobWriteEnd
        case .blobWriteAbort: .blobWriteAbort
        case .blobRead: .blobRead
        case .blobStat: .blobStat
        case .query: .query
        case .createIndex: .createIndex
        case .deleteIndex: .deleteIndex
        case .listIndexes: .listIndexes
        case .rekeyDatabase: .rekeyDatabase
        case .deleteBlobs: .deleteBlobs
        case .dropBlobs: .dropBlobs
        case .setRevsLimit: .setRevsLimit
        case .revsDiff: .revsDiff
        case .startReplication: .startReplication
        case .stopReplication: .stopReplication
        case .listReplications: .listReplications
        case .authenticate: .authenticate
        case .session: .session
        case .getSecurity: .getSecurity
        case .setSecurity: .setSecurity
        case .viewQuery: .viewQuery
        case .designCall: .designCall
        }
    }

    /// A short name for logs and metrics.
    public var name: String { kind.name }

    /// Whether the operation changes stored data (and so must not be retried blindly).
    public var isWrite: Bool { kind.route.isWrite }
}

/// Words of the session protocol that both sides read.
public enum SessionWords {
    /// How an `unauthorized` refusal of a connection that is not signed in begins: a client that
    /// holds credentials signs in again (its connection was made anew) and retries once.
    public static let notSignedIn = "this connection is not signed in"
}
