import SofaCore
import Testing
@testable import SofaQL

@Suite struct PatternFunctionTests {
    @Test(arguments: [
        FunctionCall("regexp_contains", "'hello world'", "'o w'", is: "true"),
        FunctionCall("regexp_contains", "'hello'", "'^h.*o$'", is: "true"),
        FunctionCall("regexp_contains", "'hello'", "'z+'", is: "false"),
        FunctionCall("regexp_contains", "MISSING", "'a'", is: "MISSING"),
        FunctionCall("regexp_like", #"'abc123'"#, #"'\d+'"#, is: "true"),  // LiteCore searches, unanchored
        FunctionCall("regexp_like", "'abc'", "'^b'", is: "false"),
        FunctionCall("regexp_like", "'a'", "null", is: "null"),
        FunctionCall("regexp_like", "1", "'1'", is: "null"),

        FunctionCall("regexp_position", "'hello'", "'l+'", is: "2"),
        FunctionCall("regexp_position", "'hello'", "'z'", is: "-1"),
        FunctionCall("regexp_position", "'héllo'", "'l'", is: "3"),  // UTF-8 bytes, as LiteCore
        FunctionCall("regexp_position", "MISSING", "null", is: "MISSING"),

        FunctionCall("regexp_replace", "'a1b22c333'", #"'\d+'"#, "'#'", is: "'a#b#c#'"),
        FunctionCall("regexp_replace", "'a1b22c333'", #"'\d+'"#, "'#'", "2", is: "'a#b#c333'"),
        FunctionCall("regexp_replace", "'a1b22c333'", #"'\d+'"#, "'#'", "-1", is: "'a#b#c#'"),
        FunctionCall("regexp_replace", "'a1b22c333'", #"'\d+'"#, "'#'", "0", is: "'a1b22c333'"),
        FunctionCall("regexp_replace", "'John Smith'", #"'(\w+) (\w+)'"#, "'$2, $1'", is: "'Smith, John'"),
        FunctionCall("regexp_replace", "'abc'", "'b'", "'[$&]'", is: "'a[b]c'"),
        FunctionCall("regexp_replace", "'abc'", "'b'", "'$$'", is: "'a$c'"),
        FunctionCall("regexp_replace", "'abc'", "'b'", "'$`$''", is: "'aacc'"),
        FunctionCall("regexp_replace", "'abc'", "'(b)'", "'$9'", is: "'a$9c'"),
        FunctionCall("regexp_replace", "'abc'", "'z'", "'x'", is: "'abc'"),
        FunctionCall("regexp_replace", "'héllo wörld'", "'ö|é'", "'_'", is: "'h_llo w_rld'"),
        FunctionCall("regexp_replace", "MISSING", "'a'", "'b'", is: "MISSING"),
        FunctionCall("regexp_replace", "'a'", "'a'", "null", is: "null"),
    ])
    func patterns(_ call: FunctionCall) throws {
        try call.check(on: FunctionHarness())
    }

    /// A pattern that backtracks without end on a value (`(a+)+$` on a's then a `!`) is a query
    /// error once it has searched that value for `regexBudget`, not a worker held for minutes.
    @Test func aPatternThatBacktracksWithoutEndStopsWithAQueryError() throws {
        let harness = try FunctionHarness()
        let value = "'" + String(repeating: "a", count: 2000) + "!'"
        for function in ["regexp_contains", "regexp_position"] {
            let started = ContinuousClock.now
            #expect { try harness.call(function, value, "'(a+)+$'") } throws: { "\($0)".contains("backtracks too much") }
            #expect(ContinuousClock.now - started < .seconds(30))
        }
        #expect { try harness.call("regexp_replace", value, "'(a+)+$'", "'x'") } throws: { "\($0)".contains("backtracks too much") }
    }

    @Test func invalidPatternIsAQueryError() throws {
        let harness = try FunctionHarness()
        #expect(throws: SofaError.self) { try harness.call("regexp_like", "'a'", "'('") }
    }
}
