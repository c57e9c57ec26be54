internal import SofaCore

/// Type checks and conversions, with LiteCore's snake-case aliases (`is_array`, `to_number`,
/// `typename`, …).
///
///     isarray/isatom/isboolean/isnumber/isobject/isstring(v)   MISSING → MISSING, null → null
///     type(v)       MISSING for MISSING; "null", "boolean", "number", "string", "array" or "object"
///     toarray(v)    v if an array, else [v]
///     toatom(v)     v if a boolean, number or string; the item of a one-item array or the value
///                   of a one-member object; otherwise null
///     toboolean(v)  false for false, 0, NaN, "", [] and {}; true otherwise
///     tonumber(v)   numbers as they are; true/false as 1/0; a string holding a decimal number
///                   (surrounding whitespace allowed) as that number; otherwise null
///     toobject(v)   v if an object, else {}
///     tostring(v)   strings as they are; numbers and booleans as their JSON text; otherwise null
///
/// All conversions take MISSING to MISSING and null to null.
///
/// `type(MISSING)` is MISSING, as in LiteCore (MISSING passes through); `type(null)` is "null".
/// Departure: `tonumber` rejects trailing junk ("12abc"), as N1QL does.
extension FunctionLibrary {
    static let types: [SQLFunction] = {
        let named: [(String, SQLFunction)] = [
            ("is_array", check("isarray") { $0.isArray }),
            ("is_atom", check("isatom") { ["boolean", "number", "string"].contains(typeName($0)) }),
            ("is_boolean", check("isboolean") { typeName($0) == "boolean" }),
            ("is_number", check("isnumber") { typeName($0) == "number" }),
            ("is_object", check("isobject") { $0.isObject }),
            ("is_string", check("isstring") { typeName($0) == "string" }),
            ("typename", function("type", 1...1) { args in args[0].isMissing ? .missing : .text(typeName(args[0])) }),
            ("to_array", conversion("toarray") { value in value.isArray ? value : .json(.array([value.json ?? .null])) }),
            ("to_atom", conversion("toatom", toAtom)),
            ("to_boolean", conversion("toboolean") { .bool($0.isTruthy) }),
            ("to_number", conversion("tonumber", toNumber)),
            ("to_object", conversion("toobject") { $0.isObject ? $0 : .json(.object(JSONObject())) }),
            ("to_string", conversion("tostring") { value in
                switch value {
                case .text, .integer, .real, .json(.bool): return value.displayText.map(SQLValue.text) ?? .null
                default: return .null
                }
            }),
        ]
        return named.flatMap { aliasName, function in [function, alias(aliasName, of: function)] }
    }()

    /// N1QL's name for a value's type.
    static func typeName(_ value: SQLValue) -> String {
        switch value {
        case .missing: return "missing"
        case .integer, .real: return "number"
        case .text: return "string"
        case .json(let json):
            switch json {
            case .null: return "null"
            case .bool: return "boolean"
            case .int, .double: return "number"
            case .string: return "string"
            case .array: return "array"
            case .object: return "object"
            }
        }
    }

    private static func check(_ name: String, _ test: @escaping @Sendable (SQLValue) -> Bool) -> SQLFunction {
        function(name, 1...1) { args in
            if let unknown = unknown(args) { return unknown }
            return .bool(test(args[0]))
        }
    }

    private static func conversion(_ name: String, _ convert: @escaping @Sendable (SQLValue) -> SQLValue) -> SQLFunction {
        function(name, 1...1) { args in
            if let unknown = unknown(args) { return unknown }
            return convert(args[0])
        }
    }

    private static func toAtom(_ value: SQLValue) -> SQLValue {
        switch value {
        case .json(.array(let items)) where items.count == 1: return SQLValue(items[0])
        case .json(.object(let members)) where members.count == 1: return SQLValue(members.values[0])
        case .json(.array), .json(.object): return .null
        default: return value
        }
    }

    private static func toNumber(_ value: SQLValue) -> SQLValue {
        switch value {
        case .integer, .real: return value
        case .json(.bool(let b)): return .integer(b ? 1 : 0)
        case .text(let text): return parseNumber(text) ?? .null
        default: return .null
        }
    }

    /// A decimal number with optional sign, fraction and exponent, and surrounding whitespace
    /// (`" -12 "`, `"1.5e3"`, `".5"`); INTEGER when it has neither fraction nor exponent and fits.
    static func parseNumber(_ text: String) -> SQLValue? {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
              let last = scalars.lastIndex(where: { !isSpace($0) }) else { return nil }
        let body = String(Substring(scalars[first...last]))
        let bytes = Array(body.utf8)
        var i = 0
        func skipSign() { if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 } }
        func digits() -> Int {
            let start = i
            while i < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[i]) { i += 1 }
            return i - start
        }
        skipSign()
        var count = digits()
        var integral = true
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            integral = false
            i += 1
            count += digits()
        }
        guard count > 0 else { return nil }
        if i < bytes.count, bytes[i] | 0x20 == UInt8(ascii: "e") {
            integral = false
            i += 1
            skipSign()
            guard digits() > 0 else { return nil }
        }
        guard i == bytes.count else { return nil }
        if integral, let int = Int64(body) { return .integer(int) }
        guard let double = Double(body), double.isFinite else { return nil }
        return .real(double)
    }
}
