import SofaTestSupport
import PropertyBased
@testable import SofaCore

enum Gens {
    static let revID = zip(Gen<UInt32>.value(in: 1...UInt32.max), Gen<UInt8>.value().array(of: 1...40))
        .map { generation, digest in try! RevID(generation: generation, digest: digest) }

    /// Vectors over peers 0…`peers` with generations 1…`maxGeneration` (small ranges make
    /// vectors share peers).
    static func vector(peers: UInt64, maxGeneration: UInt64, count: ClosedRange<Int> = 0...6) -> Generator<VersionVector, some SendableSequenceType> {
        zip(Gen<UInt64>.value(in: 1...maxGeneration), Gen<UInt64>.value(in: 0...peers)).array(of: count)
            .map { pairs in
                var seen = Set<UInt64>()
                let versions = pairs.filter { seen.insert($0.1).inserted }.map { try! Version(generation: $0.0, peer: $0.1) }
                return try! VersionVector(versions)
            }
    }

    /// A tree built by a random sequence of local edits, remote pulls, resolutions and prunes.
    static let tree = Gen<UInt64>.value().map { seed in randomTree(seed: seed) }
}

func randomTree(seed: UInt64, steps: Int = 12) -> RevTree {
    var rng = SplitMix64(seed: seed)
    var tree = RevTree()
    for step in 0..<Int.random(in: 1...steps, using: &rng) {
        let leaves = tree.leaves.map(\.revID)
        let body: JSON = ["step": .int(Int64(step)), "r": .int(Int64(rng.next() % 1000))]
        switch rng.next() % 6 {
        case 0, 1:  // local edit on a random leaf (or a new root)
            let parent = leaves.randomElement(using: &rng)
            _ = try? tree.addRevision(parent: parent, body: body, deleted: rng.next() % 5 == 0, allowConflict: true)
        case 2, 3:  // a remote branch of 1…3 revisions off a random revision
            let base = tree.revisions.randomElement(using: &rng)?.revID
            var history: [RevID] = []
            var parent = base
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let next = RevID.generate(parent: parent, deleted: false, body: ["x": .int(Int64(rng.next() % 1000))])
                history.insert(next, at: 0)
                parent = next
            }
            if let base { history.append(base) }
            _ = try? tree.insert(history: history, body: body.compactBytes(), deleted: rng.next() % 4 == 0,
                                 remote: RevTree.RemoteID(rng.next() % 3 + 1))
        case 4:
            if leaves.count >= 2 {
                let pair = leaves.shuffled(using: &rng)
                _ = try? tree.resolveConflict(winning: pair[0], losing: pair[1],
                                              mergedBody: rng.next() % 2 == 0 ? body : nil)
            }
        default:
            if let rev = tree.revisions.randomElement(using: &rng) { try? tree.setKeepBody(rev.revID) }
            tree.prune(maxDepth: Int.random(in: 1...4, using: &rng))
            tree.markSaved(sequence: UInt64(step + 1))
        }
    }
    tree.markSaved(sequence: 1000)
    return tree
}
