/// A document's revision as a read returns it (one revision: current, asked for, or a leaf).
public struct StoredDocument: Sendable, Equatable {
    public var id: String
    public var rev: String
    /// The body as compact JSON, without `_id`, `_rev` or `_deleted`.
    public var body: [UInt8]
    public var deleted: Bool
    public var sequence: UInt64
    /// When asked for: the revision's ancestry, newest first, starting with `rev`.
    public var history: [String]
    /// Whether the document has conflicting leaves.
    public var conflicted: Bool
    /// Whether the revision references a blob (a `{"@type":"blob"}` dictionary or an
    /// `_attachments` entry): LiteCore's hasAttachments flag.
    public var hasAttachments: Bool

    public init(id: String, rev: String, body: [UInt8], deleted: Bool, sequence: UInt64, history: [String] = [],
                conflicted: Bool = false, hasAttachments: Bool = false) {
        self.id = id
        self.rev = rev
        self.body = body
        self.deleted = deleted
        self.sequence = sequence
        self.history = history
        self.conflicted = conflicted
        self.hasAttachments = hasAttachments
    }
}
