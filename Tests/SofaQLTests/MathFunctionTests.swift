import Foundation
import Testing
@testable import SofaQL

@Suite struct MathFunctionTests {
    @Test(arguments: [
        FunctionCall("abs", "-3", is: "3.0"),
        FunctionCall("abs", "2.5", is: "2.5"),
        FunctionCall("abs", "MISSING", is: "MISSING"),
        FunctionCall("abs", "null", is: "null"),
        FunctionCall("abs", "'x'", is: "null"),
        FunctionCall("acos", "0.5", is: "\(acos(0.5))"),
        FunctionCall("acos", "1", is: "0.0"),
        FunctionCall("acos", "2", is: "null"),  // NaN
        FunctionCall("asin", "1", is: "\(asin(1.0))"),
        FunctionCall("atan", "1", is: "\(atan(1.0))"),
        FunctionCall("atan2", "1", "2", is: "\(atan2(1.0, 2.0))"),
        FunctionCall("atan2", "MISSING", "1", is: "MISSING"),
        FunctionCall("atan2", "'a'", "1", is: "null"),
        FunctionCall("ceil", "2.5", is: "3.0"),
        FunctionCall("ceil", "-2.5", is: "-2.0"),
        FunctionCall("cos", "0", is: "1.0"),
        FunctionCall("degrees", "1", is: "\(180.0 / Double.pi)"),
        FunctionCall("e", is: "2.718281828459045"),
        FunctionCall("exp", "1", is: "\(exp(1.0))"),
        FunctionCall("floor", "2.5", is: "2.0"),
        FunctionCall("floor", "-2.5", is: "-3.0"),
        FunctionCall("ln", "1", is: "0.0"),
        FunctionCall("ln", "0", is: "null"),  // -inf
        FunctionCall("log", "100", is: "2.0"),
        FunctionCall("log", "-1", is: "null"),
        FunctionCall("pi", is: "3.141592653589793"),
        FunctionCall("power", "2", "10", is: "1024.0"),
        FunctionCall("power", "2.5", "3", is: "15.625"),
        FunctionCall("power", "2", "null", is: "null"),
        FunctionCall("radians", "180", is: "\(180 * Double.pi / 180)"),
        FunctionCall("sin", "0", is: "0.0"),
        FunctionCall("sqrt", "4", is: "2.0"),
        FunctionCall("sqrt", "2.5", is: "\(2.5.squareRoot())"),
        FunctionCall("sqrt", "-1", is: "null"),
        FunctionCall("tan", "1", is: "\(tan(1.0))"),

        FunctionCall("round", "2.5", is: "3.0"),
        FunctionCall("round", "-2.5", is: "-3.0"),
        FunctionCall("round", "2.4", is: "2.0"),
        FunctionCall("round", "2.567", "2", is: "2.57"),
        FunctionCall("round", "0.125", "2", is: "0.13"),
        FunctionCall("round", "1234", "-2", is: "1200.0"),
        FunctionCall("round", "MISSING", "1", is: "MISSING"),
        FunctionCall("round", "1.5", "null", is: "null"),
        FunctionCall("round", "'a'", is: "null"),
        FunctionCall("round_even", "2.5", is: "2.0"),
        FunctionCall("round_even", "3.5", is: "4.0"),
        FunctionCall("round_even", "-2.5", is: "-2.0"),
        FunctionCall("round_even", "2.6", is: "3.0"),
        FunctionCall("round_even", "0.125", "2", is: "0.12"),
        FunctionCall("trunc", "2.7", is: "2.0"),
        FunctionCall("trunc", "-2.7", is: "-2.0"),
        FunctionCall("trunc", "2.567", "2", is: "2.56"),

        FunctionCall("sign", "-2.5", is: "-1"),
        FunctionCall("sign", "0", is: "0"),
        FunctionCall("sign", "7", is: "1"),
        FunctionCall("sign", "null", is: "null"),
        FunctionCall("sign", "'7'", is: "null"),

        FunctionCall("div", "7", "2", is: "3.5"),
        FunctionCall("div", "1", "0", is: "null"),
        FunctionCall("div", "MISSING", "0", is: "MISSING"),
        FunctionCall("div", "'a'", "1", is: "null"),
        FunctionCall("idiv", "7", "2", is: "3"),
        FunctionCall("idiv", "-7", "2", is: "-3"),
        FunctionCall("idiv", "7.9", "2", is: "3"),
        FunctionCall("idiv", "1", "0", is: "null"),
        FunctionCall("idiv", "1", "0.5", is: "null"),  // 0.5 truncates to 0
        FunctionCall("idiv", "null", "2", is: "null"),
    ])
    func math(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }
}
