public import SofaCore

/// One document of a revs-diff: in a request, the revisions to check; in the answer, the ones the
/// database lacks and the revisions it has that could be their ancestors.
public struct RevsDiffEntry: Sendable, Equatable {
    public var id: String
    public var revs: [String]
    public var possibleAncestors: [String]

    public init(id: String, revs: [String], possibleAncestors: [String] = []) {
        self.id = id
        self.revs = revs
        self.possibleAncestors = possibleAncestors
    }
}

/// Which way a replication copies, seen from its source: `push` copies source → target, `pull`
/// target → source, `both` is the two.
public enum ReplicationDirection: String, Sendable, Equatable, CaseIterable {
    case push, pull, both

    /// "" is `push`; anything else unknown is `.invalidParameter`.
    public static func parse(_ text: String) throws(SofaError) -> ReplicationDirection {
        if text.isEmpty { return .push }
        guard let direction = ReplicationDirection(rawValue: text) else {
            throw SofaError(.invalidParameter, "unknown replication direction '\(text)': use push, pull or both")
        }
        return direction
    }
}

/// What a replication does with a conflicting branch it brings to the target: `auto` resolves it
/// deterministically (a deletion wins, else the higher generation, else the higher revID), so two
/// databases that exchanged the same edits end identical; `manual` leaves it for the application,
/// the target's own revision staying current (LiteCore's rule); `couchdb` leaves it too, the
/// current revision chosen as CouchDB chooses it on every replica (a live leaf before a deleted
/// one, then the higher generation, then the higher revID): what `/_replicate` over HTTP does.
public enum ConflictPolicy: String, Sendable, Equatable, CaseIterable {
    case auto, manual, couchdb

    public static func parse(_ text: String) throws(SofaError) -> ConflictPolicy {
        if text.isEmpty { return .auto }
        guard let policy = ConflictPolicy(rawValue: text) else {
            throw SofaError(.invalidParameter, "unknown conflict policy '\(text)': use auto, manual or couchdb")
        }
        return policy
    }
}

/// A replication to start. `source` and `target` are a database of the replicator's own cluster
/// ("db") or of another cluster's gateway ("tcp://host:port/db").
public struct ReplicationSpec: Sendable, Equatable {
    public var source: String
    public var target: String
    public var direction: ReplicationDirection
    public var continuous: Bool
    /// Only these documents; empty = every document.
    public var docIDs: [String]
    /// A query WHERE expression (N1QL); "" = none.
    public var filter: String
    public var conflicts: ConflictPolicy
    /// The collection replicated, the same on both sides ("scope.collection" or "collection");
    /// "" = the default collection.
    public var collection: String
    /// The user it runs as, with that user's permissions ("" = the cluster); the gateway sets it
    /// for a replication a user starts.
    public var owner: String
    /// How each side is reached when it is another cluster's with its own key: as a user of it.
    public var sourceAccess: RemoteAccess?
    public var targetAccess: RemoteAccess?
    /// A design document's JavaScript filter ("ddoc/name", CouchDB's `filter`), run on the
    /// source's side; "" = none. `queryParams` is its request's `query`.
    public var designFilter: String
    public var queryParams: JSONObject
    /// The source sequence to start from (CouchDB's `since_seq`) when no checkpoint is further;
    /// 0 = the beginning.
    public var since: UInt64

    public init(source: String, target: String, direction: ReplicationDirection = .push, continuous: Bool = false,
                docIDs: [String] = [], filter: String = "", conflicts: ConflictPolicy = .auto, collection: String = "",
                owner: String = "", sourceAccess: RemoteAccess? = nil, targetAccess: RemoteAccess? = nil,
                designFilter: String = "", queryParams: JSONObject = [:], since: UInt64 = 0) {
        self.since = since
        self.designFilter = designFilter
        self.queryParams = queryParams
        self.collection = collection
        self.owner = owner
        self.sourceAccess = sourceAccess
        self.targetAccess = targetAccess
        self.source = source
        self.target = target
        self.direction = direction
        self.continuous = continuous
        self.docIDs = docIDs
        self.filter = filter
        self.conflicts = conflicts
    }
}

extension ReplicationSpec {
    /// CouchDB's `since_seq` as a replication is given it: a sequence, as a number or as the
    /// string a changes feed hands out (what precedes a `-` counts); absent or null: 0.
    public static func sinceSequence(_ value: JSON?) throws(SofaError) -> UInt64 {
        switch value {
        case nil, .null?: return 0
        case .int(let number)? where number >= 0: return UInt64(number)
        case .string(let text)?:
            if let number = UInt64(text.prefix { $0 != "-" }) { return number }
        default: break
        }
        throw SofaError(.invalidParameter, "since_seq must be a sequence (a number, or a changes feed's string), not \(value?.compactString ?? "")")
    }

    /// A replication's filter written as a JSON query `WHERE` expression (a Mango `selector`,
    /// translated): its query condition, marked so (`json:` then the expression) apart from a
    /// N1QL one.
    public static func jsonFilter(_ condition: JSON) -> String { jsonFilterPrefix + condition.compactString }

    /// The JSON query `WHERE` expression a filter holds (`jsonFilter`), or nil for a N1QL one.
    public static func jsonCondition(of filter: String) -> JSON? {
        guard filter.hasPrefix(jsonFilterPrefix) else { return nil }
        return JSON.tryParse(String(filter.dropFirst(jsonFilterPrefix.count)))
    }

    static let jsonFilterPrefix = "json:"

    /// Whether a `filter` as CouchDB's replications give it names a design document's filter
    /// ("ddoc/name": two names, one slash, no spaces) rather than a query condition.
    public static func isDesignFilter(_ filter: String) -> Bool {
        let parts = filter.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { part in
            !part.isEmpty && part.allSatisfy { $0.isLetter || $0.isNumber || "_-.$".contains($0) }
        }
    }
}

/// Where a replication stands.
public struct ReplicationStatus: Sendable, Equatable {
    /// starting, running, idle (continuous and caught up), retrying, completed, stopped, failed.
    public enum State: String, Sendable, Equatable {
        case starting, running, idle, retrying, completed, stopped, failed

        /// Whether the replication has ended (it will not change again).
        public var isFinal: Bool { [.completed, .stopped, .failed].contains(self) }
    }

    public var id: String
    public var source: String
    public var target: String
    public var continuous: Bool
    public var state: State
    public var docsChecked: UInt64
    /// Revisions written to the target.
    public var docsWritten: UInt64
    /// Revisions sent to the target, counting again those sent again after a failed write: the
    /// excess over `docsWritten` is what a failure cost.
    public var revisionsSent: UInt64
    public var conflictsResolved: UInt64
    public var blobsTransferred: UInt64
    public var lastError: String
    /// The source sequence recorded by the checkpoint on both sides.
    public var checkpoint: UInt64
    /// Bumped by every change of this status.
    public var version: UInt64
    public var docIDs: [String]
    public var filter: String
    public var conflicts: ConflictPolicy
    public var collection: String
    /// The design document's JavaScript filter ("ddoc/name"); "" = none.
    public var designFilter: String
    /// Revisions the target refused (its validation function, a body it could not take): not
    /// written, and not sent again.
    public var docWriteFailures: UInt64

    public init(id: String, source: String, target: String, continuous: Bool, state: State, docsChecked: UInt64 = 0,
                docsWritten: UInt64 = 0, conflictsResolved: UInt64 = 0, blobsTransferred: UInt64 = 0, lastError: String = "",
                checkpoint: UInt64 = 0, version: UInt64 = 0, docIDs: [String] = [], filter: String = "",
                conflicts: ConflictPolicy = .auto, collection: String = "", revisionsSent: UInt64 = 0, designFilter: String = "",
                docWriteFailures: UInt64 = 0) {
        self.designFilter = designFilter
        self.docWriteFailures = docWriteFailures
        self.collection = collection
        self.revisionsSent = revisionsSent
        self.id = id
        self.source = source
        self.target = target
        self.continuous = continuous
        self.state = state
        self.docsChecked = docsChecked
        self.docsWritten = docsWritten
        self.conflictsResolved = conflictsResolved
        self.blobsTransferred = blobsTransferred
        self.lastError = lastError
        self.checkpoint = checkpoint
        self.version = version
        self.docIDs = docIDs
        self.filter = filter
        self.conflicts = conflicts
    }
}
