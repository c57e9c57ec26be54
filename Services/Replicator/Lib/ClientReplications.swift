internal import SofaCore
internal import SofaWire
internal import SofaClient

/// Replications started by a client (SDK or CLI) are recorded as documents of `_replicator`, one
/// per direction, so that a restarted replicator starts them again (from their checkpoint) as it
/// does the documents an administrator writes:
///
/// ```json
/// _id "client-<replication id>":
/// {"source": "app", "target": "tcp://10.0.0.2:7420/app", "direction": "push", "continuous": true,
///  "doc_ids": [], "filter": "", "conflicts": "auto", "collection": "", "started_by": "client"}
/// ```
///
/// The replicator creates `_replicator` for the first one. The document is deleted when the
/// replication is stopped, or when a one-shot one completes; a failed one keeps its document (and
/// its status with the reason) until it is stopped.
enum ClientReplications {
    static let prefix = "client-"

    static func documentID(_ replicationID: String) -> String { prefix + replicationID }
    static func isClientDocument(_ docID: String) -> Bool { docID.hasPrefix(prefix) }

    /// The `_replicator` document of one started replication (one direction).
    static func document(_ status: ReplicationStatus) -> JSON {
        .object(JSONObject([
            ("source", .string(status.source)), ("target", .string(status.target)), ("direction", "push"),
            ("continuous", .bool(status.continuous)), ("doc_ids", .array(status.docIDs.map(JSON.string))),
            ("filter", .string(status.filter)), ("conflicts", .string(status.conflicts.rawValue)),
            ("collection", .string(status.collection)), ("started_by", "client"),
        ]))
    }

    /// Records the started replications; one recorded already (started again) is left as it is.
    static func record(_ started: [ReplicationStatus], _ connections: Connections) async throws(SofaError) {
        let db = try await connections.database(ReplicationEndpoint(gateway: nil, database: PersistentReplications.database))
        for status in started {
            let body = Array(document(status).compactString.utf8)
            do {
                _ = try await put(db, status.id, body)
            } catch where error.is(.notFound) {
                do {
                    _ = try await db.client.createDatabase(PersistentReplications.database)
                } catch where error.is(.databaseExists) {}
                _ = try await put(db, status.id, body)
            }
        }
    }

    private static func put(_ db: Database, _ id: String, _ body: [UInt8]) async throws(SofaError) {
        do {
            _ = try await db.put(id: documentID(id), body: body)
        } catch where error.is(.conflict) {
            // Recorded already: the same replication started again while it runs.
        }
    }

    /// Deletes the record of a replication, if it has one.
    static func forget(_ replicationID: String, _ connections: Connections) async throws(SofaError) {
        let db = try await connections.database(ReplicationEndpoint(gateway: nil, database: PersistentReplications.database))
        try await forget(documentID(replicationID), in: db)
    }

    /// Deletes `docID` of `_replicator`; a concurrent status write (a conflict) is read again.
    static func forget(_ docID: String, in db: Database) async throws(SofaError) {
        var attempts = 0
        while true {
            do {
                let doc = try await db.get(id: docID)
                if doc.deleted { return }
                _ = try await db.delete(id: docID, rev: doc.rev)
                return
            } catch where error.is(.notFound) {
                return
            } catch where error.is(.conflict) && attempts < 10 {
                attempts += 1
            }
        }
    }
}
