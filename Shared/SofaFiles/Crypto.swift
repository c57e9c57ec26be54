import COpenSSL
public import SofaCore

/// The OpenSSL calls the blob store needs, each handle wrapped once and freed in `deinit`.

/// The last OpenSSL error as a `.crypto` SofaError.
public func opensslError(_ what: String) -> SofaError {
    let code = ERR_get_error()
    var buffer = [CChar](repeating: 0, count: 256)
    ERR_error_string_n(code, &buffer, buffer.count)
    let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return SofaError(.crypto, "\(what) failed: \(code == 0 ? "unknown OpenSSL error" : text)")
}

/// A running SHA-1 whose result is a blob key (SofaCore's `SHA1Stream` underneath). Not
/// thread-safe; owned by one writer or reader.
public final class SHA1Context {
    private let stream = SHA1Stream()

    public init() {}

    public func update(_ bytes: UnsafeRawBufferPointer) { stream.update(bytes) }

    /// The digest; the context cannot be used afterwards.
    public func finish() -> BlobKey { BlobKey(digest: stream.finish()) }
}

/// AES-256-CBC without padding (the blob format pads its last block itself), one key for the
/// life of the context, a fresh IV per call.
public final class AESCBC {
    private let ctx: OpaquePointer
    private let encrypting: Bool

    public init(key: EncryptionKey, encrypt: Bool) throws {
        guard let ctx = EVP_CIPHER_CTX_new() else { throw opensslError("EVP_CIPHER_CTX_new") }
        self.ctx = ctx
        self.encrypting = encrypt
        let ok = key.rawBytes.withUnsafeBufferPointer {
            EVP_CipherInit_ex(ctx, EVP_aes_256_cbc(), nil, $0.baseAddress, nil, encrypt ? 1 : 0)
        }
        guard ok == 1, EVP_CIPHER_CTX_set_padding(ctx, 0) == 1 else { throw opensslError("EVP_CipherInit_ex(AES-256-CBC)") }
    }

    deinit { EVP_CIPHER_CTX_free(ctx) }

    /// Transforms `input` (a multiple of 16 bytes) into `output` (at least as long) with `iv`.
    public func run(iv: UnsafeRawBufferPointer, _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) throws {
        precondition(input.count % 16 == 0 && output.count >= input.count && iv.count == 16)
        guard EVP_CipherInit_ex(ctx, nil, nil, nil, iv.baseAddress?.assumingMemoryBound(to: UInt8.self), encrypting ? 1 : 0) == 1
        else { throw opensslError("EVP_CipherInit_ex(iv)") }
        var written: Int32 = 0
        guard EVP_CipherUpdate(ctx, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &written,
                               input.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(input.count)) == 1,
              Int(written) == input.count else { throw opensslError("EVP_CipherUpdate") }
        var tail: Int32 = 0
        guard EVP_CipherFinal_ex(ctx, output.baseAddress?.assumingMemoryBound(to: UInt8.self).advanced(by: Int(written)), &tail) == 1,
              tail == 0 else { throw opensslError("EVP_CipherFinal_ex") }
    }
}

/// `count` bytes from OpenSSL's CSPRNG.
public func randomBytes(_ count: Int) throws -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw opensslError("RAND_bytes") }
    return bytes
}

/// SHA-256 of `bytes`.
public func sha256(_ bytes: [UInt8]) throws -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    guard EVP_Digest(bytes, bytes.count, &digest, &length, EVP_sha256(), nil) == 1 else { throw opensslError("EVP_Digest(SHA-256)") }
    return Array(digest.prefix(Int(length)))
}

extension Array where Element == UInt8 {
    /// Lower-case hexadecimal, two digits a byte (key checks, temporary file names).
    public var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }
}

/// HMAC-SHA-256 of `message` with `key` (signed cookies).
public func hmacSHA256(key: [UInt8], _ message: [UInt8]) throws -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    guard HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &digest, &length) != nil else {
        throw opensslError("HMAC(SHA-256)")
    }
    return Array(digest.prefix(Int(length)))
}
