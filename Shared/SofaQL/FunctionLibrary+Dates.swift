internal import Foundation
internal import SofaCore

/// Date functions. Instants are milliseconds since 1970-01-01T00:00:00Z; texts are ISO-8601 as
/// `DateFields` describes; time zones are offsets in minutes east of UTC; `fmt` is an example
/// date or a `%` token format choosing the parts to write (see `DateFormat`). Zones are written
/// as LiteCore writes them: `Z` at offset 0, else `-0500` (`-05:00` when a format asks so).
///
///     str_to_millis(s)                  '2018-10-23T11:33:01-0700' → 1540319581000
///     str_to_utc(s [, fmt])             '2018-10-23T11:33:01-0700' → '2018-10-23T18:33:01Z'
///     str_to_tz(s, tz [, fmt])          ('2024-01-10T14:31:14Z', -300) → '2024-01-10T09:31:14-0500'
///     millis_to_str(ms [, fmt])         in the local time zone
///     millis_to_utc(ms [, fmt])         1540319581123 → '2018-10-23T18:33:01.123Z'
///     millis_to_tz(ms, tz [, fmt])      (1704897074000, 690) → '2024-01-11T02:01:14+1130'
///     date_diff_str(s1, s2, part)       s1 − s2 in parts, e.g. ('2018-03-01', '2018-02-01', 'day') → 28
///     date_diff_millis(ms1, ms2, part)
///     date_add_str(s, n, part [, fmt])  ('2016-01-01T00:00:00-07:00', 1, 'day') → '2016-01-02T00:00:00-0700'
///     date_add_millis(ms, n, part)
///
/// Parts: millisecond, second, minute, hour, day, week, month, quarter, year, decade, century,
/// millennium. `str_to_millis` needs a date; the others also take a time alone (on 2000-01-01).
/// A text without a zone is local time for `str_to_*` (as LiteCore reads it on the device) and
/// UTC for `date_diff_str`/`date_add_str` (whose result keeps the input's zone).
///
/// MISSING in → MISSING; invalid dates, non-numbers, unknown parts and zones beyond ±18 hours
/// (ISO-8601's limit) → null. Departures:
/// LiteCore answers null for MISSING in `millis_to_*`/`str_to_*`, and MISSING for invalid input
/// in `date_diff_*`/`date_add_*`; the library's conventions are kept instead.
extension FunctionLibrary {
    static func dates(localTimeZone zone: TimeZone) -> [SQLFunction] {
        [
            function("date_add_millis", 3...3) { args in
                if args.contains(where: \.isMissing) { return .missing }
                guard let millis = args[0].truncatedInteger, let amount = args[1].truncatedInteger,
                      let part = datePart(args[2]),
                      let result = DateFields(millis: millis).adding(amount, part) else { return .null }
                return .integer(result)
            },
            function("date_add_str", 3...4) { args in
                if args.prefix(3).contains(where: \.isMissing) { return .missing }
                guard let start = dateText(args[0], dateRequired: false), let amount = args[1].truncatedInteger,
                      let part = datePart(args[2]), let result = start.adding(amount, part) else { return .null }
                return formatted(result, offset: start.zone ?? 0, args, formatAt: 3)
            },
            function("date_diff_millis", 3...3) { args in
                if args.contains(where: \.isMissing) { return .missing }
                guard let a = args[0].truncatedInteger, let b = args[1].truncatedInteger, let part = datePart(args[2]),
                      let diff = DateFields(millis: a).difference(from: DateFields(millis: b), in: part)
                else { return .null }
                return .integer(diff)
            },
            function("date_diff_str", 3...3) { args in
                if args.contains(where: \.isMissing) { return .missing }
                guard let a = dateText(args[0], dateRequired: false), let b = dateText(args[1], dateRequired: false),
                      let part = datePart(args[2]), let diff = a.difference(from: b, in: part) else { return .null }
                return .integer(diff)
            },
            function("millis_to_str", 1...2) { args in
                if args[0].isMissing { return .missing }
                guard let millis = args[0].truncatedInteger else { return .null }
                return formatted(millis, offset: DateFields.offset(atInstant: millis, in: zone), args, formatAt: 1)
            },
            function("millis_to_tz", 2...3) { args in
                if args.prefix(2).contains(where: \.isMissing) { return .missing }
                guard let millis = args[0].truncatedInteger, let offset = minutesOffset(args[1]) else { return .null }
                return formatted(millis, offset: offset, args, formatAt: 2)
            },
            function("millis_to_utc", 1...2) { args in
                if args[0].isMissing { return .missing }
                guard let millis = args[0].truncatedInteger else { return .null }
                return formatted(millis, offset: 0, args, formatAt: 1)
            },
            function("str_to_millis", 1...1) { args in
                if args[0].isMissing { return .missing }
                guard let fields = dateText(args[0], dateRequired: true) else { return .null }
                return .integer(fields.instant(localTimeZone: zone))
            },
            function("str_to_tz", 2...3) { args in
                if args.prefix(2).contains(where: \.isMissing) { return .missing }
                guard let fields = dateText(args[0], dateRequired: false), let offset = minutesOffset(args[1])
                else { return .null }
                return formatted(fields.instant(localTimeZone: zone), offset: offset, args, formatAt: 2)
            },
            function("str_to_utc", 1...2) { args in
                if args[0].isMissing { return .missing }
                guard let fields = dateText(args[0], dateRequired: false) else { return .null }
                return formatted(fields.instant(localTimeZone: zone), offset: 0, args, formatAt: 1)
            },
        ]
    }

    private static func dateText(_ value: SQLValue, dateRequired: Bool) -> DateFields? {
        guard case .text(let text) = value else { return nil }
        return DateFields.tryParse(text, dateRequired: dateRequired)
    }

    private static func datePart(_ value: SQLValue) -> DatePart? {
        guard case .text(let name) = value else { return nil }
        return DatePart(name: name)
    }

    /// A zone offset argument in minutes (±18 hours at most, as real zones are).
    private static func minutesOffset(_ value: SQLValue) -> Int? {
        guard let minutes = value.truncatedInteger, abs(minutes) <= 18 * 60 else { return nil }
        return Int(minutes)
    }

    /// `millis` written at `offset`, in the format `args[formatAt]` describes (see `DateFormat`);
    /// the full ISO-8601 form when there is none or it describes none, as LiteCore falls back.
    private static func formatted(_ millis: Int64, offset: Int, _ args: [SQLValue], formatAt index: Int) -> SQLValue {
        var format = DateFormat.iso8601
        if index < args.count, case .text(let text) = args[index], let given = DateFormat.parse(text) {
            format = given
        }
        return format.write(millis, offset: offset).map(SQLValue.text) ?? .null
    }
}
