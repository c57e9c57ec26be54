internal import SofaCore

/// Conditional functions for unknowns, and comparison (`greatest`, `least`).
///
///     ifmissing(a, b, …)        first argument that is not MISSING, else MISSING
///     ifnull(a, b, …)           first argument that is not null (MISSING counts as a value), else null
///     ifmissingornull(a, b, …)  first argument that is neither, else null
///     missingif(a, b)           MISSING if a = b, else a   (MISSING in → MISSING; null in → null)
///     nullif(a, b)              null if a = b, else a      (same rules)
///     isvalued(a)               true unless a is MISSING or null (`a IS VALUED`)
///
/// `missingif`/`nullif` equality is LiteCore's: numbers by value (`1 = 1.0`), anything else only
/// when it is the same kind with the same bytes (strings are not Unicode-normalised).
///
/// `greatest`/`least` are SQLite's multi-argument `max`/`min`, as in LiteCore: MISSING if any
/// argument is MISSING, and values of different kinds ordered numbers < strings < BLOBs (null,
/// booleans, arrays, objects, compared by their JSON bytes).
extension FunctionLibrary {
    static let conditionals: [SQLFunction] = [
        function("greatest", 2...variadic) { args in
            extreme(args, keepingLater: { sqliteOrder($0, $1) > 0 })
        },
        function("ifmissing", 2...variadic) { args in
            args.first { !$0.isMissing } ?? .missing
        },
        function("ifmissingornull", 2...variadic) { args in
            args.first { !$0.isNullish } ?? .null
        },
        function("ifnull", 2...variadic) { args in
            args.first { !$0.isNull } ?? .null
        },
        function("isvalued", 1...1) { args in
            .bool(!args[0].isNullish)
        },
        function("least", 2...variadic) { args in
            extreme(args, keepingLater: { sqliteOrder($0, $1) < 0 })
        },
        function("missingif", 2...2) { args in
            if let unknown = unknown(args) { return unknown }
            return sameBytes(args[0], args[1]) ? .missing : args[0]
        },
        function("nullif", 2...2) { args in
            if let unknown = unknown(args) { return unknown }
            return sameBytes(args[0], args[1]) ? .null : args[0]
        },
    ]

    /// LiteCore's `isEqual`: numbers by value; otherwise same kind and identical bytes.
    static func sameBytes(_ a: SQLValue, _ b: SQLValue) -> Bool {
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return x == y
        case (.integer(let x), .real(let y)), (.real(let y), .integer(let x)): return exactlyEqual(x, y)
        case (.real(let x), .real(let y)): return x == y
        case (.text(let x), .text(let y)): return x.utf8.elementsEqual(y.utf8)
        case (.json(let x), .json(let y)): return x.compactBytes() == y.compactBytes()
        default: return false
        }
    }

    /// Whether an integer and a double are the same number exactly (a large integer and the
    /// double nearest it are not: 9223370000000000001 is not 9.22337e18).
    static func exactlyEqual(_ integer: Int64, _ double: Double) -> Bool {
        guard let whole = Int64(exactly: double) else { return false }
        return whole == integer
    }

    /// The argument `keepingLater` prefers, scanning left to right; MISSING if any is MISSING.
    private static func extreme(_ args: [SQLValue], keepingLater: (SQLValue, SQLValue) -> Bool) -> SQLValue {
        guard var best = args.first, !best.isMissing else { return .missing }
        for arg in args.dropFirst() {
            if arg.isMissing { return .missing }
            if keepingLater(arg, best) { best = arg }
        }
        return best
    }

    /// SQLite's ordering of values with BINARY collation: numbers < TEXT < BLOB; numbers by
    /// value, TEXT and BLOB by their bytes. Negative, zero or positive like `memcmp`.
    static func sqliteOrder(_ a: SQLValue, _ b: SQLValue) -> Int {
        func kind(_ value: SQLValue) -> Int {
            switch value {
            case .missing: return 0
            case .integer, .real: return 1
            case .text: return 2
            case .json: return 3
            }
        }
        let (ka, kb) = (kind(a), kind(b))
        if ka != kb { return ka < kb ? -1 : 1 }
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.text(let x), .text(let y)): return compareBytes(Array(x.utf8), Array(y.utf8))
        case (.json(let x), .json(let y)): return compareBytes(x.compactBytes(), y.compactBytes())
        default:
            let (x, y) = (a.number ?? 0, b.number ?? 0)
            return x == y ? 0 : (x < y ? -1 : 1)
        }
    }

    private static func compareBytes(_ a: [UInt8], _ b: [UInt8]) -> Int {
        for (x, y) in zip(a, b) where x != y { return x < y ? -1 : 1 }
        return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
    }
}
