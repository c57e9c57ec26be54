/// How one version vector relates to another.
public enum VersionOrder: Sendable, Hashable {
    case same, older, newer, conflicting
}

extension VersionVector {
    /// The generation `peer` has reached in this vector; 0 when the peer is absent.
    public subscript(peer: UInt64) -> UInt64 {
        for v in versions where v.peer == peer { return v.generation }
        return 0
    }

    /// `.newer` when self has seen everything `other` has and more; `.older` the other way round;
    /// `.conflicting` when each has a version the other lacks.
    public func compare(to other: VersionVector) -> VersionOrder {
        var selfAhead = false
        var otherAhead = false
        for v in versions {
            let o = other[v.peer]
            if v.generation > o { selfAhead = true }
            if v.generation < o { otherAhead = true }
        }
        for v in other.versions where self[v.peer] == 0 { otherAhead = true }
        switch (selfAhead, otherAhead) {
        case (false, false): return .same
        case (true, false): return .newer
        case (false, true): return .older
        case (true, true): return .conflicting
        }
    }

    /// Bumps `peer`'s generation by one and moves that version to the front.
    public mutating func increment(peer: UInt64) throws(SofaError) {
        let (next, overflow) = self[peer].addingReportingOverflow(1)
        if overflow { throw SofaError(.badRevisionID, "Version generation overflow for peer \(peer)") }
        versions.removeAll { $0.peer == peer }
        versions.insert(Version(unchecked: next, peer), at: 0)
    }

    public func incremented(peer: UInt64) throws(SofaError) -> VersionVector {
        var copy = self
        try copy.increment(peer: peer)
        return copy
    }

    /// Every peer with the larger of its two generations: self's versions in self's order, then
    /// the peers only `other` has, in `other`'s order.
    public func merged(with other: VersionVector) -> VersionVector {
        var result = versions.map { v in Version(unchecked: max(v.generation, other[v.peer]), v.peer) }
        for v in other.versions where self[v.peer] == 0 { result.append(v) }
        return VersionVector(unchecked: result)
    }

    /// Replaces "me" (peer 0) by `peer`. If both were present, the larger generation stays, at
    /// the position of the first.
    public func expandingMe(to peer: UInt64) throws(SofaError) -> VersionVector {
        guard peer != Version.me else { throw SofaError(.invalidParameter, "Cannot expand 'me' to peer 0") }
        return renaming(Version.me, to: peer)
    }

    /// Replaces `peer` by "me" (peer 0), the inverse of `expandingMe(to:)`.
    public func compactingMe(from peer: UInt64) throws(SofaError) -> VersionVector {
        guard peer != Version.me else { throw SofaError(.invalidParameter, "Cannot compact peer 0") }
        return renaming(peer, to: Version.me)
    }

    private func renaming(_ from: UInt64, to: UInt64) -> VersionVector {
        let generation = max(self[from], self[to])
        var result: [Version] = []
        var placed = false
        for v in versions {
            if v.peer == from || v.peer == to {
                if !placed { result.append(Version(unchecked: generation, to)) }
                placed = true
            } else {
                result.append(v)
            }
        }
        return VersionVector(unchecked: result)
    }

    /// The versions of self that are newer than in `older`, in self's order: applying them to
    /// `older` gives self's version set. Nil when self is not newer than or the same as `older`;
    /// empty when they are the same.
    public func delta(from older: VersionVector) -> VersionVector? {
        var result: [Version] = []
        for v in versions {
            let o = older[v.peer]
            if v.generation > o {
                result.append(v)
            } else if v.generation < o {
                return nil
            }
        }
        for v in older.versions where self[v.peer] == 0 { return nil }
        return VersionVector(unchecked: result)
    }

    /// `delta`'s versions first, then self's versions for the peers `delta` does not name.
    /// Throws when the delta would move a peer backwards.
    public func applying(delta: VersionVector) throws(SofaError) -> VersionVector {
        for v in delta.versions where v.generation < self[v.peer] {
            throw SofaError(.badRevisionID, "Delta \(delta) is older than \(self) for peer \(v.peer)")
        }
        var result = delta.versions
        for v in versions where delta[v.peer] == 0 { result.append(v) }
        return VersionVector(unchecked: result)
    }
}
