import SofaCore

/// The blobs a revision body references, found as storage finds them: any object with
/// `"@type":"blob"` and a `"digest"` string, and every `"digest"` of the top-level
/// `_attachments` object. Malformed references are left to the target to refuse.
public enum BlobDigests {
    public static func find(in body: [UInt8]) -> Set<String> {
        // Most bodies (compact, as storage keeps them) are answered by one pass over the bytes:
        // a reference needs a "digest" key.
        if let scan = JSON.scanCompactObject(body), !scan.hasDigestKey { return [] }
        guard let json = JSON.tryParse(body) else { return [] }
        var found = Set<String>()
        walk(json, &found)
        if case .object(let top) = json, case .object(let attachments)? = top["_attachments"] {
            for (_, value) in attachments {
                if case .object(let attachment) = value, case .string(let digest)? = attachment["digest"] { found.insert(digest) }
            }
        }
        return found
    }

    private static func walk(_ json: JSON, _ found: inout Set<String>) {
        switch json {
        case .object(let object):
            if case .string("blob")? = object["@type"], case .string(let digest)? = object["digest"] { found.insert(digest) }
            for (_, value) in object { walk(value, &found) }
        case .array(let items):
            for item in items { walk(item, &found) }
        default:
            break
        }
    }
}
