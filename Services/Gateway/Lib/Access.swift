public import SofaCore
public import SofaWire

/// The rules: which operations need what, decided from the request alone (and the caller's
/// standing in the database). One place, checked without a cluster by the unit tests.
public enum AccessRules {
    /// What an operation needs.
    public enum Need: Sendable, Equatable {
        /// Anyone, signed in or not (health, signing in).
        case anyone
        /// Any signed-in user (the cluster's status, echo).
        case signedIn
        /// A server admin (databases created, deleted, listed; raw stores).
        case serverAdmin
        /// A database admin (design documents, the security object, indexes, compaction, …).
        case databaseAdmin
        /// A database member (documents, local documents, queries, changes, blobs).
        case member
    }

    /// The need of an operation; a write of a design document needs a database admin
    /// (`designWrite`: the request writes one).
    public static func need(_ kind: OperationKind, designWrite: Bool = false) -> Need {
        switch kind {
        case .health, .authenticate, .session: return .anyone
        // An echo may wait and may be passed on to a service: not for anonymous clients.
        case .clusterStatus, .echo: return .signedIn
        case .createDatabase, .deleteDatabase, .listDatabases, .rawPut, .rawGet, .rawDelete, .deleteBlobs, .dropBlobs:
            return .serverAdmin
        // A user's replications are checked against their databases (see GatewayService+Replication).
        case .startReplication, .stopReplication, .listReplications:
            return .signedIn
        case .getSecurity:
            return .member
        case .setSecurity, .createIndex, .deleteIndex, .compact, .purge, .rekeyDatabase, .createCollection,
             .deleteCollection, .setRevsLimit:
            return .databaseAdmin
        // A design call that changes views' indexes (cleanup, compaction) needs a database admin.
        case .putDocument, .deleteDocument, .insertRevision, .bulkWrite, .resolveConflict, .setExpiration, .designCall:
            return designWrite ? .databaseAdmin : .member
        case .getDocument, .databaseInfo, .listCollections, .conflicts, .getExpiration, .nextExpiration, .changes,
             .allDocs, .revsDiff, .query, .viewQuery, .listIndexes, .blobWriteBegin, .blobWriteChunk, .blobWriteEnd, .blobWriteAbort,
             .blobRead, .blobStat:
            return .member
        }
    }

    /// Whether the request writes a design document (`_design/…`).
    public static func writesDesignDocument(_ operation: Op) -> Bool {
        func design(_ id: String) -> Bool { id.hasPrefix("_design/") }
        switch operation {
        case .putDocument(let id, _, _, _), .deleteDocument(let id, _), .setExpiration(let id, _): return design(id)
        case .insertRevision(let insert): return design(insert.id)
        case .bulkWrite(let items):
            return items.contains { item in
                switch item {
                case .put(let id, _, _, _): design(id)
                case .insert(let insert): design(insert.id)
                }
            }
        case .resolveConflict(let resolution): return design(resolution.id)
        // Compiling runs the source (a function expression is evaluated): a database admin's,
        // as writing the design document that holds it is.
        case .designCall(let call): return call.kind == .cleanup || call.kind == .compact || call.kind == .compile
        default: return false
        }
    }

    /// nil when `principal` (nil: not signed in) may run an operation of `kind` in a database
    /// with `security` (nil for operations about no database); else the refusal.
    public static func check(_ kind: OperationKind, database: String, designWrite: Bool = false, principal: Principal?,
                             security: SecurityObject?) -> SofaError? {
        let need = need(kind, designWrite: designWrite)
        if need == .anyone { return nil }
        if principal == nil, need != .member || security?.access(of: nil) == SecurityObject.Access.none {
            return notSignedIn(kind)
        }
        switch need {
        case .anyone, .signedIn: return nil
        case .serverAdmin:
            return principal?.isServerAdmin == true ? nil : .forbidden("\(kind.name) is for server admins only")
        case .databaseAdmin, .member:
            let access = (security ?? .adminOnly).access(of: principal)
            let needed: SecurityObject.Access = need == .member ? .member : .admin
            if access >= needed { return nil }
            let who = principal.map { "user '\($0.name)'" } ?? "an anonymous client"
            return .forbidden(needed == .admin
                ? "\(who) is not an admin of database '\(database)': \(designWrite ? "writing a design document" : kind.name) needs one"
                : "\(who) may not access database '\(database)': not a member (its security object)")
        }
    }

    /// The refusal of a connection that is not signed in (the SDK signs in again on it).
    public static func notSignedIn(_ kind: OperationKind) -> SofaError {
        .unauthorized("\(SessionWords.notSignedIn): sign in (a user's name and password) before \(kind.name)")
    }
}
