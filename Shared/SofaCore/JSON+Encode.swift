/// Writing JSON: compact (keys in stored order) and canonical (keys sorted by UTF-8 bytes).
///
/// Both forms have no whitespace and write numbers and strings the same way:
/// * `.int` in decimal; a `.double` that is integral and within ±2^63 as that integer
///   (`1.0` → `1`, `-0.0` → `0`); any other finite double by Swift's shortest round-trip
///   description (`0.1`, `1e-07`, `1.5e+300`); a non-finite double (which `parse` never yields)
///   as `null`.
/// * strings escaped minimally: only `"`, `\` and control characters below 0x20 — as `\b \f \n
///   \r \t`, or `\u00XX` with lowercase hex; everything else, non-ASCII included, as raw UTF-8.
///
/// Example: `["b": 1.0, "a": "x\ny"]` → compact `{"b":1,"a":"x\ny"}`, canonical `{"a":"x\ny","b":1}`
/// (where `\n` stands for the two bytes `5c 6e`).
extension JSON {
    public func compactBytes() -> [UInt8] {
        var writer = JSONWriter(sortKeys: false)
        writer.write(self)
        return writer.out
    }

    public func canonicalBytes() -> [UInt8] {
        var writer = JSONWriter(sortKeys: true)
        writer.write(self)
        return writer.out
    }

    public var compactString: String { String(decoding: compactBytes(), as: UTF8.self) }

    /// The compact form in which a double stays a double: an integral one is written with a
    /// fraction (`5.0`, `-3.0`), so `parse` gives `.double` back where `compactBytes` would give
    /// `.int`. For values whose number kinds carry meaning to their reader, as a query's do:
    /// `["/", 5.0, 15.0]` divides reals (0.333…), `["/", 5, 15]` integers (0).
    public func typedCompactBytes() -> [UInt8] {
        var writer = JSONWriter(sortKeys: false, keepsDoubles: true)
        writer.write(self)
        return writer.out
    }

    public var typedCompactString: String { String(decoding: typedCompactBytes(), as: UTF8.self) }

    public var canonicalString: String { String(decoding: canonicalBytes(), as: UTF8.self) }
}

struct JSONWriter {
    var out: [UInt8] = []
    let sortKeys: Bool
    /// Integral doubles are written with `.0` (`typedCompactBytes`).
    let keepsDoubles: Bool

    init(sortKeys: Bool, keepsDoubles: Bool = false) {
        self.sortKeys = sortKeys
        self.keepsDoubles = keepsDoubles
        out.reserveCapacity(256)
    }

    mutating func write(_ value: JSON) {
        switch value {
        case .null: appendASCII("null")
        case .bool(let b): appendASCII(b ? "true" : "false")
        case .int(let i): writeInt(i)
        case .double(let d): writeDouble(d)
        case .string(let s): writeString(s)
        case .array(let array):
            out.append(UInt8(ascii: "["))
            for (i, element) in array.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                write(element)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            if sortKeys && object.count > 1 {
                let members = object.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                writeMembers(members)
            } else {
                writeMembers(object)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private mutating func writeMembers(_ members: some Sequence<JSONObject.Element>) {
        var first = true
        for (key, value) in members {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writeString(key)
            out.append(UInt8(ascii: ":"))
            write(value)
        }
    }

    private mutating func appendASCII(_ s: StaticString) {
        out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    mutating func writeInt(_ i: Int64) {
        if i < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = i.magnitude
        if magnitude < 10 {
            out.append(UInt8(ascii: "0") + UInt8(magnitude))
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch for 20 digits
        withUnsafeMutableBytes(of: &digits) { scratch in
            var n = scratch.count
            while magnitude > 0 {
                n -= 1
                scratch[n] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            }
            out.append(contentsOf: scratch[n...])
        }
    }

    mutating func writeDouble(_ d: Double) {
        guard d.isFinite else {
            appendASCII("null")
            return
        }
        if d.rounded(.towardZero) == d, d > -0x1p63, d < 0x1p63 {
            if keepsDoubles && d.sign == .minus && d == 0 { out.append(UInt8(ascii: "-")) }
            writeInt(Int64(d))
            if keepsDoubles { appendASCII(".0") }
            return
        }
        out.append(contentsOf: d.description.utf8)
    }

    mutating func writeString(_ s: String) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { utf8 in
            var runStart = 0
            for (i, c) in utf8.enumerated() where c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<i]))
                runStart = i + 1
                out.append(UInt8(ascii: "\\"))
                switch c {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(c)
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                default:
                    let hex: StaticString = "0123456789abcdef"
                    out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                            hex.utf8Start[Int(c >> 4)], hex.utf8Start[Int(c & 0xF)]])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }
}
