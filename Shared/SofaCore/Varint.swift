/// Unsigned LEB128 varints: seven bits per byte, least significant group first, the high bit set
/// on every byte but the last. `300` → `ac 02`; `3` → `03`.
///
/// Decoding accepts only the minimal encoding (no trailing `80 … 00` padding), so a decoded value
/// always re-encodes to the same bytes.
public enum Varint {
    public static func append(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    public static func size(_ value: UInt64) -> Int {
        var v = value
        var n = 1
        while v >= 0x80 {
            v >>= 7
            n += 1
        }
        return n
    }

    /// Reads a varint at `offset`, advancing it; nil when truncated, over 64 bits or not minimal.
    static func read(_ bytes: UnsafeBufferPointer<UInt8>, at offset: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var i = offset
        while i < bytes.count {
            let byte = bytes[i]
            i += 1
            let bits = UInt64(byte & 0x7F)
            if shift == 63 && bits > 1 { return nil }
            value |= bits << shift
            if byte < 0x80 {
                if byte == 0 && shift > 0 { return nil }  // padded, not minimal
                offset = i
                return value
            }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }
}

/// Lowercase hexadecimal.
enum Hex {
    static func append(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        for b in bytes {
            out.append(digit(b >> 4))
            out.append(digit(b & 0x0F))
        }
    }

    /// The same for an array, in one reserved step (a revID's digest, on every write's path).
    static func append(_ bytes: [UInt8], to out: inout [UInt8]) {
        out.reserveCapacity(out.count + 2 * bytes.count)
        bytes.withUnsafeBufferPointer { buffer in
            for b in buffer {
                out.append(digit(b >> 4))
                out.append(digit(b & 0x0F))
            }
        }
    }

    /// The lowercase hex digit of a value below 16.
    @inline(__always)
    static func digit(_ v: UInt8) -> UInt8 { v < 10 ? 0x30 + v : 0x57 + v }

    static func string(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Bytes for an error message: printable ASCII as is, anything else as `?`.
    static func printable(_ bytes: some Sequence<UInt8>) -> String {
        String(decoding: bytes.map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    /// The value of a lowercase hex digit; nil for anything else (uppercase included).
    @inline(__always)
    static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

extension Result {
    /// The success value, without throwing (thrown errors are costly under test harnesses that
    /// record a backtrace per throw, and `tryParse` runs on hot paths).
    var value: Success? {
        if case .success(let v) = self { return v }
        return nil
    }
}

extension Collection<UInt8> {
    /// Runs `body` over the bytes as one contiguous buffer, copying only when they are not.
    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let r = withContiguousStorageIfAvailable(body) { return r }
        return Array(self).withUnsafeBufferPointer(body)
    }
}
