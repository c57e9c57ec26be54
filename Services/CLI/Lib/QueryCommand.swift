internal import ArgumentParser
internal import SofaCore
internal import SofaQuery

/// `sofa query`: with `--to-json`, translates N1QL to LiteCore's JSON query tree and prints it as
/// canonical JSON (keys sorted, no whitespace) without running it. Running queries against a
/// database is not served yet, and says so.
struct QueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Translate a N1QL query to its JSON tree (--to-json); running queries is not served yet.",
        discussion: """
            sofa query --to-json 'SELECT name FROM _ WHERE age > 30'
              prints {"FROM":[{"COLLECTION":"_"}],"WHAT":[[".name"]],"WHERE":[">",[".age"],30]}
            """)

    @Argument(help: "The database (when running a query) and the N1QL text; with --to-json, the text alone.")
    var arguments: [String] = []

    @Flag(name: .customLong("to-json"), help: "Print the query's JSON tree instead of running it.")
    var toJSON = false

    func validate() throws {
        guard (1...2).contains(arguments.count) else {
            throw ValidationError("expected [DB] 'SELECT …'")
        }
    }

    func run() async throws {
        try await reporting {
            guard toJSON else {
                throw SofaError(.unimplemented,
                                "queries are not served yet; `sofa query --to-json 'SELECT …'` translates N1QL without running it")
            }
            let tree = try N1QL.parse(arguments[arguments.count - 1])
            print(tree.canonicalString)
        }
    }
}
