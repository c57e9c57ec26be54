import CSQLite
import Foundation
import SofaCore
import Testing
@testable import SofaQL

@Suite struct FunctionLibraryTests {
    /// LiteCore's function table (`QueryParserTables.hh`), minus aggregates, `fl_like`, `match`,
    /// `rank`, `prediction` and `approx_vector_dist`, with each name's argument counts.
    static let liteCoreArities: [(String, ClosedRange<Int>)] = [
        ("array_avg", 1...1), ("array_contains", 2...2), ("array_count", 1...1), ("array_ifnull", 1...1),
        ("array_length", 1...1), ("array_max", 1...1), ("array_min", 1...1), ("array_of", 0...127),
        ("array_sum", 1...1),
        ("greatest", 2...127), ("least", 2...127),
        ("ifmissing", 2...127), ("ifnull", 2...127), ("ifmissingornull", 2...127), ("missingif", 2...2),
        ("nullif", 2...2),
        ("millis_to_str", 1...2), ("millis_to_utc", 1...2), ("millis_to_tz", 2...3), ("str_to_millis", 1...1),
        ("str_to_utc", 1...2), ("date_diff_str", 3...3), ("date_diff_millis", 3...3), ("date_add_str", 3...4),
        ("date_add_millis", 3...3), ("str_to_tz", 2...3),
        ("abs", 1...1), ("acos", 1...1), ("asin", 1...1), ("atan", 1...1), ("atan2", 2...2), ("ceil", 1...1),
        ("cos", 1...1), ("degrees", 1...1), ("e", 0...0), ("exp", 1...1), ("floor", 1...1), ("ln", 1...1),
        ("log", 1...1), ("pi", 0...0), ("power", 2...2), ("radians", 1...1), ("round", 1...2),
        ("round_even", 1...2), ("sign", 1...1), ("sin", 1...1), ("sqrt", 1...1), ("tan", 1...1),
        ("trunc", 1...2), ("div", 2...2), ("idiv", 2...2),
        ("regexp_contains", 2...2), ("regexp_like", 2...2), ("regexp_position", 2...2), ("regexp_replace", 3...4),
        ("concat", 2...127), ("contains", 2...2), ("length", 1...1), ("lower", 1...1), ("ltrim", 1...2),
        ("rtrim", 1...2), ("trim", 1...2), ("upper", 1...1),
        ("isarray", 1...1), ("is_array", 1...1), ("isatom", 1...1), ("is_atom", 1...1), ("isboolean", 1...1),
        ("is_boolean", 1...1), ("isnumber", 1...1), ("is_number", 1...1), ("isobject", 1...1),
        ("is_object", 1...1), ("isstring", 1...1), ("is_string", 1...1), ("type", 1...1), ("typename", 1...1),
        ("toarray", 1...1), ("to_array", 1...1), ("toatom", 1...1), ("to_atom", 1...1), ("toboolean", 1...1),
        ("to_boolean", 1...1), ("tonumber", 1...1), ("to_number", 1...1), ("toobject", 1...1),
        ("to_object", 1...1), ("tostring", 1...1), ("to_string", 1...1), ("isvalued", 1...1),
        ("euclidean_distance", 2...3), ("cosine_distance", 2...2),
    ]

    @Test(arguments: liteCoreArities)
    func coversLiteCoresTable(name: String, arity: ClosedRange<Int>) throws {
        let function = try #require(FunctionLibrary.named(name), "\(name) is missing")
        #expect(function.name == name)
        #expect(function.sqlName == "sofa_" + name)
        #expect(function.arity == arity, "\(name)")
        #expect(function.deterministic)
    }

    @Test func namesAreUniqueAndLowercase() {
        let names = FunctionLibrary.all.map(\.name)
        #expect(Set(names).count == names.count)
        #expect(names.allSatisfy { $0 == $0.lowercased() })
        // The pinned-zone variant tests use is the same library.
        #expect(FunctionLibrary.functions(localTimeZone: TimeZone(secondsFromGMT: 0)!).map(\.name) == names)
    }

    /// Aggregates are the compiler's (SQL aggregates); LIKE is the compiler's too.
    @Test(arguments: ["count", "sum", "avg", "min", "max", "array_agg", "like", "fl_like", "nosuch", "ABS"])
    func notInTheLibrary(name: String) {
        #expect(FunctionLibrary.named(name) == nil)
    }

    /// The brief's set-up exactly: `FunctionLibrary.all` on a fresh connection.
    @Test func registersOnAConnection() throws {
        let harness = try FunctionHarness(functions: FunctionLibrary.all)
        #expect(try harness.call("abs", "-2") == .real(2))
        #expect(try harness.call("upper", "'sofa'") == .text("SOFA"))
        #expect(try harness.call("str_to_millis", "'2018-10-23T18:33:01Z'") == .integer(1540319581000))
    }

    @Test func wrongArgumentCountIsAnError() throws {
        let harness = try FunctionHarness()
        #expect(throws: SofaError.self) { try harness.call("abs", "1", "2") }  // fixed arity: SQLite rejects
        #expect(throws: SofaError.self) { try harness.call("round", "1", "2", "3") }  // ranged: the wrapper rejects
        #expect(throws: SofaError.self) { try harness.call("concat", "'a'") }
    }

    @Test func uuidIsRandomVersion4() throws {
        let harness = try FunctionHarness()
        let function = try #require(FunctionLibrary.named("uuid"))
        #expect(!function.deterministic)
        guard case .text(let first) = try harness.call("uuid"), case .text(let second) = try harness.call("uuid") else {
            Issue.record("uuid() is not a string")
            return
        }
        #expect(first != second)
        #expect(first == first.lowercased())
        let parsed = try #require(UUID(uuidString: first))
        #expect(parsed.uuid.6 >> 4 == 4)  // version nibble
    }
}
