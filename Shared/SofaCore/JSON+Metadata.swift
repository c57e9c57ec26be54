/// Document metadata in bodies: top-level `_id`, `_rev` and `_deleted` describe the document and
/// are never stored inside a body. Other members, `_`-prefixed or not, stay in the body.
extension JSON {
    public struct Metadata: Sendable, Hashable {
        public var id: String?
        public var rev: String?
        public var deleted: Bool
        public var body: JSONObject
    }

    /// Splits a document into metadata and the body to store. Throws `.badJSON` unless the value
    /// is an object, `_id` and `_rev` (when present) are strings and `_deleted` is a boolean.
    public func splitMetadata() throws(SofaError) -> Metadata {
        guard var body = objectValue else { throw SofaError(.badJSON, "A document body must be a JSON object") }
        func string(_ key: String) throws(SofaError) -> String? {
            switch body.removeValue(forKey: key) {
            case nil: return nil
            case .string(let s)?: return s
            case _?: throw SofaError(.badJSON, "\(key) must be a string")
            }
        }
        let id = try string("_id")
        let rev = try string("_rev")
        var deleted = false
        switch body.removeValue(forKey: "_deleted") {
        case nil: break
        case .bool(let b)?: deleted = b
        case _?: throw SofaError(.badJSON, "_deleted must be true or false")
        }
        return Metadata(id: id, rev: rev, deleted: deleted, body: body)
    }

    /// The body with `_id`, `_rev` and (when deleted) `_deleted: true` put back in front, as a
    /// client reads a document.
    public static func withMetadata(_ body: JSONObject, id: String, rev: String?, deleted: Bool = false) -> JSON {
        var result = JSONObject()
        result["_id"] = .string(id)
        if let rev { result["_rev"] = .string(rev) }
        if deleted { result["_deleted"] = .bool(true) }
        for (key, value) in body where key != "_id" && key != "_rev" && key != "_deleted" { result[key] = value }
        return .object(result)
    }
}
