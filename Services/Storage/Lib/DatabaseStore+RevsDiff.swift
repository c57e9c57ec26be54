internal import SofaRows
public import SofaQL
public import SofaCore

/// What a database lacks of one document's revisions: the answer to a revs-diff (replication's
/// "which of these do you need?"), as CouchDB's `_revs_diff` gives it.
public struct RevsDiffOutcome: Sendable, Equatable {
    public var id: String
    /// The asked revisions the database does not have, in the order asked.
    public var missing: [String]
    /// Leaves the database has that could be ancestors of a missing revision (revision trees:
    /// leaves of a lower generation than the newest missing one). A sender can stop the history
    /// it sends at the first of these.
    public var possibleAncestors: [String]

    public init(id: String, missing: [String], possibleAncestors: [String]) {
        self.id = id
        self.missing = missing
        self.possibleAncestors = possibleAncestors
    }
}

extension DatabaseStore {
    /// For each document, the revisions of `revs` the database lacks (documents lacking none are
    /// left out). A purged or unknown document lacks every revision. A malformed revision is
    /// `.badRevisionID` for the whole call: the caller sent something no database could hold.
    ///
    /// Revision trees: a revID is had when the tree holds it (a leaf or an ancestor). Version
    /// vectors: a revision (a version or a whole vector) is had when the current vector or a
    /// conflicting one is the same or newer.
    public func revsDiff(_ documents: [(id: String, revs: [String])],
                         in collection: CollectionName = .default) async throws(SofaError) -> [RevsDiffOutcome] {
        try check(collection)
        for (id, _) in documents {
            guard DocumentID.isValid(id), !LocalDocuments.isLocal(id) else {
                throw SofaError(.badDocID, "revsDiff: invalid document ID '\(id)'")
            }
        }
        let versioning = self.versioning
        return try await read { (reader) throws(SofaError) -> [RevsDiffOutcome] in
            var outcomes: [RevsDiffOutcome] = []
            for (id, revs) in documents where !revs.isEmpty {
                let content = try DocumentRow.load(reader, collection, id)?.content(versioning)
                let outcome: RevsDiffOutcome
                switch versioning {
                case .revisionTrees:
                    outcome = try Self.treeDiff(id: id, revs: revs, content: content)
                case .versionVectors:
                    outcome = try Self.vectorDiff(id: id, revs: revs, content: content)
                }
                if !outcome.missing.isEmpty { outcomes.append(outcome) }
            }
            return outcomes
        }
    }

    static func treeDiff(id: String, revs: [String], content: DocumentContent?) throws(SofaError) -> RevsDiffOutcome {
        var parsed: [(String, RevID)] = []
        for rev in revs {
            guard let revID = RevID.tryParse(rev) else {
                throw SofaError(.badRevisionID, "revsDiff: document '\(id)': '\(rev)' is not a revision-tree revID")
            }
            parsed.append((rev, revID))
        }
        guard case .tree(let tree)? = content else {
            return RevsDiffOutcome(id: id, missing: Self.unique(revs), possibleAncestors: [])
        }
        let missing = parsed.filter { tree[$0.1] == nil }
        guard let newest = missing.map(\.1.generation).max() else {
            return RevsDiffOutcome(id: id, missing: [], possibleAncestors: [])
        }
        let ancestors = tree.leaves.filter { $0.revID.generation < newest }.map(\.revID).sorted(by: >).map(\.ascii)
        return RevsDiffOutcome(id: id, missing: Self.unique(missing.map(\.0)), possibleAncestors: ancestors)
    }

    static func vectorDiff(id: String, revs: [String], content: DocumentContent?) throws(SofaError) -> RevsDiffOutcome {
        var parsed: [(String, VersionVector)] = []
        for rev in revs {
            guard let vector = VersionVector.tryParse(rev), !vector.isEmpty else {
                throw SofaError(.badRevisionID, "revsDiff: document '\(id)': '\(rev)' is not a version or version vector")
            }
            parsed.append((rev, vector))
        }
        guard case .vector(let doc)? = content else {
            return RevsDiffOutcome(id: id, missing: Self.unique(revs), possibleAncestors: [])
        }
        let known = [doc.current] + doc.conflicts
        let missing = parsed.filter { incoming in
            !known.contains { [.same, .newer].contains($0.vector.compare(to: incoming.1)) }
        }
        return RevsDiffOutcome(id: id, missing: Self.unique(missing.map(\.0)),
                               possibleAncestors: missing.isEmpty ? [] : known.map(\.vector.ascii))
    }

    private static func unique(_ revs: [String]) -> [String] {
        if revs.count < 2 { return revs }
        var seen = Set<String>()
        return revs.filter { seen.insert($0).inserted }
    }
}
