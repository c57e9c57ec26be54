public import SofaCore

/// How an imported document gets its ID, and the body that is written.
///
/// ```
/// {"_id":"alice","age":3}      (no option)           → ID "alice"
/// {"age":3}  on line 12        (no option)           → ID "0000012"
/// {"age":3}  on line 12        --id-prefix p-        → ID "p-0000012"
/// {"code":"CA"}                --id-field code       → ID "CA"
/// {"_id":"a","_rev":"2-x"}     (any)                 → written without its _rev
/// ```
public struct ImportNaming: Sendable {
    public var idField: String?
    public var idPrefix: String?

    public init(idField: String? = nil, idPrefix: String? = nil) {
        self.idField = idField
        self.idPrefix = idPrefix
    }

    /// The ID and the body to write for document `number` (its 1-based line or element). The
    /// body's own `_id` names it unless `idField` or `idPrefix` is given; a top-level `_rev` is
    /// dropped (an import writes content: a new document, or with upsert the current revision's
    /// child). Bodies that mention neither key are passed on untouched, without being parsed.
    public func prepare(number: Int, body: [UInt8]) throws(SofaError) -> (id: String, body: [UInt8]) {
        let mentionsRev = Self.contains(body, Self.revKey)
        let readsID = idField != nil || (idPrefix == nil && Self.contains(body, Self.idKey))
        guard readsID || mentionsRev else { return (numbered(number), body) }
        guard var object = try JSON.parse(body).objectValue else {
            throw SofaError(.badJSON, "a document must be a JSON object")
        }
        let id: String
        if let idField {
            id = try Self.field(idField, of: object)
        } else if idPrefix == nil, object["_id"] != nil {
            id = try Self.field("_id", of: object)
        } else {
            id = numbered(number)
        }
        guard object.removeValue(forKey: "_rev") != nil else { return (id, body) }
        return (id, JSON.object(object).compactBytes())
    }

    /// The ID alone (see `prepare`).
    public func id(number: Int, body: [UInt8]) throws(SofaError) -> String {
        try prepare(number: number, body: body).id
    }

    private func numbered(_ number: Int) -> String {
        let digits = String(number)
        return (idPrefix ?? "") + String(repeating: "0", count: max(0, 7 - digits.count)) + digits
    }

    private static func field(_ name: String, of object: JSONObject) throws(SofaError) -> String {
        switch object[name] {
        case .string(let text)?: return text
        case .int(let value)? where name != "_id": return String(value)
        case nil: throw SofaError(.badDocID, "no field '\(name)' to take the ID from")
        case let other?: throw SofaError(.badDocID, "field '\(name)' is \(other.compactString), not a string\(name == "_id" ? "" : " or an integer")")
        }
    }

    private static let idKey = Array(#""_id""#.utf8)
    private static let revKey = Array(#""_rev""#.utf8)

    /// Whether `needle` occurs in `bytes` (a key written with escapes is not seen: storage then
    /// reads it as the reserved key it is and refuses a mismatch, document by document).
    private static func contains(_ bytes: [UInt8], _ needle: [UInt8]) -> Bool {
        guard let first = needle.first, bytes.count >= needle.count else { return false }
        var index = 0
        let last = bytes.count - needle.count
        while index <= last {
            if bytes[index] == first && bytes[index..<(index + needle.count)].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }
}
