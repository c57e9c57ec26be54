import Foundation
import SofaCore

/// A blob's key: the SHA-1 digest of its (plaintext) content.
///
/// Text form, as LiteCore writes it: `sha1-` + standard base64 of the 20 digest bytes, with
/// padding (always 28 characters after the prefix). File name in the `Attachments/` folder: the
/// base64 with `/` replaced by `_`, then `.blob`.
///
/// Example: the content `This is a blob to store in the store!` has the digest
/// `42 77 96 a3 92 18 21 0d 19 ad b0 86 d2 15 cf 18 2e a3 cb b1`, the key
/// `sha1-QneWo5IYIQ0ZrbCG0hXPGC6jy7E=` and the file name `QneWo5IYIQ0ZrbCG0hXPGC6jy7E=.blob`.
///
/// A file name is built only from the base64 alphabet (`A-Z a-z 0-9 + _ =`) and `.blob`, so no
/// key can name a path outside its folder.
public struct BlobKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    public static let digestLength = 20
    public static let prefix = "sha1-"
    public static let fileExtension = ".blob"

    /// The 20 digest bytes.
    public let digest: [UInt8]

    /// Precondition: `digest.count == 20`.
    public init(digest: [UInt8]) {
        precondition(digest.count == Self.digestLength, "a SHA-1 digest has 20 bytes")
        self.digest = digest
    }

    /// The key of `content`.
    public static func of(_ content: some Collection<UInt8>) -> BlobKey {
        let sha = SHA1Context()
        Array(content).withUnsafeBytes { sha.update($0) }
        return sha.finish()
    }

    /// Parses `sha1-<28 base64 characters>`; throws `.invalidParameter` for anything else.
    public static func parse(_ text: String) throws -> BlobKey {
        guard let key = tryParse(text) else {
            throw SofaError.invalid("invalid blob key \(quoted(text)): expected \"sha1-\" followed by the 28-character base64 of a SHA-1 digest")
        }
        return key
    }

    /// As `parse`, returning nil instead of throwing.
    public static func tryParse(_ text: String) -> BlobKey? {
        guard text.utf8.count == prefix.utf8.count + 28, text.hasPrefix(prefix) else { return nil }
        return fromBase64(String(text.dropFirst(prefix.count)))
    }

    /// The key a file of the `Attachments/` folder is named for, or nil when the name is not
    /// exactly `<base64 with _ for />.blob` (temporary files, the state file, anything else).
    public init?(fileName: String) {
        guard fileName.utf8.count == 28 + Self.fileExtension.utf8.count,
              fileName.hasSuffix(Self.fileExtension) else { return nil }
        let base = fileName.dropLast(Self.fileExtension.count)
        guard !base.contains("/"), let key = Self.fromBase64(base.replacingOccurrences(of: "_", with: "/"))
        else { return nil }
        self = key
    }

    /// Standard base64 with padding, 28 characters.
    public var base64: String { Data(digest).base64EncodedString() }

    /// `sha1-<base64>`.
    public var description: String { Self.prefix + base64 }

    /// `<base64 with _ for />.blob`.
    public var fileName: String { base64.replacingOccurrences(of: "/", with: "_") + Self.fileExtension }

    public static func < (lhs: BlobKey, rhs: BlobKey) -> Bool { lhs.digest.lexicographicallyPrecedes(rhs.digest) }

    /// Strict: 28 characters of the standard alphabet, one `=`, and the canonical encoding (the
    /// unused low bits are zero), checked by encoding again.
    private static func fromBase64(_ text: String) -> BlobKey? {
        guard text.utf8.count == 28, text.hasSuffix("="),
              text.utf8.allSatisfy({ base64Alphabet.contains($0) || $0 == UInt8(ascii: "=") }),
              let data = Data(base64Encoded: text), data.count == digestLength,
              data.base64EncodedString() == text else { return nil }
        return BlobKey(digest: Array(data))
    }

    private static let base64Alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    private static func quoted(_ text: String) -> String {
        let shown = text.count > 60 ? String(text.prefix(60)) + "…" : text
        return "\"" + shown.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined() + "\""
    }
}
