/// Finds a value inside JSON text without building a tree: the hot path of every query, which
/// reads one or two properties of each document's body (compact JSON) per row.
///
/// `locate` walks the path, skipping over the values it does not need (strings with escapes,
/// nested containers), and returns the byte range of the value found, or nil when the path does
/// not lead anywhere (MISSING). Malformed text also gives nil, never a crash.
struct JSONScanner {
    let bytes: UnsafeRawBufferPointer

    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
    private static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
    private static let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")
    private static let comma = UInt8(ascii: ","), colon = UInt8(ascii: ":")

    func skipSpace(_ i: Int) -> Int {
        var i = i
        while i < bytes.count {
            switch bytes[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return i
            }
        }
        return i
    }

    /// The index just past the string that starts (with its quote) at `i`.
    func skipString(_ i: Int) -> Int? {
        var i = i + 1
        while i < bytes.count {
            let b = bytes[i]
            if b == Self.backslash { i += 2; continue }
            if b == Self.quote { return i + 1 }
            i += 1
        }
        return nil
    }

    /// The index just past the value that starts at `i`.
    func skipValue(_ i: Int) -> Int? {
        guard i < bytes.count else { return nil }
        let b = bytes[i]
        if b == Self.quote { return skipString(i) }
        if b == Self.openBrace || b == Self.openBracket {
            var depth = 0
            var j = i
            while j < bytes.count {
                let c = bytes[j]
                if c == Self.quote {
                    guard let end = skipString(j) else { return nil }
                    j = end
                    continue
                }
                if c == Self.openBrace || c == Self.openBracket { depth += 1 }
                if c == Self.closeBrace || c == Self.closeBracket {
                    depth -= 1
                    if depth == 0 { return j + 1 }
                }
                j += 1
            }
            return nil
        }
        // A number or a literal: up to the next delimiter.
        var j = i
        while j < bytes.count {
            let c = bytes[j]
            if c == Self.comma || c == Self.closeBrace || c == Self.closeBracket || c == 0x20 || c == 0x0A || c == 0x09 || c == 0x0D { break }
            j += 1
        }
        return j > i ? j : nil
    }

    /// Whether the string token at `range` (with quotes) equals `key`.
    func stringEquals(_ range: Range<Int>, _ key: [UInt8]) -> Bool {
        let inner = (range.lowerBound + 1)..<(range.upperBound - 1)
        var hasEscape = false
        for i in inner where bytes[i] == Self.backslash { hasEscape = true; break }
        if !hasEscape {
            guard inner.count == key.count else { return false }
            var k = 0
            for i in inner {
                if bytes[i] != key[k] { return false }
                k += 1
            }
            return true
        }
        return decodeString(range).map { Array($0.utf8) == key } ?? false
    }

    /// The string token at `range` (with quotes), unescaped.
    func decodeString(_ range: Range<Int>) -> String? {
        let inner = (range.lowerBound + 1)..<(range.upperBound - 1)
        var hasEscape = false
        for i in inner where bytes[i] == Self.backslash { hasEscape = true; break }
        if !hasEscape {
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[inner]), as: UTF8.self)
        }
        return JSON.tryParse(UnsafeRawBufferPointer(rebasing: bytes[range]))?.stringValue
    }

    /// The byte range of the value at `path`, starting from the value at the start of the text.
    func locate(_ path: [ScanStep]) -> Range<Int>? {
        var start = skipSpace(0)
        for step in path {
            guard start < bytes.count else { return nil }
            switch step {
            case .key(let key):
                guard bytes[start] == Self.openBrace else { return nil }
                var i = skipSpace(start + 1)
                var found: Int?
                while i < bytes.count, bytes[i] != Self.closeBrace {
                    guard bytes[i] == Self.quote, let keyEnd = skipString(i) else { return nil }
                    let matches = stringEquals(i..<keyEnd, key)
                    i = skipSpace(keyEnd)
                    guard i < bytes.count, bytes[i] == Self.colon else { return nil }
                    i = skipSpace(i + 1)
                    if matches { found = i; break }
                    guard let valueEnd = skipValue(i) else { return nil }
                    i = skipSpace(valueEnd)
                    if i < bytes.count, bytes[i] == Self.comma { i = skipSpace(i + 1) }
                }
                guard let found else { return nil }
                start = found
            case .index(let wanted):
                guard bytes[start] == Self.openBracket else { return nil }
                var elements: [Int] = []
                var i = skipSpace(start + 1)
                var target = wanted
                var found: Int?
                while i < bytes.count, bytes[i] != Self.closeBracket {
                    if target >= 0 && elements.count == target { found = i; break }
                    elements.append(i)
                    guard let end = skipValue(i) else { return nil }
                    i = skipSpace(end)
                    if i < bytes.count, bytes[i] == Self.comma { i = skipSpace(i + 1) }
                }
                if found == nil && wanted < 0 {
                    target = elements.count + wanted
                    if target >= 0 { found = elements[target] }
                }
                guard let found else { return nil }
                start = found
            }
        }
        guard let end = skipValue(start) else { return nil }
        return start..<end
    }
}

/// A path component prepared for scanning (keys as UTF-8).
enum ScanStep {
    case key([UInt8])
    case index(Int)

    static func steps(_ path: PropertyPath) -> [ScanStep] {
        path.components.map {
            switch $0 {
            case .key(let k): return .key(Array(k.utf8))
            case .index(let i): return .index(i)
            }
        }
    }
}

internal import SofaCore
