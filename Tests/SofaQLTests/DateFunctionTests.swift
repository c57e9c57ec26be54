import Foundation
import Testing
@testable import SofaQL

/// LiteCore's date tables ("Query Date Functions", "Query date diff/add string/millis", from
/// `QueryTest.cc`), evaluated with the local time zone pinned to UTC unless a test says otherwise.
@Suite struct DateFunctionTests {
    @Test(arguments: [
        FunctionCall("str_to_millis", "''", is: "null"),
        FunctionCall("str_to_millis", "'1970-01-01T00:00:00Z'", is: "0"),
        FunctionCall("str_to_millis", "'1944-06-06T06:30:00+01:00'", is: "-806956200000"),
        FunctionCall("str_to_millis", "'2018-10-23T11:33:01-0700'", is: "1540319581000"),
        FunctionCall("str_to_millis", "'2018-10-23T18:33:01Z'", is: "1540319581000"),
        FunctionCall("str_to_millis", "'2018-10-23T18:33:01.123Z'", is: "1540319581123"),
        FunctionCall("str_to_millis", "'2018-10-23 18:33:01Z'", is: "1540319581000"),
        FunctionCall("str_to_millis", "'2018-10-23T18:33Z'", is: "1540319580000"),
        FunctionCall("str_to_millis", "'2018-10-23T18:33:01.1234z'", is: "1540319581123"),
        FunctionCall("str_to_millis", "'2018-10-23T18:33:01 +01:00  '", is: "1540315981000"),
        FunctionCall("str_to_millis", "'2018-10-23'", is: "1540252800000"),
        FunctionCall("str_to_millis", "'18:33:01Z'", is: "null"),  // needs a date
        FunctionCall("str_to_millis", "'2018-10-23T18:33:01+15:00'", is: "null"),
        FunctionCall("str_to_millis", "'2018-10-23T18:33:01Zulu'", is: "null"),
        FunctionCall("str_to_millis", "99", is: "null"),
        FunctionCall("str_to_millis", "MISSING", is: "MISSING"),
        // Month and day ranges; 30 days hath September…
        FunctionCall("str_to_millis", "'2000-00-01T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2000-13-01T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2000-01-00T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2000-01-32T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2018-01-31T00:00:00Z'", is: "1517356800000"),
        FunctionCall("str_to_millis", "'2018-02-31T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2018-03-31T00:00:00Z'", is: "1522454400000"),
        FunctionCall("str_to_millis", "'2018-04-31T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2018-05-31T00:00:00Z'", is: "1527724800000"),
        FunctionCall("str_to_millis", "'2018-06-31T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2018-07-31T00:00:00Z'", is: "1532995200000"),
        FunctionCall("str_to_millis", "'2018-08-31T00:00:00Z'", is: "1535673600000"),
        FunctionCall("str_to_millis", "'2018-09-31T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2018-10-31T00:00:00Z'", is: "1540944000000"),
        FunctionCall("str_to_millis", "'2018-11-31T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2018-12-31T00:00:00Z'", is: "1546214400000"),
        // February is complicated
        FunctionCall("str_to_millis", "'2000-02-29T00:00:00Z'", is: "951782400000"),
        FunctionCall("str_to_millis", "'2016-02-29T00:00:00Z'", is: "1456704000000"),
        FunctionCall("str_to_millis", "'2018-02-29T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2100-02-29T00:00:00Z'", is: "null"),
        FunctionCall("str_to_millis", "'2400-02-29T00:00:00Z'", is: "13574563200000"),
        FunctionCall("str_to_millis", "'2400-02-30T00:00:00Z'", is: "null"),

        FunctionCall("str_to_utc", "null", is: "null"),
        FunctionCall("str_to_utc", "99", is: "null"),
        FunctionCall("str_to_utc", "''", is: "null"),
        FunctionCall("str_to_utc", "'x'", is: "null"),
        FunctionCall("str_to_utc", "MISSING", is: "MISSING"),
        FunctionCall("str_to_utc", "'2018-10-23'", "'1111-11-11'", is: "'2018-10-23'"),
        FunctionCall("str_to_utc", "'2018-10-23'", is: "'2018-10-23T00:00:00Z'"),
        FunctionCall("str_to_utc", "'2018-10-23T18:33'", "'1111-11-11T11:11'", is: "'2018-10-23T18:33:00Z'"),  // not a format
        FunctionCall("str_to_utc", "'2018-10-23T18:33'", is: "'2018-10-23T18:33:00Z'"),
        FunctionCall("str_to_utc", "'2018-10-23T18:33:01'", is: "'2018-10-23T18:33:01Z'"),
        FunctionCall("str_to_utc", "'2018-10-23T18:33:01Z'", is: "'2018-10-23T18:33:01Z'"),
        FunctionCall("str_to_utc", "'2018-10-23T11:33:01-0700'", is: "'2018-10-23T18:33:01Z'"),
        FunctionCall("str_to_utc", "'2018-10-23T11:33:01+03:30'", is: "'2018-10-23T08:03:01Z'"),
        FunctionCall("str_to_utc", "'2018-10-23T18:33:01.123Z'", is: "'2018-10-23T18:33:01.123Z'"),
        FunctionCall("str_to_utc", "'2018-10-23T11:33:01.123-0700'", is: "'2018-10-23T18:33:01.123Z'"),
        FunctionCall("str_to_utc", "'18:33:01+01:00'", is: "'2000-01-01T17:33:01Z'"),  // time only

        FunctionCall("millis_to_utc", "'x'", is: "null"),
        FunctionCall("millis_to_utc", "'0'", is: "null"),
        FunctionCall("millis_to_utc", "MISSING", is: "MISSING"),
        FunctionCall("millis_to_utc", "0", is: "'1970-01-01T00:00:00Z'"),
        FunctionCall("millis_to_utc", "1540319581000", is: "'2018-10-23T18:33:01Z'"),
        FunctionCall("millis_to_utc", "1540319581123", is: "'2018-10-23T18:33:01.123Z'"),
        FunctionCall("millis_to_utc", "1540319581999", is: "'2018-10-23T18:33:01.999Z'"),
        FunctionCall("millis_to_utc", "1540319581999.9", is: "'2018-10-23T18:33:01.999Z'"),
        FunctionCall("millis_to_utc", "-806956200000", is: "'1944-06-06T05:30:00Z'"),
        FunctionCall("millis_to_utc", "-1", is: "'1969-12-31T23:59:59.999Z'"),
        FunctionCall("millis_to_utc", "1540319581999", "'invalid'", is: "'2018-10-23T18:33:01.999Z'"),
        FunctionCall("millis_to_utc", "1540319581999", "'1111-11-11'", is: "'2018-10-23'"),
        FunctionCall("millis_to_utc", "1540319581999", "'11:11:11'", is: "'18:33:01'"),
        FunctionCall("millis_to_utc", "1540319581999", "'11:11:11Z'", is: "'18:33:01Z'"),
        FunctionCall("millis_to_utc", "1540319581999", "'11:11:11+09:00'", is: "'18:33:01Z'"),
        FunctionCall("millis_to_utc", "1540319581999", "'1111-11-11 11:11:11+09:00'", is: "'2018-10-23 18:33:01Z'"),
        FunctionCall("millis_to_utc", "1540319581999", "'1111-11-11T11:11:11+09:00'", is: "'2018-10-23T18:33:01Z'"),
        FunctionCall("millis_to_utc", "1540319581999", "'1111-11-11   T 11:11:11+09:00'", is: "'2018-10-23T18:33:01.999Z'"),  // not a format

        FunctionCall("str_to_tz", "'2024-01-10T14:31:14Z'", "0", is: "'2024-01-10T14:31:14Z'"),
        FunctionCall("str_to_tz", "'2024-01-10T14:31:14Z'", "-300", is: "'2024-01-10T09:31:14-0500'"),
        FunctionCall("str_to_tz", "'2024-01-10T14:31:14Z'", "690", is: "'2024-01-11T02:01:14+1130'"),
        FunctionCall("str_to_tz", "'2024-01-10T14:31:14Z'", "'x'", is: "null"),
        FunctionCall("str_to_tz", "MISSING", "0", is: "MISSING"),
        FunctionCall("millis_to_tz", "1704897074000", "0", is: "'2024-01-10T14:31:14Z'"),
        FunctionCall("millis_to_tz", "1704897074000", "-300", is: "'2024-01-10T09:31:14-0500'"),
        FunctionCall("millis_to_tz", "1704897074000", "690", is: "'2024-01-11T02:01:14+1130'"),
        FunctionCall("millis_to_tz", "1704897074000", "690", "'1111-11-11'", is: "'2024-01-11'"),
        FunctionCall("millis_to_tz", "1704897074000", "690", "'invalid'", is: "'2024-01-11T02:01:14+1130'"),
        FunctionCall("millis_to_tz", "1704897074000", "690", "'11:11:11Z'", is: "'02:01:14+1130'"),
        FunctionCall("millis_to_tz", "1704897074000", "690", "'11:11:11-05:00'", is: "'02:01:14+11:30'"),
        FunctionCall("millis_to_tz", "1704897074000", "100000", is: "null"),
        FunctionCall("millis_to_tz", "1704897074000", "MISSING", is: "MISSING"),
    ])
    func conversions(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }

    @Test(arguments: [
        // Basic
        FunctionCall("date_diff_str", "'2018-01-31T00:00:00.001Z'", "'2018-01-31T00:00:00Z'", "'millisecond'", is: "1"),
        FunctionCall("date_diff_str", "'2018-01-31T00:00:00.100Z'", "'2018-01-31T00:00:00Z'", "'millisecond'", is: "100"),
        FunctionCall("date_diff_str", "'2018-01-31T00:00:01.5Z'", "'2018-01-31T00:00:00Z'", "'millisecond'", is: "1500"),
        FunctionCall("date_diff_str", "'2018-01-31T00:00:01.5Z'", "'2018-01-31T00:00:00Z'", "'second'", is: "1"),
        FunctionCall("date_diff_str", "'2018-01-31T00:01:01.5Z'", "'2018-01-31T00:00:00Z'", "'second'", is: "61"),
        FunctionCall("date_diff_str", "'2018-01-31T00:01:01.5Z'", "'2018-01-31T00:00:00Z'", "'minute'", is: "1"),
        FunctionCall("date_diff_str", "'2018-01-31T01:01:00.5Z'", "'2018-01-31T00:00:00Z'", "'minute'", is: "61"),
        FunctionCall("date_diff_str", "'2018-02-01T01:00:00.5Z'", "'2018-01-31T00:00:00Z'", "'hour'", is: "25"),
        FunctionCall("date_diff_str", "'2018-03-01T01:00:01.5Z'", "'2018-02-01T00:00:00Z'", "'day'", is: "28"),
        FunctionCall("date_diff_str", "'2016-03-01T01:00:01.5Z'", "'2016-02-01T00:00:00Z'", "'day'", is: "29"),
        FunctionCall("date_diff_str", "'2018-01-01T01:00:01.5Z'", "'2017-01-01T00:00:00Z'", "'day'", is: "365"),
        FunctionCall("date_diff_str", "'2017-01-01T01:00:01.5Z'", "'2016-01-01T00:00:00Z'", "'day'", is: "366"),
        FunctionCall("date_diff_str", "'2017-02-01T01:00:01.5Z'", "'2017-01-01T00:00:00Z'", "'week'", is: "4"),
        FunctionCall("date_diff_str", "'2018-02-01T01:00:01.5Z'", "'2017-01-01T00:00:00Z'", "'month'", is: "13"),
        FunctionCall("date_diff_str", "'2018-04-01T01:00:01.5Z'", "'2017-01-01T00:00:00Z'", "'quarter'", is: "5"),
        FunctionCall("date_diff_str", "'2018-04-08T01:00:01.5Z'", "'2017-01-01T00:00:00Z'", "'year'", is: "1"),
        FunctionCall("date_diff_str", "'2028-04-01T01:00:01.5Z'", "'2017-01-01T00:00:00Z'", "'decade'", is: "1"),
        FunctionCall("date_diff_str", "'2118-04-08T01:00:01.5Z'", "'2017-01-01T00:00:00Z'", "'century'", is: "1"),
        FunctionCall("date_diff_str", "'2918-04-01T01:00:01.5Z'", "'1917-01-01T00:00:00Z'", "'millennium'", is: "1"),
        // Negative
        FunctionCall("date_diff_str", "'2018-01-31T00:00:00Z'", "'2018-01-31T00:00:00.010Z'", "'millisecond'", is: "-10"),
        FunctionCall("date_diff_str", "'2018-01-31T00:00:00Z'", "'2018-02-01T01:00:00.5Z'", "'hour'", is: "-25"),
        FunctionCall("date_diff_str", "'2016-01-01T00:00:00Z'", "'2017-01-01T01:00:01.5Z'", "'day'", is: "-366"),
        FunctionCall("date_diff_str", "'2017-01-01T00:00:00Z'", "'2018-02-01T01:00:01.5Z'", "'month'", is: "-13"),
        FunctionCall("date_diff_str", "'1917-01-01T00:00:00Z'", "'2918-04-01T01:00:01.5Z'", "'millennium'", is: "-1"),
        // N1QL consistency (Couchbase Server's case_func_date.json)
        FunctionCall("date_diff_str", "'2006-01-02'", "'1998-02-02'", "'year'", is: "8"),
        FunctionCall("date_diff_str", "'2014-12-01'", "'2015-01-01'", "'quarter'", is: "-1"),
        FunctionCall("date_diff_str", "'2015-01-01'", "'2014-12-01'", "'quarter'", is: "1"),
        FunctionCall("date_diff_str", "'2013-12-01'", "'2015-01-01'", "'quarter'", is: "-5"),
        FunctionCall("date_diff_str", "'2013-10-01'", "'2015-01-01'", "'quarter'", is: "-5"),
        FunctionCall("date_diff_str", "'2014-12-01'", "'2015-05-30'", "'quarter'", is: "-2"),
        FunctionCall("date_diff_str", "'2014-10-01'", "'2014-12-01'", "'quarter'", is: "0"),
        FunctionCall("date_diff_str", "'2015-11-01'", "'2014-10-01'", "'month'", is: "13"),
        FunctionCall("date_diff_str", "'2013-01-01'", "'2015-01-01'", "'month'", is: "-24"),
        FunctionCall("date_diff_str", "'2013-10-01'", "'2015-01-01'", "'month'", is: "-15"),
        FunctionCall("date_diff_str", "'2018-09-10 23:59:59'", "'2018-09-11 00:00:01'", "'day'", is: "-1"),
        FunctionCall("date_diff_str", "'2018-09-11 00:00:01'", "'2018-09-10 23:59:59'", "'day'", is: "1"),
        // Unintuitive on purpose, as N1QL: boundaries crossed, not time elapsed
        FunctionCall("date_diff_str", "'2018-01-31T00:01:01.5Z'", "'2018-01-31T00:01:00.9Z'", "'second'", is: "1"),
        FunctionCall("date_diff_str", "'2018-01-31T00:02:01Z'", "'2018-01-31T00:01:59Z'", "'minute'", is: "1"),
        FunctionCall("date_diff_str", "'2018-01-31T01:00:00Z'", "'2018-01-31T00:59:00Z'", "'hour'", is: "1"),
        FunctionCall("date_diff_str", "'2018-02-01T00:01:59Z'", "'2018-01-31T23:59:01Z'", "'day'", is: "1"),
        FunctionCall("date_diff_str", "'2018-02-01T00:01:59Z'", "'2018-01-31T23:59:01Z'", "'month'", is: "1"),
        FunctionCall("date_diff_str", "'2018-01-01T00:01:59Z'", "'2017-12-31T23:59:01Z'", "'year'", is: "1"),
        FunctionCall("date_diff_str", "'2018-01-31T02:00:00-07:00'", "'2018-01-31T00:00:00-08:00'", "'hour'", is: "2"),
        // Unknowns and invalid input
        FunctionCall("date_diff_str", "'2018-01-02'", "'2018-01-01'", "'DAY'", is: "1"),
        FunctionCall("date_diff_str", "'2018-01-02'", "'2018-01-01'", "'fortnight'", is: "null"),
        FunctionCall("date_diff_str", "'x'", "'2018-01-01'", "'day'", is: "null"),
        FunctionCall("date_diff_str", "MISSING", "'2018-01-01'", "'day'", is: "MISSING"),

        FunctionCall("date_diff_millis", "1517356800001", "1517356800000", "'millisecond'", is: "1"),
        FunctionCall("date_diff_millis", "1517356861500", "1517356800000", "'second'", is: "61"),
        FunctionCall("date_diff_millis", "1517446800500", "1517356800000", "'hour'", is: "25"),
        FunctionCall("date_diff_millis", "1456794001500", "1454284800000", "'day'", is: "29"),
        FunctionCall("date_diff_millis", "1483232401500", "1451606400000", "'day'", is: "366"),
        FunctionCall("date_diff_millis", "1485910801500", "1483228800000", "'week'", is: "4"),
        FunctionCall("date_diff_millis", "1517446801500", "1483228800000", "'month'", is: "13"),
        FunctionCall("date_diff_millis", "1522544401500", "1483228800000", "'quarter'", is: "5"),
        FunctionCall("date_diff_millis", "1838163601500", "1483228800000", "'decade'", is: "1"),
        FunctionCall("date_diff_millis", "4678822801500", "1483228800000", "'century'", is: "1"),
        FunctionCall("date_diff_millis", "29923779601500", "-1672531200000", "'millennium'", is: "1"),
        FunctionCall("date_diff_millis", "1483228800000", "1522544401500", "'quarter'", is: "-5"),
        FunctionCall("date_diff_millis", "1136160000000", "886377600000", "'year'", is: "8"),
        FunctionCall("date_diff_millis", "1536623999000", "1536624001000", "'day'", is: "-1"),
        FunctionCall("date_diff_millis", "1517356861500", "1517356860900", "'second'", is: "1"),
        FunctionCall("date_diff_millis", "1514764919000", "1514764741000", "'year'", is: "1"),
        FunctionCall("date_diff_millis", "'1'", "0", "'day'", is: "null"),
        FunctionCall("date_diff_millis", "1", "0", "MISSING", is: "MISSING"),
    ])
    func differences(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }

    @Test(arguments: [
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'millisecond'", is: "'2018-01-01T00:00:00.001Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "10", "'millisecond'", is: "'2018-01-01T00:00:00.010Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'second'", is: "'2018-01-01T00:00:01Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'minute'", is: "'2018-01-01T00:01:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'hour'", is: "'2018-01-01T01:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'day'", is: "'2018-01-02T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'week'", is: "'2018-01-08T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'month'", is: "'2018-02-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'quarter'", is: "'2018-04-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'year'", is: "'2019-01-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'decade'", is: "'2028-01-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01'", "1", "'century'", is: "'2118-01-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01'", "1", "'century'", "'1111-11-11'", is: "'2118-01-01'"),
        FunctionCall("date_add_str", "'1918-01-01T00:00:00Z'", "1", "'millennium'", is: "'2918-01-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00.100Z'", "-100", "'millisecond'", is: "'2018-01-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2019-01-01T00:00:00Z'", "-1", "'year'", is: "'2018-01-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2970-01-01T00:00:00Z'", "-1", "'millennium'", is: "'1970-01-01T00:00:00Z'"),
        // Overflow into the next unit
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1500", "'millisecond'", is: "'2018-01-01T00:00:01.500Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "25", "'hour'", is: "'2018-01-02T01:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "31", "'day'", is: "'2018-02-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-02-27T00:00:00Z'", "1", "'week'", is: "'2018-03-06T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "12", "'month'", is: "'2019-01-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2019-01-01T00:00:00Z'", "-12", "'month'", is: "'2018-01-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-02-01T00:00:00Z'", "-31", "'day'", is: "'2018-01-01T00:00:00Z'"),
        // Special cases
        FunctionCall("date_add_str", "'2018-02-28T00:00:00Z'", "1", "'day'", is: "'2018-03-01T00:00:00Z'"),
        FunctionCall("date_add_str", "'2016-02-28T00:00:00Z'", "1", "'day'", is: "'2016-02-29T00:00:00Z'"),
        FunctionCall("date_add_str", "'2016-01-01T00:00:00-07:00'", "1", "'day'", is: "'2016-01-02T00:00:00-0700'"),
        FunctionCall("date_add_str", "'2018-02-15T00:00:00Z'", "1", "'month'", is: "'2018-03-15T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-31T00:00:00Z'", "1", "'month'", is: "'2018-03-03T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'Day'", is: "'2018-01-02T00:00:00Z'"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "1", "'eon'", is: "null"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "'1'", "'day'", is: "null"),
        FunctionCall("date_add_str", "'2018-01-01T00:00:00Z'", "9223372036854775807", "'month'", is: "null"),
        FunctionCall("date_add_str", "MISSING", "1", "'day'", is: "MISSING"),

        FunctionCall("date_add_millis", "1514764800000", "1", "'millisecond'", is: "1514764800001"),
        FunctionCall("date_add_millis", "1514764800000", "1", "'minute'", is: "1514764860000"),
        FunctionCall("date_add_millis", "1514764800000", "1", "'day'", is: "1514851200000"),
        FunctionCall("date_add_millis", "1514764800000", "1", "'week'", is: "1515369600000"),
        FunctionCall("date_add_millis", "1514764800000", "1", "'month'", is: "1517443200000"),
        FunctionCall("date_add_millis", "1514764800000", "1", "'quarter'", is: "1522540800000"),
        FunctionCall("date_add_millis", "1514764800000", "1", "'year'", is: "1546300800000"),
        FunctionCall("date_add_millis", "1514764800000", "1", "'decade'", is: "1830297600000"),
        FunctionCall("date_add_millis", "1514764800000", "1", "'century'", is: "4670438400000"),
        FunctionCall("date_add_millis", "0", "1", "'millennium'", is: "31556995200000"),
        FunctionCall("date_add_millis", "31556995200000", "-1", "'millennium'", is: "0"),
        FunctionCall("date_add_millis", "1517443200000", "-1", "'month'", is: "1514764800000"),
        FunctionCall("date_add_millis", "9223372036854775807", "1", "'day'", is: "null"),
        FunctionCall("date_add_millis", "0", "null", "'day'", is: "null"),
    ])
    func additions(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }

    /// Texts without a zone, and `millis_to_str`, use the local time zone.
    @Test func localTimeZone() throws {
        let pacific = try FunctionHarness(localTimeZone: #require(TimeZone(secondsFromGMT: -7 * 3600)))
        #expect(try pacific.call("str_to_millis", "'2018-10-23T11:33:01'") == .integer(1540319581000))
        #expect(try pacific.call("str_to_utc", "'2018-10-23'") == .text("2018-10-23T07:00:00Z"))
        #expect(try pacific.call("millis_to_str", "1540319581000") == .text("2018-10-23T11:33:01-0700"))
        #expect(try pacific.call("millis_to_str", "1540319581000", "'1111-11-11'") == .text("2018-10-23"))
        // Zones in the text win; date_diff_str / date_add_str read zone-less texts as UTC.
        #expect(try pacific.call("str_to_millis", "'2018-10-23T18:33:01Z'") == .integer(1540319581000))
        #expect(try pacific.call("date_add_str", "'2018-01-01'", "1", "'day'") == .text("2018-01-02T00:00:00Z"))

        let utc = try FunctionHarness()
        #expect(try utc.call("millis_to_str", "1540319581000") == .text("2018-10-23T18:33:01Z"))
    }

    /// Daylight saving: the offset is the one in force at that date.
    @Test func daylightSavingTime() throws {
        guard let losAngeles = TimeZone(identifier: "America/Los_Angeles") else { return }
        let harness = try FunctionHarness(localTimeZone: losAngeles)
        #expect(try harness.call("str_to_millis", "'2018-01-15T12:00:00'") == .integer(1516046400000))
        #expect(try harness.call("str_to_millis", "'2018-07-15T12:00:00'") == .integer(1531681200000))
        #expect(try harness.call("millis_to_str", "1531681200000") == .text("2018-07-15T12:00:00-0700"))
        #expect(try harness.call("millis_to_str", "1516046400000") == .text("2018-01-15T12:00:00-0800"))
    }

    /// `str_to_millis(millis_to_utc(ms)) == ms`, and through a local zone and back.
    @Test(arguments: [0, 1, -1, 999, 1540319581000, 1540319581123, -806956200000, 951782400000, 13574563200000,
                      -62135596800000, 253402000000000] as [Int64])
    func roundTrip(millis: Int64) throws {
        let harness = try FunctionHarness(localTimeZone: #require(TimeZone(secondsFromGMT: 5 * 3600 + 1800)))
        let utc = try harness.call("millis_to_utc", [.integer(millis)])
        #expect(try harness.call("str_to_millis", [utc]) == .integer(millis))
        let local = try harness.call("millis_to_str", [.integer(millis)])
        #expect(try harness.call("str_to_millis", [local]) == .integer(millis))
        #expect(try harness.call("str_to_utc", [local]) == utc)
    }
}
