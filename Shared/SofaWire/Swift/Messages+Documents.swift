public import SofaCore

/// A revision with its ancestry, as a replicator writes it: `history[0]` is the revision itself,
/// then its parent, grandparent… (generations descending by one).
public struct RevisionInsert: Sendable, Equatable {
    public var id: String
    public var history: [String]
    public var body: [UInt8]
    public var deleted: Bool

    public init(id: String, history: [String], body: [UInt8], deleted: Bool = false) {
        self.id = id
        self.history = history
        self.body = body
        self.deleted = deleted
    }
}

/// One write of a bulk write.
public enum BulkItem: Sendable, Equatable {
    case put(id: String, rev: String, body: [UInt8], deleted: Bool)
    case insert(RevisionInsert)
}

public struct BulkItemResult: Sendable, Equatable {
    public var id: String
    public var rev: String
    public var sequence: UInt64
    public var error: SofaError?
    /// An insert with history made (or extended) a conflicting branch.
    public var conflict: Bool

    public init(id: String, rev: String, sequence: UInt64, error: SofaError? = nil, conflict: Bool = false) {
        self.id = id
        self.rev = rev
        self.sequence = sequence
        self.error = error
        self.conflict = conflict
    }
}

/// Resolve a conflict: `winner` stays; `loser`'s branch is closed with a tombstone. With
/// `merge`, `mergedBody` (or a deletion) is written as the winner's child.
public struct ConflictResolution: Sendable, Equatable {
    public var id: String
    public var winner: String
    public var loser: String
    public var merge: Bool
    public var mergedBody: [UInt8]
    public var mergedDeleted: Bool

    public init(id: String, winner: String, loser: String, merge: Bool = false, mergedBody: [UInt8] = [],
                mergedDeleted: Bool = false) {
        self.id = id
        self.winner = winner
        self.loser = loser
        self.merge = merge
        self.mergedBody = mergedBody
        self.mergedDeleted = mergedDeleted
    }
}

public struct InsertResult: Sendable, Equatable {
    public var id: String
    public var rev: String
    public var sequence: UInt64
    /// How many revisions of the history were new.
    public var added: UInt32
    /// Whether the revision made (or extended) a conflicting branch.
    public var conflict: Bool

    public init(id: String, rev: String, sequence: UInt64, added: UInt32, conflict: Bool) {
        self.id = id
        self.rev = rev
        self.sequence = sequence
        self.added = added
        self.conflict = conflict
    }
}

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
    /// Through the gateway: with nothing newer than `since`, wait this long for a commit (long poll).
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
/// has an empty `rev`.
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

public struct AllDocsQuery: Sendable, Equatable {
    public var includeBodies: Bool
    public var includeDeleted: Bool
    /// 0 = no limit.
    public var limit: UInt32
    public var skip: UInt32
    public var descending: Bool
    /// Empty = unbounded.
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

public struct DatabaseInfo: Sendable, Equatable {
    public var name: String
    public var documentCount: UInt64
    public var lastSequence: UInt64
    public var updateSequence: UInt64
    public var fileBytes: UInt64
    public var walBytes: UInt64
    public var publicUUID: String
    public var privateUUID: String
    public var versioning: Versioning
    public var collections: UInt32

    public init(name: String, documentCount: UInt64, lastSequence: UInt64, updateSequence: UInt64, fileBytes: UInt64,
                walBytes: UInt64, publicUUID: String, privateUUID: String, versioning: Versioning, collections: UInt32) {
        self.name = name
        self.documentCount = documentCount
        self.lastSequence = lastSequence
        self.updateSequence = updateSequence
        self.fileBytes = fileBytes
        self.walBytes = walBytes
        self.publicUUID = publicUUID
        self.privateUUID = privateUUID
        self.versioning = versioning
        self.collections = collections
    }
}

/// What storage publishes after each commit: the changes of one database and collection.
public struct CommitNotice: Sendable, Equatable {
    public var database: String
    public var collection: String
    public var batch: ChangesBatch

    public init(database: String, collection: String, batch: ChangesBatch) {
        self.database = database
        self.collection = collection
        self.batch = batch
    }

    /// The topic frame of the notice: subscribers filter on a database by prefix.
    public var topic: [UInt8] { Array(database.utf8) + [0] + Array(collection.utf8) }
}
