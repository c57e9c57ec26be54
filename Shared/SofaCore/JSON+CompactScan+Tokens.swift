/// The tokens of `CompactScanner` (see JSON+CompactScan.swift): strings, with their escapes and
/// multi-byte UTF-8, and numbers, each accepted only in the exact form the compact writer gives.
extension CompactScanner {
    // MARK: Strings

    /// A string from its opening quote, written as the writer writes it: raw UTF-8 (strictly
    /// valid), escapes only where the writer puts them, none at all in a key.
    mutating func scanString(isKey: Bool) -> Bool {
        pos += 1
        var ascii = true
        while true {
            skipPlainASCII()
            guard pos < bytes.count else { return false }
            let c = bytes[pos]
            if c == CompactByte.quote {
                pos += 1
                lastStringIsASCII = ascii
                return true
            }
            if c < 0x20 { return false }
            if c < 0x80 {
                if c == CompactByte.backslash {
                    guard !isKey, scanEscape() else { return false }
                } else {
                    pos += 1
                }
                continue
            }
            ascii = false
            guard scanMultibyte(c) else { return false }
        }
    }

    /// Skips eight bytes at a time while none of them is a quote, a backslash, a control
    /// character or non-ASCII (each test below is nonzero exactly when some byte matches).
    mutating func skipPlainASCII() {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let base = UnsafeRawPointer(bytes.baseAddress!)
        while bytes.count - pos >= 8 {
            let word = (base + pos).loadUnaligned(as: UInt64.self)
            let quote = word ^ (ones &* UInt64(CompactByte.quote))
            let backslash = word ^ (ones &* UInt64(CompactByte.backslash))
            let special = (word &- ones &* 0x20) & ~word     // a byte below 0x20
                | (quote &- ones) & ~quote                     // a zero byte: a quote
                | (backslash &- ones) & ~backslash             // a zero byte: a backslash
                | word                                         // a byte from 0x80
            if special & highs != 0 { return }
            pos += 8
        }
    }

    /// `\"`, `\\`, `\b \f \n \r \t`, or `\u00XX` in lowercase hex for another control character.
    mutating func scanEscape() -> Bool {
        guard pos + 1 < bytes.count else { return false }
        switch bytes[pos + 1] {
        case CompactByte.quote, CompactByte.backslash, UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
             UInt8(ascii: "r"), UInt8(ascii: "t"):
            pos += 2
            return true
        case UInt8(ascii: "u"):
            guard bytes.count - pos >= 6, bytes[pos + 2] == CompactByte.zero, bytes[pos + 3] == CompactByte.zero else { return false }
            let high = bytes[pos + 4], low = bytes[pos + 5]
            guard high == CompactByte.zero || high == CompactByte.zero + 1 else { return false }
            let lowValue: UInt8
            switch low {
            case CompactByte.zero...CompactByte.nine: lowValue = low - CompactByte.zero
            case UInt8(ascii: "a")...UInt8(ascii: "f"): lowValue = low - UInt8(ascii: "a") + 10
            default: return false
            }
            switch (high - CompactByte.zero) << 4 | lowValue {
            case 0x08, 0x09, 0x0A, 0x0C, 0x0D: return false  // written as \b \t \n \f \r
            default:
                pos += 6
                return true
            }
        default:
            return false
        }
    }

    /// A UTF-8 sequence from its lead byte `lead` ≥ 0x80: no overlong form, no surrogate, nothing
    /// beyond U+10FFFF.
    mutating func scanMultibyte(_ lead: UInt8) -> Bool {
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; secondRange = 0xA0...0xBF
        case 0xED: length = 3; secondRange = 0x80...0x9F
        case 0xE1...0xEF: length = 3
        case 0xF0: length = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; secondRange = 0x80...0x8F
        default: return false
        }
        guard bytes.count - pos >= length, secondRange.contains(bytes[pos + 1]) else { return false }
        for i in 2..<length where bytes[pos + i] & 0xC0 != 0x80 { return false }
        pos += length
        return true
    }

    // MARK: Numbers

    func isDigit(_ i: Int) -> Bool {
        i < bytes.count && bytes[i] >= CompactByte.zero && bytes[i] <= CompactByte.nine
    }

    /// A number as the writer writes it: an integer that fits `Int64` (not `-0`), or a double
    /// that the writer does not write as an integer, in Swift's shortest form.
    mutating func scanNumber() -> Bool {
        let start = pos
        let negative = bytes[pos] == CompactByte.minus
        if negative { pos += 1 }
        let digitsStart = pos
        guard isDigit(pos) else { return false }
        if bytes[pos] == CompactByte.zero {
            pos += 1
            if isDigit(pos) { return false }  // a leading zero: not JSON
        } else {
            while isDigit(pos) { pos += 1 }
        }
        let digitCount = pos - digitsStart
        var integral = true
        if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
            integral = false
            pos += 1
            guard isDigit(pos) else { return false }
            while isDigit(pos) { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] | 0x20 == UInt8(ascii: "e") {
            integral = false
            pos += 1
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == CompactByte.minus { pos += 1 }
            guard isDigit(pos) else { return false }
            while isDigit(pos) { pos += 1 }
        }
        if integral {
            if negative && digitCount == 1 && bytes[digitsStart] == CompactByte.zero { return false }  // "-0" is written "0"
            if digitCount < 19 { return true }
            if digitCount > 19 { return false }  // beyond Int64: a double, written otherwise
            var magnitude: UInt64 = 0  // 19 digits cannot overflow UInt64
            for i in digitsStart..<pos { magnitude = magnitude * 10 + UInt64(bytes[i] - CompactByte.zero) }
            return magnitude <= UInt64(Int64.max) + (negative ? 1 : 0)
        }
        let token = UnsafeBufferPointer(rebasing: bytes[start..<pos])
        guard let value = Double(String(decoding: token, as: UTF8.self)), value.isFinite else { return false }
        // The writer writes an integral double within ±2^63 as an integer.
        if value.rounded(.towardZero) == value, value > -0x1p63, value < 0x1p63 { return false }
        return value.description.utf8.elementsEqual(token)
    }
}
