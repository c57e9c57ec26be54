public import SofaCore
internal import Foundation

/// The order of view keys, as CouchDB collates them: null < false < true < numbers (by value) <
/// strings (by the Unicode Collation Algorithm, so "a" < "A" < "aa" < "b") < arrays (element by
/// element, a prefix first) < objects (member by member: key, then value; fewer members first).
/// Not the order of their bytes.
public enum ViewCollation {
    /// -1, 0 or 1 as `a` sorts before, with, or after `b`.
    public static func compare(_ a: JSON, _ b: JSON) -> Int {
        let (ra, rb) = (rank(a), rank(b))
        if ra != rb { return ra < rb ? -1 : 1 }
        switch (a, b) {
        case (.bool(let x), .bool(let y)): return x == y ? 0 : (x ? 1 : -1)
        case (.string(let x), .string(let y)): return compare(x, y)
        case (.array(let x), .array(let y)):
            for (left, right) in zip(x, y) {
                let order = compare(left, right)
                if order != 0 { return order }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        case (.object(let x), .object(let y)):
            for (left, right) in zip(x, y) {
                let key = compare(left.key, right.key)
                if key != 0 { return key }
                let value = compare(left.value, right.value)
                if value != 0 { return value }
            }
            return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
        default:
            guard let x = number(a), let y = number(b) else { return 0 }
            return x == y ? 0 : (x < y ? -1 : 1)
        }
    }

    public static func isOrdered(_ a: JSON, _ b: JSON) -> Bool { compare(a, b) < 0 }

    /// The same in CouchDB's raw collation when `raw` (`ViewSortKey.raw`'s order).
    public static func compare(_ a: JSON, _ b: JSON, raw: Bool) -> Int {
        guard raw else { return compare(a, b) }
        let (x, y) = (ViewSortKey.raw(a), ViewSortKey.raw(b))
        return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
    }

    /// Strings by the Unicode Collation Algorithm (the root locale), ties broken by code points.
    public static func compare(_ a: String, _ b: String) -> Int {
        if a == b { return 0 }
        switch a.compare(b, options: [], range: nil, locale: root) {
        case .orderedAscending: return -1
        case .orderedDescending: return 1
        case .orderedSame: return a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars) ? -1 : 1
        }
    }

    private static let root = Locale(identifier: "")

    static func rank(_ value: JSON) -> Int {
        switch value {
        case .null: 0
        case .bool(false): 1
        case .bool(true): 2
        case .int, .double: 3
        case .string: 4
        case .array: 5
        case .object: 6
        }
    }

    static func number(_ value: JSON) -> Double? {
        switch value {
        case .int(let n): Double(n)
        case .double(let d): d
        default: nil
        }
    }
}
