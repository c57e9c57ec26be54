import Testing
import SofaCore
import SofaQuery

/// The parser shares each operand among the comparison alternatives, so its time grows with the
/// text, not exponentially with the nesting (LiteCore's "N1QL Performance" test bounds a long
/// query at half a second).
@Suite struct N1QLScale {
    @Test func liteCoreLongQuery() throws {
        let n1ql = "SELECT doc.* FROM _ doc WHERE doc.type = 'Model' AND doc.s NOT IN ('A', 'B', 'V') AND "
            + "((doc.model.total.totalA - ifnull(doc.model.totalA.totalB, 0)) > 0 OR doc.t = false) AND "
            + "(doc.q IS NULL OR ifnull(doc.q.e, 'e') = 'e' AND ifnull(doc.q.m, 0) == 0)"
        let clock = ContinuousClock()
        var tree: JSON = .null
        let elapsed = try clock.measure { tree = try N1QL.parse(n1ql) }
        #expect(elapsed < .milliseconds(500))
        #expect(tree["WHAT"] == [[".doc."]])
        #expect(tree["WHERE"]?.arrayValue?.first == "AND")
    }

    @Test func deepNesting() throws {
        let depth = 255
        let n1ql = "SELECT " + String(repeating: "(1 + ", count: depth) + "1" + String(repeating: ")", count: depth)
        let clock = ContinuousClock()
        var tree: JSON = .null
        let elapsed = try clock.measure { tree = try N1QL.parse(n1ql) }
        #expect(elapsed < .seconds(10))  // linear, not exponential, in the nesting (milliseconds in practice)
        var node = tree["WHAT"]?.arrayValue?.first
        var levels = 0
        while case .array(let items)? = node, items.first == "+" {
            levels += 1
            node = items[2]
        }
        #expect(levels == depth)
    }

    /// Hostile nesting is a syntax error, not a crash.
    @Test(arguments: ["(", "-", "[", "NOT ", "EXISTS (SELECT "])
    func tooDeep(_ opener: String) {
        let n1ql = "SELECT " + String(repeating: opener, count: 100_000) + "1"
        #expect {
            try N1QL.parse(n1ql)
        } throws: { error in
            guard let error = error as? SofaError else { return false }
            return error.is(.invalidQuery) && error.message.contains("nest at most 256 deep")
        }
    }
}
