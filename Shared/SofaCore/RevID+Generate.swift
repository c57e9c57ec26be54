internal import COpenSSL

/// Deterministic revision IDs, as LiteCore makes them, so that the same edit on two replicas gives
/// the same revID.
///
/// generation = parent's + 1 (1 without a parent); digest = SHA-1 over
///
///     [len]  one byte: length of the parent's ASCII revID, capped at 255 (0 without a parent)
///     parent's ASCII revID bytes (none without a parent)
///     [del]  one byte: 01 for a deletion, 00 otherwise
///     the body as canonical JSON (`{}` when there is no body)
///
/// Example: body `{"key":"value"}`, no parent, not deleted → SHA-1 of
/// `00 00 7b 22 6b 65 79 22 3a 22 76 61 6c 75 65 22 7d` → `1-e9a0a1ad58ed4b48d764c0dd3ef6bd7e91915b55`.
extension RevID {
    /// Precondition: `parent.generation < RevID.maxGeneration` (check `canHaveChild` first for
    /// revIDs that came from outside).
    public static func generate(parent: RevID?, deleted: Bool, body: JSON?) -> RevID {
        let json = body?.canonicalBytes() ?? Array("{}".utf8)
        return generate(parent: parent, deleted: deleted, canonicalBody: json)
    }

    /// As `generate(parent:deleted:body:)`, with the body already in canonical JSON form.
    public static func generate(parent: RevID?, deleted: Bool, canonicalBody: some Collection<UInt8>) -> RevID {
        var input: [UInt8] = []
        input.reserveCapacity(64 + canonicalBody.count)
        var generation: UInt32 = 1
        if let parent {
            precondition(parent.canHaveChild, "revision generation overflow")
            generation = parent.generation + 1
            let ascii = parent.asciiBytes
            input.append(UInt8(min(ascii.count, 255)))
            input.append(contentsOf: ascii)
        } else {
            input.append(0)
        }
        input.append(deleted ? 1 : 0)
        input.append(contentsOf: canonicalBody)
        return RevID(unchecked: generation, sha1(input))
    }

    /// Whether a child revision can still get a higher generation.
    public var canHaveChild: Bool { generation < Self.maxGeneration }
}

func sha1(_ bytes: [UInt8]) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
    bytes.withUnsafeBufferPointer { input in
        digest.withUnsafeMutableBufferPointer { out in
            _ = SHA1(input.baseAddress, input.count, out.baseAddress)
        }
    }
    return digest
}
