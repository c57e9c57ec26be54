/// Document IDs: 1…240 bytes of UTF-8 with no control characters (U+0000–U+001F, U+007F–U+009F).
/// Generated IDs are `~` followed by 22 random URL-safe base64 characters (128 random bits),
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
        for scalar in id.unicodeScalars where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "Document ID contains the control character U+" + String(repeating: "0", count: 4 - hex.count) + hex
        }
        return nil
    }

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
