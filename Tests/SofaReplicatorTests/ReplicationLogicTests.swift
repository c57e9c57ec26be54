import SofaCore
import SofaWire
@testable import SofaReplicator
import Testing

/// The replicator's logic without I/O: endpoints, IDs, the conflict rule, bounded histories,
/// version-vector peer rewriting, blob references.
@Suite struct ReplicationLogicTests {
    static let endpoints: [(String, ReplicationEndpoint?)] = [
        ("app", ReplicationEndpoint(gateway: nil, database: "app")),
        ("tcp://10.0.0.2:7420/app", ReplicationEndpoint(gateway: "tcp://10.0.0.2:7420", database: "app")),
        ("tcp://[::1]:7420/app", ReplicationEndpoint(gateway: "tcp://[::1]:7420", database: "app")),
        ("tcp://host:7420/", nil),
        ("tcp://host/app", nil),
        ("tcp://host:0/app", nil),
        ("tcp://host:99999/app", nil),
        ("http://host:5984/app", nil),
        ("tcp://host:7420/a/b", ReplicationEndpoint(gateway: "tcp://host:7420", database: "a/b")),
        ("", nil),
        ("a/b", ReplicationEndpoint(gateway: nil, database: "a/b")),
        ("/ab", nil),
    ]

    @Test(arguments: endpoints)
    func endpointParsing(_ text: String, _ expected: ReplicationEndpoint?) throws {
        #expect(ReplicationEndpoint.tryParse(text) == expected, "\(text)")
        if expected == nil {
            #expect(throws: SofaError.self) { try ReplicationEndpoint.parse(text) }
        } else {
            #expect(try ReplicationEndpoint.parse(text).description == text)
        }
    }

    @Test func replicationIDIsStableAndDistinguishesItsInputs() throws {
        let a = try ReplicationEndpoint.parse("a"), b = try ReplicationEndpoint.parse("tcp://h:1/b")
        let id = ReplicationID.derive(source: a, target: b, docIDs: ["y", "x"], filter: "")
        #expect(id.count == 40)
        #expect(id == ReplicationID.derive(source: a, target: b, docIDs: ["x", "y"], filter: ""), "doc ID order does not matter")
        let others = [
            ReplicationID.derive(source: b, target: a, docIDs: ["x", "y"], filter: ""),
            ReplicationID.derive(source: a, target: b, docIDs: ["x"], filter: ""),
            ReplicationID.derive(source: a, target: b, docIDs: ["x", "y"], filter: "n > 1"),
            ReplicationID.derive(source: a, target: b, docIDs: ["x", "y"], filter: "", designFilter: "d/f"),
            ReplicationID.derive(source: a, target: b, docIDs: ["x", "y"], filter: "", designFilter: "d/f", queryParams: ["k": 1]),
        ]
        #expect(Set(others + [id]).count == 6)
        // Query parameters count by value, not by the order they were given in.
        #expect(ReplicationID.derive(source: a, target: b, docIDs: [], filter: "", designFilter: "d/f", queryParams: ["k": 1, "j": 2])
                == ReplicationID.derive(source: a, target: b, docIDs: [], filter: "", designFilter: "d/f", queryParams: ["j": 2, "k": 1]))
        // Which `filter` texts name a design document's filter (CouchDB's form) rather than a condition.
        #expect(["ddoc/name", "my-app/by_type", "a.b/c$1"].allSatisfy { ReplicationSpec.isDesignFilter($0) })
        #expect(!["n > 1", "a / b", "a/b/c", "/x", "x/", "type = 'a/b'", ""].contains { ReplicationSpec.isDesignFilter($0) })
    }

    /// (a, b, whether a wins)
    static let rule: [(ConflictRule.Leaf, ConflictRule.Leaf, Bool)] = [
        (.init(rev: "2-aa", deleted: true), .init(rev: "3-ff", deleted: false), true),
        (.init(rev: "3-ff", deleted: false), .init(rev: "2-aa", deleted: true), false),
        (.init(rev: "3-aa", deleted: false), .init(rev: "2-ff", deleted: false), true),
        (.init(rev: "10-aa", deleted: false), .init(rev: "9-ff", deleted: false), true),
        (.init(rev: "2-bb", deleted: false), .init(rev: "2-aa", deleted: false), true),
        (.init(rev: "2-aa", deleted: false), .init(rev: "2-bb", deleted: false), false),
    ]

    @Test(arguments: rule)
    func conflictRule(_ a: ConflictRule.Leaf, _ b: ConflictRule.Leaf, _ aWins: Bool) {
        #expect(ConflictRule.wins(a, over: b) == aWins)
        #expect(ConflictRule.winner([a, b]) == (aWins ? a : b))
        #expect(ConflictRule.winner([b, a]) == (aWins ? a : b), "the order of the leaves does not matter")
    }

    @Test func historyStopsAtTheFirstKnownAncestor() {
        let history = ["4-d", "3-c", "2-b", "1-a"]
        #expect(Replication.bounded(history, []) == history)
        #expect(Replication.bounded(history, ["2-b"]) == ["4-d", "3-c", "2-b"])
        #expect(Replication.bounded(history, ["4-d"]) == history, "the revision itself is not an ancestor")
        let long = (1...300).reversed().map { "\($0)-x" }
        #expect(Replication.bounded(long, []).count == Replication.maxHistory)
    }

    @Test func peerTranslation() {
        let peers = PeerTranslation(sourcePeer: 0xa1, targetPeer: 0xb2)
        #expect(peers.toTarget("3@*") == "3@a1")
        #expect(peers.toTarget("3@*,2@b2") == "3@a1,2@*")
        #expect(peers.toTarget("5@c3,1@*") == "5@c3,1@a1")
        #expect(peers.toTarget("2-abc") == "2-abc", "tree revIDs are left alone")
        #expect(PeerTranslation.identity.toTarget("3@*") == "3@*")
        #expect(PeerTranslation.peerID(publicUUID: "00000000-0000-4000-8000-000000000001") == 0x4000)
        #expect(PeerTranslation.peerID(publicUUID: "") == 1)
    }

    @Test func blobDigests() {
        let body = Array(#"""
            {"a":{"@type":"blob","digest":"sha1-A"},"list":[{"@type":"blob","digest":"sha1-B"}],
             "_attachments":{"x.txt":{"digest":"sha1-C","stub":true}},"not":{"digest":"sha1-D"}}
            """#.utf8)
        #expect(BlobDigests.find(in: body) == ["sha1-A", "sha1-B", "sha1-C"])
        #expect(BlobDigests.find(in: Array("not json".utf8)) == [])
    }
}
