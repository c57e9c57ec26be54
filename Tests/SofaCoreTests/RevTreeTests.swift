import Testing
@testable import SofaCore

func r(_ ascii: String) -> RevID { try! RevID.parse(ascii) }
func rs(_ list: String) -> [RevID] { list.split(separator: " ").map { r(String($0)) } }
func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// A step that builds a tree: a history (newest first) with flags, from a remote or local.
struct Step: Sendable, CustomStringConvertible {
    var history: String
    var deleted = false
    var remote: RevTree.RemoteID?
    var description: String { "\(history)\(deleted ? " (deleted)" : "")\(remote.map { " from \($0)" } ?? "")" }

    static func local(_ h: String, deleted: Bool = false) -> Step { Step(history: h, deleted: deleted) }
    static func remote(_ h: String, deleted: Bool = false) -> Step { Step(history: h, deleted: deleted, remote: 1) }
}

func build(_ steps: [Step]) throws -> RevTree {
    var tree = RevTree()
    for step in steps {
        try tree.insert(history: rs(step.history), body: bytes("{}"), deleted: step.deleted, remote: step.remote)
    }
    return tree
}

@Suite struct RevTreeInsertTests {
    @Test func chainIntoEmptyTree() throws {
        var tree = RevTree()
        let result = try tree.insert(history: rs("3-cc 2-bb 1-aa"), body: bytes("{\"a\":1}"))
        #expect(result == .init(added: 3, commonAncestor: nil))
        #expect(tree.revisions.map(\.revID.ascii) == ["1-aa", "2-bb", "3-cc"])
        #expect(tree.revisions.map(\.parent) == [nil, 0, 1])
        #expect(tree.revisions.map(\.isLeaf) == [false, false, true])
        #expect(tree.revisions.map(\.body) == [nil, nil, bytes("{\"a\":1}")])
        #expect(tree.revisions.allSatisfy { $0.flags.contains(.new) })
        #expect(tree.history(of: r("3-cc")) == rs("3-cc 2-bb 1-aa"))
        #expect(tree.current?.revID == r("3-cc"))
    }

    static let extensions: [(String, Int, String?)] = [
        ("5-ee 4-dd 3-cc 2-bb", 2, "3-cc"),
        ("3-cc", 0, "3-cc"),
        ("2-bb", 0, "2-bb"),
        ("3-0e 2-bb 1-aa", 1, "2-bb"),
        ("2-e0 1-f0", 2, nil),
    ]

    @Test(arguments: extensions)
    func extendExisting(_ history: String, _ added: Int, _ common: String?) throws {
        var tree = try build([.local("3-cc 2-bb 1-aa")])
        let result = try tree.insert(history: rs(history), body: nil)
        #expect(result.added == added)
        #expect(result.commonAncestor?.ascii == common)
        #expect(tree.count == 3 + added)
        #expect(tree[rs(history)[0]] != nil)
    }

    static let badHistories = ["3-cc 1-aa", "2-bb 2-aa", "1-aa 2-bb", "4-dd 3-cc 1-aa"]

    @Test(arguments: badHistories)
    func rejectsNonDescendingHistory(_ history: String) throws {
        var tree = try build([.local("1-aa")])
        #expect {
            try tree.insert(history: rs(history), body: nil)
        } throws: { error in
            (error as? SofaError)?.is(.badRevisionID) == true
        }
        #expect(tree.count == 1)
        #expect(throws: SofaError.self) { try tree.insert(history: [], body: nil) }
    }

    @Test func localInsertRules() throws {
        var tree = try build([.local("2-bb 1-aa")])
        #expect(throws: SofaError.self) { try tree.insert(r("2-cc"), parent: r("1-aa"), body: nil) }
        #expect(throws: SofaError.self) { try tree.insert(r("1-cc"), parent: nil, body: nil) }
        #expect(throws: SofaError.self) { try tree.insert(r("3-cc"), parent: r("2-f0"), body: nil) }
        // An existing revID is a no-op, not an error (LiteCore answers 200; see LiteCoreFactsTests).
        #expect(try tree.insert(r("2-bb"), parent: r("1-aa"), body: nil, allowConflict: true).added == 0)
        #expect(throws: SofaError.self) { try tree.insert(r("4-cc"), parent: r("2-bb"), body: nil) }
        try tree.insert(r("3-cc"), parent: r("2-bb"), body: nil)
        try tree.insert(r("2-cc"), parent: r("1-aa"), body: nil, allowConflict: true)
        #expect(tree.current?.revID == r("3-cc"))
        #expect(tree.conflicts.map(\.revID) == [r("2-cc")])
        do {
            try tree.insert(r("2-dd"), parent: r("1-aa"), body: nil)
            Issue.record("expected a conflict")
        } catch {
            #expect(error.is(.conflict))
        }
    }

    @Test func addRevisionIsDeterministic() throws {
        var tree = RevTree()
        let first = try tree.addRevision(parent: nil, body: ["key": "value"])
        #expect(first.ascii == "1-e9a0a1ad58ed4b48d764c0dd3ef6bd7e91915b55")
        #expect(tree[first]?.body == bytes("{\"key\":\"value\"}"))
        let second = try tree.addRevision(parent: first, body: ["key": "value2"])
        #expect(second.ascii == "2-984606cb56dc0c3a2ecca94e1b663096fa002871")
        let tombstone = try tree.addRevision(parent: second, body: nil, deleted: true)
        #expect(tree.current?.revID == tombstone)
        #expect(tree.current?.isDeleted == true)
        #expect(tree.current?.body == nil)
    }
}

@Suite struct RevTreeWinnerTests {
    static let cases: [(String, [Step], String, [String])] = [
        ("longer local branch wins", [.local("2-bb 1-aa"), .local("3-cc 2-cc 1-aa")], "3-cc", ["2-bb"]),
        ("same generation: higher digest", [.local("2-bb 1-aa"), .local("2-cc 1-aa")], "2-cc", ["2-bb"]),
        ("live beats a longer deleted branch", [.local("2-bb 1-aa"), .local("3-cc 2-cc 1-aa", deleted: true)], "2-bb", []),
        ("remote branch is flagged, local stays current",
         [.local("2-bb 1-aa"), .remote("4-f0 3-f0 2-f0 1-aa")], "2-bb", ["4-f0"]),
        ("remote fast-forward is not a conflict", [.local("2-bb 1-aa"), .remote("3-cc 2-bb")], "3-cc", []),
        ("remote extending its conflicting branch stays flagged",
         [.local("2-bb 1-aa"), .remote("3-f0 2-f0 1-aa"), .remote("4-f0 3-f0")], "2-bb", ["4-f0"]),
        ("local deletion hands over to the remote branch",
         [.local("2-bb 1-aa"), .remote("3-f0 2-f0 1-aa"), .local("3-bb 2-bb", deleted: true)], "3-f0", []),
        ("remote branch onto a deleted local line is not flagged",
         [.local("2-bb 1-aa", deleted: true), .remote("2-aa 1-aa")], "2-aa", []),
        ("unrelated remote root conflicts", [.local("1-aa"), .remote("1-f0")], "1-aa", ["1-f0"]),
        ("all deleted: highest tombstone", [.local("2-bb 1-aa", deleted: true), .local("2-cc 1-aa", deleted: true)], "2-cc", []),
    ]

    @Test(arguments: cases)
    func winner(_ name: String, _ steps: [Step], _ current: String, _ conflicts: [String]) throws {
        let tree = try build(steps)
        #expect(tree.current?.revID.ascii == current, "\(name)")
        #expect(tree.conflicts.map(\.revID.ascii) == conflicts, "\(name)")
        #expect(tree.hasConflict == !conflicts.isEmpty)
        #expect(tree.current?.isConflict == false, "\(name)")
    }

    @Test func remotePointer() throws {
        let tree = try build([.local("2-bb 1-aa"), .remote("3-cc 2-bb")])
        #expect(tree.remoteRevision(for: 1)?.revID == r("3-cc"))
        #expect(tree.remoteRevision(for: 2) == nil)
        #expect(tree[r("3-cc")]?.flags.contains(.foreign) == true)
        #expect(tree[r("2-bb")]?.flags.contains(.foreign) == false)
    }
}

@Suite struct RevTreeMaintenanceTests {
    func chain(_ n: Int, prefix: String = "a") -> String {
        (1...n).reversed().map { "\($0)-\(prefix)\(prefix)" }.joined(separator: " ")
    }

    @Test func pruneLongChain() throws {
        var tree = try build([.local(chain(60))])
        #expect(tree.prune(maxDepth: 50) == 10)
        #expect(tree.count == 50)
        #expect(tree.revisions.first?.revID == r("11-aa"))
        #expect(tree.revisions.first?.parent == nil)
        #expect(tree.prune() == 0)
    }

    @Test func pruneKeepsMarkedAndRemoteRevisions() throws {
        var tree = try build([.local(chain(60))])
        try tree.setKeepBody(r("3-aa"))
        try tree.setRemoteRevision(r("5-aa"), for: 7)
        #expect(tree.prune(maxDepth: 10) == 48)
        #expect(tree.revisions.map(\.revID.generation) == [3, 5] + Array(51...60))
        #expect(tree[r("51-aa")]?.parent == tree.index(of: r("5-aa")))
        #expect(tree[r("5-aa")]?.parent == tree.index(of: r("3-aa")))
        #expect(tree.remoteRevision(for: 7)?.revID == r("5-aa"))
        #expect(tree.current?.revID == r("60-aa"))
    }

    @Test func pruneMeasuresFromEveryLeaf() throws {
        // 1…10 main line, and a short branch 4-bb off 3-aa: 1-aa…3-aa are within 4 of 4-bb.
        var tree = try build([.local(chain(10)), .local("4-bb 3-aa")])
        #expect(tree.prune(maxDepth: 4) == 3)
        #expect(tree.revisions.map(\.revID.ascii) == ["1-aa", "2-aa", "3-aa", "7-aa", "8-aa", "9-aa", "10-aa", "4-bb"])
        // 4…6 are removed, so 7-aa hangs from its nearest kept ancestor.
        #expect(tree[r("7-aa")]?.parent == tree.index(of: r("3-aa")))
    }

    static let purges: [(String, Int, [String])] = [
        ("3-cc", 1, ["1-aa", "2-bb", "3-dd", "2-0e"]),
        ("3-dd", 1, ["1-aa", "2-bb", "3-cc", "2-0e"]),
        ("2-0e", 1, ["1-aa", "2-bb", "3-cc", "3-dd"]),
    ]

    @Test(arguments: purges)
    func purge(_ leaf: String, _ removed: Int, _ remaining: [String]) throws {
        var tree = try build([.local("3-cc 2-bb 1-aa"), .local("3-dd 2-bb"), .local("2-0e 1-aa")])
        #expect(tree.purge(r(leaf)) == removed)
        #expect(Set(tree.revisions.map(\.revID.ascii)) == Set(remaining))
        #expect(tree.leaves.count == 2)
    }

    @Test func purgeWholeBranchAndErrors() throws {
        var tree = try build([.local("3-cc 2-bb 1-aa"), .remote("2-f0 1-f0")])
        #expect(tree.remoteRevision(for: 1) != nil)
        #expect(tree.purge(r("2-f0")) == 2)
        #expect(tree.remoteRevision(for: 1) == nil)
        // Not a leaf, or unknown: nothing purged, not an error (as LiteCore's purgeRevision).
        #expect(tree.purge(r("2-bb")) == 0)
        #expect(tree.purge(r("9-ff")) == 0)
        #expect(tree.purge(r("3-cc")) == 3)
        #expect(tree.isEmpty && tree.current == nil)
    }

    @Test func purgingLocalLineUnflagsRemote() throws {
        var tree = try build([.local("2-bb 1-aa"), .remote("1-f0")])
        #expect(tree.current?.revID == r("2-bb"))
        tree.purge(r("2-bb"))
        #expect(tree.current?.revID == r("1-f0"))
        #expect(tree.current?.isConflict == false)
    }

    @Test func removeNonLeafBodies() throws {
        var tree = RevTree()
        let a = try tree.addRevision(parent: nil, body: ["n": 1])
        let b = try tree.addRevision(parent: a, body: ["n": 2])
        let c = try tree.addRevision(parent: b, body: ["n": 3])
        try tree.setKeepBody(a)
        tree.removeNonLeafBodies()
        #expect(tree[a]?.body == bytes("{\"n\":1}"))
        #expect(tree[b]?.body == nil)
        #expect(tree[c]?.body == bytes("{\"n\":3}"))
    }

    @Test func resolveByPickingAWinner() throws {
        var tree = try build([.local("2-bb 1-aa"), .remote("3-f0 2-f0 1-aa")])
        let current = try tree.resolveConflict(winning: r("3-f0"), losing: r("2-bb"))
        #expect(current == r("3-f0"))
        #expect(tree.current?.revID == r("3-f0"))
        #expect(!tree.hasConflict)
        let tombstone = RevID.generate(parent: r("2-bb"), deleted: true, body: nil)
        #expect(tree[tombstone]?.flags.isSuperset(of: [.deleted, .closed, .leaf, .new]) == true)
        #expect(tree[tombstone]?.parent == tree.index(of: r("2-bb")))
    }

    @Test func resolveWithMergedBody() throws {
        var tree = try build([.local("2-bb 1-aa"), .remote("2-f0 1-aa")])
        let merged: JSON = ["merged": true]
        let current = try tree.resolveConflict(winning: r("2-bb"), losing: r("2-f0"), mergedBody: merged)
        #expect(current == RevID.generate(parent: r("2-bb"), deleted: false, body: merged))
        #expect(tree.current?.revID == current)
        #expect(tree.current?.body == bytes("{\"merged\":true}"))
        #expect(!tree.hasConflict)
        #expect(throws: SofaError.self) { try tree.resolveConflict(winning: r("1-aa"), losing: current) }
        #expect(throws: SofaError.self) { try tree.resolveConflict(winning: current, losing: current) }
    }

    @Test func markSaved() throws {
        var tree = try build([.local("2-bb 1-aa")])
        #expect(tree.hasNewRevisions)
        tree.markSaved(sequence: 42)
        #expect(!tree.hasNewRevisions)
        #expect(tree.revisions.map(\.sequence) == [42, 42])
        try tree.insert(history: rs("3-cc 2-bb"), body: nil)
        tree.markSaved(sequence: 43)
        #expect(tree.revisions.map(\.sequence) == [42, 42, 43])
    }
}
