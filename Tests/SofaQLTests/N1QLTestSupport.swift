import Testing
import SofaCore
import SofaQL

/// One N1QL text and the JSON tree it must become.
///
/// The tree is written with the quote characters swapped, so that rows read like LiteCore's own
/// tests: `'` stands for JSON's `"` and `"` for a literal apostrophe inside a string
/// (`{'WHAT':[['.foo']]}` is `{"WHAT":[[".foo"]]}`). Backslashes are JSON's.
struct TreeFact: Sendable, CustomTestStringConvertible {
    let n1ql: String
    let tree: String

    init(_ n1ql: String, _ tree: String) {
        self.n1ql = n1ql
        self.tree = tree
    }

    var testDescription: String { n1ql }

    /// The expected tree as a JSON value (numbers keep their kind: `1725.0` is a double).
    func expected() throws -> JSON {
        let swapped = String(tree.map { $0 == "'" ? "\"" : $0 == "\"" ? "'" : $0 })
        return try JSON.parse(swapped)
    }
}

/// Parses the fact's N1QL and compares the tree with the expected one as JSON values.
func check(_ fact: TreeFact, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let expected = try fact.expected()
    let actual: JSON
    do {
        actual = try N1QL.parse(fact.n1ql)
    } catch {
        Issue.record("\(fact.n1ql) failed: \(error.message)", sourceLocation: sourceLocation)
        return
    }
    #expect(actual == expected, "\(fact.n1ql) → \(actual.canonicalString)", sourceLocation: sourceLocation)
}
