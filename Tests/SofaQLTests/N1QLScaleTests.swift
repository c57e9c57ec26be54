import Testing
import SofaCore
import SofaQL

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
            return error.is(.invalidQuery) && error.message.contains("nest at most 256")
        }
    }

    /// A chain of operators is folded in a loop but builds a tree as deep as it is long; past the
    /// parser's height bound it is an error that names the limit, however long the chain.
    @Test(arguments: [" + 1", " AND x", " || 'a'", " = 1", " < 2"])
    func longChainIsRefused(_ link: String) {
        for count in [1_500, 40_000, 200_000] {
            let n1ql = "SELECT 1" + String(repeating: link, count: count) + " FROM _"
            #expect {
                try N1QL.parse(n1ql)
            } throws: { error in
                guard let error = error as? SofaError else { return false }
                return error.is(.invalidQuery) && error.message.contains("at most 256 levels deep")
            }
        }
    }

    /// Chains inside parentheses inside chains add up: the bound is on the tree's height, not on
    /// the length of one chain or the nesting of parentheses alone.
    @Test func nestedChainsAddUp() {
        let inner = "1" + String(repeating: " + 1", count: 200)
        var n1ql = inner
        for _ in 0..<10 { n1ql = "(" + n1ql + ")" + String(repeating: " + 1", count: 200) }
        #expect {
            try N1QL.parse("SELECT " + n1ql)
        } throws: { error in
            (error as? SofaError)?.message.contains("at most 256 levels deep") ?? false
        }
    }

    /// What real queries write stays well inside the bound: long chains, many conditions, many
    /// columns and long lists, whose siblings do not add up.
    @Test func wideQueriesParse() throws {
        let sum = "SELECT " + "1" + String(repeating: " + 1", count: 250)
        #expect(try height(N1QL.parse(sum)) >= 250)
        let conditions = (0..<200).map { "p\($0) = \($0)" }.joined(separator: " AND ")
        #expect(try N1QL.parse("SELECT * FROM _ WHERE " + conditions)["WHERE"]?.arrayValue?.first == "AND")
        let columns = (0..<2_000).map { "a\($0) + b * 2 - c" }.joined(separator: ", ")
        #expect(try N1QL.parse("SELECT " + columns)["WHAT"]?.arrayValue?.count == 2_000)
        let list = (0..<10_000).map { "\($0) + 1" }.joined(separator: ", ")
        #expect(try N1QL.parse("SELECT * FROM _ WHERE n IN [" + list + "]")["WHERE"] != nil)
    }

    private func height(_ json: JSON) -> Int {
        var deepest = 0
        var stack: [(JSON, Int)] = [(json, 1)]
        while let (node, level) = stack.popLast() {
            deepest = max(deepest, level)
            switch node {
            case .array(let items): stack += items.map { ($0, level + 1) }
            case .object(let object): stack += object.map { ($0.value, level + 1) }
            default: break
            }
        }
        return deepest
    }
}
