internal import SofaCore

/// Array functions (LiteCore's `SQLiteN1QLFunctions.cc`, "ARRAY FUNCTIONS").
///
/// LiteCore's own quirks, kept:
/// * `array_sum` and `array_avg` always answer a number: 0 for MISSING, null, a non-array, or
///   an empty array (LiteCore's tests check `array_sum(MISSING)` is `0.0`); `array_count` and
///   `array_length` answer MISSING for MISSING (as LiteCore's `fl_count` does for a property that
///   is absent) and 0 for null or a non-array.
/// * The numeric functions read every item as LiteCore's `asDouble` does: booleans as 0/1,
///   strings, null, arrays and objects as 0 (`array_sum([1, 2, true, "foo"])` is `4.0`).
/// * `array_max`, `array_min` and `array_ifnull` answer null, not MISSING, for MISSING input.
///
/// Departures: `array_max` of all-negative numbers is their maximum (LiteCore starts its search
/// at the smallest positive double, so it answers that); `array_contains` matches booleans only
/// to booleans (SQLite has no booleans, so LiteCore's `true` also matches `1`) and compares
/// arrays and objects by value (LiteCore never matches them).
extension FunctionLibrary {
    static let arrays: [SQLFunction] = [
        function("array_avg", 1...1) { args in
            let items = numericItems(args[0])
            return .real(items.isEmpty ? 0 : items.reduce(0, +) / Double(items.count))
        },
        function("array_contains", 2...2) { args in
            if args[0].isMissing { return .missing }
            guard case .json(.array(let items)) = args[0] else { return .null }
            if let unknown = unknown([args[1]]) { return unknown }
            guard let needle = args[1].json else { return .missing }
            return .bool(items.contains { sameValue($0, needle) })
        },
        function("array_count", 1...1) { args in
            args[0].isMissing ? .missing : .integer(Int64(arrayItems(args[0]).count { !$0.isNull }))
        },
        function("array_ifnull", 1...1) { args in
            SQLValue(arrayItems(args[0]).first { !$0.isNull } ?? .null)
        },
        function("array_length", 1...1) { args in
            args[0].isMissing ? .missing : .integer(Int64(arrayItems(args[0]).count))
        },
        function("array_max", 1...1) { args in
            numericItems(args[0]).max().map(SQLValue.real) ?? .null
        },
        function("array_min", 1...1) { args in
            numericItems(args[0]).min().map(SQLValue.real) ?? .null
        },
        // LiteCore's array_of() skips MISSING arguments: array_of(1, MISSING, 2) is [1,2].
        function("array_of", 0...variadic) { args in
            .json(.array(args.compactMap(\.json)))
        },
        function("array_sum", 1...1) { args in
            .real(numericItems(args[0]).reduce(0, +))
        },
    ]

    /// An array's items; none for anything else.
    static func arrayItems(_ value: SQLValue) -> [JSON] {
        if case .json(.array(let items)) = value { return items }
        return []
    }

    /// An array's items read as numbers (`JSON.numericValue`); none for anything else.
    static func numericItems(_ value: SQLValue) -> [Double] {
        arrayItems(value).map(\.numericValue)
    }

    /// JSON equality with numbers compared by value (`1 == 1.0`), at every depth.
    static func sameValue(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x == y
        case (.int, .double), (.double, .int), (.double, .double): return a.numericValue == b.numericValue
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { sameValue(value, $0) } ?? false }
        default: return a == b
        }
    }
}
