import Testing
@testable import SofaQL

/// Formats of the date functions, read as LiteCore reads them (`DateFormat`): a format given by
/// example writes the result in the example's shape, a `%` token format in the tokens' shape, and
/// anything else falls back to ISO-8601 with the zone written `-0500`.
@Suite struct DateFormatTests {
    /// 2024-01-10T14:31:14.123Z, seen at −05:00: 2024-01-10 09:31:14.123.
    static let instant: Int64 = 1_704_897_074_123

    @Test(arguments: [
        // By example: the parts given, with or without a fraction and a zone
        ("1111-11-11T11:11:11Z", "2024-01-10T09:31:14-0500"),
        ("1111-11-11T11:11:11.111Z", "2024-01-10T09:31:14.123-0500"),
        ("1111-11-11T11:11:11", "2024-01-10T09:31:14"),
        ("1111-11-11 11:11:11.111", "2024-01-10 09:31:14.123"),
        ("1111-11-11T11:11:11+00:00", "2024-01-10T09:31:14-05:00"),
        ("1111-11-11T11:11:11.111-0000", "2024-01-10T09:31:14.123-0500"),
        ("11:11:11", "09:31:14"),
        ("11:11:11.111", "09:31:14.123"),
        ("11:11:11Z", "09:31:14-0500"),
        ("11:11:11.111+11:11", "09:31:14.123-05:00"),
        ("1111-11-11", "2024-01-10"),
        ("1111/11/11", "2024-01-10"),
        // Tokens
        ("%F", "2024-01-10"),
        ("%Y-%m-%d", "2024-01-10"),
        ("%Y/%m/%d", "2024-01-10"),
        ("%F %T%s", "2024-01-10 09:31:14.123"),
        ("%T%Ez", "09:31:14.123-05:00"),
        ("%FT%T%Ez", "2024-01-10T09:31:14.123-05:00"),
        ("%F %T%s%z", "2024-01-10 09:31:14.123-0500"),
        ("%H:%M:%S", "09:31:14"),
        ("%H:%M:%S%s", "09:31:14.123"),
        // LiteCore's reader takes a zone token only when two characters follow its '%': `%z`
        // right after `%T` is not read (nor is another token there), `%Ez` and `%s%z` are.
        ("%FT%T%z", "2024-01-10T09:31:14.123"),
        ("%T%z", "09:31:14.123"),
        ("%FT%T%q", "2024-01-10T09:31:14.123"),
        // Not formats: the full ISO-8601 form
        ("", "2024-01-10T09:31:14.123-0500"),
        ("invalid", "2024-01-10T09:31:14.123-0500"),
        ("1111-11-11Z", "2024-01-10T09:31:14.123-0500"),
        ("1111-11-1111:11:11", "2024-01-10T09:31:14.123-0500"),
        ("11:11", "2024-01-10T09:31:14.123-0500"),
        ("11:11:11.1", "2024-01-10T09:31:14.123-0500"),
        ("%x", "2024-01-10T09:31:14.123-0500"),
        ("%Y-%d", "2024-01-10T09:31:14.123-0500"),
        ("%FT%T%qq", "2024-01-10T09:31:14.123-0500"),
    ])
    func shapes(format: String, expected: String) {
        let parsed = DateFormat.parse(format) ?? .iso8601
        #expect(parsed.write(Self.instant, offset: -300) == expected, "\(format)")
    }

    /// Zero milliseconds are not written; offset 0 is `Z` whichever way a zone is written; other
    /// offsets are `+HHMM` or `+HH:MM`.
    @Test func zonesAndWholeSeconds() throws {
        let colon = try #require(DateFormat.parse("1111-11-11T11:11:11.111+00:00"))
        let plain = try #require(DateFormat.parse("1111-11-11T11:11:11.111Z"))
        #expect(colon.write(1_704_897_074_000, offset: 0) == "2024-01-10T14:31:14Z")
        #expect(plain.write(1_704_897_074_000, offset: 690) == "2024-01-11T02:01:14+1130")
        #expect(colon.write(1_704_897_074_000, offset: 690) == "2024-01-11T02:01:14+11:30")
        #expect(DateFormat.iso8601.write(1_704_897_074_000, offset: -30) == "2024-01-10T14:01:14-0030")
    }

    /// Through the functions that take a format and a zone.
    @Test(arguments: [
        FunctionCall("millis_to_tz", "1704897074123", "-300", "'1111-11-11T11:11:11Z'", is: "'2024-01-10T09:31:14-0500'"),
        FunctionCall("millis_to_tz", "1704897074123", "690", "'%F %T%s'", is: "'2024-01-11 02:01:14.123'"),
        FunctionCall("millis_to_tz", "1704897074123", "690", "'%T%Ez'", is: "'02:01:14.123+11:30'"),
        FunctionCall("millis_to_tz", "1704897074123", "690", is: "'2024-01-11T02:01:14.123+1130'"),
        FunctionCall("str_to_tz", "'2024-01-10T14:31:14Z'", "-300", "'11:11:11'", is: "'09:31:14'"),
        FunctionCall("str_to_tz", "'2024-01-10T14:31:14.5Z'", "-300", "'11:11:11.111Z'", is: "'09:31:14.500-0500'"),
        FunctionCall("str_to_tz", "'2024-01-10T14:31:14Z'", "690", is: "'2024-01-11T02:01:14+1130'"),
        FunctionCall("str_to_utc", "'2024-01-10T09:31:14-05:00'", "'%FT%T%Ez'", is: "'2024-01-10T14:31:14Z'"),
        FunctionCall("millis_to_utc", "1704897074123", "'%F'", is: "'2024-01-10'"),
        FunctionCall("date_add_str", "'2024-01-10T09:31:14-0500'", "1", "'day'", is: "'2024-01-11T09:31:14-0500'"),
        FunctionCall("date_add_str", "'2024-01-10T09:31:14+11:30'", "1", "'hour'", "'%T%Ez'", is: "'10:31:14+11:30'"),
        FunctionCall("date_add_str", "'2024-01-10T09:31:14+11:30'", "1", "'hour'", "'1111-11-11 11:11:11'", is: "'2024-01-10 10:31:14'"),
    ])
    func throughFunctions(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }
}
