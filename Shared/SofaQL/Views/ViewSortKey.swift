public import SofaCore
internal import CSofaCollation
internal import Synchronization

/// View keys as bytes whose order (memcmp, SQLite's BINARY) is CouchDB's view collation
/// (`ViewCollation`): an index on them is searched and kept without parsing a key per comparison.
///
///     null 01 · false 02 · true 03
///     number 04 + 8 bytes (the IEEE double, sign bit flipped; every bit flipped when negative)
///     string 05 + ICU's sort key (root locale, identical strength; it ends with its only 00)
///     array 06 + each element + 00 · object 07 + each member's key (as a string) and value + 00
///
/// A shorter array or object sorts first: its 00 is below every kind's first byte.
public enum ViewSortKey {
    /// `raw(key)` when `raw`, else `of(key)`: the key in its view's collation.
    public static func of(_ key: JSON, raw: Bool) -> [UInt8] { raw ? Self.raw(key) : of(key) }

    public static func of(_ key: JSON) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        append(key, to: &out)
        return out
    }

    static func append(_ value: JSON, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(0x01)
        case .bool(let flag): out.append(flag ? 0x03 : 0x02)
        case .int(let number): appendNumber(Double(number), to: &out)
        case .double(let number): appendNumber(number, to: &out)
        case .string(let text):
            out.append(0x05)
            Collator.shared.appendSortKey(of: text, to: &out)
        case .array(let items):
            out.append(0x06)
            for item in items { append(item, to: &out) }
            out.append(0x00)
        case .object(let members):
            out.append(0x07)
            for (name, member) in members {
                out.append(0x05)
                Collator.shared.appendSortKey(of: name, to: &out)
                append(member, to: &out)
            }
            out.append(0x00)
        }
    }

    /// The key's bytes in CouchDB's raw collation (a view's `"options": {"collation": "raw"}`:
    /// Erlang's order of terms), memcmp order as `of`'s:
    ///
    ///     number 01 + 8 bytes · false 02 · null 03 · true 04
    ///     object 05 + each member's key (as a string) and value + 00 · array 06 + each element + 00
    ///     string 07 + its UTF-8 bytes (00 written 00 FF) + 00 00
    public static func raw(_ key: JSON) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        appendRaw(key, to: &out)
        return out
    }

    static func appendRaw(_ value: JSON, to out: inout [UInt8]) {
        switch value {
        case .int(let number): appendNumber(Double(number), tag: 0x01, to: &out)
        case .double(let number): appendNumber(number, tag: 0x01, to: &out)
        case .bool(false): out.append(0x02)
        case .null: out.append(0x03)
        case .bool(true): out.append(0x04)
        case .object(let members):
            out.append(0x05)
            for (name, member) in members {
                appendRaw(.string(name), to: &out)
                appendRaw(member, to: &out)
            }
            out.append(0x00)
        case .array(let items):
            out.append(0x06)
            for item in items { appendRaw(item, to: &out) }
            out.append(0x00)
        case .string(let text):
            out.append(0x07)
            for byte in text.utf8 {
                out.append(byte)
                if byte == 0 { out.append(0xFF) }
            }
            out += [0x00, 0x00]
        }
    }

    static func appendNumber(_ number: Double, tag: UInt8 = 0x04, to out: inout [UInt8]) {
        out.append(tag)
        let value = number == 0 ? 0.0 : number  // -0 sorts with 0
        let bits = value.bitPattern
        let ordered = bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: ordered >> UInt64(shift))) }
    }

    /// ICU's root collator. Sort keys are asked of it one at a time.
    final class Collator: Sendable {
        static let shared = Collator()
        private let handle: Mutex<UnsafeMutableRawPointer?>

        private init() { handle = Mutex(sofa_collator_open()) }

        func appendSortKey(of text: String, to out: inout [UInt8]) {
            let utf16 = Array(text.utf16)
            handle.withLock { collator in
                guard let collator else {
                    // Without ICU's data: code point order (still a total order; logged by no one, as it never happens on Debian).
                    out += Array(text.utf8).map { $0 == 0 ? 1 : $0 }
                    out.append(0x00)
                    return
                }
                var capacity = max(32, utf16.count * 4 + 16)
                while true {
                    let start = out.count
                    out += repeatElement(0, count: capacity)
                    let length = utf16.withUnsafeBufferPointer { text in
                        out.withUnsafeMutableBufferPointer { buffer in
                            Int(sofa_collator_sort_key(collator, text.baseAddress, Int32(text.count),
                                                       buffer.baseAddress! + start, Int32(capacity)))
                        }
                    }
                    if length <= capacity {
                        out.removeLast(capacity - length)
                        return
                    }
                    out.removeLast(capacity)
                    capacity = length
                }
            }
        }
    }
}
