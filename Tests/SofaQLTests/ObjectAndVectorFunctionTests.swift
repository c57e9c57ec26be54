import Testing
@testable import SofaQL

@Suite struct ObjectAndVectorFunctionTests {
    @Test(arguments: [
        FunctionCall("object_length", "{\"b\":1,\"a\":2}", is: "2"),
        FunctionCall("object_length", "{}", is: "0"),
        FunctionCall("object_length", "[1]", is: "null"),
        FunctionCall("object_names", "{\"b\":1,\"a\":2}", is: "[\"a\",\"b\"]"),
        FunctionCall("object_names", "MISSING", is: "MISSING"),
        FunctionCall("object_pairs", "{\"b\":1,\"a\":[2]}", is: "[{\"name\":\"a\",\"val\":[2]},{\"name\":\"b\",\"val\":1}]"),
        FunctionCall("object_values", "{\"b\":1,\"a\":2}", is: "[2,1]"),
        FunctionCall("object_values", "null", is: "null"),
        FunctionCall("object_values", "'x'", is: "null"),
    ])
    func objects(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }

    // LiteCore's "Query Distance Metrics" table, plus unknowns.
    @Test(arguments: [
        FunctionCall("euclidean_distance", "[10,10]", "[13,14]", is: "5.0"),
        FunctionCall("euclidean_distance", "[10,10]", "[13,14]", "2", is: "25.0"),
        FunctionCall("euclidean_distance", "[0,0]", "[3,4]", "3", is: "125.0"),
        FunctionCall("euclidean_distance", "[1,2,3,4,5]", "[1,2,3,4,5]", is: "0.0"),
        FunctionCall("euclidean_distance", "[]", "[]", is: "0.0"),
        FunctionCall("euclidean_distance", "18", "'foo'", is: "null"),
        FunctionCall("euclidean_distance", "[10,10]", "[13]", is: "null"),
        FunctionCall("euclidean_distance", "[1,\"a\"]", "[1,2]", is: "null"),
        FunctionCall("euclidean_distance", "MISSING", "[1]", is: "MISSING"),
        FunctionCall("cosine_distance", "[10,0]", "[0,99]", is: "1.0"),
        FunctionCall("cosine_distance", "[1,2,3,4,5]", "[1,2,3,4,5]", is: "0.0"),
        FunctionCall("cosine_distance", "[1,0]", "[-1,0]", is: "2.0"),
        FunctionCall("cosine_distance", "[]", "[]", is: "null"),
        FunctionCall("cosine_distance", "18", "'foo'", is: "null"),
        FunctionCall("cosine_distance", "[10,10]", "[13]", is: "null"),
        FunctionCall("cosine_distance", "[1]", "null", is: "null"),
    ])
    func vectors(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }
}
