import Testing
@testable import SofaCore

@Suite struct RevTreeCodecTests {
    func exampleTree() throws -> RevTree {
        var tree = RevTree()
        try tree.insert(history: rs("1-ab"), body: nil)
        tree.markSaved(sequence: 1)
        try tree.insert(history: rs("2-cd 1-ab"), body: bytes("{}"), remote: 1)
        tree.markSaved(sequence: 2)
        return tree
    }

    @Test func documentedExample() throws {
        var tree = try exampleTree()
        // The remote insert flagged 2-cd foreign; the documented example has no flags.
        tree.revisions[1].flags.remove(.foreign)
        #expect(Hex.string(tree.encoded()) == "02" + "0000010002" + "01ab" + "0100020102" + "7b7d" + "0202cd" + "010101")
        #expect(try RevTree(encoded: tree.encoded()) == tree)
    }

    @Test func currentBodyInRecord() throws {
        let tree = try exampleTree()
        let extra = tree.encoded(currentBodyInRecord: true)
        #expect(Hex.string(extra) == "02" + "0000010002" + "01ab" + "01800202" + "0202cd" + "010101")
        #expect(try RevTree(encoded: extra, currentBody: bytes("{}")) == tree)
        #expect(throws: SofaError.self) { try RevTree(encoded: extra) }
    }

    @Test func emptyTree() throws {
        #expect(RevTree().encoded() == [0, 0])
        #expect(try RevTree(encoded: [0, 0]) == RevTree())
    }

    @Test func recordColumnsRoundTrip() throws {
        var tree = try build([.local("2-bb 1-aa"), .remote("2-f0 1-aa")])
        tree.markSaved(sequence: 9)
        let columns = try #require(tree.recordColumns())
        #expect(columns.version == r("2-bb").binary)
        #expect(columns.body == bytes("{}"))
        #expect(columns.flags == [.conflicted])
        let record = Record(key: "doc", version: columns.version, body: columns.body, extra: columns.extra,
                            sequence: 9, flags: columns.flags)
        #expect(try RevTree(record: record) == tree)
        #expect(RevTree().recordColumns() == nil)
    }

    // Each is a valid encoding of the example tree with one thing broken.
    static let corrupt: [(String, String)] = [
        ("", "bad revision count"),
        ("01", "bad parent index"),
        ("01" + "01000100" + "0201ab" + "00", "bad parent index"),  // root points at itself
        ("01" + "00020100" + "0201ab" + "00", "unknown flags"),  // leaf flag stored
        ("01" + "00040100" + "0201ab" + "00", "unknown flags"),  // new flag stored
        ("01" + "00000103" + "0201ab" + "00", "bad body kind"),
        ("01" + "00000101" + "097b7d" + "0201ab" + "00", "bad body length"),
        ("01" + "00000100" + "0200ab" + "00", "bad revID"),
        ("01" + "00000100" + "0201ab", "bad remote count"),
        ("01" + "00000100" + "0201ab" + "00" + "00", "trailing bytes"),
        ("02" + "00000100" + "0201ab" + "01000100" + "0201cd", "generation not above"),
        ("02" + "00000100" + "0201ab" + "00000100" + "0201ab" + "00", "repeated revID"),
        ("01" + "00000100" + "0201ab" + "02" + "0200" + "0100", "not ascending"),
        ("01" + "00000100" + "0201ab" + "01" + "0101", "bad remote revision index"),
        ("01" + "00000100" + "0201ab" + "01" + "808080801001", "bad remote ID"),
        ("01" + "00008000" + "00" + "0201ab" + "00", "bad sequence"),
        ("02" + "00000102" + "0201ab" + "01000102" + "0202cd" + "00", "two bodies"),
        ("02" + "00000102" + "0201ab" + "01000100" + "0202cd" + "00", "not current"),
    ]

    @Test(arguments: corrupt)
    func rejects(_ hex: String, _ reason: String) {
        #expect {
            try RevTree(encoded: hexBytes(hex), currentBody: bytes("{}"))
        } throws: { error in
            (error as? SofaError).map { $0.is(.corruptRevisionData) && $0.message.contains(reason) } ?? false
        }
    }
}

@Suite struct RecordTests {
    static let flagColumns: [(DocumentFlags, UInt64, Int64)] = [
        ([], 0, 0),
        ([.deleted], 0, 1),
        ([.deleted, .synced], 3, 0x3_0009),
        ([.conflicted, .hasAttachments], 1, 0x1_0006),
        ([.deleted, .conflicted, .hasAttachments, .synced], Record.maxSubsequence, 0x7FFF_FFFF_FFFF_000F),
    ]

    @Test(arguments: flagColumns)
    func flagsColumn(_ flags: DocumentFlags, _ subsequence: UInt64, _ column: Int64) throws {
        let record = Record(key: "k", subsequence: subsequence, flags: flags)
        #expect(record.flagsColumn == column)
        let split = try Record.splitFlagsColumn(column)
        #expect(split.flags == flags)
        #expect(split.subsequence == subsequence)
    }

    @Test func negativeFlagsColumn() {
        #expect(throws: SofaError.self) { try Record.splitFlagsColumn(-1) }
    }

    static let versions: [(String, String, String)] = [
        ("03abcd", "revID", "3-abcd"),
        ("001a0003eeff8306", "vector", "1a@*"),
    ]

    @Test(arguments: versions)
    func documentVersion(_ hex: String, _ kind: String, _ ascii: String) throws {
        let version = try DocumentVersion(binary: hexBytes(hex))
        switch version {
        case .revID: #expect(kind == "revID")
        case .vector: #expect(kind == "vector")
        }
        #expect(version.ascii == ascii)
        #expect(Hex.string(version.binary) == hex)
        #expect(throws: SofaError.self) { try DocumentVersion(binary: [UInt8]()) }
        #expect(throws: SofaError.self) { try DocumentVersion(binary: [0]) }
    }
}

@Suite struct BodyMetadataTests {
    static let splits: [(String, String?, String?, Bool, String)] = [
        ("{\"a\":1}", nil, nil, false, "{\"a\":1}"),
        ("{\"_id\":\"d\",\"_rev\":\"1-ab\",\"a\":1,\"_deleted\":true}", "d", "1-ab", true, "{\"a\":1}"),
        ("{\"_deleted\":false,\"_attachments\":{},\"x\":{\"_id\":1}}", nil, nil, false, "{\"_attachments\":{},\"x\":{\"_id\":1}}"),
        ("{\"_id\":\"\"}", "", nil, false, "{}"),
    ]

    @Test(arguments: splits)
    func split(_ text: String, _ id: String?, _ rev: String?, _ deleted: Bool, _ body: String) throws {
        let meta = try JSON.parse(text).splitMetadata()
        #expect(meta.id == id)
        #expect(meta.rev == rev)
        #expect(meta.deleted == deleted)
        #expect(JSON.object(meta.body).compactString == body)
    }

    static let rejected = ["[]", "1", "{\"_id\":1}", "{\"_rev\":null}", "{\"_deleted\":\"yes\"}", "{\"_deleted\":1}"]

    @Test(arguments: rejected)
    func rejects(_ text: String) throws {
        let value = try JSON.parse(text)
        #expect(throws: SofaError.self) { try value.splitMetadata() }
    }

    @Test func putBack() {
        let json = JSON.withMetadata(["a": 1, "_rev": "x"], id: "d", rev: "2-ab", deleted: true)
        #expect(json.compactString == "{\"_id\":\"d\",\"_rev\":\"2-ab\",\"_deleted\":true,\"a\":1}")
        #expect(JSON.withMetadata([:], id: "d", rev: nil).compactString == "{\"_id\":\"d\"}")
    }
}

@Suite struct FirstRevisionColumnsTests {
    /// The shortcut for a new document writes exactly the columns of the one-revision tree, also
    /// for a first revision inserted from a remote (replication into an empty target).
    @Test(arguments: [(false, false, UInt64(1), nil), (true, false, 300, nil), (false, true, 1 << 40, nil), (true, true, 127, nil),
                      (false, false, 1, RevTree.RemoteID(1)), (true, true, 300, 2), (false, true, 1 << 40, 200)])
    func sameAsTheTree(_ deleted: Bool, _ hasAttachments: Bool, _ sequence: UInt64, _ remote: RevTree.RemoteID?) throws {
        let body = Array(#"{"a":1}"#.utf8)
        let revID = RevID.generate(parent: nil, deleted: deleted, canonicalBody: body)
        var tree = RevTree()
        try tree.insert(history: [revID], body: body, deleted: deleted, hasAttachments: hasAttachments, remote: remote)
        tree.markSaved(sequence: sequence)
        let expected = try #require(tree.recordColumns())
        let direct = RevTree.firstRevisionColumns(revID, body: body, deleted: deleted, hasAttachments: hasAttachments,
                                                  sequence: sequence, remote: remote)
        #expect(direct.version == expected.version)
        #expect(direct.body == expected.body)
        #expect(direct.extra == expected.extra)
        #expect(direct.flags == expected.flags)
        // And it reads back as that tree.
        let decoded = try RevTree(encoded: direct.extra, currentBody: direct.body)
        #expect(decoded == tree)
        #expect(decoded.remoteRevisions == (remote.map { [$0: 0] } ?? [:]))
    }

    @Test func documentedExample() throws {
        let columns = RevTree.firstRevisionColumns(try RevID.parse("1-ab"), body: Array("{}".utf8), deleted: false,
                                                   hasAttachments: false, sequence: 5)
        #expect(columns.extra == [0x01, 0x00, 0x00, 0x05, 0x02, 0x02, 0x01, 0xAB, 0x00])
        let remote = RevTree.firstRevisionColumns(try RevID.parse("1-ab"), body: Array("{}".utf8), deleted: false,
                                                  hasAttachments: false, sequence: 5, remote: 1)
        #expect(remote.extra == [0x01, 0x00, 0x80, 0x05, 0x02, 0x02, 0x01, 0xAB, 0x01, 0x01, 0x00])
    }
}
