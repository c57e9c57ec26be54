import Testing
import SofaCore
@testable import SofaQL

@Suite struct SQLValueTests {
    @Test(arguments: [
        (JSON?.none, SQLValue.missing),
        (JSON.null, SQLValue.json(.null)),
        (JSON.int(3), SQLValue.integer(3)),
        (JSON.double(2.5), SQLValue.real(2.5)),
        (JSON.string("x"), SQLValue.text("x")),
        (JSON.bool(true), SQLValue.json(.bool(true))),
        (JSON.array([1, nil]), SQLValue.json([1, nil])),
    ])
    func mapsJSONKinds(json: JSON?, expected: SQLValue) {
        #expect(SQLValue(json) == expected)
        #expect(SQLValue(json).json == json)
    }

    @Test(arguments: [
        (SQLValue.missing, false), (.null, false), (.false, false), (.true, true),
        (.integer(0), false), (.integer(-1), true), (.real(0.5), true), (.text(""), false),
        (.text("a"), true), (.json([]), false), (.json([1]), true), (.json([:]), false),
    ])
    func truthiness(value: SQLValue, expected: Bool) {
        #expect(value.isTruthy == expected)
    }
}
