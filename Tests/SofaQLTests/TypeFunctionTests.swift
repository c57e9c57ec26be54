import Testing
@testable import SofaQL

@Suite struct TypeFunctionTests {
    @Test(arguments: [
        FunctionCall("isarray", "[1]", is: "true"),
        FunctionCall("isarray", "{}", is: "false"),
        FunctionCall("isarray", "MISSING", is: "MISSING"),
        FunctionCall("isarray", "null", is: "null"),
        FunctionCall("isatom", "1", is: "true"),
        FunctionCall("isatom", "'a'", is: "true"),
        FunctionCall("isatom", "false", is: "true"),
        FunctionCall("isatom", "[1]", is: "false"),
        FunctionCall("isboolean", "true", is: "true"),
        FunctionCall("isboolean", "1", is: "false"),
        FunctionCall("isnumber", "1.5", is: "true"),
        FunctionCall("isnumber", "'1'", is: "false"),
        FunctionCall("isobject", "{\"a\":1}", is: "true"),
        FunctionCall("isobject", "[]", is: "false"),
        FunctionCall("isstring", "'a'", is: "true"),
        FunctionCall("isstring", "1", is: "false"),

        FunctionCall("type", "MISSING", is: "MISSING"),
        FunctionCall("type", "null", is: "'null'"),
        FunctionCall("type", "true", is: "'boolean'"),
        FunctionCall("type", "1", is: "'number'"),
        FunctionCall("type", "1.5", is: "'number'"),
        FunctionCall("type", "'a'", is: "'string'"),
        FunctionCall("type", "[]", is: "'array'"),
        FunctionCall("type", "{}", is: "'object'"),

        FunctionCall("toarray", "1", is: "[1]"),
        FunctionCall("toarray", "'a'", is: "[\"a\"]"),
        FunctionCall("toarray", "[1]", is: "[1]"),
        FunctionCall("toarray", "{\"a\":1}", is: "[{\"a\":1}]"),
        FunctionCall("toarray", "null", is: "null"),
        FunctionCall("toarray", "MISSING", is: "MISSING"),

        FunctionCall("toatom", "[5]", is: "5"),
        FunctionCall("toatom", "{\"a\":\"x\"}", is: "'x'"),
        FunctionCall("toatom", "[[1]]", is: "[1]"),
        FunctionCall("toatom", "[1,2]", is: "null"),
        FunctionCall("toatom", "[]", is: "null"),
        FunctionCall("toatom", "'s'", is: "'s'"),
        FunctionCall("toatom", "true", is: "true"),
        FunctionCall("toatom", "MISSING", is: "MISSING"),

        FunctionCall("toboolean", "0", is: "false"),
        FunctionCall("toboolean", "2", is: "true"),
        FunctionCall("toboolean", "0.0", is: "false"),
        FunctionCall("toboolean", "''", is: "false"),
        FunctionCall("toboolean", "'false'", is: "true"),
        FunctionCall("toboolean", "[]", is: "false"),
        FunctionCall("toboolean", "{\"a\":1}", is: "true"),
        FunctionCall("toboolean", "null", is: "null"),
        FunctionCall("toboolean", "MISSING", is: "MISSING"),

        FunctionCall("tonumber", "'42'", is: "42"),
        FunctionCall("tonumber", "' -1.5e2 '", is: "-150.0"),
        FunctionCall("tonumber", "'.5'", is: "0.5"),
        FunctionCall("tonumber", "'+7'", is: "7"),
        FunctionCall("tonumber", "'12abc'", is: "null"),
        FunctionCall("tonumber", "''", is: "null"),
        FunctionCall("tonumber", "'0x1A'", is: "null"),
        FunctionCall("tonumber", "'inf'", is: "null"),
        FunctionCall("tonumber", "'1e999'", is: "null"),
        FunctionCall("tonumber", "true", is: "1"),
        FunctionCall("tonumber", "false", is: "0"),
        FunctionCall("tonumber", "3.5", is: "3.5"),
        FunctionCall("tonumber", "[1]", is: "null"),
        FunctionCall("tonumber", "null", is: "null"),
        FunctionCall("tonumber", "MISSING", is: "MISSING"),

        FunctionCall("toobject", "{\"a\":1}", is: "{\"a\":1}"),
        FunctionCall("toobject", "1", is: "{}"),
        FunctionCall("toobject", "null", is: "null"),

        FunctionCall("tostring", "1", is: "'1'"),
        FunctionCall("tostring", "2.5", is: "'2.5'"),
        FunctionCall("tostring", "true", is: "'true'"),
        FunctionCall("tostring", "'s'", is: "'s'"),
        FunctionCall("tostring", "[1]", is: "null"),
        FunctionCall("tostring", "null", is: "null"),
        FunctionCall("tostring", "MISSING", is: "MISSING"),
    ])
    func types(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }

    /// LiteCore's snake-case names call the same functions.
    @Test(arguments: [
        ("is_array", "isarray"), ("is_atom", "isatom"), ("is_boolean", "isboolean"), ("is_number", "isnumber"),
        ("is_object", "isobject"), ("is_string", "isstring"), ("typename", "type"), ("to_array", "toarray"),
        ("to_atom", "toatom"), ("to_boolean", "toboolean"), ("to_number", "tonumber"), ("to_object", "toobject"),
        ("to_string", "tostring"),
    ])
    func aliases(alias: String, name: String) throws {
        let harness = try FunctionHarness()
        for value in ["MISSING", "null", "true", "0", "'7'", "[1]", "{\"k\":[2]}"] {
            #expect(try harness.call(alias, value) == harness.call(name, value), "\(alias)(\(value))")
        }
    }
}
