/// The units `date_diff_*` and `date_add_*` count in (case-insensitive in queries).
enum DatePart: String, Sendable, CaseIterable {
    case millisecond, second, minute, hour, day, week, month, quarter, year, decade, century, millennium

    init?(name: String) { self.init(rawValue: name.lowercased()) }
}

/// Date arithmetic, following LiteCore (which follows Couchbase Server's N1QL).
///
/// A difference counts boundaries crossed between the two dates' written fields, not elapsed
/// time: from 23:59:01 to 00:01:59 the next day is 1 day, 1 month if that crossed a month's end,
/// and 1 year if it crossed a year's. The later date (by instant) is taken first and the sign
/// restored after, e.g. date_diff_str('2014-12-01', '2015-01-01', 'quarter') is -1. Hours,
/// minutes and seconds compare the fields as written (`02:00-07:00` minus `00:00-08:00` is
/// 2 hours); days count calendar days between the instants. Texts without a zone are read as UTC.
///
/// Adding months (and quarters, years, decades, centuries, millennia) keeps the day of the month
/// and lets it run over: 2018-01-31 + 1 month is 2018-03-03, as in N1QL. Adding the fixed units
/// adds their length in milliseconds.
extension DateFields {
    /// `self − other` in `part`s; nil on overflow.
    func difference(from other: DateFields, in part: DatePart) -> Int64? {
        var (a, b) = (self, other)
        var (ta, tb) = (a.utcInstant, b.utcInstant)
        var sign: Int64 = 1
        if ta < tb {
            swap(&a, &b)
            swap(&ta, &tb)
            sign = -1
        }
        let years = a.year - b.year
        var days = years * 365 + Self.dayOfYear(ta) - Self.dayOfYear(tb)
        if years != 0 { days += Self.leapYearsBefore(a.year) - Self.leapYearsBefore(b.year) }

        // Each finer unit is the coarser count times its size plus the difference of its field.
        func finer(_ coarse: Int?, _ size: Int, _ delta: Int) -> Int? {
            guard let coarse else { return nil }
            let (product, overflow1) = coarse.multipliedReportingOverflow(by: size)
            let (sum, overflow2) = product.addingReportingOverflow(delta)
            return overflow1 || overflow2 ? nil : sum
        }
        let hours = finer(days, 24, a.hour - b.hour)
        let minutes = finer(hours, 60, a.minute - b.minute)
        let seconds = finer(minutes, 60, a.second - b.second)
        let millis = finer(seconds, 1000, a.millisecond - b.millisecond)

        let result: Int?
        switch part {
        case .millisecond: result = millis
        case .second: result = seconds
        case .minute: result = minutes
        case .hour: result = hours
        case .day: result = days
        case .week: result = days / 7
        case .month: result = abs((a.year * 12 + a.month) - (b.year * 12 + b.month))
        case .quarter: result = (a.year * 4 + Self.quarter(a.month)) - (b.year * 4 + Self.quarter(b.month))
        case .year: result = years
        case .decade: result = years / 10
        case .century: result = years / 100
        case .millennium: result = years / 1000
        }
        return result.map { Int64($0) * sign }
    }

    /// The instant `amount` `part`s after these fields (a zone-less text read as UTC); nil on
    /// overflow.
    func adding(_ amount: Int64, _ part: DatePart) -> Int64? {
        let amount = Int(amount)
        var timeOfDay = hour * 3_600_000 + (minute - (zone ?? 0)) * 60_000 + second * 1000 + millisecond
        var (y, m) = (year, month)
        func addTime(_ unit: Int) -> Bool {
            let (product, overflow1) = amount.multipliedReportingOverflow(by: unit)
            let (sum, overflow2) = timeOfDay.addingReportingOverflow(product)
            timeOfDay = sum
            return !(overflow1 || overflow2)
        }
        func addMonths(_ unit: Int) -> Bool {
            let (product, overflow1) = amount.multipliedReportingOverflow(by: unit)
            let (total, overflow2) = (y * 12 + m - 1).addingReportingOverflow(product)
            y = DateFields.floorDiv(total, 12)
            m = total - y * 12 + 1
            return !(overflow1 || overflow2)
        }
        let ok: Bool
        switch part {
        case .millisecond: ok = addTime(1)
        case .second: ok = addTime(1000)
        case .minute: ok = addTime(60_000)
        case .hour: ok = addTime(3_600_000)
        case .day: ok = addTime(Self.millisPerDay)
        case .week: ok = addTime(7 * Self.millisPerDay)
        case .month: ok = addMonths(1)
        case .quarter: ok = addMonths(3)
        case .year: ok = addMonths(12)
        case .decade: ok = addMonths(120)
        case .century: ok = addMonths(1200)
        case .millennium: ok = addMonths(12_000)
        }
        // Beyond ±300 million years no instant fits in Int64 milliseconds anyway.
        guard ok, abs(y) <= 300_000_000 else { return nil }
        let (dayMillis, overflow1) = Self.days(year: y, month: m, day: day).multipliedReportingOverflow(by: Self.millisPerDay)
        let (result, overflow2) = dayMillis.addingReportingOverflow(timeOfDay)
        return overflow1 || overflow2 ? nil : Int64(result)
    }

    /// 1 on January 1st of the instant's year (in UTC).
    static func dayOfYear(_ millis: Int64) -> Int {
        let days = floorDiv(Int(millis), millisPerDay)
        return days - Self.days(year: civil(days: days).year, month: 1, day: 1) + 1
    }

    static func quarter(_ month: Int) -> Int { (month + 2) / 3 }

    /// Leap years from year 0 (or 1) up to, not including, `year` — N1QL's count, which the
    /// day difference adds across years.
    static func leapYearsBefore(_ year: Int) -> Int {
        let y = year > 0 ? year - 1 : year + 1
        return y / 4 - y / 100 + y / 400
    }
}
