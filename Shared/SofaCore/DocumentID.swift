/// Document IDs: 1…240 bytes of UTF-8 with no control characters (U+0000–U+001F, U+007F–U+009F),
/// no line or paragraph separators (U+2028, U+2029) and no bidirectional controls (U+061C,
/// U+200E, U+200F, U+202A–U+202E, U+2066–U+2069: an ID must read the same in every terminal and
/// log). As in CouchDB, only reserved IDs start with `_`: `_design/NAME` and `_local/NAME`
/// (`_foo`, `_sync:x` are refused). Generated IDs are `~` followed by 22 random URL-safe base64 characters (128 random bits),
/// e.g. `~Xk3_9aQ0bW-vN2cLr7TfZw`.
public enum DocumentID {
    public static let maxLength = 240

    public static func validate(_ id: String) throws(SofaError) {
        if let problem = problem(id) { throw SofaError(.badDocID, problem) }
    }

    public static func isValid(_ id: String) -> Bool { problem(id) == nil }

    private static func problem(_ id: String) -> String? {
        let length = id.utf8.count
        if length == 0 { return "Document ID is empty" }
        if length > maxLength { return "Document ID is \(length) bytes long; the limit is \(maxLength)" }
        for scalar in id.unicodeScalars {
            let what: String
            switch scalar.value {
            case 0..<0x20, 0x7F...0x9F: what = "the control character"
            case 0x2028, 0x2029: what = "the line or paragraph separator"
            case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: what = "the bidirectional control"
            default: continue
            }
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "Document ID contains \(what) U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        if id.hasPrefix("_") {
            guard let prefix = reservedPrefixes.first(where: { id.hasPrefix($0) }) else {
                return "Only reserved document ids may start with underscore."
            }
            if id.utf8.count == prefix.utf8.count { return "Document ID '\(id)' has no name after \(prefix)" }
        }
        return nil
    }

    /// The prefixes of the only IDs that may start with `_`.
    public static let reservedPrefixes = ["_design/", "_local/"]

    public static func generate() -> String {
        var rng = SystemRandomNumberGenerator()
        return generate(using: &rng)
    }

    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    public static func generate(using rng: inout some RandomNumberGenerator) -> String {
        var out: [UInt8] = [UInt8(ascii: "~")]
        out.reserveCapacity(23)
        // 22 characters of 6 bits = 132 bits; the top 4 bits of the last one come from a fresh draw.
        var bits = rng.next() as UInt64
        var available = 64
        for _ in 0..<22 {
            if available < 6 {
                bits = rng.next()
                available = 64
            }
            out.append(alphabet[Int(bits & 0x3F)])
            bits >>= 6
            available -= 6
        }
        return String(decoding: out, as: UTF8.self)
    }
}
