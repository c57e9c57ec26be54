public import SofaCore

/// A database's AES-256 key: 32 raw bytes, or a password stretched as LiteCore does it
/// (PBKDF2-HMAC-SHA256, salt `Salty McNaCl`, 64,000 rounds, 32 bytes).
///
/// The blob store uses it as the AES key as is: the 32-byte nonce at the end of every encrypted
/// file is stored but not mixed in (that is how Couchbase Lite reads and writes its files).
/// The key never appears in `description`, logs or error messages.
public struct EncryptionKey: Sendable, Hashable, CustomStringConvertible {
    public static let length = 32
    public static let passwordSalt = Array("Salty McNaCl".utf8)
    public static let passwordRounds = 64_000

    let bytes: [UInt8]

    /// 32 raw bytes; anything else is `.invalidParameter`.
    public init(bytes: some Collection<UInt8>) throws {
        guard bytes.count == Self.length else {
            throw SofaError.invalid("an AES-256 key has \(Self.length) bytes, not \(bytes.count)")
        }
        self.bytes = Array(bytes)
    }

    /// The key LiteCore derives from `password`.
    public init(password: String) throws {
        bytes = try pbkdf2SHA256(password: Array(password.utf8), salt: Self.passwordSalt,
                                 rounds: Self.passwordRounds, length: Self.length)
    }

    /// The raw key bytes (for handing on to the process that needs them; never log them).
    public var rawBytes: [UInt8] { bytes }

    public var description: String { "EncryptionKey(AES-256)" }

    /// What the store's state file records to recognise this key without holding it:
    /// hex of SHA-256(`"sofa blob key check\0"` + key). The key has 256 bits of entropy (or is
    /// the output of PBKDF2), so this reveals nothing useful.
    func check() throws -> String {
        try sha256(Array("sofa blob key check\0".utf8) + bytes).hexString
    }
}

/// The state-file form of "no key" or a key.
func keyCheck(_ key: EncryptionKey?) throws -> String { try key?.check() ?? "none" }

extension Array where Element == UInt8 {
    var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }
}
