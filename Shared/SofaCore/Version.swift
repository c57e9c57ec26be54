/// One version of a version vector: a generation made by a peer.
///
/// ASCII: `<generation hex>@<peer hex>`, lowercase, no leading zeros, with `*` for peer 0 ("me",
/// this database). Generation 0 is invalid and peer `0` must be written `*`.
///
///     1a@*          generation 26 by me
///     3@c0ffee      generation 3 by peer 0xc0ffee
///
/// Binary (inside a vector): varint(generation) varint(peer), e.g. `1a 00`, `03 ee ff 83 06`.
public struct Version: Sendable, Hashable, CustomStringConvertible {
    public let generation: UInt64
    public let peer: UInt64

    /// The peer ID that stands for this database.
    public static let me: UInt64 = 0

    public init(generation: UInt64, peer: UInt64) throws(SofaError) {
        guard generation > 0 else { throw SofaError(.badRevisionID, "Version generation must be at least 1") }
        self.generation = generation
        self.peer = peer
    }

    init(unchecked generation: UInt64, _ peer: UInt64) {
        self.generation = generation
        self.peer = peer
    }

    public var description: String { ascii }

    public var ascii: String {
        var out: [UInt8] = []
        appendASCII(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func appendASCII(to out: inout [UInt8]) {
        Self.appendHex(generation, to: &out)
        out.append(UInt8(ascii: "@"))
        if peer == Self.me {
            out.append(UInt8(ascii: "*"))
        } else {
            Self.appendHex(peer, to: &out)
        }
    }

    private static func appendHex(_ value: UInt64, to out: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        var shift = max(0, (64 - value.leadingZeroBitCount + 3) / 4 * 4 - 4)
        while true {
            out.append(digits.utf8Start[Int((value >> UInt64(shift)) & 0xF)])
            if shift == 0 { break }
            shift -= 4
        }
    }

    public static func parse(_ ascii: String) throws(SofaError) -> Version {
        var ascii = ascii
        return try ascii.withUTF8 { parseWhole($0) }.get()
    }

    public static func tryParse(_ ascii: String) -> Version? {
        var ascii = ascii
        return ascii.withUTF8 { parseWhole($0) }.value
    }

    static func parseWhole(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<Version, SofaError> {
        var i = 0
        let result = parseASCII(buffer, at: &i)
        if case .success = result, i != buffer.count {
            return .failure(SofaError(.badRevisionID, "Invalid version \"\(Hex.printable(buffer.prefix(100)))\": unexpected trailing characters"))
        }
        return result
    }

    /// Parses one version at `i`, stopping at the end or at the first byte that cannot continue it.
    static func parseASCII(_ s: UnsafeBufferPointer<UInt8>, at i: inout Int) -> Result<Version, SofaError> {
        func fail(_ why: String) -> Result<Version, SofaError> {
            .failure(SofaError(.badRevisionID, "Invalid version \"\(Hex.printable(s.prefix(100)))\": \(why)"))
        }
        guard let generation = parseHex(s, at: &i) else { return fail("bad hex generation") }
        guard generation > 0 else { return fail("generation 0") }
        guard i < s.count, s[i] == UInt8(ascii: "@") else { return fail("expected '@'") }
        i += 1
        if i < s.count, s[i] == UInt8(ascii: "*") {
            i += 1
            return .success(Version(unchecked: generation, me))
        }
        guard let peer = parseHex(s, at: &i) else { return fail("bad hex peer ID") }
        guard peer != me else { return fail("peer 0 must be written '*'") }
        return .success(Version(unchecked: generation, peer))
    }

    /// 1…16 lowercase hex digits without leading zeros (a lone `0` allowed).
    private static func parseHex(_ s: UnsafeBufferPointer<UInt8>, at i: inout Int) -> UInt64? {
        let start = i
        var value: UInt64 = 0
        while i < s.count, let digit = Hex.value(s[i]) {
            if i - start == 16 { return nil }
            if i - start == 1 && value == 0 { return nil }
            value = value << 4 | UInt64(digit)
            i += 1
        }
        return i == start ? nil : value
    }
}
