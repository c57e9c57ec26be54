import Testing
@testable import SofaQL

@Suite struct StringFunctionTests {
    @Test(arguments: [
        FunctionCall("concat", "'a'", "'b'", is: "'ab'"),
        FunctionCall("concat", "'n='", "2.5", "null", "true", "[1,2]", is: "'n=2.5nulltrue[1,2]'"),
        FunctionCall("concat", "1", "2", is: "'12'"),
        FunctionCall("concat", "'x'", "2.0", is: "'x2'"),
        FunctionCall("concat", "'a'", "MISSING", "'b'", is: "MISSING"),

        FunctionCall("contains", "'hello'", "'ell'", is: "true"),
        FunctionCall("contains", "'hello'", "'xyz'", is: "false"),
        FunctionCall("contains", "'hello'", "''", is: "true"),
        FunctionCall("contains", "'Hello'", "'hello'", is: "false"),
        FunctionCall("contains", "'café'", "'é'", is: "true"),
        FunctionCall("contains", "MISSING", "'a'", is: "MISSING"),
        FunctionCall("contains", "null", "'a'", is: "null"),
        // A non-string operand is false (LiteCore's answer), after MISSING and null.
        FunctionCall("contains", "5", "'5'", is: "false"),
        FunctionCall("contains", "[1,2,3,4]", "1", is: "false"),
        FunctionCall("contains", "'a1'", "1", is: "false"),
        FunctionCall("contains", "{\"a\":1}", "'a'", is: "false"),
        FunctionCall("contains", "true", "'true'", is: "false"),
        FunctionCall("contains", "[1]", "null", is: "null"),
        FunctionCall("contains", "null", "MISSING", is: "MISSING"),

        FunctionCall("length", "''", is: "0"),
        FunctionCall("length", "'12345'", is: "5"),
        FunctionCall("length", "'cafés'", is: "5"),
        FunctionCall("length", "'“÷”'", is: "3"),
        FunctionCall("length", "'😀'", is: "1"),
        FunctionCall("length", "5", is: "null"),
        FunctionCall("length", "MISSING", is: "MISSING"),
        FunctionCall("length", "null", is: "null"),

        FunctionCall("lower", "'cAFES17•'", is: "'cafes17•'"),
        FunctionCall("lower", "'cAFÉS17•'", is: "'cafés17•'"),
        FunctionCall("lower", "1", is: "null"),
        FunctionCall("upper", "'cafés17'", is: "'CAFÉS17'"),
        FunctionCall("upper", "'😀'", is: "'😀'"),
        FunctionCall("upper", "MISSING", is: "MISSING"),

        FunctionCall("ltrim", "'  x  '", is: "'x  '"),
        FunctionCall("rtrim", "'  x  '", is: "'  x'"),
        FunctionCall("trim", "'  x  '", is: "'x'"),
        FunctionCall("trim", "'\n stuff goes here\r\t'", is: "'stuff goes here'"),
        FunctionCall("trim", "'   '", is: "''"),
        FunctionCall("ltrim", "'\u{1680}\u{180e}\u{2000}\u{2007}\u{200a}'", is: "'\u{2007}\u{200a}'"),
        FunctionCall("rtrim", "'\u{1680}\u{180e}\u{2000}\u{2007}\u{200a}'", is: "'\u{1680}\u{180e}\u{2000}\u{2007}'"),
        FunctionCall("trim", "'\u{2028}\u{2029}\u{2030}\u{205f}\u{3000}'", is: "'\u{2030}'"),
        FunctionCall("trim", "'\u{a0}x\u{a0}'", is: "'\u{a0}x\u{a0}'"),  // no-break space stays
        FunctionCall("trim", "'xxhixx'", "'x'", is: "'hi'"),
        FunctionCall("ltrim", "'abcba'", "'ab'", is: "'cba'"),
        FunctionCall("rtrim", "'abcba'", "'ab'", is: "'abc'"),
        FunctionCall("trim", "'  x  '", "''", is: "'  x  '"),
        FunctionCall("trim", "5", is: "5"),  // LiteCore hands non-strings back
        FunctionCall("trim", "MISSING", is: "MISSING"),
        FunctionCall("trim", "null", is: "null"),
        FunctionCall("trim", "'x'", "MISSING", is: "MISSING"),
        FunctionCall("trim", "' x '", "5", is: "null"),
    ])
    func strings(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }
}
