internal import SofaCore

/// String functions.
///
///     concat(a, b, …)     the arguments' text joined; MISSING if any is MISSING. Numbers and
///                         other JSON join as their JSON text: concat('n=', 2.5, null) is "n=2.5null"
///     contains(s, sub)    whether s contains sub, comparing bytes (no collation); false when
///                         either is not a string (contains([1,2], 1) is false), as in LiteCore
///     length(s)           the number of Unicode code points ("😀" is 1)
///     lower(s), upper(s)  Unicode case mapping
///     ltrim/rtrim/trim(s [, chars])
///                         strip, from the left / right / both ends, whitespace — LiteCore's
///                         set, ISO 30112's POSIX spaces: U+0009…000D, U+0020, U+1680, U+180E,
///                         U+2000…2006, U+2008…200A, U+2028, U+2029, U+205F, U+3000 — or, given
///                         `chars`, any character in it: trim('xxhixx', 'x') is "hi"
///
/// Kept from LiteCore: the trims hand back a non-string first argument unchanged (trim(5) is 5).
/// Departure: LiteCore rejects the two-argument trims as unimplemented (N1QL's meaning is used).
extension FunctionLibrary {
    static let strings: [SQLFunction] = [
        function("concat", 2...variadic) { args in
            var out = ""
            for arg in args {
                guard let text = arg.displayText else { return .missing }
                out += text
            }
            return .text(out)
        },
        function("contains", 2...2) { args in
            containing(args[0], args[1]) { string, part in containsBytes(Array(string.utf8), Array(part.utf8)) }
        },
        function("length", 1...1) { args in
            if let unknown = unknown(args) { return unknown }
            guard case .text(let string) = args[0] else { return .null }
            return .integer(Int64(string.unicodeScalars.count))
        },
        function("lower", 1...1) { args in
            if let unknown = unknown(args) { return unknown }
            guard case .text(let string) = args[0] else { return .null }
            return .text(string.lowercased())
        },
        trim("ltrim", left: true, right: false),
        trim("rtrim", left: false, right: true),
        trim("trim", left: true, right: true),
        function("upper", 1...1) { args in
            if let unknown = unknown(args) { return unknown }
            guard case .text(let string) = args[0] else { return .null }
            return .text(string.uppercased())
        },
    ]

    private static func trim(_ name: String, left: Bool, right: Bool) -> SQLFunction {
        function(name, 1...2) { args in
            var strip: (Unicode.Scalar) -> Bool = isSpace
            if args.count == 2 {
                if let unknown = unknown([args[1]]) { return unknown }
                guard case .text(let chars) = args[1] else { return .null }
                let set = Set(chars.unicodeScalars)
                strip = { set.contains($0) }
            }
            guard case .text(let string) = args[0] else { return args[0] }
            var scalars = string.unicodeScalars[...]
            if left { scalars = scalars.drop(while: strip) }
            if right {
                while let last = scalars.last, strip(last) { scalars.removeLast() }
            }
            return .text(String(Substring(scalars)))
        }
    }

    /// LiteCore's `UTF16IsSpace`.
    static func isSpace(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x09...0x0D, 0x20, 0x1680, 0x180E, 0x2000...0x2006, 0x2008...0x200A, 0x2028, 0x2029, 0x205F, 0x3000:
            return true
        default:
            return false
        }
    }

    /// `contains`' treatment of its operands, with or without a collation: MISSING if either is
    /// MISSING, else null if either is null, else false unless both are strings.
    static func containing(_ value: SQLValue, _ part: SQLValue, _ test: (String, String) -> Bool) -> SQLValue {
        if let unknown = unknown([value, part]) { return unknown }
        guard case .text(let string) = value, case .text(let part) = part else { return .false }
        return .bool(test(string, part))
    }

    /// Whether `part` occurs in `bytes` (the empty string occurs everywhere).
    static func containsBytes(_ bytes: [UInt8], _ part: [UInt8]) -> Bool {
        guard !part.isEmpty else { return true }
        guard part.count <= bytes.count else { return false }
        let first = part[0]
        for start in 0...(bytes.count - part.count) where bytes[start] == first {
            if bytes[start..<(start + part.count)].elementsEqual(part) { return true }
        }
        return false
    }
}
