/// The bounds on what a query may ask, in one place: the N1QL parser, the JSON query compiler and
/// the index DDL all refuse a tree past them with `invalidQuery`, naming the limit.
public enum QueryLimits {
    /// How deep expressions may nest (operators chained or nested, function calls, CASE,
    /// subqueries). Every walk of a query tree recurses once per level, so this bounds the stack
    /// a query can take in any process; SQLite itself refuses parentheses nested about 100 deep.
    public static let maxExpressionDepth = 256

    /// The message of the error for a tree deeper than `maxExpressionDepth`.
    public static func tooDeep(_ what: String) -> String {
        "\(what) too deep: expressions nest at most \(maxExpressionDepth) levels deep (operators chained or nested)"
    }
}
