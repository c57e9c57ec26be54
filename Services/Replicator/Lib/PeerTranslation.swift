import SofaCore

/// Version vectors name the local database's own versions `*` ("me"); between two databases that
/// name must be rewritten: the source's `*` becomes the source's peer ID, and the target's peer ID
/// becomes the target's `*`. A database's peer ID is the first 8 bytes of its public UUID (as
/// LiteCore derives it), never 0. Revision trees need no rewriting (`identity`).
public struct PeerTranslation: Sendable, Equatable {
    public var sourcePeer: UInt64
    public var targetPeer: UInt64
    public var active: Bool

    public static let identity = PeerTranslation(sourcePeer: 0, targetPeer: 0, active: false)

    public init(sourcePeer: UInt64, targetPeer: UInt64, active: Bool = true) {
        self.sourcePeer = sourcePeer
        self.targetPeer = targetPeer
        self.active = active
    }

    /// The peer ID of a database from its public UUID ("8-4-4-4-12" hex).
    public static func peerID(publicUUID: String) -> UInt64 {
        let hex = publicUUID.filter(\.isHexDigit).prefix(16)
        let value = UInt64(hex, radix: 16) ?? 0
        return value == 0 ? 1 : value
    }

    /// A revision (a version or a whole vector) as the target must see it; unchanged when it is
    /// not a vector (a tree revID) or the translation is the identity.
    public func toTarget(_ rev: String) -> String {
        guard active, !rev.contains("-"), let vector = VersionVector.tryParse(rev) else { return rev }
        do {
            return try vector.expandingMe(to: sourcePeer).compactingMe(from: targetPeer).ascii
        } catch {
            return rev
        }
    }
}
