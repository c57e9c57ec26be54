extension RevTree {
    public static let defaultMaxDepth = 50

    /// Removes revisions more than `maxDepth` generations from every leaf (a leaf has depth 1),
    /// except those marked `keepBody` and remotes' current revisions; a kept revision's child is
    /// re-attached to its nearest kept ancestor. Returns how many were removed.
    @discardableResult
    public mutating func prune(maxDepth: Int = RevTree.defaultMaxDepth) -> Int {
        precondition(maxDepth > 0, "maxDepth must be positive")
        var depth = [Int](repeating: .max, count: revisions.count)
        for leaf in revisions.indices where revisions[leaf].isLeaf {
            var d = 1
            var i: Int? = leaf
            while let index = i, d < depth[index] {
                depth[index] = d
                d += 1
                i = revisions[index].parent
            }
        }
        let remoteCurrent = Set(remoteRevisions.values)
        let keep = revisions.indices.map { i in
            depth[i] <= maxDepth || revisions[i].keepsBody || remoteCurrent.contains(i)
        }
        return removeRevisions(keeping: keep)
    }

    /// Removes the leaf `revID` and the ancestors only it descends from. Returns how many
    /// revisions were removed: 0, not an error, for an unknown revision or one that is not a leaf,
    /// as LiteCore's `purgeRevision` answers.
    @discardableResult
    public mutating func purge(_ revID: RevID) -> Int {
        guard let leaf = indexByRevID[revID], revisions[leaf].isLeaf else { return 0 }
        var childCount = [Int](repeating: 0, count: revisions.count)
        for rev in revisions { if let p = rev.parent { childCount[p] += 1 } }
        var keep = [Bool](repeating: true, count: revisions.count)
        var i: Int? = leaf
        while let index = i, childCount[index] == 0 {
            keep[index] = false
            i = revisions[index].parent
            if let p = i { childCount[p] -= 1 }
        }
        let removed = removeRevisions(keeping: keep)
        normalizeConflicts()
        return removed
    }

    /// Removes every revision (purging the whole document); returns how many there were.
    @discardableResult
    public mutating func purgeAll() -> Int {
        let count = revisions.count
        revisions = []
        remoteRevisions = [:]
        indexByRevID = [:]
        return count
    }

    /// Drops the bodies of non-leaf revisions, except those marked `keepBody`.
    public mutating func removeNonLeafBodies() {
        for i in revisions.indices where !revisions[i].isLeaf && !revisions[i].keepsBody {
            revisions[i].body = nil
        }
    }

    /// Removes the revisions whose `keep` is false, re-attaching children to the nearest kept
    /// ancestor and dropping remote pointers to removed revisions. Keeps parents-first order.
    mutating func removeRevisions(keeping keep: [Bool]) -> Int {
        let removed = keep.lazy.filter { !$0 }.count
        guard removed > 0 else { return 0 }
        var newIndex = [Int?](repeating: nil, count: revisions.count)
        var result: [Revision] = []
        result.reserveCapacity(revisions.count - removed)
        for i in revisions.indices where keep[i] {
            var rev = revisions[i]
            var p = rev.parent
            while let index = p, !keep[index] { p = revisions[index].parent }
            rev.parent = p.map { newIndex[$0]! }
            newIndex[i] = result.count
            result.append(rev)
        }
        revisions = result
        remoteRevisions = remoteRevisions.compactMapValues { newIndex[$0] }
        rebuildIndex()
        recomputeLeaves()
        return removed
    }

    /// Resolves a conflict between two leaves. The `losing` branch is closed with a tombstone
    /// (flagged `deleted` and `closed`; a losing tombstone is just flagged `closed`), and the
    /// winning branch loses its conflict flag. With `mergedBody`, a new revision holding it is
    /// added on top of `winning`. Returns the revID that is now current.
    @discardableResult
    public mutating func resolveConflict(
        winning: RevID, losing: RevID, mergedBody: JSON? = nil, mergedDeleted: Bool = false,
        mergedHasAttachments: Bool = false
    ) throws(SofaError) -> RevID {
        guard let w = indexByRevID[winning], let l = indexByRevID[losing] else {
            throw .notFound("Conflict resolution names a revision not in the tree")
        }
        guard w != l, revisions[w].isLeaf, revisions[l].isLeaf else {
            throw .invalid("Conflict resolution needs two different leaf revisions")
        }
        markBranchNotConflicting(fromLeaf: w)
        if revisions[l].isDeleted {
            revisions[l].flags.insert(.closed)
        } else {
            guard losing.canHaveChild else { throw SofaError(.badRevisionID, "Generation overflow after \(losing)") }
            let tombstone = RevID.generate(parent: losing, deleted: true, body: nil)
            var flags: Flags = [.deleted, .closed, .new, .leaf]
            if revisions[l].isConflict { flags.insert(.isConflict) }
            revisions[l].flags.remove(.leaf)
            revisions.append(Revision(revID: tombstone, parent: l, flags: flags, sequence: 0, body: nil))
            indexByRevID[tombstone] = revisions.count - 1
        }
        var result = winning
        if mergedBody != nil || mergedDeleted {
            result = try addRevision(parent: winning, body: mergedBody, deleted: mergedDeleted,
                                     hasAttachments: mergedHasAttachments)
        }
        normalizeConflicts()
        return result
    }
}
