/// The binary form of a `RevTree`, stored in `Record.extra`.
///
///     varint  N, the number of revisions
///     N revisions, parents before children:
///       varint  parent: 0 for a root, else 1 + the parent's index (lower than this one's)
///       byte    flags: deleted 01, hasAttachments 08, keepBody 10, isConflict 20, closed 40,
///               foreign 80 (leaf 02 and new 04 are never stored)
///       varint  sequence
///       byte    body: 00 none, 01 inline, 02 in the record's `body` column (current revision only)
///       varint  body length, body bytes        (inline bodies only)
///       varint  revID length, binary revID
///     varint  M, the number of remotes
///     M × (varint remote ID, varint revision index), remote IDs strictly ascending
///
/// Example: `1-ab` (root, seq 1, no body) ← `2-cd` (seq 2, body `{}` inline), remote 1 at
/// `2-cd`:
///
///     02  00 00 01 00 02 01ab  01 00 02 01 02 7b7d 02 02cd  01  01 01
///
/// Decoding checks every rule above and that revIDs are unique and a child's generation is above
/// its parent's, and rejects trailing bytes, so a decoded tree re-encodes to the same bytes.
extension RevTree {
    public func encoded(currentBodyInRecord: Bool = false) -> [UInt8] {
        let external = currentBodyInRecord ? currentIndex : nil
        var out: [UInt8] = []
        out.reserveCapacity(revisions.count * 32)
        Varint.append(UInt64(revisions.count), to: &out)
        for (i, rev) in revisions.enumerated() {
            Varint.append(rev.parent.map { UInt64($0) + 1 } ?? 0, to: &out)
            out.append(rev.flags.intersection(.persistent).rawValue)
            Varint.append(rev.sequence, to: &out)
            if let body = rev.body {
                if i == external {
                    out.append(2)
                } else {
                    out.append(1)
                    Varint.append(UInt64(body.count), to: &out)
                    out.append(contentsOf: body)
                }
            } else {
                out.append(0)
            }
            let revID = rev.revID.binary
            Varint.append(UInt64(revID.count), to: &out)
            out.append(contentsOf: revID)
        }
        Varint.append(UInt64(remoteRevisions.count), to: &out)
        for remote in remoteRevisions.keys.sorted() {
            Varint.append(UInt64(remote), to: &out)
            Varint.append(UInt64(remoteRevisions[remote]!), to: &out)
        }
        return out
    }

    /// Decodes `encoded()`. `currentBody` is the record's body, which becomes the body of the
    /// revision marked as having it there. Throws `.corruptRevisionData`.
    public init(encoded bytes: some Collection<UInt8>, currentBody: [UInt8]? = nil) throws(SofaError) {
        self = try bytes.withBytes { Self.decode($0, currentBody: currentBody) }.get()
    }

    public static func tryDecode(_ bytes: some Collection<UInt8>, currentBody: [UInt8]? = nil) -> RevTree? {
        bytes.withBytes { decode($0, currentBody: currentBody) }.value
    }

    static func decode(_ b: UnsafeBufferPointer<UInt8>, currentBody: [UInt8]?) -> Result<RevTree, SofaError> {
        var pos = 0
        func fail(_ why: String) -> Result<RevTree, SofaError> {
            .failure(SofaError(.corruptRevisionData, "Invalid revision tree at byte \(pos): \(why)"))
        }
        func int(_ limit: Int) -> Int? {
            guard let v = Varint.read(b, at: &pos), v <= UInt64(limit) else { return nil }
            return Int(v)
        }
        /// A length of bytes that follow it (checked against what is left after the varint).
        func length() -> Int? {
            guard let v = Varint.read(b, at: &pos), v <= UInt64(b.count - pos) else { return nil }
            return Int(v)
        }
        var tree = RevTree()
        guard let count = int(b.count) else { return fail("bad revision count") }
        var external: Int?
        tree.revisions.reserveCapacity(count)
        for i in 0..<count {
            guard let parentPlusOne = int(i) else { return fail("bad parent index") }
            guard pos < b.count else { return fail("truncated") }
            let flags = Flags(rawValue: b[pos])
            pos += 1
            guard Flags.persistent.isSuperset(of: flags) else { return fail("unknown flags") }
            guard let sequence = Varint.read(b, at: &pos) else { return fail("bad sequence") }
            guard pos < b.count else { return fail("truncated") }
            let bodyKind = b[pos]
            pos += 1
            var body: [UInt8]?
            switch bodyKind {
            case 0: break
            case 1:
                guard let bodyLength = length() else { return fail("bad body length") }
                body = Array(b[pos..<pos + bodyLength])
                pos += bodyLength
            case 2:
                guard external == nil else { return fail("two bodies in the record") }
                guard let currentBody else { return fail("body in the record, but none given") }
                external = i
                body = currentBody
            default: return fail("bad body kind")
            }
            guard let revIDLength = length() else { return fail("bad revID length") }
            guard let revID = RevID.tryParse(binary: UnsafeBufferPointer(rebasing: b[pos..<pos + revIDLength])) else {
                return fail("bad revID")
            }
            pos += revIDLength
            let parent = parentPlusOne == 0 ? nil : parentPlusOne - 1
            if let parent, tree.revisions[parent].revID.generation >= revID.generation {
                return fail("generation not above the parent's")
            }
            guard tree.indexByRevID.updateValue(i, forKey: revID) == nil else { return fail("repeated revID") }
            tree.revisions.append(Revision(revID: revID, parent: parent, flags: flags, sequence: sequence, body: body))
        }
        guard let remoteCount = int(b.count) else { return fail("bad remote count") }
        var last: UInt64?
        for _ in 0..<remoteCount {
            guard let remote = Varint.read(b, at: &pos), remote <= UInt64(RemoteID.max) else { return fail("bad remote ID") }
            guard last.map({ remote > $0 }) ?? true else { return fail("remote IDs not ascending") }
            last = remote
            guard count > 0, let index = int(count - 1) else { return fail("bad remote revision index") }
            tree.remoteRevisions[RemoteID(remote)] = index
        }
        guard pos == b.count else { return fail("trailing bytes") }
        tree.recomputeLeaves()
        if let external, external != tree.currentIndex { return fail("record body on a revision that is not current") }
        return .success(tree)
    }
}
