internal import Foundation

/// A date-time as ISO-8601 text spells it, before it is pinned to an instant: the text codec
/// behind the date functions, following LiteCore's (Fleece's `ParseDate`) grammar.
///
///     [-]YYYY-MM-DD [sep HH:MM[:SS[.f…]]] [zone]        sep: any run of spaces and 'T's
///     HH:MM[:SS[.f…]] [zone]                            time only (lenient parse; date 2000-01-01)
///     zone: spaces, then Z | z | ±HH:MM | ±HHMM (HH ≤ 14), then spaces
///
/// e.g. `2018-10-23T11:33:01.5-0700` is 2018-10-23 11:33:01.500 at −07:00;
/// `2018-10-23` is midnight with no time part and no zone. Days are checked against the month
/// (`2018-02-29` is invalid, `2016-02-29` valid); hours run to 24; fractions round to
/// milliseconds. A text without a zone is read in a local time zone by the caller.
///
/// Results are written by `DateFormat`.
struct DateFields: Sendable, Equatable {
    var year = 2000, month = 1, day = 1
    var hour = 0, minute = 0, second = 0
    /// 0…1000 (a fraction like .9996 rounds up to 1000).
    var millisecond = 0
    var hasDate = false
    var hasTime = false
    /// Minutes east of UTC, when the text gave a zone.
    var zone: Int?

    static let millisPerDay = 86_400_000

    /// Parses `text`; a time-only text is accepted unless `dateRequired`.
    static func tryParse(_ text: String, dateRequired: Bool) -> DateFields? {
        var cursor = Cursor(bytes: Array(text.utf8))
        var fields = DateFields()
        if cursor.date(into: &fields) {
            while let c = cursor.peek, Cursor.isSpace(c) || c == UInt8(ascii: "T") { cursor.index += 1 }
            if cursor.atEnd { return fields }
        } else {
            guard !dateRequired else { return nil }
            cursor.index = 0
        }
        return cursor.timeAndZone(into: &fields) ? fields : nil
    }

    /// The fields of instant `millis` in UTC.
    init(millis: Int64) {
        let days = Self.floorDiv(Int(millis), Self.millisPerDay)
        let (y, m, d) = Self.civil(days: days)
        var rest = Int(millis) - days * Self.millisPerDay
        (year, month, day) = (y, m, d)
        hour = rest / 3_600_000
        rest %= 3_600_000
        minute = rest / 60_000
        rest %= 60_000
        (second, millisecond) = (rest / 1000, rest % 1000)
        (hasDate, hasTime, zone) = (true, true, 0)
    }

    init() {}

    /// Milliseconds since the epoch of the wall time, as if it were UTC.
    var wallMillis: Int {
        Self.days(year: year, month: month, day: day) * Self.millisPerDay
            + hour * 3_600_000 + minute * 60_000 + second * 1000 + millisecond
    }

    /// The instant, reading a zone-less text in `localTimeZone` (LiteCore uses the device's).
    func instant(localTimeZone: TimeZone) -> Int64 {
        let wall = wallMillis
        let offset = zone ?? Self.offset(atWallTime: wall, in: localTimeZone)
        return Int64(wall - offset * 60_000)
    }

    /// The instant, reading a zone-less text as UTC.
    var utcInstant: Int64 { Int64(wallMillis - (zone ?? 0) * 60_000) }

    // MARK: Time zones

    /// Minutes east of UTC that `zone` is at the instant `millis`.
    static func offset(atInstant millis: Int64, in zone: TimeZone) -> Int {
        floorDiv(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(millis) / 1000)), 60)
    }

    /// Minutes east of UTC that `zone` is at when its clocks show `wall` (as `mktime` resolves
    /// it: a wall time in a transition takes the offset in force just before it).
    static func offset(atWallTime wall: Int, in zone: TimeZone) -> Int {
        let asUTC = Date(timeIntervalSince1970: Double(wall) / 1000)
        let guess = zone.secondsFromGMT(for: asUTC)
        let seconds = zone.secondsFromGMT(for: asUTC.addingTimeInterval(-Double(guess)))
        return floorDiv(seconds, 60)
    }

    // MARK: Proleptic Gregorian calendar

    /// Days since 1970-01-01 of a date; a day past the month's end counts on into the next
    /// month (January 31 + 1 month is "February 31", that is March 3 or 2).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = floorDiv(y, 400)
        let yearOfEra = y - era * 400
        let monthFromMarch = (month + 9) % 12
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01.
    static func civil(days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = floorDiv(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func floorDiv(_ a: Int, _ b: Int) -> Int {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }
}

/// A read position in a date text.
private struct Cursor {
    let bytes: [UInt8]
    var index = 0

    var atEnd: Bool { index >= bytes.count }
    var peek: UInt8? { atEnd ? nil : bytes[index] }

    /// C's `isspace`.
    static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || (0x09...0x0D).contains(c) }

    /// Exactly `count` digits making a number in `range`.
    mutating func number(_ count: Int, _ range: ClosedRange<Int>) -> Int? {
        guard index + count <= bytes.count else { return nil }
        var value = 0
        for c in bytes[index..<(index + count)] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) else { return nil }
            value = value * 10 + Int(c - UInt8(ascii: "0"))
        }
        guard range.contains(value) else { return nil }
        index += count
        return value
    }

    mutating func skip(_ c: Character) -> Bool {
        guard let ascii = c.asciiValue, peek == ascii else { return false }
        index += 1
        return true
    }

    mutating func skipSpaces() {
        while let c = peek, Self.isSpace(c) { index += 1 }
    }

    /// `[-]YYYY-MM-DD`, with the day checked against the month.
    mutating func date(into fields: inout DateFields) -> Bool {
        let negative = skip("-")
        guard let y = number(4, 0...9999), skip("-"), let m = number(2, 1...12), skip("-"),
              let d = number(2, 1...31) else { return false }
        switch m {
        case 2: guard d <= (DateFields.isLeap(y) ? 29 : 28) else { return false }
        case 4, 6, 9, 11: guard d <= 30 else { return false }
        default: break
        }
        (fields.year, fields.month, fields.day, fields.hasDate) = (negative ? -y : y, m, d, true)
        return true
    }

    /// `HH:MM[:SS[.f…]]` and an optional zone, to the end of the text.
    mutating func timeAndZone(into fields: inout DateFields) -> Bool {
        guard let h = number(2, 0...24), skip(":"), let m = number(2, 0...59) else { return false }
        var s = 0
        var fraction = 0.0
        if skip(":") {
            guard let seconds = number(2, 0...59) else { return false }
            s = seconds
            if peek == UInt8(ascii: "."), index + 1 < bytes.count,
               (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index + 1]) {
                index += 1
                var scale = 1.0
                while let c = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) {
                    fraction = fraction * 10 + Double(c - UInt8(ascii: "0"))
                    scale *= 10
                    index += 1
                }
                fraction /= scale
            }
        }
        (fields.hour, fields.minute, fields.second) = (h, m, s)
        fields.millisecond = Int((fraction * 1000).rounded())
        fields.hasTime = true
        skipSpaces()
        if let c = peek {
            if c == UInt8(ascii: "Z") || c == UInt8(ascii: "z") {
                index += 1
                fields.zone = 0
            } else if c == UInt8(ascii: "+") || c == UInt8(ascii: "-") {
                index += 1
                guard let zh = number(2, 0...14) else { return false }
                _ = skip(":")
                guard let zm = number(2, 0...59) else { return false }
                fields.zone = (c == UInt8(ascii: "-") ? -1 : 1) * (zh * 60 + zm)
            } else {
                return false
            }
            skipSpaces()
        }
        return atEnd
    }
}
