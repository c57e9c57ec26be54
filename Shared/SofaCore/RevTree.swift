/// A document's revision tree, as LiteCore keeps it.
///
/// Revisions are stored parents-first: every revision's parent has a lower index. The tree tracks,
/// per remote peer (`RemoteID`), the revision that peer last had, and keeps it through pruning.
///
/// The current revision (the winner) is the best by, in order: leaves before non-leaves,
/// revisions not flagged conflicting, live before deleted, not closed before closed, then the
/// higher revID. A branch pulled from a remote that conflicts with a live local line is flagged
/// conflicting, so the local line stays current even if the remote one is longer; once the local
/// line ends in a tombstone, the best live conflicting leaf becomes current and loses the flag.
public struct RevTree: Sendable {
    public typealias RemoteID = UInt32

    public internal(set) var revisions: [Revision] = []
    /// Each remote's current revision, as an index into `revisions`.
    public internal(set) var remoteRevisions: [RemoteID: Int] = [:]
    var indexByRevID: [RevID: Int] = [:]

    public init() {}

    public var count: Int { revisions.count }
    public var isEmpty: Bool { revisions.isEmpty }

    public func index(of revID: RevID) -> Int? { indexByRevID[revID] }

    public subscript(revID: RevID) -> Revision? {
        indexByRevID[revID].map { revisions[$0] }
    }

    public func parent(of revision: Revision) -> Revision? {
        revision.parent.map { revisions[$0] }
    }

    /// The revID and its ancestors, newest first, generations descending by one: the walk ends
    /// where pruning left a gap (a revision kept below the pruned ones, such as a remote's
    /// current revision, is not an ancestor a history can name: a replicator would refuse it).
    public func history(of revID: RevID) -> [RevID] {
        var result: [RevID] = []
        var i = indexByRevID[revID]
        while let index = i {
            let revision = revisions[index].revID
            if let last = result.last, revision.generation + 1 != last.generation { break }
            result.append(revision)
            i = revisions[index].parent
        }
        return result
    }

    public var leaves: [Revision] { revisions.filter(\.isLeaf) }

    // MARK: Winner and conflicts

    /// Whether `a` wins over `b` by the winner rule.
    static func isBetter(_ a: Revision, than b: Revision) -> Bool {
        if a.isLeaf != b.isLeaf { return a.isLeaf }
        if a.isConflict != b.isConflict { return !a.isConflict }
        if a.isDeleted != b.isDeleted { return !a.isDeleted }
        if a.isClosed != b.isClosed { return !a.isClosed }
        return a.revID > b.revID
    }

    public var currentIndex: Int? {
        var best: Int?
        for i in revisions.indices where revisions[i].isLeaf {
            if best == nil || Self.isBetter(revisions[i], than: revisions[best!]) { best = i }
        }
        return best
    }

    /// The winning revision; nil only for an empty tree.
    public var current: Revision? { currentIndex.map { revisions[$0] } }

    /// Live leaves other than the current revision.
    public var conflicts: [Revision] {
        let winner = currentIndex
        return revisions.indices.filter { $0 != winner && revisions[$0].isActive }.map { revisions[$0] }
    }

    public var hasConflict: Bool { !conflicts.isEmpty }

    /// When no local (unflagged) leaf is live, the best live conflicting leaf becomes current and
    /// its branch loses the conflict flag.
    mutating func normalizeConflicts() {
        var bestLocal: Int?
        var bestRemote: Int?
        for i in revisions.indices where revisions[i].isLeaf {
            let rev = revisions[i]
            if !rev.isConflict {
                if bestLocal == nil || Self.isBetter(rev, than: revisions[bestLocal!]) { bestLocal = i }
            } else if !rev.isDeleted {
                if bestRemote == nil || Self.isBetter(rev, than: revisions[bestRemote!]) { bestRemote = i }
            }
        }
        if let local = bestLocal, !revisions[local].isDeleted { return }
        if let remote = bestRemote { markBranchNotConflicting(fromLeaf: remote) }
    }

    /// Makes the branch ending at `leaf` the winning line, as LiteCore does: clears `isConflict`
    /// down to the root, and keeps `keepBody` only on the newest revision of the branch that has
    /// it (one kept body per branch).
    mutating func markBranchNotConflicting(fromLeaf leaf: Int) {
        var keptOne = false
        var i: Int? = leaf
        while let index = i {
            revisions[index].flags.remove(.isConflict)
            if revisions[index].keepsBody {
                if keptOne { revisions[index].flags.remove(.keepBody) } else { keptOne = true }
            }
            i = revisions[index].parent
        }
    }

    // MARK: Bookkeeping

    /// Gives every new revision `sequence` and clears their `new` flags, after a save.
    public mutating func markSaved(sequence: UInt64) {
        for i in revisions.indices where revisions[i].flags.contains(.new) {
            revisions[i].sequence = sequence
            revisions[i].flags.remove(.new)
        }
    }

    public var hasNewRevisions: Bool { revisions.contains { $0.flags.contains(.new) } }

    /// Records `revID` as the revision `remote` currently has.
    public mutating func setRemoteRevision(_ revID: RevID?, for remote: RemoteID) throws(SofaError) {
        guard let revID else {
            remoteRevisions[remote] = nil
            return
        }
        guard let i = indexByRevID[revID] else { throw .notFound("No revision \(revID) in the tree") }
        remoteRevisions[remote] = i
    }

    public func remoteRevision(for remote: RemoteID) -> Revision? {
        remoteRevisions[remote].map { revisions[$0] }
    }

    /// Marks (or unmarks) a revision whose body must be kept. As in LiteCore, only one revision
    /// per branch keeps its body: marking one unmarks its ancestors (on a conflicting branch,
    /// only up to where the branch leaves the local line).
    public mutating func setKeepBody(_ revID: RevID, _ keep: Bool = true) throws(SofaError) {
        guard let i = indexByRevID[revID] else { throw .notFound("No revision \(revID) in the tree") }
        guard keep else {
            revisions[i].flags.remove(.keepBody)
            return
        }
        revisions[i].flags.insert(.keepBody)
        let conflict = revisions[i].isConflict
        var a = revisions[i].parent
        while let index = a {
            if conflict && !revisions[index].isConflict { break }
            revisions[index].flags.remove(.keepBody)
            a = revisions[index].parent
        }
    }

    mutating func rebuildIndex() {
        indexByRevID = [:]
        indexByRevID.reserveCapacity(revisions.count)
        for (i, rev) in revisions.enumerated() { indexByRevID[rev.revID] = i }
    }

    /// Recomputes every revision's `leaf` flag from the parent links.
    mutating func recomputeLeaves() {
        var hasChild = [Bool](repeating: false, count: revisions.count)
        for rev in revisions { if let p = rev.parent { hasChild[p] = true } }
        for i in revisions.indices {
            if hasChild[i] { revisions[i].flags.remove(.leaf) } else { revisions[i].flags.insert(.leaf) }
        }
    }
}

extension RevTree: Hashable {
    public static func == (lhs: RevTree, rhs: RevTree) -> Bool {
        lhs.revisions == rhs.revisions && lhs.remoteRevisions == rhs.remoteRevisions
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(revisions)
        hasher.combine(remoteRevisions)
    }
}
