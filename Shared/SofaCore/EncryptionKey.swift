internal import COpenSSL

/// A database's AES-256 key: 32 raw bytes, or a password stretched as LiteCore does it
/// (PBKDF2-HMAC-SHA256, salt `Salty McNaCl`, 64,000 rounds, 32 bytes).
///
/// It lives in SofaCore because the SDK derives a password's key on the client (the password
/// never crosses the wire, and the 64,000 rounds are spent by the caller, not by a shared
/// service), while sofa-blob uses the key. The blob store uses it as the AES key as is: the
/// 32-byte nonce at the end of every encrypted file is stored but not mixed in (that is how
/// Couchbase Lite reads and writes its files).
/// The key never appears in `description`, logs or error messages.
public struct EncryptionKey: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public static let length = 32
    public static let passwordSalt = Array("Salty McNaCl".utf8)
    public static let passwordRounds = 64_000

    let bytes: [UInt8]

    /// 32 raw bytes; anything else is `.invalidParameter`.
    public init(bytes: some Collection<UInt8>) throws(SofaError) {
        guard bytes.count == Self.length else {
            throw SofaError.invalid("an AES-256 key has \(Self.length) bytes, not \(bytes.count)")
        }
        self.bytes = Array(bytes)
    }

    /// 64 hexadecimal digits; anything else is `.invalidParameter`.
    public init(hex: String) throws(SofaError) {
        let digits = Array(hex.utf8)
        guard digits.count == 2 * Self.length else {
            throw SofaError.invalid("an AES-256 key in hex has \(2 * Self.length) digits, not \(digits.count)")
        }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else {
                throw SofaError.invalid("an AES-256 key in hex has only the digits 0-9 and a-f")
            }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// The key LiteCore derives from `password` (CPU-heavy: about 64,000 HMACs; call it off the
    /// cooperative pool when that matters).
    public init(password: String) throws(SofaError) {
        var out = [UInt8](repeating: 0, count: Self.length)
        let password = Array(password.utf8)
        let ok = password.withUnsafeBufferPointer { pw in
            pw.withMemoryRebound(to: CChar.self) { pwc in
                PKCS5_PBKDF2_HMAC(pwc.baseAddress, Int32(pw.count), Self.passwordSalt, Int32(Self.passwordSalt.count),
                                  Int32(Self.passwordRounds), EVP_sha256(), Int32(Self.length), &out)
            }
        }
        guard ok == 1 else { throw SofaError(.crypto, "PKCS5_PBKDF2_HMAC failed: \(ERR_get_error())") }
        bytes = out
    }

    /// The raw key bytes (for handing on to the process that needs them; never log them).
    public var rawBytes: [UInt8] { bytes }

    public var description: String { "EncryptionKey(AES-256)" }
    public var debugDescription: String { description }
}

/// A running SHA-1 (OpenSSL's EVP), e.g. to check a downloaded blob against its key.
/// Not thread-safe: owned by one reader at a time.
public final class SHA1Stream {
    private let ctx: OpaquePointer

    public init() {
        guard let ctx = EVP_MD_CTX_new() else { fatalError("EVP_MD_CTX_new: out of memory") }
        self.ctx = ctx
        guard EVP_DigestInit_ex(ctx, EVP_sha1(), nil) == 1 else { fatalError("EVP_DigestInit_ex(SHA-1) failed") }
    }

    deinit { EVP_MD_CTX_free(ctx) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        guard EVP_DigestUpdate(ctx, bytes.baseAddress, bytes.count) == 1 else { fatalError("EVP_DigestUpdate failed") }
    }

    public func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The 20-byte digest; the stream cannot be used afterwards.
    public func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(ctx, &digest, &length) == 1, length == 20 else { fatalError("EVP_DigestFinal_ex failed") }
        return Array(digest.prefix(20))
    }
}
