/// A revision ID of a revision tree: a generation and a digest.
///
/// ASCII form: `<generation>-<digest>`. The generation is decimal, 1…4294967295, with no sign, no
/// leading zeros and no whitespace; the digest is an even, non-zero number of lowercase hex digits,
/// at most 40 bytes decoded.
///
/// Binary form: the generation as an unsigned LEB128 varint (minimal), then the digest bytes. The
/// first byte is never `00` (a leading `00` marks a binary version vector instead).
///
///     ASCII   3-abcd                 binary  03 ab cd
///     ASCII   300-0123456789abcdef   binary  ac 02 01 23 45 67 89 ab cd ef
///
/// Ordering: by generation, then digest bytes compared as unsigned bytes, a shorter digest first
/// when one is a prefix of the other.
public struct RevID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let generation: UInt32
    public let digest: [UInt8]

    public static let maxGeneration = UInt32.max
    public static let maxDigestLength = 40

    /// A revID from its parts; throws `.badRevisionID` when either is out of range.
    public init(generation: UInt32, digest: [UInt8]) throws(SofaError) {
        guard generation > 0 else { throw SofaError(.badRevisionID, "RevID generation must be at least 1") }
        guard !digest.isEmpty, digest.count <= Self.maxDigestLength else {
            throw SofaError(.badRevisionID, "RevID digest must be 1…\(Self.maxDigestLength) bytes, not \(digest.count)")
        }
        self.generation = generation
        self.digest = digest
    }

    init(unchecked generation: UInt32, _ digest: [UInt8]) {
        self.generation = generation
        self.digest = digest
    }

    public static func < (lhs: RevID, rhs: RevID) -> Bool {
        if lhs.generation != rhs.generation { return lhs.generation < rhs.generation }
        return lhs.digest.lexicographicallyPrecedes(rhs.digest)
    }

    public var description: String { ascii }

    // MARK: ASCII

    public var ascii: String { String(decoding: asciiBytes, as: UTF8.self) }

    public var asciiBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(11 + 2 * digest.count)
        var digits = 1
        var rest = generation / 10
        while rest > 0 { digits += 1; rest /= 10 }
        var value = generation
        let start = out.count
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits))
        for i in stride(from: start + digits - 1, through: start, by: -1) {
            out[i] = UInt8(ascii: "0") + UInt8(value % 10)
            value /= 10
        }
        out.append(UInt8(ascii: "-"))
        Hex.append(digest, to: &out)
        return out
    }

    public static func parse(_ ascii: String) throws(SofaError) -> RevID {
        var ascii = ascii
        return try ascii.withUTF8 { parseASCII($0) }.get()
    }

    public static func parse(ascii bytes: some Collection<UInt8>) throws(SofaError) -> RevID {
        try bytes.withBytes { parseASCII($0) }.get()
    }

    public static func tryParse(ascii bytes: some Collection<UInt8>) -> RevID? {
        bytes.withBytes { parseASCII($0) }.value
    }

    public static func tryParse(_ ascii: String) -> RevID? {
        var ascii = ascii
        return ascii.withUTF8 { parseASCII($0) }.value
    }

    static func parseASCII(_ s: UnsafeBufferPointer<UInt8>) -> Result<RevID, SofaError> {
        func fail(_ why: String) -> Result<RevID, SofaError> {
            .failure(SofaError(.badRevisionID, "Invalid revision ID \"\(Hex.printable(s.prefix(100)))\": \(why)"))
        }
        var i = 0
        var generation: UInt64 = 0
        while i < s.count, s[i] >= UInt8(ascii: "0"), s[i] <= UInt8(ascii: "9") {
            if i == 0 && s[i] == UInt8(ascii: "0") { return fail("generation must not start with 0") }
            generation = generation * 10 + UInt64(s[i] - UInt8(ascii: "0"))
            if generation > UInt64(maxGeneration) { return fail("generation above \(maxGeneration)") }
            i += 1
        }
        if i == 0 { return fail("missing generation") }
        guard i < s.count, s[i] == UInt8(ascii: "-") else { return fail("expected '-' after the generation") }
        i += 1
        let hexCount = s.count - i
        if hexCount == 0 { return fail("missing digest") }
        if hexCount % 2 != 0 { return fail("digest has an odd number of hex digits") }
        if hexCount > 2 * maxDigestLength { return fail("digest longer than \(maxDigestLength) bytes") }
        var digest = [UInt8](repeating: 0, count: hexCount / 2)
        for j in 0..<digest.count {
            guard let hi = Hex.value(s[i + 2 * j]), let lo = Hex.value(s[i + 2 * j + 1]) else {
                return fail("digest must be lowercase hex")
            }
            digest[j] = hi << 4 | lo
        }
        return .success(RevID(unchecked: UInt32(generation), digest))
    }

    // MARK: Binary

    public var binary: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(5 + digest.count)
        Varint.append(UInt64(generation), to: &out)
        out.append(contentsOf: digest)
        return out
    }

    public init(binary: some Collection<UInt8>) throws(SofaError) {
        self = try binary.withBytes { Self.parseBinary($0) }.get()
    }

    public static func tryParse(binary: some Collection<UInt8>) -> RevID? {
        binary.withBytes { parseBinary($0) }.value
    }

    static func parseBinary(_ b: UnsafeBufferPointer<UInt8>) -> Result<RevID, SofaError> {
        func fail(_ why: String) -> Result<RevID, SofaError> {
            .failure(SofaError(.corruptRevisionData, "Invalid binary revision ID: \(why)"))
        }
        if b.first == 0 { return fail("a leading 00 byte marks a version vector") }
        var i = 0
        guard let generation = Varint.read(b, at: &i) else { return fail("bad generation varint") }
        guard generation > 0, generation <= UInt64(maxGeneration) else { return fail("generation out of range") }
        let digestCount = b.count - i
        guard digestCount > 0, digestCount <= maxDigestLength else {
            return fail("digest must be 1…\(maxDigestLength) bytes, not \(digestCount)")
        }
        return .success(RevID(unchecked: UInt32(generation), Array(b[i...])))
    }
}
