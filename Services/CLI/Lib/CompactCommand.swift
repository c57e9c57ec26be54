internal import ArgumentParser
internal import SofaClient
internal import SofaCluster

/// `sofa compact DB`: prune revision trees, drop bodies of old revisions, reclaim space.
struct Compact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compact a database: prune revision trees to the configured depth, drop old bodies, reclaim space.",
        discussion: "Blobs no kept revision references are deleted. On a terminal, stderr shows the time spent.")
    @Argument var db: String
    @OptionGroup var options: GatewayOptions

    func run() async throws {
        try await reporting {
            let client = try await options.connect()
            defer { client.close() }
            try await ProgressLine("compact").spinning { try await client.database(db).compact() }
            printJSON(.object(JSONObject([("ok", true), ("db", .string(db))])))
        }
    }
}
