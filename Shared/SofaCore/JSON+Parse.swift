/// Strict RFC 8259 parsing, straight over UTF-8 bytes.
///
/// The whole input must be one JSON value, optionally surrounded by whitespace (space, tab, LF,
/// CR). Rejected, with `.badJSON` naming the byte offset and the reason: invalid UTF-8, a
/// byte-order mark, control characters inside strings, lone UTF-16 surrogates in `\u` escapes,
/// leading zeros, `NaN`/`Infinity`, numbers whose magnitude overflows `Double`, trailing commas,
/// nesting deeper than `JSON.maxDepth`. A repeated object key keeps its first position and takes
/// the last value. Integers that fit `Int64` become `.int`; every other number becomes `.double`.
///
/// Example: `{"a":[1,2.5,"x\u00e9"]}` → `.object(["a": .array([.int(1), .double(2.5), .string("xé")])])`.
extension JSON {
    /// The deepest nesting of arrays and objects accepted.
    public static let maxDepth = 512

    public static func parse(_ bytes: some Collection<UInt8>) throws(SofaError) -> JSON {
        try bytes.withBytes { JSONParser.parse($0) }.get()
    }

    public static func parse(_ string: String) throws(SofaError) -> JSON {
        var string = string
        return try string.withUTF8 { buffer in JSONParser.parse(buffer) }.get()
    }

    /// `parse`, also answering whether the input is exactly what `compactBytes()` writes for the
    /// value (no whitespace, no escape or number written another way, no repeated key), so a
    /// caller can keep the input bytes instead of writing them again.
    public static func parseNotingCompact(_ bytes: [UInt8]) throws(SofaError) -> (json: JSON, isCompact: Bool) {
        try bytes.withUnsafeBufferPointer { JSONParser.parseNoting($0) }.get()
    }

    public static func tryParse(_ bytes: some Collection<UInt8>) -> JSON? {
        bytes.withBytes { JSONParser.parse($0) }.value
    }

    public static func tryParse(_ string: String) -> JSON? {
        var string = string
        return string.withUTF8 { JSONParser.parse($0) }.value
    }
}

private enum Byte {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let slash = UInt8(ascii: "/")
    static let zero = UInt8(ascii: "0")
    static let nine = UInt8(ascii: "9")
    static let minus = UInt8(ascii: "-")
    static let plus = UInt8(ascii: "+")
    static let dot = UInt8(ascii: ".")
    static let comma = UInt8(ascii: ",")
    static let colon = UInt8(ascii: ":")
}

struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var pos = 0
    private var depth = 0
    private var error: SofaError?
    /// Whether everything read so far is written exactly as `JSONWriter` (compact) writes it.
    private var compact = true

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<JSON, SofaError> {
        parseNoting(bytes).map(\.json)
    }

    static func parseNoting(_ bytes: UnsafeBufferPointer<UInt8>) -> Result<(json: JSON, isCompact: Bool), SofaError> {
        var parser = JSONParser(bytes)
        if let value = parser.parseValue() {
            parser.skipWhitespace()
            if parser.pos == bytes.count { return .success((value, parser.compact)) }
            _ = parser.fail("unexpected data after the JSON value") as Void?
        }
        return .failure(parser.error ?? SofaError(.badJSON, "Invalid JSON"))
    }

    /// Records the first failure and returns nil, so callers can `return fail(…)`. The parser
    /// does not throw internally: a throw is costly where a harness records a backtrace per throw,
    /// and invalid input is common on the `tryParse` path.
    private mutating func fail<T>(_ reason: String, at offset: Int? = nil) -> T? {
        if error == nil { error = SofaError(.badJSON, "Invalid JSON at byte \(offset ?? pos): \(reason)") }
        return nil
    }

    private mutating func skipWhitespace() {
        while pos < bytes.count {
            switch bytes[pos] {
            case 0x20, 0x09, 0x0A, 0x0D:
                pos += 1
                compact = false
            default: return
            }
        }
    }

    private mutating func parseValue() -> JSON? {
        skipWhitespace()
        guard pos < bytes.count else { return fail("unexpected end of input") }
        switch bytes[pos] {
        case UInt8(ascii: "{"): return parseObject()
        case UInt8(ascii: "["): return parseArray()
        case Byte.quote: return parseString().map { .string($0) }
        case UInt8(ascii: "t"): return expectLiteral("true").map { .bool(true) }
        case UInt8(ascii: "f"): return expectLiteral("false").map { .bool(false) }
        case UInt8(ascii: "n"): return expectLiteral("null").map { .null }
        case Byte.minus, Byte.zero...Byte.nine: return parseNumber()
        default: return fail("unexpected character")
        }
    }

    private mutating func expectLiteral(_ word: StaticString) -> Void? {
        let count = word.utf8CodeUnitCount
        guard bytes.count - pos >= count else { return fail("invalid literal") }
        let text = word.utf8Start
        for i in 0..<count where bytes[pos + i] != text[i] { return fail("invalid literal", at: pos + i) }
        pos += count
        return ()
    }

    private mutating func enter() -> Void? {
        depth += 1
        if depth > JSON.maxDepth { return fail("nesting deeper than \(JSON.maxDepth)") }
        pos += 1
        return ()
    }

    private mutating func parseArray() -> JSON? {
        guard enter() != nil else { return nil }
        var array: [JSON] = []
        skipWhitespace()
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "]") {
            pos += 1
            depth -= 1
            return .array(array)
        }
        while true {
            guard let element = parseValue() else { return nil }
            array.append(element)
            skipWhitespace()
            guard pos < bytes.count else { return fail("unterminated array") }
            let c = bytes[pos]
            pos += 1
            if c == Byte.comma { continue }
            if c == UInt8(ascii: "]") { break }
            return fail("expected ',' or ']'", at: pos - 1)
        }
        depth -= 1
        return .array(array)
    }

    private mutating func parseObject() -> JSON? {
        guard enter() != nil else { return nil }
        var object = JSONObject()
        skipWhitespace()
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "}") {
            pos += 1
            depth -= 1
            return .object(object)
        }
        while true {
            skipWhitespace()
            guard pos < bytes.count, bytes[pos] == Byte.quote else { return fail("expected a string key") }
            guard let key = parseString() else { return nil }
            skipWhitespace()
            guard pos < bytes.count, bytes[pos] == Byte.colon else { return fail("expected ':'") }
            pos += 1
            guard let value = parseValue() else { return nil }
            let count = object.count
            object[key] = value
            if object.count == count { compact = false }  // a repeated key: written once
            skipWhitespace()
            guard pos < bytes.count else { return fail("unterminated object") }
            let c = bytes[pos]
            pos += 1
            if c == Byte.comma { continue }
            if c == UInt8(ascii: "}") { break }
            return fail("expected ',' or '}'", at: pos - 1)
        }
        depth -= 1
        return .object(object)
    }

    // MARK: Strings

    /// Parses a string starting at its opening quote.
    private mutating func parseString() -> String? {
        let open = pos
        pos += 1
        let start = pos
        var ascii = true
        while pos < bytes.count {
            let c = bytes[pos]
            if c == Byte.quote {
                guard let s = makeString(UnsafeBufferPointer(rebasing: bytes[start..<pos]), ascii: ascii, at: open) else { return nil }
                pos += 1
                return s
            }
            if c == Byte.backslash { return parseEscapedString(from: start, ascii: ascii, open: open) }
            if c < 0x20 { return fail("control character in string") }
            if c >= 0x80 { ascii = false }
            pos += 1
        }
        return fail("unterminated string", at: open)
    }

    private mutating func makeString(_ utf8: UnsafeBufferPointer<UInt8>, ascii: Bool, at open: Int) -> String? {
        if ascii { return String(decoding: utf8, as: UTF8.self) }
        guard let s = String(validating: utf8, as: UTF8.self) else { return fail("invalid UTF-8 in string", at: open) }
        return s
    }

    private mutating func parseEscapedString(from start: Int, ascii: Bool, open: Int) -> String? {
        var ascii = ascii
        var out = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<pos]))
        out.reserveCapacity(out.count + 16)
        while pos < bytes.count {
            let c = bytes[pos]
            if c == Byte.quote {
                pos += 1
                return out.withUnsafeBufferPointer { buffer in makeString(buffer, ascii: ascii, at: open) }
            }
            if c < 0x20 { return fail("control character in string") }
            if c >= 0x80 { ascii = false }
            if c != Byte.backslash {
                out.append(c)
                pos += 1
                continue
            }
            guard pos + 1 < bytes.count else { break }
            let escape = bytes[pos + 1]
            pos += 2
            switch escape {
            case Byte.quote, Byte.backslash: out.append(escape)
            case Byte.slash:
                out.append(escape)
                compact = false  // written unescaped
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                compact = false  // conservative: most are written raw
                guard let scalar = parseUnicodeEscape() else { return nil }
                appendUTF8(scalar, to: &out)
            default: return fail("invalid escape", at: pos - 2)
            }
        }
        return fail("unterminated string", at: open)
    }

    /// After `\u`: four hex digits, and for a high surrogate the `\uXXXX` low surrogate after it.
    private mutating func parseUnicodeEscape() -> Unicode.Scalar? {
        let escapeStart = pos - 2
        guard let unit = parseHex4() else { return nil }
        if unit >= 0xDC00 && unit <= 0xDFFF { return fail("lone low surrogate", at: escapeStart) }
        if unit >= 0xD800 && unit <= 0xDBFF {
            guard bytes.count - pos >= 6, bytes[pos] == Byte.backslash, bytes[pos + 1] == UInt8(ascii: "u") else {
                return fail("lone high surrogate", at: escapeStart)
            }
            pos += 2
            guard let low = parseHex4() else { return nil }
            guard low >= 0xDC00 && low <= 0xDFFF else { return fail("lone high surrogate", at: escapeStart) }
            let value = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            return Unicode.Scalar(value)!
        }
        return Unicode.Scalar(UInt32(unit))!
    }

    private mutating func parseHex4() -> UInt16? {
        guard bytes.count - pos >= 4 else { return fail("truncated \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let c = bytes[pos]
            let digit: UInt8
            switch c {
            case Byte.zero...Byte.nine: digit = c - Byte.zero
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
            default: return fail("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            pos += 1
        }
        return value
    }

    private func appendUTF8(_ scalar: Unicode.Scalar, to out: inout [UInt8]) {
        let v = scalar.value
        switch v {
        case 0..<0x80:
            out.append(UInt8(v))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | v >> 6))
            out.append(UInt8(0x80 | v & 0x3F))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | v >> 12))
            out.append(UInt8(0x80 | v >> 6 & 0x3F))
            out.append(UInt8(0x80 | v & 0x3F))
        default:
            out.append(UInt8(0xF0 | v >> 18))
            out.append(UInt8(0x80 | v >> 12 & 0x3F))
            out.append(UInt8(0x80 | v >> 6 & 0x3F))
            out.append(UInt8(0x80 | v & 0x3F))
        }
    }

    // MARK: Numbers

    private func isDigit(_ i: Int) -> Bool {
        i < bytes.count && bytes[i] >= Byte.zero && bytes[i] <= Byte.nine
    }

    private mutating func parseNumber() -> JSON? {
        let start = pos
        let negative = bytes[pos] == Byte.minus
        if negative { pos += 1 }
        guard isDigit(pos) else { return fail("expected a digit") }
        var magnitude: UInt64 = 0
        var overflow = false
        if bytes[pos] == Byte.zero {
            pos += 1
            if isDigit(pos) { return fail("leading zero in number", at: pos - 1) }
        } else {
            while isDigit(pos) {
                let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (m2, o2) = m1.addingReportingOverflow(UInt64(bytes[pos] - Byte.zero))
                overflow = overflow || o1 || o2
                magnitude = m2
                pos += 1
            }
        }
        var integral = true
        if pos < bytes.count, bytes[pos] == Byte.dot {
            integral = false
            pos += 1
            guard isDigit(pos) else { return fail("expected a digit after '.'") }
            while isDigit(pos) { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] | 0x20 == UInt8(ascii: "e") {
            integral = false
            pos += 1
            if pos < bytes.count, bytes[pos] == Byte.plus || bytes[pos] == Byte.minus { pos += 1 }
            guard isDigit(pos) else { return fail("expected a digit in exponent") }
            while isDigit(pos) { pos += 1 }
        }
        if negative && magnitude == 0 { compact = false }  // "-0" is written "0"
        if integral && !overflow {
            if !negative, magnitude <= UInt64(Int64.max) { return .int(Int64(magnitude)) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return .int(Int64(bitPattern: 0 &- magnitude)) }
        }
        compact = false  // conservative: a double is written in Swift's shortest form
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<pos]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { return fail("number out of range", at: start) }
        return .double(value)
    }
}
