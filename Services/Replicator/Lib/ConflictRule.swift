import SofaCore

/// The deterministic winner of a conflict, so that two databases that exchanged the same
/// revisions pick the same one: a deletion wins; otherwise the higher generation; otherwise the
/// higher revID (for version vectors, the higher version string).
public enum ConflictRule {
    public struct Leaf: Sendable, Equatable {
        public var rev: String
        public var deleted: Bool

        public init(rev: String, deleted: Bool) {
            self.rev = rev
            self.deleted = deleted
        }
    }

    /// Whether `a` beats `b`.
    public static func wins(_ a: Leaf, over b: Leaf) -> Bool {
        if a.deleted != b.deleted { return a.deleted }
        switch (RevID.tryParse(a.rev), RevID.tryParse(b.rev)) {
        case (let x?, let y?): return x > y   // generation first, then the digest
        default: return a.rev > b.rev
        }
    }

    /// The winner among `leaves`; nil when there are none.
    public static func winner(_ leaves: [Leaf]) -> Leaf? {
        leaves.reduce(nil) { best, leaf in best.map { wins(leaf, over: $0) ? leaf : $0 } ?? leaf }
    }
}
