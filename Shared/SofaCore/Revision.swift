/// One revision in a `RevTree`.
public struct Revision: Sendable, Hashable, CustomStringConvertible {
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// A tombstone.
        public static let deleted = Flags(rawValue: 0x01)
        /// Has no children (kept up to date by the tree; never stored).
        public static let leaf = Flags(rawValue: 0x02)
        /// Added since the tree was loaded or last saved (never stored).
        public static let new = Flags(rawValue: 0x04)
        public static let hasAttachments = Flags(rawValue: 0x08)
        /// Keep this revision's body and the revision itself through pruning and body dropping.
        public static let keepBody = Flags(rawValue: 0x10)
        /// On a branch from a remote peer that conflicts with the local line.
        public static let isConflict = Flags(rawValue: 0x20)
        /// The tombstone that closed a branch when a conflict was resolved.
        public static let closed = Flags(rawValue: 0x40)
        /// Arrived from a remote peer (pulled), rather than made locally.
        public static let foreign = Flags(rawValue: 0x80)

        /// The flags that are stored; `leaf` and `new` are derived or transient.
        public static let persistent: Flags = [.deleted, .hasAttachments, .keepBody, .isConflict, .closed, .foreign]
    }

    public let revID: RevID
    /// Index of the parent in `RevTree.revisions`; always lower than this revision's own index.
    public internal(set) var parent: Int?
    public internal(set) var flags: Flags
    /// The sequence of the save that added it; 0 until saved.
    public internal(set) var sequence: UInt64
    /// The body as compact JSON, while it is kept.
    public internal(set) var body: [UInt8]?

    public init(revID: RevID, parent: Int?, flags: Flags, sequence: UInt64, body: [UInt8]?) {
        self.revID = revID
        self.parent = parent
        self.flags = flags
        self.sequence = sequence
        self.body = body
    }

    public var isDeleted: Bool { flags.contains(.deleted) }
    public var isLeaf: Bool { flags.contains(.leaf) }
    public var isConflict: Bool { flags.contains(.isConflict) }
    public var isClosed: Bool { flags.contains(.closed) }
    public var keepsBody: Bool { flags.contains(.keepBody) }
    /// A live leaf: a branch tip that is not a tombstone.
    public var isActive: Bool { isLeaf && !isDeleted }

    public var description: String { revID.ascii }
}
