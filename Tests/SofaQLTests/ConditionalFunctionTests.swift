import Testing
@testable import SofaQL

@Suite struct ConditionalFunctionTests {
    @Test(arguments: [
        FunctionCall("ifmissing", "MISSING", "2", is: "2"),
        FunctionCall("ifmissing", "null", "2", is: "null"),
        FunctionCall("ifmissing", "MISSING", "MISSING", is: "MISSING"),
        FunctionCall("ifmissing", "MISSING", "MISSING", "'c'", is: "'c'"),

        FunctionCall("ifnull", "null", "'b'", is: "'b'"),
        FunctionCall("ifnull", "MISSING", "'b'", is: "MISSING"),  // MISSING is not null
        FunctionCall("ifnull", "null", "null", is: "null"),
        FunctionCall("ifnull", "null", "null", "3", is: "3"),

        FunctionCall("ifmissingornull", "MISSING", "null", "0", is: "0"),
        FunctionCall("ifmissingornull", "MISSING", "null", is: "null"),
        FunctionCall("ifmissingornull", "false", "1", is: "false"),

        FunctionCall("missingif", "'5'", "'5'", is: "MISSING"),
        FunctionCall("missingif", "'5'", "'4'", is: "'5'"),
        FunctionCall("missingif", "1", "1.0", is: "MISSING"),
        FunctionCall("missingif", "1", "'1'", is: "1"),
        FunctionCall("missingif", "[1]", "[1]", is: "MISSING"),
        FunctionCall("missingif", "null", "1", is: "null"),
        FunctionCall("missingif", "null", "MISSING", is: "MISSING"),

        FunctionCall("nullif", "'5'", "'5'", is: "null"),
        FunctionCall("nullif", "'5'", "'4'", is: "'5'"),
        FunctionCall("nullif", "2", "3", is: "2"),
        FunctionCall("nullif", "true", "true", is: "null"),
        FunctionCall("nullif", "MISSING", "null", is: "MISSING"),
        FunctionCall("nullif", "1", "null", is: "null"),

        FunctionCall("isvalued", "0", is: "true"),
        FunctionCall("isvalued", "''", is: "true"),
        FunctionCall("isvalued", "null", is: "false"),
        FunctionCall("isvalued", "MISSING", is: "false"),

        FunctionCall("greatest", "1", "3", "2", is: "3"),
        FunctionCall("greatest", "2", "2.5", is: "2.5"),
        FunctionCall("greatest", "'b'", "'a'", is: "'b'"),
        FunctionCall("greatest", "1", "'a'", is: "'a'"),  // SQLite: numbers < text < BLOB
        FunctionCall("greatest", "1", "null", is: "null"),
        FunctionCall("greatest", "1", "MISSING", is: "MISSING"),
        FunctionCall("least", "3", "1", "2", is: "1"),
        FunctionCall("least", "'a'", "'B'", is: "'B'"),  // bytes: 'B' < 'a'
        FunctionCall("least", "1", "null", is: "1"),
        FunctionCall("least", "MISSING", "1", is: "MISSING"),
    ])
    func conditionals(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }
}
