public import SofaCore
internal import Foundation

/// CouchDB's Mango queries (`_find`) as Sofa's JSON queries: a selector becomes a `WHERE`
/// expression, `fields` the `WHAT` list, `sort` the `ORDER_BY`, `limit`/`skip` (or a bookmark)
/// `LIMIT`/`OFFSET`. Value indexes then serve them as they serve any query.
///
/// A field name's dots are path steps (`"a.b"` is `b` inside `a`), as in Mango. An operand
/// is a JSON value; an operator that needs one kind (`$size` a number, `$regex` a string…)
/// refuses another with `invalidQuery`.
public enum Mango {
    /// Mango's default page size when a find names no limit.
    public static let defaultLimit = 25

    public struct Find: Sendable, Equatable {
        public var selector: JSON
        public var fields: [String]?
        public var sort: [(field: String, descending: Bool)]
        public var limit: Int
        public var skip: Int

        public static func == (a: Find, b: Find) -> Bool {
            a.selector == b.selector && a.fields == b.fields && a.limit == b.limit && a.skip == b.skip
                && a.sort.map(\.field) == b.sort.map(\.field) && a.sort.map(\.descending) == b.sort.map(\.descending)
        }
    }

    /// A `_find` body read: its selector, fields, sort, and the rows to skip and return (a
    /// `bookmark` from an earlier answer continues after its rows).
    public static func find(_ body: JSONObject) throws(SofaError) -> Find {
        guard let selector = body["selector"], selector.objectValue != nil else {
            throw SofaError(.invalidQuery, "a find needs a selector object")
        }
        var fields: [String]?
        if let given = body["fields"] {
            guard let list = given.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
                throw SofaError(.invalidQuery, "fields must be a list of field names")
            }
            // No fields named: the whole documents (CouchDB's reading of `[]`).
            fields = list.isEmpty ? nil : list.compactMap(\.stringValue)
        }
        var sort: [(String, Bool)] = []
        for item in body["sort"]?.arrayValue ?? [] {
            if let field = item.stringValue {
                sort.append((field, false))
            } else if let object = item.objectValue, object.count == 1, let direction = object.values[0].stringValue,
                      direction == "asc" || direction == "desc" {
                sort.append((object.keys[0], direction == "desc"))
            } else {
                throw SofaError(.invalidQuery, "sort items must be field names or {\"field\": \"asc\"|\"desc\"}")
            }
        }
        let limit = try count(body["limit"], "limit") ?? defaultLimit
        var skip = try count(body["skip"], "skip") ?? 0
        if let bookmark = body["bookmark"]?.stringValue, !bookmark.isEmpty, bookmark != "nil" {
            guard let offset = Int(bookmark.dropFirst(2)), bookmark.hasPrefix("o-"), offset >= 0 else {
                throw SofaError(.invalidQuery, "invalid bookmark")
            }
            skip = offset
        }
        return Find(selector: selector, fields: fields, sort: sort, limit: limit, skip: skip)
    }

    private static func count(_ value: JSON?, _ name: String) throws(SofaError) -> Int? {
        guard let value else { return nil }
        guard let number = value.intValue, number >= 0 else { throw SofaError(.invalidQuery, "\(name) must be a non-negative integer") }
        return Int(number)
    }

    /// The bookmark of an answer that returned rows up to `offset`.
    public static func bookmark(after offset: Int) -> String { "o-\(offset)" }

    /// The JSON query of a find: document ID, revision and the document (or the asked fields);
    /// `partial`, a partial index's selector, joins the find's.
    public static func query(_ find: Find, alsoMatching partial: JSON? = nil) throws(SofaError) -> JSON {
        var what: [JSON] = [["._id"], ["._revisionID"]]
        if let fields = find.fields {
            what += fields.map { .array([.string("." + $0)]) }
        } else {
            what.append(["."])
        }
        // Design documents are not found (CouchDB's rule): their IDs begin with `_design/`.
        let notDesign: JSON = ["NOT", ["REGEXP_LIKE()", ["._id"], "^_design/"]]
        var terms: [JSON] = ["AND", notDesign, try condition(find.selector, at: nil)]
        if let partial { terms.append(try condition(partial, at: nil)) }
        var query = JSONObject([("WHAT", .array(what)), ("WHERE", .array(terms))])
        if !find.sort.isEmpty {
            query["ORDER_BY"] = .array(find.sort.map { field, descending in
                descending ? ["DESC", .array([.string("." + field)])] : .array([.string("." + field)])
            })
        }
        query["LIMIT"] = .int(Int64(find.limit))
        if find.skip > 0 { query["OFFSET"] = .int(Int64(find.skip)) }
        return .object(query)
    }

    /// A selector (or part of one) as a condition on `path` (nil: the document itself).
    public static func condition(_ selector: JSON, at path: JSON?, depth: Int = 0) throws(SofaError) -> JSON {
        guard depth < 64 else { throw SofaError(.invalidQuery, "the selector is nested too deeply") }
        guard let object = selector.objectValue else {
            guard let path else { throw SofaError(.invalidQuery, "a selector must be an object") }
            return ["=", path, literal(selector)]
        }
        // A field compared with `{}` asks for an empty object (an empty selector, for everything).
        if object.isEmpty, let path { return ["=", path, .object([:])] }
        var terms: [JSON] = []
        for (key, value) in object {
            // An empty `$or` beside other conditions adds nothing to them (alone, it matches nothing).
            if key == "$or", value.arrayValue?.isEmpty == true, object.count > 1 { continue }
            if key.hasPrefix("$") {
                terms.append(try operation(key, value, at: path, depth: depth))
            } else {
                // A step of digits reads a member of that name or, in an array, that element
                // (as Mango reads `favorites.3`): a match either way.
                let asKey = child(path, key, digitsIndex: false), asIndex = child(path, key, digitsIndex: true)
                let byKey = try condition(value, at: asKey, depth: depth + 1)
                terms.append(asKey == asIndex ? byKey : ["OR", byKey, try condition(value, at: asIndex, depth: depth + 1)])
            }
        }
        if terms.isEmpty { return true }
        return terms.count == 1 ? terms[0] : .array(["AND"] + terms)
    }

    /// `path` with `field` below it (a Mango field name, dots as steps; with `digitsIndex`, a
    /// step of digits below another is an array index).
    static func child(_ path: JSON?, _ field: String, digitsIndex: Bool = false) -> JSON {
        var steps = ""
        var previous: Character?
        var step = ""
        func flush() {
            if digitsIndex, !steps.isEmpty || path != nil, (1...9).contains(step.count), step.allSatisfy({ $0.isASCII && $0.isNumber }) {
                steps += "[" + step + "]"
            } else {
                steps += "." + step
            }
            step = ""
        }
        for character in field {
            if character == ".", previous != "\\" { flush() } else { step.append(character) }
            previous = character
        }
        flush()
        guard let path, let head = path.arrayValue?.first?.stringValue else { return .array([.string(steps)]) }
        return .array([.string(head + steps)])
    }

    /// A value compared with: arrays and objects as literals, not as expressions.
    static func literal(_ value: JSON) -> JSON {
        switch value {
        case .array(let items): return .array(["[]"] + items.map(literal))
        case .object(let members): return .object(JSONObject(members.map { ($0.key, literal($0.value)) }))
        default: return value
        }
    }

    /// The kinds of values in CouchDB's collation order.
    static let kinds = ["null", "boolean", "number", "string", "array", "object"]

    /// `path op value` in CouchDB's collation: null < false < true < numbers < strings < arrays <
    /// objects, a field that is missing never matching. Sofa compares values of one kind; the
    /// kinds that sort before or after the value's are added by their type. (A range over
    /// numbers or strings stays a range an index serves, the other kinds filtered from it.)
    static func comparison(_ op: String, _ path: JSON, _ value: JSON) -> JSON {
        let kind: String
        switch value {
        case .null: kind = "null"
        case .bool: kind = "boolean"
        case .int, .double: kind = "number"
        case .string: kind = "string"
        case .array: kind = "array"
        case .object: kind = "object"
        }
        let rank = kinds.firstIndex(of: kind)!
        let above = Array(kinds[(rank + 1)...]), below = Array(kinds[..<rank])
        let greater = op.hasPrefix(">"), orEqual = op.hasSuffix("=")
        func typeIn(_ names: [String]) -> JSON {
            names.isEmpty ? false : ["IN", ["TYPENAME()", path], .array(["[]"] + names.map { .string($0) })]
        }
        func or(_ same: JSON, _ others: [String]) -> JSON { others.isEmpty ? same : ["OR", same, typeIn(others)] }
        switch value {
        case .null:
            return or(orEqual ? ["IS NULL", path] : false, greater ? above : [])
        case .bool(let b):
            // false < true: the booleans on the asked side of `b` (with `b` itself for >= and <=).
            let wanted = [false, true].filter { greater ? ($0 && !b) || (orEqual && $0 == b) : (!$0 && b) || (orEqual && $0 == b) }
            let same: JSON = wanted.isEmpty ? false : wanted.count == 2 ? typeIn(["boolean"]) : ["=", path, .bool(wanted[0])]
            return or(same, greater ? above : below)
        default:
            let same: JSON = [.string(op), path, literal(value)]
            // Numbers sort below strings, and strings below arrays and objects, in Sofa too: a
            // range up from a number or a string needs only null and booleans (which Sofa sorts
            // above strings) left out, and stays a range an index serves.
            if kind == "number" || kind == "string" {
                if greater { return ["AND", same, ["NOT", typeIn(["null", "boolean"])]] }
                // Down from one: Sofa's range holds the numbers (and strings) below it; null and
                // the booleans are three values an index finds as well.
                return ["OR", same, ["IS NULL", path], ["=", path, true], ["=", path, false]]
            }
            return or(["AND", same, typeIn([kind])], greater ? above : below)
        }
    }

    private static func operation(_ name: String, _ value: JSON, at path: JSON?, depth: Int) throws(SofaError) -> JSON {
        func field() throws(SofaError) -> JSON {
            guard let path else { throw SofaError(.invalidQuery, "\(name) needs a field") }
            return path
        }
        func list() throws(SofaError) -> [JSON] {
            guard let items = value.arrayValue else { throw SofaError(.invalidQuery, "\(name) needs a list") }
            return items
        }
        switch name {
        case "$and", "$or", "$nor":
            let parts = try list().map { (item) throws(SofaError) -> JSON in try condition(item, at: path, depth: depth + 1) }
            guard !parts.isEmpty else { return name == "$or" ? false : true }
            let joined: JSON = parts.count == 1 ? parts[0] : .array([name == "$and" ? "AND" : "OR"] + parts)
            return name == "$nor" ? ["NOT", joined] : joined
        case "$not": return ["NOT", try condition(value, at: path, depth: depth + 1)]
        case "$eq": return ["=", try field(), literal(value)]
        case "$ne": return ["!=", try field(), literal(value)]
        case "$gt": return comparison(">", try field(), value)
        case "$gte": return comparison(">=", try field(), value)
        case "$lt": return comparison("<", try field(), value)
        case "$lte": return comparison("<=", try field(), value)
        case "$exists":
            guard let exists = value.boolValue else { throw SofaError(.invalidQuery, "$exists needs true or false") }
            return [exists ? "IS NOT MISSING" : "IS MISSING", try field()]
        case "$type":
            guard let type = value.stringValue,
                  ["null", "boolean", "number", "string", "array", "object"].contains(type) else {
                throw SofaError(.invalidQuery, "$type needs one of null, boolean, number, string, array, object")
            }
            return ["=", ["TYPENAME()", try field()], .string(type)]
        case "$in", "$nin":
            // The value is one of the list, or (an array) has an element that is.
            let path = try field(), values: JSON = .array(["[]"] + (try list()).map(literal))
            let variable = "i\(depth)"
            let found: JSON = ["OR", ["IN", path, values],
                               ["AND", ["ISARRAY()", path], ["ANY", .string(variable), path, ["IN", [.string("?" + variable)], values]]]]
            return name == "$in" ? found : ["AND", ["IS NOT MISSING", path], ["NOT", found]]
        case "$beginsWith":
            guard let prefix = value.stringValue else { throw SofaError(.invalidQuery, "$beginsWith needs a string") }
            let escaped = prefix.map { "\\^$.|?*+()[]{}".contains($0) ? "\\\($0)" : String($0) }.joined()
            return ["AND", ["=", ["TYPENAME()", try field()], "string"], ["REGEXP_LIKE()", try field(), .string("^" + escaped)]]
        case "$keyMapMatch":
            // A key of the object satisfies the condition.
            let variable = "k\(depth)"
            let key = try condition(value, at: [.string("?" + variable)], depth: depth + 1)
            return ["AND", ["ISOBJECT()", try field()], ["ANY", .string(variable), ["OBJECT_NAMES()", try field()], key]]
        case "$size":
            guard let size = value.intValue else { throw SofaError(.invalidQuery, "$size needs an integer") }
            return ["AND", ["ISARRAY()", try field()], ["=", ["ARRAY_LENGTH()", try field()], .int(size)]]
        case "$mod":
            let operands = try list()
            guard operands.count == 2, let divisor = operands[0].intValue, divisor != 0, let remainder = operands[1].intValue else {
                throw SofaError(.invalidQuery, "$mod needs [divisor, remainder], integers, the divisor not 0")
            }
            let path = try field()
            return ["AND", ["=", ["TYPENAME()", path], "number"], ["=", ["TRUNC()", path], path],
                    ["=", ["%", path, .int(divisor)], .int(remainder)]]
        case "$regex":
            guard let pattern = value.stringValue else { throw SofaError(.invalidQuery, "$regex needs a string") }
            guard (try? NSRegularExpression(pattern: pattern)) != nil else {
                throw SofaError(.invalidQuery, "$regex needs a valid regular expression, not \(JSON.string(pattern).compactString)")
            }
            return ["AND", ["=", ["TYPENAME()", try field()], "string"], ["REGEXP_LIKE()", try field(), .string(pattern)]]
        case "$all":
            let path = try field()
            let values = try list()
            guard !values.isEmpty else { return false }
            return .array(["AND", ["ISARRAY()", path]] + values.enumerated().map { index, item in
                ["ANY", .string("m\(depth)_\(index)"), path, ["=", [.string("?m\(depth)_\(index)")], literal(item)]]
            })
        case "$elemMatch", "$allMatch":
            guard value.objectValue != nil else { throw SofaError(.invalidQuery, "\(name) needs a selector object") }
            let variable = "e\(depth)"
            let element = try condition(value, at: [.string("?" + variable)], depth: depth + 1)
            return [name == "$elemMatch" ? "ANY" : "ANY AND EVERY", .string(variable), try field(), element]
        default:
            throw SofaError(.invalidQuery, "unknown operator \(name)")
        }
    }
}
