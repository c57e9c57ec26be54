public import SofaCore

/// A revision with its ancestry, as a replicator writes it: `history[0]` is the revision itself,
/// then its parent, grandparent… (generations descending by one).
public struct RevisionInsert: Sendable, Equatable {
    public var id: String
    public var history: [String]
    public var body: [UInt8]
    public var deleted: Bool
    /// CouchDB's winner rule: the best revision by revID wins however the branches arrived (an
    /// HTTP client's `new_edits=false`). Otherwise (a replicator's pull) a branch that conflicts
    /// with the live local line is flagged conflicting and the local line stays current.
    public var winnerByRevID: Bool

    public init(id: String, history: [String], body: [UInt8], deleted: Bool = false, winnerByRevID: Bool = false) {
        self.id = id
        self.history = history
        self.body = body
        self.deleted = deleted
        self.winnerByRevID = winnerByRevID
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
    /// Deleted documents of the collection (tombstones; purged ones are gone).
    public var deletedCount: UInt64
    /// How many revisions of a document's history the database keeps (`setRevsLimit`); 0: none
    /// set (the history is kept whole until compaction prunes it).
    public var revsLimit: UInt32
    /// Purges of the collection's documents so far (CouchDB's `purge_seq`).
    public var purgeCount: UInt64

    public init(name: String, documentCount: UInt64, lastSequence: UInt64, updateSequence: UInt64, fileBytes: UInt64,
                walBytes: UInt64, publicUUID: String, privateUUID: String, versioning: Versioning, collections: UInt32,
                deletedCount: UInt64 = 0, revsLimit: UInt32 = 0, purgeCount: UInt64 = 0) {
        self.deletedCount = deletedCount
        self.purgeCount = purgeCount
        self.revsLimit = revsLimit
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
