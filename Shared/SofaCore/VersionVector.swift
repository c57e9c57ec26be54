/// A version vector: versions by distinct peers, newest (the current version) first.
///
/// ASCII: the versions' ASCII forms joined by commas, no spaces.
/// Binary: a `00` byte, then varint(generation) varint(peer) for each version. The leading zero
/// tells a binary vector from a binary RevID, which never starts with `00`. As a revID, a vector
/// reads as its current (first) version.
///
///     ASCII   1a@*,3@c0ffee
///     binary  00  1a 00  03 ee ff 83 06
///
/// Parsing rejects an empty vector, generation 0, a repeated peer, and (binary) non-minimal
/// varints or trailing bytes, so every parsed vector re-encodes to the same bytes.
public struct VersionVector: Sendable, Hashable, CustomStringConvertible {
    public internal(set) var versions: [Version]

    public init() { versions = [] }

    /// Throws `.badRevisionID` when two versions share a peer.
    public init(_ versions: [Version]) throws(SofaError) {
        for (i, v) in versions.enumerated() where versions[..<i].contains(where: { $0.peer == v.peer }) {
            throw SofaError(.badRevisionID, "Version vector names peer \(v.peer) twice")
        }
        self.versions = versions
    }

    init(unchecked versions: [Version]) { self.versions = versions }

    public var current: Version? { versions.first }
    public var count: Int { versions.count }
    public var isEmpty: Bool { versions.isEmpty }

    public var description: String { ascii }

    // MARK: ASCII

    public var ascii: String {
        var out: [UInt8] = []
        out.reserveCapacity(versions.count * 24)
        for (i, v) in versions.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            v.appendASCII(to: &out)
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func parse(_ ascii: String) throws(SofaError) -> VersionVector {
        var ascii = ascii
        return try ascii.withUTF8 { parseASCII($0) }.get()
    }

    public static func parse(ascii bytes: some Collection<UInt8>) throws(SofaError) -> VersionVector {
        try bytes.withBytes { parseASCII($0) }.get()
    }

    public static func tryParse(ascii bytes: some Collection<UInt8>) -> VersionVector? {
        bytes.withBytes { parseASCII($0) }.value
    }

    public static func tryParse(_ ascii: String) -> VersionVector? {
        var ascii = ascii
        return ascii.withUTF8 { parseASCII($0) }.value
    }

    static func parseASCII(_ s: UnsafeBufferPointer<UInt8>) -> Result<VersionVector, SofaError> {
        if s.isEmpty { return .failure(SofaError(.badRevisionID, "Empty version vector")) }
        var versions: [Version] = []
        var i = 0
        while true {
            switch Version.parseASCII(s, at: &i) {
            case .failure(let error): return .failure(error)
            case .success(let v):
                if versions.contains(where: { $0.peer == v.peer }) {
                    return .failure(SofaError(.badRevisionID, "Version vector names a peer twice"))
                }
                versions.append(v)
            }
            if i == s.count { return .success(VersionVector(unchecked: versions)) }
            guard s[i] == UInt8(ascii: ","), i + 1 < s.count else {
                return .failure(SofaError(.badRevisionID, "Invalid version vector: unexpected character at \(i)"))
            }
            i += 1
        }
    }

    // MARK: Binary

    public var binary: [UInt8] {
        var out: [UInt8] = [0]
        out.reserveCapacity(1 + versions.count * 12)
        for v in versions {
            Varint.append(v.generation, to: &out)
            Varint.append(v.peer, to: &out)
        }
        return out
    }

    public init(binary: some Collection<UInt8>) throws(SofaError) {
        self = try binary.withBytes { Self.parseBinary($0) }.get()
    }

    public static func tryParse(binary: some Collection<UInt8>) -> VersionVector? {
        binary.withBytes { parseBinary($0) }.value
    }

    static func parseBinary(_ b: UnsafeBufferPointer<UInt8>) -> Result<VersionVector, SofaError> {
        func fail(_ why: String) -> Result<VersionVector, SofaError> {
            .failure(SofaError(.corruptRevisionData, "Invalid binary version vector: \(why)"))
        }
        guard b.first == 0 else { return fail("missing leading 00 byte") }
        guard b.count > 1 else { return fail("empty") }
        var versions: [Version] = []
        var i = 1
        while i < b.count {
            guard let generation = Varint.read(b, at: &i), let peer = Varint.read(b, at: &i) else {
                return fail("bad varint at byte \(i)")
            }
            guard generation > 0 else { return fail("generation 0") }
            if versions.contains(where: { $0.peer == peer }) { return fail("peer \(peer) appears twice") }
            versions.append(Version(unchecked: generation, peer))
        }
        return .success(VersionVector(unchecked: versions))
    }
}
