internal import SofaCore
internal import SofaClient

/// A replication's checkpoint: the source sequence up to which everything has been written to
/// the target, kept as the `_local` document `_local/replication-<id>` on both sides, body
/// `{"sequence": 1234}`. The replication resumes from the sequence both sides agree on: the lower
/// of the two (0 when either is missing), since the target is written before the source.
struct Checkpoint {
    let documentID: String
    private(set) var sequence: UInt64
    private var sourceRev: String?
    private var targetRev: String?

    static func agreed(_ replicationID: String, source: any ReplicationPeer, target: any ReplicationPeer) async throws(SofaError) -> Checkpoint {
        let documentID = ReplicationID.checkpointDocument(replicationID)
        let fromSource = try await read(documentID, source)
        let fromTarget = try await read(documentID, target)
        let sequence = min(fromSource?.sequence ?? 0, fromTarget?.sequence ?? 0)
        return Checkpoint(documentID: documentID, sequence: sequence, sourceRev: fromSource?.rev, targetRev: fromTarget?.rev)
    }

    private static func read(_ id: String, _ db: any ReplicationPeer) async throws(SofaError) -> (sequence: UInt64, rev: String)? {
        let doc: StoredDocument
        do { doc = try await db.getLocal(id: id) } catch where error.is(.notFound) { return nil }
        guard case .object(let body)? = JSON.tryParse(doc.body), case .int(let sequence)? = body["sequence"], sequence >= 0 else {
            return (0, doc.rev)   // unreadable: start over, and overwrite it
        }
        return (UInt64(sequence), doc.rev)
    }

    /// Records `sequence` on the target, then on the source.
    mutating func save(_ sequence: UInt64, source: any ReplicationPeer, target: any ReplicationPeer) async throws(SofaError) {
        targetRev = try await Self.write(documentID, sequence, rev: targetRev, target)
        sourceRev = try await Self.write(documentID, sequence, rev: sourceRev, source)
        self.sequence = sequence
    }

    private static func write(_ id: String, _ sequence: UInt64, rev: String?, _ db: any ReplicationPeer) async throws(SofaError) -> String {
        let json = #"{"sequence":\#(sequence)}"#
        do {
            return try await db.putLocal(id: id, json: json, rev: rev)
        } catch where error.is(.conflict) {
            // Written meanwhile by another run of this replication (or deleted): take its revision.
            let current = try? await db.getLocal(id: id)
            return try await db.putLocal(id: id, json: json, rev: current?.rev)
        }
    }
}
