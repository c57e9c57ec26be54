/// A document's flags, as stored in the low 16 bits of a record's `flags` column.
public struct DocumentFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let deleted = DocumentFlags(rawValue: 0x01)
    public static let conflicted = DocumentFlags(rawValue: 0x02)
    public static let hasAttachments = DocumentFlags(rawValue: 0x04)
    public static let synced = DocumentFlags(rawValue: 0x08)
}

/// One row of a key store: what storage reads and writes, without interpreting body or extra.
///
/// The `flags` column packs the subsequence above the document flags, as LiteCore does:
///
///     flags column = subsequence << 16 | DocumentFlags.rawValue
///
/// e.g. subsequence 3 with `deleted` and `synced` → `0x3_0009` = 196617.
public struct Record: Sendable, Hashable {
    public var key: String
    /// A binary RevID or a binary version vector (leading `00`); see `DocumentVersion`.
    public var version: [UInt8]
    /// The current revision's body, as compact JSON.
    public var body: [UInt8]
    /// The rest of the revision tree (`RevTree.encoded(currentBodyInRecord: true)`), or the remote
    /// revisions of a version-vector document.
    public var extra: [UInt8]
    public var sequence: UInt64
    public var subsequence: UInt64
    /// Milliseconds since the Unix epoch; nil for none.
    public var expiration: Int64?
    public var flags: DocumentFlags

    public init(key: String, version: [UInt8] = [], body: [UInt8] = [], extra: [UInt8] = [], sequence: UInt64 = 0,
                subsequence: UInt64 = 0, expiration: Int64? = nil, flags: DocumentFlags = []) {
        self.key = key
        self.version = version
        self.body = body
        self.extra = extra
        self.sequence = sequence
        self.subsequence = subsequence
        self.expiration = expiration
        self.flags = flags
    }

    /// The largest subsequence that fits the `flags` column (47 bits, so the column stays a
    /// non-negative SQLite integer).
    public static let maxSubsequence: UInt64 = (1 << 47) - 1

    /// The value of the `flags` column. Precondition: `subsequence <= maxSubsequence`.
    public var flagsColumn: Int64 {
        precondition(subsequence <= Self.maxSubsequence, "subsequence too large")
        return Int64(subsequence << 16 | UInt64(flags.rawValue))
    }

    /// Splits a `flags` column into flags and subsequence; throws for a negative value.
    public static func splitFlagsColumn(_ column: Int64) throws(SofaError) -> (flags: DocumentFlags, subsequence: UInt64) {
        guard column >= 0 else { throw SofaError(.corruptData, "Negative flags column \(column)") }
        return (DocumentFlags(rawValue: UInt16(truncatingIfNeeded: column)), UInt64(column) >> 16)
    }
}

/// What the `version` column holds: a tree RevID, or a version vector (leading `00` byte).
public enum DocumentVersion: Sendable, Hashable, CustomStringConvertible {
    case revID(RevID)
    case vector(VersionVector)

    public init(binary: some Collection<UInt8>) throws(SofaError) {
        self = try binary.withBytes { Self.parse($0) }.get()
    }

    public static func tryParse(binary: some Collection<UInt8>) -> DocumentVersion? {
        binary.withBytes { parse($0) }.value
    }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<DocumentVersion, SofaError> {
        if bytes.first == 0 { return VersionVector.parseBinary(bytes).map { .vector($0) } }
        return RevID.parseBinary(bytes).map { .revID($0) }
    }

    /// Parses an ASCII revID as LiteCore's `revidBuffer` does: a string with a `-` is a tree
    /// RevID; otherwise it is a version vector, of which only the current (first) version is kept,
    /// so `3@*,1@c0ffee` reads as `3@*` (binary `00 03 00`). The whole vector must still be valid.
    public static func parse(ascii: String) throws(SofaError) -> DocumentVersion {
        var ascii = ascii
        return try ascii.withUTF8 { parseASCII($0) }.get()
    }

    public static func tryParse(ascii: String) -> DocumentVersion? {
        var ascii = ascii
        return ascii.withUTF8 { parseASCII($0) }.value
    }

    static func parseASCII(_ s: UnsafeBufferPointer<UInt8>) -> Result<DocumentVersion, SofaError> {
        if s.contains(UInt8(ascii: "-")) { return RevID.parseASCII(s).map { .revID($0) } }
        // Without a '-' it can only be a vector; a text that is not one either is named for what
        // it is meant to be in both kinds of database.
        return VersionVector.parseASCII(s).map { .vector(VersionVector(unchecked: [$0.versions[0]])) }.mapError { error in
            SofaError(.badRevisionID, "Invalid revision \"\(Hex.printable(s.prefix(100)))\": a revision is GENERATION-DIGEST "
                      + "(e.g. 2-7051cbe5c8faecd085a3fa619e6e6337) in a database with revision trees, or a version "
                      + "(e.g. 3@a1b2c3) in one with version vectors (\(error.message))")
        }
    }

    public var binary: [UInt8] {
        switch self {
        case .revID(let r): r.binary
        case .vector(let v): v.binary
        }
    }

    /// The ASCII revID a client sees: the RevID, or the vector's current version.
    public var ascii: String {
        switch self {
        case .revID(let r): r.ascii
        case .vector(let v): v.current?.ascii ?? ""
        }
    }

    public var description: String { ascii }
}

extension RevTree {
    /// The record columns for this tree: version = current revID, body = current body (empty for
    /// none), extra = the tree with the current body left out, flags from the tree. Key, sequence,
    /// subsequence and expiration are left for the caller. Nil for an empty tree.
    public func recordColumns() -> (version: [UInt8], body: [UInt8], extra: [UInt8], flags: DocumentFlags)? {
        guard let current else { return nil }
        var flags: DocumentFlags = []
        if current.isDeleted { flags.insert(.deleted) }
        if hasConflict { flags.insert(.conflicted) }
        if current.flags.contains(.hasAttachments) { flags.insert(.hasAttachments) }
        return (current.revID.binary, current.body ?? [], encoded(currentBodyInRecord: true), flags)
    }

    /// What `recordColumns()` gives for a tree whose only revision is `revID` (a root with
    /// `body`), saved at `sequence` — without building the tree (a new document, on the writer's
    /// path). E.g. `1-ab`, seq 5, body `{}`: extra `01 00 00 05 02 02 01ab 00`. With `remote`, the
    /// revision came from that remote (inserted with history): it is foreign and the remote's
    /// current revision, e.g. remote 1: extra `01 00 80 05 02 02 01ab 01 01 00`.
    public static func firstRevisionColumns(_ revID: RevID, body: [UInt8], deleted: Bool, hasAttachments: Bool,
                                            sequence: UInt64, remote: RemoteID? = nil)
        -> (version: [UInt8], body: [UInt8], extra: [UInt8], flags: DocumentFlags) {
        let version = revID.binary
        var revisionFlags: Revision.Flags = remote == nil ? [] : [.foreign]
        var flags: DocumentFlags = []
        if deleted {
            revisionFlags.insert(.deleted)
            flags.insert(.deleted)
        }
        if hasAttachments {
            revisionFlags.insert(.hasAttachments)
            flags.insert(.hasAttachments)
        }
        var extra: [UInt8] = [1, 0, revisionFlags.rawValue]
        extra.reserveCapacity(16 + version.count)
        Varint.append(sequence, to: &extra)
        extra.append(2)  // the body is the record's
        Varint.append(UInt64(version.count), to: &extra)
        extra.append(contentsOf: version)
        if let remote {
            extra.append(1)  // one remote, at revision 0
            Varint.append(UInt64(remote), to: &extra)
            extra.append(0)
        } else {
            extra.append(0)  // no remotes
        }
        return (version, body, extra, flags)
    }

    /// The tree stored in a record by `recordColumns()`.
    public init(record: Record) throws(SofaError) {
        try self.init(encoded: record.extra, currentBody: record.body)
    }
}
