public import SofaCore

/// A JSON value as it lives inside the SQL that Sofa compiles queries into.
///
/// SQLite has five storage classes and JSON has seven kinds plus MISSING, so compiled SQL uses
/// this mapping, in every query, index and function:
///
///     MISSING            → SQL NULL
///     number             → INTEGER or REAL
///     string             → TEXT
///     null, true, false,
///     array, object      → BLOB holding the value's compact JSON text
///
/// e.g. `{"a":[1,null]}`'s `.a` is the BLOB `[1,null]`, `.a[1]` is the BLOB `null`, `.b` is NULL.
/// Keeping strings as TEXT and numbers native lets SQLite compare, sort and index the common
/// cases directly; the BLOB forms compare bytewise (`false` < `true`) and a function that needs
/// their structure parses them.
public enum SQLValue: Sendable, Hashable {
    case missing
    case integer(Int64)
    case real(Double)
    case text(String)
    /// null, a boolean, an array or an object.
    case json(JSON)

    /// The JSON for a value (nil for MISSING).
    public var json: JSON? {
        switch self {
        case .missing: return nil
        case .integer(let v): return .int(v)
        case .real(let v): return .double(v)
        case .text(let v): return .string(v)
        case .json(let v): return v
        }
    }

    /// The SQL form of a JSON value.
    public init(_ json: JSON?) {
        guard let json else { self = .missing; return }
        switch json {
        case .int(let v): self = .integer(v)
        case .double(let v): self = .real(v)
        case .string(let v): self = .text(v)
        default: self = .json(json)
        }
    }

    public static let null = SQLValue.json(.null)
    public static let `true` = SQLValue.json(.bool(true))
    public static let `false` = SQLValue.json(.bool(false))
    public static func bool(_ value: Bool) -> SQLValue { value ? .true : .false }

    public var isMissing: Bool { if case .missing = self { return true } else { return false } }
    public var isNull: Bool { if case .json(.null) = self { return true } else { return false } }
    /// MISSING or null.
    public var isNullish: Bool { isMissing || isNull }

    /// The number, for INTEGER and REAL (booleans are not numbers here).
    public var number: Double? {
        switch self {
        case .integer(let v): return Double(v)
        case .real(let v): return v
        default: return nil
        }
    }

    public var string: String? { if case .text(let v) = self { return v } else { return nil } }

    /// Truthiness, as a WHERE clause sees it (N1QL's rule): MISSING, null, false, 0, NaN, "", [] and
    /// {} are false; everything else is true.
    public var isTruthy: Bool {
        switch self {
        case .missing: return false
        case .integer(let v): return v != 0
        case .real(let v): return v != 0 && !v.isNaN
        case .text(let v): return !v.isEmpty
        case .json(let v):
            switch v {
            case .null: return false
            case .bool(let b): return b
            case .array(let a): return !a.isEmpty
            case .object(let o): return !o.isEmpty
            default: return true
            }
        }
    }
}
