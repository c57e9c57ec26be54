import SofaCore
import SofaWire
@testable import SofaReplicator
import Synchronization

/// A database in memory, as a replication sees one side: revisions with their ancestry, open
/// leaves, a changes feed, local documents and blobs. Calls are recorded, and failures can be
/// injected per call name, so a test can drive `Replication` without a cluster.
final class FakePeer: ReplicationPeer {
    struct Revision {
        var body: [UInt8]
        var deleted: Bool
        /// Newest first, starting with the revision itself.
        var history: [String]
    }

    struct State {
        var revisions: [String: [String: Revision]] = [:]
        /// Each document's open leaves.
        var leaves: [String: Set<String>] = [:]
        var sequences: [String: UInt64] = [:]
        var lastSequence: UInt64 = 0
        var local: [String: (rev: Int, body: String)] = [:]
        var blobs: [String: [UInt8]] = [:]
        /// Call names, in order, with the `since` of each changes read.
        var calls: [String] = []
        var changesSince: [UInt64] = []
        /// Call name → how many of the next such calls fail, and with what.
        var failures: [String: (count: Int, error: SofaError)] = [:]
        /// Revisions inserted asking for CouchDB's winner rule, as "id rev".
        var winnersByRevID: Set<String> = []
    }

    let name: String
    let versioning: Versioning
    let state = Mutex(State())

    init(_ name: String, versioning: Versioning = .revisionTrees) {
        self.name = name
        self.versioning = versioning
    }

    // MARK: Set-up and inspection

    /// Writes a revision with its ancestry (as a local save or an earlier replication would).
    func save(_ id: String, _ history: [String], _ json: String = "{}", deleted: Bool = false) {
        state.withLock { Self.insert(&$0, RevisionInsert(id: id, history: history, body: Array(json.utf8), deleted: deleted)) }
    }

    func failNext(_ call: String, times: Int = 1, with error: SofaError) {
        state.withLock { $0.failures[call] = (times, error) }
    }

    func openLeafRevs(_ id: String) -> Set<String> { state.withLock { $0.leaves[id] ?? [] } }
    /// Whether revision `rev` of `id` was inserted asking for CouchDB's winner rule.
    func insertedWinnerByRevID(_ id: String, _ rev: String) -> Bool { state.withLock { $0.winnersByRevID.contains(id + " " + rev) } }
    func has(_ id: String, _ rev: String) -> Bool { state.withLock { $0.revisions[id]?[rev] != nil } }
    func body(_ id: String, _ rev: String) -> String? {
        state.withLock { $0.revisions[id]?[rev].map { String(decoding: $0.body, as: UTF8.self) } }
    }
    func localBody(_ id: String) -> String? { state.withLock { $0.local[id]?.body } }
    func calls(_ name: String) -> Int { state.withLock { $0.calls.filter { $0 == name }.count } }
    var changesSince: [UInt64] { state.withLock { $0.changesSince } }
    func putBlobDirectly(_ key: String, _ bytes: [UInt8]) { state.withLock { $0.blobs[key] = bytes } }
    func blob(_ key: String) -> [UInt8]? { state.withLock { $0.blobs[key] } }

    // MARK: ReplicationPeer

    func filter(_ name: String, documents: [JSON], request: JSON) async throws(SofaError) -> [Bool] {
        throw SofaError(.notFound, "a fake peer has no design documents")
    }

    private func enter(_ call: String) throws(SofaError) {
        let failure: SofaError? = state.withLock { state in
            state.calls.append(call)
            guard let planned = state.failures[call], planned.count > 0 else { return nil }
            state.failures[call] = planned.count > 1 ? (planned.count - 1, planned.error) : nil
            return planned.error
        }
        if let failure { throw failure }
    }

    func info() async throws(SofaError) -> DatabaseInfo {
        try enter("info")
        return state.withLock { state in
            DatabaseInfo(name: name, documentCount: UInt64(state.revisions.count), lastSequence: state.lastSequence,
                         updateSequence: state.lastSequence, fileBytes: 0, walBytes: 0, publicUUID: "uuid-\(name)",
                         privateUUID: "private-\(name)", versioning: versioning, collections: 1)
        }
    }

    func changes(_ query: ChangesQuery) async throws(SofaError) -> ChangesBatch {
        try enter("changes")
        return state.withLock { state in
            state.changesSince.append(query.since)
            var changes = state.sequences.filter { $0.value > query.since }.sorted { $0.value < $1.value }.map { id, sequence in
                let current = Self.current(state, id)
                let revision = state.revisions[id]![current]!
                return Change(sequence: sequence, id: id, rev: current, deleted: revision.deleted,
                              body: query.includeBodies ? revision.body : [],
                              leaves: query.allLeaves ? state.leaves[id, default: []].sorted() : [])
            }
            if query.limit > 0 { changes = Array(changes.prefix(Int(query.limit))) }
            return ChangesBatch(changes: changes, lastSequence: changes.last?.sequence ?? query.since)
        }
    }

    func query(_ text: String, isN1QL: Bool, parameters: JSONObject) async throws(SofaError) -> [[JSON?]] {
        try enter("query")
        // Every document matches: the fake has no query engine.
        guard case .array(let ids)? = parameters["ids"] else { return [] }
        return ids.map { [$0] }
    }

    func revsDiff(_ entries: [RevsDiffEntry]) async throws(SofaError) -> [RevsDiffEntry] {
        try enter("revsDiff")
        return state.withLock { state in
            entries.compactMap { entry in
                let missing = entry.revs.filter { state.revisions[entry.id]?[$0] == nil }
                guard !missing.isEmpty else { return nil }
                return RevsDiffEntry(id: entry.id, revs: missing, possibleAncestors: state.leaves[entry.id, default: []].sorted())
            }
        }
    }

    func get(id: String, rev: String, history: Bool) async throws(SofaError) -> StoredDocument {
        try enter("get")
        return try state.withLock { state throws(SofaError) in
            guard let revision = state.revisions[id]?[rev] else { throw .notFound("no revision \(rev) of '\(id)'") }
            return StoredDocument(id: id, rev: rev, body: revision.body, deleted: revision.deleted,
                                  sequence: state.sequences[id] ?? 0, history: history ? revision.history : [])
        }
    }

    func bulk(_ items: [BulkItem]) async throws(SofaError) -> [BulkItemResult] {
        try enter("bulk")
        return state.withLock { state in
            items.map { item in
                guard case .insert(let insert) = item else {
                    return BulkItemResult(id: "", rev: "", sequence: 0, error: SofaError(.unsupported, "the fake only inserts"))
                }
                for digest in BlobDigests.find(in: insert.body) where state.blobs[digest] == nil {
                    return BulkItemResult(id: insert.id, rev: "", sequence: 0,
                                          error: .notFound("blob \(digest) is not in database '\(name)'"))
                }
                Self.insert(&state, insert)
                if insert.winnerByRevID { state.winnersByRevID.insert(insert.id + " " + insert.history[0]) }
                let live = state.leaves[insert.id, default: []].filter { state.revisions[insert.id]![$0]!.deleted == false }
                return BulkItemResult(id: insert.id, rev: insert.history[0], sequence: state.lastSequence,
                                      conflict: live.count > 1)
            }
        }
    }

    func openLeaves(id: String) async throws(SofaError) -> [StoredDocument] {
        try enter("openLeaves")
        return state.withLock { state in
            let current = Self.current(state, id)
            return state.leaves[id, default: []].sorted { a, b in a == current || (b != current && a > b) }.map { rev in
                let revision = state.revisions[id]![rev]!
                return StoredDocument(id: id, rev: rev, body: revision.body, deleted: revision.deleted, sequence: 0)
            }
        }
    }

    func resolve(id: String, winner: String, loser: String) async throws(SofaError) {
        try enter("resolve")
        try state.withLock { state throws(SofaError) in
            guard state.leaves[id]?.contains(winner) == true, state.leaves[id]?.contains(loser) == true else {
                throw .notFound("'\(id)' has no leaves \(winner) and \(loser)")
            }
            state.leaves[id]!.remove(loser)
            state.lastSequence += 1
            state.sequences[id] = state.lastSequence
        }
    }

    func blobInfo(_ key: String) async throws(SofaError) -> BlobInfo {
        try enter("blobInfo")
        return try state.withLock { state throws(SofaError) in
            guard let bytes = state.blobs[key] else { throw .notFound("no blob \(key)") }
            return BlobInfo(key: key, length: UInt64(bytes.count))
        }
    }

    func blobChunks(_ key: String) -> any AsyncSequence<[UInt8], SofaError> & Sendable {
        let bytes = state.withLock { $0.blobs[key] }
        return Chunks(bytes: bytes, key: key)
    }

    func putBlob(_ chunks: any AsyncSequence<[UInt8], SofaError> & Sendable, expectedKey: String) async throws(SofaError) {
        try enter("putBlob")
        var bytes: [UInt8] = []
        var iterator = chunks.makeAsyncIterator()
        while let chunk = try await iterator.next(isolation: nil) { bytes += chunk }
        let content = bytes
        state.withLock { $0.blobs[expectedKey] = content }
    }

    func getLocal(id: String) async throws(SofaError) -> StoredDocument {
        try enter("getLocal")
        return try state.withLock { state throws(SofaError) in
            guard let local = state.local[id] else { throw .notFound("no local document '\(id)'") }
            return StoredDocument(id: id, rev: "0-\(local.rev)", body: Array(local.body.utf8), deleted: false, sequence: 0)
        }
    }

    func putLocal(id: String, json: String, rev: String?) async throws(SofaError) -> String {
        try enter("putLocal")
        return try state.withLock { state throws(SofaError) in
            let current = state.local[id].map { "0-\($0.rev)" }
            guard current == rev else { throw SofaError(.conflict, "local document '\(id)' is at \(current ?? "none")") }
            let next = (state.local[id]?.rev ?? 0) + 1
            state.local[id] = (next, json)
            return "0-\(next)"
        }
    }

    // MARK: Helpers

    private static func insert(_ state: inout State, _ insert: RevisionInsert) {
        let id = insert.id
        for (index, rev) in insert.history.enumerated() where state.revisions[id]?[rev] == nil {
            let ancestry = Array(insert.history[index...])
            state.revisions[id, default: [:]][rev] = Revision(body: index == 0 ? insert.body : [],
                                                              deleted: index == 0 && insert.deleted, history: ancestry)
        }
        var leaves = state.leaves[id, default: []]
        leaves.subtract(insert.history.dropFirst())
        if !state.revisions[id]!.values.contains(where: { $0.history.dropFirst().contains(insert.history[0]) }) {
            leaves.insert(insert.history[0])
        }
        state.leaves[id] = leaves
        state.lastSequence += 1
        state.sequences[id] = state.lastSequence
    }

    /// The current revision: the winner among the open leaves (live before deleted, then the
    /// higher revision).
    private static func current(_ state: State, _ id: String) -> String {
        let leaves = state.leaves[id, default: []].map { ConflictRule.Leaf(rev: $0, deleted: state.revisions[id]![$0]!.deleted) }
        return ConflictRule.winner(leaves)?.rev ?? ""
    }

    struct Chunks: AsyncSequence, Sendable {
        typealias Element = [UInt8]
        typealias Failure = SofaError
        let bytes: [UInt8]?
        let key: String

        struct AsyncIterator: AsyncIteratorProtocol {
            typealias Element = [UInt8]
            typealias Failure = SofaError
            var remaining: [UInt8]?
            let key: String
            var started = false

            mutating func next() async throws(SofaError) -> [UInt8]? {
                try await next(isolation: nil)
            }

            mutating func next(isolation actor: isolated (any Actor)?) async throws(SofaError) -> [UInt8]? {
                guard let bytes = remaining else {
                    if started { return nil }
                    throw .notFound("no blob \(key)")
                }
                started = true
                remaining = nil
                return bytes
            }
        }

        func makeAsyncIterator() -> AsyncIterator { AsyncIterator(remaining: bytes, key: key) }
    }
}

/// Hands out the two fakes by database name.
struct FakePeers: PeerProvider {
    let peers: [String: FakePeer]

    init(_ peers: FakePeer...) { self.peers = Dictionary(uniqueKeysWithValues: peers.map { ($0.name, $0) }) }

    func peer(_ endpoint: ReplicationEndpoint, collection: String, owner: String,
              access: RemoteAccess?) async throws(SofaError) -> any ReplicationPeer {
        guard let peer = peers[endpoint.database] else { throw .notFound("no database '\(endpoint.database)'") }
        return peer
    }
}
