internal import Foundation
internal import SofaCore

/// The query function library: LiteCore's function names, with LiteCore's semantics, as SQLite
/// scalar functions over `SQLValue`s (registered as `sofa_<name>`).
///
/// Conventions, shared by every family unless its file says otherwise:
///
///     MISSING argument        → MISSING   (checked before null: f(MISSING, null) is MISSING)
///     null argument           → null
///     argument of wrong kind  → null      (e.g. lower(3), sqrt('x'))
///     non-finite result       → null      (e.g. ln(0), div(1, 0))
///     booleans                → JSON true/false (the BLOB encoding), never 0/1
///
/// Where LiteCore departs from these (it answers 0 for `array_sum(MISSING)`, passes non-strings
/// through `trim`), the family's file keeps LiteCore's answer and says so. Aggregates (`count`,
/// `sum`, `avg`, `min`, `max`, `array_agg`) are not here: the compiler maps them to SQL aggregates.
public enum FunctionLibrary {
    /// Every function, with dates read in the process's local time zone where LiteCore does.
    public static let all: [SQLFunction] = functions(localTimeZone: .current)

    /// The function a query calls by `lowercaseName` (`"array_sum"`, `"is_string"`), if any.
    public static func named(_ lowercaseName: String) -> SQLFunction? { table[lowercaseName] }

    private static let table: [String: SQLFunction] =
        Dictionary(all.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })

    /// The library with dates interpreted in `localTimeZone` (tests pin it; `all` uses the
    /// process's zone, as LiteCore uses the device's).
    static func functions(localTimeZone: TimeZone) -> [SQLFunction] {
        arrays + conditionals + math + strings + patterns + types + objects + vectors
            + dates(localTimeZone: localTimeZone) + identifiers
    }

    /// The most arguments SQLite passes to one call; "any number" in LiteCore's table.
    static let variadic = 127  // SQLITE_MAX_FUNCTION_ARG (sqliteLimit.h, not in the public header)

    static let identifiers: [SQLFunction] = [
        // Not LiteCore's (it has no uuid()); N1QL's UUID(): a random version-4 UUID, lowercase.
        function("uuid", 0...0, deterministic: false) { _ in .text(UUID().uuidString.lowercased()) },
    ]

    /// A library function whose body sees its arguments normalised (`SQLValue.normalized`).
    static func function(_ name: String, _ arity: ClosedRange<Int>, deterministic: Bool = true,
                         _ body: @escaping @Sendable ([SQLValue]) throws(SofaError) -> SQLValue) -> SQLFunction {
        SQLFunction(name, arity: arity, deterministic: deterministic) { args throws(SofaError) in
            try body(args.map(\.normalized))
        }
    }

    /// The same function under another name (LiteCore's `is_array` for `isarray`, …).
    static func alias(_ name: String, of function: SQLFunction) -> SQLFunction {
        SQLFunction(name, arity: function.arity, deterministic: function.deterministic, function.body)
    }

    /// MISSING if any argument is MISSING, else null if any is null, else nil: LiteCore's
    /// `passMissingOrNull`, the first step of most functions.
    static func unknown(_ args: some Sequence<SQLValue>) -> SQLValue? {
        var sawNull = false
        for arg in args {
            if arg.isMissing { return .missing }
            if arg.isNull { sawNull = true }
        }
        return sawNull ? .null : nil
    }

    /// A REAL result, or null when it is not finite.
    static func finite(_ value: Double) -> SQLValue { value.isFinite ? .real(value) : .null }
}

extension SQLValue {
    /// The value with scalars in their native form: a BLOB that holds a number or a string
    /// (which compiled SQL never makes, but a hand-written query could) reads as that scalar.
    var normalized: SQLValue {
        switch self {
        case .json(.int), .json(.double), .json(.string): return SQLValue(json)
        default: return self
        }
    }

    /// The number as an integer the way SQLite's `sqlite3_value_int64` reads it (a REAL truncated
    /// toward zero); nil for non-numbers and for REALs outside Int64's range.
    var truncatedInteger: Int64? {
        switch self {
        case .integer(let v): return v
        case .real(let v):
            guard v.isFinite, v > -9.223372036854775e18, v < 9.223372036854775e18 else { return nil }
            return Int64(v)
        default: return nil
        }
    }

    var isArray: Bool { if case .json(.array) = self { return true } else { return false } }
    var isObject: Bool { if case .json(.object) = self { return true } else { return false } }

    /// The text a value contributes to `concat()` and `tostring()`: strings as they are, numbers
    /// and other JSON as their compact JSON text (`2.5`, `true`, `[1,2]`).
    var displayText: String? {
        switch self {
        case .missing: return nil
        case .text(let s): return s
        case .integer(let v): return String(v)
        case .real, .json: return json.map(\.compactString)
        }
    }
}

extension JSON {
    /// The number LiteCore's `asDouble` reads from an item: numbers as they are, booleans as 0/1,
    /// anything else 0.
    var numericValue: Double {
        switch self {
        case .int(let v): return Double(v)
        case .double(let v): return v
        case .bool(let b): return b ? 1 : 0
        default: return 0
        }
    }
}
