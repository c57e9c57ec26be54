import Testing
@testable import SofaQL

@Suite struct ArrayFunctionTests {
    @Test(arguments: [
        FunctionCall("array_avg", "[1,2,3,4]", is: "2.5"),
        FunctionCall("array_avg", "[2,4,6,8]", is: "5.0"),
        FunctionCall("array_avg", "[1,2,true,\"foo\"]", is: "1.0"),  // asDouble: true 1, "foo" 0
        FunctionCall("array_avg", "[]", is: "0.0"),
        FunctionCall("array_avg", "MISSING", is: "0.0"),  // LiteCore answers 0 for MISSING too
        FunctionCall("array_avg", "'abc'", is: "0.0"),

        FunctionCall("array_contains", "[1,1,2,true,true,4,\"bar\"]", "4", is: "true"),
        FunctionCall("array_contains", "[1,1,2,true,true,4]", "'bar'", is: "false"),
        FunctionCall("array_contains", "[1,1,2,\"4\",\"bar\"]", "4", is: "false"),
        FunctionCall("array_contains", "[1,1,2,\"4\",\"bar\"]", "'bar'", is: "true"),
        FunctionCall("array_contains", "{\"a\":\"bar\",\"b\":1}", "1", is: "null"),  // not for dicts
        FunctionCall("array_contains", "'bar'", "'bar'", is: "null"),
        FunctionCall("array_contains", "MISSING", "4", is: "MISSING"),
        FunctionCall("array_contains", "null", "4", is: "null"),
        FunctionCall("array_contains", "[1,2]", "MISSING", is: "MISSING"),
        FunctionCall("array_contains", "[1,2]", "null", is: "null"),
        FunctionCall("array_contains", "[1,2.5]", "2.5", is: "true"),
        FunctionCall("array_contains", "[1.0]", "1", is: "true"),
        FunctionCall("array_contains", "[2.5]", "2", is: "false"),
        FunctionCall("array_contains", "[true]", "true", is: "true"),
        FunctionCall("array_contains", "[1]", "true", is: "false"),
        FunctionCall("array_contains", "[[1,2],{\"a\":1}]", "[1,2.0]", is: "true"),
        FunctionCall("array_contains", "[[1,2],{\"a\":1}]", "{\"a\":1}", is: "true"),

        FunctionCall("array_count", "[null,1,\"a\",null,[]]", is: "3"),
        FunctionCall("array_count", "[]", is: "0"),
        FunctionCall("array_count", "MISSING", is: "MISSING"),
        FunctionCall("array_count", "{\"a\":1}", is: "0"),

        FunctionCall("array_ifnull", "[null,null,2,true,true,4,\"bar\"]", is: "2"),
        FunctionCall("array_ifnull", "[null,{\"a\":1}]", is: "{\"a\":1}"),
        FunctionCall("array_ifnull", "[null,\"x\"]", is: "'x'"),
        FunctionCall("array_ifnull", "[null]", is: "null"),
        FunctionCall("array_ifnull", "MISSING", is: "null"),
        FunctionCall("array_ifnull", "7", is: "null"),

        FunctionCall("array_length", "[1,null,3]", is: "3"),
        FunctionCall("array_length", "[]", is: "0"),
        FunctionCall("array_length", "{\"a\":1}", is: "0"),
        FunctionCall("array_length", "MISSING", is: "MISSING"),

        FunctionCall("array_max", "[1,4,3,-50,10,4,\"bar\"]", is: "10.0"),
        FunctionCall("array_max", "[-5,-3]", is: "-3.0"),
        FunctionCall("array_max", "[]", is: "null"),
        FunctionCall("array_max", "MISSING", is: "null"),
        FunctionCall("array_min", "[1,4,3,-50,10,4,\"bar\"]", is: "-50.0"),
        FunctionCall("array_min", "[2.5,7]", is: "2.5"),
        FunctionCall("array_min", "'x'", is: "null"),

        FunctionCall("array_of", is: "[]"),
        FunctionCall("array_of", "1", "MISSING", "'a'", "null", "[2]", is: "[1,\"a\",null,[2]]"),

        FunctionCall("array_sum", "[1,2,3,4]", is: "10.0"),
        FunctionCall("array_sum", "[2,4,6,8]", is: "20.0"),
        FunctionCall("array_sum", "[1,2,true,\"foo\"]", is: "4.0"),
        FunctionCall("array_sum", "[0.5,0.25]", is: "0.75"),
        FunctionCall("array_sum", "[]", is: "0.0"),
        FunctionCall("array_sum", "MISSING", is: "0.0"),
        FunctionCall("array_sum", "null", is: "0.0"),
    ])
    func arrays(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }
}
