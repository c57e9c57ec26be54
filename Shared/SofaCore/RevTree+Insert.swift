extension RevTree {
    /// What `insert(history:…)` did.
    public struct InsertResult: Sendable, Hashable {
        /// How many revisions of the history were new to the tree (0: it was all known).
        public var added: Int
        /// The newest revision of the history the tree already had; nil when the history starts
        /// a new root.
        public var commonAncestor: RevID?
    }

    /// Adds a revision with its ancestry, newest first (`history[0]` is the new revision, as a
    /// replicator receives it). Revisions the tree already has end the walk; the rest are added as
    /// a chain, only `history[0]` carrying `body` and the `deleted`/`hasAttachments` flags.
    ///
    /// With `remote`, the revisions are marked foreign, the remote's current revision becomes
    /// `history[0]`, and a new branch that conflicts with a live local line is flagged
    /// `isConflict` (so is anything added on top of a conflicting leaf).
    ///
    /// Throws `.badRevisionID` if generations do not descend by one, and, without
    /// `allowConflict`, `.conflict` if the new revision would not extend a leaf.
    @discardableResult
    public mutating func insert(
        history: [RevID], body: [UInt8]?, deleted: Bool = false, hasAttachments: Bool = false,
        remote: RemoteID? = nil, allowConflict: Bool = true
    ) throws(SofaError) -> InsertResult {
        guard let newest = history.first else { throw .invalid("Empty revision history") }
        for k in history.indices.dropFirst() where history[k].generation + 1 != history[k - 1].generation {
            throw SofaError(.badRevisionID, "Revision history \(history[k - 1]) → \(history[k]) does not descend by one generation")
        }
        let known = history.firstIndex { indexByRevID[$0] != nil } ?? history.count
        if known == 0 {
            if let remote { remoteRevisions[remote] = indexByRevID[newest] }
            return InsertResult(added: 0, commonAncestor: newest)
        }
        let parent = known < history.count ? indexByRevID[history[known]] : nil
        let extendsLeaf = parent.map { revisions[$0].isLeaf } ?? revisions.isEmpty
        if !allowConflict && !extendsLeaf {
            throw .conflict("Revision \(newest) would create a conflict")
        }
        var conflict = false
        if remote != nil {
            if let p = parent, revisions[p].isLeaf, revisions[p].isConflict {
                conflict = true
            } else if !extendsLeaf, let winner = current, !winner.isDeleted {
                conflict = true
            }
        }

        var common: Flags = [.new]
        if remote != nil { common.insert(.foreign) }
        if conflict { common.insert(.isConflict) }
        if let p = parent { revisions[p].flags.remove(.leaf) }
        var parentIndex = parent
        for k in stride(from: known - 1, through: 0, by: -1) {
            var flags = common
            var revBody: [UInt8]?
            if k == 0 {
                flags.insert(.leaf)
                if deleted { flags.insert(.deleted) }
                if hasAttachments { flags.insert(.hasAttachments) }
                revBody = body
            }
            revisions.append(Revision(revID: history[k], parent: parentIndex, flags: flags, sequence: 0, body: revBody))
            parentIndex = revisions.count - 1
            indexByRevID[history[k]] = parentIndex
        }
        if let remote { remoteRevisions[remote] = parentIndex }
        normalizeConflicts()
        return InsertResult(added: known, commonAncestor: known < history.count ? history[known] : nil)
    }

    public typealias Flags = Revision.Flags

    /// Adds a local revision as a child of `parent` (nil: a first revision), with a revID of the
    /// next generation. Throws `.conflict` unless `parent` is a leaf (or, without parent, the
    /// tree is empty) and `allowConflict` is false; `.notFound` for an unknown parent.
    ///
    /// A revID the tree already has is not an error: nothing is added (`added == 0`), as LiteCore
    /// answers 200 for it, so the same edit made twice yields the same revision.
    @discardableResult
    public mutating func insert(
        _ revID: RevID, parent: RevID?, body: [UInt8]?, deleted: Bool = false, hasAttachments: Bool = false,
        allowConflict: Bool = false
    ) throws(SofaError) -> InsertResult {
        if let parent, indexByRevID[parent] == nil { throw .notFound("No parent revision \(parent)") }
        if indexByRevID[revID] != nil { return InsertResult(added: 0, commonAncestor: revID) }
        let history = parent.map { [revID, $0] } ?? [revID]
        return try insert(history: history, body: body, deleted: deleted, hasAttachments: hasAttachments,
                          allowConflict: allowConflict)
    }

    /// Makes a new local revision on top of `parent` with a deterministic revID, stores the body
    /// as compact JSON, and returns the revID.
    @discardableResult
    public mutating func addRevision(
        parent: RevID?, body: JSON?, deleted: Bool = false, hasAttachments: Bool = false, allowConflict: Bool = false
    ) throws(SofaError) -> RevID {
        try addRevision(parent: parent, canonicalBody: body?.canonicalBytes() ?? Array("{}".utf8),
                        compactBody: body?.compactBytes() ?? (deleted ? nil : Array("{}".utf8)), deleted: deleted,
                        hasAttachments: hasAttachments, allowConflict: allowConflict)
    }

    /// As `addRevision(parent:body:…)`, with the body already written both ways (canonical for the
    /// revID, compact for storage), e.g. by a caller that prepared them off a hot path.
    @discardableResult
    public mutating func addRevision(
        parent: RevID?, canonicalBody: [UInt8], compactBody: [UInt8]?, deleted: Bool = false,
        hasAttachments: Bool = false, allowConflict: Bool = false
    ) throws(SofaError) -> RevID {
        if let parent, !parent.canHaveChild { throw SofaError(.badRevisionID, "Generation overflow after \(parent)") }
        let revID = RevID.generate(parent: parent, deleted: deleted, canonicalBody: canonicalBody)
        try insert(revID, parent: parent, body: compactBody, deleted: deleted, hasAttachments: hasAttachments,
                   allowConflict: allowConflict)
        return revID
    }
}
