import PropertyBased
import SofaTestSupport
import Testing
@testable import SofaCore

@Suite(.ownThreads) struct PropertyTests {
    @Test func revIDRoundTrips() async {
        await propertyCheck(count: 500, input: Gens.revID) { rev throws in
            #expect(try RevID.parse(rev.ascii) == rev)
            #expect(try RevID(binary: rev.binary) == rev)
            #expect(rev.binary.first != 0)
        }
    }

    @Test func revIDOrderMatchesParts() async {
        await propertyCheck(count: 300, input: Gens.revID, Gens.revID) { a, b throws in
            let expected = a.generation != b.generation ? a.generation < b.generation
                : a.digest.lexicographicallyPrecedes(b.digest)
            #expect((a < b) == expected)
            #expect(!(a < b && b < a))
        }
    }

    @Test func vectorRoundTrips() async {
        await propertyCheck(count: 500, input: Gens.vector(peers: .max, maxGeneration: .max, count: 1...8)) { v throws in
            #expect(try VersionVector.parse(v.ascii) == v)
            #expect(try VersionVector(binary: v.binary) == v)
            #expect(try DocumentVersion(binary: v.binary) == .vector(v))
        }
    }

    @Test func mergeIsCommutativeAndIdempotent() async {
        let vector = Gens.vector(peers: 5, maxGeneration: 6)
        await propertyCheck(count: 500, input: vector, vector) { a, b throws in
            let ab = a.merged(with: b)
            let ba = b.merged(with: a)
            #expect(Set(ab.versions) == Set(ba.versions))
            #expect(ab.compare(to: ba) == .same)
            #expect(ab.merged(with: b) == ab)
            #expect(a.merged(with: a) == a)
            #expect([.same, .newer].contains(ab.compare(to: a)))
            #expect([.same, .newer].contains(ab.compare(to: b)))
        }
    }

    @Test func compareIsAntisymmetric() async {
        let vector = Gens.vector(peers: 4, maxGeneration: 4)
        await propertyCheck(count: 500, input: vector, vector) { a, b throws in
            let mirrored: [VersionOrder: VersionOrder] = [.same: .same, .older: .newer, .newer: .older,
                                                          .conflicting: .conflicting]
            #expect(b.compare(to: a) == mirrored[a.compare(to: b)])
            #expect(a.compare(to: a) == .same)
        }
    }

    @Test func deltaThenApplyRebuildsTheVector() async {
        let vector = Gens.vector(peers: 4, maxGeneration: 4)
        await propertyCheck(count: 500, input: vector, vector) { a, b throws in
            let newer = a.merged(with: b)
            let delta = try #require(newer.delta(from: b))
            #expect(try b.applying(delta: delta).compare(to: newer) == .same)
            if a.compare(to: b) == .conflicting || a.compare(to: b) == .older {
                #expect(a.delta(from: b) == nil)
            }
        }
    }

    @Test func treeSerializationRoundTrips() async {
        await propertyCheck(count: 300, input: Gens.tree) { tree throws in
            let encoded = tree.encoded()
            let decoded = try RevTree(encoded: encoded)
            #expect(decoded == tree)
            #expect(decoded.encoded() == encoded)
            if let columns = tree.recordColumns() {
                let record = Record(key: "d", version: columns.version, body: columns.body, extra: columns.extra)
                let fromRecord = try RevTree(record: record)
                #expect(fromRecord.current == tree.current)
                #expect(fromRecord.encoded(currentBodyInRecord: true) == columns.extra)
            }
        }
    }

    @Test func treeInvariantsHold() async {
        await propertyCheck(count: 300, input: Gens.tree) { tree throws in
            for (i, rev) in tree.revisions.enumerated() {
                if let p = rev.parent {
                    #expect(p < i)
                    #expect(tree.revisions[p].revID.generation < rev.revID.generation)
                }
                let hasChild = tree.revisions.contains { $0.parent == i }
                #expect(rev.isLeaf == !hasChild)
                #expect(tree.index(of: rev.revID) == i)
            }
            if let current = tree.current {
                #expect(current.isLeaf)
                // A conflicting leaf is current only when no unflagged leaf exists.
                if current.isConflict { #expect(tree.leaves.allSatisfy { $0.isConflict }) }
            }
        }
    }

    @Test func canonicalJSONIsStableUnderReordering() async {
        let keys = Gen<Int>.value(in: 0...20).array(of: 0...10)
        await propertyCheck(count: 300, input: keys) { ks throws in
            let pairs = ks.map { ("k\($0)", JSON.int(Int64($0))) }
            let a = JSON.object(JSONObject(pairs))
            let b = JSON.object(JSONObject(pairs.reversed()))
            #expect(a == b)
            #expect(a.canonicalBytes() == b.canonicalBytes())
            #expect(RevID.generate(parent: nil, deleted: false, body: a) == RevID.generate(parent: nil, deleted: false, body: b))
        }
    }
}

@Suite(.ownThreads) struct GeneratorCoverageTests {
    /// The random trees must exercise what the properties are about, or the properties say little.
    @Test func randomTreesCoverTheInterestingShapes() {
        let trees = (0..<300).map { randomTree(seed: UInt64($0)) }
        #expect(trees.contains { $0.hasConflict })
        #expect(trees.contains { $0.revisions.contains(where: \.isConflict) })
        #expect(trees.contains { $0.revisions.contains(where: \.isClosed) })
        #expect(trees.contains { !$0.remoteRevisions.isEmpty })
        #expect(trees.contains { $0.revisions.contains(where: \.keepsBody) })
        #expect(trees.contains { $0.current?.isDeleted == true })
        #expect(trees.contains { $0.count >= 8 })
        #expect(trees.contains { tree in tree.revisions.contains { $0.parent == nil && $0.revID.generation > 1 } })
    }
}
