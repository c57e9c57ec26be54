public import SofaCore
internal import Foundation

/// CouchDB's built-in reduce functions, computed here (no JavaScript): `_count`, `_sum` (numbers
/// and arrays of numbers, element by element), `_stats` (`sum`, `count`, `min`, `max`, `sumsqr`
/// of numbers) and `_approx_count_distinct` (distinct keys, by a HyperLogLog sketch of 2^11
/// registers: its results merge when reductions are reduced again). Each has the two steps of
/// every reduce: `reduce` over rows (keys and values) and `rereduce` over earlier reductions.
public enum BuiltinReduce: String, Sendable, CaseIterable {
    case count = "_count"
    case sum = "_sum"
    case stats = "_stats"
    case approxCountDistinct = "_approx_count_distinct"

    /// The built-in a reduce function's source names: its name first (whitespace around it, and
    /// anything after it, as CouchDB reads `_sum\nare\nawesome`); nil for JavaScript.
    public init?(named source: String) {
        let name = source.trimmingCharacters(in: .whitespacesAndNewlines)
        guard name.hasPrefix("_"), let found = Self.allCases.first(where: { name.hasPrefix($0.rawValue) }) else { return nil }
        self = found
    }

    /// The reduction of rows `(key, value)`.
    public func reduce(keys: [JSON], values: [JSON]) throws(SofaError) -> JSON {
        switch self {
        case .count: return .int(Int64(values.count))
        case .sum: return try Self.sum(values)
        case .stats: return try Self.stats(values)
        case .approxCountDistinct:
            var sketch = HyperLogLog()
            for key in keys { sketch.add(key.canonicalBytes()) }
            return sketch.json
        }
    }

    /// The reduction of earlier reductions (of this same function).
    public func rereduce(_ reductions: [JSON]) throws(SofaError) -> JSON {
        switch self {
        case .count: return try Self.sum(reductions)
        case .sum: return try Self.sum(reductions)
        case .stats: return try Self.stats(reductions)
        case .approxCountDistinct:
            var sketch = HyperLogLog()
            for reduction in reductions {
                guard let other = HyperLogLog(reduction) else { throw SofaError(.invalidQuery, "not an _approx_count_distinct reduction") }
                sketch.merge(other)
            }
            return sketch.json
        }
    }

    /// What a reduction shows a client (an `_approx_count_distinct` sketch becomes its estimate).
    public func present(_ reduction: JSON) -> JSON {
        guard self == .approxCountDistinct, let sketch = HyperLogLog(reduction) else { return reduction }
        return .int(Int64(sketch.estimate.rounded()))
    }

    /// Numbers summed; arrays of numbers summed element by element (the shorter padded with 0).
    /// A value `_sum` cannot add makes the reduction CouchDB's `builtin_reduce_error` object
    /// (the row's value, not a failed query), which a rereduce passes on.
    static func sum(_ values: [JSON]) throws(SofaError) -> JSON {
        if let failed = values.first(where: isReduceError) { return failed }
        guard var total = values.first else { return .int(0) }
        var current = total
        do {
            try checkSummable(total)
            for value in values.dropFirst() {
                current = value
                total = try add(total, value)
            }
        } catch {
            let culprit = values.first { (try? checkSummable($0)) == nil } ?? current
            return ["error": "builtin_reduce_error", "reason": .string(sumError), "caused_by": culprit]
        }
        return total
    }

    /// CouchDB's reason for a value `_sum` cannot add.
    static let sumError = "The _sum function requires that map values be numbers, arrays of numbers, or objects. "
        + "Objects cannot be mixed with other data structures. Objects can be arbitrarily nested, provided that the values "
        + "for all fields are themselves numbers, arrays of numbers, or objects."

    /// A reduction that is a built-in's error object.
    static func isReduceError(_ value: JSON) -> Bool {
        value.objectValue?["error"] == .string("builtin_reduce_error")
    }

    /// `a + b` as CouchDB's `_sum` adds values: numbers (integers stay integers), arrays element
    /// by element (a number is a one-element array; the longer array's tail is kept), objects
    /// member by member (a member of one only is kept).
    static func add(_ a: JSON, _ b: JSON) throws(SofaError) -> JSON {
        switch (a, b) {
        case (.int(let x), .int(let y)):
            let (sum, overflow) = x.addingReportingOverflow(y)
            return overflow ? .double(Double(x) + Double(y)) : .int(sum)
        case (.array(let xs), .array(let ys)):
            var sums: [JSON] = []
            for index in 0..<max(xs.count, ys.count) {
                let x: JSON? = index < xs.count ? xs[index] : Optional.none
                let y: JSON? = index < ys.count ? ys[index] : Optional.none
                switch (x, y) {
                case (let x?, let y?): sums.append(try add(x, y))
                case (let x?, nil):
                    try checkSummable(x)
                    sums.append(x)
                case (nil, let y?):
                    try checkSummable(y)
                    sums.append(y)
                case (nil, nil): break
                }
            }
            return .array(sums)
        case (.array, _) where number(b) != nil: return try add(a, .array([b]))
        case (_, .array) where number(a) != nil: return try add(.array([a]), b)
        case (.object(let xs), .object(let ys)):
            var sums = xs
            for (key, y) in ys {
                if let x = xs[key] {
                    sums[key] = try add(x, y)
                } else {
                    try checkSummable(y)
                    sums[key] = y
                }
            }
            return .object(sums)
        default:
            guard let x = number(a), let y = number(b) else { throw notSummable(number(a) == nil ? a : b) }
            return .double(x + y)
        }
    }

    /// An integer or a double (not a boolean, string or container).
    private static func number(_ value: JSON) -> Double? {
        switch value {
        case .int(let n): Double(n)
        case .double(let d): d
        default: nil
        }
    }

    /// Refuses a value `_sum` cannot add (anything but numbers, and arrays and objects of them).
    private static func checkSummable(_ value: JSON) throws(SofaError) {
        switch value {
        case .int, .double: return
        case .array(let items): for item in items { try checkSummable(item) }
        case .object(let members): for (_, member) in members { try checkSummable(member) }
        default: throw notSummable(value)
        }
    }

    private static func notSummable(_ value: JSON) -> SofaError {
        SofaError(.invalidQuery, "_sum adds numbers, and arrays or objects of numbers, not \(value.compactString)")
    }

    /// `_stats` of values, as CouchDB's: numbers; arrays of numbers (statistics element by
    /// element, an array of them); objects that are statistics already (`sum`, `count`, `min`,
    /// `max`, `sumsqr`: a rereduce's, or a map's pre-aggregated values) merged.
    static func stats(_ values: [JSON]) throws(SofaError) -> JSON {
        func refuse(_ value: JSON) -> SofaError {
            SofaError(.invalidQuery, "_stats reduces numbers, arrays of numbers and statistics objects, not \(value.compactString)")
        }
        func one(_ value: JSON) throws(SofaError) -> Stats {
            if let number = ViewCollation.number(value) {
                var stats = Stats()
                stats.add(number)
                return stats
            }
            if value.objectValue != nil {
                guard let stats = Stats(value) else { throw refuse(value) }
                return stats
            }
            throw refuse(value)
        }
        if case .array(let first)? = values.first {
            var columns = [Stats](repeating: Stats(), count: first.count)
            for value in values {
                guard case .array(let items) = value, items.count == first.count else { throw refuse(value) }
                for (index, item) in items.enumerated() { columns[index].merge(try one(item)) }
            }
            return .array(columns.map(\.json))
        }
        var stats = Stats()
        for value in values { stats.merge(try one(value)) }
        return stats.json
    }

    struct Stats {
        var sum: Double = 0, count: Double = 0, min = Double.infinity, max = -Double.infinity, sumsqr: Double = 0

        init() {}

        init?(_ json: JSON) {
            guard let s = json["sum"].flatMap(ViewCollation.number), let c = json["count"].flatMap(ViewCollation.number),
                  let lo = json["min"].flatMap(ViewCollation.number), let hi = json["max"].flatMap(ViewCollation.number),
                  let q = json["sumsqr"].flatMap(ViewCollation.number) else { return nil }
            (sum, count, min, max, sumsqr) = (s, c, lo, hi, q)
        }

        mutating func add(_ value: Double) {
            sum += value
            count += 1
            min = Swift.min(min, value)
            max = Swift.max(max, value)
            sumsqr += value * value
        }

        mutating func merge(_ other: Stats) {
            sum += other.sum
            count += other.count
            min = Swift.min(min, other.min)
            max = Swift.max(max, other.max)
            sumsqr += other.sumsqr
        }

        var json: JSON {
            func number(_ value: Double) -> JSON {
                value.isFinite && value.rounded() == value && abs(value) < 9e15 ? .int(Int64(value)) : .double(value.isFinite ? value : 0)
            }
            return ["sum": number(sum), "count": number(count), "min": number(min), "max": number(max), "sumsqr": number(sumsqr)]
        }
    }
}

/// A HyperLogLog sketch (2^11 registers, a 64-bit FNV-1a hash): distinct values counted in 2 KiB,
/// within about 2.3% of the truth, and sketches merge.
struct HyperLogLog {
    static let bits = 11
    static let count = 1 << bits
    var registers = [UInt8](repeating: 0, count: HyperLogLog.count)

    init() {}

    /// A sketch from its JSON form (`{"hll": base64}`).
    init?(_ json: JSON) {
        guard let text = json["hll"]?.stringValue, let data = Data(base64Encoded: text), data.count == Self.count else { return nil }
        registers = Array(data)
    }

    var json: JSON { ["hll": .string(Data(registers).base64EncodedString())] }

    mutating func add(_ bytes: [UInt8]) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        // Mixed again (FNV's low bits are weak) before splitting into register and rank.
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        let index = Int(hash >> UInt64(64 - Self.bits))
        let rest = hash << UInt64(Self.bits)
        let rank = UInt8(min(64 - Self.bits, rest.leadingZeroBitCount) + 1)
        registers[index] = max(registers[index], rank)
    }

    mutating func merge(_ other: HyperLogLog) {
        for index in registers.indices { registers[index] = max(registers[index], other.registers[index]) }
    }

    var estimate: Double {
        let m = Double(Self.count)
        let alpha = 0.7213 / (1 + 1.079 / m)
        let harmonic = registers.reduce(0.0) { $0 + pow(2.0, -Double($1)) }
        let raw = alpha * m * m / harmonic
        let zeros = Double(registers.filter { $0 == 0 }.count)
        if raw <= 2.5 * m, zeros > 0 { return m * log(m / zeros) }
        return raw
    }
}
