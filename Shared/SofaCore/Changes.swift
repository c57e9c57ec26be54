/// The changes feed and the all-docs listing: what is asked and what comes back, as storage
/// answers them and as they travel (SofaWire converts them; storage reads and fills them).

/// A read of a collection's changes feed.
public struct ChangesQuery: Sendable, Equatable {
    public var since: UInt64
    public var descending: Bool
    /// 0 = no limit.
    public var limit: UInt32
    public var includeBodies: Bool
    public var allLeaves: Bool
    public var includeDeleted: Bool
    /// Empty = every document.
    public var docIDs: [String]
    /// Through the gateway: with nothing newer than `since`, wait this long for a commit (long
    /// poll). Storage itself never waits and ignores it.
    public var waitMs: UInt32

    public init(since: UInt64 = 0, descending: Bool = false, limit: UInt32 = 0, includeBodies: Bool = false,
                allLeaves: Bool = false, includeDeleted: Bool = true, docIDs: [String] = [], waitMs: UInt32 = 0) {
        self.since = since
        self.descending = descending
        self.limit = limit
        self.includeBodies = includeBodies
        self.allLeaves = allLeaves
        self.includeDeleted = includeDeleted
        self.docIDs = docIDs
        self.waitMs = waitMs
    }
}

/// One entry of the changes feed: a document at its latest sequence. A purge or an expiration
/// has an empty `rev` (and `deleted` set: it counts as deleted for `includeDeleted`). A commit
/// notice carries neither bodies nor leaves.
public struct Change: Sendable, Equatable {
    public var sequence: UInt64
    public var id: String
    public var rev: String
    public var deleted: Bool
    public var body: [UInt8]
    public var leaves: [String]

    public init(sequence: UInt64, id: String, rev: String, deleted: Bool = false, body: [UInt8] = [],
                leaves: [String] = []) {
        self.sequence = sequence
        self.id = id
        self.rev = rev
        self.deleted = deleted
        self.body = body
        self.leaves = leaves
    }
}

public struct ChangesBatch: Sendable, Equatable {
    public var changes: [Change]
    /// The collection's last sequence when the batch was read.
    public var lastSequence: UInt64

    public init(changes: [Change], lastSequence: UInt64) {
        self.changes = changes
        self.lastSequence = lastSequence
    }
}

/// A listing of a collection's documents by ID (SQLite's binary order).
public struct AllDocsQuery: Sendable, Equatable {
    public var includeBodies: Bool
    public var includeDeleted: Bool
    /// 0 = no limit.
    public var limit: UInt32
    public var skip: UInt32
    public var descending: Bool
    /// Inclusive bounds in iteration order (with `descending`, `startKey` is the highest). Empty
    /// = unbounded (no document ID is empty).
    public var startKey: String
    public var endKey: String

    public init(includeBodies: Bool = false, includeDeleted: Bool = false, limit: UInt32 = 0, skip: UInt32 = 0,
                descending: Bool = false, startKey: String = "", endKey: String = "") {
        self.includeBodies = includeBodies
        self.includeDeleted = includeDeleted
        self.limit = limit
        self.skip = skip
        self.descending = descending
        self.startKey = startKey
        self.endKey = endKey
    }
}

/// What one COMMIT changed in one collection, as storage reports it after the commit (and
/// publishes it): the changes without bodies or leaves, `lastSequence` the highest of them.
public struct CommitNotice: Sendable, Equatable {
    public var database: String
    /// "scope.collection".
    public var collection: String
    public var batch: ChangesBatch

    public init(database: String, collection: String, batch: ChangesBatch) {
        self.database = database
        self.collection = collection
        self.batch = batch
    }
}
