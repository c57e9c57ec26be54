/// The shape a date function writes its result in, read from its format argument as LiteCore
/// reads it. A format is either an example date or a run of `%` tokens:
///
///     example                          tokens                 writes
///     1111-11-11   (or 1111/11/11)     %F, %Y-%m-%d, %Y/%m/%d  2024-01-10
///     11:11:11                         %H:%M:%S                09:31:14
///     11:11:11.111                     %T, %H:%M:%S%s          09:31:14.123 (.mmm only if not zero)
///     …Z or …+0000                     %s%z                    Z at offset 0, else -0500
///     …+00:00                          %Ez                     Z at offset 0, else -05:00
///     1111-11-11T11:11:11Z             %FT%T%Ez                date, 'T' or ' ', time, zone
///
/// An example is read from its end: a zone (`Z`, or `±` five or six characters from the end),
/// then a time (`:` three and six characters from its end; `.` four from the end for a
/// fraction), then the separator (`T` or a space) and the date (`-` or `/` three and six
/// characters from its end). A zone needs a time, and a date with a time needs the separator.
/// Token formats follow LiteCore's reader too, quirks included: `%T` stands for the time with
/// its milliseconds; a zone token is read only when two characters follow the `%` after the
/// time (`%T%Ez` and `%T%s%z` write a zone, `%T%z` does not); the date is always written with `-`. No format, or one that reads as none of these, is the
/// full ISO-8601 form: `2024-01-10T09:31:14.123-0500`, `Z` at offset 0.
struct DateFormat: Sendable, Equatable {
    enum Zone: Sendable { case noColon, colon }

    var hasDate = false
    /// `T` or a space, between a date and a time.
    var separator: Character?
    var hasTime = false
    /// Whether milliseconds are written (when not zero).
    var millis = false
    var zone: Zone?

    /// LiteCore's default, `%FT%T%z` in effect.
    static let iso8601 = DateFormat(hasDate: true, separator: "T", hasTime: true, millis: true, zone: .noColon)

    /// The format `text` describes, or nil when it describes none.
    static func parse(_ text: String) -> DateFormat? {
        let bytes = Array(text.utf8)
        guard let first = bytes.first else { return nil }
        return first == UInt8(ascii: "%") ? tokens(bytes) : example(bytes[...])
    }

    // MARK: Writing

    /// `instant` (milliseconds since 1970) seen at `offset` minutes east of UTC, in this shape;
    /// nil when out of range.
    func write(_ instant: Int64, offset: Int) -> String? {
        let (shift, overflow) = instant.addingReportingOverflow(Int64(offset) * 60_000)
        guard !overflow else { return nil }
        let local = DateFields(millis: shift)
        var out = ""
        if hasDate {
            if local.year < 0 { out += "-" }
            out += Self.pad(abs(local.year), 4) + "-" + Self.pad(local.month, 2) + "-" + Self.pad(local.day, 2)
        }
        guard hasTime else { return out }
        if hasDate, let separator { out.append(separator) }
        out += Self.pad(local.hour, 2) + ":" + Self.pad(local.minute, 2) + ":" + Self.pad(local.second, 2)
        if millis && local.millisecond != 0 { out += "." + Self.pad(local.millisecond, 3) }
        if let zone {
            if offset == 0 {
                out += "Z"
            } else {
                let hours = Self.pad(abs(offset) / 60, 2), minutes = Self.pad(abs(offset) % 60, 2)
                out += (offset < 0 ? "-" : "+") + hours + (zone == .colon ? ":" : "") + minutes
            }
        }
        return out
    }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let digits = String(n)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }

    // MARK: Examples (`1111-11-11T11:11:11.111Z`)

    private static func example(_ whole: ArraySlice<UInt8>) -> DateFormat? {
        var rest = whole
        func at(_ fromEnd: Int) -> UInt8? { rest.count >= fromEnd ? rest[rest.endIndex - fromEnd] : nil }
        var format = DateFormat()
        // The zone.
        if at(1) == UInt8(ascii: "Z") {
            format.zone = .noColon
            rest = rest.dropLast()
        } else if rest.count >= 5 {
            let colon = at(3) == UInt8(ascii: ":")
            let width = colon ? 6 : 5
            if let sign = at(width), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                format.zone = colon ? .colon : .noColon
                rest = rest.dropLast(width)
            }
        }
        // The time.
        if rest.count >= 8 {
            let fraction = at(4) == UInt8(ascii: ".")
            if !fraction || rest.count >= 12 {
                var time = rest
                if fraction { time = time.dropLast(4) }
                let end = time.endIndex
                if time[end - 3] == UInt8(ascii: ":"), time[end - 6] == UInt8(ascii: ":") {
                    format.hasTime = true
                    format.millis = fraction
                    rest = time.dropLast(8)
                }
            }
        }
        // The separator between a date and a time.
        if format.hasTime, let last = rest.last {
            guard last == UInt8(ascii: " ") || last == UInt8(ascii: "T") else { return nil }
            format.separator = Character(Unicode.Scalar(last))
            rest = rest.dropLast()
        }
        // The date.
        if rest.count >= 10 {
            let a = rest[rest.endIndex - 3], b = rest[rest.endIndex - 6]
            format.hasDate = a == b && (a == UInt8(ascii: "-") || a == UInt8(ascii: "/"))
        }
        if format.separator != nil && !(format.hasDate && format.hasTime) { return nil }
        if format.zone != nil && !format.hasTime { return nil }
        if format.hasDate && format.hasTime && format.separator == nil { return nil }
        guard format.hasDate || format.hasTime else { return nil }
        if !format.hasTime { format.zone = nil }
        return format
    }

    // MARK: Tokens (`%FT%T%Ez`)

    private static func tokens(_ bytes: [UInt8]) -> DateFormat? {
        var reader = Reader(bytes: bytes[...])
        guard reader.count >= 2 else { return nil }
        reader.skip(1)
        var format = DateFormat()
        // The date: %F, %Y-%m-%d or %Y/%m/%d.
        if reader.peek == UInt8(ascii: "F") {
            reader.skip(1)
            format.hasDate = true
        } else if reader.peek == UInt8(ascii: "Y") {
            reader.skip(1)
            let rest = reader.read(atMost: 6)
            guard rest == Array("-%m-%d".utf8) || rest == Array("/%m/%d".utf8) else { return nil }
            format.hasDate = true
        }
        if reader.isEmpty { return format.hasDate ? format : nil }
        if format.hasDate {
            if let c = reader.peek, c == UInt8(ascii: " ") || c == UInt8(ascii: "T") {
                format.separator = Character(Unicode.Scalar(c))
                reader.skip(1)
            }
            guard reader.readByte() == UInt8(ascii: "%") else { return nil }
        }
        if reader.count < 2 { return format.hasDate ? format.dateOnly : nil }
        // The time: %T (with milliseconds) or %H:%M:%S.
        let token = reader.readByte()
        if token == UInt8(ascii: "T") {
            (format.hasTime, format.millis) = (true, true)
        } else if token == UInt8(ascii: "H") {
            guard reader.read(atMost: 6) == Array(":%M:%S".utf8) else { return nil }
            (format.hasTime, format.millis) = (true, false)
        }
        if reader.count < 2 { return format.finished }
        guard reader.readByte() == UInt8(ascii: "%") else { return nil }
        // Milliseconds: %s or %.s.
        if format.hasTime {
            if reader.peek == UInt8(ascii: "s") {
                format.millis = true
                reader.skip(1)
            } else if reader.peek == UInt8(ascii: ".") {
                if reader.read(atMost: 2) == Array(".s".utf8) { format.millis = true }
            }
        }
        if reader.count < 2 { return format.finished }
        // The zone: %z or %Ez, after whatever comes up to the next '%'.
        reader.skip(toAfter: UInt8(ascii: "%"))
        let zone = reader.read(atMost: 2)
        if zone == Array("z".utf8) {
            format.zone = .noColon
        } else if zone == Array("Ez".utf8) {
            format.zone = .colon
        } else {
            return nil
        }
        return format.finished
    }

    private var dateOnly: DateFormat { DateFormat(hasDate: true) }

    /// What a token format read so far amounts to: a date with a time needs their separator.
    private var finished: DateFormat? {
        if hasDate && hasTime { return separator == nil ? nil : self }
        if hasDate { return dateOnly }
        return hasTime ? DateFormat(hasTime: true, millis: millis, zone: zone) : nil
    }

    private struct Reader {
        var bytes: ArraySlice<UInt8>
        var count: Int { bytes.count }
        var isEmpty: Bool { bytes.isEmpty }
        var peek: UInt8? { bytes.first }
        mutating func skip(_ n: Int) { bytes = bytes.dropFirst(n) }
        mutating func readByte() -> UInt8? { bytes.popFirst() }
        mutating func read(atMost n: Int) -> [UInt8] {
            let taken = Array(bytes.prefix(n))
            bytes = bytes.dropFirst(n)
            return taken
        }
        /// Skips past the next `byte`; stays put when there is none.
        mutating func skip(toAfter byte: UInt8) {
            if let i = bytes.firstIndex(of: byte) { bytes = bytes[(i + 1)...] }
        }
    }
}
