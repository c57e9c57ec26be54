internal import SofaCore
internal import SofaClient

/// A replication's checkpoint: the source sequence up to which everything has been written to
/// the target, kept as the `_local` document `_local/replication-<id>` on both sides, body
/// `{"sequence": 1234}`. The replication resumes from the sequence both sides agree on: the lower
/// of the two (0 when either is missing), since the target is written before the source.
///
/// A replication through a design document's filter also records the filter's digest
/// (`"filter": "<hex SHA-1 of its source>"`): a checkpoint made with another version of the
/// function counts as none, so a changed filter replicates from the start, as in CouchDB (whose
/// replication ID covers the function's code).
struct Checkpoint {
    let documentID: String
    private(set) var sequence: UInt64
    private var sourceRev: String?
    private var targetRev: String?
    /// The filter's digest ("" without a design filter).
    private var filter = ""

    static func agreed(_ replicationID: String, source: any ReplicationPeer, target: any ReplicationPeer,
                       filter: String = "") async throws(SofaError) -> Checkpoint {
        let documentID = ReplicationID.checkpointDocument(replicationID)
        let fromSource = try await read(documentID, source, filter: filter)
        let fromTarget = try await read(documentID, target, filter: filter)
        let sequence = min(fromSource?.sequence ?? 0, fromTarget?.sequence ?? 0)
        return Checkpoint(documentID: documentID, sequence: sequence, sourceRev: fromSource?.rev, targetRev: fromTarget?.rev,
                          filter: filter)
    }

    private static func read(_ id: String, _ db: any ReplicationPeer, filter: String) async throws(SofaError) -> (sequence: UInt64, rev: String)? {
        let doc: StoredDocument
        do { doc = try await db.getLocal(id: id) } catch where error.is(.notFound) { return nil }
        guard case .object(let body)? = JSON.tryParse(doc.body), case .int(let sequence)? = body["sequence"], sequence >= 0 else {
            return (0, doc.rev)   // unreadable: start over, and overwrite it
        }
        // Made through another version of the filter: start over.
        guard (body["filter"]?.stringValue ?? "") == filter else { return (0, doc.rev) }
        return (UInt64(sequence), doc.rev)
    }

    /// Starts from `since` when the sequence agreed is lower (a replication asked to skip the
    /// source's earlier changes); recorded at the next save.
    mutating func start(atLeast since: UInt64) {
        sequence = max(sequence, since)
    }

    /// Records `sequence` on the target, then on the source.
    mutating func save(_ sequence: UInt64, source: any ReplicationPeer, target: any ReplicationPeer) async throws(SofaError) {
        targetRev = try await Self.write(documentID, sequence, filter: filter, rev: targetRev, target)
        sourceRev = try await Self.write(documentID, sequence, filter: filter, rev: sourceRev, source)
        self.sequence = sequence
    }

    private static func write(_ id: String, _ sequence: UInt64, filter: String, rev: String?,
                              _ db: any ReplicationPeer) async throws(SofaError) -> String {
        let json = filter.isEmpty ? #"{"sequence":\#(sequence)}"# : #"{"filter":"\#(filter)","sequence":\#(sequence)}"#
        do {
            return try await db.putLocal(id: id, json: json, rev: rev)
        } catch where error.is(.conflict) {
            // Written meanwhile by another run of this replication (or deleted): take its revision.
            let current = try? await db.getLocal(id: id)
            return try await db.putLocal(id: id, json: json, rev: current?.rev)
        }
    }
}
